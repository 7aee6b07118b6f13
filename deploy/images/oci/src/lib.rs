//! # airunway-images
//!
//! The build tool behind `deploy/images/build` (docs/install.md): it writes AI Runway's OCI
//! images as OCI image layouts, reads their digests, unpacks them and pushes them to a registry
//! over the OCI distribution API, with no container daemon and no Debian tool.
//!
//! - [`layer`]: deterministic tar+gzip layers (sorted entries, owners 0:0, fixed modes, one
//!   mtime);
//! - [`layout`]: an OCI image layout on disk (`oci-layout`, `index.json`, `blobs/sha256`),
//!   images written into it and read back by tag;
//! - [`image`]: the images themselves (the product images and the tiny test images);
//! - [`unpack`]: an image's root filesystem extracted from its layers;
//! - [`location`]: where an image is (`oci:<layout>:<tag>` or a registry reference);
//! - [`registry`]: pushes and manifest reads against a registry (`oci-client`), with the TLS
//!   options and credentials of a push.
//!
//! It is a build tool, not a product binary: it is never packed into an image and depends on no
//! other workspace crate.

pub mod image;
pub mod layer;
pub mod layout;
pub mod location;
pub mod registry;
pub mod unpack;

/// What can go wrong while building, reading or pushing an image.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done (e.g. "reading").
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An input of the build is missing or invalid (a file, a label, a date).
    #[error("{0}")]
    Input(String),
    /// A layout is not a valid OCI image layout, or has no such tag, or a blob does not match
    /// its digest.
    #[error("{0}")]
    Layout(String),
    /// A JSON document (index, manifest, configuration) could not be written or read.
    #[error("JSON of {what}: {source}")]
    Json {
        /// Which document.
        what: &'static str,
        /// The cause.
        source: serde_json::Error,
    },
    /// The OCI image-spec types refused a value.
    #[error("OCI image spec: {0}")]
    Spec(#[from] oci_spec::OciSpecError),
    /// An image location or reference could not be parsed.
    #[error("{0}")]
    Location(String),
    /// The registry refused a request or could not be reached.
    #[error("registry {registry}: {source}")]
    Registry {
        /// The registry host.
        registry: String,
        /// The cause.
        source: Box<oci_client::errors::OciDistributionError>,
    },
}

impl Error {
    /// A short, fixed category for logs and exit messages.
    pub fn category(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::Input(_) => "input",
            Error::Layout(_) => "layout",
            Error::Json { .. } => "json",
            Error::Spec(_) => "spec",
            Error::Location(_) => "location",
            Error::Registry { .. } => "registry",
        }
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(what: &'static str, path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// `sha256:<hex>` of `bytes` (an OCI digest).
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// `value` as canonical JSON (sorted keys, no insignificant white space): the same value always
/// gives the same bytes, whatever the order of the maps it was made from.
pub fn canonical_json<T: serde::Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, olpc_cjson::CanonicalFormatter::new());
    value
        .serialize(&mut serializer)
        .map_err(|source| Error::Json { what, source })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn sha256_digest_of_the_empty_string() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn canonical_json_sorts_keys_whatever_the_map_order() {
        let mut a = HashMap::new();
        let mut b = HashMap::new();
        for (k, v) in [("z", "1"), ("a", "2"), ("m", "3")] {
            a.insert(k, v);
        }
        for (k, v) in [("m", "3"), ("z", "1"), ("a", "2")] {
            b.insert(k, v);
        }
        let a = canonical_json("a", &a).unwrap();
        assert_eq!(a, canonical_json("b", &b).unwrap());
        assert_eq!(
            String::from_utf8(a).unwrap(),
            r#"{"a":"2","m":"3","z":"1"}"#
        );
    }
}
