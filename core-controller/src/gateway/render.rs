//! The objects the integration creates for a deployment (pure): the InferencePool, the
//! endpoint picker stack and the HTTPRoute, each owned by the deployment (so deleting the
//! deployment deletes them) and labelled `airunway.ai/gateway-of: <name>`,
//! `app.kubernetes.io/managed-by: airunway-core` (not `airunway.ai/deployment`, which marks a
//! provider's objects: llm-d would prune the picker as a stale object of its set).
//!
//! - InferencePool `<md>` (`inference.networking.k8s.io/v1`): selects the model's pods by
//!   `airunway.ai/model-deployment: <md>` (the label providers put on the pod template), or by
//!   the provider's `poolSelector` (labels its upstream operator puts on the pods),
//!   `targetPorts [{number: <model server port>}]`, `endpointPickerRef {name: <md>-epp, port
//!   9002}`.
//! - Endpoint picker `<md>-epp`: ServiceAccount; Role reading pods, InferencePools,
//!   InferenceObjectives and InferenceModelRewrites of the namespace (no leases: the picker
//!   runs one replica without leader election); RoleBinding; ConfigMap with the plugin
//!   configuration (`default-plugins.yaml`); Deployment (1 replica, `Recreate`, restricted
//!   pod security); Service (ClusterIP, `grpc-ext-proc` 9002, `appProtocol: kubernetes.io/h2c`).
//! - HTTPRoute `<md>`: the Gateway as its only parent; one rule matching path prefix `/` and
//!   header `X-Gateway-Model-Name: <model name>` (and one match per LoRA adapter name), backend
//!   the pool, request timeout 300 s.
//! - InferenceModelRewrite `<md>-adapters`, for a deployment with LoRA adapters where the
//!   cluster serves the kind: one identity rule per adapter for the pool's endpoint picker.

use std::collections::BTreeMap;

use airunway_api::constants::API_VERSION;
use airunway_api::constants::labels::MODEL_DEPLOYMENT;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::names::Names;
use super::select::GatewayRef;
use super::{
    EPP_HEALTH_PORT, EPP_METRICS_PORT, EPP_PORT, INPUTS_HASH_ANNOTATION, MODEL_NAME_HEADER,
    REQUEST_TIMEOUT,
};

/// The label on every object the integration creates (value: the deployment name). Not the
/// providers' `airunway.ai/deployment`: a provider treats what carries that label as its own
/// (and prunes what it did not render).
pub const GATEWAY_OF_LABEL: &str = "airunway.ai/gateway-of";
/// `app.kubernetes.io/managed-by` of the integration's objects.
pub const GATEWAY_MANAGED_BY: &str = "airunway-core";

/// The InferencePool API group.
pub const POOL_GROUP: &str = "inference.networking.k8s.io";
/// The Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";
/// Where the picker reads its configuration.
pub const EPP_CONFIG_FILE: &str = "default-plugins.yaml";

/// The picker's plugin configuration when the provider gives none: queue, KV-cache and
/// prefix-cache aware scoring (the inference extension's documented defaults).
pub const DEFAULT_EPP_CONFIG: &str = "\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
";

/// [`DEFAULT_EPP_CONFIG`] with the Inference Extension's LoRA affinity scorer
/// (`lora-affinity-scorer`), for a deployment serving LoRA adapters: a pod that already has the
/// requested adapter loaded (the model server's `vllm:lora_requests_info` metric) scores
/// highest, then one with room to load it, then one queueing it.
pub const DEFAULT_EPP_CONFIG_WITH_LORA: &str = "\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
- type: lora-affinity-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
  - pluginRef: lora-affinity-scorer
    weight: 2
";

/// The experimental Inference Extension API group (InferenceObjective, InferenceModelRewrite).
pub const POOL_X_GROUP: &str = "inference.networking.x-k8s.io";
/// The InferenceModelRewrite version the Inference Extension v1.5.0 serves.
pub const MODEL_REWRITE_VERSION: &str = "v1alpha2";

/// The deployment the objects belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Name.
    pub name: String,
    /// Namespace (every object is created there).
    pub namespace: String,
    /// UID (for the owner reference).
    pub uid: String,
    /// The deployment's labels its runtime configuration propagates (docs/platform.md); the
    /// integration's own labels win over them.
    pub propagated: BTreeMap<String, String>,
}

impl Owner {
    fn reference(&self) -> Value {
        json!([{"apiVersion": API_VERSION, "kind": "ModelDeployment", "name": self.name,
                "uid": self.uid, "controller": true}])
    }

    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.propagated.clone();
        labels.extend([
            (GATEWAY_OF_LABEL.to_string(), self.name.clone()),
            (
                "app.kubernetes.io/managed-by".to_string(),
                GATEWAY_MANAGED_BY.to_string(),
            ),
        ]);
        labels
    }

    /// The propagated labels as hash inputs (`label:key=value`; none when nothing propagates,
    /// so the hashes of existing objects stay as they were).
    pub fn label_inputs(&self) -> Vec<String> {
        self.propagated
            .iter()
            .map(|(key, value)| format!("label:{key}={value}"))
            .collect()
    }

    fn metadata(&self, name: &str, hash: Option<&str>) -> Value {
        let mut metadata = json!({"name": name, "namespace": self.namespace,
            "labels": self.labels(), "ownerReferences": self.reference()});
        if let Some(hash) = hash {
            metadata["annotations"] = json!({INPUTS_HASH_ANNOTATION: hash});
        }
        metadata
    }
}

/// The pool the route sends traffic to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A stable hash of what the objects are rendered from.
pub fn inputs_hash(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The pod labels the pool selects: the provider's `poolSelector` with `{name}` replaced by the
/// deployment's name, else [`MODEL_DEPLOYMENT`]` = <name>` (the label providers put on the pod
/// template). (A key or value the API server refuses comes back as the pool's apply error.)
pub fn pool_selector(
    provider: Option<&BTreeMap<String, String>>,
    name: &str,
) -> BTreeMap<String, String> {
    match provider.filter(|labels| !labels.is_empty()) {
        Some(labels) => labels
            .iter()
            .map(|(key, value)| (key.clone(), value.replace("{name}", name)))
            .collect(),
        None => BTreeMap::from([(MODEL_DEPLOYMENT.to_string(), name.to_string())]),
    }
}

/// The InferencePool selecting the deployment's pods by `selector` ([`pool_selector`]).
pub fn pool(
    owner: &Owner,
    names: &Names,
    selector: &BTreeMap<String, String>,
    target_port: i32,
    hash: &str,
) -> Value {
    json!({
        "apiVersion": format!("{POOL_GROUP}/v1"), "kind": "InferencePool",
        "metadata": owner.metadata(&names.pool, Some(hash)),
        "spec": {
            "selector": {"matchLabels": selector},
            "targetPorts": [{"number": target_port}],
            "endpointPickerRef": {"name": names.epp, "port": {"number": EPP_PORT}},
        },
    })
}

/// The endpoint picker stack: ServiceAccount, Role, RoleBinding, ConfigMap, Deployment,
/// Service (in that order, so each exists before what refers to it).
///
/// The picker serves its metrics without authentication (`--metrics-endpoint-auth=false`, port
/// `metrics` 9090 declared on the container): with the default the picker asks the API server
/// to review every scraper's token (TokenReview and SubjectAccessReview, cluster-scoped), which
/// a namespaced Role owned by the deployment cannot grant and no ClusterRoleBinding can be
/// owned by it; a scraper then needs no permission at all. The metrics are pool and queue
/// figures (no request content); restrict who reaches port 9090 with a NetworkPolicy.
pub fn endpoint_picker(owner: &Owner, names: &Names, image: &str, config: &str) -> Vec<Value> {
    let epp = &names.epp;
    let mut pod_labels = owner.labels();
    pod_labels.insert("app.kubernetes.io/name".into(), epp.clone());
    pod_labels.insert("app.kubernetes.io/instance".into(), owner.name.clone());
    let selector = json!({"app.kubernetes.io/name": epp, "app.kubernetes.io/instance": owner.name});
    let mut metadata = owner.metadata(epp, None);
    metadata["labels"] = json!(pod_labels);
    let config_hash = inputs_hash(&[config]);
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata,
               "automountServiceAccountToken": true}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata,
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [POOL_X_GROUP],
             "resources": ["inferenceobjectives", "inferencemodelrewrites"],
             "verbs": ["get", "list", "watch"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": metadata,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": epp},
               "subjects": [{"kind": "ServiceAccount", "name": epp, "namespace": owner.namespace}]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
               "data": {EPP_CONFIG_FILE: config}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector},
            "template": {
                // A configuration change restarts the picker.
                "metadata": {"labels": pod_labels,
                             "annotations": {"airunway.ai/epp-config-hash": config_hash}},
                "spec": {
                    "serviceAccountName": epp,
                    "terminationGracePeriodSeconds": 130,
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "epp",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": ["--pool-name", names.pool, "--pool-namespace", owner.namespace,
                                 "--zap-encoder", "json",
                                 "--config-file", format!("/config/{EPP_CONFIG_FILE}"),
                                 "--tracing=false",
                                 // Plain metrics: see [`endpoint_picker`].
                                 "--metrics-endpoint-auth=false"],
                        "ports": [{"name": "grpc", "containerPort": EPP_PORT, "protocol": "TCP"},
                                  {"name": "grpc-health", "containerPort": EPP_HEALTH_PORT, "protocol": "TCP"},
                                  {"name": "metrics", "containerPort": EPP_METRICS_PORT, "protocol": "TCP"}],
                        "env": [
                            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        ],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        "livenessProbe": {"grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"},
                                          "initialDelaySeconds": 30, "periodSeconds": 10, "failureThreshold": 5},
                        "readinessProbe": {"grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"},
                                           "initialDelaySeconds": 10, "periodSeconds": 5},
                        "securityContext": {"allowPrivilegeEscalation": false,
                                            "readOnlyRootFilesystem": true,
                                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "config", "mountPath": "/config", "readOnly": true}],
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": epp}}],
                },
            },
        }}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": metadata,
            "spec": {"type": "ClusterIP", "selector": selector,
                     "ports": [{"name": "grpc-ext-proc", "port": EPP_PORT, "targetPort": EPP_PORT,
                                "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"}]}}),
    ]
}

/// Istio's API group.
pub const ISTIO_GROUP: &str = "networking.istio.io";

/// The Istio `DestinationRule` for the endpoint picker, as the Go AI Runway writes it (where
/// Istio is installed): the picker serves its gRPC with a self-signed certificate, so the
/// Gateway's proxy connects with TLS (`SIMPLE`) without verifying it. Named and owned like the
/// rest of the picker stack, removed with it.
pub fn destination_rule(owner: &Owner, names: &Names) -> Value {
    let epp = &names.epp;
    json!({
        "apiVersion": format!("{ISTIO_GROUP}/{}", super::detect::DESTINATION_RULE_VERSION),
        "kind": "DestinationRule",
        "metadata": owner.metadata(epp, None),
        "spec": {
            "host": format!("{epp}.{}.svc.cluster.local", owner.namespace),
            "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": true}},
        },
    })
}

/// The HTTPRoute attaching the pool to the Gateway for `model_names`: the deployment's model
/// name first, then its LoRA adapters' names (each a match of the one rule, at most 33 of the 64
/// a rule may hold).
pub fn route(
    owner: &Owner,
    names: &Names,
    gateway: &GatewayRef,
    pool: &PoolRef,
    model_names: &[&str],
    hash: &str,
) -> Value {
    let matches: Vec<Value> = model_names
        .iter()
        .map(|model_name| {
            json!({"path": {"type": "PathPrefix", "value": "/"},
                   "headers": [{"type": "Exact", "name": MODEL_NAME_HEADER, "value": model_name}]})
        })
        .collect();
    json!({
        "apiVersion": format!("{GATEWAY_GROUP}/v1"), "kind": "HTTPRoute",
        "metadata": owner.metadata(&names.route, Some(hash)),
        "spec": {
            "parentRefs": [{"group": GATEWAY_GROUP, "kind": "Gateway",
                            "name": gateway.name, "namespace": gateway.namespace}],
            "rules": [{
                "matches": matches,
                "backendRefs": [{"group": POOL_GROUP, "kind": "InferencePool",
                                 "name": pool.name, "namespace": pool.namespace, "weight": 1}],
                "timeouts": {"request": REQUEST_TIMEOUT},
            }],
        },
    })
}

/// The InferenceModelRewrite (`inference.networking.x-k8s.io/v1alpha2`) declaring the
/// deployment's LoRA adapters to the endpoint picker of `pool`: one rule per adapter, matching
/// requests whose `model` is the adapter's name exactly and keeping that name as the target
/// model (the name the engine serves the adapter under). The picker then schedules the request
/// for that adapter (its LoRA affinity scorer prefers pods that have it loaded) and counts each
/// decision per adapter (`inference_model_rewrite_decisions_total`).
pub fn model_rewrite(
    owner: &Owner,
    names: &Names,
    pool: &PoolRef,
    adapters: &[&str],
    hash: &str,
) -> Value {
    let rules: Vec<Value> = adapters
        .iter()
        .map(|adapter| {
            json!({"matches": [{"model": {"type": "Exact", "value": adapter}}],
                   "targets": [{"modelRewrite": adapter}]})
        })
        .collect();
    json!({
        "apiVersion": format!("{POOL_X_GROUP}/{MODEL_REWRITE_VERSION}"), "kind": "InferenceModelRewrite",
        "metadata": owner.metadata(&names.rewrite, Some(hash)),
        "spec": {
            "poolRef": {"group": POOL_GROUP, "kind": "InferencePool", "name": pool.name},
            "rules": rules,
        },
    })
}

/// The pod port the pool targets: the endpoint Service's target port for `service_port`
/// (else its `http`, 80 or 8080 port, else its first); a named target port cannot be resolved
/// from the Service alone, so the Service port stands in. Without a Service: the endpoint
/// port, else 8000.
pub fn target_port(service: Option<&Value>, service_port: Option<i32>) -> i32 {
    let fallback = service_port.unwrap_or(8000);
    let Some(ports) = service
        .and_then(|s| s.pointer("/spec/ports"))
        .and_then(Value::as_array)
    else {
        return fallback;
    };
    let number = |p: &Value| p.get("port").and_then(Value::as_i64);
    let chosen = service_port
        .and_then(|want| ports.iter().find(|p| number(p) == Some(i64::from(want))))
        .or_else(|| {
            ports
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some("http"))
        })
        .or_else(|| ports.iter().find(|p| matches!(number(p), Some(80 | 8080))))
        .or_else(|| ports.first());
    let Some(port) = chosen else {
        return fallback;
    };
    let own = number(port)
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(fallback);
    match port.get("targetPort") {
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(own),
        _ => own,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::pod_security::{self, Exemptions, Profile};

    fn owner() -> Owner {
        Owner {
            name: "qwen3".into(),
            namespace: "default".into(),
            uid: "u-1".into(),
            propagated: BTreeMap::new(),
        }
    }

    fn sample(name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../e2e/fixtures/status-samples")
            .join(name);
        let text = std::fs::read_to_string(path).unwrap();
        serde_saphyr::from_str(&text).unwrap()
    }

    #[test]
    fn the_pool_selects_the_providers_labels_when_it_names_them() {
        assert_eq!(
            pool_selector(None, "qwen3"),
            BTreeMap::from([(MODEL_DEPLOYMENT.to_string(), "qwen3".to_string())])
        );
        assert_eq!(
            pool_selector(Some(&BTreeMap::new()), "qwen3"),
            pool_selector(None, "qwen3"),
            "empty is the default"
        );
        // KAITO builds its workload pods itself, labelled with the Workspace's name.
        let kaito = BTreeMap::from([
            ("kaito.sh/workspace".to_string(), "{name}".to_string()),
            ("tier".to_string(), "{name}-{name}".to_string()),
        ]);
        let selector = pool_selector(Some(&kaito), "phi");
        assert_eq!(
            selector,
            BTreeMap::from([
                ("kaito.sh/workspace".to_string(), "phi".to_string()),
                ("tier".to_string(), "phi-phi".to_string()),
            ])
        );
        let pool = pool(&owner(), &Names::of("phi"), &selector, 5000, "h");
        assert_eq!(
            pool["spec"]["selector"],
            json!({"matchLabels": {"kaito.sh/workspace": "phi", "tier": "phi-phi"}})
        );
        assert_eq!(pool["spec"]["targetPorts"], json!([{"number": 5000}]));
    }

    #[test]
    fn pool_matches_the_sample_shape() {
        let names = Names::of("qwen3");
        let pool = pool(&owner(), &names, &pool_selector(None, "qwen3"), 8000, "h");
        assert_eq!(pool["spec"], sample("inferencepool-accepted.yaml")["spec"]);
        assert_eq!(
            pool["metadata"]["ownerReferences"][0]["kind"],
            "ModelDeployment"
        );
        assert_eq!(pool["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(pool["metadata"]["annotations"][INPUTS_HASH_ANNOTATION], "h");
        assert_eq!(
            pool["metadata"]["labels"]["airunway.ai/gateway-of"],
            "qwen3"
        );
        assert!(
            pool["metadata"]["labels"]
                .get("airunway.ai/deployment")
                .is_none(),
            "not a provider's label"
        );
    }

    #[test]
    fn route_matches_the_sample_spec() {
        let names = Names::of("qwen3");
        let gateway = GatewayRef {
            namespace: "default".into(),
            name: "inference-gateway".into(),
        };
        let pool = PoolRef {
            namespace: "default".into(),
            name: "qwen3".into(),
        };
        let route = route(&owner(), &names, &gateway, &pool, &["Qwen/Qwen3-0.6B"], "h");
        assert_eq!(route["spec"], sample("httproute-accepted.yaml")["spec"]);
        assert_eq!(route["metadata"]["name"], "qwen3");
    }

    /// LoRA adapters: the route matches each adapter's name beside the model's (same rule, same
    /// pool), and the rewrite names each adapter for the pool's picker, as the v1.5.0 CRD reads
    /// it (`poolRef` group/kind/name, `rules[].matches[].model {type: Exact, value}`,
    /// `rules[].targets[].modelRewrite`).
    #[test]
    fn adapters_in_the_route_and_the_model_rewrite() {
        let names = Names::of("qwen3");
        let gateway = GatewayRef {
            namespace: "default".into(),
            name: "inference-gateway".into(),
        };
        let pool = PoolRef {
            namespace: "default".into(),
            name: "qwen3".into(),
        };
        let route = route(
            &owner(),
            &names,
            &gateway,
            &pool,
            &["qwen3", "sql-lora", "chat-lora"],
            "h",
        );
        let values: Vec<&Value> = route["spec"]["rules"][0]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["headers"][0]["value"])
            .collect();
        assert_eq!(
            values,
            [&json!("qwen3"), &json!("sql-lora"), &json!("chat-lora")]
        );
        assert_eq!(route["spec"]["rules"].as_array().unwrap().len(), 1);
        assert_eq!(
            route["spec"]["rules"][0]["matches"][1]["path"],
            json!({"type": "PathPrefix", "value": "/"})
        );

        let rewrite = model_rewrite(&owner(), &names, &pool, &["sql-lora", "chat-lora"], "h2");
        assert_eq!(
            rewrite["apiVersion"],
            "inference.networking.x-k8s.io/v1alpha2"
        );
        assert_eq!(rewrite["kind"], "InferenceModelRewrite");
        assert_eq!(rewrite["metadata"]["name"], "qwen3-adapters");
        assert_eq!(rewrite["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(rewrite["metadata"]["labels"][GATEWAY_OF_LABEL], "qwen3");
        assert_eq!(
            rewrite["metadata"]["annotations"][INPUTS_HASH_ANNOTATION],
            "h2"
        );
        assert_eq!(
            rewrite["spec"],
            json!({"poolRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "qwen3"},
                   "rules": [
                       {"matches": [{"model": {"type": "Exact", "value": "sql-lora"}}],
                        "targets": [{"modelRewrite": "sql-lora"}]},
                       {"matches": [{"model": {"type": "Exact", "value": "chat-lora"}}],
                        "targets": [{"modelRewrite": "chat-lora"}]}]})
        );
    }

    /// The LoRA configuration is the default one plus the LoRA affinity scorer.
    #[test]
    fn the_lora_configuration_adds_the_affinity_scorer() {
        let with: Vec<&str> = DEFAULT_EPP_CONFIG_WITH_LORA.lines().collect();
        let without: Vec<&str> = DEFAULT_EPP_CONFIG.lines().collect();
        let added: Vec<&str> = with
            .iter()
            .filter(|l| !without.contains(l))
            .copied()
            .collect();
        assert_eq!(
            added,
            [
                "- type: lora-affinity-scorer",
                "  - pluginRef: lora-affinity-scorer"
            ]
        );
        assert!(without.iter().all(|l| with.contains(l)));
    }

    #[test]
    fn endpoint_picker_stack() {
        let names = Names::of("qwen3");
        let objects = endpoint_picker(&owner(), &names, "epp:v1", "config: x\n");
        let kinds: Vec<&str> = objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "ConfigMap",
                "Deployment",
                "Service"
            ]
        );
        for object in &objects {
            assert_eq!(object["metadata"]["name"], "qwen3-epp");
            assert_eq!(object["metadata"]["namespace"], "default");
            assert_eq!(object["metadata"]["ownerReferences"][0]["name"], "qwen3");
        }
        let deployment = &objects[4];
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "epp:v1");
        assert_eq!(
            container["args"],
            json!([
                "--pool-name",
                "qwen3",
                "--pool-namespace",
                "default",
                "--zap-encoder",
                "json",
                "--config-file",
                "/config/default-plugins.yaml",
                "--tracing=false",
                "--metrics-endpoint-auth=false"
            ])
        );
        assert_eq!(
            container["ports"][2],
            json!({"name": "metrics", "containerPort": 9090, "protocol": "TCP"}),
            "the metrics port a scraper finds"
        );
        assert_eq!(objects[3]["data"]["default-plugins.yaml"], "config: x\n");
        assert_eq!(objects[5]["spec"]["ports"][0]["port"], EPP_PORT);
        assert_eq!(
            objects[5]["spec"]["ports"][0]["appProtocol"],
            "kubernetes.io/h2c"
        );
        assert_eq!(
            objects[5]["spec"]["selector"],
            deployment["spec"]["selector"]["matchLabels"]
        );
        assert_eq!(objects[2]["subjects"][0]["name"], "qwen3-epp");
        // The Role grants reading only.
        for rule in objects[1]["rules"].as_array().unwrap() {
            assert_eq!(rule["verbs"], json!(["get", "list", "watch"]));
        }
        // The picker passes the restricted Pod Security profile. (The check's AI Runway rule
        // that model server pods keep the provider's service account does not apply: the
        // picker runs as its own, the one its Role is bound to.)
        let violations: Vec<_> =
            pod_security::check(deployment, Profile::Restricted, &Exemptions::default())
                .into_iter()
                .filter(|v| v.field != "spec.template.spec.serviceAccountName")
                .collect();
        assert!(violations.is_empty(), "{violations:?}");
        // A configuration change rolls the picker.
        let other = endpoint_picker(&owner(), &names, "epp:v1", "config: y\n");
        assert_ne!(
            other[4]["spec"]["template"]["metadata"]["annotations"],
            deployment["spec"]["template"]["metadata"]["annotations"]
        );
    }

    #[test]
    fn the_destination_rule_is_the_go_projects() {
        // Go: `controller/internal/controller/gateway_reconciler.go` reconcileEPPDestinationRule.
        let rule = destination_rule(&owner(), &Names::of("qwen3"));
        assert_eq!(rule["apiVersion"], "networking.istio.io/v1beta1");
        assert_eq!(rule["kind"], "DestinationRule");
        assert_eq!(rule["metadata"]["name"], "qwen3-epp");
        assert_eq!(rule["metadata"]["namespace"], "default");
        assert_eq!(rule["metadata"]["ownerReferences"][0]["name"], "qwen3");
        assert_eq!(rule["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            rule["spec"],
            json!({"host": "qwen3-epp.default.svc.cluster.local",
                   "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": true}}})
        );
    }

    #[test]
    fn target_port_from_the_endpoint_service() {
        let kaito = json!({"spec": {"ports": [{"name": "http", "port": 80, "targetPort": 5000}]}});
        assert_eq!(target_port(Some(&kaito), Some(80)), 5000);
        let named =
            json!({"spec": {"ports": [{"name": "http", "port": 8000, "targetPort": "http"}]}});
        assert_eq!(target_port(Some(&named), Some(8000)), 8000);
        let several = json!({"spec": {"ports": [{"name": "metrics", "port": 9090, "targetPort": 9090},
                                                  {"name": "web", "port": 8080, "targetPort": 8081}]}});
        assert_eq!(target_port(Some(&several), None), 8081);
        assert_eq!(target_port(None, Some(9000)), 9000);
        assert_eq!(target_port(None, None), 8000);
    }

    #[test]
    fn hash_depends_on_every_part() {
        assert_eq!(inputs_hash(&["a", "b"]), inputs_hash(&["a", "b"]));
        assert_ne!(inputs_hash(&["a", "b"]), inputs_hash(&["ab", ""]));
        assert_eq!(inputs_hash(&["a"]).len(), 16);
    }
}
