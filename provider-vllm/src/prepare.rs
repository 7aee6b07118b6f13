//! The image step before the render (pure decisions, the registry call in [`crate::registry`]):
//! the requested image is resolved to a digest, published in `status.image` with the
//! reference's conditions, and reused while the requested reference does not change.
//!
//! - [`next_step`]: reuse `status.image` when it resolved the same requested reference
//!   (reason `ImageResolutionReused`, no registry call), nothing to resolve when the reference
//!   is digest-pinned, else resolve.
//! - [`preparation`]: `status.image` and the conditions `ImageResolved` (True `ImageResolved` /
//!   `ImageResolutionReused`, or False `ImageResolutionFailed`), `ImageVerified` (Unknown
//!   `VerificationNotImplemented`), `UnsupportedImage` (True `CustomImage` for a custom image,
//!   else False `SupportedImage`) and `RecipeResolved` (True `RecipeProvenanceResolved` when
//!   the recipe annotations are there). A user image that cannot be resolved is not fatal (its
//!   tag is used); the default image is: the deployment is held `Failed` with
//!   `failed to resolve default vLLM image "<image>": <error>`.

use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::{condition_types, reasons};
use airunway_api::provider::{Preparation, PreparationHold};
use airunway_api::serde_json::{self, Value};
use airunway_api::v1alpha1::{ConditionStatus, ImageStatus, ModelDeployment};

use crate::image::{self, ImageRef, ImageSource};
use crate::registry::Resolved;

/// What `status.image.verificationMessage` says.
pub const VERIFICATION_MESSAGE: &str =
    "Image attestation/signature verification is not implemented by this controller";

/// The annotation naming what generated the deployment, and its recipe resolver value.
pub const GENERATED_BY: &str = "airunway.ai/generated-by";
/// The value of [`GENERATED_BY`] for the vLLM recipe resolver.
pub const RECIPE_RESOLVER: &str = "vllm-recipe-resolver";
/// The prefix of the recipe provenance annotations.
pub const RECIPE_PREFIX: &str = "airunway.ai/recipe.";
/// The provenance keys listed, in order.
pub const RECIPE_KEYS: [&str; 9] = [
    "generated-by",
    "source",
    "id",
    "strategy",
    "hardware",
    "variant",
    "precision",
    "revision",
    "features",
];

/// What to do about the image.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `status.image` already resolved this reference: reuse it.
    Reuse(ImageStatus),
    /// The reference pins a digest: nothing to ask.
    Pinned(ImageRef),
    /// Ask the registry.
    Resolve(ImageRef),
    /// The reference does not parse (the message says why).
    Invalid(String),
}

/// What the registry said.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Reused from `status.image`.
    Reused(ImageStatus),
    /// The digest (`sha256:…`) and build metadata, or the pinned digest.
    Resolved(ImageRef, Resolved),
    /// The error.
    Failed(Option<ImageRef>, String),
}

/// The requested image: `engine.image`, else `spec.image`, else the provider's
/// `default_image`.
pub fn requested(md: &ModelDeployment, default_image: &str) -> String {
    md.spec
        .image_override()
        .unwrap_or(default_image)
        .to_string()
}

/// Whether the image is the provider's default (not the user's).
pub fn is_default(md: &ModelDeployment) -> bool {
    md.spec.image_override().is_none()
}

/// The next step for `md`'s image (pure).
pub fn next_step(md: &ModelDeployment, default_image: &str) -> Step {
    let requested = requested(md, default_image);
    let previous = md.status.as_ref().and_then(|s| s.image.as_deref());
    if let Some(previous) = previous
        && previous.requested.as_deref() == Some(requested.as_str())
        && previous.resolved.is_some()
    {
        return Step::Reuse(previous.clone());
    }
    match image::parse(&requested) {
        Ok(parsed) if parsed.digest.is_some() => Step::Pinned(parsed),
        Ok(parsed) => Step::Resolve(parsed),
        Err(message) => Step::Invalid(message),
    }
}

fn recipe(md: &ModelDeployment) -> Option<String> {
    let annotations = md.metadata.annotations.as_ref()?;
    let present = annotations.get(GENERATED_BY).map(String::as_str) == Some(RECIPE_RESOLVER)
        || annotations.keys().any(|k| k.starts_with(RECIPE_PREFIX));
    if !present {
        return None;
    }
    let parts: Vec<String> = RECIPE_KEYS
        .iter()
        .filter_map(|key| {
            let value = if *key == "generated-by" {
                annotations.get(GENERATED_BY)
            } else {
                annotations.get(&format!("{RECIPE_PREFIX}{key}"))
            }?;
            Some(format!("{key}={value}"))
        })
        .collect();
    Some(parts.join(", "))
}

/// The status and conditions for `outcome` (pure).
pub fn preparation(md: &ModelDeployment, default_image: &str, outcome: &Outcome) -> Preparation {
    let requested = requested(md, default_image);
    let source = image::classify(&requested, default_image);
    let selection = format!("from {} selection", source.as_str());
    let recipe = recipe(md);
    let mut conditions = Vec::new();
    let mut hold = None;
    let mut status = match outcome {
        Outcome::Reused(previous) => {
            let resolved = previous.resolved.clone().unwrap_or_default();
            conditions.push(DesiredCondition::new(
                condition_types::IMAGE_RESOLVED,
                true,
                "ImageResolutionReused",
                format!(
                    "Resolved Direct vLLM image \"{requested}\" to \"{resolved}\" {selection}."
                ),
            ));
            previous.clone()
        }
        Outcome::Resolved(parsed, found) => {
            let digest = &found.digest;
            let resolved = format!("{}@{digest}", parsed.repository);
            conditions.push(DesiredCondition::new(
                condition_types::IMAGE_RESOLVED,
                true,
                condition_types::IMAGE_RESOLVED,
                format!(
                    "Resolved Direct vLLM image \"{requested}\" to \"{resolved}\" {selection}."
                ),
            ));
            ImageStatus {
                resolved: Some(resolved),
                repository: Some(parsed.repository.clone()),
                tag: parsed.tag.clone(),
                digest: Some(digest.clone()),
                created_at: found.created_at.clone(),
                revision: found.revision.clone(),
                age: found.age.clone(),
                ..Default::default()
            }
        }
        Outcome::Failed(parsed, error) => {
            let mut message = format!(
                "Failed to resolve Direct vLLM image \"{requested}\" {selection}: {error}."
            );
            if is_default(md) {
                hold = Some(PreparationHold {
                    reason: reasons::IMAGE_RESOLUTION_FAILED,
                    message: format!(
                        "failed to resolve default vLLM image \"{requested}\": {error}"
                    ),
                });
            } else {
                message.push_str(" Continuing with the user-specified image reference.");
            }
            conditions.push(DesiredCondition::new(
                condition_types::IMAGE_RESOLVED,
                false,
                reasons::IMAGE_RESOLUTION_FAILED,
                message,
            ));
            ImageStatus {
                repository: parsed.as_ref().map(|p| p.repository.clone()),
                tag: parsed.as_ref().and_then(|p| p.tag.clone()),
                ..Default::default()
            }
        }
    };
    let resolved_message = conditions
        .first()
        .map(|c| c.message.clone())
        .unwrap_or_default();
    status.requested = Some(requested);
    status.source = Some(source.as_str().to_string());
    status.in_nightly = Some(source == ImageSource::Nightly);
    status.verified = Some(false);
    status.verification_message = Some(VERIFICATION_MESSAGE.to_string());
    status.message = Some(match &recipe {
        Some(provenance) => format!("{resolved_message} Recipe provenance: {provenance}"),
        None => resolved_message,
    });
    conditions.push(DesiredCondition {
        type_: condition_types::IMAGE_VERIFIED.to_string(),
        status: ConditionStatus::Unknown,
        reason: "VerificationNotImplemented".to_string(),
        message: VERIFICATION_MESSAGE.to_string(),
    });
    conditions.push(if source == ImageSource::Custom {
        DesiredCondition::new(
            condition_types::UNSUPPORTED_IMAGE,
            true,
            "CustomImage",
            "User-specified custom vLLM image is not verified as a supported provider image",
        )
    } else {
        DesiredCondition::new(
            condition_types::UNSUPPORTED_IMAGE,
            false,
            "SupportedImage",
            "Selected vLLM image is supported by provider image policy",
        )
    });
    if let Some(provenance) = recipe {
        conditions.push(DesiredCondition::new(
            condition_types::RECIPE_RESOLVED,
            true,
            "RecipeProvenanceResolved",
            provenance,
        ));
    }
    let mut fields = serde_json::Map::new();
    fields.insert(
        "image".to_string(),
        serde_json::to_value(&status).unwrap_or(Value::Null),
    );
    Preparation {
        status: fields,
        conditions,
        hold,
    }
}

/// The image the Deployment runs: the user's image as given; the default image
/// (`default_image`) pinned to the digest `status.image` resolved for it, else its tag.
pub fn image_to_run(md: &ModelDeployment, default_image: &str) -> String {
    if let Some(own) = md.spec.image_override() {
        return own.to_string();
    }
    md.status
        .as_ref()
        .and_then(|s| s.image.as_ref())
        .filter(|i| i.requested.as_deref() == Some(default_image))
        .and_then(|i| i.resolved.clone())
        .unwrap_or_else(|| default_image.to_string())
}
