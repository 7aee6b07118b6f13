//! Issue 36 items 4 and 5 on the real control plane, with real RBAC: the upstream access check
//! (`--check-upstream-access`, the `upstream-access-check` component) asks the API server with
//! SubjectAccessReviews whether the user who last changed a deployment's spec may create the
//! provider's upstream resources, with users impersonated through the kube client's `Config`;
//! the spec-author policy refuses forged and annotation-only changes of the author; the provider
//! identity policies (`deploy/core/provider-identity-policy.yaml`) refuse a provider
//! ServiceAccount's writes to another provider's registration and objects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{annotations, condition_types, event_reasons, labels, reasons};
use airunway_api::v1alpha1::{ConditionStatus, InferenceProviderConfig, ModelDeployment, Phase};
use airunway_e2e::admission::{self, install_webhooks, remove_webhooks, wait_webhook_active};
use airunway_e2e::binaries::free_port;
use airunway_e2e::control_plane::audit_log_path;
use airunway_e2e::stack::{self, FAST_HEALTH};
use airunway_e2e::wait::{eventually, wait_for, wait_for_condition};
use airunway_e2e::{TestEnv, cluster_lock, manifests, paths, providers};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// The shipped layout's vLLM provider identity.
const VLLM_SERVICE_ACCOUNT: &str = "system:serviceaccount:airunway-system:airunway-provider-vllm";

fn component(file: &str) -> Vec<Value> {
    manifests::read(
        &paths::workspace_root().join(format!("deploy/components/upstream-access-check/{file}")),
    )
}

/// The flag the component's patch adds to the core's arguments (a JSON patch: one YAML
/// document holding a list).
fn component_core_flag() -> String {
    let text = std::fs::read_to_string(
        paths::workspace_root().join("deploy/components/upstream-access-check/core-flag.yaml"),
    )
    .unwrap();
    let ops: Vec<Value> = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0]["op"], "add");
    assert_eq!(ops[0]["path"], "/spec/template/spec/containers/0/args/-");
    ops[0]["value"].as_str().unwrap().to_string()
}

/// The component's spec-author policy, its binding limited to `namespaces` (the policy itself
/// as shipped).
async fn install_spec_author_policy(env: &TestEnv, namespaces: &[&str]) {
    let mut objects = component("spec-author-policy.yaml");
    for object in &mut objects {
        if object["kind"] == "ValidatingAdmissionPolicyBinding" {
            object["spec"]["matchResources"] = json!({"namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]}});
        }
    }
    manifests::apply(&env.client, &objects).await;
}

async fn remove_policies(client: &Client, names: &[&str]) {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    for name in names {
        let _ = bindings.delete(name, &DeleteParams::default()).await;
        let _ = policies.delete(name, &DeleteParams::default()).await;
    }
}

/// The component's RBAC for the core's ServiceAccount in the test namespace.
async fn core_access_rbac(env: &TestEnv) {
    let mut objects = component("rbac.yaml");
    manifests::retarget_namespace(&mut objects, &env.namespace);
    for object in &mut objects {
        if object["kind"] == "ClusterRoleBinding" {
            let name = object["metadata"]["name"].as_str().unwrap().to_string();
            object["metadata"]["name"] = json!(format!("{name}-{}", env.namespace));
        }
    }
    manifests::apply(&env.client, &objects).await;
}

/// Waits until the provider deploys `name` (`Deploying` or `Running`) with its Deployment.
async fn deployed(mds: &Api<ModelDeployment>, workloads: &Api<Deployment>, name: &str) {
    wait_for(mds, name, WAIT, "taken over by the provider", |md| {
        md.status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(|p| matches!(p, Phase::Deploying | Phase::Running))
    })
    .await;
    wait_for(workloads, name, WAIT, "created by the provider", |_| true).await;
}

/// A Role in `namespace` with `rules`, bound to `subjects`.
async fn grant(env: &TestEnv, namespace: &str, name: &str, rules: Value, subjects: Value) {
    manifests::apply(
        &env.client,
        &[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": name, "namespace": namespace}, "rules": rules}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": name, "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                   "subjects": subjects}),
        ],
    )
    .await;
}

/// SubjectAccessReviews `user` made so far, from the API server's audit log.
fn core_reviews(env: &TestEnv, user: &str) -> usize {
    let log = std::fs::read_to_string(audit_log_path(&env.control_plane.dir)).unwrap();
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["verb"] == "create"
                && e["objectRef"]["resource"] == "subjectaccessreviews"
                && e["user"]["username"] == user
        })
        .count()
}

fn user(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

fn group(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name})
}

/// An image on a loopback port nothing listens on: its resolution fails at once (the provider
/// deploys the tag as it is), and no request leaves the machine.
fn offline_image() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}/vllm/vllm-openai:offline")
}

fn vllm_deployment(name: &str) -> Value {
    static IMAGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(offline_image);
    json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": name},
           "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm", "image": *IMAGE},
                    "resources": {"gpu": {"count": 1}}, "provider": {"name": "vllm"}}})
}

async fn create(client: &Client, namespace: &str, object: &Value) -> Result<(), String> {
    let (code, _, body) = admission::create_raw(client, namespace, object).await;
    if code == 201 {
        Ok(())
    } else {
        Err(format!(
            "{code}: {}",
            body["message"].as_str().unwrap_or_default()
        ))
    }
}

fn message(error: kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message,
        other => other.to_string(),
    }
}

#[tokio::test]
async fn the_upstream_access_check_with_impersonated_users_and_the_spec_author_policy() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("access-check").await;
    let ns = env.namespace.clone();
    providers::delete_all(&env.client).await;
    // A second namespace the core's webhooks do not select: there the API server sees requests
    // as they come from the client, as when the webhook is down.
    let bare = format!("{ns}-bare");
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": bare}})).unwrap(),
        )
        .await
        .unwrap();

    // The core as its ServiceAccount with the shipped RBAC plus the component's, its webhooks,
    // and the flag the component's patch adds.
    let identity = admission::core_identity(&env).await;
    core_access_rbac(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let flag = component_core_flag();
    assert_eq!(flag, "--check-upstream-access=true");
    let mut extra = vec![flag.as_str(), "--upstream-access-cache-ttl=3s"];
    extra.extend_from_slice(&FAST_HEALTH);
    let core = admission::start_core(&env, &identity, port, &extra).await;
    wait_webhook_active(&env).await;
    // Created before the policy, where the webhook does not run: no author is recorded.
    create(&env.client, &bare, &vllm_deployment("unattributed"))
        .await
        .unwrap();
    install_spec_author_policy(&env, &[&ns, &bare]).await;

    // The real vLLM provider: its SDK registration lists what it creates.
    let provider_identity = stack::service_account_identity(
        &env,
        "deploy/providers/vllm/rbac.yaml",
        "airunway-provider-vllm",
    )
    .await;
    let _provider = stack::start_provider(
        &env,
        "airunway-provider-vllm",
        &provider_identity,
        &["--heartbeat-interval=1s"],
        "vllm-0",
    )
    .await;
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let registration = wait_for(&ipcs, "vllm", WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    assert_eq!(
        serde_json::to_value(&registration.spec.upstream_resources).unwrap(),
        json!([{"group": "apps", "resource": "deployments"}, {"group": "", "resource": "services"}])
    );

    // alice and bob (through group team-b) may write ModelDeployments; only team-b may create
    // the Deployments and Services the vLLM provider makes.
    grant(
        &env,
        &ns,
        "md-authors",
        json!([{"apiGroups": ["airunway.ai"], "resources": ["modeldeployments"],
                "verbs": ["get", "list", "watch", "create", "update", "patch"]}]),
        json!([user("alice"), group("team-b")]),
    )
    .await;
    grant(
        &env,
        &ns,
        "vllm-workloads",
        json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create"]},
               {"apiGroups": [""], "resources": ["services"], "verbs": ["create"]}]),
        json!([group("team-b")]),
    )
    .await;
    grant(
        &env,
        &bare,
        "md-authors",
        json!([{"apiGroups": ["airunway.ai"], "resources": ["modeldeployments"], "verbs": ["create"]}]),
        json!([group("team-b")]),
    )
    .await;
    let alice = env.impersonating("alice", &["team-a"]).await;
    let bob = env.impersonating("bob", &["team-b"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &ns);
    let workloads: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);

    // alice: admitted (the webhook records her, the policy agrees), then not selected, with the
    // permission she lacks named, a Warning event, and nothing created.
    let alice_mds: Api<ModelDeployment> = Api::namespaced(alice.clone(), &ns);
    alice_mds
        .patch(
            "alice-md",
            &PatchParams::apply("alice"),
            &Patch::Apply(vllm_deployment("alice-md")),
        )
        .await
        .unwrap();
    let (md, condition) = wait_for_condition(
        &mds,
        "alice-md",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::False,
    )
    .await;
    let denied = format!(
        "Provider vllm not selected: user \"alice\" may not create deployments.apps, services in namespace \"{ns}\" (the spec author, airunway.ai/spec-author); grant the user or one of their groups \"create\" on deployments.apps, services in \"{ns}\" (a Role and RoleBinding), or have a user who may change the spec"
    );
    assert_eq!(
        condition.reason.as_deref(),
        Some(reasons::access::UPSTREAM_ACCESS_DENIED)
    );
    assert_eq!(condition.message.as_deref(), Some(denied.as_str()));
    let recorded = md.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        recorded
            .get(annotations::access::SPEC_AUTHOR)
            .map(String::as_str),
        Some("alice")
    );
    assert_eq!(
        recorded
            .get(annotations::access::SPEC_AUTHOR_GROUPS)
            .map(String::as_str),
        Some("team-a,system:authenticated")
    );
    assert_eq!(md.selected_provider(), None);
    let events: Api<Event> = Api::namespaced(env.client.clone(), &ns);
    eventually("the Warning event of the denial", WAIT, || async {
        let list = events.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .any(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("alice-md")
                    && e.type_.as_deref() == Some("Warning")
                    && e.reason.as_deref() == Some(event_reasons::PROVIDER_SELECTION_FAILED)
                    && e.note.as_deref() == Some(denied.as_str())
            })
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "{:?}",
                    list.items.iter().map(|e| &e.note).collect::<Vec<_>>()
                )
            })
    })
    .await;
    // The same server-side apply again (no spec change): the recorded author stays, and the
    // policy lets it through.
    alice_mds
        .patch(
            "alice-md",
            &PatchParams::apply("alice"),
            &Patch::Apply(vllm_deployment("alice-md")),
        )
        .await
        .unwrap();

    // bob, through his group: selected and deployed by the real provider.
    let bob_mds: Api<ModelDeployment> = Api::namespaced(bob.clone(), &ns);
    bob_mds
        .create(
            &PostParams::default(),
            &serde_json::from_value(vllm_deployment("bob-md")).unwrap(),
        )
        .await
        .unwrap();
    let (md, condition) = wait_for_condition(
        &mds,
        "bob-md",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(md.selected_provider(), Some("vllm"), "{condition:?}");
    deployed(&mds, &workloads, "bob-md").await;

    // Still nothing for alice's deployment (its denial is re-checked every 3 s).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let created = workloads.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        created
            .items
            .iter()
            .filter_map(|d| d.metadata.name.clone())
            .collect::<Vec<_>>(),
        ["bob-md"]
    );
    let md = mds.get("alice-md").await.unwrap();
    assert_eq!(md.selected_provider(), None);
    assert!(
        !md.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f.contains("vllm")),
        "{:?}",
        md.metadata.finalizers
    );

    // No recorded author: denied, saying why.
    let bare_mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &bare);
    let (_, condition) = wait_for_condition(
        &bare_mds,
        "unattributed",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(
        condition.reason.as_deref(),
        Some(reasons::access::UPSTREAM_ACCESS_DENIED)
    );
    assert!(
        condition.message.as_deref().is_some_and(|m| m.starts_with(
            "Provider vllm not selected: no spec author is recorded (annotation airunway.ai/spec-author is missing)"
        )),
        "{condition:?}"
    );

    // A forged author: an annotation-only update is refused by the policy (the webhook does not
    // see it), whoever it names.
    let forged = json!({"metadata": {"annotations": {annotations::access::SPEC_AUTHOR: "bob"}}});
    let error = alice_mds
        .patch("alice-md", &PatchParams::default(), &Patch::Merge(&forged))
        .await
        .unwrap_err();
    assert!(
        message(error).contains("metadata.annotations[airunway.ai/spec-author] and [airunway.ai/spec-author-groups] record who last changed the spec: they change only with the spec"),
    );
    let cleared =
        json!({"metadata": {"annotations": {annotations::access::SPEC_AUTHOR_GROUPS: null}}});
    let error = alice_mds
        .patch("alice-md", &PatchParams::default(), &Patch::Merge(&cleared))
        .await
        .unwrap_err();
    assert!(message(error).contains("they change only with the spec"));
    // Where the webhook does not run (as when it is down), a create naming someone else is
    // refused, and so is one naming nobody.
    let mut claims_alice = vllm_deployment("forged");
    claims_alice["metadata"]["annotations"] = json!({annotations::access::SPEC_AUTHOR: "alice",
        annotations::access::SPEC_AUTHOR_GROUPS: "team-a,system:authenticated"});
    let refusal = eventually("the policy to refuse a forged author", WAIT, || async {
        match create(&bob, &bare, &claims_alice).await {
            Ok(()) => Err("admitted".to_string()),
            Err(message) => Ok(message),
        }
    })
    .await;
    assert!(
        refusal.contains(
            "metadata.annotations[airunway.ai/spec-author] must be the requesting user \"bob\" when the spec is created or changed, not \"alice\""
        ),
        "{refusal}"
    );
    let refusal = create(&env.client, &bare, &vllm_deployment("unrecorded"))
        .await
        .unwrap_err();
    assert!(refusal.contains("must be the requesting user"), "{refusal}");

    // bob changes alice's spec: he is its author now, and he may.
    bob_mds
        .patch(
            "alice-md",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": {"gpu": {"count": 2}}}})),
        )
        .await
        .unwrap();
    let (md, _) = wait_for_condition(
        &mds,
        "alice-md",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(
        md.metadata.annotations.unwrap_or_default()[annotations::access::SPEC_AUTHOR],
        "bob"
    );
    deployed(&mds, &workloads, "alice-md").await;

    // carol lacks the permission until it is granted: the cached denial expires and the
    // deployment is selected without a change of its own.
    grant(
        &env,
        &ns,
        "carol",
        json!([{"apiGroups": ["airunway.ai"], "resources": ["modeldeployments"], "verbs": ["create"]}]),
        json!([user("carol")]),
    )
    .await;
    let carol = env.impersonating("carol", &[]).await;
    // The API server's RBAC authorizer learns of the new binding from its own watch: the
    // first create may still be refused (a CI run saw that 403).
    eventually("carol may create deployments", WAIT, || async {
        create(&carol, &ns, &vllm_deployment("carol-md")).await
    })
    .await;
    wait_for_condition(
        &mds,
        "carol-md",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::False,
    )
    .await;
    grant(
        &env,
        &ns,
        "carol-workloads",
        json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create"]},
               {"apiGroups": [""], "resources": ["services"], "verbs": ["create"]}]),
        json!([user("carol")]),
    )
    .await;
    wait_for_condition(
        &mds,
        "carol-md",
        WAIT,
        condition_types::PROVIDER_SELECTED,
        ConditionStatus::True,
    )
    .await;
    deployed(&mds, &workloads, "carol-md").await;

    // Answers are cached: with nothing denied, five reconciles of bob's deployment in quick
    // succession (each a metadata change) ask at most once per resource (two
    // SubjectAccessReviews, none if the answers are still fresh), not once per pass (ten),
    // counted in the API server's audit log by the core's identity.
    let core_user = format!("system:serviceaccount:{ns}:airunway-core");
    let before = core_reviews(&env, &core_user);
    for i in 0..5 {
        mds.patch(
            "bob-md",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"example.com/pass": i.to_string()}}}),
            ),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let asked = core_reviews(&env, &core_user) - before;
    eprintln!("SubjectAccessReviews by the core: {before} before, {asked} for 5 reconciles");
    assert!(asked <= 2, "{asked} SubjectAccessReviews for 5 reconciles");
    assert!(before >= 6, "the checks above asked {before} times");

    // Clean up what is cluster-wide.
    mds.delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    bare_mds
        .delete_collection(&DeleteParams::default(), &Default::default())
        .await
        .unwrap();
    remove_policies(&env.client, &["airunway-spec-author"]).await;
    remove_webhooks(&env.client).await;
    let _ = namespaces.delete(&bare, &DeleteParams::default()).await;
    core.terminate(Duration::from_secs(10));
}

#[tokio::test]
async fn a_provider_service_account_writes_only_its_own_registration_and_objects() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("access-provider-identity").await;
    let ns = env.namespace.clone();
    providers::delete_all(&env.client).await;
    // The vLLM provider's shipped RBAC as it is installed (in airunway-system), plus write
    // access to every registration, so that what refuses below is the policy, not RBAC.
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let _ = namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "airunway-system"}})).unwrap(),
        )
        .await;
    manifests::apply(
        &env.client,
        &manifests::read(&paths::workspace_root().join("deploy/providers/vllm/rbac.yaml")),
    )
    .await;
    manifests::apply(
        &env.client,
        &[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "access-test-all-registrations"},
                   "rules": [{"apiGroups": ["airunway.ai"], "resources": ["inferenceproviderconfigs"],
                              "verbs": ["get", "create", "patch", "update", "delete"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "access-test-all-registrations"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "access-test-all-registrations"},
                   "subjects": [{"kind": "ServiceAccount", "name": "airunway-provider-vllm", "namespace": "airunway-system"}]}),
        ],
    )
    .await;
    manifests::apply(
        &env.client,
        &manifests::read(
            &paths::workspace_root().join("deploy/core/provider-identity-policy.yaml"),
        ),
    )
    .await;
    let vllm = env.impersonating(VLLM_SERVICE_ACCOUNT, &[]).await;

    // (a) Registrations. Creating llm-d's (server-side apply, as the SDK registers) is refused
    // once the policy is in effect; its own is written.
    let registration = |name: &str| {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
               "metadata": {"name": name}, "spec": {"documentation": "https://example.com"}})
    };
    let as_vllm: Api<InferenceProviderConfig> = Api::all(vllm.clone());
    let refused_registration = "ServiceAccount airunway-provider-vllm is the identity of provider vllm: it may write InferenceProviderConfig vllm only, not llmd";
    let refusal = eventually("the policy to refuse llmd's registration", WAIT, || async {
        match as_vllm
            .patch(
                "llmd",
                &PatchParams::apply("vllm-provider"),
                &Patch::Apply(registration("llmd")),
            )
            .await
        {
            Ok(_) => {
                let admin: Api<InferenceProviderConfig> = Api::all(env.client.clone());
                let _ = admin.delete("llmd", &DeleteParams::default()).await;
                Err("admitted".to_string())
            }
            Err(e) => Ok(message(e)),
        }
    })
    .await;
    assert!(refusal.contains(refused_registration), "{refusal}");
    as_vllm
        .patch(
            "vllm",
            &PatchParams::apply("vllm-provider"),
            &Patch::Apply(registration("vllm")),
        )
        .await
        .unwrap();
    // An administrator registers llm-d; the vLLM identity may not change it, nor its status,
    // nor delete it. It may change its own.
    let admin_ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    admin_ipcs
        .patch(
            "llmd",
            &PatchParams::apply("admin"),
            &Patch::Apply(registration("llmd")),
        )
        .await
        .unwrap();
    let change = json!({"metadata": {"annotations": {"example.com/x": "1"}}});
    let refusal = message(
        as_vllm
            .patch("llmd", &PatchParams::default(), &Patch::Merge(&change))
            .await
            .unwrap_err(),
    );
    assert!(refusal.contains(refused_registration), "{refusal}");
    let refusal = message(
        as_vllm
            .delete("llmd", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert!(refusal.contains(refused_registration), "{refusal}");
    as_vllm
        .patch("vllm", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();

    // (b) Deployments and Services: only those labelled airunway.ai/provider=vllm.
    let deployment = |name: &str, provider: Option<&str>| {
        let mut labels = json!({"app": name});
        if let Some(provider) = provider {
            labels[labels::PROVIDER] = json!(provider);
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": name, "namespace": ns, "labels": labels},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                                     "spec": {"containers": [{"name": "c", "image": "example.com/c:1"}]}}}})
    };
    manifests::apply(
        &env.client,
        &[
            deployment("llmd-owned", Some("llmd")),
            deployment("vllm-owned", Some("vllm")),
            deployment("unlabelled", None),
        ],
    )
    .await;
    let as_vllm_deployments: Api<Deployment> = Api::namespaced(vllm.clone(), &ns);
    let touch = json!({"metadata": {"annotations": {"example.com/touched": "1"}}});
    // Each policy takes effect a moment after it is created (a harmless annotation until then).
    let refusal = eventually("the policy to refuse llm-d's Deployment", WAIT, || async {
        match as_vllm_deployments
            .patch("llmd-owned", &PatchParams::default(), &Patch::Merge(&touch))
            .await
        {
            Ok(_) => Err("admitted".to_string()),
            Err(e) => Ok(message(e)),
        }
    })
    .await;
    assert!(
        refusal.contains(&format!("provider vllm may only write deployments labelled airunway.ai/provider=vllm; {ns}/llmd-owned is labelled airunway.ai/provider=llmd")),
        "{refusal}"
    );
    // Relabelling it as its own does not help: the object as it was is checked too.
    let relabel = json!({"metadata": {"labels": {labels::PROVIDER: "vllm"}}});
    let refusal = message(
        as_vllm_deployments
            .patch(
                "llmd-owned",
                &PatchParams::default(),
                &Patch::Merge(&relabel),
            )
            .await
            .unwrap_err(),
    );
    assert!(
        refusal.contains(&format!("provider vllm may only change or delete deployments labelled airunway.ai/provider=vllm; {ns}/llmd-owned is labelled airunway.ai/provider=llmd")),
        "{refusal}"
    );
    let refusal = message(
        as_vllm_deployments
            .patch("unlabelled", &PatchParams::default(), &Patch::Merge(&touch))
            .await
            .unwrap_err(),
    );
    assert!(
        refusal.contains("is labelled with no provider"),
        "{refusal}"
    );
    let refusal = message(
        as_vllm_deployments
            .delete("llmd-owned", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert!(
        refusal.contains("may only change or delete deployments"),
        "{refusal}"
    );
    // Its own: patched, applied server-side as the SDK does, created, deleted.
    as_vllm_deployments
        .patch("vllm-owned", &PatchParams::default(), &Patch::Merge(&touch))
        .await
        .unwrap();
    as_vllm_deployments
        .patch(
            "vllm-new",
            &PatchParams::apply("vllm-provider"),
            &Patch::Apply(deployment("vllm-new", Some("vllm"))),
        )
        .await
        .unwrap();
    let refusal = message(
        as_vllm_deployments
            .patch(
                "llmd-new",
                &PatchParams::apply("vllm-provider"),
                &Patch::Apply(deployment("llmd-new", Some("llmd"))),
            )
            .await
            .unwrap_err(),
    );
    assert!(refusal.contains("may only write deployments"), "{refusal}");
    as_vllm_deployments
        .delete("vllm-new", &DeleteParams::default())
        .await
        .unwrap();
    let service = |name: &str, provider: &str| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ns, "labels": {labels::PROVIDER: provider}},
               "spec": {"selector": {"app": name}, "ports": [{"port": 8000}]}})
    };
    let as_vllm_services: Api<Service> = Api::namespaced(vllm.clone(), &ns);
    let refusal = message(
        as_vllm_services
            .patch(
                "llmd-svc",
                &PatchParams::apply("vllm-provider"),
                &Patch::Apply(service("llmd-svc", "llmd")),
            )
            .await
            .unwrap_err(),
    );
    assert!(
        refusal.contains(&format!("provider vllm may only write services labelled airunway.ai/provider=vllm; {ns}/llmd-svc is labelled airunway.ai/provider=llmd")),
        "{refusal}"
    );
    as_vllm_services
        .patch(
            "vllm-svc",
            &PatchParams::apply("vllm-provider"),
            &Patch::Apply(service("vllm-svc", "vllm")),
        )
        .await
        .unwrap();
    // Others are not matched: an administrator changes llm-d's objects and registration.
    let admin_deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);
    admin_deployments
        .patch("llmd-owned", &PatchParams::default(), &Patch::Merge(&touch))
        .await
        .unwrap();
    admin_ipcs
        .patch("llmd", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();

    remove_policies(
        &env.client,
        &[
            "airunway-provider-registration",
            "airunway-provider-objects",
        ],
    )
    .await;
    providers::delete_all(&env.client).await;
}
