//! Container image references (pure): the one parser every AI Runway binary uses, so what the
//! core admits, what a provider resolves and what a container runtime pulls agree.
//!
//! The grammar is that of `github.com/distribution/reference` as container runtimes apply it to
//! a Pod's image (`ParseNormalizedNamed`: the kubelet's image-name parsing and containerd's CRI
//! both go through it): `[domain[:port]/]path[:tag][@digest]`, where
//!
//! - the first `/`-separated component is the domain when it contains `.` or `:`, is
//!   `localhost`, or has an upper-case letter; otherwise the domain is [`DOCKER_HUB`] (and a
//!   single-component Docker Hub path gets `library/` in front). A domain is DNS-like
//!   components (letters of either case, digits, inner `-`) joined by `.`, or an IPv6 address in
//!   brackets, with an optional `:port` of digits; a first component that looks like a domain
//!   but is not one is read as part of the path, as the Go parser does;
//! - the path is components of lower-case letters and digits separated by one `.`, one or two
//!   `_`, or any number of `-`, joined by `/`, at most [`MAX_PATH_LENGTH`] characters;
//! - the tag is 1 to [`MAX_TAG_LENGTH`] letters, digits, `_`, `.` and `-`, not starting with `.`
//!   or `-`;
//! - the digest is `sha256`, `sha384` or `sha512`, `:`, and exactly 64, 96 or 128 lower-case
//!   hexadecimal digits (the algorithms `github.com/opencontainers/go-digest` verifies);
//! - a string of 64 lower-case hexadecimal digits alone is an image ID, not a reference.
//!
//! Agreement with the Go module is checked on a generated corpus by the e2e suite
//! (`e2e/go/reference`, see docs/testing.md).

use thiserror::Error;

/// Docker Hub, the domain of a reference that names none.
pub const DOCKER_HUB: &str = "docker.io";

/// Docker Hub's legacy name, read as [`DOCKER_HUB`].
pub const DOCKER_HUB_LEGACY: &str = "index.docker.io";

/// The Docker Hub namespace of single-component ("official") repositories.
pub const OFFICIAL_NAMESPACE: &str = "library";

/// Longest repository path (after `library/` is added).
pub const MAX_PATH_LENGTH: usize = 255;

/// Longest tag.
pub const MAX_TAG_LENGTH: usize = 128;

/// A parsed image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReference {
    /// The repository as written, without tag or digest (e.g. `vllm/vllm-openai`).
    pub name: String,
    /// The registry host and optional port ([`DOCKER_HUB`] when the reference names none;
    /// empty when the first component looked like a domain but is read as a path, as the Go
    /// parser does).
    pub domain: String,
    /// The repository path in the registry (`library/busybox` for `busybox`).
    pub path: String,
    /// The tag, if any.
    pub tag: Option<String>,
    /// The digest (`sha256:…`), if the reference pins one.
    pub digest: Option<String>,
}

/// Why a string is not an image reference; the text says what to change.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ImageReferenceError {
    /// The string is empty.
    #[error("the reference is empty")]
    Empty,
    /// 64 hexadecimal digits alone: an image ID, which names no repository to pull from.
    #[error(
        "64 hexadecimal digits alone are an image ID, not a reference a registry can serve; write the repository, e.g. name@sha256:<digest>"
    )]
    ImageId,
    /// Upper-case letters in the repository path.
    #[error("the repository {0:?} must be lower-case (only a registry host may have capitals)")]
    Uppercase(String),
    /// The domain and path do not follow the grammar.
    #[error(
        "the repository {0:?} is not [registry[:port]/]path with path components of lower-case letters and digits separated by '.', '_', '__' or '-' and joined by '/'"
    )]
    Repository(String),
    /// The path is too long.
    #[error("the repository path must be at most {MAX_PATH_LENGTH} characters (is {0})")]
    PathTooLong(usize),
    /// The tag does not follow the grammar.
    #[error(
        "the tag {0:?} must be 1 to {MAX_TAG_LENGTH} letters, digits, '_', '.' or '-', not starting with '.' or '-'"
    )]
    Tag(String),
    /// The digest is not one of the verified algorithms with its length of lower-case hex.
    #[error(
        "the digest {0:?} must be sha256:<64>, sha384:<96> or sha512:<128> lower-case hexadecimal digits"
    )]
    Digest(String),
}

impl ImageReferenceError {
    /// A stable name of the error's kind (for metrics and logs).
    pub fn category(&self) -> &'static str {
        match self {
            ImageReferenceError::Empty => "empty",
            ImageReferenceError::ImageId => "image_id",
            ImageReferenceError::Uppercase(_) => "uppercase",
            ImageReferenceError::Repository(_) => "repository",
            ImageReferenceError::PathTooLong(_) => "path_too_long",
            ImageReferenceError::Tag(_) => "tag",
            ImageReferenceError::Digest(_) => "digest",
        }
    }
}

impl std::str::FromStr for ImageReference {
    type Err = ImageReferenceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Whether `s` is an image reference a container runtime accepts.
pub fn is_valid(s: &str) -> bool {
    parse(s).is_ok()
}

/// Parses `s` as a container runtime does (see the module documentation).
pub fn parse(s: &str) -> Result<ImageReference, ImageReferenceError> {
    if s.is_empty() {
        return Err(ImageReferenceError::Empty);
    }
    if s.len() == 64 && s.bytes().all(is_lower_hex) {
        return Err(ImageReferenceError::ImageId);
    }
    let (domain, remainder) = split_domain(s);
    let remote = remainder
        .split_once(':')
        .map_or(remainder.as_str(), |(r, _)| r);
    if remote.to_lowercase() != remote {
        return Err(ImageReferenceError::Uppercase(written_name(s).to_string()));
    }
    let qualified = format!("{domain}/{remainder}");
    let (name_and_tag, digest) = match qualified.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (qualified.as_str(), None),
    };
    let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_and_tag[..last_slash + i],
            Some(&name_and_tag[last_slash + i + 1..]),
        ),
        None => (name_and_tag, None),
    };
    let (domain, path) = match name.split_once('/') {
        Some((first, rest)) if is_domain(first) && is_path(rest) => (first, rest),
        _ if is_path(name) => ("", name),
        _ => {
            return Err(ImageReferenceError::Repository(written_name(s).to_string()));
        }
    };
    if let Some(tag) = tag.filter(|t| !is_tag(t)) {
        return Err(ImageReferenceError::Tag(tag.to_string()));
    }
    if let Some(digest) = digest.filter(|d| !is_digest(d)) {
        return Err(ImageReferenceError::Digest(digest.to_string()));
    }
    if path.len() > MAX_PATH_LENGTH {
        return Err(ImageReferenceError::PathTooLong(path.len()));
    }
    let suffix = tag.map_or(0, |t| t.len() + 1) + digest.map_or(0, |d| d.len() + 1);
    Ok(ImageReference {
        name: s[..s.len() - suffix].to_string(),
        domain: domain.to_string(),
        path: path.to_string(),
        tag: tag.map(str::to_string),
        digest: digest.map(str::to_string),
    })
}

/// `s` without what looks like a tag or digest (for messages).
fn written_name(s: &str) -> &str {
    let s = s.split_once('@').map_or(s, |(n, _)| n);
    let last_slash = s.rfind('/').map_or(0, |i| i + 1);
    s[last_slash..]
        .rfind(':')
        .map_or(s, |i| &s[..last_slash + i])
}

/// The domain and the rest of `s`, with Docker Hub's defaults applied.
fn split_domain(s: &str) -> (&str, String) {
    let Some((first, rest)) = s.split_once('/') else {
        return (DOCKER_HUB, format!("{OFFICIAL_NAMESPACE}/{s}"));
    };
    let (domain, remote) = if first == "localhost" {
        (first, rest)
    } else if first == DOCKER_HUB_LEGACY {
        (DOCKER_HUB, rest)
    } else if first.contains(['.', ':']) || first.to_lowercase() != first {
        (first, rest)
    } else {
        (DOCKER_HUB, s)
    };
    if domain == DOCKER_HUB && !remote.contains('/') {
        (DOCKER_HUB, format!("{OFFICIAL_NAMESPACE}/{remote}"))
    } else {
        (domain, remote.to_string())
    }
}

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// A host name (DNS-like components of either case), an IPv4 address or a bracketed IPv6
/// address, with an optional `:port`.
fn is_domain(s: &str) -> bool {
    let (host, port) = if let Some(inner) = s.strip_prefix('[') {
        let Some((address, after)) = inner.split_once(']') else {
            return false;
        };
        if address.is_empty() || !address.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return false;
        }
        match after {
            "" => ("", None),
            _ => match after.strip_prefix(':') {
                Some(port) => ("", Some(port)),
                None => return false,
            },
        }
    } else {
        match s.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (s, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = s.starts_with('[')
        || host.split('.').all(|component| {
            let bytes = component.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    first.is_ascii_alphanumeric()
                        && last.is_ascii_alphanumeric()
                        && bytes
                            .iter()
                            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                }
                _ => false,
            }
        });
    port_ok && host_ok
}

/// Path components joined by `/`.
fn is_path(s: &str) -> bool {
    s.split('/').all(is_path_component)
}

/// Lower-case alphanumerics separated by `.`, `_`, `__` or runs of `-`.
fn is_path_component(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !bytes.first().is_some_and(alphanumeric) || !bytes.last().is_some_and(alphanumeric) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alphanumeric(&bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && matches!(bytes[i], b'.' | b'_' | b'-') {
            i += 1;
        }
        let separator = &bytes[start..i];
        let ok = matches!(separator, b"." | b"_" | b"__")
            || (!separator.is_empty() && separator.iter().all(|b| *b == b'-'));
        if !ok {
            return false;
        }
    }
    true
}

fn is_tag(s: &str) -> bool {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    s.len() <= MAX_TAG_LENGTH
        && s.as_bytes().first().is_some_and(word)
        && s.bytes().all(|b| word(&b) || b == b'.' || b == b'-')
}

fn is_digest(s: &str) -> bool {
    let Some((algorithm, encoded)) = s.split_once(':') else {
        return false;
    };
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    encoded.len() == length && encoded.bytes().all(is_lower_hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(s: &str) -> (String, String, Option<String>, Option<String>, String) {
        let r = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        (r.domain, r.path, r.tag, r.digest, r.name)
    }

    #[test]
    fn docker_hub_defaults() {
        assert_eq!(
            parts("busybox"),
            (
                "docker.io".into(),
                "library/busybox".into(),
                None,
                None,
                "busybox".into()
            )
        );
        assert_eq!(parts("vllm/vllm-openai:v1").1, "vllm/vllm-openai");
        assert_eq!(parts("docker.io/ubuntu").1, "library/ubuntu");
        assert_eq!(parts("index.docker.io/ubuntu").0, "docker.io");
        assert_eq!(parts("localhost:5000").2.as_deref(), Some("5000"));
        assert_eq!(parts("localhost/x").0, "localhost");
        assert_eq!(parts("localhost:5000/x").0, "localhost:5000");
    }

    #[test]
    fn domains() {
        assert_eq!(parts("[::1]:5000/a/b:v").0, "[::1]:5000");
        assert_eq!(parts("[fe80::1]/a").0, "[fe80::1]");
        assert_eq!(parts("Example.COM/a").0, "Example.COM");
        assert_eq!(parts("Upper/a").0, "Upper");
        assert_eq!(parts("127.0.0.1:5000/a").0, "127.0.0.1:5000");
        assert_eq!(parts("host:99999999/a").0, "host:99999999");
        // Looks like a domain, is not one, and is a valid path: read as the path.
        assert_eq!(
            parts("a_b.c/d"),
            ("".into(), "a_b.c/d".into(), None, None, "a_b.c/d".into())
        );
        for bad in [
            "[::1/a",
            "[]/a",
            "[::g]/a",
            "a:/b",
            "a:b/c",
            "-a.b/c",
            "Upper_x/a",
            "[::1]x/a",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tags_and_digests() {
        let hex64 = "a".repeat(64);
        let r = parse(&format!("ghcr.io/x/y:v2@sha256:{hex64}")).unwrap();
        assert_eq!(r.tag.as_deref(), Some("v2"));
        assert_eq!(r.digest, Some(format!("sha256:{hex64}")));
        assert_eq!(r.name, "ghcr.io/x/y");
        assert!(parse(&format!("x@sha512:{}", "0".repeat(128))).is_ok());
        assert!(parse(&format!("x@sha384:{}", "0".repeat(96))).is_ok());
        for bad in [
            format!("x@sha256:{}", "A".repeat(64)),
            format!("x@sha256:{}", "a".repeat(63)),
            format!("x@sha512:{}", "a".repeat(64)),
            format!("x@md5:{}", "a".repeat(32)),
            "x@sha256".to_string(),
            "x:".to_string(),
            "x:.v".to_string(),
            "x:-v".to_string(),
            format!("x:{}", "t".repeat(129)),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
        assert!(parse("x:_v").is_ok());
        assert!(parse(&format!("x:{}", "t".repeat(128))).is_ok());
    }

    #[test]
    fn paths() {
        for good in ["a__b", "a---b", "a.b_c-d", "a/b/c", "0"] {
            assert!(is_valid(good), "{good}");
        }
        for bad in [
            "", "a___b", "a..b", "a._b", "a//b", "a/", "/a", "-a", "a-", "aXb", "a%b", "aüb",
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
        let at_limit = format!("a/{}", "b".repeat(MAX_PATH_LENGTH - 2));
        assert!(is_valid(&at_limit));
        assert_eq!(
            parse(&format!("{at_limit}b")).map(|_| ()),
            Err(ImageReferenceError::PathTooLong(MAX_PATH_LENGTH + 1))
        );
        // `library/` counts.
        assert!(!is_valid(&"b".repeat(MAX_PATH_LENGTH - 7)));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(parse("").map(|_| ()), Err(ImageReferenceError::Empty));
        assert_eq!(
            parse(&"a".repeat(64)).map(|_| ()),
            Err(ImageReferenceError::ImageId)
        );
        assert_eq!(
            parse("Foo").map(|_| ()),
            Err(ImageReferenceError::Uppercase("Foo".into()))
        );
        assert_eq!(parse("a:.x").unwrap_err().category(), "tag");
        assert_eq!(parse("a@sha1:00").unwrap_err().category(), "digest");
        assert_eq!(parse("a b").unwrap_err().category(), "repository");
        assert!(parse("a b:1").unwrap_err().to_string().contains("\"a b\""));
    }
}
