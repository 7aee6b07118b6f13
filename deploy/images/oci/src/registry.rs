//! Images to and from a registry over the OCI distribution API (`oci-client`): a layout's image
//! pushed blob by blob and its manifest byte for byte (so the registry reports the digest the
//! layout has), and a manifest read back with the digest the registry reports. Also a copy from
//! one layout to another (`oci:` destination), as a push with no network.

use std::path::PathBuf;

use base64::Engine as _;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use oci_spec::image::MediaType;

use crate::layout::Layout;
use crate::location::Location;
use crate::{Error, Result};

/// The `User-Agent` of this tool's registry requests.
pub const USER_AGENT: &str = concat!("airunway-images/", env!("CARGO_PKG_VERSION"));

/// The manifest media types a read accepts.
const ACCEPTED_MANIFESTS: [&str; 4] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// How to reach a registry.
#[derive(Debug, Clone, Default)]
pub struct Transport {
    /// Plain HTTP instead of HTTPS (a local registry on loopback).
    pub plain_http: bool,
    /// HTTPS without verifying the registry's certificate.
    pub insecure_skip_tls_verify: bool,
    /// Extra CA certificates (PEM files) to trust for the registry.
    pub ca_files: Vec<PathBuf>,
}

/// Who to be at the registry.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// No credentials (anonymous token, if the registry asks for one).
    #[default]
    Anonymous,
    /// A user name and password (or token).
    Basic {
        /// The user name.
        username: String,
        /// The password or token.
        password: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => write!(f, "Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
        }
    }
}

impl Credentials {
    fn auth(&self) -> RegistryAuth {
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

/// The credentials for `registry` in an auth file (`auth.json` of `podman login` / `skopeo
/// login`, or Docker's `config.json`): the `auths` entry whose key is the registry host (with or
/// without `https://` and a path), its `auth` field being base64 of `user:password`. `None` when
/// the file has no entry for it (credential helpers are not consulted).
pub fn credentials_from_auth_file(json: &[u8], registry: &str) -> Result<Option<Credentials>> {
    let file: serde_json::Value = serde_json::from_slice(json).map_err(|source| Error::Json {
        what: "auth file",
        source,
    })?;
    let host = |key: &str| -> String {
        let key = key
            .strip_prefix("https://")
            .or_else(|| key.strip_prefix("http://"))
            .unwrap_or(key);
        let host = key.split('/').next().unwrap_or(key);
        match host {
            "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
            other => other.to_string(),
        }
    };
    let wanted = host(registry);
    let Some(auths) = file["auths"].as_object() else {
        return Ok(None);
    };
    for (key, entry) in auths {
        if host(key) != wanted {
            continue;
        }
        let Some(encoded) = entry["auth"].as_str() else {
            continue;
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| Error::Input(format!("auth file entry {key}: {e}")))?;
        let decoded = String::from_utf8(decoded)
            .map_err(|e| Error::Input(format!("auth file entry {key}: {e}")))?;
        let (username, password) = decoded.split_once(':').ok_or_else(|| {
            Error::Input(format!("auth file entry {key}: auth is not user:password"))
        })?;
        return Ok(Some(Credentials::Basic {
            username: username.to_string(),
            password: password.to_string(),
        }));
    }
    Ok(None)
}

fn client(transport: &Transport) -> Result<Client> {
    // reqwest is built without a crypto provider of its own: the process uses ring (already a
    // dependency of the workspace). Installing fails only when one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut extra_root_certificates = Vec::new();
    for file in &transport.ca_files {
        let data = std::fs::read(file).map_err(|e| Error::io("reading", file, e))?;
        extra_root_certificates.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data,
        });
    }
    Ok(Client::new(ClientConfig {
        protocol: if transport.plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        accept_invalid_certificates: transport.insecure_skip_tls_verify,
        extra_root_certificates,
        user_agent: USER_AGENT,
        ..ClientConfig::default()
    }))
}

fn registry_error(reference: &Reference, e: oci_client::errors::OciDistributionError) -> Error {
    Error::Registry {
        registry: reference.registry().to_string(),
        source: Box::new(e),
    }
}

/// Copies image `tag` of `layout` to `destination` (a registry, or another layout); returns the
/// manifest digest there (the layout's own: the manifest is copied byte for byte).
pub async fn push(
    layout: &Layout,
    tag: &str,
    destination: &Location,
    transport: &Transport,
    credentials: &Credentials,
) -> Result<String> {
    let image = layout.image(tag)?;
    let mut blobs = vec![image.manifest.config().digest().to_string()];
    blobs.extend(
        image
            .manifest
            .layers()
            .iter()
            .map(|l| l.digest().to_string()),
    );
    match destination {
        Location::Layout { dir, tag } => {
            let target = Layout::create(dir)?;
            for digest in &blobs {
                target.write_blob(&layout.read_blob(digest)?)?;
            }
            target.tag_manifest(tag, &image.raw_manifest)
        }
        Location::Registry(reference) => {
            let client = client(transport)?;
            let auth = credentials.auth();
            client
                .auth(reference, &auth, RegistryOperation::Push)
                .await
                .map_err(|e| registry_error(reference, e))?;
            for digest in &blobs {
                let exists = client
                    .blob_exists(reference, digest)
                    .await
                    .map_err(|e| registry_error(reference, e))?;
                if !exists {
                    client
                        .push_blob(reference, layout.read_blob(digest)?, digest)
                        .await
                        .map_err(|e| registry_error(reference, e))?;
                }
            }
            let media_type = image
                .manifest
                .media_type()
                .clone()
                .unwrap_or(MediaType::ImageManifest)
                .to_string();
            let content_type = http::HeaderValue::from_str(&media_type)
                .map_err(|e| Error::Layout(format!("manifest media type {media_type}: {e}")))?;
            client
                .push_manifest_raw(reference, image.raw_manifest.clone(), content_type)
                .await
                .map_err(|e| registry_error(reference, e))?;
            Ok(image.digest())
        }
    }
}

/// The manifest of the image at `source` as stored, and its digest (the registry's
/// `Docker-Content-Digest`, else the digest of the bytes).
pub async fn manifest(
    source: &Location,
    transport: &Transport,
    credentials: &Credentials,
) -> Result<(Vec<u8>, String)> {
    match source {
        Location::Layout { dir, tag } => {
            let image = Layout::open(dir)?.image(tag)?;
            let digest = image.digest();
            Ok((image.raw_manifest, digest))
        }
        Location::Registry(reference) => {
            let client = client(transport)?;
            let (bytes, digest) = client
                .pull_manifest_raw(reference, &credentials.auth(), &ACCEPTED_MANIFESTS)
                .await
                .map_err(|e| registry_error(reference, e))?;
            Ok((bytes.to_vec(), digest))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn basic(user: &str, password: &str) -> Credentials {
        Credentials::Basic {
            username: user.into(),
            password: password.into(),
        }
    }

    #[test]
    fn credentials_are_found_by_registry_host() {
        let file = br#"{"auths": {
            "registry.example.com": {"auth": "bWU6czNjcmV0"},
            "https://index.docker.io/v1/": {"auth": "aHViOnRva2Vu"},
            "ghcr.io": {}
        }}"#;
        assert_eq!(
            credentials_from_auth_file(file, "registry.example.com").unwrap(),
            Some(basic("me", "s3cret"))
        );
        assert_eq!(
            credentials_from_auth_file(file, "docker.io").unwrap(),
            Some(basic("hub", "token"))
        );
        assert_eq!(credentials_from_auth_file(file, "ghcr.io").unwrap(), None);
        assert_eq!(credentials_from_auth_file(file, "quay.io").unwrap(), None);
        assert_eq!(credentials_from_auth_file(b"{}", "quay.io").unwrap(), None);
        assert!(credentials_from_auth_file(br#"{"auths":{"q":{"auth":"!!"}}}"#, "q").is_err());
    }

    #[test]
    fn passwords_never_reach_debug_output() {
        assert_eq!(
            format!("{:?}", basic("me", "s3cret")),
            "Basic(me, <redacted>)"
        );
    }

    #[tokio::test]
    async fn a_push_to_a_layout_keeps_the_digest() {
        use crate::image::{ImageSpec, write};
        let dir = std::env::temp_dir().join(format!("airunway-images-push-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let source = Layout::create(&dir.join("a")).unwrap();
        let spec = ImageSpec {
            cmd: vec!["/serve".into()],
            ..ImageSpec::default()
        };
        let written = write(&source, "v1", &spec).unwrap();
        let destination: Location = format!("oci:{}:v2", dir.join("b").display())
            .parse()
            .unwrap();
        let pushed = push(
            &source,
            "v1",
            &destination,
            &Transport::default(),
            &Credentials::Anonymous,
        )
        .await
        .unwrap();
        assert_eq!(pushed, written.digest);
        let (raw, digest) = manifest(&destination, &Transport::default(), &Credentials::Anonymous)
            .await
            .unwrap();
        assert_eq!(digest, written.digest);
        assert_eq!(crate::sha256_digest(&raw), written.digest);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
