//! A played Dynamo conversion webhook for `dynamographdeployments.nvidia.com`.
//!
//! Dynamo >= 1.5 serves DynamoGraphDeployment as `v1alpha1` (deprecated) and `v1beta1` (the
//! storage version) and converts between them in its operator's webhook
//! (`deploy/operator/api/v1alpha1/*_conversion.go` in ai-dynamo/dynamo). That operator cannot run
//! here (its Go module is not served), so the harness plays its webhook: [`convert`] follows
//! Dynamo's mapping rules, [`server::PlayedConversionWebhook`] serves them over TLS to the API
//! server. What is played and what differs from Dynamo is listed in docs/testing.md.
//!
//! The mapping (Dynamo's, for the fields AI Runway's Dynamo provider writes and the common ones):
//! - `spec.services` (a map) <-> `spec.components` (a list keyed by `name`, sorted by name);
//!   `componentType: worker` with `subComponentType: prefill|decode` <-> `type: prefill|decode`;
//!   `envs` <-> `env`; `topologyConstraint.topologyProfile` <-> `clusterTopologyName`;
//! - per component, the flat pod fields (`resources` with `gpu`/`gpuType`, `envs`,
//!   `envFromSecret`, `volumeMounts`, probes, `extraPodMetadata`, `extraPodSpec` and its
//!   `mainContainer`) <-> one `podTemplate` whose container `main` holds them;
//!   `volumeMounts[].useAsCompilationCache` <-> `compilationCache`; `frontendSidecar` (a struct)
//!   <-> a container `sidecar-frontend` named by `frontendSidecar`; `sharedMemory` <->
//!   `sharedMemorySize`; `scalingAdapter.enabled` <-> `scalingAdapter: {}`;
//! - status: `services` <-> `components` (`componentName` is the last of `componentNames`),
//!   `rollingUpdate.updatedServices` <-> `updatedComponents`.
//!
//! Lossless round trip, the way Dynamo keeps it: what the target version cannot represent is
//! kept in the private annotations `nvidia.com/dgd-spec` and `nvidia.com/dgd-status` of the
//! converted object and consumed on the way back. Dynamo stores typed sparse structs there; the
//! played webhook stores a JSON Patch (RFC 6902) from the round-trip image to the source, with a
//! digest of the converted object: on the way back the patch is applied when the object was not
//! changed since (exact identity), and otherwise only the source-only fields Dynamo keeps by
//! service name (`pvcs`, a service's `dynamoNamespace`, `serviceName`, `subComponentType`) and
//! the order of `v1beta1` components are restored — the live fields always win.

pub mod server;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The CRD the played webhook converts.
pub const CRD_NAME: &str = "dynamographdeployments.nvidia.com";
/// The kind it converts.
pub const KIND: &str = "DynamoGraphDeployment";
/// The deprecated version.
pub const V1ALPHA1: &str = "nvidia.com/v1alpha1";
/// The storage version of Dynamo >= 1.5.
pub const V1BETA1: &str = "nvidia.com/v1beta1";
/// Dynamo's private annotation for the spec fields the other version cannot represent.
pub const SPEC_ANNOTATION: &str = "nvidia.com/dgd-spec";
/// Dynamo's private annotation for the status fields the other version cannot represent.
pub const STATUS_ANNOTATION: &str = "nvidia.com/dgd-status";

/// The container Dynamo's `v1beta1` pod template names for the engine.
const MAIN_CONTAINER: &str = "main";
/// The container the `v1alpha1` frontend sidecar becomes.
const FRONTEND_SIDECAR: &str = "sidecar-frontend";
/// The resource a `v1alpha1` `gpu` without `gpuType` counts.
const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The payload format this webhook writes in the private annotations.
const PAYLOAD_VERSION: u64 = 1;

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The object is not a DynamoGraphDeployment.
    #[error("the played Dynamo conversion webhook converts {KIND} only, not {0:?}")]
    WrongKind(String),
    /// A version this webhook does not convert from or to.
    #[error("cannot convert {KIND} from {from:?} to {to:?} (served: {V1ALPHA1}, {V1BETA1})")]
    UnsupportedVersion {
        /// The object's `apiVersion`.
        from: String,
        /// The requested `apiVersion`.
        to: String,
    },
    /// A field does not have the shape both versions require.
    #[error("{path}: {message}")]
    Malformed {
        /// Where in the object.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl ConversionError {
    /// A stable, low-cardinality name for logs and responses.
    pub fn category(&self) -> &'static str {
        match self {
            ConversionError::WrongKind(_) => "wrong_kind",
            ConversionError::UnsupportedVersion { .. } => "unsupported_version",
            ConversionError::Malformed { .. } => "malformed",
        }
    }
}

/// The two served versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    Alpha,
    Beta,
}

impl Version {
    fn parse(api_version: &str) -> Option<Version> {
        match api_version {
            V1ALPHA1 => Some(Version::Alpha),
            V1BETA1 => Some(Version::Beta),
            _ => None,
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Version::Alpha => V1ALPHA1,
            Version::Beta => V1BETA1,
        }
    }
}

/// Converts one DynamoGraphDeployment to `desired_api_version`, as Dynamo's webhook does:
/// metadata is kept except the private annotations, `spec` and `status` are mapped.
pub fn convert(object: &Value, desired_api_version: &str) -> Result<Value, ConversionError> {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != KIND {
        return Err(ConversionError::WrongKind(kind.to_string()));
    }
    let from_text = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let unsupported = || ConversionError::UnsupportedVersion {
        from: from_text.to_string(),
        to: desired_api_version.to_string(),
    };
    let from = Version::parse(from_text).ok_or_else(unsupported)?;
    let to = Version::parse(desired_api_version).ok_or_else(unsupported)?;
    let mut out = object.clone();
    // The API server also converts partial objects (server-side apply's managed fields, which
    // carry no metadata) and refuses a converted object without `metadata`, as controller-runtime
    // never answers one.
    ensure_object(&mut out, "metadata");
    if from == to {
        return Ok(out);
    }
    out["apiVersion"] = json!(to.api_version());
    let mut annotations = take_private_annotations(&mut out);
    for (field, annotation) in [("spec", SPEC_ANNOTATION), ("status", STATUS_ANNOTATION)] {
        let payload = annotations
            .remove(annotation)
            .and_then(|text| text.as_str().and_then(Payload::parse));
        let Some(source) = object.get(field) else {
            continue;
        };
        let (converted, saved) = convert_part(field, source, from, to, payload)?;
        out[field] = converted;
        if let Some(saved) = saved {
            annotations.insert(annotation.to_string(), Value::String(saved.to_text()));
        }
    }
    if !annotations.is_empty() {
        let metadata = ensure_object(&mut out, "metadata");
        let target = ensure_object_in(metadata, "annotations");
        target.extend(annotations);
    }
    Ok(out)
}

/// Converts `spec` or `status` (`field`) and returns it with the payload to save, if any.
fn convert_part(
    field: &str,
    source: &Value,
    from: Version,
    to: Version,
    payload: Option<Payload>,
) -> Result<(Value, Option<Payload>), ConversionError> {
    let map = |value: &Value, from: Version| -> Result<Value, ConversionError> {
        match (field, from) {
            ("spec", Version::Alpha) => spec_to_beta(value),
            ("spec", Version::Beta) => spec_to_alpha(value),
            (_, Version::Alpha) => status_to_beta(value),
            (_, Version::Beta) => status_to_alpha(value),
        }
    };
    let mut converted = map(source, from)?;
    // Restore what a previous conversion from `to` kept of the original object.
    if let Some(payload) = payload.filter(|p| p.from == to) {
        if payload.expect == digest(source) {
            apply_ops(&mut converted, &payload.ops, |_| true);
        } else {
            if to == Version::Alpha && field == "spec" {
                let additions: Vec<Value> = payload
                    .ops
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|op| {
                        op.get("op").and_then(Value::as_str) == Some("add")
                            && is_alpha_only_spec_path(op_path(op))
                            && converted.pointer(op_path(op)).is_none()
                    })
                    .cloned()
                    .collect();
                apply_ops(&mut converted, &Value::Array(additions), |_| true);
            }
            // The order of `v1beta1` components, matched by name (Dynamo keeps it too).
            if let Some(order) = &payload.order {
                reorder_components(&mut converted, order);
            }
        }
    }
    // Keep what the target cannot represent of the source.
    let image = map(&converted, to)?;
    let ops = json_patch::diff(&image, source);
    let saved = (!ops.0.is_empty()).then(|| Payload {
        from,
        expect: digest(&converted),
        ops: serde_json::to_value(&ops).unwrap_or(Value::Null),
        order: (field == "spec" && from == Version::Beta)
            .then(|| component_names(source))
            .flatten(),
    });
    Ok((converted, saved))
}

/// The names of `spec.components`, in their order, when that order is not the sorted one the
/// conversion from `v1alpha1` gives.
fn component_names(spec: &Value) -> Option<Vec<String>> {
    let names: Vec<String> = spec
        .get("components")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    (names != sorted).then_some(names)
}

/// Orders `spec.components` as `order` names them; components it does not name keep their
/// (sorted) order after those it does.
fn reorder_components(spec: &mut Value, order: &[String]) {
    let Some(components) = spec.get_mut("components").and_then(Value::as_array_mut) else {
        return;
    };
    let rank = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .and_then(|n| order.iter().position(|o| o == n))
            .unwrap_or(order.len())
    };
    components.sort_by_key(rank);
}

/// A payload of the private annotations, as this webhook writes it.
#[derive(Debug)]
struct Payload {
    /// The version of the object the payload was kept from.
    from: Version,
    /// The digest of the converted object the payload belongs to.
    expect: String,
    /// JSON Patch from the round-trip image of the converted object to the original.
    ops: Value,
    /// The original order of `v1beta1` components, when it was not sorted by name.
    order: Option<Vec<String>>,
}

impl Payload {
    /// Best effort, like Dynamo: an annotation this webhook did not write is ignored.
    fn parse(text: &str) -> Option<Payload> {
        let value: Value = serde_json::from_str(text).ok()?;
        if value.get("version")?.as_u64()? != PAYLOAD_VERSION {
            return None;
        }
        Some(Payload {
            from: Version::parse(value.get("from")?.as_str()?)?,
            expect: value.get("expect")?.as_str()?.to_string(),
            ops: value.get("patch")?.clone(),
            order: value
                .get("order")
                .and_then(|o| serde_json::from_value(o.clone()).ok()),
        })
    }

    fn to_text(&self) -> String {
        let mut text = json!({
            "version": PAYLOAD_VERSION,
            "from": self.from.api_version(),
            "expect": self.expect,
            "patch": self.ops,
        });
        if let Some(order) = &self.order {
            text["order"] = json!(order);
        }
        text.to_string()
    }
}

/// Applies the operations of `ops` that `keep` accepts, one by one; an operation that does not
/// apply to the live object (its place is gone) is skipped.
fn apply_ops(target: &mut Value, ops: &Value, keep: impl Fn(&Value) -> bool) {
    for op in ops.as_array().into_iter().flatten().filter(|op| keep(op)) {
        if let Ok(op) = serde_json::from_value::<json_patch::PatchOperation>(op.clone()) {
            let mut candidate = target.clone();
            if json_patch::patch(&mut candidate, std::slice::from_ref(&op)).is_ok() {
                *target = candidate;
            }
        }
    }
}

fn op_path(op: &Value) -> &str {
    op.get("path").and_then(Value::as_str).unwrap_or("")
}

/// The `v1alpha1` spec fields `v1beta1` cannot represent that Dynamo keeps by service name even
/// when the object changed in `v1beta1` (additions only: they never override a live field).
fn is_alpha_only_spec_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    matches!(
        parts.as_slice(),
        ["pvcs", ..]
            | [
                "services",
                _,
                "dynamoNamespace" | "serviceName" | "subComponentType"
            ]
    )
}

/// The private annotations of `object`, removed from it (Dynamo scrubs them the same way).
fn take_private_annotations(object: &mut Value) -> Map<String, Value> {
    let mut taken = Map::new();
    let Some(annotations) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    else {
        return taken;
    };
    for key in [SPEC_ANNOTATION, STATUS_ANNOTATION] {
        if let Some(value) = annotations.remove(key) {
            taken.insert(key.to_string(), value);
        }
    }
    if annotations.is_empty()
        && let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.remove("annotations");
    }
    taken
}

/// A digest of `value` that does not depend on key order.
fn digest(value: &Value) -> String {
    fn canonical(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                out.push('{');
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    canonical(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    canonical(value, &mut text);
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn ensure_object<'a>(value: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !value.get(key).is_some_and(Value::is_object) {
        value[key] = json!({});
    }
    match value.get_mut(key) {
        Some(Value::Object(map)) => map,
        _ => unreachable!("set to an object just above"),
    }
}

fn ensure_object_in<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = map.entry(key.to_string()).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(inner) => inner,
        _ => unreachable!("set to an object just above"),
    }
}

fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ConversionError> {
    value.as_object().ok_or_else(|| ConversionError::Malformed {
        path: path.to_string(),
        message: "expected an object".to_string(),
    })
}

/// Copies `keys` of `from` that are present into `to`, renamed where a pair says so.
fn copy_keys(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[(&str, &str)]) {
    for (source, target) in keys {
        if let Some(value) = from.get(*source) {
            to.insert((*target).to_string(), value.clone());
        }
    }
}

/// True when `value` is absent, null, or an empty string, list or object.
fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// spec: v1alpha1 -> v1beta1
// ---------------------------------------------------------------------------------------------

const SPEC_SAME_KEYS: &[(&str, &str)] = &[
    ("annotations", "annotations"),
    ("labels", "labels"),
    ("backendFramework", "backendFramework"),
    ("restart", "restart"),
    ("experimental", "experimental"),
];

fn spec_to_beta(spec: &Value) -> Result<Value, ConversionError> {
    let spec = as_object(spec, "spec")?;
    let mut out = Map::new();
    copy_keys(spec, &mut out, SPEC_SAME_KEYS);
    copy_keys(spec, &mut out, &[("envs", "env")]);
    if let Some(topology) = spec.get("topologyConstraint") {
        let topology = as_object(topology, "spec.topologyConstraint")?;
        let mut converted = Map::new();
        copy_keys(
            topology,
            &mut converted,
            &[
                ("topologyProfile", "clusterTopologyName"),
                ("packDomain", "packDomain"),
            ],
        );
        out.insert("topologyConstraint".into(), Value::Object(converted));
    }
    if let Some(services) = spec.get("services") {
        let services = as_object(services, "spec.services")?;
        let mut names: Vec<&String> = services.keys().collect();
        names.sort();
        let mut components = Vec::new();
        for name in names {
            let service = &services[name];
            if service.is_null() {
                continue;
            }
            let path = format!("spec.services.{name}");
            components.push(component_to_beta(name, as_object(service, &path)?, &path)?);
        }
        if !components.is_empty() {
            out.insert("components".into(), Value::Array(components));
        }
    }
    Ok(Value::Object(out))
}

const COMPONENT_SAME_KEYS: &[(&str, &str)] = &[
    ("globalDynamoNamespace", "globalDynamoNamespace"),
    ("replicas", "replicas"),
    ("multinode", "multinode"),
    ("modelRef", "modelRef"),
    ("topologyConstraint", "topologyConstraint"),
    ("eppConfig", "eppConfig"),
];

fn component_to_beta(
    name: &str,
    service: &Map<String, Value>,
    path: &str,
) -> Result<Value, ConversionError> {
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    let component_type = service.get("componentType").and_then(Value::as_str);
    let sub_type = service.get("subComponentType").and_then(Value::as_str);
    match (component_type, sub_type) {
        (Some("worker"), Some(sub @ ("prefill" | "decode"))) => {
            out.insert("type".into(), json!(sub));
        }
        (Some(t), _) => {
            out.insert("type".into(), json!(t));
        }
        _ => {}
    }
    copy_keys(service, &mut out, COMPONENT_SAME_KEYS);
    if let Some(shared) = service.get("sharedMemory").and_then(Value::as_object) {
        if shared.get("disabled") == Some(&json!(true)) {
            out.insert("sharedMemorySize".into(), json!("0"));
        } else if let Some(size) = shared.get("size").filter(|s| !is_zero_quantity(s)) {
            out.insert("sharedMemorySize".into(), size.clone());
        }
    }
    let mounts = service
        .get("volumeMounts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(cache) = mounts
        .iter()
        .find(|m| m.get("useAsCompilationCache") == Some(&json!(true)))
    {
        let mut converted = Map::new();
        copy_keys(
            as_object(cache, &format!("{path}.volumeMounts"))?,
            &mut converted,
            &[("name", "pvcName"), ("mountPoint", "mountPath")],
        );
        out.insert("compilationCache".into(), Value::Object(converted));
    }
    if service.get("scalingAdapter").and_then(|s| s.get("enabled")) == Some(&json!(true)) {
        out.insert("scalingAdapter".into(), json!({}));
    }
    if let Some(template) = pod_template_to_beta(service, &mounts, path)? {
        if service.get("frontendSidecar").is_some_and(Value::is_object) {
            out.insert("frontendSidecar".into(), json!(FRONTEND_SIDECAR));
        }
        out.insert("podTemplate".into(), template);
    }
    Ok(Value::Object(out))
}

fn is_zero_quantity(value: &Value) -> bool {
    match value {
        Value::String(s) => s
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c == '0' || c == '.'),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// The flat `v1alpha1` pod fields as one pod template (Dynamo's `buildSharedPodTemplateFromAlpha`).
fn pod_template_to_beta(
    service: &Map<String, Value>,
    mounts: &[Value],
    path: &str,
) -> Result<Option<Value>, ConversionError> {
    let has_content = [
        "resources",
        "envs",
        "envFromSecret",
        "livenessProbe",
        "readinessProbe",
        "extraPodMetadata",
        "frontendSidecar",
    ]
    .iter()
    .any(|k| service.get(*k).is_some_and(|v| !v.is_null()))
        || !mounts.is_empty()
        || !is_empty(service.get("extraPodSpec"));
    if !has_content {
        return Ok(None);
    }
    let mut template = Map::new();
    if let Some(metadata) = service.get("extraPodMetadata").and_then(Value::as_object) {
        let mut converted = Map::new();
        for key in ["annotations", "labels"] {
            if !is_empty(metadata.get(key)) {
                converted.insert(key.into(), metadata[key].clone());
            }
        }
        if !converted.is_empty() {
            template.insert("metadata".into(), Value::Object(converted));
        }
    }
    let mut pod_spec = match service.get("extraPodSpec") {
        Some(Value::Object(extra)) => extra.clone(),
        _ => Map::new(),
    };
    let main_override = pod_spec.remove("mainContainer");

    let mut main = Map::new();
    main.insert("name".into(), json!(MAIN_CONTAINER));
    if let Some(resources) = service.get("resources").filter(|r| !r.is_null()) {
        let native = resources_to_native(as_object(resources, &format!("{path}.resources"))?);
        if !native.is_empty() {
            main.insert("resources".into(), Value::Object(native));
        }
    }
    if !is_empty(service.get("envs")) {
        main.insert("env".into(), service["envs"].clone());
    }
    if let Some(secret) = service
        .get("envFromSecret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        main.insert("envFrom".into(), json!([{"secretRef": {"name": secret}}]));
    }
    copy_keys(
        service,
        &mut main,
        &[
            ("livenessProbe", "livenessProbe"),
            ("readinessProbe", "readinessProbe"),
        ],
    );
    if !mounts.is_empty() {
        let native: Vec<Value> = mounts
            .iter()
            .map(|m| {
                json!({
                    "name": m.get("name").cloned().unwrap_or(json!("")),
                    "mountPath": m.get("mountPoint").cloned().unwrap_or(json!("")),
                })
            })
            .collect();
        main.insert("volumeMounts".into(), Value::Array(native));
    }
    if let Some(Value::Object(overrides)) = main_override {
        for (key, value) in overrides {
            if key == "name" || is_empty(Some(&value)) {
                continue;
            }
            if key == "env" {
                let merged = merge_envs(main.get("env"), &value);
                main.insert(key, merged);
            } else {
                main.insert(key, value);
            }
        }
    }

    let mut containers = vec![Value::Object(main)];
    if let Some(Value::Array(others)) = pod_spec.remove("containers") {
        containers.extend(
            others
                .into_iter()
                .filter(|c| c.get("name").and_then(Value::as_str) != Some(MAIN_CONTAINER)),
        );
    }
    if let Some(sidecar) = service.get("frontendSidecar").and_then(Value::as_object)
        && !containers
            .iter()
            .any(|c| c.get("name").and_then(Value::as_str) == Some(FRONTEND_SIDECAR))
    {
        let mut container = Map::new();
        container.insert("name".into(), json!(FRONTEND_SIDECAR));
        copy_keys(
            sidecar,
            &mut container,
            &[("image", "image"), ("args", "args"), ("envs", "env")],
        );
        if let Some(secret) = sidecar
            .get("envFromSecret")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            container.insert("envFrom".into(), json!([{"secretRef": {"name": secret}}]));
        }
        containers.push(Value::Object(container));
    }
    pod_spec.insert("containers".into(), Value::Array(containers));
    template.insert("spec".into(), Value::Object(pod_spec));
    Ok(Some(Value::Object(template)))
}

/// Dynamo's `mergeEnvs`: the main container's entries replace the common ones of the same name.
fn merge_envs(common: Option<&Value>, specific: &Value) -> Value {
    let mut out: Vec<Value> = common
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for env in specific.as_array().into_iter().flatten() {
        let name = env.get("name");
        match out.iter_mut().find(|e| e.get("name") == name) {
            Some(existing) => *existing = env.clone(),
            None => out.push(env.clone()),
        }
    }
    Value::Array(out)
}

/// `v1alpha1` `Resources` (`cpu`, `memory`, `gpu` + `gpuType`, `custom`) as native requirements.
fn resources_to_native(resources: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for side in ["requests", "limits"] {
        let Some(item) = resources.get(side).and_then(Value::as_object) else {
            continue;
        };
        let mut list = Map::new();
        for (key, name) in [("cpu", "cpu"), ("memory", "memory")] {
            if let Some(value) = item.get(key).filter(|v| !is_empty(Some(v))) {
                list.insert(name.into(), value.clone());
            }
        }
        if let Some(gpu) = item.get("gpu").filter(|v| !is_empty(Some(v))) {
            let name = item
                .get("gpuType")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .unwrap_or(GPU_RESOURCE);
            list.insert(name.into(), gpu.clone());
        }
        if let Some(custom) = item.get("custom").and_then(Value::as_object) {
            for (name, value) in custom {
                list.insert(name.clone(), value.clone());
            }
        }
        if !list.is_empty() {
            out.insert(side.into(), Value::Object(list));
        }
    }
    if let Some(claims) = resources.get("claims").filter(|c| !is_empty(Some(c))) {
        out.insert("claims".into(), claims.clone());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// spec: v1beta1 -> v1alpha1
// ---------------------------------------------------------------------------------------------

fn spec_to_alpha(spec: &Value) -> Result<Value, ConversionError> {
    let spec = as_object(spec, "spec")?;
    let mut out = Map::new();
    copy_keys(spec, &mut out, SPEC_SAME_KEYS);
    copy_keys(spec, &mut out, &[("env", "envs")]);
    if let Some(topology) = spec.get("topologyConstraint") {
        let topology = as_object(topology, "spec.topologyConstraint")?;
        let mut converted = Map::new();
        copy_keys(
            topology,
            &mut converted,
            &[
                ("clusterTopologyName", "topologyProfile"),
                ("packDomain", "packDomain"),
            ],
        );
        out.insert("topologyConstraint".into(), Value::Object(converted));
    }
    if let Some(components) = spec.get("components") {
        let components = components
            .as_array()
            .ok_or_else(|| ConversionError::Malformed {
                path: "spec.components".into(),
                message: "expected a list".into(),
            })?;
        let mut services = Map::new();
        for (i, component) in components.iter().enumerate() {
            let path = format!("spec.components[{i}]");
            let component = as_object(component, &path)?;
            let name = component
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ConversionError::Malformed {
                    path: format!("{path}.name"),
                    message: "a component needs a name".into(),
                })?;
            services.insert(name.to_string(), component_to_alpha(component, &path)?);
        }
        if !services.is_empty() {
            out.insert("services".into(), Value::Object(services));
        }
    }
    Ok(Value::Object(out))
}

fn component_to_alpha(
    component: &Map<String, Value>,
    path: &str,
) -> Result<Value, ConversionError> {
    let mut out = Map::new();
    match component.get("type").and_then(Value::as_str) {
        Some(sub @ ("prefill" | "decode")) => {
            out.insert("componentType".into(), json!("worker"));
            out.insert("subComponentType".into(), json!(sub));
        }
        Some(t) => {
            out.insert("componentType".into(), json!(t));
        }
        None => {}
    }
    for (alpha, beta) in COMPONENT_SAME_KEYS {
        if let Some(value) = component.get(*beta) {
            out.insert((*alpha).to_string(), value.clone());
        }
    }
    if let Some(size) = component.get("sharedMemorySize") {
        if is_zero_quantity(size) {
            out.insert("sharedMemory".into(), json!({"disabled": true}));
        } else {
            out.insert("sharedMemory".into(), json!({"size": size}));
        }
    }
    if component
        .get("scalingAdapter")
        .is_some_and(Value::is_object)
    {
        out.insert("scalingAdapter".into(), json!({"enabled": true}));
    }
    let sidecar_name = component
        .get("frontendSidecar")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut mounts: Vec<Value> = Vec::new();
    if let Some(template) = component.get("podTemplate").filter(|t| !t.is_null()) {
        pod_template_to_alpha(
            as_object(template, &format!("{path}.podTemplate"))?,
            sidecar_name.as_deref(),
            &mut out,
            &mut mounts,
        );
    }
    if let Some(cache) = component.get("compilationCache").and_then(Value::as_object) {
        let pvc = cache.get("pvcName").cloned().unwrap_or(json!(""));
        let mount_path = cache.get("mountPath").cloned();
        let found = mounts.iter_mut().find(|m| {
            m.get("name") == Some(&pvc)
                && mount_path
                    .as_ref()
                    .is_none_or(|p| m.get("mountPoint") == Some(p))
        });
        match found {
            Some(mount) => mount["useAsCompilationCache"] = json!(true),
            None => {
                let mut mount = json!({"name": pvc, "useAsCompilationCache": true});
                if let Some(p) = mount_path {
                    mount["mountPoint"] = p;
                }
                mounts.push(mount);
            }
        }
    }
    if !mounts.is_empty() {
        out.insert("volumeMounts".into(), Value::Array(mounts));
    }
    Ok(Value::Object(out))
}

/// Dynamo's `decomposePodTemplateFromHub`: the `main` container back into the flat fields, what
/// they cannot hold into `extraPodSpec.mainContainer`, the rest of the pod into `extraPodSpec`.
fn pod_template_to_alpha(
    template: &Map<String, Value>,
    sidecar_name: Option<&str>,
    out: &mut Map<String, Value>,
    mounts: &mut Vec<Value>,
) {
    if let Some(metadata) = template.get("metadata").and_then(Value::as_object) {
        let mut converted = Map::new();
        for key in ["annotations", "labels"] {
            if !is_empty(metadata.get(key)) {
                converted.insert(key.into(), metadata[key].clone());
            }
        }
        if !converted.is_empty() {
            out.insert("extraPodMetadata".into(), Value::Object(converted));
        }
    }
    let mut pod_spec = match template.get("spec") {
        Some(Value::Object(spec)) => spec.clone(),
        _ => Map::new(),
    };
    let containers = match pod_spec.remove("containers") {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    let mut others = Vec::new();
    let mut main = None;
    for container in containers {
        let name = container.get("name").and_then(Value::as_str);
        if name == Some(MAIN_CONTAINER) && main.is_none() {
            main = container.as_object().cloned();
        } else if sidecar_name.is_some() && name == sidecar_name {
            out.insert(
                "frontendSidecar".into(),
                frontend_sidecar_to_alpha(&container),
            );
        } else {
            others.push(container);
        }
    }
    if !others.is_empty() {
        pod_spec.insert("containers".into(), Value::Array(others));
    }
    if let Some(mut main) = main {
        main.remove("name");
        if let Some(Value::Object(resources)) = main.remove("resources") {
            let alpha = resources_to_alpha(&resources);
            if !alpha.is_empty() {
                out.insert("resources".into(), Value::Object(alpha));
            }
        }
        if let Some(env) = main.remove("env") {
            out.insert("envs".into(), env);
        }
        if let Some(secret) = single_secret_env_from(main.get("envFrom")) {
            main.remove("envFrom");
            out.insert("envFromSecret".into(), json!(secret));
        }
        for key in ["livenessProbe", "readinessProbe"] {
            if let Some(probe) = main.remove(key) {
                out.insert(key.into(), probe);
            }
        }
        if let Some(Value::Array(native)) = main.remove("volumeMounts") {
            let (flat, kept): (Vec<Value>, Vec<Value>) = native.into_iter().partition(|m| {
                m.as_object()
                    .is_some_and(|o| o.keys().all(|k| k == "name" || k == "mountPath"))
            });
            for mount in flat {
                let mut converted =
                    json!({"name": mount.get("name").cloned().unwrap_or(json!(""))});
                if let Some(p) = mount.get("mountPath").filter(|p| !is_empty(Some(p))) {
                    converted["mountPoint"] = p.clone();
                }
                mounts.push(converted);
            }
            if !kept.is_empty() {
                main.insert("volumeMounts".into(), Value::Array(kept));
            }
        }
        if !main.is_empty() {
            pod_spec.insert("mainContainer".into(), Value::Object(main));
        }
    }
    if !pod_spec.is_empty() {
        out.insert("extraPodSpec".into(), Value::Object(pod_spec));
    }
}

fn frontend_sidecar_to_alpha(container: &Value) -> Value {
    let mut out = Map::new();
    if let Some(container) = container.as_object() {
        copy_keys(
            container,
            &mut out,
            &[("image", "image"), ("args", "args"), ("env", "envs")],
        );
        if let Some(secret) = single_secret_env_from(container.get("envFrom")) {
            out.insert("envFromSecret".into(), json!(secret));
        }
    }
    Value::Object(out)
}

/// The secret of an `envFrom` that is exactly one `secretRef` without prefix (what
/// `envFromSecret` means), as Dynamo's `frontendSidecarEnvFromSecret` reads it.
fn single_secret_env_from(env_from: Option<&Value>) -> Option<String> {
    let list = env_from?.as_array()?;
    let [only] = list.as_slice() else {
        return None;
    };
    let only = only.as_object()?;
    if only.keys().any(|k| k != "secretRef") {
        return None;
    }
    let secret = only.get("secretRef")?.as_object()?;
    if secret.keys().any(|k| k != "name") {
        return None;
    }
    secret.get("name")?.as_str().map(str::to_string)
}

/// Native requirements as `v1alpha1` `Resources` (Dynamo's `resourcesFromNative`).
fn resources_to_alpha(resources: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for side in ["requests", "limits"] {
        let Some(list) = resources.get(side).and_then(Value::as_object) else {
            continue;
        };
        let mut item = Map::new();
        let mut custom = Map::new();
        for (name, value) in list {
            match name.as_str() {
                "cpu" => {
                    item.insert("cpu".into(), value.clone());
                }
                "memory" => {
                    item.insert("memory".into(), value.clone());
                }
                GPU_RESOURCE => {
                    item.insert("gpu".into(), value.clone());
                }
                _ => {
                    custom.insert(name.clone(), value.clone());
                }
            }
        }
        if !custom.is_empty() {
            item.insert("custom".into(), Value::Object(custom));
        }
        if !item.is_empty() {
            out.insert(side.into(), Value::Object(item));
        }
    }
    if let Some(claims) = resources.get("claims").filter(|c| !is_empty(Some(c))) {
        out.insert("claims".into(), claims.clone());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// status
// ---------------------------------------------------------------------------------------------

const STATUS_SAME_KEYS: &[(&str, &str)] = &[
    ("observedGeneration", "observedGeneration"),
    ("state", "state"),
    ("conditions", "conditions"),
    ("restart", "restart"),
    ("checkpoints", "checkpoints"),
];

fn status_to_beta(status: &Value) -> Result<Value, ConversionError> {
    let status = as_object(status, "status")?;
    let mut out = Map::new();
    copy_keys(status, &mut out, STATUS_SAME_KEYS);
    if let Some(services) = status.get("services").and_then(Value::as_object) {
        let mut components = Map::new();
        for (name, service) in services {
            let service = as_object(service, &format!("status.services.{name}"))?;
            let mut converted = Map::new();
            copy_keys(service, &mut converted, REPLICA_KEYS);
            let names = match service.get("componentNames") {
                Some(Value::Array(list)) if !list.is_empty() => Some(Value::Array(list.clone())),
                _ => service
                    .get("componentName")
                    .filter(|n| !is_empty(Some(n)))
                    .map(|n| json!([n])),
            };
            if let Some(names) = names {
                converted.insert("componentNames".into(), names);
            }
            components.insert(name.clone(), Value::Object(converted));
        }
        out.insert("components".into(), Value::Object(components));
    }
    if let Some(rolling) = status.get("rollingUpdate").and_then(Value::as_object) {
        let mut converted = Map::new();
        copy_keys(rolling, &mut converted, ROLLING_KEYS);
        copy_keys(
            rolling,
            &mut converted,
            &[("updatedServices", "updatedComponents")],
        );
        out.insert("rollingUpdate".into(), Value::Object(converted));
    }
    Ok(Value::Object(out))
}

const REPLICA_KEYS: &[(&str, &str)] = &[
    ("componentKind", "componentKind"),
    ("replicas", "replicas"),
    ("updatedReplicas", "updatedReplicas"),
    ("readyReplicas", "readyReplicas"),
    ("availableReplicas", "availableReplicas"),
];

const ROLLING_KEYS: &[(&str, &str)] = &[
    ("phase", "phase"),
    ("startTime", "startTime"),
    ("endTime", "endTime"),
];

fn status_to_alpha(status: &Value) -> Result<Value, ConversionError> {
    let status = as_object(status, "status")?;
    let mut out = Map::new();
    copy_keys(status, &mut out, STATUS_SAME_KEYS);
    if let Some(components) = status.get("components").and_then(Value::as_object) {
        let mut services = Map::new();
        for (name, component) in components {
            let component = as_object(component, &format!("status.components.{name}"))?;
            let mut converted = Map::new();
            copy_keys(component, &mut converted, REPLICA_KEYS);
            if let Some(Value::Array(names)) = component.get("componentNames") {
                converted.insert("componentNames".into(), Value::Array(names.clone()));
                if let Some(last) = names.last() {
                    converted.insert("componentName".into(), last.clone());
                }
            }
            services.insert(name.clone(), Value::Object(converted));
        }
        out.insert("services".into(), Value::Object(services));
    }
    if let Some(rolling) = status.get("rollingUpdate").and_then(Value::as_object) {
        let mut converted = Map::new();
        copy_keys(rolling, &mut converted, ROLLING_KEYS);
        copy_keys(
            rolling,
            &mut converted,
            &[("updatedComponents", "updatedServices")],
        );
        out.insert("rollingUpdate".into(), Value::Object(converted));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests;
