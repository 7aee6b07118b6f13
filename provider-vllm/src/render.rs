//! ModelDeployment → one vLLM Deployment and one Service named after it (pure), on the SDK's
//! [`vllm_kit`](airunway_api::provider::vllm_kit) render, in the direct vLLM style:
//!
//! - the command line starts with `--host 0.0.0.0 --port 8000`; a derived flag (`--model`,
//!   `--served-model-name`, `--max-model-len`, `--trust-remote-code`, `--enforce-eager`,
//!   `--enable-prefix-caching` only when on, `--tensor-parallel-size` with more than one GPU)
//!   is left out when the user sets the same key in `engine.args` or as a `--key`/`--key=value`
//!   token of `engine.extraArgs`; then `engine.args` in key order, then `engine.extraArgs`
//!   verbatim;
//! - `host` and `port` in `engine.args` or `engine.extraArgs` are refused ([`check_networking`]):
//!   the container, the Service and the probes all use 8000;
//! - `scaling.replicas: 0` is honoured (the Deployment scales to zero);
//! - image: `engine.image` (or the legacy `spec.image`), else the default image as resolved
//!   to a digest ([`crate::image`]), else [`crate::image::DEFAULT_IMAGE`];
//! - `provider.overrides` deep-merged into the Deployment with the shared refusals
//!   ([`vllm_kit::overrides`](airunway_api::provider::vllm_kit::overrides)).

use airunway_api::provider::vllm_kit::overrides;
use airunway_api::provider::vllm_kit::render::{
    self as workload, ArgsStyle, Component, PORT, vllm_args_with,
};
use airunway_api::provider::{RenderError, Rendered};
use airunway_api::v1alpha1::ModelDeployment;

/// The address vLLM listens on.
pub const HOST: &str = "0.0.0.0";

/// The keys the provider owns on the command line.
pub const NETWORKING_KEYS: [&str; 2] = ["host", "port"];

const NETWORKING_HINT: &str = "conflicts with Direct vLLM generated networking; Direct vLLM currently requires host 0.0.0.0 and port 8000 to keep the container, Service, and probes aligned";

/// The direct vLLM way to build the command line.
pub fn args_style() -> ArgsStyle {
    ArgsStyle {
        leading: vec![
            "--host".to_string(),
            HOST.to_string(),
            "--port".to_string(),
            PORT.to_string(),
        ],
        prefix_caching_only_when_on: true,
        user_keys_win: true,
    }
}

fn flag_key(token: &str) -> &str {
    let key = token.trim_start_matches('-');
    key.split_once('=').map_or(key, |(k, _)| k)
}

/// Refuses `host`/`port` in `engine.args` (any number of leading dashes) or as a flag token of
/// `engine.extraArgs` (`--port`, `--port=9000`), with the reference's message.
pub fn check_networking(md: &ModelDeployment) -> Result<(), RenderError> {
    let engine = md.spec.engine.as_ref();
    for key in engine
        .and_then(|e| e.args.as_ref())
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if NETWORKING_KEYS.contains(&flag_key(key)) {
            return Err(RenderError::Unsupported(format!(
                "engine arg \"{key}\" {NETWORKING_HINT}"
            )));
        }
    }
    for token in md.spec.extra_args() {
        if token.starts_with('-') && NETWORKING_KEYS.contains(&flag_key(token)) {
            return Err(RenderError::Unsupported(format!(
                "engine extraArg \"{token}\" {NETWORKING_HINT}"
            )));
        }
    }
    Ok(())
}

/// The Deployment (primary) and the Service of `md`, running `image`.
pub fn render(md: &ModelDeployment, image: &str) -> Result<Rendered, RenderError> {
    check_networking(md)?;
    let overrides_map = md.spec.provider.as_ref().and_then(|p| p.overrides.as_ref());
    let component = Component::aggregated(md);
    let args = vllm_args_with(md, &component, &args_style());
    let mut deployment = workload::deployment_with_args(md, &component, image, args);
    overrides::apply(&mut deployment, overrides_map)?;
    Ok(Rendered {
        objects: vec![deployment, workload::service(md, &component)],
        warnings: Vec::new(),
    })
}
