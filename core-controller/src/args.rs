//! Command-line options of `airunway-core` (each also readable from the environment).

use std::time::Duration;

use airunway_api::runtime::CommonArgs;
use clap::{ArgAction, Parser};

use crate::parse_duration;

/// The AI Runway core controller: validates ModelDeployments, selects their engine and
/// provider, serves the admission webhooks, and watches provider health.
#[derive(Parser, Clone, Debug)]
#[command(name = "airunway-core", version, about)]
pub struct Args {
    /// An offline command (no cluster; docs/gitops.md) instead of the controller.
    #[command(subcommand)]
    pub command: Option<crate::offline::Command>,

    /// Options shared by every AI Runway binary.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Select a provider for deployments that name none (`--enable-provider-selector=false`
    /// leaves that to a custom selector).
    #[arg(long, env = "AIRUNWAY_ENABLE_PROVIDER_SELECTOR", default_value_t = true, action = ArgAction::Set)]
    pub enable_provider_selector: bool,

    /// A provider whose heartbeat is older than this is stale (default: 3 heartbeat
    /// intervals of 30s).
    #[arg(long, env = "AIRUNWAY_PROVIDER_STALE_THRESHOLD", default_value = "90s", value_parser = parse_duration)]
    pub provider_stale_threshold: Duration,

    /// How often the core probes each provider's gRPC endpoint.
    #[arg(long, env = "AIRUNWAY_PROVIDER_PROBE_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub provider_probe_interval: Duration,

    /// Consecutive failed probes after which a provider is stale.
    #[arg(
        long,
        env = "AIRUNWAY_PROVIDER_PROBE_FAILURE_THRESHOLD",
        default_value_t = 3
    )]
    pub provider_probe_failure_threshold: u32,

    /// Before selecting a provider, ask with a SubjectAccessReview whether the deployment's
    /// spec author may create the provider's upstream resources in its namespace
    /// (docs/security.md; needs the `upstream-access-check` component).
    #[arg(long, env = "AIRUNWAY_CHECK_UPSTREAM_ACCESS", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub check_upstream_access: bool,

    /// How long an answer of the upstream access check is reused (and when a denied
    /// deployment is looked at again).
    #[arg(long, env = "AIRUNWAY_UPSTREAM_ACCESS_CACHE_TTL", default_value = "1m", value_parser = parse_duration)]
    pub upstream_access_cache_ttl: Duration,

    /// Re-check every deployment this often even without changes.
    #[arg(long, env = "AIRUNWAY_RESYNC_INTERVAL", default_value = "5m", value_parser = parse_duration)]
    pub resync_interval: Duration,

    /// Address of the HTTPS admission webhook server (port 0 disables the webhooks).
    #[arg(
        long,
        env = "AIRUNWAY_WEBHOOK_BIND_ADDRESS",
        default_value = "0.0.0.0:9443"
    )]
    pub webhook_bind_address: std::net::SocketAddr,

    /// Namespace of the webhook certificate Secret and Service (default: `POD_NAMESPACE`, else
    /// `airunway-system`).
    #[arg(long, env = "AIRUNWAY_WEBHOOK_NAMESPACE")]
    pub webhook_namespace: Option<String>,

    /// Secret holding the webhook certificate (created if missing, shared by replicas).
    #[arg(
        long,
        env = "AIRUNWAY_WEBHOOK_SECRET_NAME",
        default_value = "airunway-core-webhook-tls"
    )]
    pub webhook_secret_name: String,

    /// Service the API server calls the webhooks through (its DNS names go into the
    /// certificate).
    #[arg(
        long,
        env = "AIRUNWAY_WEBHOOK_SERVICE_NAME",
        default_value = "airunway-core-webhook"
    )]
    pub webhook_service_name: String,

    /// Extra subject alternative names (DNS names or IP addresses) for the certificate.
    #[arg(long, env = "AIRUNWAY_WEBHOOK_EXTRA_SANS", value_delimiter = ',')]
    pub webhook_extra_san: Vec<String>,

    /// Lifetime of each webhook certificate.
    #[arg(long, env = "AIRUNWAY_WEBHOOK_CERT_LIFETIME", default_value = "90d", value_parser = parse_duration)]
    pub webhook_cert_lifetime: Duration,

    /// Rotate the certificate this long before it expires.
    #[arg(long, env = "AIRUNWAY_WEBHOOK_CERT_ROTATION_MARGIN", default_value = "30d", value_parser = parse_duration)]
    pub webhook_cert_rotation_margin: Duration,

    /// ValidatingWebhookConfiguration whose caBundle the core keeps up to date.
    #[arg(
        long,
        env = "AIRUNWAY_VALIDATING_WEBHOOK_CONFIGURATION",
        default_value = "airunway-core"
    )]
    pub validating_webhook_configuration: String,

    /// MutatingWebhookConfiguration whose caBundle the core keeps up to date.
    #[arg(
        long,
        env = "AIRUNWAY_MUTATING_WEBHOOK_CONFIGURATION",
        default_value = "airunway-core"
    )]
    pub mutating_webhook_configuration: String,

    /// Route `Running` deployments through the inference gateway when the cluster serves
    /// the Gateway API and Inference Extension CRDs (`false` turns the integration off).
    #[arg(long, env = "AIRUNWAY_ENABLE_GATEWAY", default_value_t = true, action = ArgAction::Set)]
    pub enable_gateway: bool,

    /// The Gateway routes attach to (with `--gateway-namespace`); default: the only Gateway,
    /// else the one labelled `airunway.ai/inference-gateway: "true"`.
    #[arg(long, env = "AIRUNWAY_GATEWAY_NAME")]
    pub gateway_name: Option<String>,

    /// Namespace of `--gateway-name`.
    #[arg(long, env = "AIRUNWAY_GATEWAY_NAMESPACE")]
    pub gateway_namespace: Option<String>,

    /// The endpoint picker image when the provider's gateway capability names none.
    #[arg(long, env = "AIRUNWAY_EPP_IMAGE", default_value = crate::gateway::DEFAULT_EPP_IMAGE)]
    pub epp_image: String,

    /// Add a deployment's namespace to the Gateway listeners' `allowedRoutes` when it is not
    /// the Gateway's (and take it back when its last routed deployment goes).
    #[arg(long, env = "AIRUNWAY_PATCH_GATEWAY_ALLOWED_ROUTES", default_value_t = true, action = ArgAction::Set)]
    pub patch_gateway_allowed_routes: bool,

    /// The image of the model download Jobs (`airunway-model-downloader`).
    #[arg(long, env = "AIRUNWAY_MODEL_DOWNLOADER_IMAGE", default_value = crate::model_cache::DEFAULT_DOWNLOADER_IMAGE)]
    pub model_downloader_image: String,

    /// The Hugging Face endpoint the download Jobs use (a mirror or a server with the Hub's
    /// file API); empty: the downloader's default, `https://huggingface.co`.
    #[arg(long, env = "AIRUNWAY_MODEL_CACHE_ENDPOINT")]
    pub model_cache_endpoint: Option<String>,

    /// The claim size of a shared model cache the core creates.
    #[arg(long, env = "AIRUNWAY_MODEL_CACHE_SIZE", default_value = "100Gi")]
    pub model_cache_size: String,

    /// What happens to a shared model cache the core created once no deployment uses it:
    /// `Delete` (after `--model-cache-retention-period`) or `Retain`.
    #[arg(long, env = "AIRUNWAY_MODEL_CACHE_RETENTION", default_value = "Delete", value_parser = parse_retention)]
    pub model_cache_retention: airunway_api::v1alpha1::RetentionPolicy,

    /// How long an unused shared model cache the core created is kept before `Delete` applies.
    #[arg(long, env = "AIRUNWAY_MODEL_CACHE_RETENTION_PERIOD", default_value = "24h", value_parser = parse_duration)]
    pub model_cache_retention_period: Duration,

    /// The Prometheus the autoscalers of deployments with `spec.scaling.autoscaling` query
    /// (KEDA's `serverAddress`; never taken from a deployment's spec).
    #[arg(long, env = "AIRUNWAY_AUTOSCALING_PROMETHEUS_ADDRESS", default_value = crate::autoscaling::DEFAULT_PROMETHEUS_ADDRESS)]
    pub autoscaling_prometheus_address: String,

    /// Name of the leader election Lease.
    #[arg(
        long,
        env = "AIRUNWAY_LEADER_ELECTION_ID",
        default_value = "airunway-core"
    )]
    pub leader_election_id: String,
}

/// `Delete` or `Retain`.
fn parse_retention(text: &str) -> Result<airunway_api::v1alpha1::RetentionPolicy, String> {
    use airunway_api::v1alpha1::RetentionPolicy;
    match text {
        "Delete" => Ok(RetentionPolicy::Delete),
        "Retain" => Ok(RetentionPolicy::Retain),
        other => Err(format!("unknown retention {other:?}: use Delete or Retain")),
    }
}

impl Args {
    /// Checks flag combinations clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.webhook_cert_rotation_margin >= self.webhook_cert_lifetime {
            return Err(format!(
                "--webhook-cert-rotation-margin ({:?}) must be shorter than --webhook-cert-lifetime ({:?})",
                self.webhook_cert_rotation_margin, self.webhook_cert_lifetime
            ));
        }
        if self.gateway_name.as_deref().unwrap_or_default().is_empty()
            != self
                .gateway_namespace
                .as_deref()
                .unwrap_or_default()
                .is_empty()
        {
            return Err(
                "--gateway-name and --gateway-namespace must both be set or both be empty"
                    .to_string(),
            );
        }
        if self.provider_probe_failure_threshold == 0 {
            return Err("--provider-probe-failure-threshold must be at least 1".to_string());
        }
        Ok(())
    }

    /// The gateway integration's options.
    pub fn gateway_config(&self) -> crate::gateway::GatewayConfig {
        let gateway = match (&self.gateway_namespace, &self.gateway_name) {
            (Some(namespace), Some(name)) if !namespace.is_empty() && !name.is_empty() => {
                Some(crate::gateway::select::GatewayRef {
                    namespace: namespace.clone(),
                    name: name.clone(),
                })
            }
            _ => None,
        };
        crate::gateway::GatewayConfig {
            gateway,
            epp_image: self.epp_image.clone(),
            patch_allowed_routes: self.patch_gateway_allowed_routes,
        }
    }

    /// The model cache's options.
    pub fn cache_config(&self) -> crate::model_cache::CacheConfig {
        crate::model_cache::CacheConfig {
            downloader_image: self.model_downloader_image.clone(),
            endpoint: self.model_cache_endpoint.clone().filter(|e| !e.is_empty()),
            size: self.model_cache_size.clone(),
            retention: self.model_cache_retention,
            retention_period: self.model_cache_retention_period,
        }
    }

    /// Autoscaling's options.
    pub fn autoscaling_config(&self) -> crate::autoscaling::AutoscalingConfig {
        crate::autoscaling::AutoscalingConfig {
            prometheus_address: self.autoscaling_prometheus_address.clone(),
        }
    }

    /// The namespace of the webhook Secret and Service.
    pub fn webhook_namespace(&self) -> String {
        self.webhook_namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok())
            .unwrap_or_else(|| "airunway-system".to_string())
    }

    /// Subject alternative names of the webhook certificate.
    pub fn webhook_sans(&self) -> Vec<String> {
        let namespace = self.webhook_namespace();
        let service = &self.webhook_service_name;
        let mut sans = vec![
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
            format!("{service}.{namespace}"),
            service.clone(),
        ];
        sans.extend(
            self.webhook_extra_san
                .iter()
                .filter(|s| !s.is_empty())
                .cloned(),
        );
        sans
    }
}
