//! An example third-party AI Runway provider, written against the published `airunway-api`
//! crate only. For each ModelDeployment selected for it, it writes a ConfigMap describing the
//! deployment: enough to show the whole provider contract (registration, heartbeat, probe,
//! finalizer, server-side apply with owner reference, drift, recreate on identity changes,
//! status) without an inference operator.
//!
//! Run it with a kubeconfig: `configmap-provider --probe-bind-address 127.0.0.1:9090`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{
    Incompatible, Provider, RenderError, Rendered, TranslatedStatus, UpstreamKind, UpstreamSchema,
    primary, reference_to,
};
use airunway_api::serde_json::json;
use airunway_api::v1alpha1::{
    EndpointStatus, EngineCapability, EngineCapabilityEntry, EngineType,
    InferenceProviderConfigSpec, ModelDeployment, Phase, ProviderCapabilities, ReplicaStatus,
    SelectionRule, ServingMode, WorkloadStatus,
};

/// The example provider.
struct ConfigMapProvider;

impl Provider for ConfigMapProvider {
    fn name(&self) -> &str {
        "configmap"
    }

    fn display_name(&self) -> &str {
        "the ConfigMap example provider"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn registration(&self) -> InferenceProviderConfigSpec {
        let engine = |name| {
            EngineCapabilityEntry::Detailed(EngineCapability::new(
                name,
                vec![ServingMode::Aggregated],
                true,
                true,
            ))
        };
        InferenceProviderConfigSpec {
            capabilities: Some(ProviderCapabilities {
                engines: Some(vec![engine(EngineType::Vllm), engine(EngineType::Llamacpp)]),
                // A ConfigMap mounts nothing: the core's selection passes over this provider
                // for a deployment with `model.storage` volumes.
                model_storage: Some(false),
                ..Default::default()
            }),
            // Auto-selected for models under the example/ organisation.
            selection_rules: Some(vec![SelectionRule {
                condition: "spec.model.id.startsWith('example/')".to_string(),
                priority: 1000,
            }]),
            documentation: Some(
                "https://github.com/airunway/airunway/tree/main/examples/configmap-provider"
                    .to_string(),
            ),
            // The SDK adds the probe endpoint and the override paths (`overrides`).
            ..Default::default()
        }
    }

    fn upstream(&self) -> UpstreamKind {
        UpstreamKind {
            group: String::new(),
            kind: "ConfigMap".to_string(),
            plural: "configmaps".to_string(),
            default_version: "v1".to_string(),
            from_crd: false,
        }
    }

    // A built-in kind (`from_crd: false`): the SDK's schema detection always supports it, so
    // there are no schema adapters to declare.

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        if deployment.spec.serving_mode() == ServingMode::Disaggregated {
            return Err(Incompatible::new(
                "The ConfigMap example provider does not support disaggregated mode",
            ));
        }
        Ok(())
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        _schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        let spec = &deployment.spec;
        let mut data = BTreeMap::new();
        data.insert("model", spec.model.id.clone().unwrap_or_default());
        data.insert(
            "servedName",
            deployment.served_model_name().unwrap_or_default(),
        );
        data.insert(
            "engine",
            deployment
                .resolved_engine()
                .map(|e| e.to_string())
                .unwrap_or_default(),
        );
        data.insert("replicas", spec.replicas().to_string());
        data.insert("gpus", spec.gpu_count().to_string());
        data.insert("image", spec.image.clone().unwrap_or_default());
        Ok(Rendered::one(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": deployment.metadata.name},
            "data": data,
        })))
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        let replicas = deployment.spec.replicas();
        match primary(upstream) {
            None => TranslatedStatus {
                phase: Phase::Deploying,
                message: None,
                replicas: None,
                endpoint: None,
                ready: false,
                not_ready: None,
            },
            Some(object) => TranslatedStatus {
                phase: Phase::Running,
                message: None,
                replicas: Some(ReplicaStatus {
                    desired: Some(replicas),
                    ready: Some(replicas),
                    available: Some(replicas),
                }),
                endpoint: Some(EndpointStatus {
                    service: object.metadata.name.clone(),
                    port: Some(8000),
                }),
                ready: true,
                not_ready: None,
            },
        }
    }

    // `status.workload`, the contract tools bind to: what was created and where the serving
    // pods are. A ConfigMap runs no pods, so this provider reports only the upstream object
    // (what the SDK would fill in by itself; written out here to show a provider filling it):
    // no workloads, no pod selector (so no `status.selector`: an HPA cannot target it), no
    // container or port. A provider whose objects run pods also lists the objects that run
    // them, the labels that select exactly those pods, the serving container and its port.
    fn workload(
        &self,
        _deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> Option<WorkloadStatus> {
        Some(WorkloadStatus {
            upstream: primary(upstream).map(|object| reference_to(object, None)),
            ..Default::default()
        })
    }
}

#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]
async fn main() -> ExitCode {
    match airunway_api::provider::run(ConfigMapProvider).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
