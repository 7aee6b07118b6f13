//! The objects a `ModelCache` owns, rendered (pure): its claim, the downloader's identity
//! (ServiceAccount, Role, RoleBinding) and the download Job. Each carries a controller owner
//! reference to the cache, so the garbage collector removes them with it.
//!
//! The Job's Pod passes Pod Security `restricted`: non-root (65532), no privilege escalation,
//! every capability dropped, `RuntimeDefault` seccomp, a read-only root filesystem (it writes
//! only to the claim and an empty `/tmp`). It needs a service-account token for one thing: to
//! report its progress to `status.download` of its own cache, which its Role allows
//! (`get`, `patch` on `modelcaches/status`, `resourceNames: [<cache>]`) and nothing else.

use airunway_api::constants::{API_VERSION, GROUP, HF_TOKEN_ENV, labels};
use airunway_api::storage::{self, DEFAULT_ACCESS_MODE, DEFAULT_REVISION, download_job_name};
use airunway_api::v1alpha1::{ModelCache, ModelSource};
use serde_json::{Value, json};

use super::{CacheConfig, JOB_BACKOFF_LIMIT, JOB_CONTAINER, JOB_MOUNT_PATH, JOB_USER};

/// The downloader's exit codes of failures a retry does not mend (docs/model-cache.md): a
/// flag's value (2), refused credentials (3), a missing model or file (4), an unsafe path or a
/// protocol error (6).
pub const PERMANENT_EXIT_CODES: [i32; 4] = [2, 3, 4, 6];

/// Suffix of the downloader's ServiceAccount, Role and RoleBinding.
pub const DOWNLOADER_SUFFIX: &str = "-downloader";

/// The downloader's ServiceAccount, Role and RoleBinding name.
pub fn downloader_name(cache: &str) -> String {
    storage::label_value_name(cache, DOWNLOADER_SUFFIX)
}

/// The cache's name as a label value.
pub fn cache_label(cache: &str) -> String {
    storage::label_value_name(cache, "")
}

fn owner(cache: &ModelCache) -> Value {
    json!([{
        "apiVersion": API_VERSION,
        "kind": "ModelCache",
        "name": cache.metadata.name,
        "uid": cache.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

fn metadata(cache: &ModelCache, name: &str) -> Value {
    let cache_name = cache.metadata.name.clone().unwrap_or_default();
    let mut metadata = json!({
        "name": name,
        "namespace": cache.metadata.namespace,
        "labels": {
            labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
            labels::MODEL_CACHE: cache_label(&cache_name),
        },
        "ownerReferences": owner(cache),
    });
    // The labels the deployment's runtime configuration propagated to its own cache go on
    // to what the cache makes (docs/platform.md).
    crate::runtime_config::stamp(
        &mut metadata,
        &crate::runtime_config::propagated_of(&cache.metadata),
    );
    metadata
}

/// The claim a cache without `spec.claimName` gets: named after the cache, of `spec.size`,
/// `spec.storageClassName` as given, `spec.accessMode` (default `ReadWriteMany`).
pub fn claim(cache: &ModelCache) -> Value {
    let name = cache.metadata.name.clone().unwrap_or_default();
    let mut spec = json!({
        "accessModes": [cache.spec.access_mode.map_or(DEFAULT_ACCESS_MODE, |m| m.as_str())],
        "resources": {"requests": {"storage": cache.spec.size}},
    });
    if let Some(class) = &cache.spec.storage_class_name {
        spec["storageClassName"] = json!(class);
    }
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": metadata(cache, &name),
        "spec": spec,
    })
}

/// The downloader's ServiceAccount, its Role (its own cache's status, nothing else) and the
/// binding.
pub fn identity(cache: &ModelCache) -> [Value; 3] {
    let cache_name = cache.metadata.name.clone().unwrap_or_default();
    let name = downloader_name(&cache_name);
    [
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(cache, &name),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": metadata(cache, &name),
            "rules": [{
                "apiGroups": [GROUP],
                "resources": ["modelcaches/status"],
                "resourceNames": [cache_name],
                "verbs": ["get", "patch"],
            }],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": metadata(cache, &name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name,
                "namespace": cache.metadata.namespace}],
        }),
    ]
}

/// The downloader's arguments for `cache`.
pub fn args(cache: &ModelCache, config: &CacheConfig) -> Vec<String> {
    let name = cache.metadata.name.clone().unwrap_or_default();
    let namespace = cache.metadata.namespace.clone().unwrap_or_default();
    let mut args: Vec<String> = match cache.spec.source {
        ModelSource::Huggingface => vec![
            "--model-id".into(),
            cache.spec.model_id.clone().unwrap_or_default(),
            "--revision".into(),
            cache
                .spec
                .revision
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| DEFAULT_REVISION.to_string()),
            "--hf-home".into(),
            JOB_MOUNT_PATH.into(),
        ],
        ModelSource::Custom => {
            let mut args = vec![
                "--uri".into(),
                cache.spec.uri.clone().unwrap_or_default(),
                "--target-dir".into(),
                JOB_MOUNT_PATH.into(),
            ];
            if let Some(sha256) = cache.spec.sha256.as_ref().filter(|s| !s.is_empty()) {
                args.extend(["--sha256".into(), sha256.clone()]);
            }
            args
        }
    };
    args.extend([
        "--report-status".into(),
        format!("{API_VERSION}/modelcaches/{namespace}/{name}"),
    ]);
    if let Some(endpoint) = config.endpoint.as_ref().filter(|e| !e.is_empty()) {
        args.extend(["--endpoint".into(), endpoint.clone()]);
    }
    args
}

/// The download Job (the shape of the Go AI Runway's, run as the downloader's identity).
pub fn job(cache: &ModelCache, config: &CacheConfig, claim_name: &str) -> Value {
    let cache_name = cache.metadata.name.clone().unwrap_or_default();
    let job_name = download_job_name(&cache_name);
    let mut meta = metadata(cache, &job_name);
    meta["labels"][labels::JOB_TYPE] = json!(labels::JOB_TYPE_MODEL_DOWNLOAD);
    let pod_labels = meta["labels"].clone();
    let mut container = json!({
        "name": JOB_CONTAINER,
        "image": config.downloader_image,
        "args": args(cache, config),
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"memory": "2Gi"},
        },
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": JOB_USER,
            "runAsGroup": JOB_USER,
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "model-cache", "mountPath": JOB_MOUNT_PATH},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    });
    if let Some(secret) = cache
        .spec
        .token_secret_name
        .as_ref()
        .filter(|s| !s.is_empty())
    {
        container["env"] = json!([{
            "name": HF_TOKEN_ENV,
            "valueFrom": {"secretKeyRef": {"name": secret, "key": HF_TOKEN_ENV}},
        }]);
    }
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": JOB_BACKOFF_LIMIT,
            "completions": 1,
            "parallelism": 1,
            // A failure no retry mends (bad flags, 401, 404, an unsafe path) fails the Job at
            // once instead of after six retries with growing backoff.
            "podFailurePolicy": {"rules": [{
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": JOB_CONTAINER,
                    "operator": "In",
                    "values": PERMANENT_EXIT_CODES,
                },
            }]},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": downloader_name(&cache_name),
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": JOB_USER,
                        "runAsGroup": JOB_USER,
                        "fsGroup": JOB_USER,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "model-cache", "persistentVolumeClaim": {"claimName": claim_name}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use airunway_api::kubernetes_names::is_dns1123_label;
    use airunway_api::pod_security::{self, Exemptions, Profile};

    fn cache(spec: Value) -> ModelCache {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": "qwen-qwen3-0-6b-0123456789abcdef", "namespace": "team",
                "uid": "u-1"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn config() -> CacheConfig {
        CacheConfig {
            endpoint: Some("http://hub.local:8080".into()),
            ..CacheConfig::default()
        }
    }

    #[test]
    fn the_job_passes_pod_security_restricted() {
        let c = cache(
            json!({"source": "huggingface", "modelId": "Qwen/Qwen3-0.6B",
            "size": "10Gi", "tokenSecretName": "hf"}),
        );
        let job = job(&c, &config(), "qwen-qwen3-0-6b-0123456789abcdef");
        // The profile's rules only: AI Runway's own rule against `serviceAccountName` guards
        // what users render into model servers; this Pod's account is the point.
        let violations: Vec<_> =
            pod_security::check(&job, Profile::Restricted, &Exemptions::default())
                .into_iter()
                .filter(|v| v.field != "spec.template.spec.serviceAccountName")
                .collect();
        assert_eq!(violations, vec![]);
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(
            job["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"],
            json!([2, 3, 4, 6])
        );
        assert_eq!(pod["securityContext"]["fsGroup"], 65532);
        assert_eq!(
            pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"],
            true
        );
        assert_eq!(
            pod["serviceAccountName"],
            "qwen-qwen3-0-6b-0123456789abcdef-downloader"
        );
        assert_eq!(
            pod["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"],
            json!({"name": "hf", "key": "HF_TOKEN"})
        );
        assert_eq!(
            job["metadata"]["labels"],
            json!({"airunway.ai/managed-by": "airunway",
                "airunway.ai/model-cache": "qwen-qwen3-0-6b-0123456789abcdef",
                "airunway.ai/job-type": "model-download"})
        );
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "ModelCache");
        assert_eq!(job["metadata"]["ownerReferences"][0]["controller"], true);
    }

    #[test]
    fn the_downloader_reports_to_its_own_cache() {
        let c =
            cache(json!({"source": "huggingface", "modelId": "Qwen/Qwen3-0.6B", "size": "1Gi"}));
        assert_eq!(
            args(&c, &config()),
            [
                "--model-id",
                "Qwen/Qwen3-0.6B",
                "--revision",
                "main",
                "--hf-home",
                "/model-cache",
                "--report-status",
                "airunway.ai/v1alpha1/modelcaches/team/qwen-qwen3-0-6b-0123456789abcdef",
                "--endpoint",
                "http://hub.local:8080",
            ]
        );
        let custom = cache(
            json!({"source": "custom", "uri": "https://x/m.gguf", "sha256": "ab",
            "claimName": "c"}),
        );
        let a = args(&custom, &CacheConfig::default());
        assert_eq!(
            &a[..6],
            [
                "--uri",
                "https://x/m.gguf",
                "--target-dir",
                "/model-cache",
                "--sha256",
                "ab"
            ]
        );
        assert!(!a.contains(&"--endpoint".to_string()));
        let [_, role, binding] = identity(&c);
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": ["airunway.ai"], "resources": ["modelcaches/status"],
                "resourceNames": ["qwen-qwen3-0-6b-0123456789abcdef"], "verbs": ["get", "patch"]}])
        );
        assert_eq!(binding["subjects"][0]["name"], role["metadata"]["name"]);
    }

    #[test]
    fn the_claim_defaults_to_read_write_many() {
        let c = cache(json!({"source": "huggingface", "modelId": "m/m", "size": "5Gi"}));
        let claim = claim(&c);
        assert_eq!(
            claim["metadata"]["name"],
            "qwen-qwen3-0-6b-0123456789abcdef"
        );
        assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteMany"]));
        assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "5Gi");
        assert!(claim["spec"].get("storageClassName").is_none());
        let c = cache(
            json!({"source": "huggingface", "modelId": "m/m", "size": "5Gi",
            "storageClassName": "", "accessMode": "ReadWriteOnce"}),
        );
        assert_eq!(claim_of(&c)["spec"]["storageClassName"], "");
        assert_eq!(
            claim_of(&c)["spec"]["accessModes"],
            json!(["ReadWriteOnce"])
        );
    }

    fn claim_of(c: &ModelCache) -> Value {
        claim(c)
    }

    #[test]
    fn long_names_stay_label_values() {
        let long = "d".repeat(80);
        for name in [downloader_name(&long), cache_label(&long)] {
            assert!(name.len() <= 63 && is_dns1123_label(&name), "{name}");
        }
        assert_ne!(downloader_name(&long), downloader_name(&"d".repeat(81)));
        assert_eq!(cache_label("short"), "short");
    }
}
