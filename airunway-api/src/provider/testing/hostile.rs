//! Hostile overrides for providers' tests: every setting the Pod Security check forbids, placed
//! through `provider.overrides` at the paths a provider merges, in other spellings and nested
//! deeper, and the check that nothing of it reaches an object the SDK would apply.
//!
//! A provider's test lists where its overrides could reach a pod spec (its "pod paths", dot
//! paths inside `provider.overrides`, `""` for the root) and calls [`run_corpus`]; it then
//! asserts what its render does with overrides (ignores them, types them, or merges them).
//! Test support: it panics to fail the calling test.
#![allow(clippy::panic)]

use serde_json::{Map, Value, json};

use crate::pod_security::{self, Exemptions, Policy, Profile};
use crate::provider::checked_render::checked_render;
use crate::provider::{Provider, SchemaDetection};
use crate::v1alpha1::ModelDeployment;

/// Where a forbidden setting lives in a pod template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A key of the pod spec (`hostNetwork`, `volumes`, ...).
    Pod,
    /// A key of a container (`securityContext.privileged`, `ports[].hostPort`, ...).
    Container,
    /// A key of the pod template's metadata (the AppArmor annotation).
    Metadata,
}

/// One setting a rendered pod may not carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Forbidden {
    /// A short name for messages.
    pub what: &'static str,
    /// Where it lives.
    pub scope: Scope,
    /// The keys to merge at that scope.
    pub fragment: Value,
    /// The key (any case) and value that must not appear anywhere in an applied object.
    pub marker: (&'static str, Value),
    /// Forbidden by the restricted profile only.
    pub restricted_only: bool,
}

fn forbidden(
    what: &'static str,
    scope: Scope,
    fragment: Value,
    marker: (&'static str, Value),
) -> Forbidden {
    Forbidden {
        what,
        scope,
        fragment,
        marker,
        restricted_only: false,
    }
}

/// Every setting the baseline profile, the restricted additions and AI Runway's own rules
/// forbid, each as a fragment to merge.
pub fn forbidden_settings() -> Vec<Forbidden> {
    let host_path = json!({"path": "/"});
    let mut all = vec![
        forbidden(
            "host network",
            Scope::Pod,
            json!({"hostNetwork": true}),
            ("hostNetwork", json!(true)),
        ),
        forbidden(
            "host PID",
            Scope::Pod,
            json!({"hostPID": true}),
            ("hostPID", json!(true)),
        ),
        forbidden(
            "host IPC",
            Scope::Pod,
            json!({"hostIPC": true}),
            ("hostIPC", json!(true)),
        ),
        forbidden(
            "hostPath volume",
            Scope::Pod,
            json!({"volumes": [{"name": "host", "hostPath": host_path}]}),
            ("hostPath", host_path.clone()),
        ),
        forbidden(
            "service account",
            Scope::Pod,
            json!({"serviceAccountName": "cluster-admin"}),
            ("serviceAccountName", json!("cluster-admin")),
        ),
        forbidden(
            "deprecated service account",
            Scope::Pod,
            json!({"serviceAccount": "cluster-admin"}),
            ("serviceAccount", json!("cluster-admin")),
        ),
        forbidden(
            "token mounting",
            Scope::Pod,
            json!({"automountServiceAccountToken": true}),
            ("automountServiceAccountToken", json!(true)),
        ),
        forbidden(
            "node name",
            Scope::Pod,
            json!({"nodeName": "control-plane"}),
            ("nodeName", json!("control-plane")),
        ),
        forbidden(
            "priority class",
            Scope::Pod,
            json!({"priorityClassName": "system-node-critical"}),
            ("priorityClassName", json!("system-node-critical")),
        ),
        forbidden(
            "runtime class",
            Scope::Pod,
            json!({"runtimeClassName": "unsafe"}),
            ("runtimeClassName", json!("unsafe")),
        ),
        forbidden(
            "unsafe sysctl",
            Scope::Pod,
            json!({"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|/tmp/x"}]}}),
            (
                "sysctls",
                json!([{"name": "kernel.core_pattern", "value": "|/tmp/x"}]),
            ),
        ),
        forbidden(
            "SELinux type",
            Scope::Pod,
            json!({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
            ("seLinuxOptions", json!({"type": "spc_t"})),
        ),
        forbidden(
            "unconfined seccomp",
            Scope::Pod,
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            ("seccompProfile", json!({"type": "Unconfined"})),
        ),
        forbidden(
            "Windows host process",
            Scope::Pod,
            json!({"securityContext": {"windowsOptions": {"hostProcess": true}}}),
            ("windowsOptions", json!({"hostProcess": true})),
        ),
        forbidden(
            "privileged container",
            Scope::Container,
            json!({"securityContext": {"privileged": true}}),
            ("privileged", json!(true)),
        ),
        forbidden(
            "added capability",
            Scope::Container,
            json!({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
            ("capabilities", json!({"add": ["SYS_ADMIN"]})),
        ),
        forbidden(
            "unmasked proc",
            Scope::Container,
            json!({"securityContext": {"procMount": "Unmasked"}}),
            ("procMount", json!("Unmasked")),
        ),
        forbidden(
            "unconfined AppArmor",
            Scope::Container,
            json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}),
            ("appArmorProfile", json!({"type": "Unconfined"})),
        ),
        forbidden(
            "host port",
            Scope::Container,
            json!({"ports": [{"containerPort": 8000, "hostPort": 8000}]}),
            ("hostPort", json!(8000)),
        ),
        forbidden(
            "AppArmor annotation",
            Scope::Metadata,
            json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/vllm": "unconfined"}}),
            (
                "container.apparmor.security.beta.kubernetes.io/vllm",
                json!("unconfined"),
            ),
        ),
    ];
    for (what, fragment, marker) in [
        (
            "privilege escalation",
            json!({"securityContext": {"allowPrivilegeEscalation": true}}),
            ("allowPrivilegeEscalation", json!(true)),
        ),
        (
            "root user",
            json!({"securityContext": {"runAsUser": 0}}),
            ("runAsUser", json!(0)),
        ),
    ] {
        all.push(Forbidden {
            what,
            scope: Scope::Container,
            fragment,
            marker,
            restricted_only: true,
        });
    }
    all
}

/// The spellings of a key Go's `encoding/json` would decode as the same field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// As Kubernetes writes it (`hostNetwork`).
    AsWritten,
    /// First letter upper case (`HostNetwork`).
    Capitalised,
    /// All upper case (`HOSTNETWORK`).
    Upper,
    /// All lower case (`hostnetwork`).
    Lower,
}

/// Every spelling.
pub const SPELLINGS: [Spelling; 4] = [
    Spelling::AsWritten,
    Spelling::Capitalised,
    Spelling::Upper,
    Spelling::Lower,
];

fn spell(key: &str, spelling: Spelling) -> String {
    // Annotation names are not field names: their case is significant.
    if key.contains('/') {
        return key.to_string();
    }
    match spelling {
        Spelling::AsWritten => key.to_string(),
        Spelling::Capitalised => {
            let mut chars = key.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
        Spelling::Upper => key.to_uppercase(),
        Spelling::Lower => key.to_lowercase(),
    }
}

/// `value` with every object key respelled (bounded by the nesting of the corpus: a few levels).
pub fn respell(value: &Value, spelling: Spelling) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (spell(k, spelling), respell(v, spelling)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| respell(v, spelling)).collect()),
        other => other.clone(),
    }
}

/// `fragment` placed at the dot path `path` (`""`: the root) as an overrides map.
pub fn at_path(path: &str, fragment: Value) -> Map<String, Value> {
    let mut value = fragment;
    for key in path.split('.').filter(|k| !k.is_empty()).rev() {
        value = json!({ key: value });
    }
    match value {
        Value::Object(map) => map,
        other => Map::from_iter([("value".to_string(), other)]),
    }
}

/// How a forbidden setting is placed relative to a pod path.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The overrides.
    pub overrides: Map<String, Value>,
    /// A description for messages.
    pub description: String,
}

fn parent(path: &str) -> &str {
    path.rsplit_once('.').map_or("", |(p, _)| p)
}

/// Every placement of `setting` at `pod_path`: the pod scope at the path itself, a container in
/// `containers`, `initContainers` or `ephemeralContainers` under it, the metadata beside it; as
/// written and nested one and three levels deeper (under `nested`).
pub fn placements(setting: &Forbidden, pod_path: &str) -> Vec<Placement> {
    let mut located: Vec<(String, Value)> = Vec::new();
    match setting.scope {
        Scope::Pod => located.push((pod_path.to_string(), setting.fragment.clone())),
        Scope::Container => {
            for list in ["containers", "initContainers", "ephemeralContainers"] {
                let mut container = json!({"name": "x", "image": "busybox"});
                if let (Some(c), Some(f)) =
                    (container.as_object_mut(), setting.fragment.as_object())
                {
                    c.extend(f.clone());
                }
                located.push((pod_path.to_string(), json!({ list: [container] })));
            }
        }
        Scope::Metadata => {
            let metadata = if pod_path.is_empty() {
                "metadata".to_string()
            } else if pod_path.ends_with("spec") {
                format!(
                    "{}{}metadata",
                    parent(pod_path),
                    if parent(pod_path).is_empty() { "" } else { "." }
                )
            } else {
                format!("{pod_path}.metadata")
            };
            located.push((metadata, setting.fragment.clone()));
        }
    }
    let mut out = Vec::new();
    for (path, fragment) in located {
        for nesting in ["", "nested", "nested.a.b"] {
            let full = [path.as_str(), nesting]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(".");
            out.push(Placement {
                overrides: at_path(&full, fragment.clone()),
                description: format!("{} at provider.overrides.{full} {}", setting.what, fragment),
            });
        }
    }
    out
}

/// Whether `object` has, at any depth, key `key` (compared without case) with value `value`.
pub fn contains_marker(object: &Value, key: &str, value: &Value) -> bool {
    fn walk(v: &Value, key: &str, value: &Value, depth: usize) -> bool {
        if depth > pod_security::MAX_DEPTH {
            return false;
        }
        match v {
            Value::Object(map) => map.iter().any(|(k, child)| {
                (k.eq_ignore_ascii_case(key) && child == value)
                    || walk(child, key, value, depth + 1)
            }),
            Value::Array(items) => items.iter().any(|child| walk(child, key, value, depth + 1)),
            _ => false,
        }
    }
    walk(object, key, value, 0)
}

/// What the SDK did with one hostile deployment.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Held without applying anything: the reason and message.
    Held {
        /// The condition reason (`InvalidOverrides`, `PodSecurityViolation`, ...).
        reason: String,
        /// The message the user sees.
        message: String,
    },
    /// Objects would be applied (each checked: the forbidden setting is in none of them).
    Applied(Vec<Value>),
}

/// The tally of a corpus run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Deployments tried.
    pub tried: usize,
    /// Held because the render refused the overrides (`InvalidOverrides`).
    pub refused_by_render: usize,
    /// Held because the rendered objects broke pod security (`PodSecurityViolation`).
    pub refused_by_pod_security: usize,
    /// Applied, with the forbidden setting nowhere in what is applied.
    pub applied_clean: usize,
}

/// What [`checked_render`] does with `md` under `policy`; panics if it would apply an
/// object that carries `marker` or breaks the policy.
pub fn outcome<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    detection: &SchemaDetection,
    policy: &Policy,
    marker: Option<&(&'static str, Value)>,
) -> Outcome {
    match checked_render(provider, md, &Default::default(), detection, policy) {
        Ok(prepared) => {
            let objects: Vec<Value> = prepared.desired.into_iter().map(|d| d.object).collect();
            for object in &objects {
                let violations = pod_security::check(object, policy.profile, &policy.exemptions);
                assert!(
                    violations.is_empty(),
                    "{} would apply an object breaking pod security: {violations:?}",
                    provider.name()
                );
                if let Some((key, value)) = marker {
                    assert!(
                        !contains_marker(object, key, value),
                        "{} would apply {key}: {value} in {object}",
                        provider.name()
                    );
                }
            }
            Outcome::Applied(objects)
        }
        Err(held) => Outcome::Held {
            reason: held
                .status
                .conditions
                .iter()
                .find(|c| c.status == crate::v1alpha1::ConditionStatus::False)
                .map(|c| c.reason.clone())
                .unwrap_or_default(),
            message: held.status.message,
        },
    }
}

/// Runs every forbidden setting at every pod path, in every spelling and nesting, through
/// `base` (a valid deployment for the provider, with `spec.provider` set) and [`checked_render`]: panics if anything
/// forbidden would be applied; calls `each` with the placement and the outcome so the provider's
/// test can assert what its render does with overrides.
pub fn run_corpus<P: Provider>(
    provider: &P,
    detection: &SchemaDetection,
    base: &ModelDeployment,
    pod_paths: &[&str],
    mut each: impl FnMut(&Forbidden, &Placement, &Outcome),
) -> Tally {
    let mut tally = Tally::default();
    for setting in forbidden_settings() {
        let policy = Policy {
            profile: if setting.restricted_only {
                Profile::Restricted
            } else {
                Profile::Baseline
            },
            exemptions: Exemptions::default(),
        };
        for pod_path in pod_paths {
            for placement in placements(&setting, pod_path) {
                for spelling in SPELLINGS {
                    let overrides = respell(&Value::Object(placement.overrides.clone()), spelling);
                    let mut md = base.clone();
                    if let Some(p) = md.spec.provider.as_mut() {
                        p.overrides = overrides.as_object().cloned();
                    }
                    let result = outcome(provider, &md, detection, &policy, Some(&setting.marker));
                    tally.tried += 1;
                    match &result {
                        Outcome::Held { reason, .. }
                            if reason == crate::constants::reasons::POD_SECURITY_VIOLATION =>
                        {
                            tally.refused_by_pod_security += 1
                        }
                        Outcome::Held { .. } => tally.refused_by_render += 1,
                        Outcome::Applied(_) => tally.applied_clean += 1,
                    }
                    let placement = Placement {
                        overrides: overrides.as_object().cloned().unwrap_or_default(),
                        description: format!("{} ({spelling:?})", placement.description),
                    };
                    each(&setting, &placement, &result);
                }
            }
        }
    }
    tally
}

/// Puts each forbidden setting straight into `object` at `pod_spec` (a JSON pointer to a pod
/// spec of the upstream kind, as a careless provider author might render it) and asserts the
/// Pod Security check reports it under that path. Returns how many were caught.
pub fn assert_check_finds_each_at(object: &Value, pod_spec: &str) -> usize {
    let mut caught = 0;
    for setting in forbidden_settings() {
        let profile = if setting.restricted_only {
            Profile::Restricted
        } else {
            Profile::Baseline
        };
        let mut injected = object.clone();
        let (target, fragment) = match setting.scope {
            Scope::Pod => (pod_spec.to_string(), setting.fragment.clone()),
            Scope::Container => {
                let mut container = json!({"name": "x", "image": "busybox"});
                if let (Some(c), Some(f)) =
                    (container.as_object_mut(), setting.fragment.as_object())
                {
                    c.extend(f.clone());
                }
                (
                    pod_spec.to_string(),
                    json!({"ephemeralContainers": [container]}),
                )
            }
            Scope::Metadata => (
                format!(
                    "{}/metadata",
                    pod_spec.rsplit_once('/').map_or("", |(p, _)| p)
                ),
                setting.fragment.clone(),
            ),
        };
        let mut slot = &mut injected;
        for key in target.split('/').filter(|k| !k.is_empty()) {
            slot = match slot {
                Value::Array(items) => {
                    let index: usize = key.parse().unwrap_or(0);
                    &mut items[index]
                }
                other => {
                    if !other.is_object() {
                        *other = json!({});
                    }
                    other
                        .as_object_mut()
                        .map(|m| m.entry(key.to_string()).or_insert_with(|| json!({})))
                        .unwrap_or_else(|| unreachable!())
                }
            };
        }
        crate::provider::overrides::deep_merge(slot, &fragment);
        let violations = pod_security::check(&injected, profile, &Exemptions::default());
        let prefix = target.trim_start_matches('/').replace('/', ".");
        let prefix = prefix
            .split('.')
            .map(|s| {
                if s.chars().all(|c| c.is_ascii_digit()) {
                    format!("[{s}]")
                } else {
                    s.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(".")
            .replace(".[", "[");
        assert!(
            violations.iter().any(|v| v.field.starts_with(&prefix)),
            "{} at {target} not reported under {prefix}: {violations:?}",
            setting.what
        );
        caught += 1;
    }
    caught
}

/// What [`generated_render`] found for one generated deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generated {
    /// The spec does not decode or our CRD's schema refuses it (the API server would).
    NotAdmitted,
    /// The provider held it (incompatible, invalid overrides, pod security), with a message.
    Held,
    /// Objects would be applied; each passed pod security and the upstream schema.
    Applied,
}

/// The properties of a provider's render over one generated `spec` (JSON): it never panics; a
/// hold always carries a message; every object it would apply passes the Pod Security baseline
/// and, for a kind with a CRD, `upstream`'s schema (panics naming the error otherwise).
pub fn generated_render<P: Provider>(
    provider: &P,
    detection: &SchemaDetection,
    spec: &Value,
    ours: &super::upstream_schema::UpstreamValidator,
    upstream: Option<&super::upstream_schema::UpstreamValidator>,
) -> Generated {
    let object = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns"}, "spec": spec});
    if !ours.errors(&object).is_empty() {
        return Generated::NotAdmitted;
    }
    let mut assigned = object;
    assigned["metadata"]["uid"] = json!("u");
    assigned["status"] = json!({"provider": {"name": provider.name()}});
    let Ok(md) = serde_json::from_value::<ModelDeployment>(assigned) else {
        return Generated::NotAdmitted;
    };
    match outcome(provider, &md, detection, &Policy::default(), None) {
        Outcome::Held { message, .. } => {
            assert!(!message.is_empty(), "a hold without a message for {spec}");
            Generated::Held
        }
        Outcome::Applied(objects) => {
            if let Some(validator) = upstream {
                let primary = &objects[0];
                let errors = validator.errors(primary);
                assert!(
                    errors.is_empty(),
                    "{} renders an object the upstream schema refuses: {errors:?}\nspec: {spec}\nobject: {primary}",
                    provider.name()
                );
            }
            Generated::Applied
        }
    }
}
