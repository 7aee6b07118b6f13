//! Where things are: the workspace, our binaries, the shared upstream CRDs, the control plane
//! binaries built by `e2e/control-plane/build.sh`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The workspace root (the directory holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `../shared/upstream-crds` next to the workspace, or `$AIRUNWAY_UPSTREAM_CRDS`.
pub fn upstream_crds_dir() -> PathBuf {
    std::env::var_os("AIRUNWAY_UPSTREAM_CRDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/upstream-crds"))
}

/// The `status` of an upstream status sample (`<upstream CRDs>/status-samples/<file>`): what
/// the upstream operator really writes.
pub fn upstream_status_sample(file: &str) -> Result<serde_json::Value> {
    let path = upstream_crds_dir().join("status-samples").join(file);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let value: serde_json::Value =
        serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(value["status"].clone())
}

/// `deploy/crds` of this workspace.
pub fn our_crds_dir() -> PathBuf {
    workspace_root().join("deploy/crds")
}

/// The directory of our compiled binaries: `$AIRUNWAY_BIN_DIR`, else the cargo profile
/// directory the running executable lives in (`target/<profile>`; test executables sit in
/// `target/<profile>/deps`).
pub fn our_bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIRUNWAY_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// Path of one of our binaries (e.g. `airunway-core`), with a clear error when it is not built.
pub fn our_binary(name: &str) -> Result<PathBuf> {
    let path = our_bin_dir().join(name);
    if !path.is_file() {
        bail!(
            "{} not found: build the binaries first with `cargo build --workspace --bins` \
             (or set AIRUNWAY_BIN_DIR)",
            path.display()
        );
    }
    Ok(path)
}

/// Pinned versions read from `e2e/control-plane/versions.env`.
pub fn control_plane_versions() -> Result<(String, String)> {
    let file = workspace_root().join("e2e/control-plane/versions.env");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let get = |key: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{key}=")))
            .next()
            .map(|v| v.trim().to_string())
            .with_context(|| format!("{key} missing from {}", file.display()))
    };
    Ok((get("K8S_VERSION")?, get("ETCD_VERSION")?))
}

/// The directory holding `etcd`, `kube-apiserver` and `kube-controller-manager`: the
/// version-keyed cache written by `e2e/control-plane/build.sh`, or
/// `$AIRUNWAY_CONTROL_PLANE_BIN`.
pub fn control_plane_bin_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("AIRUNWAY_CONTROL_PLANE_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let (k8s, etcd) = control_plane_versions()?;
            let root = std::env::var_os("AIRUNWAY_CONTROL_PLANE_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .map(|h| PathBuf::from(h).join(".cache/airunway/control-plane"))
                })
                .context("HOME is not set")?;
            root.join(format!("k8s-v{k8s}-etcd-v{etcd}"))
        }
    };
    for binary in ["etcd", "kube-apiserver", "kube-controller-manager"] {
        if !dir.join(binary).is_file() {
            bail!(
                "{} is missing: build the test control plane with `e2e/control-plane/build.sh`",
                dir.join(binary).display()
            );
        }
    }
    Ok(dir)
}
