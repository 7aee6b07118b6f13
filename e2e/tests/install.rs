//! The install, proven (issue 22): `deploy/default` rendered (the harness's kustomize subset,
//! e2e/src/kustomize.rs) and applied server-side to the real control plane, then every shipped
//! binary run FROM ITS IMAGE (built by `deploy/images/build`, unpacked with the image tool
//! `airunway-images`; no file from `target/<profile>`): the image's entrypoint inside its own
//! root filesystem (`chroot`, as the image's user 65532 when the harness is root), as its
//! ServiceAccount (a TokenRequest token at
//! the in-cluster path), with the args and env of its Deployment manifest. What differs from a
//! Pod, and why: the listen addresses are free ports on 127.0.0.1 (every process shares the
//! host's network), the webhook configurations point at that port by URL and the providers
//! advertise their probe on 127.0.0.1 (no Service routing or cluster DNS without kube-proxy).
//!
//! Shown: a ModelDeployment is selected, rendered and reaches Running with the upstream status
//! the operator writes (a status sample: no Dynamo or Ray Serve runs here); the denials of the
//! shipped RBAC (SubjectAccessReview and real requests with the tokens); an upgrade (new image
//! tag through `images:`) and an uninstall of what was applied.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::apply_body;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::binaries::free_port;
use airunway_e2e::images::{self, PodProcess, Unpacked};
use airunway_e2e::kustomize;
use airunway_e2e::process::ProcessHandle;
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, http, manifests, paths};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const SYSTEM: &str = "airunway-system";
const WAIT: Duration = Duration::from_secs(60);

/// The crate directory of an image (= Deployment = ServiceAccount) name in `deploy/`.
fn crate_dir(name: &str) -> String {
    match name {
        "airunway-core" => "core-controller".to_string(),
        other => other.trim_start_matches("airunway-").to_string(),
    }
}

/// (provider, group, version, plural) of the upstream kinds the providers own.
const UPSTREAM: [(&str, &str, &str, &str); 3] = [
    ("kaito", "kaito.sh", "v1beta1", "workspaces"),
    ("dynamo", "nvidia.com", "v1beta1", "dynamographdeployments"),
    ("kuberay", "ray.io", "v1", "rayservices"),
];

fn upstream_api(
    env: &TestEnv,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

struct Process {
    handle: ProcessHandle,
}

/// The Deployment's args for a process on the host network: the shipped flags, the listen
/// addresses on free ports, the advertised probe on 127.0.0.1.
fn host_args(manifest_args: &[String], core: bool, webhook_port: u16) -> (Vec<String>, u16) {
    let health = free_port();
    let mut args: Vec<String> = manifest_args
        .iter()
        .filter(|a| !a.starts_with("--probe-advertise-address"))
        .cloned()
        .collect();
    args.push(format!("--metrics-bind-address=127.0.0.1:{}", free_port()));
    args.push(format!("--health-probe-bind-address=127.0.0.1:{health}"));
    if core {
        args.push(format!("--webhook-bind-address=127.0.0.1:{webhook_port}"));
        args.push("--webhook-extra-san=127.0.0.1".into());
        args.push("--provider-probe-interval=1s".into());
    } else {
        let probe = free_port();
        args.push(format!("--probe-bind-address=127.0.0.1:{probe}"));
        args.push(format!("--probe-advertise-address=127.0.0.1:{probe}"));
        args.push("--heartbeat-interval=2s".into());
    }
    (args, health)
}

async fn start_from_image(
    env: &TestEnv,
    objects: &[Value],
    image: &Unpacked,
    name: &str,
    webhook_port: u16,
) -> Process {
    let (manifest_args, container) = images::deployment_container(objects, name).unwrap();
    // Every env entry of the manifest is a downward-API field (POD_NAME, POD_NAMESPACE).
    let mut pod_env = Vec::new();
    for e in container["env"].as_array().into_iter().flatten() {
        let key = e["name"].as_str().unwrap().to_string();
        let value = match e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            Some("metadata.name") => format!("{name}-0"),
            Some("metadata.namespace") => SYSTEM.to_string(),
            _ => e["value"].as_str().unwrap_or_default().to_string(),
        };
        pod_env.push((key, value));
    }
    let (args, health) = host_args(&manifest_args, name == "airunway-core", webhook_port);
    let token = images::service_account_token(&env.client, SYSTEM, name)
        .await
        .unwrap();
    let handle = PodProcess {
        image,
        name: name.to_string(),
        args,
        env: pod_env,
        namespace: SYSTEM.to_string(),
        token,
    }
    .start(env)
    .unwrap();
    eventually(&format!("{name} (from its image) ready"), WAIT, || async {
        if let Some(status) = handle.exit_status() {
            panic!("{name} exited ({status}):\n{}", handle.log_tail(30));
        }
        match http::get(&format!("http://127.0.0.1:{health}/readyz")).await {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    Process { handle }
}

/// Whether `user` (a ServiceAccount of airunway-system) may `verb` the resource.
async fn allowed(
    env: &TestEnv,
    sa: &str,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> bool {
    let api: Api<SubjectAccessReview> = Api::all(env.client.clone());
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {
            "user": format!("system:serviceaccount:{SYSTEM}:{sa}"),
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{SYSTEM}"), "system:authenticated"],
            "resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                "subresource": subresource, "namespace": namespace.unwrap_or_default(),
                "name": name.unwrap_or_default()}
        }
    }))
    .unwrap();
    let answer = api.create(&PostParams::default(), &review).await.unwrap();
    answer.status.map(|s| s.allowed).unwrap_or(false)
}

/// `deploy/install.yaml` (the single-file install) is `deploy/default` rendered: the built
/// `airunway-render --check` (CI fails on drift; `cargo run -p airunway-e2e --bin
/// airunway-render` rewrites it).
#[test]
fn install_yaml_is_deploy_default_rendered() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_airunway-render"))
        .arg("--check")
        .output()
        .expect("starting airunway-render");
    assert!(
        output.status.success(),
        "airunway-render --check failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn default_install_runs_from_images_as_service_accounts() {
    let started = Instant::now();
    let env = TestEnv::new("install").await;
    let root = paths::workspace_root();

    // Unpack the images first: a missing image fails before anything is applied.
    let bundles = env.control_plane.dir.join("images");
    let mut unpacked: Vec<(String, Unpacked)> = Vec::new();
    let default = kustomize::render(&root.join("deploy/default")).unwrap();
    let shipped: Vec<String> = default
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    for name in &shipped {
        let version = images::crate_version(&crate_dir(name)).unwrap();
        let image = images::unpack(name, &version, &bundles).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            image.entrypoint,
            [format!("/usr/local/bin/{name}")],
            "{name}: entrypoint"
        );
        assert_eq!((image.uid, image.gid), (65532, 65532), "{name}: user");
        assert!(
            image
                .rootfs
                .join("etc/ssl/certs/ca-certificates.crt")
                .is_file(),
            "{name}: CA bundle"
        );
        // The Deployment names the image of the crate's version.
        assert_eq!(
            images::deployment_container(&default, name).unwrap().1["image"],
            format!("ghcr.io/airunway/{name}:{version}"),
            "{name}: image tag follows the crate version"
        );
        unpacked.push((name.to_string(), image));
    }
    eprintln!(
        "unpacked {} images in {:.1}s",
        unpacked.len(),
        started.elapsed().as_secs_f64()
    );

    // docs/install.md step 2: `deploy/images/build --registry … --push`, exactly, into a local
    // OCI layout (AIRUNWAY_PUSH_TRANSPORT=oci:; there is no registry here) from the same static
    // binaries; the pushed image has the digest the script printed.
    let registry = env.control_plane.dir.join("registry");
    std::fs::create_dir_all(&registry).unwrap();
    let bin_dir = images::static_bin_dir();
    let output = std::process::Command::new(root.join("deploy/images/build"))
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--out")
        .arg(env.control_plane.dir.join("pushed-images"))
        .arg("--registry")
        .arg(&registry)
        .args(["--push", "airunway-core"])
        .env("AIRUNWAY_PUSH_TRANSPORT", "oci:")
        // The image tool this run already has (no nested cargo build from inside a test).
        .env("AIRUNWAY_IMAGES_TOOL", images::tool().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "deploy/images/build --push failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let core_version = images::crate_version("core-controller").unwrap();
    let printed = stdout
        .lines()
        .find_map(|l| {
            l.split_once('@')
                .map(|(_, rest)| rest.split(' ').next().unwrap().to_string())
        })
        .expect("the script prints ref@digest");
    let pushed = images::layout_digest(&registry.join("airunway-core"), &core_version).unwrap();
    assert_eq!(pushed, printed);
    eprintln!(
        "pushed airunway-core {printed} at {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // docs/install.md step 3: `kubectl create namespace airunway-system` and
    // `kubectl apply --server-side -k my-airunway` (the core and the Dynamo provider, images
    // from the reader's registry), with the kustomization read from the doc.
    let webhook_port = free_port();
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": SYSTEM}})).unwrap(),
        )
        .await
        .unwrap();
    let docs = doc_yaml_blocks();
    let overlay = docs
        .iter()
        .find(|d| d["kind"] == "Kustomization")
        .expect("docs/install.md has the my-airunway kustomization")
        .clone();
    let user_dir = env.control_plane.dir.join("user");
    let rendered = render_overlay(&user_dir, &overlay);
    let names = |objects: &[Value], kind: &str| -> Vec<String> {
        objects
            .iter()
            .filter(|o| o["kind"] == kind)
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&rendered, "Deployment"),
        ["airunway-core", "airunway-provider-dynamo"]
    );
    let container_image = |objects: &[Value], name: &str| {
        images::deployment_container(objects, name).unwrap().1["image"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        container_image(&rendered, "airunway-provider-dynamo"),
        format!(
            "registry.example.com/me/airunway-provider-dynamo:{}",
            images::crate_version("provider-dynamo").unwrap()
        )
    );
    manifests::apply(&env.client, &reach_webhook_by_url(&rendered, webhook_port)).await;
    eprintln!(
        "applied the doc's kustomization ({} objects) at {:.1}s",
        rendered.len(),
        started.elapsed().as_secs_f64()
    );

    // The core and the Dynamo provider from their images, as their ServiceAccounts.
    let image_of = |name: &str| &unpacked.iter().find(|(n, _)| n == name).unwrap().1;
    let mut running = Vec::new();
    for name in ["airunway-core", "airunway-provider-dynamo"] {
        running.push(start_from_image(&env, &rendered, image_of(name), name, webhook_port).await);
    }
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "dynamo", WAIT, "registered and ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    eprintln!(
        "core and dynamo running from their images at {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // The core's webhook answers through the API server (its caBundle written by the core
    // itself as its ServiceAccount).
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually("the core's validating webhook to answer", WAIT, || async {
        let bad: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "probe"},
            "spec": {"model": {"id": "a/b"}, "provider": {"overrides": {"hostPID": true}}}
        }))
        .unwrap();
        let dry = PostParams {
            dry_run: true,
            ..Default::default()
        };
        match mds.create(&dry, &bad).await {
            Err(e) if e.to_string().contains("admission webhook") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // A deployment selected, rendered and Running.
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "llama"},
        "spec": {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "engine": {"type": "vllm"},
                 "resources": {"gpu": {"count": 1}}}
    }))
    .unwrap();
    mds.create(&PostParams::default(), &md).await.unwrap();
    let md = wait_for(&mds, "llama", WAIT, "Deploying on a provider", |md| {
        md.phase() == Some(Phase::Deploying)
    })
    .await;
    let provider = md.selected_provider().unwrap().to_string();
    let (api, sample) = match provider.as_str() {
        "dynamo" => (
            upstream_api(
                &env,
                "nvidia.com",
                "v1beta1",
                "DynamoGraphDeployment",
                "dynamographdeployments",
            ),
            "dgd-v1beta1-successful.yaml",
        ),
        "kuberay" => (
            upstream_api(&env, "ray.io", "v1", "RayService", "rayservices"),
            "rayservice-running.yaml",
        ),
        other => panic!("selected {other}: expected dynamo or kuberay for a GPU vLLM deployment"),
    };
    eventually("the upstream object rendered", WAIT, || async {
        api.get("llama")
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
    api.patch_status(
        "llama",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": paths::upstream_status_sample(sample).unwrap()})),
    )
    .await
    .unwrap();
    wait_for(&mds, "llama", WAIT, "Running", |md| {
        md.phase() == Some(Phase::Running)
    })
    .await;
    eprintln!(
        "llama selected ({provider}), rendered and Running at {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // Everything: `kubectl apply --server-side -k deploy/default` (plus the optional
    // pod-disruption-budget and network-policy components, validated by the real API server),
    // then the other providers from their images.
    let everything = render_overlay(
        &env.control_plane.dir.join("everything"),
        &json!({"resources": ["../deploy/default"],
                "components": ["../deploy/components/pod-disruption-budget",
                               "../deploy/components/network-policy"]}),
    );
    manifests::apply(
        &env.client,
        &reach_webhook_by_url(&everything, webhook_port),
    )
    .await;
    for name in shipped
        .iter()
        .filter(|n| !["airunway-core", "airunway-provider-dynamo"].contains(&n.as_str()))
    {
        running.push(start_from_image(&env, &everything, image_of(name), name, webhook_port).await);
    }
    for provider in ["kaito", "kuberay", "llmd"] {
        wait_for(&ipcs, provider, WAIT, "registered", |_| true).await;
    }
    eprintln!(
        "all {} binaries running from their images at {:.1}s",
        running.len(),
        started.elapsed().as_secs_f64()
    );

    // Denials of the shipped RBAC.
    let secrets_ns = Some(SYSTEM);
    assert!(
        allowed(
            &env,
            "airunway-core",
            "get",
            "",
            "secrets",
            secrets_ns,
            Some("airunway-core-webhook-tls")
        )
        .await,
        "positive control: the core reads its own TLS Secret"
    );
    // The referenced-Secret check (`SecretsFound`, docs/security.md "Referenced Secrets"): `get`
    // anywhere, through its own ClusterRole (deleting its binding turns the check off); the code
    // asks for metadata only. Never `list` or `watch`: no Secret cache.
    assert!(
        allowed(
            &env,
            "airunway-core",
            "get",
            "",
            "secrets",
            Some(env.namespace.as_str()),
            Some("anything")
        )
        .await,
        "the referenced-Secret check needs get"
    );
    for (verb, ns, name) in [
        ("list", secrets_ns, None),
        ("watch", secrets_ns, None),
        ("list", Some(env.namespace.as_str()), None),
        ("watch", Some(env.namespace.as_str()), None),
        ("list", None, None),
        ("watch", None, None),
    ] {
        assert!(
            !allowed(&env, "airunway-core", verb, "", "secrets", ns, name).await,
            "the core may {verb} secrets {ns:?}/{name:?}"
        );
    }
    for (_, group, _, plural) in UPSTREAM {
        for verb in [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ] {
            assert!(
                !allowed(
                    &env,
                    "airunway-core",
                    verb,
                    group,
                    plural,
                    Some(&env.namespace),
                    None
                )
                .await,
                "the core may {verb} {plural}.{group}"
            );
        }
    }
    let providers = ["kaito", "dynamo", "kuberay", "llmd"];
    for provider in providers {
        let sa = format!("airunway-provider-{provider}");
        for (owner, group, _, plural) in UPSTREAM {
            let own = owner == provider;
            for verb in ["get", "list", "create", "patch", "delete"] {
                assert_eq!(
                    allowed(&env, &sa, verb, group, plural, Some(&env.namespace), None).await,
                    own,
                    "{sa} {verb} {plural}.{group}"
                );
            }
        }
        for other in providers.iter().filter(|o| **o != provider) {
            for (verb, resource) in [
                ("get", "inferenceproviderconfigs"),
                ("patch", "inferenceproviderconfigs"),
                ("update", "inferenceproviderconfigs"),
                ("delete", "inferenceproviderconfigs"),
                ("patch", "inferenceproviderconfigs/status"),
            ] {
                assert!(
                    !allowed(&env, &sa, verb, "airunway.ai", resource, None, Some(other)).await,
                    "{sa} may {verb} {resource} {other}"
                );
            }
        }
        if provider != "llmd" {
            for verb in ["create", "patch", "delete"] {
                assert!(
                    !allowed(
                        &env,
                        &sa,
                        verb,
                        "apps",
                        "deployments",
                        Some(&env.namespace),
                        None
                    )
                    .await,
                    "{sa} may {verb} deployments (llm-d's kind)"
                );
            }
        }
    }
    // The same with real requests, as the ServiceAccounts.
    let core = sa_client(&env, "airunway-core").await;
    let secrets: Api<Secret> = Api::namespaced(core.clone(), SYSTEM);
    assert!(secrets.get("airunway-core-webhook-tls").await.is_ok());
    let err = secrets.list(&Default::default()).await.unwrap_err();
    assert!(err.to_string().contains("forbidden"), "{err}");
    let dgds = Api::<DynamicObject>::namespaced_with(
        core.clone(),
        &env.namespace,
        &ApiResource {
            group: "nvidia.com".into(),
            version: "v1beta1".into(),
            api_version: "nvidia.com/v1beta1".into(),
            kind: "DynamoGraphDeployment".into(),
            plural: "dynamographdeployments".into(),
        },
    );
    assert!(
        dgds.get("llama")
            .await
            .unwrap_err()
            .to_string()
            .contains("forbidden")
    );
    let kaito = sa_client(&env, "airunway-provider-kaito").await;
    let ipcs: Api<DynamicObject> = Api::all_with(
        kaito,
        &ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "airunway.ai",
            "v1alpha1",
            "InferenceProviderConfig",
        )),
    );
    let err = ipcs
        .patch(
            "dynamo",
            &PatchParams::apply("intruder").force(),
            &apply_body::apply(&json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig", "metadata": {"name": "dynamo"}})),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("forbidden"), "{err}");
    eprintln!("denials shown at {:.1}s", started.elapsed().as_secs_f64());

    // docs/install.md step 4: the doc's `images:` with a new tag, applied again.
    let upgrade = docs
        .iter()
        .find(|d| d.get("kind").is_none() && d.get("images").is_some())
        .expect("docs/install.md has the upgrade images block");
    let mut upgraded_overlay = overlay.clone();
    for entry in upgrade["images"].as_array().unwrap() {
        let list = upgraded_overlay["images"].as_array_mut().unwrap();
        list.retain(|e| e["name"] != entry["name"]);
        list.push(entry.clone());
    }
    let upgraded = render_overlay(&env.control_plane.dir.join("upgrade"), &upgraded_overlay);
    manifests::apply(&env.client, &reach_webhook_by_url(&upgraded, webhook_port)).await;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), SYSTEM);
    let image = deployments
        .get("airunway-core")
        .await
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .image
        .clone();
    assert_eq!(
        image.as_deref(),
        Some("registry.example.com/me/airunway-core:0.1.1")
    );

    // Uninstall: deployments first (the providers remove their finalizers), then the rest.
    mds.delete("llama", &DeleteParams::default()).await.unwrap();
    eventually("llama deleted", WAIT, || async {
        match mds.get_opt("llama").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    for process in running {
        process.handle.terminate(Duration::from_secs(10));
    }
    for object in everything.iter().rev() {
        delete_object(&env, object).await;
    }
    eventually("airunway-system gone", WAIT, || async {
        match namespaces.get_opt(SYSTEM).await {
            Ok(None) => Ok(()),
            other => Err(format!("{:?}", other.map(|n| n.map(|n| n.status)))),
        }
    })
    .await;
    eprintln!(
        "install, run, denials, upgrade, uninstall: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

async fn delete_object(env: &TestEnv, object: &Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap());
    let (resource, caps) = kube::discovery::pinned_kind(&env.client, &gvk)
        .await
        .unwrap();
    let name = object["metadata"]["name"].as_str().unwrap();
    let api: Api<DynamicObject> = match (caps.scope, object["metadata"]["namespace"].as_str()) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(env.client.clone(), ns, &resource)
        }
        _ => Api::all_with(env.client.clone(), &resource),
    };
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => panic!("deleting {api_version} {name}: {e}"),
    }
}

/// A client authenticating with a bound token of ServiceAccount `sa` of airunway-system.
async fn sa_client(env: &TestEnv, sa: &str) -> kube::Client {
    let token = images::service_account_token(&env.client, SYSTEM, sa)
        .await
        .unwrap();
    let mut config = kube::Config::new(env.control_plane.server.parse().unwrap());
    config.root_cert = Some(vec![pem_to_der(env.control_plane.ca_pem())]);
    config.auth_info.token = Some(token.into());
    kube::Client::try_from(config).unwrap()
}

/// The YAML blocks of docs/install.md (what a reader copies).
fn doc_yaml_blocks() -> Vec<Value> {
    let text = std::fs::read_to_string(paths::workspace_root().join("docs/install.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```yaml") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(serde_saphyr::from_str(block).unwrap());
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Writes `kustomization` as `<dir>/my-airunway/kustomization.yaml` beside a link to this
/// repository's `deploy/` (a reader's directory next to their clone) and renders it.
fn render_overlay(dir: &std::path::Path, kustomization: &Value) -> Vec<Value> {
    let overlay = dir.join("my-airunway");
    std::fs::create_dir_all(&overlay).unwrap();
    let link = dir.join("deploy");
    if !link.exists() {
        std::os::unix::fs::symlink(paths::workspace_root().join("deploy"), &link).unwrap();
    }
    std::fs::write(
        overlay.join("kustomization.yaml"),
        serde_saphyr::to_string(kustomization).unwrap(),
    )
    .unwrap();
    kustomize::render(&overlay).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The webhook configurations pointed at the core's port by URL (no Service routing here).
fn reach_webhook_by_url(objects: &[Value], port: u16) -> Vec<Value> {
    let mut objects = objects.to_vec();
    for object in &mut objects {
        if object["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("WebhookConfiguration"))
        {
            for webhook in object["webhooks"].as_array_mut().unwrap() {
                let path = webhook["clientConfig"]["service"]["path"]
                    .as_str()
                    .unwrap()
                    .to_string();
                webhook["clientConfig"] = json!({"url": format!("https://127.0.0.1:{port}{path}")});
            }
        }
    }
    objects
}
