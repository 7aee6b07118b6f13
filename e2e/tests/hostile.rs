//! Hostile input at the edge (issues 16 and 23), with a provider running: the real core (its
//! admission webhooks installed as shipped, pointed at 127.0.0.1) and the real llm-d provider
//! (as its ServiceAccount with the shipped RBAC; it renders built-in Deployments, so nothing is
//! simulated) on the harness cluster. A corpus of hostile manifests — privilege through
//! overrides in other spellings and depths, overrides llm-d refuses, bad env names and sizes,
//! control and unicode characters in names, args and env, a 1 MB env value and 1.4 MB of
//! annotations (near etcd's 1.5 MiB object limit), 46- and 63-character names,
//! quantities at and past the edge, huge context lengths, a pathological selection rule — is
//! applied with the webhook and again with it removed. Each is refused naming the field, or
//! admitted and refused at reconcile time (core or provider) with the same words and no
//! Deployment created; edge values inside the limits are accepted and rendered. Neither process
//! logs a panic or exits, and a normal deployment created after the corpus is selected and
//! rendered about as fast as one created before it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::admission::{create_raw, deployment, remove_webhooks, webhook_configurations};
use airunway_e2e::binaries::free_port;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, manifests};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// Whether `message` names `field`; the API server writes a map key as `.key` where the core
/// writes `[key]`.
fn names_field(message: &str, field: &str) -> bool {
    message.contains(field) || message.contains(&field.replace('[', ".").replace(']', ""))
}

/// A valid llm-d deployment spec with `extra` merged at the top level.
fn llmd(extra: Value) -> Value {
    let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}}, "provider": {"name": "llmd"}});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    spec
}

fn overrides(o: Value) -> Value {
    llmd(json!({"provider": {"name": "llmd", "overrides": o}}))
}

/// Who refuses an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    /// The core's validation: the webhook at admission, else the CRD or the core's
    /// reconcile-time validation (Validated=False, Failed, nothing selected).
    Core,
    /// The provider at reconcile time (ProviderCompatible=False, nothing applied), with or
    /// without the webhook.
    Provider,
}

/// (name, spec, who refuses it, field named, words of the message).
fn refused_corpus() -> Vec<(String, Value, By, &'static str, &'static str)> {
    let mut nested = json!({"spec": {"minReadySeconds": 1}});
    for _ in 0..12 {
        nested = json!({"n": nested});
    }
    let c = |name: &str, spec: Value, field: &'static str, words: &'static str| {
        (name.to_string(), spec, By::Core, field, words)
    };
    let p = |name: &str, spec: Value, field: &'static str, words: &'static str| {
        (name.to_string(), spec, By::Provider, field, words)
    };
    vec![
        c(
            "privileged-ephemeral",
            overrides(
                json!({"spec": {"template": {"spec": {"ephemeralContainers": [{"name": "x", "image": "busybox", "SecurityContext": {"Privileged": true}}]}}}}),
            ),
            "spec.provider.overrides.spec.template.spec.ephemeralContainers[0].SecurityContext",
            "not allowed",
        ),
        c(
            "host-network-upper",
            overrides(json!({"SPEC": {"TEMPLATE": {"SPEC": {"HOSTNETWORK": true}}}})),
            "HOSTNETWORK",
            "host namespaces are not allowed",
        ),
        c(
            "apparmor",
            overrides(
                json!({"spec": {"template": {"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/vllm": "unconfined"}}}}}),
            ),
            "spec.provider.overrides.spec.template.metadata.annotations",
            "AppArmor may not be unconfined",
        ),
        c(
            "sysctl",
            overrides(
                json!({"spec": {"template": {"spec": {"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]}}}}}),
            ),
            "spec.provider.overrides.spec.template.spec.securityContext",
            "not allowed",
        ),
        c(
            "overrides-too-deep",
            overrides(nested.clone()),
            "spec.provider.overrides",
            "nest",
        ),
        c(
            "env-control",
            llmd(json!({"env": [{"name": "A\u{1b}[31mB", "value": "x"}]})),
            "spec.env[0].name",
            "printable ASCII",
        ),
        c(
            "env-unicode-name",
            llmd(json!({"env": [{"name": "ПЕРЕМЕННАЯ", "value": "x"}]})),
            "spec.env[0].name",
            "printable ASCII",
        ),
        c(
            "env-value-1mb",
            llmd(json!({"env": [{"name": "BIG", "value": "x".repeat(1_000_000)}]})),
            "spec.env[0].value",
            "32768 bytes",
        ),
        c(
            "annotations-1400kb",
            llmd(
                json!({"podTemplate": {"metadata": {"annotations": {"note": "a".repeat(1_400_000)}}}}),
            ),
            "spec.podTemplate.metadata.annotations",
            "must total at most 65536 bytes",
        ),
        c(
            "args-control",
            llmd(
                json!({"engine": {"type": "vllm", "args": {"max-num-seqs": "8\n--trust-remote-code"}}}),
            ),
            "spec.engine.args",
            "control characters",
        ),
        c(
            "selector-unicode",
            llmd(json!({"nodeSelector": {"zone": "ü\u{0}"}})),
            "spec.nodeSelector[zone]",
            "value must be at most 63 letters",
        ),
        c(&"n".repeat(46), llmd(json!({})), "metadata.name", "45"),
        c(&"a".repeat(63), llmd(json!({})), "metadata.name", "45"),
        c(
            "cpu-zero",
            llmd(json!({"resources": {"gpu": {"count": 1}, "cpu": "0"}})),
            "spec.resources.cpu",
            "greater than zero",
        ),
        c(
            "memory-over-ceiling",
            llmd(json!({"resources": {"gpu": {"count": 1}, "memory": "4097Gi"}})),
            "spec.resources.memory",
            "4Ti",
        ),
        c(
            "context-2-pow-24-plus-1",
            llmd(json!({"engine": {"type": "vllm", "contextLength": 16_777_217}})),
            "spec.engine.contextLength",
            "16777216",
        ),
        p(
            "replace-containers",
            overrides(
                json!({"spec": {"template": {"spec": {"containers": [{"name": "vllm", "image": "evil/miner:latest"}]}}}}),
            ),
            "provider.overrides.spec.template.spec.containers",
            "would replace the vLLM container wholesale",
        ),
        p(
            "detach-selector",
            overrides(json!({"spec": {"selector": {"matchLabels": {"app": "other"}}}})),
            "provider.overrides.spec.selector",
            "would detach the pods from their Service",
        ),
        p(
            "own-metadata",
            overrides(json!({"metadata": {"name": "someone-elses"}})),
            "provider.overrides.metadata",
            "is set by the provider",
        ),
    ]
}

/// Edge values inside the limits: accepted and rendered. (name, spec)
fn accepted_corpus() -> Vec<(String, Value)> {
    vec![
        ("e".repeat(45), llmd(json!({}))),
        (
            "edge-env".into(),
            llmd(
                json!({"env": [{"name": "BIG", "value": "v".repeat(32_000)}, {"name": "UNICODE", "value": "モデル ✓ ü"}]}),
            ),
        ),
        (
            "edge-quantities".into(),
            llmd(
                json!({"resources": {"gpu": {"count": 1}, "cpu": "1m", "memory": "4Ti"}, "engine": {"type": "vllm", "contextLength": 16_777_216}}),
            ),
        ),
        (
            "edge-overrides".into(),
            overrides(
                json!({"spec": {"minReadySeconds": 3, "template": {"metadata": {"annotations": {"note": "ü ✓ \u{1F680}"}}}}}),
            ),
        ),
    ]
}

async fn start_llmd(env: &TestEnv) -> Running {
    let identity = stack::service_account_identity(
        env,
        "deploy/providers/llmd/rbac.yaml",
        "airunway-provider-llmd",
    )
    .await;
    let provider = stack::start_provider(
        env,
        "airunway-provider-llmd",
        &identity,
        &["--heartbeat-interval=1s"],
        "llmd-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, "llmd", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    provider
}

/// Time from create to selected, and to the provider's Deployment existing.
async fn select_and_render(env: &TestEnv, name: &str) -> (Duration, Duration) {
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let md: ModelDeployment = serde_json::from_value(deployment(name, llmd(json!({})))).unwrap();
    let t = Instant::now();
    mds.create(&PostParams::default(), &md).await.unwrap();
    wait_for(&mds, name, WAIT, "selected", |md| {
        md.selected_provider() == Some("llmd")
    })
    .await;
    let selected = t.elapsed();
    eventually("the llm-d Deployment", WAIT, || async {
        match deployments.get_opt(name).await {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    (selected, t.elapsed())
}

/// Waits for a stored hostile deployment to be held, returns the holding message.
async fn held_message(api: &Api<ModelDeployment>, name: &str, by: By) -> String {
    let condition = match by {
        By::Core => "Validated",
        By::Provider => "ProviderCompatible",
    };
    let stored = wait_for(api, name, WAIT, "held at reconcile time", |md| {
        md.condition(condition).is_some_and(|c| !c.is_true())
    })
    .await;
    if by == By::Core {
        assert_eq!(stored.phase(), Some(Phase::Failed), "{name}");
    }
    stored
        .condition(condition)
        .and_then(|c| c.message.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn hostile_corpus_with_a_provider_running_with_and_without_the_webhook() {
    let started = Instant::now();
    let _lock = cluster_lock().await;
    let env = TestEnv::new("hostile").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    let port = free_port();
    manifests::apply(&env.client, &webhook_configurations(&env, port)).await;
    let webhook = format!("--webhook-bind-address=127.0.0.1:{port}");
    let namespace = format!("--webhook-namespace={}", env.namespace);
    let mut core_args = vec![
        webhook.as_str(),
        namespace.as_str(),
        "--webhook-extra-san=127.0.0.1",
    ];
    core_args.extend_from_slice(&FAST_HEALTH);
    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &core_args, "core").await;
    let provider = start_llmd(&env).await;
    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &env.namespace);
    // The webhook acts once its configuration takes effect.
    eventually("the validating webhook to act", WAIT, || async {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment("marker", overrides(json!({"hostPID": true}))),
        )
        .await;
        if code == 201 {
            let _ = api.delete("marker", &DeleteParams::default()).await;
        }
        match body["message"].as_str() {
            Some(m) if m.contains("admission webhook") => Ok(()),
            other => Err(format!("{code} {other:?}")),
        }
    })
    .await;

    let (before_selected, before_rendered) = select_and_render(&env, "before").await;

    // With the webhook.
    let corpus = refused_corpus();
    let mut admission_messages = std::collections::BTreeMap::new();
    let (mut refused_at_admission, mut refused_by_provider) = (0, 0);
    for (name, spec, by, field, words) in &corpus {
        let (code, _, body) =
            create_raw(&env.client, &env.namespace, &deployment(name, spec.clone())).await;
        match by {
            By::Core => {
                assert!(code >= 400, "{name} was admitted");
                let message = body["message"].as_str().unwrap_or_default().to_string();
                assert!(
                    names_field(&message, field) && message.contains(words),
                    "{name}: expected {field} … {words}; got {}",
                    message.chars().take(600).collect::<String>()
                );
                admission_messages.insert(name.clone(), message);
                refused_at_admission += 1;
            }
            By::Provider => {
                assert_eq!(code, 201, "{name}: {body}");
                let message = held_message(&api, name, *by).await;
                assert!(
                    message.contains(field) && message.contains(words),
                    "{name}: expected {field} … {words}; got {message}"
                );
                admission_messages.insert(name.clone(), message);
                refused_by_provider += 1;
            }
        }
    }
    for (name, spec) in accepted_corpus() {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment(&name, spec.clone()),
        )
        .await;
        assert_eq!(code, 201, "{name} at the edge was refused: {body}");
        eventually(&format!("{name} rendered"), WAIT, || async {
            match deployments.get_opt(&name).await {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }

    // A pathological selection rule is refused at admission, naming it.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let pathological: InferenceProviderConfig = serde_json::from_value(json!({
        "apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
        "metadata": {"name": "hostile-rule"},
        "spec": {"capabilities": {"engines": [{"name": "vllm", "servingModes": ["aggregated"], "gpuSupport": true}]},
            "selectionRules": [{"condition": "spec.env.all(a, spec.env.all(b, spec.env.all(c, spec.env.all(d, a.name != d.name))))", "priority": 1}]}
    }))
    .unwrap();
    let refused = ipcs
        .create(&PostParams::default(), &pathological)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("spec.selectionRules[0].condition") && refused.contains("budget"),
        "{refused}"
    );

    // Without the webhook: the same corpus (new names) is refused by the CRD naming the field,
    // or stored and held at reconcile time with the same words; nothing is applied.
    remove_webhooks(&env.client).await;
    eventually("the webhooks to be gone", WAIT, || async {
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment("probe", overrides(json!({"hostPID": true}))),
        )
        .await;
        if code == 201 {
            let _ = api.delete("probe", &DeleteParams::default()).await;
            Ok(())
        } else {
            Err(format!("{code} {}", body["message"]))
        }
    })
    .await;
    let (mut refused_by_crd, mut held_by_core, mut held_by_provider) = (0, 0, 0);
    let mut stored_names = Vec::new();
    for (name, spec, by, field, words) in &corpus {
        let name_without = if name.len() > 40 {
            // The name is the hostile value: keep it (the webhook refused it, so it is free).
            name.clone()
        } else {
            format!("{name}-nw")
        };
        let (code, _, body) = create_raw(
            &env.client,
            &env.namespace,
            &deployment(&name_without, spec.clone()),
        )
        .await;
        if code >= 400 {
            let message = body["message"].as_str().unwrap_or_default();
            assert!(
                *by == By::Core && names_field(message, field),
                "{name}: refused without naming {field}: {message}"
            );
            refused_by_crd += 1;
            continue;
        }
        stored_names.push(name_without.clone());
        let message = held_message(&api, &name_without, *by).await;
        assert!(
            message.contains(field) && message.contains(words),
            "{name}: expected {field} … {words}; got {message}"
        );
        // The same words as with the webhook: the webhook's message carries the
        // reconcile-time message (the provider's is the same text either way).
        let with_webhook = &admission_messages[name];
        let core_words = message.split("; ").next().unwrap_or_default();
        assert!(
            with_webhook.contains(core_words),
            "{name}: webhook said {with_webhook}, reconcile said {message}"
        );
        match by {
            By::Core => held_by_core += 1,
            By::Provider => held_by_provider += 1,
        }
    }
    // Nothing hostile was applied upstream: no Deployment carries a refused entry's name.
    let existing: Vec<String> = deployments
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|d| d.metadata.name)
        .collect();
    for (name, ..) in &corpus {
        for candidate in [name.clone(), format!("{name}-nw")] {
            assert!(
                !existing.contains(&candidate),
                "{candidate} was applied upstream: {existing:?}"
            );
        }
    }

    let (after_selected, after_rendered) = select_and_render(&env, "after").await;
    for (process, what) in [
        (&core.process, "core"),
        (&provider.process, "llm-d provider"),
    ] {
        let log = std::fs::read_to_string(process.log()).unwrap_or_default();
        assert!(!log.contains("panicked"), "the {what} panicked");
        assert!(process.exit_status().is_none(), "the {what} exited");
    }
    assert!(
        after_rendered < before_rendered * 3 + Duration::from_secs(2),
        "slower after the corpus: {after_rendered:?} vs {before_rendered:?}"
    );
    eprintln!(
        "hostile corpus with llm-d running: {} refused entries + {} edge entries accepted and rendered; with the webhook {refused_at_admission} refused at admission, {refused_by_provider} refused by the provider at reconcile; without it {refused_by_crd} refused by the CRD, {held_by_core} held by the core, {held_by_provider} held by the provider ({} stored); no Deployment for any refused entry; pathological rule refused at admission. Normal deployment selected/rendered in {before_selected:?}/{before_rendered:?} before, {after_selected:?}/{after_rendered:?} after; suite took {:?}",
        corpus.len(),
        accepted_corpus().len(),
        stored_names.len(),
        started.elapsed()
    );

    api.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    provider.process.terminate(Duration::from_secs(10));
    core.process.terminate(Duration::from_secs(10));
    airunway_e2e::providers::delete_all(&env.client).await;
}
