//! The `model.storage` volumes as a pod mounts them, and the environment that points an engine
//! at the caches (pure), from [`storage::resolved_volumes`] alone: every provider mounts the
//! same claims at the same paths.

use k8s_openapi::api::core::v1::EnvVar;
use serde_json::{Value, json};

use crate::storage::{self, HF_HOME_ENV, VolumePurpose};
use crate::v1alpha1::ModelDeployment;

/// The pod `volumes` and the engine container's `volumeMounts` of `md`'s `model.storage`
/// volumes, in spec order: each a `persistentVolumeClaim` volume named after the volume,
/// mounted at its mount path (`readOnly` when the volume is).
pub fn cache_volumes(md: &ModelDeployment) -> (Vec<Value>, Vec<Value>) {
    storage::resolved_volumes(md)
        .into_iter()
        .map(|volume| {
            let pod_volume = json!({"name": volume.name,
                "persistentVolumeClaim": {"claimName": volume.claim_name}});
            let mut mount = json!({"name": volume.name, "mountPath": volume.mount_path});
            if volume.read_only {
                mount["readOnly"] = json!(true);
            }
            (pod_volume, mount)
        })
        .unzip()
}

/// The environment that points the engine at `md`'s caches: [`HF_HOME_ENV`] = the
/// `modelCache` volume's mount path (where the downloader wrote the Hugging Face hub cache),
/// and, when the engine has one (`compilation_env`, e.g. vLLM's `VLLM_CACHE_ROOT`), that
/// variable = the `compilationCache` volume's mount path. A variable the user's `env` sets is
/// left out: the user's value wins.
pub fn cache_env(md: &ModelDeployment, compilation_env: Option<&str>) -> Vec<EnvVar> {
    let user_sets = |name: &str| md.spec.env.iter().flatten().any(|var| var.name == name);
    let mut env = Vec::new();
    let mut point = |name: &str, purpose: VolumePurpose| {
        if let Some(volume) = storage::volume_for(md, purpose)
            && !user_sets(name)
        {
            env.push(EnvVar {
                name: name.to_string(),
                value: Some(volume.mount_path),
                ..Default::default()
            });
        }
    };
    point(HF_HOME_ENV, VolumePurpose::ModelCache);
    if let Some(name) = compilation_env {
        point(name, VolumePurpose::CompilationCache);
    }
    env
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn md(storage: Value, env: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ns"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B", "storage": storage}, "env": env},
        }))
        .unwrap()
    }

    fn names(env: &[EnvVar]) -> Vec<(&str, &str)> {
        env.iter()
            .map(|v| (v.name.as_str(), v.value.as_deref().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn every_volume_mounted_and_the_engine_pointed_at_the_caches() {
        let md = md(
            json!({"volumes": [
                {"name": "weights", "purpose": "modelCache", "mountPath": "/models"},
                {"name": "compiled", "purpose": "compilationCache", "size": "10Gi"},
                {"name": "data", "claimName": "team-data", "mountPath": "/data", "readOnly": true}]}),
            json!([]),
        );
        let shared = storage::volume_for(&md, VolumePurpose::ModelCache)
            .unwrap()
            .claim_name;
        let (volumes, mounts) = cache_volumes(&md);
        assert_eq!(
            volumes,
            [
                json!({"name": "weights", "persistentVolumeClaim": {"claimName": shared}}),
                json!({"name": "compiled", "persistentVolumeClaim": {"claimName": "qwen-compiled"}}),
                json!({"name": "data", "persistentVolumeClaim": {"claimName": "team-data"}}),
            ]
        );
        assert_eq!(
            mounts,
            [
                json!({"name": "weights", "mountPath": "/models"}),
                json!({"name": "compiled", "mountPath": "/compilation-cache"}),
                json!({"name": "data", "mountPath": "/data", "readOnly": true}),
            ]
        );
        assert_eq!(
            names(&cache_env(&md, Some("VLLM_CACHE_ROOT"))),
            [
                ("HF_HOME", "/models"),
                ("VLLM_CACHE_ROOT", "/compilation-cache")
            ]
        );
        assert_eq!(names(&cache_env(&md, None)), [("HF_HOME", "/models")]);
    }

    #[test]
    fn the_users_variables_win_and_no_volumes_mean_nothing() {
        let md_user = md(
            json!({"volumes": [{"name": "weights", "purpose": "modelCache"}]}),
            json!([{"name": "HF_HOME", "value": "/elsewhere"}]),
        );
        assert!(cache_env(&md_user, Some("VLLM_CACHE_ROOT")).is_empty());
        assert_eq!(cache_volumes(&md_user).0.len(), 1);
        let none = md(json!({}), json!([]));
        assert_eq!(cache_volumes(&none), (vec![], vec![]));
        assert!(cache_env(&none, Some("VLLM_CACHE_ROOT")).is_empty());
    }
}
