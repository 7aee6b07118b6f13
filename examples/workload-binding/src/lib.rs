//! The binding, as pure functions: from a ModelDeployment's `status.workload` to the monitor
//! Service that selects exactly its serving pods (see docs/integrations.md).

use std::collections::BTreeMap;

use airunway_api::v1alpha1::ModelDeployment;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The label this tool puts on what it creates.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "workload-binding");
/// The field manager of its server-side applies.
pub const FIELD_MANAGER: &str = "workload-binding";
/// The suffix of the monitor Service's name.
pub const SUFFIX: &str = "-monitor";

/// Why a deployment cannot be bound (yet).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BindingError {
    /// The provider has not written `status.workload` yet.
    #[error("md/{0} has no status.workload yet: its provider has not reported where its pods are")]
    NoWorkload(String),
    /// The workload names no pod selector (e.g. a provider whose upstream runs no pods).
    #[error("md/{0}: status.workload.podSelector is empty: there are no serving pods to bind to")]
    NoSelector(String),
    /// The workload names no port.
    #[error("md/{0}: status.workload.port is not set: the serving port is unknown")]
    NoPort(String),
    /// The Service name would not be a DNS label.
    #[error("md/{0}: the name {0}{SUFFIX} is longer than 63 characters")]
    NameTooLong(String),
}

impl BindingError {
    /// A short, static label for logs and metrics.
    pub fn category(&self) -> &'static str {
        match self {
            BindingError::NoWorkload(_) => "no_workload",
            BindingError::NoSelector(_) => "no_selector",
            BindingError::NoPort(_) => "no_port",
            BindingError::NameTooLong(_) => "name_too_long",
        }
    }
}

/// The headless Service `<md>-monitor` that selects the deployment's serving pods on their
/// serving port (what a Prometheus scrape configuration or a ServiceMonitor points at). It is
/// owned by the deployment (not as controller), so it goes when the deployment goes.
pub fn monitor_service(md: &ModelDeployment) -> Result<Service, BindingError> {
    let name = md.metadata.name.clone().unwrap_or_default();
    let workload = md
        .status
        .as_ref()
        .and_then(|s| s.workload.as_ref())
        .ok_or_else(|| BindingError::NoWorkload(name.clone()))?;
    let selector: BTreeMap<String, String> = workload
        .pod_selector
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| BindingError::NoSelector(name.clone()))?;
    let port = workload
        .port
        .ok_or_else(|| BindingError::NoPort(name.clone()))?;
    let service_name = format!("{name}{SUFFIX}");
    if service_name.len() > 63 {
        return Err(BindingError::NameTooLong(name));
    }
    Ok(Service {
        metadata: ObjectMeta {
            name: Some(service_name),
            namespace: md.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([(
                MANAGED_BY.0.to_string(),
                MANAGED_BY.1.to_string(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: airunway_api::constants::API_VERSION.to_string(),
                kind: "ModelDeployment".to_string(),
                name: name.clone(),
                uid: md.metadata.uid.clone().unwrap_or_default(),
                controller: Some(false),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            selector: Some(selector),
            ports: Some(vec![ServicePort {
                name: Some("http".to_string()),
                port,
                target_port: Some(IntOrString::Int(port)),
                protocol: Some("TCP".to_string()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// Whether `live` already carries what `desired` asks for (selector and ports): nothing to
/// write.
pub fn is_current(desired: &Service, live: &Service) -> bool {
    let (Some(want), Some(have)) = (&desired.spec, &live.spec) else {
        return false;
    };
    let ports = |s: &ServiceSpec| {
        s.ports
            .iter()
            .flatten()
            .map(|p| (p.name.clone(), p.port, p.target_port.clone()))
            .collect::<Vec<_>>()
    };
    want.selector == have.selector && ports(want) == ports(have)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn md(status: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ns", "uid": "u-1"},
            "spec": {"model": {"id": "Qwen/Qwen3-0.6B"}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn the_monitor_selects_the_serving_pods_on_their_port_and_belongs_to_the_deployment() {
        let service = monitor_service(&md(json!({"workload": {
            "podSelector": {"airunway.ai/deployment": "qwen", "airunway.ai/role": "aggregated"},
            "container": "vllm", "port": 8000}})))
        .unwrap();
        assert_eq!(service.metadata.name.as_deref(), Some("qwen-monitor"));
        let spec = service.spec.as_ref().unwrap();
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(
            spec.selector
                .as_ref()
                .unwrap()
                .get("airunway.ai/role")
                .map(String::as_str),
            Some("aggregated")
        );
        assert_eq!(spec.ports.as_ref().unwrap()[0].port, 8000);
        let owner = &service.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.uid.as_str(), owner.controller), ("u-1", Some(false)));
        assert!(is_current(&service, &service));
    }

    #[test]
    fn a_deployment_without_a_selector_or_port_is_not_bound() {
        assert_eq!(
            monitor_service(&md(json!({}))).unwrap_err(),
            BindingError::NoWorkload("qwen".into())
        );
        let no_pods = monitor_service(&md(json!({"workload": {"upstream": {
            "apiVersion": "v1", "kind": "ConfigMap", "name": "qwen"}}})))
        .unwrap_err();
        assert_eq!(no_pods.category(), "no_selector");
        assert_eq!(
            no_pods.to_string(),
            "md/qwen: status.workload.podSelector is empty: there are no serving pods to bind to"
        );
        let no_port =
            monitor_service(&md(json!({"workload": {"podSelector": {"a": "b"}}}))).unwrap_err();
        assert_eq!(no_port, BindingError::NoPort("qwen".into()));
    }
}
