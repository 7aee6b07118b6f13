//! Where things are: the workspace, our binaries, the upstream CRDs and status samples, the
//! Go binaries built by `e2e/control-plane/build.sh`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow, bail};

/// The workspace root (the directory holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The repository's own test fixtures (`e2e/fixtures`).
pub fn fixtures_dir() -> PathBuf {
    workspace_root().join("e2e/fixtures")
}

/// The development override of every upstream CRD: `$AIRUNWAY_UPSTREAM_CRDS`, when set (for
/// instance the design material's `upstream-crds/`). Never required.
pub fn upstream_crds_override() -> Option<PathBuf> {
    std::env::var_os("AIRUNWAY_UPSTREAM_CRDS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The directories holding the upstream CRDs to install: `$AIRUNWAY_UPSTREAM_CRDS` when set;
/// otherwise the CRDs taken from the upstream Go modules at the pinned versions (fetched and
/// cached by `e2e/control-plane/upstream-crds.sh`, run here when needed) and the copies kept in
/// `e2e/fixtures/upstream-crds` for the projects whose modules are not served.
pub fn upstream_crd_dirs() -> Result<Vec<PathBuf>> {
    if let Some(dir) = upstream_crds_override() {
        return Ok(vec![dir]);
    }
    static FETCHED: OnceLock<std::result::Result<Vec<PathBuf>, String>> = OnceLock::new();
    let fetched = FETCHED.get_or_init(|| fetch_module_crds().map_err(|e| format!("{e:#}")));
    let mut dirs = fetched.clone().map_err(|e| anyhow!(e))?;
    dirs.push(fixtures_dir().join("upstream-crds"));
    Ok(dirs)
}

/// Runs the workspace's bash script `relative` (stdin closed) and returns what it printed on
/// stdout; its stderr is the error when it fails. The harness's Go builds print the directory
/// of what they built (instant when cached).
pub fn run_script(relative: &str) -> Result<String> {
    let script = workspace_root().join(relative);
    let output = std::process::Command::new("bash")
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        bail!(
            "{} failed ({}):\n{}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `e2e/control-plane/upstream-crds.sh` (instant when its cache is complete) and returns
/// the directories it prints.
fn fetch_module_crds() -> Result<Vec<PathBuf>> {
    let script = workspace_root().join("e2e/control-plane/upstream-crds.sh");
    let stdout = run_script("e2e/control-plane/upstream-crds.sh")?;
    let dirs: Vec<PathBuf> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        bail!("{} printed no directory", script.display());
    }
    Ok(dirs)
}

/// The directory of the status samples (`e2e/fixtures/status-samples`).
pub fn status_samples_dir() -> PathBuf {
    fixtures_dir().join("status-samples")
}

/// The `status` of a status sample (`e2e/fixtures/status-samples/<file>`): what the upstream
/// operator writes in the situation the file describes.
pub fn upstream_status_sample(file: &str) -> Result<serde_json::Value> {
    let path = status_samples_dir().join(file);
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
    own_profile_dir()
}

/// The harness's own binaries (the `airunway-e2e` crate's): built with the tests, never part of
/// the static release binaries in `$AIRUNWAY_BIN_DIR`.
const HARNESS_BINARIES: [&str; 3] = ["airunway-sandbox", "airunway-bench", "airunway-render"];

/// The test executable's own profile directory (`target/<profile>`).
fn own_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// Path of one of our binaries (e.g. `airunway-core`), with a clear error when it is not built.
/// The product's binaries come from [`our_bin_dir`]; the harness's binaries
/// (`airunway-sandbox`, `airunway-bench`, `airunway-render`) always from the test executable's
/// own profile directory, where `cargo test -p airunway-e2e` builds them (a copy left in
/// `$AIRUNWAY_BIN_DIR` by an older build is never picked up). `$AIRUNWAY_BIN_<NAME>` (the name
/// upper case, `-` as `_`) names one binary built elsewhere, e.g. `e2e/run-tests` sets
/// `AIRUNWAY_BIN_CONFIGMAP_PROVIDER` to the example provider built from the packaged
/// `airunway-api` (`examples/configmap-provider/build-from-package`).
pub fn our_binary(name: &str) -> Result<PathBuf> {
    let own = format!("AIRUNWAY_BIN_{}", name.to_uppercase().replace('-', "_"));
    if let Some(path) = std::env::var_os(&own) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{own}={} is not a file", path.display());
        }
        return Ok(path);
    }
    let dir = if HARNESS_BINARIES.contains(&name) {
        own_profile_dir()
    } else {
        our_bin_dir()
    };
    let path = dir.join(name);
    if !path.is_file() {
        bail!(
            "{} not found: build the binaries first with `cargo build --workspace --bins` \
             (or set AIRUNWAY_BIN_DIR)",
            path.display()
        );
    }
    Ok(path)
}

/// A pinned version from `e2e/control-plane/versions.env` (e.g. `K8S_VERSION`).
pub fn pinned_version(key: &str) -> Result<String> {
    let file = workspace_root().join("e2e/control-plane/versions.env");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(&format!("{key}=")))
        .next()
        .map(|v| v.trim().to_string())
        .with_context(|| format!("{key} missing from {}", file.display()))
}

/// Pinned Kubernetes and etcd versions read from `e2e/control-plane/versions.env`.
pub fn control_plane_versions() -> Result<(String, String)> {
    Ok((
        pinned_version("K8S_VERSION")?,
        pinned_version("ETCD_VERSION")?,
    ))
}

/// `$AIRUNWAY_CONTROL_PLANE_CACHE`, else `$HOME/.cache/airunway/control-plane`: where
/// `e2e/control-plane/build.sh` puts its binaries, one directory per version.
pub fn go_binaries_cache() -> Result<PathBuf> {
    std::env::var_os("AIRUNWAY_CONTROL_PLANE_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/airunway/control-plane"))
        })
        .context("HOME is not set")
}

fn require(path: PathBuf) -> Result<PathBuf> {
    if !path.is_file() {
        bail!(
            "{} is missing: build the test binaries with `e2e/control-plane/build.sh`",
            path.display()
        );
    }
    Ok(path)
}

/// The directory holding `etcd`, `kube-apiserver`, `kube-controller-manager` and
/// `kube-scheduler`: the version-keyed cache written by `e2e/control-plane/build.sh`, or
/// `$AIRUNWAY_CONTROL_PLANE_BIN`.
pub fn control_plane_bin_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("AIRUNWAY_CONTROL_PLANE_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let (k8s, etcd) = control_plane_versions()?;
            go_binaries_cache()?.join(format!("k8s-v{k8s}-etcd-v{etcd}"))
        }
    };
    for binary in [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ] {
        require(dir.join(binary))?;
    }
    Ok(dir)
}

/// The `kwok` binary (`sigs.k8s.io/kwok` at `KWOK_VERSION`): `$AIRUNWAY_KWOK_BIN`, else the
/// version-keyed cache of `e2e/control-plane/build.sh`.
pub fn kwok_binary() -> Result<PathBuf> {
    match std::env::var_os("AIRUNWAY_KWOK_BIN") {
        Some(path) => require(PathBuf::from(path)),
        None => require(
            go_binaries_cache()?
                .join(format!("kwok-v{}", pinned_version("KWOK_VERSION")?))
                .join("kwok"),
        ),
    }
}

/// The KubeRay operator binary (`github.com/ray-project/kuberay/ray-operator` at
/// `KUBERAY_VERSION`): `$AIRUNWAY_KUBERAY_OPERATOR_BIN`, else the version-keyed cache of
/// `e2e/control-plane/build.sh`.
pub fn kuberay_operator_binary() -> Result<PathBuf> {
    match std::env::var_os("AIRUNWAY_KUBERAY_OPERATOR_BIN") {
        Some(path) => require(PathBuf::from(path)),
        None => require(
            go_binaries_cache()?
                .join(format!("kuberay-v{}", pinned_version("KUBERAY_VERSION")?))
                .join("ray-operator"),
        ),
    }
}

/// The Inference Extension's endpoint picker (`sigs.k8s.io/gateway-api-inference-extension`
/// `cmd/epp` at `GAIE_VERSION`): `$AIRUNWAY_EPP_BIN`, else the version-keyed cache of
/// `e2e/control-plane/build.sh`.
pub fn endpoint_picker_binary() -> Result<PathBuf> {
    match std::env::var_os("AIRUNWAY_EPP_BIN") {
        Some(path) => require(PathBuf::from(path)),
        None => require(
            go_binaries_cache()?
                .join(format!("epp-v{}", pinned_version("GAIE_VERSION")?))
                .join("epp"),
        ),
    }
}
