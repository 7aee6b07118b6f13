//! The Hugging Face Hub's file API: the file list of a model at a revision
//! (`GET <endpoint>/api/models/<id>/revision/<rev>?blobs=true`) and the URL of each file's bytes
//! (`GET <endpoint>/<id>/resolve/<commit>/<file>`).

use reqwest::Url;
use serde::Deserialize;

use crate::error::Error;
use crate::paths::{MAX_FILES, validate_model_id, validate_relative};

/// The largest file list accepted, in bytes of JSON.
pub const MAX_LISTING_BYTES: usize = 32 * 1024 * 1024;

/// One file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// The path inside the model (validated: relative, no `..`), also its path under the target
    /// directory.
    pub path: String,
    /// Where its bytes are.
    pub url: Url,
    /// Its size in bytes, when the listing (or the server's headers) gives it.
    pub size: Option<u64>,
    /// The sha256 (lowercase hex) of an LFS file.
    pub sha256: Option<String>,
}

/// The model's file list as the API returns it (only the fields used).
#[derive(Debug, Deserialize)]
struct ModelInfo {
    /// The commit the revision resolves to.
    sha: Option<String>,
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(Debug, Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    lfs: Option<Lfs>,
}

#[derive(Debug, Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

/// Which files of the listing to fetch: every file matching one `include` pattern (all when
/// there is none) and no `exclude` pattern. Patterns are shell globs where `*` also matches `/`,
/// as `huggingface_hub`'s `allow_patterns`.
#[derive(Debug, Default, Clone)]
pub struct FileFilter {
    include: Vec<glob::Pattern>,
    exclude: Vec<glob::Pattern>,
}

impl FileFilter {
    /// Parses the patterns.
    pub fn new(include: &[String], exclude: &[String]) -> Result<Self, Error> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|p| {
                    glob::Pattern::new(p).map_err(|source| Error::Pattern {
                        pattern: p.clone(),
                        source,
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            include: parse(include)?,
            exclude: parse(exclude)?,
        })
    }

    /// Whether `path` is to be fetched.
    pub fn accepts(&self, path: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| p.matches(path)))
            && !self.exclude.iter().any(|p| p.matches(path))
    }
}

fn endpoint_with(endpoint: &Url, segments: &[&str]) -> Result<Url, Error> {
    let mut url = endpoint.clone();
    url.set_query(None);
    url.path_segments_mut()
        .map_err(|()| Error::Config(format!("endpoint {endpoint} cannot carry a path")))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// The file-list URL of `model` at `revision` (the revision is one path segment, so
/// `refs/pr/1` is encoded).
pub fn listing_url(endpoint: &Url, model: &str, revision: &str) -> Result<Url, Error> {
    validate_model_id(model)?;
    if revision.is_empty()
        || revision.len() > 256
        || revision == "."
        || revision == ".."
        || revision.chars().any(char::is_control)
    {
        return Err(Error::Config(format!(
            "revision {revision:?} is not a usable git revision"
        )));
    }
    let mut segments = vec!["api", "models"];
    segments.extend(model.split('/'));
    segments.extend(["revision", revision]);
    let mut url = endpoint_with(endpoint, &segments)?;
    url.set_query(Some("blobs=true"));
    Ok(url)
}

/// The URL of the bytes of `file` (a validated relative path) of `model` at `revision`.
pub fn resolve_url(endpoint: &Url, model: &str, revision: &str, file: &str) -> Result<Url, Error> {
    let mut segments: Vec<&str> = model.split('/').collect();
    segments.extend(["resolve", revision]);
    segments.extend(file.split('/'));
    endpoint_with(endpoint, &segments)
}

/// A model's file list at one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The commit the revision resolved to (40 hex digits), or the revision itself when the
    /// server names no commit.
    pub commit: String,
    /// The files to fetch.
    pub files: Vec<FileEntry>,
}

/// Parses a file-list answer into the files to fetch, validating every path, size and hash,
/// and resolving file URLs at the listed commit (so all files come from one commit even if the
/// branch moves during the download).
pub fn parse_listing(
    body: &[u8],
    endpoint: &Url,
    model: &str,
    revision: &str,
    filter: &FileFilter,
) -> Result<Listing, Error> {
    let what = || format!("file list of {model}@{revision}");
    let info: ModelInfo = serde_json::from_slice(body).map_err(|e| Error::Protocol {
        what: what(),
        reason: format!("not the expected JSON: {e}"),
    })?;
    if info.siblings.len() > MAX_FILES {
        return Err(Error::Protocol {
            what: what(),
            reason: format!("more than {MAX_FILES} files"),
        });
    }
    let commit = match info.sha {
        Some(sha) if sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()) => sha,
        Some(sha) => {
            return Err(Error::Protocol {
                what: what(),
                reason: format!("commit {sha:?} is not 40 hex digits"),
            });
        }
        None => revision.to_owned(),
    };
    let mut seen = std::collections::HashSet::new();
    let mut files = Vec::new();
    for sibling in info.siblings {
        validate_relative(&sibling.rfilename)?;
        if !seen.insert(sibling.rfilename.clone()) {
            return Err(Error::Protocol {
                what: what(),
                reason: format!("file {:?} listed twice", sibling.rfilename),
            });
        }
        if !filter.accepts(&sibling.rfilename) {
            continue;
        }
        let (size, sha256) = match sibling.lfs {
            Some(lfs) => {
                if lfs.sha256.len() != 64 || !lfs.sha256.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(Error::Protocol {
                        what: what(),
                        reason: format!("sha256 of {:?} is not 64 hex digits", sibling.rfilename),
                    });
                }
                (Some(lfs.size), Some(lfs.sha256.to_ascii_lowercase()))
            }
            None => (sibling.size, None),
        };
        let url = resolve_url(endpoint, model, &commit, &sibling.rfilename)?;
        files.push(FileEntry {
            path: sibling.rfilename,
            url,
            size,
            sha256,
        });
    }
    // A file and a directory of the same name cannot both exist: refuse `a` next to `a/b`.
    for file in &files {
        let mut prefix = String::new();
        for component in file.path.split('/') {
            if !prefix.is_empty() && seen.contains(&prefix) {
                return Err(Error::UnsafePath {
                    path: file.path.clone(),
                    reason: "a parent directory is also a file",
                });
            }
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(component);
        }
    }
    Ok(Listing { commit, files })
}

/// The one file of a custom source (`--uri`): its name is the URL's last path segment.
pub fn uri_entry(uri: &str, sha256: Option<&str>) -> Result<FileEntry, Error> {
    let url = Url::parse(uri).map_err(|e| Error::Config(format!("--uri {uri:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::Config(format!(
            "--uri must be http or https, not {}",
            url.scheme()
        )));
    }
    let name = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Config(format!("--uri {uri:?} has no file name")))?;
    let name = percent_encoding::percent_decode_str(name)
        .decode_utf8_lossy()
        .into_owned();
    validate_relative(&name)?;
    if name.contains('/') {
        return Err(Error::UnsafePath {
            path: name,
            reason: "encoded slash in the file name",
        });
    }
    let sha256 = match sha256 {
        Some(h) if h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()) => {
            Some(h.to_ascii_lowercase())
        }
        Some(h) => {
            return Err(Error::Config(format!(
                "--sha256 {h:?} is not 64 hex digits"
            )));
        }
        None => None,
    };
    Ok(FileEntry {
        path: name,
        url,
        size: None,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Url {
        Url::parse("http://hub.local:8080/").unwrap_or_else(|e| panic!("{e}"))
    }

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn urls() {
        let u = listing_url(&endpoint(), "org/m", "refs/pr/1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            u.as_str(),
            "http://hub.local:8080/api/models/org/m/revision/refs%2Fpr%2F1?blobs=true"
        );
        let u = resolve_url(&endpoint(), "org/m", SHA, "sub dir/a#b.json")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            u.as_str(),
            format!("http://hub.local:8080/org/m/resolve/{SHA}/sub%20dir/a%23b.json")
        );
        let prefixed = Url::parse("https://mirror.example/hf/").unwrap_or_else(|e| panic!("{e}"));
        let u = listing_url(&prefixed, "gpt2", "main").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            u.as_str(),
            "https://mirror.example/hf/api/models/gpt2/revision/main?blobs=true"
        );
    }

    #[test]
    fn listing_with_lfs_and_filters() {
        let body = serde_json::json!({
            "id": "org/m", "sha": SHA,
            "siblings": [
                {"rfilename": "config.json", "size": 12, "blobId": "x"},
                {"rfilename": "weights/model.safetensors", "size": 100,
                 "lfs": {"sha256": "AB".repeat(32), "size": 100, "pointerSize": 134}},
                {"rfilename": "README.md", "size": 3}
            ]
        })
        .to_string();
        let filter = FileFilter::new(&[], &["*.md".into()]).unwrap_or_else(|e| panic!("{e}"));
        let listing = parse_listing(body.as_bytes(), &endpoint(), "org/m", "main", &filter)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listing.commit, SHA);
        let files = listing.files;
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].size, Some(12));
        assert_eq!(files[0].sha256, None);
        assert_eq!(files[1].sha256.as_deref(), Some("ab".repeat(32).as_str()));
        assert!(
            files[1]
                .url
                .as_str()
                .ends_with(&format!("/org/m/resolve/{SHA}/weights/model.safetensors"))
        );

        let only = FileFilter::new(&["weights/*".into()], &[]).unwrap_or_else(|e| panic!("{e}"));
        let files = parse_listing(body.as_bytes(), &endpoint(), "org/m", "main", &only)
            .unwrap_or_else(|e| panic!("{e}"))
            .files;
        assert_eq!(files.len(), 1);
    }

    #[test]
    fn hostile_listings_are_refused() {
        for name in ["../x", "/etc/passwd", "a/../../b"] {
            let body =
                serde_json::json!({"sha": SHA, "siblings": [{"rfilename": name, "size": 1}]})
                    .to_string();
            let err = parse_listing(
                body.as_bytes(),
                &endpoint(),
                "org/m",
                "main",
                &FileFilter::default(),
            )
            .err();
            assert!(matches!(err, Some(Error::UnsafePath { .. })), "{name}");
        }
        let body = serde_json::json!({"sha": "../../x", "siblings": []}).to_string();
        assert!(
            parse_listing(
                body.as_bytes(),
                &endpoint(),
                "org/m",
                "main",
                &FileFilter::default()
            )
            .is_err()
        );
        let body = serde_json::json!({"sha": SHA, "siblings": [
            {"rfilename": "a", "size": 1}, {"rfilename": "a/b", "size": 1}]})
        .to_string();
        assert!(
            parse_listing(
                body.as_bytes(),
                &endpoint(),
                "org/m",
                "main",
                &FileFilter::default()
            )
            .is_err()
        );
        let body = serde_json::json!({"sha": SHA, "siblings": [
            {"rfilename": "a", "size": 1}, {"rfilename": "a", "size": 1}]})
        .to_string();
        assert!(
            parse_listing(
                body.as_bytes(),
                &endpoint(),
                "org/m",
                "main",
                &FileFilter::default()
            )
            .is_err()
        );
    }

    #[test]
    fn uri_entries() {
        let e = uri_entry("https://example.com/models/tiny%20model.gguf?x=1", None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.path, "tiny model.gguf");
        assert!(uri_entry("https://example.com/a/..%2F..%2Fetc", None).is_err());
        assert!(uri_entry("https://example.com/", None).is_err());
        assert!(uri_entry("file:///etc/passwd", None).is_err());
        assert!(uri_entry("https://example.com/x", Some("zz")).is_err());
    }
}
