//! The input hash, the attempt and the lock (pure).
//!
//! A request is immutable once Dynamo profiles it: the profiling Job and the graph it chose
//! stand for the inputs it was given. So each request carries the hash of those inputs
//! (`airunway.ai/dynamo-intent-hash`) and the attempt it belongs to
//! (`airunway.ai/dynamo-attempt`, copied from the deployment's annotation). Changed inputs
//! under the same attempt are refused while the request profiles or serves; a new attempt
//! token is the explicit way to start over: it names a new request.

use airunway_api::constants::annotations::dynamo::ATTEMPT;
use airunway_api::serde_json::{self, json};
use airunway_api::v1alpha1::ModelDeployment;
use sha2::{Digest, Sha256};

use super::IntentError;
use super::spec::{Intent, SEARCH_STRATEGY_RAPID};

/// The longest attempt token.
pub const MAX_ATTEMPT_LEN: usize = 64;
/// How much of the deployment's name starts a request name.
const NAME_PREFIX_LEN: usize = 15;
/// The request phases that lock the inputs (Dynamo profiles, or serves what it chose).
pub const LOCKED_PHASES: &[&str] = &["Profiling", "Ready", "Deploying", "Deployed"];

/// The deployment's attempt token (`""` without the annotation).
pub fn attempt(md: &ModelDeployment) -> &str {
    md.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ATTEMPT))
        .map(String::as_str)
        .unwrap_or_default()
}

/// Checks an attempt token: at most 64 characters of `[A-Za-z0-9._-]`.
pub fn check_attempt(token: &str) -> Result<(), IntentError> {
    if token.len() > MAX_ATTEMPT_LEN {
        return Err(IntentError::Refused(
            "Dynamo attempt token must be at most 64 characters",
        ));
    }
    if !token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(IntentError::Refused(
            "Dynamo attempt token contains invalid characters",
        ));
    }
    Ok(())
}

/// The hash of what profiling depends on: the model, the engine, the secret, the scheduling
/// and env settings and the intent (its search strategy defaulted); not the metadata, routing
/// or status. Keys are sorted, so neither key order nor spacing makes a new hash.
pub fn input_hash(md: &ModelDeployment, intent: &Intent) -> String {
    let mut intent = intent.clone();
    if intent.search_strategy.as_deref().is_none_or(str::is_empty) {
        intent.search_strategy = Some(SEARCH_STRATEGY_RAPID.into());
    }
    let spec = &md.spec;
    let input = json!({
        "model": spec.model,
        "backend": md.resolved_engine().map(|e| e.as_str()),
        "secrets": spec.secrets,
        "nodeSelector": spec.node_selector,
        "tolerations": spec.tolerations,
        "env": spec.env,
        "intent": intent,
    });
    let canonical = serde_json::to_string(&input).unwrap_or_default();
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The request's name for `md`'s current attempt: at most 15 characters of the deployment's
/// name (`.` made `-`, trailing `-` dropped), `-`, and 16 hex digits of the hash of its UID and
/// attempt token — at most 32 characters, leaving room for the names Dynamo derives from it
/// (`profile-…` Jobs, `…-dgd` graphs and their component Services).
pub fn request_name(md: &ModelDeployment) -> String {
    let name = md.metadata.name.as_deref().unwrap_or_default();
    let uid = md.metadata.uid.as_deref().unwrap_or_default();
    let prefix: String = name
        .chars()
        .take(NAME_PREFIX_LEN)
        .map(|c| if c == '.' { '-' } else { c })
        .collect();
    let prefix = prefix.trim_end_matches('-');
    let digest = Sha256::digest(format!("{uid}\0{}", attempt(md)).as_bytes());
    let suffix: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{suffix}")
}

/// What the live request accepted: its attempt, its input hash and its phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted<'a> {
    /// The attempt token the request was made for.
    pub attempt: &'a str,
    /// The hash of the inputs it was given (`""`: unknown).
    pub input_hash: &'a str,
    /// The request's `status.phase` (`""`: not reported yet).
    pub phase: &'a str,
}

/// Whether the inputs hashed `hash` under attempt `attempt` may be written to the request
/// that accepted `accepted`: always for a new attempt (a new request) or unchanged inputs;
/// changed inputs only while the request is `Pending`, `Failed` or not reported yet
/// ([`LOCKED_PHASES`] lock them).
pub fn check_unchanged(
    accepted: Option<Accepted<'_>>,
    attempt: &str,
    hash: &str,
) -> Result<(), IntentError> {
    let Some(accepted) = accepted else {
        return Ok(());
    };
    if accepted.attempt != attempt || accepted.input_hash.is_empty() || accepted.input_hash == hash
    {
        return Ok(());
    }
    if LOCKED_PHASES.contains(&accepted.phase) {
        return Err(IntentError::Locked);
    }
    Ok(())
}
