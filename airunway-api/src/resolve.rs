//! Pure helpers that resolve what a deployment means once defaults and the core's choices are
//! taken into account. No I/O, no clock.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};

use crate::constants::{HF_TOKEN_ENV, annotations, labels};
use crate::storage::{DEFAULT_ACCESS_MODE, VolumePurpose, managed_claim_name};
use crate::v1alpha1::{
    ComponentScaling, Condition, EngineType, GpuSpec, ModelDeployment, ModelDeploymentSpec,
    ModelSource, Phase, ResourceSpec, ServingMode, ServingSpec, StorageVolume,
};

/// The default GPU extended resource name.
pub const DEFAULT_GPU_TYPE: &str = "nvidia.com/gpu";

impl ModelDeploymentSpec {
    /// The model server container's environment: `env`, then [`HF_TOKEN_ENV`] from the token
    /// Secret's key of that name (a reference, never the value; the Secret's other keys stay
    /// out), which replaces a user entry of that name.
    pub fn container_env(&self) -> Vec<EnvVar> {
        let secret = self
            .secrets
            .as_ref()
            .and_then(|s| s.hugging_face_token.as_deref())
            .filter(|s| !s.is_empty());
        let mut env: Vec<EnvVar> = self
            .env
            .iter()
            .flatten()
            .filter(|var| !(secret.is_some() && var.name == HF_TOKEN_ENV))
            .cloned()
            .collect();
        if let Some(secret) = secret {
            env.push(EnvVar {
                name: HF_TOKEN_ENV.to_string(),
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: secret.to_string(),
                        key: HF_TOKEN_ENV.to_string(),
                        optional: None,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        env
    }

    /// `model.source`, defaulting to `huggingface`.
    pub fn model_source(&self) -> ModelSource {
        self.model.source.unwrap_or(ModelSource::Huggingface)
    }

    /// `serving.mode`, defaulting to `aggregated`.
    pub fn serving_mode(&self) -> ServingMode {
        self.serving
            .as_ref()
            .and_then(|s| s.mode)
            .unwrap_or(ServingMode::Aggregated)
    }

    /// `scaling.replicas`, defaulting to 1.
    pub fn replicas(&self) -> i32 {
        self.scaling.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    /// The workers of one disaggregated role (`scaling.prefill` or `scaling.decode`):
    /// `replicas` of the role (default 1) times `scaling.replicas` — the scale subresource
    /// scales a disaggregated deployment in units of its prefill:decode ratio, and 0 stops both.
    pub fn role_replicas(&self, role: Option<&ComponentScaling>) -> i32 {
        role.and_then(|r| r.replicas)
            .unwrap_or(1)
            .saturating_mul(self.replicas())
    }

    /// `engine.type` as written by the user.
    pub fn explicit_engine(&self) -> Option<EngineType> {
        self.engine.as_ref().and_then(|e| e.engine_type)
    }

    /// `provider.name` as written by the user (empty strings count as absent).
    pub fn explicit_provider(&self) -> Option<&str> {
        self.provider
            .as_ref()
            .and_then(|p| p.name.as_deref())
            .filter(|n| !n.is_empty())
    }

    /// The image override: `engine.image`, else the legacy `spec.image` (empty strings count as
    /// absent).
    pub fn image_override(&self) -> Option<&str> {
        self.engine
            .as_ref()
            .and_then(|e| e.image.as_deref())
            .filter(|i| !i.is_empty())
            .or_else(|| self.image.as_deref().filter(|i| !i.is_empty()))
    }

    /// Whether the deployment gets one GPU by default: aggregated, no `resources`, an explicit
    /// engine other than llama.cpp and no image override (the Go AI Runway's defaulting, which
    /// also looks at `engine.image` here).
    pub fn gets_default_gpu(&self) -> bool {
        self.serving_mode() == ServingMode::Aggregated
            && self.resources.is_none()
            && self
                .explicit_engine()
                .is_some_and(|e| e != EngineType::Llamacpp)
            && self.image_override().is_none()
    }

    /// GPUs per aggregated worker: `resources.gpu.count`, 1 when [`Self::gets_default_gpu`],
    /// else 0.
    pub fn gpu_count(&self) -> i32 {
        if self.gets_default_gpu() {
            return 1;
        }
        self.resources
            .as_ref()
            .and_then(|r| r.gpu.as_ref())
            .and_then(|g| g.count)
            .unwrap_or(0)
    }

    /// Whether prefix caching is on (`engine.enablePrefixCaching`, default true).
    pub fn prefix_caching(&self) -> bool {
        self.engine
            .as_ref()
            .and_then(|e| e.enable_prefix_caching)
            .unwrap_or(true)
    }

    /// Whether the engine runs eagerly (`engine.enforceEager`, default false).
    pub fn enforce_eager(&self) -> bool {
        self.engine
            .as_ref()
            .and_then(|e| e.enforce_eager)
            .unwrap_or(false)
    }

    /// `engine.extraArgs`, empty when omitted.
    pub fn extra_args(&self) -> &[String] {
        self.engine
            .as_ref()
            .and_then(|e| e.extra_args.as_deref())
            .unwrap_or_default()
    }

    /// The GPU extended resource name for aggregated workers.
    pub fn gpu_type(&self) -> &str {
        self.resources
            .as_ref()
            .and_then(|r| r.gpu.as_ref())
            .and_then(|g| g.gpu_type.as_deref())
            .unwrap_or(DEFAULT_GPU_TYPE)
    }

    /// Whether the deployment asks for GPUs: `resources.gpu.count > 0` in aggregated mode, a
    /// prefill or decode GPU count > 0 in disaggregated mode.
    pub fn gpu_requested(&self) -> bool {
        match self.serving_mode() {
            ServingMode::Aggregated => self.gpu_count() > 0,
            ServingMode::Disaggregated => {
                let count = |c: Option<&ComponentScaling>| {
                    c.and_then(|c| c.gpu.as_ref())
                        .and_then(|g| g.count)
                        .unwrap_or(0)
                };
                let scaling = self.scaling.as_ref();
                count(scaling.and_then(|s| s.prefill.as_ref())) > 0
                    || count(scaling.and_then(|s| s.decode.as_ref())) > 0
            }
        }
    }

    /// The spec with every default applied but the claim names of managed volumes, which need
    /// the deployment's name ([`Self::with_defaults_named`]). The input of selection rules.
    pub fn with_defaults(&self) -> ModelDeploymentSpec {
        self.with_defaults_named(None)
    }

    /// The spec with every default the mutating webhook writes for the deployment named
    /// `deployment` (what the API server stores): the schema defaults, one GPU where
    /// [`Self::gets_default_gpu`], and the storage volumes' defaults (the Go AI Runway's): an
    /// empty `purpose` is `custom`, an empty `mountPath` that of the purpose, and a volume with
    /// `size` gets the access mode `ReadWriteMany` and, when `deployment` is given, the claim
    /// name `<deployment>-<volume>`. Agrees with [`apply_spec_defaults_named`].
    pub fn with_defaults_named(&self, deployment: Option<&str>) -> ModelDeploymentSpec {
        let mut spec = self.clone();
        if spec.gets_default_gpu() {
            spec.resources = Some(ResourceSpec {
                gpu: Some(GpuSpec {
                    count: Some(1),
                    gpu_type: Some(DEFAULT_GPU_TYPE.to_string()),
                }),
                ..Default::default()
            });
        }
        if let Some(engine) = spec.engine.as_mut() {
            engine.enable_prefix_caching.get_or_insert(true);
        }
        spec.model.source.get_or_insert(ModelSource::Huggingface);
        spec.serving
            .get_or_insert_with(ServingSpec::default)
            .mode
            .get_or_insert(ServingMode::Aggregated);
        let scaling = spec.scaling.get_or_insert_with(Box::default);
        scaling.replicas.get_or_insert(1);
        for component in [scaling.prefill.as_mut(), scaling.decode.as_mut()]
            .into_iter()
            .flatten()
        {
            component.replicas.get_or_insert(1);
            default_gpu_type(component.gpu.as_mut());
        }
        if let Some(resources) = spec.resources.as_mut() {
            default_gpu_type(resources.gpu.as_mut());
        }
        if let Some(volumes) = spec.model.storage.as_mut().and_then(|s| s.volumes.as_mut()) {
            for volume in volumes {
                default_volume(volume, deployment);
            }
        }
        spec
    }
}

/// The Go AI Runway's defaults of one storage volume (see
/// [`ModelDeploymentSpec::with_defaults_named`]).
fn default_volume(volume: &mut StorageVolume, deployment: Option<&str>) {
    fn empty(value: &Option<String>) -> bool {
        value.as_deref().is_none_or(str::is_empty)
    }
    if empty(&volume.purpose) {
        volume.purpose = Some(VolumePurpose::Custom.as_str().to_string());
    }
    if empty(&volume.mount_path)
        && let Some(path) = VolumePurpose::of(volume).and_then(VolumePurpose::default_mount_path)
    {
        volume.mount_path = Some(path.to_string());
    }
    if volume.size.is_some() {
        if empty(&volume.claim_name)
            && let Some(deployment) = deployment.filter(|d| !d.is_empty())
        {
            volume.claim_name = Some(managed_claim_name(deployment, &volume.name));
        }
        if empty(&volume.access_mode) {
            volume.access_mode = Some(DEFAULT_ACCESS_MODE.to_string());
        }
    }
}

/// Applies the defaults to a ModelDeployment `spec` in JSON form, without the claim names of
/// managed volumes (they need the deployment's name: [`apply_spec_defaults_named`]). Agrees
/// with [`ModelDeploymentSpec::with_defaults`].
pub fn apply_spec_defaults(spec: &mut serde_json::Value) {
    apply_spec_defaults_named(spec, None);
}

/// Applies the defaults to the `spec` of the ModelDeployment named `deployment`, in JSON form,
/// only adding missing keys (and filling the storage fields the Go AI Runway treats as missing
/// when empty); fields this version does not know are left untouched. The mutating webhook uses
/// it; it agrees with [`ModelDeploymentSpec::with_defaults_named`].
pub fn apply_spec_defaults_named(spec: &mut serde_json::Value, deployment: Option<&str>) {
    use serde_json::{Value, json};
    fn object<'a>(
        parent: &'a mut Value,
        key: &str,
    ) -> Option<&'a mut serde_json::Map<String, Value>> {
        parent
            .as_object_mut()?
            .entry(key)
            .or_insert_with(|| json!({}))
            .as_object_mut()
    }
    fn gpu_type(component: Option<&mut Value>) {
        if let Some(gpu) = component
            .and_then(|c| c.get_mut("gpu"))
            .and_then(Value::as_object_mut)
        {
            gpu.entry("type").or_insert_with(|| json!(DEFAULT_GPU_TYPE));
        }
    }
    if !spec.is_object() {
        return;
    }
    // One GPU for an aggregated deployment with an explicit engine other than llama.cpp, no
    // `resources` and no image override (see `ModelDeploymentSpec::gets_default_gpu`). Decided
    // on the typed view so the JSON and typed defaulting cannot disagree.
    if let Ok(typed) = serde_json::from_value::<ModelDeploymentSpec>(spec.clone())
        && typed.gets_default_gpu()
        && let Some(map) = spec.as_object_mut()
    {
        map.insert(
            "resources".into(),
            json!({"gpu": {"count": 1, "type": DEFAULT_GPU_TYPE}}),
        );
    }
    if let Some(engine) = spec.get_mut("engine").and_then(Value::as_object_mut) {
        engine
            .entry("enablePrefixCaching")
            .or_insert_with(|| json!(true));
    }
    if let Some(model) = spec.get_mut("model").and_then(Value::as_object_mut) {
        model
            .entry("source")
            .or_insert_with(|| json!("huggingface"));
    }
    if let Some(serving) = object(spec, "serving") {
        serving.entry("mode").or_insert_with(|| json!("aggregated"));
    }
    if let Some(scaling) = object(spec, "scaling") {
        scaling.entry("replicas").or_insert_with(|| json!(1));
        for role in ["prefill", "decode"] {
            if let Some(component) = scaling.get_mut(role).and_then(Value::as_object_mut) {
                component.entry("replicas").or_insert_with(|| json!(1));
            }
            gpu_type(scaling.get_mut(role));
        }
    }
    gpu_type(spec.get_mut("resources"));
    let volumes = spec
        .get_mut("model")
        .and_then(|m| m.get_mut("storage"))
        .and_then(|s| s.get_mut("volumes"))
        .and_then(Value::as_array_mut);
    for volume in volumes.into_iter().flatten() {
        // Decided on the typed view of the volume, written back key by key, so the JSON and
        // typed defaulting cannot disagree and unknown keys stay.
        let Ok(mut typed) = serde_json::from_value::<StorageVolume>(volume.clone()) else {
            continue;
        };
        default_volume(&mut typed, deployment);
        let (Ok(Value::Object(defaulted)), Some(map)) =
            (serde_json::to_value(&typed), volume.as_object_mut())
        else {
            continue;
        };
        for key in ["purpose", "mountPath", "claimName", "accessMode"] {
            if let Some(value) = defaulted.get(key) {
                map.insert(key.to_string(), value.clone());
            }
        }
    }
}

fn default_gpu_type(gpu: Option<&mut GpuSpec>) {
    if let Some(gpu) = gpu {
        gpu.gpu_type
            .get_or_insert_with(|| DEFAULT_GPU_TYPE.to_string());
    }
}

/// The fields whose change makes a provider delete and recreate its upstream resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeploymentIdentity {
    /// `model.id`.
    pub model_id: Option<String>,
    /// `model.source` (defaulted).
    pub source: ModelSource,
    /// The resolved engine.
    pub engine: Option<EngineType>,
    /// The provider in `status.provider.name`.
    pub provider: Option<String>,
    /// `serving.mode` (defaulted).
    pub mode: ServingMode,
}

impl std::fmt::Display for DeploymentIdentity {
    /// A stable, human-readable rendering, e.g.
    /// `model=meta-llama/x;source=huggingface;engine=vllm;provider=dynamo;mode=aggregated`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "model={};source={};engine={};provider={};mode={}",
            self.model_id.as_deref().unwrap_or(""),
            match self.source {
                ModelSource::Huggingface => "huggingface",
                ModelSource::Custom => "custom",
            },
            self.engine.map(EngineType::as_str).unwrap_or(""),
            self.provider.as_deref().unwrap_or(""),
            self.mode,
        )
    }
}

impl ModelDeployment {
    /// The engine in use: `spec.engine.type`, else the one the core recorded in status.
    pub fn resolved_engine(&self) -> Option<EngineType> {
        self.spec.explicit_engine().or_else(|| {
            self.status
                .as_ref()
                .and_then(|s| s.engine.as_ref())
                .and_then(|e| e.engine_type)
        })
    }

    /// The status condition of `type_`, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        crate::conditions::find(
            self.status.as_ref().and_then(|s| s.conditions.as_deref()),
            type_,
        )
    }

    /// `status.phase`, if written.
    pub fn phase(&self) -> Option<Phase> {
        self.status.as_ref().and_then(|s| s.phase)
    }

    /// The provider recorded in `status.provider.name`.
    pub fn selected_provider(&self) -> Option<&str> {
        self.status
            .as_ref()
            .and_then(|s| s.provider.as_ref())
            .and_then(|p| p.name.as_deref())
            .filter(|n| !n.is_empty())
    }

    /// Whether `airunway.ai/reconcile-paused: "true"` is set.
    pub fn is_reconcile_paused(&self) -> bool {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::RECONCILE_PAUSED))
            .is_some_and(|v| v == "true")
    }

    /// Whether `airunway.ai/dry-run: "true"` is set: a preview, for which nothing is created —
    /// neither upstream objects by its provider nor caches, claims or autoscalers by the core.
    pub fn is_dry_run(&self) -> bool {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::DRY_RUN))
            .is_some_and(|v| v == "true")
    }

    /// The identity fields (see [`DeploymentIdentity`]).
    pub fn identity(&self) -> DeploymentIdentity {
        DeploymentIdentity {
            model_id: self.spec.model.id.clone(),
            source: self.spec.model_source(),
            engine: self.resolved_engine(),
            provider: self.selected_provider().map(str::to_string),
            mode: self.spec.serving_mode(),
        }
    }

    /// Labels for upstream objects: the deployment's `airunway.ai/`-prefixed labels plus
    /// `airunway.ai/managed-by: airunway`.
    pub fn propagated_labels(&self) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = self
            .metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| k.starts_with(labels::PROPAGATED_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert(
            labels::MANAGED_BY.to_string(),
            labels::MANAGED_BY_VALUE.to_string(),
        );
        out
    }

    /// The model name clients use: `model.servedName`, else the last path segment of
    /// `model.id`. `None` for custom sources without a served name.
    pub fn served_model_name(&self) -> Option<String> {
        if let Some(name) = self
            .spec
            .model
            .served_name
            .as_deref()
            .filter(|n| !n.is_empty())
        {
            return Some(name.to_string());
        }
        let id = self.spec.model.id.as_deref()?;
        id.rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::{EngineSpec, ModelSpec, ResourceSpec, ScalingSpec};

    fn spec() -> ModelDeploymentSpec {
        ModelDeploymentSpec {
            model: ModelSpec {
                id: Some("org/model".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn defaults_are_the_schema_defaults() {
        let s = spec();
        assert_eq!(s.model_source(), ModelSource::Huggingface);
        assert_eq!(s.serving_mode(), ServingMode::Aggregated);
        assert_eq!(s.replicas(), 1);
        assert!(!s.gpu_requested());
        let d = s.with_defaults();
        assert_eq!(d.model.source, Some(ModelSource::Huggingface));
        assert_eq!(
            d.serving.and_then(|s| s.mode),
            Some(ServingMode::Aggregated)
        );
        assert_eq!(d.scaling.and_then(|s| s.replicas), Some(1));
        assert_eq!(d.resources, None, "resources.gpu is never invented");
    }

    #[test]
    fn explicit_zero_replicas_is_kept() {
        let mut s = spec();
        s.scaling = Some(Box::new(ScalingSpec {
            replicas: Some(0),
            ..Default::default()
        }));
        assert_eq!(s.replicas(), 0);
        assert_eq!(s.with_defaults().scaling.and_then(|s| s.replicas), Some(0));
    }

    #[test]
    fn gpu_requested_per_mode() {
        let mut s = spec();
        s.resources = Some(ResourceSpec {
            gpu: Some(GpuSpec {
                count: Some(2),
                gpu_type: None,
            }),
            ..Default::default()
        });
        assert!(s.gpu_requested());
        assert_eq!(s.gpu_type(), DEFAULT_GPU_TYPE);
        let mut d = spec();
        d.serving = Some(ServingSpec {
            mode: Some(ServingMode::Disaggregated),
        });
        d.scaling = Some(Box::new(ScalingSpec {
            prefill: Some(ComponentScaling {
                gpu: Some(GpuSpec {
                    count: Some(1),
                    gpu_type: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }));
        assert!(d.gpu_requested());
        let defaulted = d.with_defaults();
        let prefill = defaulted
            .scaling
            .and_then(|s| s.prefill)
            .unwrap_or_default();
        assert_eq!(prefill.replicas, Some(1));
        assert_eq!(
            prefill.gpu.and_then(|g| g.gpu_type).as_deref(),
            Some(DEFAULT_GPU_TYPE)
        );
    }

    #[test]
    fn json_defaults_agree_with_typed_defaults() {
        let specs = [
            serde_json::json!({"model": {"id": "a/b"}}),
            serde_json::json!({"model": {"id": "a/b", "source": "custom"}, "resources": {"gpu": {"count": 1}}, "scaling": {"replicas": 0}}),
            serde_json::json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"},
                "scaling": {"prefill": {"gpu": {"count": 2}}, "decode": {"replicas": 3, "gpu": {"count": 1, "type": "amd.com/gpu"}}}}),
        ];
        for raw in specs {
            let typed: ModelDeploymentSpec = serde_json::from_value(raw.clone()).unwrap();
            let mut json = raw.clone();
            apply_spec_defaults(&mut json);
            assert_eq!(
                json,
                serde_json::to_value(typed.with_defaults()).unwrap(),
                "{raw}"
            );
        }
        let storage = serde_json::json!({"model": {"id": "a/b", "storage": {"volumes": [
            {"name": "weights", "purpose": "modelCache", "size": "100Gi"},
            {"name": "compiled", "purpose": "compilationCache", "mountPath": "", "size": "1Gi", "accessMode": "ReadWriteOnce"},
            {"name": "data", "claimName": "team-data", "mountPath": "/data"},
            {"name": "shared", "purpose": "", "readOnly": true},
            {"name": "odd", "purpose": "unknown", "size": "1Gi", "futureKey": 1},
        ]}}});
        for name in [None, Some("qwen")] {
            let typed: ModelDeploymentSpec = serde_json::from_value(storage.clone()).unwrap();
            let mut json = storage.clone();
            apply_spec_defaults_named(&mut json, name);
            let mut expected = serde_json::to_value(typed.with_defaults_named(name)).unwrap();
            // The typed view drops the unknown key; the JSON keeps it.
            expected["model"]["storage"]["volumes"][4]["futureKey"] = serde_json::json!(1);
            assert_eq!(json, expected, "{name:?}");
        }
        let mut unknown = serde_json::json!({"model": {"id": "a/b"}, "futureField": {"x": 1}});
        apply_spec_defaults(&mut unknown);
        assert_eq!(
            unknown["futureField"],
            serde_json::json!({"x": 1}),
            "unknown fields are kept"
        );
    }

    #[test]
    fn storage_volumes_get_the_go_defaults() {
        let spec: ModelDeploymentSpec = serde_json::from_value(serde_json::json!({"model": {"id": "a/b", "storage": {"volumes": [
            {"name": "weights", "purpose": "modelCache", "size": "100Gi"},
            {"name": "compiled", "purpose": "compilationCache", "claimName": "mine", "accessMode": "ReadWriteOnce", "size": "1Gi"},
            {"name": "data", "claimName": "team-data", "mountPath": "/data"},
            {"name": "plain", "claimName": "c"},
            {"name": "shared", "purpose": "modelCache"},
        ]}}}))
        .unwrap();
        let volumes = |spec: ModelDeploymentSpec| {
            spec.model
                .storage
                .and_then(|s| s.volumes)
                .unwrap_or_default()
                .into_iter()
                .map(|v| {
                    (
                        v.purpose.unwrap_or_default(),
                        v.mount_path.unwrap_or_default(),
                        v.claim_name.unwrap_or_default(),
                        v.access_mode.unwrap_or_default(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let t = |a: &str, b: &str, c: &str, d: &str| {
            (a.to_string(), b.to_string(), c.to_string(), d.to_string())
        };
        assert_eq!(
            volumes(spec.with_defaults_named(Some("qwen"))),
            [
                t(
                    "modelCache",
                    "/model-cache",
                    "qwen-weights",
                    "ReadWriteMany"
                ),
                // A claim name or access mode given is kept (validation judges it).
                t(
                    "compilationCache",
                    "/compilation-cache",
                    "mine",
                    "ReadWriteOnce"
                ),
                t("custom", "/data", "team-data", ""),
                // `custom` has no default mount path (validation asks for one).
                t("custom", "", "c", ""),
                // Neither size nor claim: the shared cache; no claim name is invented.
                t("modelCache", "/model-cache", "", ""),
            ]
        );
        // Without the name, no claim name; the rest alike.
        assert_eq!(
            volumes(spec.with_defaults())[0],
            t("modelCache", "/model-cache", "", "ReadWriteMany")
        );
        let twice = spec.with_defaults_named(Some("qwen"));
        assert_eq!(twice.with_defaults_named(Some("qwen")), twice);
    }

    #[test]
    fn identity_and_labels() {
        let mut md = ModelDeployment::new("m", spec());
        md.spec.engine = Some(EngineSpec {
            engine_type: Some(EngineType::Vllm),
            ..Default::default()
        });
        md.metadata.labels = Some(BTreeMap::from([
            ("airunway.ai/team".to_string(), "a".to_string()),
            ("app".to_string(), "x".to_string()),
        ]));
        assert_eq!(
            md.identity().to_string(),
            "model=org/model;source=huggingface;engine=vllm;provider=;mode=aggregated"
        );
        let labels = md.propagated_labels();
        assert_eq!(
            labels.get("airunway.ai/team").map(String::as_str),
            Some("a")
        );
        assert_eq!(
            labels.get("airunway.ai/managed-by").map(String::as_str),
            Some("airunway")
        );
        assert!(!labels.contains_key("app"));
        assert_eq!(md.served_model_name().as_deref(), Some("model"));
    }
}
