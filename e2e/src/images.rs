//! Our OCI images (built by `deploy/images/build` into `target/images/<name>`) unpacked with
//! the workspace's image tool (`airunway-images unpack`, deploy/images/oci), and their
//! entrypoints run as a Pod would run them, without a container runtime:
//! the image's own root filesystem (`chroot`, as the image's user 65532 when the harness runs
//! as root, with the `/dev` nodes a runtime provides), the ServiceAccount's token, CA and
//! namespace at
//! `/var/run/secrets/kubernetes.io/serviceaccount` and `KUBERNETES_SERVICE_HOST/PORT` (the
//! in-cluster configuration), an environment holding nothing else. Without root, the
//! entrypoint still runs from the unpacked root filesystem, with a kubeconfig carrying the
//! same token.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::env::TestEnv;
use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// Cargo's target directory: `$CARGO_TARGET_DIR`, else `target` in the workspace.
pub fn target_dir() -> PathBuf {
    let root = paths::workspace_root();
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|v| !v.is_empty())
        .map(|d| root.join(d))
        .unwrap_or_else(|| root.join("target"))
}

/// Where the images are: `$AIRUNWAY_IMAGES_DIR`, else `<target>/images` (where
/// `deploy/images/build` writes them).
pub fn images_dir() -> PathBuf {
    std::env::var_os("AIRUNWAY_IMAGES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("images"))
}

/// The static release binaries `deploy/images/build --binaries-only` builds:
/// `$AIRUNWAY_BIN_DIR` when set (e2e/run-tests sets it to them), else
/// `<target>/x86_64-unknown-linux-gnu/release`.
pub fn static_bin_dir() -> PathBuf {
    std::env::var_os("AIRUNWAY_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("x86_64-unknown-linux-gnu/release"))
}

/// The version of the crate in `crate_dir` (relative to the workspace): the tag of its image.
pub fn crate_version(crate_dir: &str) -> Result<String> {
    let file = paths::workspace_root().join(crate_dir).join("Cargo.toml");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("version")
                .and_then(|r| r.trim_start().strip_prefix('='))
                .map(|v| v.trim().trim_matches('"').to_string())
        })
        .with_context(|| format!("no version in {}", file.display()))
}

/// The image tool, `airunway-images` (deploy/images/oci): `$AIRUNWAY_IMAGES_TOOL`, else the
/// debug build of the workspace (`cargo test --workspace --no-run`, as e2e/run-suites builds the
/// suites, makes it beside them).
pub fn tool() -> Result<PathBuf> {
    let path = std::env::var_os("AIRUNWAY_IMAGES_TOOL")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("debug/airunway-images"));
    if !path.is_file() {
        bail!(
            "the image tool {} is missing: build it with `cargo test --workspace --no-run` \
             (or set AIRUNWAY_IMAGES_TOOL)",
            path.display()
        );
    }
    Ok(path)
}

/// Runs the image tool with `args`; returns its standard output, trimmed.
pub fn run_tool<I, S>(args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut command = Command::new(tool()?);
    command.args(args);
    Ok(run(&mut command)?.trim().to_string())
}

/// The manifest digest of image `tag` of the OCI layout `layout` (`airunway-images digest`).
pub fn layout_digest(layout: &Path, tag: &str) -> Result<String> {
    run_tool([
        "digest".to_string(),
        format!("oci:{}:{tag}", layout.display()),
    ])
}

/// An image unpacked into a bundle (`rootfs/` and the image configuration, `config.json`).
pub struct Unpacked {
    /// The image's root filesystem.
    pub rootfs: PathBuf,
    /// What the image runs: its `Entrypoint`, then its `Cmd`.
    pub entrypoint: Vec<String>,
    /// The image's user (`User`, `uid:gid`).
    pub uid: u32,
    /// The image's group.
    pub gid: u32,
    /// The image configuration's labels.
    pub labels: Value,
}

fn run(command: &mut Command) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether the harness runs as root (then entrypoints run in a `chroot` as the image's user).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Unpacks `oci:<images_dir>/<name>:<tag>` into `dest/<name>` with `airunway-images unpack`
/// (the layers' owners kept when the harness is root).
pub fn unpack(name: &str, tag: &str, dest: &Path) -> Result<Unpacked> {
    let layout = images_dir().join(name);
    if !layout.join("index.json").is_file() {
        bail!(
            "image {name} not found at {}: build the images first with `deploy/images/build` \
             (or set AIRUNWAY_IMAGES_DIR)",
            layout.display()
        );
    }
    let bundle = dest.join(name);
    run_tool([
        "unpack".to_string(),
        format!("oci:{}:{tag}", layout.display()),
        bundle.display().to_string(),
    ])?;
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join("config.json")).context("reading config.json")?,
    )?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect()
    };
    // What a runtime runs: the entrypoint, then the command.
    let mut entrypoint = strings(&config["config"]["Entrypoint"]);
    entrypoint.extend(strings(&config["config"]["Cmd"]));
    let user = config["config"]["User"].as_str().unwrap_or("0:0");
    let (uid, gid) = user.split_once(':').unwrap_or((user, user));
    let id = |s: &str| -> Result<u32> {
        s.parse()
            .with_context(|| format!("image user {user:?} is not numeric uid:gid"))
    };
    Ok(Unpacked {
        rootfs: bundle.join("rootfs"),
        entrypoint,
        uid: id(uid)?,
        gid: id(gid)?,
        labels: config["config"]["Labels"].clone(),
    })
}

/// A bound token of ServiceAccount `namespace/name` from the TokenRequest API (what the kubelet
/// mounts into a Pod).
pub async fn service_account_token(client: &Client, namespace: &str, name: &str) -> Result<String> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}
    });
    let response: Value = api
        .create_subresource("token", name, &PostParams::default(), &request)
        .await
        .with_context(|| format!("TokenRequest for {namespace}/{name}"))?;
    response["status"]["token"]
        .as_str()
        .map(str::to_string)
        .context("TokenRequest answered without status.token")
}

/// How to run an image's entrypoint.
pub struct PodProcess<'a> {
    /// The unpacked image.
    pub image: &'a Unpacked,
    /// Name for logs.
    pub name: String,
    /// Arguments after the entrypoint (the Deployment's `args`, adjusted for the host).
    pub args: Vec<String>,
    /// Environment (the Deployment's `env`, e.g. `POD_NAME`, `POD_NAMESPACE`).
    pub env: Vec<(String, String)>,
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount's token.
    pub token: String,
}

impl PodProcess<'_> {
    /// Writes the ServiceAccount files into the root filesystem and starts the entrypoint.
    pub fn start(self, env: &TestEnv) -> Result<ProcessHandle> {
        let image = self.image;
        let Some(entrypoint) = image.entrypoint.first() else {
            bail!("image of {} has no entrypoint", self.name);
        };
        let sa_dir = image
            .rootfs
            .join("var/run/secrets/kubernetes.io/serviceaccount");
        std::fs::create_dir_all(&sa_dir)?;
        std::fs::write(sa_dir.join("token"), &self.token)?;
        std::fs::write(sa_dir.join("ca.crt"), env.control_plane.ca_pem())?;
        std::fs::write(sa_dir.join("namespace"), &self.namespace)?;
        let server = env.control_plane.server.trim_start_matches("https://");
        let (host, port) = server.rsplit_once(':').context("server without a port")?;
        let mut vars: Vec<String> = vec![
            format!("KUBERNETES_SERVICE_HOST={host}"),
            format!("KUBERNETES_SERVICE_PORT={port}"),
            format!(
                "RUST_LOG={}",
                std::env::var("AIRUNWAY_E2E_RUST_LOG").unwrap_or_else(|_| "info".into())
            ),
        ];
        vars.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        if is_root() {
            // What every container runtime provides: the basic character devices (a static
            // glibc binary's getrandom falls back to /dev/urandom, for one).
            let dev = image.rootfs.join("dev");
            std::fs::create_dir_all(&dev)?;
            for (node, minor) in [
                ("null", 3),
                ("zero", 5),
                ("full", 7),
                ("random", 8),
                ("urandom", 9),
            ] {
                if !dev.join(node).exists() {
                    run(Command::new("mknod")
                        .args(["-m", "0666"])
                        .arg(dev.join(node))
                        .args(["c", "1", &minor.to_string()]))?;
                }
            }
        }
        let mut args = vec!["-i".to_string()];
        let program_in_rootfs = image.rootfs.join(entrypoint.trim_start_matches('/'));
        if is_root() {
            args.extend(vars);
            args.push("/usr/sbin/chroot".into());
            args.push(format!("--userspec={}:{}", image.uid, image.gid));
            args.push(image.rootfs.display().to_string());
            args.push(entrypoint.clone());
        } else {
            // No chroot without root: the same file, the same token, through a kubeconfig.
            let kubeconfig = image.rootfs.join("var/run/kubeconfig");
            std::fs::write(
                &kubeconfig,
                format!(
                    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    tokenFile: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
                    env.control_plane.server,
                    sa_dir.join("ca.crt").display(),
                    sa_dir.join("token").display()
                ),
            )?;
            args.extend(vars);
            args.push(format!("KUBECONFIG={}", kubeconfig.display()));
            args.push(program_in_rootfs.display().to_string());
        }
        args.extend(image.entrypoint.iter().skip(1).cloned());
        args.extend(self.args);
        let log = env
            .control_plane
            .dir
            .join("logs")
            .join(format!("{}-image.log", self.name));
        let handle = Spawn {
            name: self.name.clone(),
            program: PathBuf::from("/usr/bin/env"),
            args,
            env: Default::default(),
            log: log.clone(),
            lifetime: Lifetime::WithTestProcess,
        }
        .start()?;
        env.report_log(&format!("{} (image)", self.name), log);
        Ok(handle)
    }
}

/// The first container's `args` and literal `env` of Deployment `name` among `objects`.
pub fn deployment_container(objects: &[Value], name: &str) -> Result<(Vec<String>, Value)> {
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == name)
        .with_context(|| format!("no Deployment {name} in the rendered manifests"))?;
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    Ok((args, container.clone()))
}
