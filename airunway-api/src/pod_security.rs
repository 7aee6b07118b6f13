//! The Pod Security Standards check of what a provider is about to apply (pure).
//!
//! Providers create pods for anyone who may create a ModelDeployment, so what they render —
//! overrides merged, in any upstream kind — is checked against a Pod Security Standards profile
//! before it is applied, instead of guarding a list of forbidden override keys. The check walks
//! the whole rendered object (bounded), so a provider does not have to say where its kind keeps
//! pod templates: every object at any depth is checked for the pod-level and container-level
//! settings below. Keys are compared without regard to case, because the upstream operators
//! decode JSON with Go's `encoding/json`, which matches field names that way (`HostNetwork`
//! reaches `hostNetwork`).
//!
//! Baseline (the Kubernetes profile): no host namespaces (`hostNetwork`, `hostPID`, `hostIPC`),
//! no `hostPath` volumes, no `hostPort`, no privileged containers, no added capabilities beyond
//! the baseline set, `procMount` `Default`, no loosened SELinux (type outside the container types,
//! user or role set), seccomp and AppArmor not `Unconfined`, only safe sysctls, no Windows host
//! process. Restricted adds: `allowPrivilegeEscalation` not true, not running as root
//! (`runAsNonRoot: false`, `runAsUser: 0`), only `NET_BIND_SERVICE` added, volumes only of the
//! restricted types. AI Runway's own rules (both profiles): no `serviceAccountName`,
//! `serviceAccount`, `automountServiceAccountToken`, `nodeName`, and no `priorityClassName` or
//! `runtimeClassName` unless the administrator allows them ([`Exemptions`]).

use serde_json::Value;

/// Deepest nesting walked; deeper objects are a violation (no valid upstream object nests so).
pub const MAX_DEPTH: usize = 64;
/// Most JSON nodes walked; a larger object is a violation.
pub const MAX_NODES: usize = 200_000;

/// The Pod Security Standards profile to enforce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// The Kubernetes `baseline` profile (the default).
    #[default]
    Baseline,
    /// The Kubernetes `restricted` profile (forbidden values only; see the module docs).
    Restricted,
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "baseline" => Ok(Profile::Baseline),
            "restricted" => Ok(Profile::Restricted),
            other => Err(format!(
                "unknown pod security profile {other:?}: use baseline or restricted"
            )),
        }
    }
}

/// Settings an administrator allows in rendered pods (all refused by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// `priorityClassName` may be set.
    pub priority_class: bool,
    /// `runtimeClassName` may be set.
    pub runtime_class: bool,
}

/// What a provider enforces on what it renders: the profile and the administrator's exemptions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// The profile.
    pub profile: Profile,
    /// Settings allowed anyway.
    pub exemptions: Exemptions,
}

/// One setting a rendered object may not carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where it is in the rendered object, e.g. `spec.template.spec.hostNetwork`.
    pub field: String,
    /// The rule it breaks.
    pub rule: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.rule)
    }
}

const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

const SAFE_SYSCTLS: [&str; 10] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

const SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Volume sources the restricted profile allows.
const RESTRICTED_VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// Every volume source a pod volume can have (to recognise a volume).
const VOLUME_SOURCES: [&str; 27] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "persistentVolumeClaim",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "quobyte",
    "rbd",
    "secret",
];

struct Walk<'a> {
    profile: Profile,
    exemptions: &'a Exemptions,
    nodes: usize,
    found: Vec<Violation>,
}

impl Walk<'_> {
    fn violation(&mut self, field: &str, rule: impl Into<String>) {
        self.found.push(Violation {
            field: field.to_string(),
            rule: rule.into(),
        });
    }
}

/// Every violation of `profile` in `object` (a rendered upstream object, or any JSON that may
/// hold pod templates). Field paths start at the object's root (`spec....`).
pub fn check(object: &Value, profile: Profile, exemptions: &Exemptions) -> Vec<Violation> {
    let mut walk = Walk {
        profile,
        exemptions,
        nodes: 0,
        found: Vec::new(),
    };
    visit(object, "", 0, &mut walk);
    walk.found
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn is_true(value: &Value) -> bool {
    value.as_bool() == Some(true)
}

/// The value of `key` in `map`, matched without regard to case.
fn get<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<(&'a String, &'a Value)> {
    map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key))
}

fn visit(value: &Value, path: &str, depth: usize, walk: &mut Walk<'_>) {
    walk.nodes += 1;
    if walk.nodes == MAX_NODES + 1 {
        walk.violation(
            path,
            format!("the rendered object has more than {MAX_NODES} values"),
        );
    }
    if walk.nodes > MAX_NODES {
        return;
    }
    if depth > MAX_DEPTH {
        walk.violation(
            path,
            format!("the rendered object nests deeper than {MAX_DEPTH} levels"),
        );
        return;
    }
    match value {
        Value::Object(map) => {
            check_object(map, path, walk);
            for (key, child) in map {
                visit(child, &join(path, key), depth + 1, walk);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                visit(item, &format!("{path}[{i}]"), depth + 1, walk);
            }
        }
        _ => {}
    }
}

fn check_object(map: &serde_json::Map<String, Value>, path: &str, walk: &mut Walk<'_>) {
    for name in ["hostNetwork", "hostPID", "hostIPC", "hostUsers"] {
        if let Some((key, value)) = get(map, name) {
            // `hostUsers: false` is the safe setting; the others are safe when false.
            let unsafe_value = if name == "hostUsers" {
                false
            } else {
                is_true(value)
            };
            if unsafe_value {
                walk.violation(
                    &join(path, key),
                    "host namespaces are not allowed (Pod Security baseline)",
                );
            }
        }
    }
    for name in [
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "nodeName",
    ] {
        if let Some((key, _)) = get(map, name) {
            walk.violation(
                &join(path, key),
                "the model server pods keep the service account, token mounting and scheduling the provider sets (AI Runway policy)",
            );
        }
    }
    if let Some((key, _)) =
        get(map, "priorityClassName").filter(|_| !walk.exemptions.priority_class)
    {
        walk.violation(&join(path, key), "a priority class is not allowed unless the administrator allows it (--allow-priority-class)");
    }
    if let Some((key, _)) = get(map, "runtimeClassName").filter(|_| !walk.exemptions.runtime_class)
    {
        walk.violation(&join(path, key), "a runtime class is not allowed unless the administrator allows it (--allow-runtime-class)");
    }
    if let Some((key, Value::Object(_))) = get(map, "hostPath") {
        walk.violation(
            &join(path, key),
            "hostPath volumes are not allowed (Pod Security baseline)",
        );
    }
    if walk.profile == Profile::Restricted && get(map, "name").is_some() {
        for source in VOLUME_SOURCES {
            if let Some((key, Value::Object(_))) = get(map, source)
                && !RESTRICTED_VOLUMES
                    .iter()
                    .any(|r| r.eq_ignore_ascii_case(key))
                && !key.eq_ignore_ascii_case("hostPath")
            {
                walk.violation(
                    &join(path, key),
                    format!("{key} volumes are not allowed (Pod Security restricted)"),
                );
            }
        }
    }
    if let Some((key, Value::Array(ports))) = get(map, "ports") {
        for (i, port) in ports.iter().enumerate() {
            if let Some((port_key, value)) = port.as_object().and_then(|p| get(p, "hostPort"))
                && value.as_i64().is_some_and(|p| p != 0)
            {
                walk.violation(
                    &format!("{}[{i}].{port_key}", join(path, key)),
                    "host ports are not allowed (Pod Security baseline)",
                );
            }
        }
    }
    if let Some((key, Value::Object(annotations))) = get(map, "annotations") {
        for (name, value) in annotations {
            if name.starts_with("container.apparmor.security.beta.kubernetes.io/")
                && value
                    .as_str()
                    .is_some_and(|v| v != "runtime/default" && !v.starts_with("localhost/"))
            {
                walk.violation(
                    &format!("{}[{name}]", join(path, key)),
                    "AppArmor may not be unconfined (Pod Security baseline)",
                );
            }
        }
    }
    if let Some((key, Value::Object(context))) = get(map, "securityContext") {
        check_security_context(context, &join(path, key), walk);
    }
}

fn check_security_context(
    context: &serde_json::Map<String, Value>,
    path: &str,
    walk: &mut Walk<'_>,
) {
    let field = |key: &str| join(path, key);
    if let Some((key, value)) = get(context, "privileged")
        && is_true(value)
    {
        walk.violation(
            &field(key),
            "privileged containers are not allowed (Pod Security baseline)",
        );
    }
    if let Some((key, Value::Object(capabilities))) = get(context, "capabilities")
        && let Some((add_key, Value::Array(added))) = get(capabilities, "add")
    {
        for (i, capability) in added.iter().enumerate() {
            let name = capability.as_str().unwrap_or_default();
            let name = name.strip_prefix("CAP_").unwrap_or(name);
            let allowed = match walk.profile {
                Profile::Baseline => BASELINE_CAPABILITIES.contains(&name),
                Profile::Restricted => name == "NET_BIND_SERVICE",
            };
            if !allowed {
                walk.violation(
                    &format!("{}.{add_key}[{i}]", field(key)),
                    format!(
                        "adding capability {name} is not allowed (Pod Security {})",
                        profile_name(walk.profile)
                    ),
                );
            }
        }
    }
    if let Some((key, value)) = get(context, "procMount")
        && value.as_str().is_some_and(|v| v != "Default")
    {
        walk.violation(
            &field(key),
            "procMount must be Default (Pod Security baseline)",
        );
    }
    if let Some((key, Value::Object(selinux))) = get(context, "seLinuxOptions") {
        let type_ok = get(selinux, "type")
            .and_then(|(_, v)| v.as_str())
            .is_none_or(|t| SELINUX_TYPES.contains(&t));
        let user_role_unset = ["user", "role"].iter().all(|k| {
            get(selinux, k)
                .and_then(|(_, v)| v.as_str())
                .is_none_or(str::is_empty)
        });
        if !type_ok || !user_role_unset {
            walk.violation(
                &field(key),
                "SELinux options may not be loosened (Pod Security baseline)",
            );
        }
    }
    for profile_key in ["seccompProfile", "appArmorProfile"] {
        if let Some((key, Value::Object(profile))) = get(context, profile_key)
            && get(profile, "type").and_then(|(_, v)| v.as_str()) == Some("Unconfined")
        {
            walk.violation(
                &field(key),
                "Unconfined profiles are not allowed (Pod Security baseline)",
            );
        }
    }
    if let Some((key, Value::Object(windows))) = get(context, "windowsOptions")
        && get(windows, "hostProcess").is_some_and(|(_, v)| is_true(v))
    {
        walk.violation(
            &field(key),
            "Windows host processes are not allowed (Pod Security baseline)",
        );
    }
    if let Some((key, Value::Array(sysctls))) = get(context, "sysctls") {
        for (i, sysctl) in sysctls.iter().enumerate() {
            let name = sysctl
                .as_object()
                .and_then(|s| get(s, "name"))
                .and_then(|(_, v)| v.as_str())
                .unwrap_or_default();
            if !SAFE_SYSCTLS.contains(&name) {
                walk.violation(
                    &format!("{}[{i}]", field(key)),
                    format!("sysctl {name} is not in the safe set (Pod Security baseline)"),
                );
            }
        }
    }
    if walk.profile == Profile::Restricted {
        if let Some((key, value)) = get(context, "allowPrivilegeEscalation")
            && is_true(value)
        {
            walk.violation(
                &field(key),
                "allowPrivilegeEscalation may not be true (Pod Security restricted)",
            );
        }
        if let Some((key, value)) = get(context, "runAsNonRoot")
            && value.as_bool() == Some(false)
        {
            walk.violation(
                &field(key),
                "runAsNonRoot may not be false (Pod Security restricted)",
            );
        }
        if let Some((key, value)) = get(context, "runAsUser")
            && value.as_i64() == Some(0)
        {
            walk.violation(
                &field(key),
                "running as root (runAsUser: 0) is not allowed (Pod Security restricted)",
            );
        }
    }
}

fn profile_name(profile: Profile) -> &'static str {
    match profile {
        Profile::Baseline => "baseline",
        Profile::Restricted => "restricted",
    }
}

/// The path in `overrides` a violation most likely came from: the first override path, in
/// document order, that ends with the violation's last key (compared without regard to case).
/// `None` when the violation did not come from the overrides.
pub fn override_origin(overrides: &Value, violation: &Violation) -> Option<String> {
    // A trailing `[name]` is a map key that may hold dots (an annotation name): the field it
    // is in (`annotations`) is what the overrides spell.
    let field = match violation
        .field
        .strip_suffix(']')
        .and_then(|rest| rest.rfind('[').map(|i| (&rest[..i], &rest[i + 1..])))
    {
        Some((map, key)) if !key.chars().all(|c| c.is_ascii_digit()) => map,
        _ => violation.field.as_str(),
    };
    let last = field
        .rsplit(['.', '['])
        .find(|s| !s.is_empty() && !s.ends_with(']'))
        .unwrap_or(field);
    fn find(value: &Value, path: &str, last: &str, depth: usize) -> Option<String> {
        if depth > MAX_DEPTH {
            return None;
        }
        match value {
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                let here = join(path, k);
                if k.eq_ignore_ascii_case(last) {
                    Some(here)
                } else {
                    find(v, &here, last, depth + 1)
                }
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| find(v, &format!("{path}[{i}]"), last, depth + 1)),
            _ => None,
        }
    }
    find(overrides, "spec.provider.overrides", last, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(object: Value, profile: Profile) -> Vec<String> {
        check(&object, profile, &Exemptions::default())
            .into_iter()
            .map(|v| v.field)
            .collect()
    }

    fn deployment(pod: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": pod}}})
    }

    #[test]
    fn a_plain_model_server_passes_both_profiles() {
        let pod = json!({
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                "ports": [{"containerPort": 8000, "name": "http"}],
                "resources": {"limits": {"nvidia.com/gpu": 1}},
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
            "nodeSelector": {"nvidia.com/gpu.present": "true"},
        });
        assert_eq!(
            fields(deployment(pod.clone()), Profile::Baseline),
            Vec::<String>::new()
        );
        assert_eq!(
            fields(deployment(pod), Profile::Restricted),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_baseline_rule_at_any_depth_and_spelling() {
        let pod = json!({
            "HostNetwork": true,
            "hostPID": true,
            "serviceAccountName": "admin",
            "nodeName": "n1",
            "priorityClassName": "system-node-critical",
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}],
                "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN", "CHOWN"]},
                    "procMount": "Unmasked", "seccompProfile": {"type": "Unconfined"},
                    "seLinuxOptions": {"type": "spc_t"}}}],
            "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
        });
        // Nested as Dynamo keeps it: spec.services.<name>.extraPodSpec.
        let dgd = json!({"spec": {"services": {"VllmWorker": {"extraPodSpec": pod}}}});
        assert_eq!(
            fields(dgd, Profile::Baseline),
            [
                "spec.services.VllmWorker.extraPodSpec.HostNetwork",
                "spec.services.VllmWorker.extraPodSpec.hostPID",
                "spec.services.VllmWorker.extraPodSpec.serviceAccountName",
                "spec.services.VllmWorker.extraPodSpec.nodeName",
                "spec.services.VllmWorker.extraPodSpec.priorityClassName",
                "spec.services.VllmWorker.extraPodSpec.securityContext.sysctls[0]",
                "spec.services.VllmWorker.extraPodSpec.containers[0].ports[0].hostPort",
                "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext.privileged",
                "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext.capabilities.add[0]",
                "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext.procMount",
                "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext.seLinuxOptions",
                "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext.seccompProfile",
                "spec.services.VllmWorker.extraPodSpec.volumes[0].hostPath",
            ]
        );
    }

    #[test]
    fn restricted_adds_escalation_root_and_volume_types() {
        let pod = json!({
            "volumes": [{"name": "data", "nfs": {"server": "s", "path": "/"}}],
            "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": true,
                "runAsUser": 0, "capabilities": {"add": ["CHOWN"]}}}],
        });
        assert_eq!(
            fields(deployment(pod.clone()), Profile::Baseline),
            Vec::<String>::new()
        );
        assert_eq!(
            fields(deployment(pod), Profile::Restricted),
            [
                "spec.template.spec.containers[0].securityContext.capabilities.add[0]",
                "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation",
                "spec.template.spec.containers[0].securityContext.runAsUser",
                "spec.template.spec.volumes[0].nfs",
            ]
        );
    }

    #[test]
    fn exemptions_and_profile_names() {
        let pod = deployment(json!({"priorityClassName": "high", "runtimeClassName": "nvidia"}));
        let exemptions = Exemptions {
            priority_class: true,
            runtime_class: true,
        };
        assert!(check(&pod, Profile::Baseline, &exemptions).is_empty());
        assert_eq!("restricted".parse::<Profile>(), Ok(Profile::Restricted));
        assert!("privileged".parse::<Profile>().is_err());
    }

    #[test]
    fn origins_in_the_overrides() {
        let overrides = json!({"worker": {"podSpec": {"containers": [{"securityContext": {"Privileged": true}}]}}});
        let violation = Violation {
            field: "spec.template.spec.containers[0].securityContext.privileged".into(),
            rule: String::new(),
        };
        assert_eq!(
            override_origin(&overrides, &violation).as_deref(),
            Some("spec.provider.overrides.worker.podSpec.containers[0].securityContext.Privileged")
        );
        assert_eq!(override_origin(&json!({"replicas": 2}), &violation), None);
    }

    #[test]
    fn walks_are_bounded() {
        let mut deep = json!(1);
        for _ in 0..(MAX_DEPTH + 10) {
            deep = json!({"a": deep});
        }
        let found = check(&deep, Profile::Baseline, &Exemptions::default());
        assert_eq!(found.len(), 1);
        assert!(found[0].rule.contains("nests deeper"));
        let wide = Value::Array(vec![json!(1); MAX_NODES + 10]);
        let found = check(&wide, Profile::Baseline, &Exemptions::default());
        assert_eq!(found.len(), 1);
        assert!(found[0].rule.contains("more than"));
    }
}
