//! What a provider supplies to the conformance suite: its `conformance.yaml` (registration
//! expectations, the deployments it accepts and refuses, how scale and identity changes behave)
//! and its `status-fixtures.yaml` (upstream statuses with the phase and reason each produces).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ConformanceError;

/// A provider's `conformance.yaml`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderData {
    /// The provider's registration name (the InferenceProviderConfig's name), e.g. `configmap`.
    pub provider: String,
    /// The version it reports: the registration must say `<provider>-provider:<version>`.
    pub version: String,
    /// What the registration must hold.
    #[serde(default)]
    pub registration: RegistrationData,
    /// Extra flags for the provider binary (the runner sets the bind addresses and the
    /// heartbeat interval itself).
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables for the provider binary.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// The ServiceAccount of the kustomize base the provider runs as (default: the only
    /// ServiceAccount the base holds).
    #[serde(default)]
    pub service_account: Option<String>,
    /// Deployments it must accept; the first is the one the lifecycle checks work on.
    pub accept: Vec<Accepted>,
    /// Deployments it must refuse, each with its exact compatibility message.
    #[serde(default)]
    pub refuse: Vec<Refused>,
    /// How a change of `spec.replicas` is handled.
    #[serde(default)]
    pub scale: ScaleData,
    /// A change of the first accepted deployment that recreates its upstream object (a JSON
    /// merge patch of the ModelDeployment); `None`: the check is skipped.
    #[serde(default)]
    pub identity_change: Option<Value>,
    /// The provider's `--finalizer-timeout` in seconds (the SDK's flag): the runner passes it
    /// and checks that a deletion whose upstream object never goes is released after it.
    /// `None`: the check is skipped.
    #[serde(default)]
    pub finalizer_timeout_seconds: Option<u64>,
    /// Whether the runner may delete the upstream CRD (and re-create it) to check that deletion
    /// does not hang without it: only when nothing else in the cluster uses that CRD.
    #[serde(default)]
    pub crd_deletion: bool,
    /// The status fixtures file, relative to this file.
    #[serde(default)]
    pub status_fixtures: Option<PathBuf>,
}

/// What the registration must hold.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistrationData {
    /// The engines it declares, in order (`[]`: not checked).
    #[serde(default)]
    pub engines: Vec<String>,
    /// The upstream version it reports in `status.upstreamCrdVersion` (`None`: any).
    #[serde(default)]
    pub upstream_crd_version: Option<String>,
}

/// A deployment the provider must accept.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Accepted {
    /// The ModelDeployment manifest (`spec.provider.name` is set to the provider).
    pub deployment: Value,
    /// The phases it may settle in (default: `Deploying` or `Running`).
    #[serde(default)]
    pub phases: Vec<String>,
}

/// A deployment the provider must refuse.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Refused {
    /// The ModelDeployment manifest (`spec.provider.name` is set to the provider).
    pub deployment: Value,
    /// The exact message of the refusing condition.
    pub message: String,
    /// The condition that refuses it with `status: False`: `ProviderCompatible` (the
    /// provider's own check, the default) or `Validated` (the core's check against the
    /// capabilities the provider registered).
    #[serde(default = "provider_compatible")]
    pub condition: String,
}

fn provider_compatible() -> String {
    crate::constants::condition_types::PROVIDER_COMPATIBLE.to_string()
}

/// How the provider handles `spec.replicas`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleData {
    /// `inPlace`: the upstream object is updated (same uid); `held`: the deployment is held
    /// with `message`; `unsupported`: the check is skipped.
    #[serde(default)]
    pub mode: ScaleMode,
    /// The replicas to scale to (default 2).
    #[serde(default)]
    pub replicas: Option<i32>,
    /// For `held`: the message the deployment shows.
    #[serde(default)]
    pub message: Option<String>,
}

/// How a scale is handled.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ScaleMode {
    /// The upstream object is updated in place.
    #[default]
    InPlace,
    /// The deployment is held with a message.
    Held,
    /// Not checked.
    Unsupported,
}

/// One upstream status and what it must produce.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusFixture {
    /// What the fixture represents.
    pub name: String,
    /// The status object the upstream operator writes.
    pub upstream_status: Value,
    /// The deployment phase it must produce.
    pub phase: String,
    /// The `Ready` reason: a `NotReadyReason` string or `DeploymentReady`.
    pub reason: String,
}

impl ProviderData {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<ProviderData, ConformanceError> {
        let data: ProviderData = read_yaml(path)?;
        data.validate().map_err(|message| ConformanceError::Data {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(data)
    }

    /// The status fixtures (none when the file names none), read relative to `data_path`.
    pub fn fixtures(&self, data_path: &Path) -> Result<Vec<StatusFixture>, ConformanceError> {
        let Some(file) = &self.status_fixtures else {
            return Ok(Vec::new());
        };
        let path = data_path.parent().unwrap_or(Path::new(".")).join(file);
        let fixtures: Vec<StatusFixture> = read_yaml(&path)?;
        for fixture in &fixtures {
            validate_reason(&fixture.reason).map_err(|message| ConformanceError::Data {
                path: path.clone(),
                message: format!("fixture {}: {message}", fixture.name),
            })?;
        }
        Ok(fixtures)
    }

    /// What is wrong with the data, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.provider.is_empty() {
            return Err("provider: empty".into());
        }
        if self.accept.is_empty() {
            return Err("accept: at least one deployment is needed".into());
        }
        for (i, d) in self
            .accept
            .iter()
            .map(|a| &a.deployment)
            .chain(self.refuse.iter().map(|r| &r.deployment))
            .enumerate()
        {
            if d["kind"] != "ModelDeployment" || d["metadata"]["name"].as_str().is_none() {
                return Err(format!(
                    "deployment {i}: a ModelDeployment with metadata.name is needed"
                ));
            }
        }
        for refused in &self.refuse {
            use crate::constants::condition_types::{PROVIDER_COMPATIBLE, VALIDATED};
            if refused.condition != PROVIDER_COMPATIBLE && refused.condition != VALIDATED {
                return Err(format!(
                    "refuse: condition {} is neither {PROVIDER_COMPATIBLE} nor {VALIDATED}",
                    refused.condition
                ));
            }
        }
        if self.scale.mode == ScaleMode::Held && self.scale.message.is_none() {
            return Err("scale: mode held needs the message".into());
        }
        Ok(())
    }
}

/// A `Ready` reason a fixture may name: `DeploymentReady` or one of the not-ready vocabulary.
fn validate_reason(reason: &str) -> Result<(), String> {
    use crate::v1alpha1::NotReadyReason;
    if reason == crate::constants::reasons::DEPLOYMENT_READY
        || serde_json::from_value::<NotReadyReason>(Value::String(reason.to_string())).is_ok()
    {
        Ok(())
    } else {
        Err(format!(
            "reason {reason}: neither DeploymentReady nor a NotReadyReason"
        ))
    }
}

fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ConformanceError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConformanceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_saphyr::from_str(&text).map_err(|e| ConformanceError::Data {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const EXAMPLE: &str = r#"
provider: configmap
version: 0.1.0
registration: {engines: [vllm, llamacpp], upstreamCrdVersion: v1}
accept:
- deployment:
    apiVersion: airunway.ai/v1alpha1
    kind: ModelDeployment
    metadata: {name: chat}
    spec: {model: {id: example/chat}, engine: {type: llamacpp}}
  phases: [Running]
refuse:
- deployment:
    apiVersion: airunway.ai/v1alpha1
    kind: ModelDeployment
    metadata: {name: split}
    spec: {model: {id: example/split}}
  message: no
scale: {mode: held, message: held}
identityChange: {spec: {model: {id: example/other}}}
"#;

    #[test]
    fn the_example_reads_and_validates() {
        let data: ProviderData = serde_saphyr::from_str(EXAMPLE).unwrap();
        assert_eq!(data.validate(), Ok(()));
        assert_eq!(data.scale.mode, ScaleMode::Held);
        assert_eq!(data.accept[0].phases, ["Running"]);
        assert_eq!(data.registration.engines, ["vllm", "llamacpp"]);
    }

    #[test]
    fn unknown_fields_and_missing_deployments_are_refused() {
        let text = EXAMPLE.replace("scale:", "scaling:");
        assert!(serde_saphyr::from_str::<ProviderData>(&text).is_err());
        let mut data: ProviderData = serde_saphyr::from_str(EXAMPLE).unwrap();
        data.accept.clear();
        assert!(data.validate().unwrap_err().contains("accept"));
        let mut data: ProviderData = serde_saphyr::from_str(EXAMPLE).unwrap();
        data.scale.message = None;
        assert!(data.validate().unwrap_err().contains("held"));
    }

    #[test]
    fn fixture_reasons_come_from_the_vocabulary() {
        assert_eq!(validate_reason("DeploymentReady"), Ok(()));
        assert_eq!(validate_reason("OOMKilled"), Ok(()));
        assert_eq!(validate_reason("Unclassified"), Ok(()));
        assert!(validate_reason("DeploymentFailed").is_err());
    }
}
