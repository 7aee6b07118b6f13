//! Resolving an image tag to its manifest digest through the OCI distribution HTTP API:
//! `HEAD /v2/<path>/manifests/<tag>` with the manifest media types in `Accept` (OCI index and
//! manifest, Docker manifest list and v2 manifest), the digest from `Docker-Content-Digest`
//! (a HEAD is not counted as a pull by Docker Hub's rate limit).
//! The image's build metadata comes from its config blob, read once per digest per process
//! (cached: many deployments on one image cost one read): `GET /v2/<path>/manifests/<digest>`,
//! for an index the `linux/amd64` entry's manifest (else the first), then
//! `GET /v2/<path>/blobs/<config digest>` (one redirect followed, as registries send blobs to
//! storage, only to HTTPS or loopback); [`metadata`] takes the
//! `org.opencontainers.image.created` label (else the config's `created`) and the
//! `org.opencontainers.image.revision` label. The metadata is best effort: when it cannot be
//! read the digest still stands and the fields stay empty.
//! A registry that answers `401` with a `Bearer` challenge gets the token flow (anonymous:
//! `GET <realm>?service=…&scope=repository:<path>:pull`, then the request again with the
//! token, which the rest of the resolution reuses). One resolution, all its requests together,
//! is bounded by the resolver's timeout, and every response body read is bounded in size. Plain HTTP is used only for loopback registries (`127.0.0.1`, `localhost`,
//! `[::1]`); everything else is HTTPS with the system's trust roots. Docker Hub references go
//! to `registry-1.docker.io`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airunway_api::serde_json;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::image::{DOCKER_HUB, ImageRef};

/// The manifest media types asked for (an index first: a multi-platform tag resolves to it).
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// The reference's bound on one resolution.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest token response read.
const MAX_TOKEN_BODY: usize = 64 * 1024;

/// Largest manifest or index read (the distribution registry refuses larger ones too).
pub const MAX_MANIFEST_BODY: usize = 4 * 1024 * 1024;

/// Largest image config read.
pub const MAX_CONFIG_BODY: usize = 4 * 1024 * 1024;

/// The OCI label naming when the image was built.
pub const LABEL_CREATED: &str = "org.opencontainers.image.created";

/// The OCI label naming the source revision the image was built from.
pub const LABEL_REVISION: &str = "org.opencontainers.image.revision";

/// What a resolution found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The manifest digest (`sha256:…`) the tag points at.
    pub digest: String,
    /// When the image was built (RFC 3339), if its config says.
    pub created_at: Option<String>,
    /// The source revision, if its config's labels say.
    pub revision: Option<String>,
    /// How old the image was at resolution ([`crate::image::age`]); kept, not recomputed,
    /// while `status.image` is reused, so the status does not change with the clock.
    pub age: Option<String>,
}

impl From<&str> for Resolved {
    /// A resolution that found only the digest.
    fn from(digest: &str) -> Resolved {
        Resolved {
            digest: digest.to_string(),
            ..Default::default()
        }
    }
}

/// Whether `digest` is a well-formed `sha256:<64 hex>` digest (safe in a URL path).
pub fn is_sha256_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Whether a blob redirect to `location` may be followed: HTTPS, or plain HTTP to loopback
/// only (the rule registries are reached by).
pub fn redirect_allowed(location: &str) -> bool {
    if location.starts_with("https://") {
        return true;
    }
    location
        .strip_prefix("http://")
        .map(|rest| rest.split(['/', '?']).next().unwrap_or_default())
        .is_some_and(is_loopback)
}

/// The manifest digest to read from an index (`manifests[]`): the `linux/amd64` entry, else
/// the first; `None` when `document` is not an index or names no valid digest.
pub fn index_entry(document: &serde_json::Value) -> Option<String> {
    let entries = document.get("manifests")?.as_array()?;
    let platform = |e: &serde_json::Value, key: &str| {
        e.get("platform")
            .and_then(|p| p.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    entries
        .iter()
        .find(|e| {
            platform(e, "os").as_deref() == Some("linux")
                && platform(e, "architecture").as_deref() == Some("amd64")
        })
        .or_else(|| entries.first())
        .and_then(|e| e.get("digest"))
        .and_then(|d| d.as_str())
        .filter(|d| is_sha256_digest(d))
        .map(str::to_string)
}

/// The config blob digest of an image manifest.
pub fn config_digest(manifest: &serde_json::Value) -> Option<String> {
    manifest
        .get("config")?
        .get("digest")?
        .as_str()
        .filter(|d| is_sha256_digest(d))
        .map(str::to_string)
}

/// `(createdAt, revision)` from an image config: the [`LABEL_CREATED`] label, else the config's
/// `created`; the [`LABEL_REVISION`] label. Empty values count as absent.
pub fn metadata(config: &serde_json::Value) -> (Option<String>, Option<String>) {
    let label = |key: &str| {
        config
            .get("config")
            .and_then(|c| c.get("Labels"))
            .and_then(|l| l.get(key))
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let created = label(LABEL_CREATED).or_else(|| {
        config
            .get("created")
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    });
    (created, label(LABEL_REVISION))
}

/// The user agent (the registry's access log names the provider).
pub const USER_AGENT: &str = concat!("airunway-provider-vllm/", env!("CARGO_PKG_VERSION"));

/// Why an image could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No answer within the timeout.
    #[error("the registry {registry} did not answer within {timeout:?}")]
    Timeout {
        /// The registry host.
        registry: String,
        /// The bound.
        timeout: Duration,
    },
    /// The connection failed (refused, DNS, TLS).
    #[error("cannot reach the registry {registry}: {detail}")]
    Unreachable {
        /// The registry host.
        registry: String,
        /// The cause.
        detail: String,
    },
    /// The registry refused the request.
    #[error("the registry {registry} answered {status} for {what}")]
    Status {
        /// The registry host.
        registry: String,
        /// The HTTP status.
        status: u16,
        /// What was asked.
        what: String,
    },
    /// The answer lacked what the protocol promises (a digest, a token).
    #[error("the registry {registry} gave no {missing}")]
    Incomplete {
        /// The registry host.
        registry: String,
        /// What was missing.
        missing: &'static str,
    },
    /// The client could not be built (no trust roots).
    #[error("registry client: {0}")]
    Client(String),
}

impl ResolveError {
    /// A short, static label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            ResolveError::Timeout { .. } => "timeout",
            ResolveError::Unreachable { .. } => "unreachable",
            ResolveError::Status { .. } => "status",
            ResolveError::Incomplete { .. } => "incomplete",
            ResolveError::Client(_) => "client",
        }
    }
}

/// Build metadata by manifest digest (what a digest names never changes).
type MetadataCache = HashMap<String, (Option<String>, Option<String>)>;

/// How many digests' build metadata a resolver keeps (cleared whole when full).
pub const METADATA_CACHE_ENTRIES: usize = 1024;

/// A registry client.
#[derive(Clone, Debug)]
pub struct Resolver {
    client: Client<HttpsConnector<HttpConnector>, Empty<&'static [u8]>>,
    timeout: Duration,
    metadata: Arc<Mutex<MetadataCache>>,
}

/// Whether `host` (with an optional port) is a loopback address.
pub fn is_loopback(host: &str) -> bool {
    let name = host
        .rsplit_once(':')
        .filter(|(h, port)| !h.ends_with(':') && port.chars().all(|c| c.is_ascii_digit()))
        .map_or(host, |(h, _)| h);
    matches!(name, "localhost" | "[::1]") || name.starts_with("127.")
}

/// The base URL of `image`'s registry.
pub fn registry_url(image: &ImageRef) -> String {
    let host = if image.registry == DOCKER_HUB {
        "registry-1.docker.io"
    } else {
        image.registry.as_str()
    };
    let scheme = if is_loopback(host) { "http" } else { "https" };
    format!("{scheme}://{host}")
}

/// The parameters of a `WWW-Authenticate: Bearer k="v",…` challenge.
pub fn bearer_challenge(value: &str) -> Option<Vec<(String, String)>> {
    let rest = value.trim().strip_prefix("Bearer ")?;
    let mut params = Vec::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (val, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            after.split_once(',').map_or((after, ""), |(v, n)| (v, n))
        };
        params.push((key.trim().to_string(), val.to_string()));
        rest = next.trim_start_matches([',', ' ']);
    }
    Some(params)
}

fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl Resolver {
    /// A client whose every resolution is bounded by `timeout`.
    pub fn new(timeout: Duration) -> Result<Resolver, ResolveError> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| ResolveError::Client(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Resolver {
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
            metadata: Arc::default(),
        })
    }

    /// The manifest digest (`sha256:…`) `image`'s tag points at, and the image's build
    /// metadata when its config can be read.
    pub async fn resolve(&self, image: &ImageRef) -> Result<Resolved, ResolveError> {
        let registry = image.registry.clone();
        match tokio_timeout(self.timeout, self.resolve_unbounded(image)).await {
            Some(result) => result,
            None => Err(ResolveError::Timeout {
                registry,
                timeout: self.timeout,
            }),
        }
    }

    async fn resolve_unbounded(&self, image: &ImageRef) -> Result<Resolved, ResolveError> {
        let reference = image
            .digest
            .clone()
            .or_else(|| image.tag.clone())
            .unwrap_or_else(|| "latest".to_string());
        let base = format!("{}/v2/{}", registry_url(image), image.path);
        let mut token = None;
        let url = format!("{base}/manifests/{reference}");
        // HEAD for the digest (a registry such as Docker Hub does not count it as a pull).
        let (status, headers, _) = self.call(image, Method::HEAD, &url, &mut token, 0).await?;
        if !status.is_success() {
            return Err(ResolveError::Status {
                registry: image.registry.clone(),
                status: status.as_u16(),
                what: format!("the manifest of {}:{reference}", image.path),
            });
        }
        let digest = headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .filter(|d| is_sha256_digest(d))
            .map(str::to_string)
            .ok_or(ResolveError::Incomplete {
                registry: image.registry.clone(),
                missing: "Docker-Content-Digest header",
            })?;
        let (created_at, revision) = self.metadata(image, &base, &digest, &mut token).await;
        let age = created_at
            .as_deref()
            .and_then(|c| crate::image::age(c, jiff::Timestamp::now()));
        Ok(Resolved {
            digest,
            created_at,
            revision,
            age,
        })
    }

    /// The build metadata of the image `digest` names: from the cache, else read (manifest by
    /// digest, config blob) and cached; none when it cannot be read (best effort, not cached).
    /// Many deployments on one image cost the registry one read.
    async fn metadata(
        &self,
        image: &ImageRef,
        base: &str,
        digest: &str,
        token: &mut Option<String>,
    ) -> (Option<String>, Option<String>) {
        if let Some(found) = self
            .metadata
            .lock()
            .ok()
            .and_then(|c| c.get(digest).cloned())
        {
            return found;
        }
        let Some(found) = self.config_metadata(image, base, digest, token).await else {
            return (None, None);
        };
        if let Ok(mut cache) = self.metadata.lock() {
            if cache.len() >= METADATA_CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(digest.to_string(), found.clone());
        }
        found
    }

    /// Reads the manifest `digest` (an index: its [`index_entry`]'s manifest), then its config.
    async fn config_metadata(
        &self,
        image: &ImageRef,
        base: &str,
        digest: &str,
        token: &mut Option<String>,
    ) -> Option<(Option<String>, Option<String>)> {
        let url = format!("{base}/manifests/{digest}");
        let (status, _, body) = self.get(image, &url, token, MAX_MANIFEST_BODY).await.ok()?;
        if !status.is_success() {
            return None;
        }
        let mut manifest: serde_json::Value = serde_json::from_slice(&body).ok()?;
        if let Some(entry) = index_entry(&manifest) {
            let url = format!("{base}/manifests/{entry}");
            let (status, _, body) = self.get(image, &url, token, MAX_MANIFEST_BODY).await.ok()?;
            if !status.is_success() {
                return None;
            }
            manifest = serde_json::from_slice(&body).ok()?;
        }
        let config = config_digest(&manifest)?;
        let url = format!("{base}/blobs/{config}");
        let (mut status, headers, mut body) =
            self.get(image, &url, token, MAX_CONFIG_BODY).await.ok()?;
        if status.is_redirection() {
            // Blob storage behind a redirect: followed once, without the registry's token.
            let location = headers.get(header::LOCATION)?.to_str().ok()?;
            let location = if location.starts_with('/') {
                format!("{}{location}", registry_url(image))
            } else {
                location.to_string()
            };
            if !redirect_allowed(&location) {
                return None;
            }
            (status, _, body) = self
                .send(image, Method::GET, &location, None, MAX_CONFIG_BODY)
                .await
                .ok()?;
        }
        if !status.is_success() {
            return None;
        }
        let config: serde_json::Value = serde_json::from_slice(&body).ok()?;
        Some(metadata(&config))
    }

    /// `GET url`, reading at most `body_limit` bytes (see [`Resolver::call`]).
    async fn get(
        &self,
        image: &ImageRef,
        url: &str,
        token: &mut Option<String>,
        body_limit: usize,
    ) -> Result<(StatusCode, HeaderMap, Vec<u8>), ResolveError> {
        self.call(image, Method::GET, url, token, body_limit).await
    }

    /// A request to the registry, reading at most `body_limit` bytes; on a `401` with a
    /// `Bearer` challenge the pull token is fetched once (kept in `token` for the next
    /// requests) and the request sent again.
    async fn call(
        &self,
        image: &ImageRef,
        method: Method,
        url: &str,
        token: &mut Option<String>,
        body_limit: usize,
    ) -> Result<(StatusCode, HeaderMap, Vec<u8>), ResolveError> {
        let bearer = |t: &Option<String>| t.as_ref().map(|t| format!("Bearer {t}"));
        let answer = self
            .send(
                image,
                method.clone(),
                url,
                bearer(token).as_deref(),
                body_limit,
            )
            .await?;
        if answer.0 != StatusCode::UNAUTHORIZED || token.is_some() {
            return Ok(answer);
        }
        *token = Some(self.token(image, &answer.1).await?);
        self.send(image, method, url, bearer(token).as_deref(), body_limit)
            .await
    }

    async fn send(
        &self,
        image: &ImageRef,
        method: Method,
        url: &str,
        authorization: Option<&str>,
        body_limit: usize,
    ) -> Result<(StatusCode, HeaderMap, Vec<u8>), ResolveError> {
        let unreachable = |detail: String| ResolveError::Unreachable {
            registry: image.registry.clone(),
            detail,
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(url)
            .header(header::ACCEPT, MANIFEST_ACCEPT)
            .header(header::USER_AGENT, USER_AGENT);
        if let Some(value) = authorization {
            let value = HeaderValue::from_str(value).map_err(|e| unreachable(e.to_string()))?;
            builder = builder.header(header::AUTHORIZATION, value);
        }
        let request = builder
            .body(Empty::new())
            .map_err(|e| unreachable(e.to_string()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| unreachable(format!("{e:#}")))?;
        let (parts, body) = response.into_parts();
        let bytes = if body_limit == 0 {
            Vec::new()
        } else {
            Limited::new(body, body_limit)
                .collect()
                .await
                .map_err(|e| unreachable(format!("reading the answer: {e}")))?
                .to_bytes()
                .to_vec()
        };
        Ok((parts.status, parts.headers, bytes))
    }

    /// The anonymous pull token a `Bearer` challenge asks for.
    async fn token(&self, image: &ImageRef, headers: &HeaderMap) -> Result<String, ResolveError> {
        let incomplete = |missing| ResolveError::Incomplete {
            registry: image.registry.clone(),
            missing,
        };
        let challenge = headers
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_challenge)
            .ok_or(incomplete("Bearer challenge with its 401"))?;
        let get = |key: &str| {
            challenge
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let realm = get("realm").ok_or(incomplete("token realm"))?;
        let scope = get("scope").unwrap_or_else(|| format!("repository:{}:pull", image.path));
        let mut url = format!("{realm}?scope={}", query_escape(&scope));
        if let Some(service) = get("service") {
            url.push_str(&format!("&service={}", query_escape(&service)));
        }
        let (status, _, body) = self
            .send(image, Method::GET, &url, None, MAX_TOKEN_BODY)
            .await?;
        if !status.is_success() {
            return Err(ResolveError::Status {
                registry: image.registry.clone(),
                status: status.as_u16(),
                what: "a pull token".into(),
            });
        }
        let value: serde_json::Value =
            serde_json::from_slice(&body).map_err(|_| incomplete("token JSON"))?;
        value["token"]
            .as_str()
            .or_else(|| value["access_token"].as_str())
            .map(str::to_string)
            .ok_or(incomplete("token"))
    }
}

async fn tokio_timeout<F: std::future::Future>(limit: Duration, future: F) -> Option<F::Output> {
    airunway_api::provider::tokio::time::timeout(limit, future)
        .await
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::parse;

    #[test]
    fn urls_and_loopback() {
        assert_eq!(
            registry_url(&parse("vllm/vllm-openai:latest").unwrap()),
            "https://registry-1.docker.io"
        );
        assert_eq!(
            registry_url(&parse("127.0.0.1:5000/a/b:1").unwrap()),
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            registry_url(&parse("localhost:5000/a:1").unwrap()),
            "http://localhost:5000"
        );
        assert_eq!(
            registry_url(&parse("ghcr.io/a/b:1").unwrap()),
            "https://ghcr.io"
        );
        assert!(!is_loopback("127.example.com:5000") || is_loopback("127.0.0.1"));
    }

    #[test]
    fn index_entries_config_digests_and_metadata() {
        use airunway_api::serde_json::json;
        let d = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let index = json!({"manifests": [
            {"digest": d('a'), "platform": {"os": "linux", "architecture": "arm64"}},
            {"digest": d('b'), "platform": {"os": "linux", "architecture": "amd64"}}]});
        assert_eq!(index_entry(&index), Some(d('b')));
        let no_amd64 = json!({"manifests": [{"digest": d('c'), "platform": {"os": "linux", "architecture": "s390x"}}]});
        assert_eq!(index_entry(&no_amd64), Some(d('c')));
        assert_eq!(
            index_entry(&json!({"manifests": [{"digest": "sha256:../../x"}]})),
            None
        );
        assert_eq!(index_entry(&json!({"config": {"digest": d('e')}})), None);
        assert_eq!(
            config_digest(&json!({"config": {"digest": d('e')}})),
            Some(d('e'))
        );
        assert_eq!(config_digest(&json!({"config": {"digest": "md5:1"}})), None);
        assert!(!is_sha256_digest("sha256:abc"));
        assert!(redirect_allowed("https://cdn.example.com/blob?sig=1"));
        assert!(redirect_allowed("http://127.0.0.1:5000/v2/a/blobs/x"));
        assert!(!redirect_allowed("http://cdn.example.com/blob"));
        assert!(!redirect_allowed("ftp://x"));

        let labelled = json!({"created": "2020-01-01T00:00:00Z", "config": {"Labels": {
            LABEL_CREATED: "2026-11-20T10:00:00Z", LABEL_REVISION: "0123abc"}}});
        assert_eq!(
            metadata(&labelled),
            (Some("2026-11-20T10:00:00Z".into()), Some("0123abc".into()))
        );
        let bare =
            json!({"created": "2026-01-02T03:04:05Z", "config": {"Labels": {LABEL_CREATED: ""}}});
        assert_eq!(metadata(&bare), (Some("2026-01-02T03:04:05Z".into()), None));
        assert_eq!(metadata(&json!({})), (None, None));
    }

    #[test]
    fn bearer_challenges_are_parsed() {
        let params = bearer_challenge(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:vllm/vllm-openai:pull""#,
        )
        .unwrap();
        assert_eq!(
            params,
            [
                (
                    "realm".to_string(),
                    "https://auth.docker.io/token".to_string()
                ),
                ("service".to_string(), "registry.docker.io".to_string()),
                (
                    "scope".to_string(),
                    "repository:vllm/vllm-openai:pull".to_string()
                )
            ]
        );
        assert!(bearer_challenge("Basic realm=\"x\"").is_none());
        assert_eq!(
            query_escape("repository:a/b:pull"),
            "repository%3Aa%2Fb%3Apull"
        );
    }
}
