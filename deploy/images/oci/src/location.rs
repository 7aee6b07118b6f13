//! Where an image is, written as the build script prints it: `oci:<layout dir>:<tag>` for an
//! image of a local layout, `docker://<registry>/<repository>:<tag>` (or the reference alone)
//! for an image in a registry.

use std::path::PathBuf;
use std::str::FromStr;

use crate::{Error, Result};

/// The prefix of a layout location.
pub const LAYOUT_PREFIX: &str = "oci:";
/// The optional prefix of a registry location.
pub const REGISTRY_PREFIX: &str = "docker://";

/// An image's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An image of an OCI image layout.
    Layout {
        /// The layout directory.
        dir: PathBuf,
        /// The tag (`org.opencontainers.image.ref.name`).
        tag: String,
    },
    /// An image in a registry.
    Registry(oci_client::Reference),
}

impl FromStr for Location {
    type Err = Error;

    fn from_str(s: &str) -> Result<Location> {
        if let Some(rest) = s.strip_prefix(LAYOUT_PREFIX) {
            // The tag follows the last ':' (a directory may hold ':' itself).
            return match rest.rsplit_once(':') {
                Some((dir, tag)) if !dir.is_empty() && !tag.is_empty() && !tag.contains('/') => {
                    Ok(Location::Layout {
                        dir: PathBuf::from(dir),
                        tag: tag.to_string(),
                    })
                }
                _ => Err(Error::Location(format!(
                    "{s}: a layout location is oci:<directory>:<tag>"
                ))),
            };
        }
        let reference = s.strip_prefix(REGISTRY_PREFIX).unwrap_or(s);
        let parsed = reference
            .parse::<oci_client::Reference>()
            .map_err(|e| Error::Location(format!("{s}: not an image reference: {e}")))?;
        Ok(Location::Registry(parsed))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn layout_locations_split_at_the_last_colon() {
        assert_eq!(
            "oci:target/images/airunway-core:0.1.0"
                .parse::<Location>()
                .unwrap(),
            Location::Layout {
                dir: "target/images/airunway-core".into(),
                tag: "0.1.0".into()
            }
        );
        assert_eq!(
            "oci:/tmp/a:b/layout:e2e".parse::<Location>().unwrap(),
            Location::Layout {
                dir: "/tmp/a:b/layout".into(),
                tag: "e2e".into()
            }
        );
        assert!("oci:no-tag".parse::<Location>().is_err());
        assert!("oci::tag".parse::<Location>().is_err());
        assert!("oci:dir:".parse::<Location>().is_err());
    }

    #[test]
    fn registry_locations_with_or_without_the_transport() {
        for s in [
            "docker://127.0.0.1:5000/vllm/vllm-openai:e2e",
            "127.0.0.1:5000/vllm/vllm-openai:e2e",
        ] {
            let Location::Registry(r) = s.parse::<Location>().unwrap() else {
                panic!("{s} is a registry location");
            };
            assert_eq!(r.registry(), "127.0.0.1:5000");
            assert_eq!(r.repository(), "vllm/vllm-openai");
            assert_eq!(r.tag(), Some("e2e"));
        }
        assert!("docker://".parse::<Location>().is_err());
        assert!(
            "docker://example.com/repo:ta g"
                .parse::<Location>()
                .is_err()
        );
    }
}
