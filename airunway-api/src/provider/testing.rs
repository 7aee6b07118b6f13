//! Test and benchmark support for providers (feature `testing`): the upstream CRD
//! material (the real CRDs and the status the real operators write) read as values, and a
//! CRD as the API server reports it once established. Use it from `[dev-dependencies]`.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub mod hostile;
pub mod offline_render;
pub mod upstream_schema;

/// The environment variable naming the directory of the upstream CRD material.
pub const UPSTREAM_CRDS_ENV: &str = "AIRUNWAY_UPSTREAM_CRDS";

/// Why a fixture could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file could not be read.
    #[error(
        "reading {file}: {source} (the upstream CRDs come from e2e/fixtures/upstream-crds and from the cache e2e/control-plane/upstream-crds.sh fills, which e2e/run-tests runs first; {UPSTREAM_CRDS_ENV} names another directory)"
    )]
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not YAML, or holds no object.
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl FixtureError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            FixtureError::Read { .. } => "read",
            FixtureError::Parse { .. } => "parse",
        }
    }
}

/// The development override of the upstream material: `$AIRUNWAY_UPSTREAM_CRDS`, when set
/// (for instance a checkout of the design material's `upstream-crds/`). Never required.
pub fn upstream_dir() -> Option<PathBuf> {
    std::env::var_os(UPSTREAM_CRDS_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The first YAML document of `file` that is an object, decoded as `T`.
pub fn read_yaml<T: DeserializeOwned>(file: &Path) -> Result<T, FixtureError> {
    let text = std::fs::read_to_string(file).map_err(|source| FixtureError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    let parse = |message: String| FixtureError::Parse {
        file: file.to_path_buf(),
        message,
    };
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|e| parse(e.to_string()))?;
    let object = documents
        .into_iter()
        .find(Value::is_object)
        .ok_or_else(|| parse("no YAML document is an object".into()))?;
    serde_json::from_value(object).map_err(|e| parse(e.to_string()))
}

/// Where the upstream file `path` (e.g. `status-samples/workspace-ready.yaml`,
/// `kuberay/ray.io_rayservices.yaml`) is found: under `$AIRUNWAY_UPSTREAM_CRDS` when it is set
/// ([`upstream_dir`]), else the repository's own fixtures (`e2e/fixtures/<path>`,
/// `e2e/fixtures/upstream-crds/<path>`), else the CRDs the harness cached from the upstream Go
/// modules (`~/.cache/airunway/upstream-crds/<project>-<version>`). Nothing beside the
/// repository is read unless asked for: a fresh clone and a development checkout test the same
/// files.
pub fn upstream_file(manifest_dir: &str, path: &str) -> PathBuf {
    if let Some(dir) = upstream_dir() {
        return dir.join(path);
    }
    let workspace = Path::new(manifest_dir).join("..");
    let fixtures = workspace.join("e2e/fixtures");
    let candidates = [
        fixtures.join(path),
        fixtures.join("upstream-crds").join(path),
    ];
    if let Some(found) = candidates.into_iter().find(|c| c.exists()) {
        return found;
    }
    if let (Some((project, file)), Some(home)) = (path.split_once('/'), std::env::var_os("HOME")) {
        let cache = Path::new(&home).join(".cache/airunway/upstream-crds");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&cache)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|d| {
                d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{project}-")))
            })
            .collect();
        dirs.sort();
        if let Some(found) = dirs
            .into_iter()
            .rev()
            .map(|d| d.join(file))
            .find(|f| f.exists())
        {
            return found;
        }
    }
    fixtures.join("upstream-crds").join(path)
}

/// The upstream file `path` (see [`upstream_file`]), decoded as `T`.
pub fn upstream<T: DeserializeOwned>(manifest_dir: &str, path: &str) -> Result<T, FixtureError> {
    read_yaml(&upstream_file(manifest_dir, path))
}

/// The upstream CRD at `path` as the API server reports it once it is established.
pub fn established_crd(
    manifest_dir: &str,
    path: &str,
) -> Result<CustomResourceDefinition, FixtureError> {
    let mut crd: Value = upstream(manifest_dir, path)?;
    crd["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
    serde_json::from_value(crd).map_err(|e| FixtureError::Parse {
        file: upstream_file(manifest_dir, path),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::schema::is_established;

    #[test]
    fn reads_the_first_object_and_names_the_file_on_errors() {
        let dir = std::env::temp_dir().join(format!("airunway-fixtures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("two.yaml");
        std::fs::write(&file, "# comment only\n---\nkind: A\n---\nkind: B\n").unwrap();
        let value: Value = read_yaml(&file).unwrap();
        assert_eq!(value, json!({"kind": "A"}));

        std::fs::write(&file, "- a list\n").unwrap();
        let error = read_yaml::<Value>(&file).unwrap_err();
        assert_eq!(error.category(), "parse");
        assert!(
            error
                .to_string()
                .contains("two.yaml: no YAML document is an object")
        );

        let missing = read_yaml::<Value>(&dir.join("missing.yaml")).unwrap_err();
        assert_eq!(missing.category(), "read");
        assert!(missing.to_string().contains(UPSTREAM_CRDS_ENV), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shipped_crds_read_as_established() {
        let crd =
            established_crd(env!("CARGO_MANIFEST_DIR"), "kaito/kaito.sh_workspaces.yaml").unwrap();
        assert_eq!(crd.metadata.name.as_deref(), Some("workspaces.kaito.sh"));
        assert!(is_established(&crd));
    }
}
