//! Webhook TLS managed in process (no cert-manager).
//!
//! - The serving certificate and the CA bundle live in a Secret in the core's namespace, so
//!   they survive restarts and every replica serves the same certificate.
//! - Every rotation issues a fresh CA and a serving certificate signed by it; the CA's private
//!   key is dropped right away (it is never stored). `ca.crt` in the Secret is the bundle the
//!   API server trusts: the new CA followed by the previous one, so certificates of either
//!   generation verify while replicas switch over.
//! - The bundle is written into `caBundle` of every webhook of the configured
//!   Validating/MutatingWebhookConfigurations before any replica serves the new certificate.
//! - Rotation happens `--webhook-cert-rotation-margin` before expiry; concurrent replicas race
//!   on the Secret's resourceVersion and the loser adopts the winner's certificate.

use std::time::Duration;

use airunway_api::constants::field_managers;
use airunway_api::kube_error::ErrorClass;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// Secret key of the serving certificate.
pub const TLS_CERT: &str = "tls.crt";
/// Secret key of the serving key.
pub const TLS_KEY: &str = "tls.key";
/// Secret key of the CA bundle (current CA first, then the previous one).
pub const CA_BUNDLE: &str = "ca.crt";

/// A certificate management failure.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Generating or parsing a certificate failed.
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// The Secret exists but lacks a key.
    #[error("Secret {secret} lacks {key}")]
    IncompleteSecret {
        /// `namespace/name`.
        secret: String,
        /// The missing key.
        key: &'static str,
    },
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// A certificate could not be read.
    #[error("reading a certificate: {0}")]
    Parse(String),
    /// A lifetime does not fit a certificate.
    #[error("invalid certificate lifetime: {0}")]
    Lifetime(String),
}

impl CertError {
    /// A short, static label for logs and metrics.
    pub fn category(&self) -> &'static str {
        match self {
            CertError::Certificate(_) | CertError::Parse(_) => "certificate",
            CertError::IncompleteSecret { .. } => "incomplete_secret",
            CertError::Api { .. } => "api_error",
            CertError::Lifetime(_) => "invalid_lifetime",
        }
    }
}

/// The serving certificate material.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookCert {
    /// PEM serving certificate.
    pub cert_pem: String,
    /// PEM (PKCS#8) serving key.
    pub key_pem: String,
    /// PEM CA bundle for `caBundle`.
    pub ca_bundle_pem: String,
}

/// Issues a new CA and a serving certificate for `sans` (DNS names or IP addresses) valid for
/// `lifetime`; the bundle is the new CA followed by `previous_ca` (if any).
pub fn issue(
    sans: &[String],
    lifetime: Duration,
    previous_ca: Option<&str>,
) -> Result<WebhookCert, CertError> {
    let now = time::OffsetDateTime::now_utc();
    let lifetime =
        time::Duration::try_from(lifetime).map_err(|e| CertError::Lifetime(e.to_string()))?;
    let not_before = now - time::Duration::minutes(1);
    let not_after = now + lifetime;

    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name.push(
        DnType::CommonName,
        format!("airunway-core-webhook-ca-{}", now.unix_timestamp()),
    );
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = not_before;
    ca_params.not_after = not_after;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(
        DnType::CommonName,
        sans.first()
            .cloned()
            .unwrap_or_else(|| "airunway-core-webhook".into()),
    );
    for san in sans {
        params
            .subject_alt_names
            .push(match san.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(san.clone().try_into()?),
            });
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = not_before;
    params.not_after = not_after;
    let cert = params.signed_by(&key, &issuer)?;

    let mut bundle = ca_cert.pem();
    if let Some(previous) = previous_ca.and_then(first_pem) {
        bundle.push_str(&previous);
    }
    Ok(WebhookCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        ca_bundle_pem: bundle,
    })
}

/// The first PEM block of a bundle.
fn first_pem(bundle: &str) -> Option<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let end = bundle.find(END)? + END.len();
    let start = bundle.find("-----BEGIN CERTIFICATE-----")?;
    (start < end).then(|| format!("{}\n", &bundle[start..end]))
}

/// When the certificate expires.
pub fn not_after(cert_pem: &str) -> Result<Timestamp, CertError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes())
        .map_err(|e| CertError::Parse(e.to_string()))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| CertError::Parse(e.to_string()))?;
    Timestamp::from_second(cert.validity().not_after.timestamp())
        .map_err(|e| CertError::Parse(e.to_string()))
}

/// Whether the certificate expires within `margin` of `now` (or cannot be read).
pub fn needs_rotation(cert_pem: &str, now: Timestamp, margin: Duration) -> bool {
    match not_after(cert_pem) {
        Ok(expiry) => {
            let margin =
                jiff::SignedDuration::try_from(margin).unwrap_or(jiff::SignedDuration::MAX);
            expiry.duration_since(now) <= margin
        }
        Err(_) => true,
    }
}

/// Where the certificate lives and who trusts it.
#[derive(Clone, Debug)]
pub struct CertConfig {
    /// Namespace of the Secret.
    pub secret_namespace: String,
    /// Name of the Secret.
    pub secret_name: String,
    /// Subject alternative names of the serving certificate.
    pub sans: Vec<String>,
    /// Lifetime of each certificate.
    pub lifetime: Duration,
    /// Rotate this long before expiry.
    pub rotation_margin: Duration,
    /// ValidatingWebhookConfiguration whose `caBundle`s are injected.
    pub validating_configuration: String,
    /// MutatingWebhookConfiguration whose `caBundle`s are injected.
    pub mutating_configuration: String,
}

impl CertConfig {
    /// How often the Secret and the `caBundle`s are re-checked.
    pub fn check_interval(&self) -> Duration {
        (self.rotation_margin / 5).clamp(Duration::from_secs(1), Duration::from_secs(60))
    }

    fn secret_ref(&self) -> String {
        format!("{}/{}", self.secret_namespace, self.secret_name)
    }
}

fn from_secret(secret: &Secret, config: &CertConfig) -> Result<WebhookCert, CertError> {
    let get = |key: &'static str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .ok_or_else(|| CertError::IncompleteSecret {
                secret: config.secret_ref(),
                key,
            })
    };
    Ok(WebhookCert {
        cert_pem: get(TLS_CERT)?,
        key_pem: get(TLS_KEY)?,
        ca_bundle_pem: get(CA_BUNDLE)?,
    })
}

fn to_secret(cert: &WebhookCert, config: &CertConfig, resource_version: Option<String>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(config.secret_name.clone()),
            namespace: Some(config.secret_namespace.clone()),
            labels: Some(
                [(
                    "app.kubernetes.io/managed-by".to_string(),
                    "airunway-core".to_string(),
                )]
                .into(),
            ),
            resource_version,
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [
                (
                    TLS_CERT.to_string(),
                    ByteString(cert.cert_pem.clone().into_bytes()),
                ),
                (
                    TLS_KEY.to_string(),
                    ByteString(cert.key_pem.clone().into_bytes()),
                ),
                (
                    CA_BUNDLE.to_string(),
                    ByteString(cert.ca_bundle_pem.clone().into_bytes()),
                ),
            ]
            .into(),
        ),
        ..Default::default()
    }
}

/// Reads the Secret, creating or rotating its certificate when needed. Returns the certificate
/// every replica should serve and whether this call wrote a new one.
pub async fn ensure_secret(
    client: &Client,
    config: &CertConfig,
) -> Result<(WebhookCert, bool), CertError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &config.secret_namespace);
    let api_error = |action: &str| {
        let action = format!("{action} Secret {}", config.secret_ref());
        move |source| CertError::Api { action, source }
    };
    for _ in 0..3 {
        match api
            .get_opt(&config.secret_name)
            .await
            .map_err(api_error("reading"))?
        {
            None => {
                let cert = issue(&config.sans, config.lifetime, None)?;
                match api
                    .create(&PostParams::default(), &to_secret(&cert, config, None))
                    .await
                {
                    Ok(_) => {
                        tracing::info!(secret = %config.secret_ref(), "created the webhook certificate");
                        return Ok((cert, true));
                    }
                    // Another replica created it first: use theirs.
                    Err(e) if ErrorClass::of(&e) == ErrorClass::Conflict => continue,
                    Err(e) => return Err(api_error("creating")(e)),
                }
            }
            Some(secret) => {
                let current = from_secret(&secret, config);
                let rotate = match &current {
                    Ok(cert) => {
                        needs_rotation(&cert.cert_pem, Timestamp::now(), config.rotation_margin)
                    }
                    Err(_) => true,
                };
                if !rotate && let Ok(cert) = current {
                    return Ok((cert, false));
                }
                let previous_ca = current.as_ref().ok().map(|c| c.ca_bundle_pem.clone());
                let cert = issue(&config.sans, config.lifetime, previous_ca.as_deref())?;
                // Trust the new CA before anyone serves its certificate.
                inject_ca_bundle(client, config, &cert.ca_bundle_pem).await;
                match api
                    .replace(
                        &config.secret_name,
                        &PostParams::default(),
                        &to_secret(&cert, config, secret.metadata.resource_version.clone()),
                    )
                    .await
                {
                    Ok(_) => {
                        tracing::info!(secret = %config.secret_ref(), "rotated the webhook certificate");
                        return Ok((cert, true));
                    }
                    // Another replica rotated first: adopt theirs.
                    Err(e) if ErrorClass::of(&e) == ErrorClass::Conflict => continue,
                    Err(e) => return Err(api_error("updating")(e)),
                }
            }
        }
    }
    let secret = api
        .get(&config.secret_name)
        .await
        .map_err(api_error("reading"))?;
    Ok((from_secret(&secret, config)?, false))
}

/// Writes `bundle` into `caBundle` of every webhook of the configured configurations that does
/// not have it yet. Missing configurations are skipped (they may be created later).
pub async fn inject_ca_bundle(client: &Client, config: &CertConfig, bundle: &str) {
    let params = PatchParams {
        field_manager: Some(field_managers::CORE_CA_INJECTOR.to_string()),
        ..Default::default()
    };
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    if let Ok(Some(object)) = validating.get_opt(&config.validating_configuration).await {
        let names: Vec<(String, Option<Vec<u8>>)> = object
            .webhooks
            .unwrap_or_default()
            .into_iter()
            .map(|w| (w.name, w.client_config.ca_bundle.map(|b| b.0)))
            .collect();
        patch_bundles(
            &validating,
            &config.validating_configuration,
            &names,
            bundle,
            &params,
        )
        .await;
    }
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    if let Ok(Some(object)) = mutating.get_opt(&config.mutating_configuration).await {
        let names: Vec<(String, Option<Vec<u8>>)> = object
            .webhooks
            .unwrap_or_default()
            .into_iter()
            .map(|w| (w.name, w.client_config.ca_bundle.map(|b| b.0)))
            .collect();
        patch_bundles(
            &mutating,
            &config.mutating_configuration,
            &names,
            bundle,
            &params,
        )
        .await;
    }
}

async fn patch_bundles<K>(
    api: &Api<K>,
    name: &str,
    webhooks: &[(String, Option<Vec<u8>>)],
    bundle: &str,
    params: &PatchParams,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bundle);
    let mut ops = Vec::new();
    for (i, (webhook, current)) in webhooks.iter().enumerate() {
        if current.as_deref() == Some(bundle.as_bytes()) {
            continue;
        }
        // Guard each replacement with the webhook's name so a concurrent edit cannot make us
        // write into the wrong entry.
        ops.push(serde_json::json!({"op": "test", "path": format!("/webhooks/{i}/name"), "value": webhook}));
        ops.push(serde_json::json!({"op": "add", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": encoded}));
    }
    if ops.is_empty() {
        return;
    }
    let patch: json_patch::Patch = match serde_json::from_value(serde_json::Value::Array(ops)) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "could not build the caBundle patch");
            return;
        }
    };
    match api.patch(name, params, &Patch::<()>::Json(patch)).await {
        Ok(_) => tracing::info!(configuration = name, "injected the webhook CA bundle"),
        Err(e) => {
            tracing::warn!(configuration = name, error = %e, "could not inject the webhook CA bundle")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_bundle_and_expiry() {
        let first = issue(
            &[
                "airunway-core-webhook.airunway-system.svc".into(),
                "127.0.0.1".into(),
            ],
            Duration::from_secs(3600),
            None,
        )
        .unwrap();
        assert_eq!(first.ca_bundle_pem.matches("BEGIN CERTIFICATE").count(), 1);
        let second = issue(
            &["x".into()],
            Duration::from_secs(3600),
            Some(&first.ca_bundle_pem),
        )
        .unwrap();
        assert_eq!(
            second.ca_bundle_pem.matches("BEGIN CERTIFICATE").count(),
            2,
            "new CA + previous CA"
        );
        assert!(second.ca_bundle_pem.ends_with(&first.ca_bundle_pem));
        let third = issue(
            &["x".into()],
            Duration::from_secs(3600),
            Some(&second.ca_bundle_pem),
        )
        .unwrap();
        assert_eq!(
            third.ca_bundle_pem.matches("BEGIN CERTIFICATE").count(),
            2,
            "only one previous CA is kept"
        );

        let expiry = not_after(&first.cert_pem).unwrap();
        let now = Timestamp::now();
        let left = expiry.duration_since(now).as_secs();
        assert!((3590..=3600).contains(&left), "{left}");
        assert!(!needs_rotation(
            &first.cert_pem,
            now,
            Duration::from_secs(600)
        ));
        assert!(needs_rotation(
            &first.cert_pem,
            now,
            Duration::from_secs(3600)
        ));
        assert!(needs_rotation("garbage", now, Duration::from_secs(1)));
    }
}
