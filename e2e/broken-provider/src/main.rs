//! A provider that breaks the provider contract on request: the conformance suite's proof
//! that it can fail (e2e/tests/conformance.rs). Built on `airunway-api` alone, like a
//! third-party provider. Its upstream is a test CRD of its own (`Widget`,
//! `conformance.airunway.ai/v1`, in `deploy/crd.yaml`) whose status says `state: Ready`,
//! `Failed` or anything else (in progress).
//!
//! `BROKEN_PROVIDER_MODE` (the environment) chooses the fault, `BROKEN_PROVIDER_NAME` its
//! registration name (default `broken`; the base's RBAC names `broken` and `broken-<fault>`):
//! - unset or `none`: no fault (it passes the suite);
//! - `reapply`: renders a value that changes every 2 s, so it never stops writing;
//! - `ignore-deletion`: puts a finalizer of its own on each Widget and never removes it, so a
//!   deleted deployment's Widget is never deleted;
//! - `failed-as-running`: reports a failed Widget as Running and ready.
//!
//! The fourth fault, a permission its kustomize base lacks, is in the base
//! (`deploy-missing-permission/`), not in the binary.

use std::process::ExitCode;

use airunway_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use airunway_api::kube::core::DynamicObject;
use airunway_api::provider::{
    Incompatible, Provider, RenderError, Rendered, SchemaDetection, TranslatedStatus, UpstreamKind,
    UpstreamSchema, primary,
};
use airunway_api::serde_json::json;
use airunway_api::v1alpha1::{
    EngineCapability, EngineCapabilityEntry, EngineType, InferenceProviderConfigSpec,
    ModelDeployment, Phase, ProviderCapabilities, ReplicaStatus, ServingMode,
};

/// The fault this process has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    None,
    Reapply,
    IgnoreDeletion,
    FailedAsRunning,
}

/// The Widget finalizer of the `ignore-deletion` mode.
const KEEP: &str = "conformance.airunway.ai/keep";

/// The broken provider.
struct BrokenProvider {
    /// Its registration name: `BROKEN_PROVIDER_NAME`, default `broken` (one per fault lets the
    /// suite run the faults side by side; the base's RBAC names each).
    name: String,
    mode: Mode,
}

impl Provider for BrokenProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        "the broken test provider"
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
                model_storage: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn upstream(&self) -> UpstreamKind {
        UpstreamKind {
            group: "conformance.airunway.ai".to_string(),
            kind: "Widget".to_string(),
            plural: "widgets".to_string(),
            default_version: "v1".to_string(),
            from_crd: true,
        }
    }

    // A test CRD with an open schema: any installed, established version v1 is supported.
    fn detect_schema(&self, crd: Option<&CustomResourceDefinition>) -> SchemaDetection {
        let name = self.upstream().crd_name();
        match crd {
            None => SchemaDetection::CrdNotInstalled { crd: name },
            Some(crd) => {
                let established = crd
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    });
                if established {
                    SchemaDetection::Supported(UpstreamSchema {
                        version: "v1".to_string(),
                        api_version: "conformance.airunway.ai/v1".to_string(),
                        fingerprint: "widget-v1".to_string(),
                    })
                } else {
                    SchemaDetection::NotEstablished { crd: name }
                }
            }
        }
    }

    fn check_compatibility(&self, deployment: &ModelDeployment) -> Result<(), Incompatible> {
        if deployment.spec.serving_mode() == ServingMode::Disaggregated {
            return Err(Incompatible::new(
                "The broken test provider does not support disaggregated mode",
            ));
        }
        Ok(())
    }

    fn render(
        &self,
        deployment: &ModelDeployment,
        schema: &UpstreamSchema,
    ) -> Result<Rendered, RenderError> {
        let spec = &deployment.spec;
        let mut widget = json!({
            "apiVersion": schema.api_version,
            "kind": "Widget",
            "metadata": {"name": deployment.metadata.name},
            "spec": {
                "model": spec.model.id.clone().unwrap_or_default(),
                "replicas": spec.replicas(),
            },
        });
        match self.mode {
            Mode::Reapply => {
                // A value that changes every 2 s: a write on the next reconcile, and that
                // write's watch event brings the next one, for ever (at a pace that leaves the
                // provider's other work alone).
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() / 2 * 2)
                    .unwrap_or_default();
                widget["spec"]["renderedAt"] = json!(now.to_string());
            }
            Mode::IgnoreDeletion => widget["metadata"]["finalizers"] = json!([KEEP]),
            Mode::None | Mode::FailedAsRunning => {}
        }
        Ok(Rendered::one(widget))
    }

    fn translate_status(
        &self,
        deployment: &ModelDeployment,
        upstream: &[Option<&DynamicObject>],
    ) -> TranslatedStatus {
        let replicas = deployment.spec.replicas();
        let state =
            primary(upstream).and_then(|w| w.data["status"]["state"].as_str().map(str::to_string));
        let message = primary(upstream)
            .and_then(|w| w.data["status"]["message"].as_str().map(str::to_string));
        let running = TranslatedStatus {
            phase: Phase::Running,
            message: None,
            replicas: Some(ReplicaStatus {
                desired: Some(replicas),
                ready: Some(replicas),
                available: Some(replicas),
            }),
            endpoint: None,
            ready: true,
            not_ready: None,
        };
        let not_running = |phase| TranslatedStatus {
            phase,
            message: message.clone(),
            replicas: None,
            endpoint: None,
            ready: false,
            not_ready: None,
        };
        match (state.as_deref(), self.mode) {
            (Some("Ready"), _) => running,
            // The fault: a failed Widget reported as serving.
            (Some("Failed"), Mode::FailedAsRunning) => running,
            (Some("Failed"), _) => not_running(Phase::Failed),
            _ => not_running(Phase::Deploying),
        }
    }
}

#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]
async fn main() -> ExitCode {
    let mode = match std::env::var("BROKEN_PROVIDER_MODE").as_deref() {
        Err(_) | Ok("") | Ok("none") => Mode::None,
        Ok("reapply") => Mode::Reapply,
        Ok("ignore-deletion") => Mode::IgnoreDeletion,
        Ok("failed-as-running") => Mode::FailedAsRunning,
        Ok(other) => {
            eprintln!(
                "error: BROKEN_PROVIDER_MODE={other}: expected none, reapply, ignore-deletion or failed-as-running"
            );
            return ExitCode::FAILURE;
        }
    };
    let name = std::env::var("BROKEN_PROVIDER_NAME").unwrap_or_else(|_| "broken".to_string());
    match airunway_api::provider::run(BrokenProvider { name, mode }).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
