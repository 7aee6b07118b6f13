//! The vLLM image reference (pure): parsing and the reference's source classification.
//!
//! Source of a requested image: `launch` when its tag contains `launch`; `nightly` when it is
//! the provider's default image ([`DEFAULT_IMAGE`] unless `--default-image` names another) or `vllm/vllm-openai` (with or without a `docker.io/` prefix) with a tag
//! containing `nightly`; `stable` for `vllm/vllm-openai:latest`; else `custom` (a user image
//! the provider does not vouch for).

/// The image when the deployment names none (the default of `--default-image`).
pub const DEFAULT_IMAGE: &str = "vllm/vllm-openai:cu130-nightly";

/// The repository of the project's own images.
pub const PROJECT_REPOSITORY: &str = "vllm/vllm-openai";

/// Docker Hub, the registry of references that name none.
pub use airunway_api::image_reference::DOCKER_HUB;

/// Where a requested image comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageSource {
    /// A vLLM nightly build (the default).
    Nightly,
    /// The latest vLLM release.
    Stable,
    /// A launch build (tag containing `launch`).
    Launch,
    /// Anything else: a user image.
    Custom,
}

impl ImageSource {
    /// The name in `status.image.source`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageSource::Nightly => "nightly",
            ImageSource::Stable => "stable",
            ImageSource::Launch => "launch",
            ImageSource::Custom => "custom",
        }
    }
}

/// A parsed image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// The registry host (and port), [`DOCKER_HUB`] when the reference names none.
    pub registry: String,
    /// The repository path in the registry (`library/` added for a Docker Hub single name).
    pub path: String,
    /// The repository as the user wrote it, without tag or digest.
    pub repository: String,
    /// The tag, if any.
    pub tag: Option<String>,
    /// The digest (`sha256:…`), if the reference pins one.
    pub digest: Option<String>,
}

/// Parses `reference` with the grammar every AI Runway binary shares
/// ([`airunway_api::image_reference`], that of container runtimes); the error names what is
/// wrong.
pub fn parse(reference: &str) -> Result<ImageRef, String> {
    let parsed = airunway_api::image_reference::parse(reference)
        .map_err(|e| format!("image reference {reference:?} is not valid: {e}"))?;
    Ok(ImageRef {
        registry: parsed.domain,
        path: parsed.path,
        repository: parsed.name,
        tag: parsed.tag,
        digest: parsed.digest,
    })
}

/// The source of `requested` when the provider's default image is `default_image` (see the
/// module documentation).
pub fn classify(requested: &str, default_image: &str) -> ImageSource {
    let Ok(image) = parse(requested) else {
        return ImageSource::Custom;
    };
    let tag = image.tag.as_deref().unwrap_or_default();
    let project = image.registry == DOCKER_HUB && image.path == PROJECT_REPOSITORY;
    if tag.contains("launch") {
        ImageSource::Launch
    } else if requested == default_image || (project && tag.contains("nightly")) {
        ImageSource::Nightly
    } else if project && tag == "latest" {
        ImageSource::Stable
    } else {
        ImageSource::Custom
    }
}

/// How old an image built at `created` (RFC 3339) is at `now`: whole days (`3d`) from a day
/// on, else whole hours (`5h`), else whole minutes (`12m`), `0m` under a minute or for a
/// build time in the future; `None` when `created` is not a timestamp.
pub fn age(created: &str, now: jiff::Timestamp) -> Option<String> {
    let created: jiff::Timestamp = created.parse().ok()?;
    let seconds = now.as_second().saturating_sub(created.as_second()).max(0);
    let (minute, hour, day) = (60, 3600, 86_400);
    Some(if seconds >= day {
        format!("{}d", seconds / day)
    } else if seconds >= hour {
        format!("{}h", seconds / hour)
    } else {
        format!("{}m", seconds / minute)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_in_days_hours_minutes() {
        let now: jiff::Timestamp = "2026-11-24T12:00:00Z".parse().unwrap();
        for (created, want) in [
            ("2026-11-20T11:00:00Z", Some("4d")),
            ("2026-11-23T12:00:00Z", Some("1d")),
            ("2026-11-24T01:59:59Z", Some("10h")),
            ("2026-11-24T11:00:00Z", Some("1h")),
            ("2026-11-24T11:15:30Z", Some("44m")),
            ("2026-11-24T11:59:30Z", Some("0m")),
            ("2026-11-25T00:00:00Z", Some("0m")),
            ("2026-11-24T13:00:00+02:00", Some("1h")),
            ("yesterday", None),
        ] {
            assert_eq!(age(created, now).as_deref(), want, "{created}");
        }
    }

    #[test]
    fn parses_registry_path_tag_and_digest() {
        let hub = parse("vllm/vllm-openai:cu130-nightly").unwrap();
        assert_eq!(
            (hub.registry.as_str(), hub.path.as_str(), hub.tag.as_deref()),
            ("docker.io", "vllm/vllm-openai", Some("cu130-nightly"))
        );
        let single = parse("busybox").unwrap();
        assert_eq!(
            (single.path.as_str(), single.tag),
            ("library/busybox", None)
        );
        let local = parse("127.0.0.1:5000/test/vllm:v1").unwrap();
        assert_eq!(
            (
                local.registry.as_str(),
                local.path.as_str(),
                local.repository.as_str()
            ),
            ("127.0.0.1:5000", "test/vllm", "127.0.0.1:5000/test/vllm")
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        let pinned = parse(&format!("ghcr.io/x/y:v2@{digest}")).unwrap();
        assert_eq!(pinned.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(pinned.tag.as_deref(), Some("v2"));
        for bad in [
            "",
            "upper/Case",
            "x@sha256:zz",
            "x:",
            "a//b",
            "x:bad tag",
            "x:.dot",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse(&"a".repeat(256)).is_err());
        let other = format!("x@sha512:{}", "b".repeat(128));
        assert_eq!(parse(&other).unwrap().digest.as_deref(), Some(&other[2..]));
        assert_eq!(parse("[::1]:5000/a:v1").unwrap().registry, "[::1]:5000");
        assert!(
            parse("x:.dot")
                .unwrap_err()
                .contains("not starting with '.'")
        );
    }

    #[test]
    fn classifies_by_the_reference_rules() {
        for (image, source) in [
            (DEFAULT_IMAGE, ImageSource::Nightly),
            ("docker.io/vllm/vllm-openai:nightly", ImageSource::Nightly),
            ("vllm/vllm-openai:latest", ImageSource::Stable),
            ("docker.io/vllm/vllm-openai:latest", ImageSource::Stable),
            ("vllm/vllm-openai:v0.9.1-launch", ImageSource::Launch),
            ("ghcr.io/me/vllm:launch-day", ImageSource::Launch),
            ("vllm/vllm-openai:v0.9.1", ImageSource::Custom),
            ("ghcr.io/me/vllm:nightly", ImageSource::Custom),
            (
                "127.0.0.1:5000/vllm/vllm-openai:latest",
                ImageSource::Custom,
            ),
            ("NOT A REFERENCE", ImageSource::Custom),
        ] {
            assert_eq!(classify(image, DEFAULT_IMAGE), source, "{image}");
        }
        assert_eq!(
            classify(
                "127.0.0.1:5000/v/v:cu130-nightly",
                "127.0.0.1:5000/v/v:cu130-nightly"
            ),
            ImageSource::Nightly
        );
        assert_eq!(ImageSource::Nightly.as_str(), "nightly");
    }
}
