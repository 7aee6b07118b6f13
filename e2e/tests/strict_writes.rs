//! Strict upstream writes (issue 37): every upstream object a provider applies goes to the real
//! API server with server-side apply and `fieldValidation=Strict`; a field the installed schema
//! does not declare is refused, and the deployment shows `ResourceCreated=False`
//! `IncompatibleUpstream` naming the field, phase `Failed`, a Warning event, with the live
//! object left exactly as it was, no retry loop and no status churn; taking the field away
//! recovers.
//!
//! The first test records what the API server answers (custom resource and built-in kind, with
//! and without strict validation: a server-side apply is refused either way, with a 500) and
//! that the SDK's classifier reads the field from it. The
//! provider tests install a schema that lacks a field the provider renders on a path a user
//! reaches: the real CRD with that one property removed, standing for an upstream release
//! older than the provider (the provider's schema fingerprint covers only the paths it always
//! writes, so such a schema is still detected as supported).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use airunway_api::constants::{condition_types, event_reasons, reasons};
use airunway_api::kube_error::undeclared_fields;
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, Phase};
use airunway_e2e::control_plane::{crd_files, install_crds, read_crds, wait_crd_established};
use airunway_e2e::sandbox::kaito;
use airunway_e2e::stack::{self, FAST_HEALTH, Running};
use airunway_e2e::wait::{eventually, wait_deleted, wait_for};
use airunway_e2e::{TestEnv, cluster_lock, paths};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const DGD_CRD: &str = "dynamographdeployments.nvidia.com";
const WORKSPACE_CRD: &str = "workspaces.kaito.sh";
const MANAGER: &str = "airunway-e2e-strict";

/// The kind of `crd` at its storage version (read and written without conversion).
async fn storage_resource(env: &TestEnv, crd: &str) -> ApiResource {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd = crds.get(crd).await.unwrap();
    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .unwrap()
        .name
        .clone();
    ApiResource {
        group: crd.spec.group.clone(),
        api_version: format!("{}/{version}", crd.spec.group),
        version,
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    }
}

fn strict() -> PatchParams {
    PatchParams::apply(MANAGER).force().validation_strict()
}

/// The fields the classifier reads from a refused write, sorted.
fn refused_fields(error: &kube::Error) -> Vec<String> {
    let mut fields = undeclared_fields(error)
        .unwrap_or_else(|| panic!("not read as an undeclared-field refusal: {error:?}"));
    fields.sort();
    fields
}

fn code(error: &kube::Error) -> u16 {
    match error {
        kube::Error::Api(status) => status.code,
        other => panic!("not an API answer: {other:?}"),
    }
}

#[tokio::test]
async fn the_api_server_refuses_undeclared_fields_naming_them_and_writes_nothing() {
    // The other tests swap the CRDs this one writes to.
    let _lock = cluster_lock().await;
    let env = TestEnv::new("strict-answers").await;

    // A custom resource (the real DynamoGraphDeployment CRD).
    let resource = storage_resource(&env, DGD_CRD).await;
    let dgds: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &env.namespace, &resource);
    let dgd = |extra: Value| {
        let mut frontend = json!({"componentType": "frontend", "replicas": 1});
        let mut object = json!({"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": "probe"}, "spec": {"backendFramework": "vllm"}});
        if let Some(field) = extra.get("service") {
            frontend["notAField"] = field.clone();
        }
        if let Some(field) = extra.get("spec") {
            object["spec"]["alsoNotAField"] = field.clone();
        }
        // `v1beta1` (Dynamo >= 1.5's storage version) lists components by name, with a `type`.
        if resource.version == "v1alpha1" {
            object["spec"]["services"] = json!({"Frontend": frontend});
        } else {
            let map = frontend.as_object_mut().unwrap();
            map.remove("componentType");
            map.insert("name".into(), json!("Frontend"));
            map.insert("type".into(), json!("frontend"));
            object["spec"]["components"] = json!([frontend]);
        }
        object
    };
    let refused = dgds
        .patch(
            "probe",
            &strict(),
            &Patch::Apply(dgd(json!({"service": "x", "spec": 1}))),
        )
        .await
        .unwrap_err();
    println!(
        "custom resource, create, SSA + Strict: {} {:?}",
        code(&refused),
        airunway_api::kube_error::message(&refused)
    );
    // The field manager names one or both undeclared fields (seen both ways), in no fixed
    // order; the classifier sorts them.
    let among_both = |fields: &[String]| {
        !fields.is_empty()
            && fields.len() <= 2
            && fields.is_sorted()
            && fields
                .iter()
                .all(|f| f == "spec.alsoNotAField" || f.ends_with(".notAField"))
    };
    let fields = refused_fields(&refused);
    assert!(among_both(&fields), "{fields:?}");
    assert!(
        dgds.get_opt("probe").await.unwrap().is_none(),
        "a refused create creates nothing"
    );

    // Without `fieldValidation` the API server answers the same: a server-side apply never
    // prunes an undeclared field (the field manager's typed conversion refuses it), so the
    // classifier matters for every apply, strict or not.
    let lenient = dgds
        .patch(
            "probe",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(dgd(json!({"service": "x", "spec": 1}))),
        )
        .await
        .unwrap_err();
    println!(
        "custom resource, SSA without fieldValidation: {} {:?}",
        code(&lenient),
        airunway_api::kube_error::message(&lenient)
    );
    let lenient_fields = refused_fields(&lenient);
    assert!(among_both(&lenient_fields), "{lenient_fields:?}");

    // An update: the live object stays as it was.
    let before = dgds
        .patch("probe", &strict(), &Patch::Apply(dgd(json!({}))))
        .await
        .unwrap();
    let refused = dgds
        .patch(
            "probe",
            &strict(),
            &Patch::Apply(dgd(json!({"service": {"deep": true}}))),
        )
        .await
        .unwrap_err();
    println!(
        "custom resource, update, SSA + Strict: {} {:?}",
        code(&refused),
        airunway_api::kube_error::message(&refused)
    );
    assert_eq!(refused_fields(&refused).len(), 1);
    let after = dgds.get("probe").await.unwrap();
    assert_eq!(after.resource_version(), before.resource_version());
    assert_eq!(after.data["spec"], before.data["spec"]);

    // A built-in kind: a ConfigMap and a Deployment's container.
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let refused = config_maps
        .patch(
            "probe",
            &strict(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "probe"}, "data": {"a": "b"}, "spec": {"foo": 1}})),
        )
        .await
        .unwrap_err();
    println!(
        "ConfigMap, SSA + Strict: {} {:?}",
        code(&refused),
        airunway_api::kube_error::message(&refused)
    );
    assert_eq!(refused_fields(&refused), vec!["spec".to_string()]);
    assert!(config_maps.get_opt("probe").await.unwrap().is_none());
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "probe"},
        "spec": {"selector": {"matchLabels": {"app": "probe"}}, "template": {"metadata": {"labels": {"app": "probe"}},
            "spec": {"containers": [{"name": "main", "image": "busybox", "notAField": true}]}}}});
    let refused = deployments
        .patch("probe", &strict(), &Patch::Apply(&deployment))
        .await
        .unwrap_err();
    println!(
        "Deployment, SSA + Strict: {} {:?}",
        code(&refused),
        airunway_api::kube_error::message(&refused)
    );
    let fields = refused_fields(&refused);
    assert!(
        fields.len() == 1 && fields[0].starts_with("spec.template.spec.containers"),
        "{fields:?}"
    );
    let lenient = deployments
        .patch(
            "probe",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&deployment),
        )
        .await
        .unwrap_err();
    println!(
        "Deployment, SSA without fieldValidation: {} {:?}",
        code(&lenient),
        airunway_api::kube_error::message(&lenient)
    );
    assert_eq!(refused_fields(&lenient), fields);
    assert!(deployments.get_opt("probe").await.unwrap().is_none());
    dgds.delete("probe", &DeleteParams::default()).await.ok();
}

/// `crd` minus what `remove` takes out of each version's schema.
fn narrowed(mut crd: Value, remove: impl Fn(&mut Value)) -> Value {
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        remove(&mut version["schema"]["openAPIV3Schema"]);
    }
    crd
}

/// Replaces CRD `name` with its installed form minus what `remove` takes out of each version's
/// schema, and waits until a strict dry-run of `probe_object` is refused.
async fn narrow_crd(
    env: &TestEnv,
    name: &str,
    remove: impl Fn(&mut Value),
    probe: &Api<DynamicObject>,
    probe_object: Value,
) {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd = narrowed(
        serde_json::to_value(crds.get(name).await.unwrap()).unwrap(),
        remove,
    );
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    crds.replace(name, &PostParams::default(), &crd)
        .await
        .unwrap();
    wait_refused(probe, probe_object).await;
}

/// Waits until a strict dry-run of `probe_object` is refused for an undeclared field (the API
/// server's schema for the kind follows its CRD within moments).
async fn wait_refused(probe: &Api<DynamicObject>, probe_object: Value) {
    let mut dry_run = strict();
    dry_run.dry_run = true;
    let probe_name = probe_object["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    eventually("the narrowed schema in force", WAIT, || {
        let (probe, body, params, probe_name) = (
            probe.clone(),
            probe_object.clone(),
            dry_run.clone(),
            probe_name.clone(),
        );
        async move {
            match probe.patch(&probe_name, &params, &Patch::Apply(body)).await {
                Err(e) if undeclared_fields(&e).is_some() => Ok(()),
                Err(e) => Err(format!("not refused as undeclared yet: {e}")),
                Ok(_) => Err("accepted".to_string()),
            }
        }
    })
    .await;
}

/// The Dynamo 1.1 DynamoGraphDeployment CRD (`v1alpha1` only), as Dynamo published it: in
/// `upstream-crd-versions/dynamo-1.1/` once the default fixture is Dynamo >= 1.5 (issue 37),
/// the default fixture before.
fn dynamo_1_1_crd() -> Value {
    let fixtures = paths::fixtures_dir();
    let moved =
        fixtures.join("upstream-crd-versions/dynamo-1.1/nvidia.com_dynamographdeployments.yaml");
    let path = if moved.exists() {
        moved
    } else {
        fixtures.join("upstream-crds/dynamo/nvidia.com_dynamographdeployments.yaml")
    };
    let crd = read_crds(&path).unwrap().remove(0);
    let served: Vec<&str> = crd
        .spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(served, ["v1alpha1"], "{}", path.display());
    serde_json::to_value(crd).unwrap()
}

/// Deletes CRD `name` (with its objects) and creates `crd` in its place, Established. A
/// replacement could not drop a version the installed CRD stored (`status.storedVersions`).
async fn swap_crd(env: &TestEnv, name: &str, crd: &Value) {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    if crds.get_opt(name).await.unwrap().is_some() {
        crds.delete(name, &DeleteParams::default()).await.unwrap();
        wait_deleted(&crds, name, Duration::from_secs(60)).await;
    }
    let mut crd = crd.clone();
    crd["metadata"]
        .as_object_mut()
        .unwrap()
        .retain(|key, _| key == "name" || key == "annotations" || key == "labels");
    crd.as_object_mut().unwrap().remove("status");
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    wait_crd_established(&env.client, name, Duration::from_secs(60))
        .await
        .unwrap();
}

/// Installs CRD `name` again as the harness installs it.
async fn restore_crd(env: &TestEnv, name: &str) {
    let files: Vec<_> = crd_files()
        .unwrap()
        .into_iter()
        .filter(|f| {
            read_crds(f)
                .unwrap()
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(name))
        })
        .collect();
    install_crds(&env.client, &files).await.unwrap();
}

/// Removes every property named `property` anywhere in `schema`.
fn remove_property_everywhere(schema: &mut Value, property: &str) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                properties.remove(property);
            }
            for value in map.values_mut() {
                remove_property_everywhere(value, property);
            }
        }
        Value::Array(items) => {
            for value in items {
                remove_property_everywhere(value, property);
            }
        }
        _ => {}
    }
}

fn deployment(name: &str, spec: Value) -> ModelDeployment {
    serde_json::from_value(
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

fn condition_reason(md: &ModelDeployment, type_: &str) -> Option<(ConditionStatus, String)> {
    md.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason.clone().unwrap_or_default()))
}

fn is_incompatible_upstream(md: &ModelDeployment) -> bool {
    condition_reason(md, condition_types::RESOURCE_CREATED)
        == Some((
            ConditionStatus::False,
            reasons::INCOMPATIBLE_UPSTREAM.to_string(),
        ))
}

fn is_created(md: &ModelDeployment) -> bool {
    condition_reason(md, condition_types::RESOURCE_CREATED)
        .is_some_and(|(s, _)| s == ConditionStatus::True)
}

/// What a refusal must show: `Failed`, `ResourceCreated=False` `IncompatibleUpstream` and
/// `Ready=False` `IncompatibleUpstream`, still compatible, the message naming `field` (a path ending in it) and the
/// installed schema's `api_version`.
fn assert_refusal_shown(md: &ModelDeployment, field: &str, api_version: &str) {
    assert_eq!(md.phase(), Some(Phase::Failed));
    let status = md.status.as_ref().unwrap();
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("Incompatible with the installed upstream: the installed ")
            && message.contains(&format!("schema ({api_version}) does not declare field "))
            && message.contains(&format!(".{field}, which this provider renders")),
        "{message}"
    );
    assert_eq!(
        condition_reason(md, condition_types::READY),
        Some((
            ConditionStatus::False,
            reasons::INCOMPATIBLE_UPSTREAM.to_string()
        ))
    );
    assert_eq!(
        condition_reason(md, condition_types::PROVIDER_COMPATIBLE).map(|(s, _)| s),
        Some(ConditionStatus::True),
        "the configuration is compatible; the installed upstream is not"
    );
    assert!(status.endpoint.is_none() && status.replicas.is_none());
}

/// Waits `quiet` and asserts the deployment was not written meanwhile (no retry loop, no status
/// churn while the refusal stands).
async fn assert_settled(mds: &Api<ModelDeployment>, name: &str, quiet: Duration) {
    let before = mds.get(name).await.unwrap().resource_version();
    tokio::time::sleep(quiet).await;
    let after = mds.get(name).await.unwrap().resource_version();
    assert_eq!(before, after, "{name} written while its refusal stands");
}

fn stop(running: Vec<Running>) {
    for running in running {
        running.process.terminate(Duration::from_secs(10));
    }
}

async fn start_provider(env: &TestEnv, name: &str, extra: &[&str]) -> Running {
    let binary = format!("airunway-provider-{name}");
    let identity = stack::service_account_identity(
        env,
        &format!("deploy/providers/{name}/rbac.yaml"),
        &binary,
    )
    .await;
    let running = stack::start_provider(
        env,
        &binary,
        &identity,
        &[&["--heartbeat-interval=1s"], extra].concat(),
        &format!("{name}-0"),
    )
    .await;
    let ipcs: Api<airunway_api::v1alpha1::InferenceProviderConfig> = Api::all(env.client.clone());
    wait_for(&ipcs, name, WAIT, "ready", |i| {
        i.status.as_ref().and_then(|s| s.ready) == Some(true)
    })
    .await;
    running
}

/// Dynamo: the Dynamo 1.1 DynamoGraphDeployment CRD (`v1alpha1` only, installed explicitly)
/// without `eppConfig`, standing for a Dynamo older than the endpoint picker this provider
/// configures when `spec.gateway.enabled` is true.
#[tokio::test]
async fn dynamo_refusal_names_the_field_leaves_the_graph_as_it_was_and_recovers() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("strict-dynamo").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    let full = dynamo_1_1_crd();
    let without_epp = narrowed(full.clone(), |schema| {
        remove_property_everywhere(schema, "eppConfig")
    });
    swap_crd(&env, DGD_CRD, &without_epp).await;
    let resource = storage_resource(&env, DGD_CRD).await;
    assert_eq!(resource.api_version, "nvidia.com/v1alpha1");
    let dgds: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &env.namespace, &resource);
    wait_refused(
        &dgds,
        json!({"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": "probe"},
            "spec": {"services": {"Epp": {"componentType": "epp", "eppConfig": {}}}}}),
    )
    .await;

    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    // A short resync: the refused apply is tried again every 4 s, and the status must not
    // change for it (and the restored schema is picked up by the resync alone).
    let dynamo = start_provider(&env, "dynamo", &["--resync-interval=4s"]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let spec = |gateway: bool| {
        let mut spec = json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "resources": {"gpu": {"count": 1}}, "provider": {"name": "dynamo"}});
        if gateway {
            spec["gateway"] = json!({"enabled": true});
        }
        spec
    };

    // An existing graph: an update that adds the field is refused and changes nothing.
    mds.create(&PostParams::default(), &deployment("chat", spec(false)))
        .await
        .unwrap();
    wait_for(&mds, "chat", WAIT, "the graph created", is_created).await;
    let before = dgds.get("chat").await.unwrap();
    mds.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gateway": {"enabled": true}}})),
    )
    .await
    .unwrap();
    let refused = wait_for(
        &mds,
        "chat",
        WAIT,
        "IncompatibleUpstream",
        is_incompatible_upstream,
    )
    .await;
    assert_refusal_shown(&refused, "eppConfig", &resource.api_version);
    println!(
        "refused update: {}",
        refused.status.as_ref().unwrap().message.as_deref().unwrap()
    );
    let notes = env
        .wait_for_event(event_reasons::INCOMPATIBLE_UPSTREAM, |n| {
            n.contains("eppConfig")
        })
        .await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    let after = dgds.get("chat").await.unwrap();
    assert_eq!(after.resource_version(), before.resource_version());
    assert_eq!(after.data["spec"], before.data["spec"]);
    assert_settled(&mds, "chat", Duration::from_secs(9)).await;

    // A new deployment with the field: nothing is created.
    mds.create(&PostParams::default(), &deployment("fresh", spec(true)))
        .await
        .unwrap();
    let refused = wait_for(
        &mds,
        "fresh",
        WAIT,
        "IncompatibleUpstream",
        is_incompatible_upstream,
    )
    .await;
    assert_refusal_shown(&refused, "eppConfig", &resource.api_version);
    assert!(dgds.get_opt("fresh").await.unwrap().is_none());

    // The case: a `v1beta1`-only field (`podTemplate`, the pod template of a Dynamo >=
    // 1.5 component) written in the `v1alpha1` shape against Dynamo 1.1's `v1alpha1`-only
    // schema, through the graph's own overrides: refused naming it, nothing created.
    let mut beta_field = spec(false);
    beta_field["provider"]["overrides"] = json!({"spec": {"services": {"Frontend": {
        "podTemplate": {"metadata": {"labels": {"team": "a"}}}}}}});
    mds.create(
        &PostParams::default(),
        &deployment("beta-field", beta_field),
    )
    .await
    .unwrap();
    let refused = wait_for(
        &mds,
        "beta-field",
        WAIT,
        "IncompatibleUpstream",
        is_incompatible_upstream,
    )
    .await;
    assert_refusal_shown(&refused, "podTemplate", &resource.api_version);
    assert!(
        refused
            .status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .is_some_and(|m| m.contains("spec.services.Frontend.podTemplate")),
        "{:?}",
        refused.status
    );
    assert!(dgds.get_opt("beta-field").await.unwrap().is_none());
    mds.delete("beta-field", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&mds, "beta-field", WAIT).await;

    // Taking the field away recovers on the normal path.
    mds.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gateway": null}})),
    )
    .await
    .unwrap();
    let recovered = wait_for(&mds, "chat", WAIT, "the graph in use again", |md| {
        is_created(md) && md.phase() == Some(Phase::Deploying)
    })
    .await;
    assert!(
        condition_reason(&recovered, condition_types::RESOURCE_CREATED)
            .unwrap()
            .1
            == reasons::RESOURCE_CREATED
    );
    assert_eq!(
        dgds.get("chat").await.unwrap().data["spec"],
        before.data["spec"]
    );

    // The schema with the field back: the refused deployment is created at the next resync
    // (the fingerprint of the paths the provider always writes did not change, so the
    // detection did not either; no deployment change needed).
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let mut fixed = full.clone();
    fixed["metadata"]["resourceVersion"] =
        json!(crds.get(DGD_CRD).await.unwrap().resource_version());
    let fixed: CustomResourceDefinition = serde_json::from_value(fixed).unwrap();
    crds.replace(DGD_CRD, &PostParams::default(), &fixed)
        .await
        .unwrap();
    wait_for(
        &mds,
        "fresh",
        Duration::from_secs(60),
        "created once the schema knows the field",
        is_created,
    )
    .await;
    let fresh = dgds.get("fresh").await.unwrap();
    assert!(fresh.data["spec"].to_string().contains("eppConfig"));

    for name in ["chat", "fresh"] {
        mds.delete(name, &DeleteParams::default()).await.unwrap();
        wait_deleted(&mds, name, WAIT).await;
    }
    stop(vec![dynamo, core]);
    // The default DGD CRD back, as the harness installs it.
    crds.delete(DGD_CRD, &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&crds, DGD_CRD, Duration::from_secs(60)).await;
    restore_crd(&env, DGD_CRD).await;
}

/// KAITO: a Workspace schema without `inference.config` (KAITO before its inference
/// ConfigMaps), and the documented override `{inference: {config: <name>}}`.
#[tokio::test]
async fn kaito_override_unknown_to_the_installed_workspace_is_refused_naming_it() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("strict-kaito").await;
    airunway_e2e::providers::delete_all(&env.client).await;
    kaito::install_controller_stand_in(&env.client)
        .await
        .unwrap();
    let resource = storage_resource(&env, WORKSPACE_CRD).await;
    let workspaces: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &env.namespace, &resource);
    narrow_crd(
        &env,
        WORKSPACE_CRD,
        |schema| {
            if let Some(inference) = schema["properties"]["inference"]["properties"].as_object_mut()
            {
                inference.remove("config");
            }
        },
        &workspaces,
        json!({"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": "probe"}, "inference": {"config": "c"}}),
    )
    .await;

    let core = stack::start_core(&env, &env.control_plane.kubeconfig, &FAST_HEALTH, "core").await;
    let provider = start_provider(&env, "kaito", &[]).await;
    let mds: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    mds.create(&PostParams::default(), &deployment("phi", json!({"model": {"id": "microsoft/Phi-4-mini-instruct"},
        "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "kaito"}})))
        .await
        .unwrap();
    wait_for(&mds, "phi", WAIT, "the workspace created", is_created).await;
    let before = workspaces.get("phi").await.unwrap();

    mds.patch(
        "phi",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"provider": {"overrides": {"inference": {"config": "my-vllm-config"}}}}})),
    )
    .await
    .unwrap();
    let refused = wait_for(
        &mds,
        "phi",
        WAIT,
        "IncompatibleUpstream",
        is_incompatible_upstream,
    )
    .await;
    assert_refusal_shown(&refused, "config", &resource.api_version);
    let message = refused.status.as_ref().unwrap().message.clone().unwrap();
    assert!(message.contains("field inference.config,"), "{message}");
    println!("refused update: {message}");
    env.wait_for_event(event_reasons::INCOMPATIBLE_UPSTREAM, |n| {
        n.contains("inference.config")
    })
    .await;
    let after = workspaces.get("phi").await.unwrap();
    assert_eq!(after.resource_version(), before.resource_version());
    assert_eq!(after.data["inference"], before.data["inference"]);
    assert_settled(&mds, "phi", Duration::from_secs(6)).await;

    mds.patch(
        "phi",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"provider": {"overrides": null}}})),
    )
    .await
    .unwrap();
    wait_for(&mds, "phi", WAIT, "the workspace in use again", |md| {
        is_created(md) && md.phase() == Some(Phase::Deploying)
    })
    .await;
    assert_eq!(
        workspaces.get("phi").await.unwrap().data["inference"],
        before.data["inference"]
    );

    restore_crd(&env, WORKSPACE_CRD).await;
    mds.delete("phi", &DeleteParams::default()).await.unwrap();
    stop(vec![provider, core]);
}
