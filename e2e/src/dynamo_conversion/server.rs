//! Serving the played Dynamo conversion webhook to the test API server, and registering it in
//! the DynamoGraphDeployment CRD.
//!
//! Dynamo registers its webhook as the Service `dynamo-system/dynamo-operator-webhook-service`
//! (path `/convert`); the test API server runs on the host, so the harness points the CRD's
//! `spec.conversion.webhook.clientConfig` at a `url` on 127.0.0.1 with the test CA as
//! `caBundle` instead, when it installs the CRD ([`installable`]) and on demand
//! ([`PlayedConversionWebhook::register`]). The server runs on a thread of its own (the control
//! plane outlives the runtime that started it) until the value is dropped.

use std::net::SocketAddr;
use std::sync::Mutex;

use anyhow::{Context, Result};
use axum::Json;
use axum::Router;
use axum::routing::post;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use base64::Engine;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec,
};
use kube::api::{Api, Patch, PatchParams};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::response::Status;
use serde_json::json;

use super::{CRD_NAME, convert};
use crate::pki::CertAndKey;

/// The path the webhook answers on (Dynamo's).
pub const PATH: &str = "/convert";
/// The field manager of the harness's change to the CRD's `clientConfig`.
pub const FIELD_MANAGER: &str = "airunway-e2e-dynamo-conversion";

/// The `spec.conversion` of the webhook started last in this process: the harness installs
/// the DGD CRD with it (see [`installable`]), so a CRD installed again keeps the webhook.
static ACTIVE: Mutex<Option<serde_json::Value>> = Mutex::new(None);

/// `crd` as the harness installs it: a DynamoGraphDeployment CRD whose conversion is Dynamo's
/// webhook (`strategy: Webhook`, as Dynamo >= 1.5 publishes it) points at the played webhook
/// running in this process, if any. Every other CRD, and Dynamo 1.1's (no conversion), is
/// unchanged.
pub fn installable(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let is_dynamo_webhook = crd.metadata.name.as_deref() == Some(CRD_NAME)
        && crd
            .spec
            .conversion
            .as_ref()
            .is_some_and(|c| c.strategy == "Webhook");
    let active = ACTIVE.lock().ok().and_then(|a| a.clone());
    match (is_dynamo_webhook, active) {
        (true, Some(conversion)) => match serde_json::from_value(conversion) {
            Ok(conversion) => CustomResourceDefinition {
                spec: CustomResourceDefinitionSpec {
                    conversion: Some(conversion),
                    ..crd.spec
                },
                ..crd
            },
            Err(_) => crd,
        },
        _ => crd,
    }
}

/// The played Dynamo conversion webhook, serving on 127.0.0.1 until dropped.
pub struct PlayedConversionWebhook {
    /// `https://127.0.0.1:<port>/convert`.
    pub url: String,
    /// PEM of the CA that signed its serving certificate.
    pub ca_bundle: Vec<u8>,
    handle: Handle<SocketAddr>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PlayedConversionWebhook {
    /// Starts serving with `cert` (a serving certificate for 127.0.0.1 signed by the CA whose
    /// PEM is `ca_pem`).
    pub fn start(cert: CertAndKey, ca_pem: &str) -> Result<PlayedConversionWebhook> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let handle = Handle::new();
        let server_handle = handle.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("runtime of the played Dynamo conversion webhook")?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        // Dropped without a message when serving could not start: `recv` then fails.
        let thread = std::thread::Builder::new()
            .name("dynamo-conversion".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let result = serve(cert, listener, server_handle, || {
                        let _ = ready_tx.send(Ok(()));
                    })
                    .await;
                    if let Err(e) = result {
                        eprintln!("the played Dynamo conversion webhook stopped: {e:#}");
                    }
                });
            })?;
        ready_rx
            .recv()
            .context("the played Dynamo conversion webhook thread ended before serving")??;
        let webhook = PlayedConversionWebhook {
            url: format!("https://127.0.0.1:{port}{PATH}"),
            ca_bundle: ca_pem.as_bytes().to_vec(),
            handle,
            thread: Some(thread),
        };
        if let Ok(mut active) = ACTIVE.lock() {
            *active = Some(webhook.conversion());
        }
        Ok(webhook)
    }

    /// The CRD's `spec.conversion` pointing at this server, for a CRD to install (a client
    /// config has either a `url` or the `service` Dynamo names).
    pub fn conversion(&self) -> serde_json::Value {
        conversion_at(&self.url, &self.ca_bundle)
    }

    /// Points the installed DynamoGraphDeployment CRD's conversion webhook at this server.
    pub async fn register(&self, client: &kube::Client) -> Result<()> {
        register_at(client, &self.url, &self.ca_bundle).await
    }
}

/// `spec.conversion` for a webhook at `url` whose certificate `ca_pem` signed.
fn conversion_at(url: &str, ca_pem: &[u8]) -> serde_json::Value {
    json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "url": url,
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "conversionReviewVersions": ["v1"],
        },
    })
}

/// Points the installed DynamoGraphDeployment CRD's conversion webhook at `url` (a merge patch
/// that also removes Dynamo's `service`: every other field of the CRD stays as installed).
pub async fn register_at(client: &kube::Client, url: &str, ca_pem: &[u8]) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut conversion = conversion_at(url, ca_pem);
    conversion["webhook"]["clientConfig"]["service"] = serde_json::Value::Null;
    api.patch(
        CRD_NAME,
        &PatchParams::apply(FIELD_MANAGER),
        &Patch::Merge(json!({"spec": {"conversion": conversion}})),
    )
    .await
    .with_context(|| format!("registering the played conversion webhook in {CRD_NAME}"))?;
    Ok(())
}

/// Serves the webhook over TLS with `cert` on `listener` until `handle` shuts it down (or
/// forever); `ready` is called once it accepts connections.
pub async fn serve(
    cert: CertAndKey,
    listener: std::net::TcpListener,
    handle: Handle<SocketAddr>,
    ready: impl FnOnce(),
) -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    listener.set_nonblocking(true)?;
    let config =
        RustlsConfig::from_pem(cert.cert_pem.into_bytes(), cert.key_pem.into_bytes()).await?;
    let server = axum_server::from_tcp_rustls(listener, config)?.handle(handle);
    ready();
    server.serve(router().into_make_service()).await?;
    Ok(())
}

impl Drop for PlayedConversionWebhook {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The webhook's routes.
pub fn router() -> Router {
    Router::new().route(PATH, post(review))
}

async fn review(Json(review): Json<ConversionReview>) -> Json<ConversionReview> {
    Json(answer(review))
}

/// The answer to one ConversionReview: every object converted, or a failure naming the first
/// object that could not be.
pub fn answer(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(_) => {
            return ConversionResponse::invalid(Status::failure(
                "a ConversionReview without a request",
                "BadRequest",
            ))
            .into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<_>, _> = request
        .objects
        .iter()
        .map(|object| convert(object, &desired))
        .collect();
    let response = ConversionResponse::for_request(request);
    match converted {
        Ok(objects) => response.success(objects),
        Err(e) => response.failure(Status::failure(&e.to_string(), e.category())),
    }
    .into_review()
}
