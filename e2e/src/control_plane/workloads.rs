//! What makes workloads run: kube-scheduler (same Kubernetes module and version as the API
//! server), KWOK (`sigs.k8s.io/kwok`) and the simulated nodes it keeps Ready.
//!
//! KWOK plays the kubelets: nodes annotated `kwok.x-k8s.io/node: fake` get Ready conditions and
//! a heartbeat, Pods bound to them become Running and Ready with a pod IP (so Deployments become
//! Available and Endpoints/EndpointSlices fill), and deleted Pods go away. No container runs.
//! The stages are KWOK's own defaults, taken from its module by `e2e/control-plane/build.sh`,
//! and ours in `e2e/control-plane/kwok-stages/` (see its README): a Pod annotated
//! [`POD_STATE_ANNOTATION`] reports an image it cannot pull, a crash loop or a model server
//! that never gets ready, and KWOK's `pod-ready` never picks it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};

use crate::paths;
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// The pod annotation that selects one of our KWOK stages (`e2e/control-plane/kwok-stages/`):
/// `image-pull-failed`, `crash-loop` or `never-ready`.
pub const POD_STATE_ANNOTATION: &str = "kwok.airunway.test/pod-state";
/// The termination message a Pod of the `crash-loop` stage reports (default: `the engine
/// exited`).
pub const TERMINATION_MESSAGE_ANNOTATION: &str = "kwok.airunway.test/termination-message";
/// The last termination reason a Pod of the `crash-loop` stage reports (default `Error`).
pub const TERMINATION_REASON_ANNOTATION: &str = "kwok.airunway.test/termination-reason";
/// The last exit code a Pod of the `crash-loop` stage reports (default 1).
pub const EXIT_CODE_ANNOTATION: &str = "kwok.airunway.test/exit-code";

/// Annotation that hands a node to KWOK.
pub const KWOK_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";
/// Label on every simulated node.
pub const SIMULATED_NODE_LABEL: &str = "airunway.ai/simulated-node";
/// The extended resource GPU nodes advertise (NVIDIA device plugin).
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// GPUs per simulated GPU node.
pub const GPUS_PER_NODE: u32 = 8;
/// Simulated CPU-only nodes.
pub const CPU_NODES: [&str; 2] = ["kwok-cpu-0", "kwok-cpu-1"];
/// Simulated GPU nodes.
pub const GPU_NODES: [&str; 2] = ["kwok-gpu-0", "kwok-gpu-1"];
/// The pod network KWOK hands out pod IPs from.
pub const POD_CIDR: &str = "10.244.0.0/16";

fn quantities(pairs: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.clone())))
        .collect()
}

/// The simulated nodes: two CPU nodes (16 CPUs, 64 GiB) and two GPU nodes shaped like an
/// 8 x A100 80 GB VM, with the labels the NVIDIA GPU operator's feature discovery puts on such a
/// node (`nvidia.com/gpu.present: "true"`, which KAITO's provider selects on, product, count,
/// memory) and the well-known `kubernetes.io/*` and instance-type labels.
pub fn simulated_nodes() -> Vec<Node> {
    let node = |name: &str, extra_labels: &[(&str, &str)], capacity: BTreeMap<String, Quantity>| {
        let mut labels: BTreeMap<String, String> = [
            ("kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
            ("kubernetes.io/hostname", name),
            ("type", "kwok"),
            (SIMULATED_NODE_LABEL, "true"),
        ]
        .iter()
        .chain(extra_labels)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        labels.insert("kubernetes.io/hostname".into(), name.into());
        Node {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                labels: Some(labels),
                annotations: Some(
                    [
                        (KWOK_NODE_ANNOTATION.to_string(), "fake".to_string()),
                        ("node.alpha.kubernetes.io/ttl".to_string(), "0".to_string()),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            status: Some(NodeStatus {
                allocatable: Some(capacity.clone()),
                capacity: Some(capacity),
                ..Default::default()
            }),
            ..Default::default()
        }
    };
    let mut nodes = Vec::new();
    for name in CPU_NODES {
        nodes.push(node(
            name,
            &[
                ("node.kubernetes.io/instance-type", "Standard_D16s_v5"),
                ("topology.kubernetes.io/zone", "simulated-1"),
            ],
            quantities(&[
                ("cpu", "16".into()),
                ("memory", "64Gi".into()),
                ("ephemeral-storage", "500Gi".into()),
                ("pods", "110".into()),
            ]),
        ));
    }
    let gpus = GPUS_PER_NODE.to_string();
    for name in GPU_NODES {
        nodes.push(node(
            name,
            &[
                (
                    "node.kubernetes.io/instance-type",
                    "Standard_ND96amsr_A100_v4",
                ),
                ("topology.kubernetes.io/zone", "simulated-1"),
                ("nvidia.com/gpu.present", "true"),
                ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
                ("nvidia.com/gpu.count", &gpus),
                ("nvidia.com/gpu.memory", "81920"),
                ("accelerator", "nvidia"),
            ],
            quantities(&[
                ("cpu", "96".into()),
                ("memory", "1800Gi".into()),
                ("ephemeral-storage", "2Ti".into()),
                ("pods", "110".into()),
                (GPU_RESOURCE, gpus.clone()),
            ]),
        ));
    }
    nodes
}

fn go_env() -> BTreeMap<String, String> {
    [("GOMAXPROCS".to_string(), "2".to_string())].into()
}

/// Starts kube-scheduler with its default profile (no leader election, no serving port).
pub(super) fn spawn_scheduler(
    bin: &Path,
    kubeconfig: &Path,
    logs: &Path,
    lifetime: Lifetime,
) -> Result<ProcessHandle> {
    Spawn {
        name: "kube-scheduler".into(),
        program: bin.join("kube-scheduler"),
        args: vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--authentication-kubeconfig={}", kubeconfig.display()),
            format!("--authorization-kubeconfig={}", kubeconfig.display()),
            "--leader-elect=false".into(),
            "--secure-port=0".into(),
            "--kube-api-qps=200".into(),
            "--kube-api-burst=400".into(),
            "--v=0".into(),
        ],
        env: go_env(),
        log: logs.join("kube-scheduler.log"),
        lifetime,
    }
    .start()
}

/// Starts KWOK managing the nodes annotated [`KWOK_NODE_ANNOTATION`]`=fake`, with KWOK's own
/// fast node/pod stages and node heartbeat.
pub(super) fn spawn_kwok(
    kubeconfig: &Path,
    logs: &Path,
    lifetime: Lifetime,
) -> Result<ProcessHandle> {
    let kwok = paths::kwok_binary()?;
    let stages_dir = kwok
        .parent()
        .map(|d| d.join("stages"))
        .context("kwok binary without a directory")?;
    let mut stages: Vec<_> = std::fs::read_dir(&stages_dir)
        .with_context(|| {
            format!(
                "reading {} (run e2e/control-plane/build.sh)",
                stages_dir.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    stages.sort();
    if stages.is_empty() {
        bail!("no KWOK stages in {}", stages_dir.display());
    }
    let stages = with_our_stages(&stages, kubeconfig)?;
    let server_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        "--manage-all-nodes=false".into(),
        format!("--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake"),
        format!("--cidr={POD_CIDR}"),
        "--node-ip=10.244.255.254".into(),
        format!("--server-address=127.0.0.1:{server_port}"),
    ];
    for stage in &stages {
        args.push(format!("--config={}", stage.display()));
    }
    Spawn {
        name: "kwok".into(),
        program: kwok,
        args,
        env: go_env(),
        log: logs.join("kwok.log"),
        lifetime,
    }
    .start()
}

/// KWOK's default `stages` and ours (`e2e/control-plane/kwok-stages/*.yaml`), with KWOK's
/// `pod-ready` written beside `kubeconfig` with one more selector expression: Pods annotated
/// [`POD_STATE_ANNOTATION`] are left to our stages.
fn with_our_stages(
    stages: &[std::path::PathBuf],
    kubeconfig: &Path,
) -> Result<Vec<std::path::PathBuf>> {
    let dir = kubeconfig
        .parent()
        .context("kubeconfig without a directory")?
        .join("kwok-stages");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut all = Vec::with_capacity(stages.len() + 3);
    for stage in stages {
        if stage.file_name().is_some_and(|n| n == "pod-ready.yaml") {
            let text = std::fs::read_to_string(stage)
                .with_context(|| format!("reading {}", stage.display()))?;
            let anchor = "    matchExpressions:\n";
            if !text.contains(anchor) {
                bail!("{} has no matchExpressions to add to", stage.display());
            }
            let exclusion = format!(
                "{anchor}    - key: '.metadata.annotations[\"{POD_STATE_ANNOTATION}\"]'\n      operator: 'DoesNotExist'\n"
            );
            let patched = dir.join("pod-ready.yaml");
            std::fs::write(&patched, text.replacen(anchor, &exclusion, 1))
                .with_context(|| format!("writing {}", patched.display()))?;
            all.push(patched);
        } else {
            all.push(stage.clone());
        }
    }
    let ours = paths::workspace_root().join("e2e/control-plane/kwok-stages");
    let mut extra: Vec<_> = std::fs::read_dir(&ours)
        .with_context(|| format!("reading {}", ours.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    extra.sort();
    all.extend(extra);
    Ok(all)
}

/// Creates the [`simulated_nodes`] (kept when they exist) and waits until KWOK reports each
/// Ready.
pub(super) async fn create_nodes(client: &Client, kwok: &ProcessHandle) -> Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    let nodes = simulated_nodes();
    for node in &nodes {
        match api.create(&PostParams::default(), node).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e).with_context(|| format!("creating node {}", node.name_any())),
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for node in &nodes {
        let name = node.name_any();
        loop {
            let ready = api
                .get(&name)
                .await?
                .status
                .and_then(|s| s.conditions)
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            if ready {
                break;
            }
            if let Some(status) = kwok.exit_status() {
                bail!("kwok exited ({status}):\n{}", kwok.log_tail(40));
            }
            if Instant::now() > deadline {
                bail!("node {name} not Ready after 60s:\n{}", kwok.log_tail(40));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}
