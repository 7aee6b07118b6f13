use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use airunway_api::metric_names::{UNKNOWN_OPERATION, webhook_results, webhooks};
use airunway_api::v1alpha1::InferenceProviderConfig;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::post;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use kube::Client;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::runtime::reflector::Store;
use tokio_util::sync::CancellationToken;

use super::certs::{self, CertConfig, WebhookCert};
use super::{admission, nesting};
use crate::metrics::CoreMetrics;

/// How the webhooks are served.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    /// Listen address.
    pub bind: SocketAddr,
    /// Certificate management.
    pub certs: CertConfig,
    /// `--enable-provider-selector` (an engine is required when it is off).
    pub selector_enabled: bool,
}

#[derive(Clone)]
struct AppState {
    providers: Store<InferenceProviderConfig>,
    selector_enabled: bool,
    policies: Option<Arc<crate::policy::Policies>>,
    metrics: CoreMetrics,
}

type Review = Json<AdmissionReview<DynamicObject>>;

/// Largest AdmissionReview body read: above what the API server sends for the largest object it
/// accepts (its request limit is 3 MiB, and an update carries the object twice), so the webhook
/// never answers 413.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// An AdmissionReview that cannot be decided: the message, and the request's uid when found.
struct Unreadable {
    uid: Option<String>,
    message: String,
}

/// Parses an AdmissionReview after the bounded nesting scan.
fn parse_review(body: &[u8]) -> Result<AdmissionReview<DynamicObject>, Unreadable> {
    let scan = nesting::scan(body);
    if let Some(at) = scan.too_deep_at.as_deref() {
        return Err(Unreadable {
            message: format!(
                "{at}: nested deeper than {} levels; provider.overrides may nest at most {} levels",
                nesting::MAX_DEPTH,
                crate::validation::MAX_OVERRIDES_DEPTH
            ),
            uid: scan.uid,
        });
    }
    serde_json::from_slice(body).map_err(|e| Unreadable {
        message: format!("malformed AdmissionReview: {e}"),
        uid: scan.uid,
    })
}

/// The operation of an admission request, as the API server names it.
fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

/// What an answer counts as in `airunway_webhook_requests_total`: the request's operation, and
/// `error` when the review could not be read, else `allowed` or `denied`.
#[derive(Clone, Copy, Debug)]
struct Answered {
    operation: &'static str,
    readable: bool,
}

impl Answered {
    fn result(self, review: &AdmissionReview<DynamicObject>) -> &'static str {
        match review.response.as_ref() {
            _ if !self.readable => webhook_results::ERROR,
            Some(response) if response.allowed => webhook_results::ALLOWED,
            Some(_) => webhook_results::DENIED,
            None => webhook_results::ERROR,
        }
    }
}

fn respond(
    body: &[u8],
    decide: impl FnOnce(&AdmissionRequest<DynamicObject>) -> AdmissionResponse,
) -> (Review, Answered) {
    let unreadable_answer = Answered {
        operation: UNKNOWN_OPERATION,
        readable: false,
    };
    let review = match parse_review(body) {
        Ok(review) => review,
        Err(unreadable) => {
            // Answered with the uid so the API server shows the message, not a call failure.
            let mut response = AdmissionResponse::invalid(unreadable.message);
            response.uid = unreadable.uid.unwrap_or_default();
            response.result.code = 422;
            return (Json(response.into_review()), unreadable_answer);
        }
    };
    let request: Result<AdmissionRequest<DynamicObject>, _> = review.try_into();
    let (response, answered) = match request {
        Ok(request) => {
            let response = decide(&request);
            if !response.allowed {
                tracing::info!(kind = %request.kind.kind, name = %request.name, namespace = ?request.namespace,
                    operation = ?request.operation, reason = %response.result.message, "admission denied");
            }
            let answered = Answered {
                operation: operation_name(&request.operation),
                readable: true,
            };
            (response, answered)
        }
        Err(e) => (
            AdmissionResponse::invalid(format!("malformed AdmissionReview: {e}")),
            unreadable_answer,
        ),
    };
    (Json(response.into_review()), answered)
}

/// Counts one answer of `webhook` started at `started`.
fn count(state: &AppState, webhook: &str, started: Instant, review: &Review, answered: Answered) {
    state.metrics.webhook_answered(
        webhook,
        answered.operation,
        answered.result(&review.0),
        started.elapsed(),
    );
}

async fn mutate_model_deployment(State(state): State<Arc<AppState>>, body: Bytes) -> Review {
    let started = Instant::now();
    let (review, answered) = respond(&body, admission::mutate_model_deployment);
    count(
        &state,
        webhooks::MUTATE_MODELDEPLOYMENT,
        started,
        &review,
        answered,
    );
    review
}

async fn validate_model_deployment(State(state): State<Arc<AppState>>, body: Bytes) -> Review {
    let started = Instant::now();
    let providers: Vec<InferenceProviderConfig> = state
        .providers
        .state()
        .iter()
        .map(|p| (**p).clone())
        .collect();
    let (Json(mut review), answered) = respond(&body, |request| {
        admission::validate_model_deployment(request, &providers, state.selector_enabled)
    });
    // ModelDeploymentPolicy rules and the GPU quota (async: the ledger), after the other checks.
    if let Some(policies) = state.policies.as_ref().filter(|p| !p.policies.is_empty())
        && let Some(response) = review.response.take()
    {
        let request: Option<AdmissionRequest<DynamicObject>> = parse_review(&body)
            .ok()
            .and_then(|review| review.try_into().ok());
        review.response = Some(match request {
            Some(request) => crate::policy::admission::check(policies, &request, response).await,
            None => response,
        });
    }
    let review = Json(review);
    count(
        &state,
        webhooks::VALIDATE_MODELDEPLOYMENT,
        started,
        &review,
        answered,
    );
    review
}

async fn validate_provider_config(State(state): State<Arc<AppState>>, body: Bytes) -> Review {
    let started = Instant::now();
    let (review, answered) = respond(&body, admission::validate_provider_config);
    count(
        &state,
        webhooks::VALIDATE_INFERENCEPROVIDERCONFIG,
        started,
        &review,
        answered,
    );
    review
}

/// Obtains the certificate (creating the Secret if needed), injects the CA bundle, starts the
/// HTTPS server, and keeps the certificate fresh until `shutdown`. Returns once serving.
pub async fn start_webhooks(
    client: Client,
    options: WebhookOptions,
    providers: Store<InferenceProviderConfig>,
    policies: Option<Arc<crate::policy::Policies>>,
    metrics: CoreMetrics,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let (cert, _) = certs::ensure_secret(&client, &options.certs).await?;
    certs::inject_ca_bundle(&client, &options.certs, &cert.ca_bundle_pem).await;
    let tls = RustlsConfig::from_pem(
        cert.cert_pem.clone().into_bytes(),
        cert.key_pem.clone().into_bytes(),
    )
    .await?;

    let state = Arc::new(AppState {
        providers,
        selector_enabled: options.selector_enabled,
        policies,
        metrics,
    });
    let router = Router::new()
        .route("/mutate-modeldeployment", post(mutate_model_deployment))
        .route("/validate-modeldeployment", post(validate_model_deployment))
        .route(
            "/validate-inferenceproviderconfig",
            post(validate_provider_config),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    let handle: Handle<SocketAddr> = Handle::new();
    let listener = std::net::TcpListener::bind(options.bind)
        .map_err(|e| anyhow::anyhow!("cannot listen on {} for webhooks: {e}", options.bind))?;
    listener.set_nonblocking(true)?;
    let server = axum_server::from_tcp_rustls(listener, tls.clone())?.handle(handle.clone());
    tokio::spawn(async move {
        if let Err(e) = server.serve(router.into_make_service()).await {
            tracing::error!(error = %e, "webhook server failed");
        }
    });
    let stop = handle.clone();
    let stop_token = shutdown.clone();
    tokio::spawn(async move {
        stop_token.cancelled().await;
        stop.graceful_shutdown(Some(Duration::from_secs(5)));
    });
    tracing::info!(address = %options.bind, "serving admission webhooks");
    tokio::spawn(keep_certificate_fresh(
        client,
        options.certs,
        tls,
        cert,
        shutdown,
    ));
    Ok(())
}

async fn keep_certificate_fresh(
    client: Client,
    config: CertConfig,
    tls: RustlsConfig,
    mut serving: WebhookCert,
    shutdown: CancellationToken,
) {
    let interval = config.check_interval();
    // Time for the API server to pick up a new caBundle before the new certificate is served.
    let propagation = (config.rotation_margin / 4).min(Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let cert = match certs::ensure_secret(&client, &config).await {
            Ok((cert, _)) => cert,
            Err(e) => {
                tracing::warn!(error = %e, category = e.category(), "could not check the webhook certificate");
                continue;
            }
        };
        // Also re-injects into configurations created or re-applied since the last check.
        certs::inject_ca_bundle(&client, &config, &cert.ca_bundle_pem).await;
        if cert.cert_pem != serving.cert_pem {
            tokio::time::sleep(propagation).await;
            match tls
                .reload_from_pem(
                    cert.cert_pem.clone().into_bytes(),
                    cert.key_pem.clone().into_bytes(),
                )
                .await
            {
                Ok(()) => {
                    tracing::info!("serving the rotated webhook certificate");
                    serving = cert;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not load the rotated webhook certificate")
                }
            }
        }
    }
}
