//! `status.workload` of the kit's Deployments (pure): where a deployment's vLLM pods are.
//!
//! - `workloads`: the live Deployment of each component (in render order), with its role
//!   (`aggregated`, `prefill`, `decode`); the Services run no pods and are left out;
//! - `podSelector`: the labels every component's Deployment selector has in common
//!   ([`render::selector`]: `airunway.ai/deployment: <md>` and, with one component,
//!   `app: <its name>`). A Deployment's selector is immutable and the API server refuses a pod
//!   template that does not carry it, so every serving pod carries these labels; no other pod
//!   of the deployment does (the gateway's picker pods carry `airunway.ai/gateway-of` instead),
//!   and pods of other deployments carry another `airunway.ai/deployment` value;
//! - `container`: `vllm`, `port`: 8000.
//!
//! `upstream` is left to the SDK (the primary live object: the first Deployment).

use std::collections::BTreeMap;

use kube::core::DynamicObject;

use super::render::{self, CONTAINER, Component, PORT};
use crate::provider::reference_to;
use crate::v1alpha1::{ModelDeployment, WorkloadStatus};

/// The workload of `components` (in render order) from `live` (the provider's live objects in
/// render order: the components' Deployments first).
pub fn workload(
    md: &ModelDeployment,
    components: &[Component],
    live: &[Option<&DynamicObject>],
) -> WorkloadStatus {
    let workloads: Vec<_> = components
        .iter()
        .zip(live)
        .filter_map(|(component, object)| {
            object.map(|object| reference_to(object, Some(&component.role)))
        })
        .collect();
    WorkloadStatus {
        upstream: None,
        workloads: (!workloads.is_empty()).then_some(workloads),
        pod_selector: common_selector(md, components),
        container: Some(CONTAINER.to_string()),
        port: Some(PORT),
    }
}

/// The labels all of the components' selectors share (`None` without components).
fn common_selector(
    md: &ModelDeployment,
    components: &[Component],
) -> Option<BTreeMap<String, String>> {
    let mut selectors = components.iter().map(|c| render::selector(md, c));
    let mut common = selectors.next()?;
    for selector in selectors {
        common.retain(|key, value| selector.get(key) == Some(value));
    }
    (!common.is_empty()).then_some(common)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md() -> ModelDeployment {
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1",
            "kind": "ModelDeployment", "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"model": {"id": "org/model"}, "engine": {"type": "vllm"}}}))
        .unwrap()
    }

    fn live(name: &str, uid: &str) -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "uid": uid}}))
        .unwrap()
    }

    fn component(name: &str, role: &str) -> Component {
        let mut component = Component::aggregated(&md());
        component.name = name.into();
        component.role = role.into();
        component
    }

    #[test]
    fn one_component_is_selected_by_its_deployment_selector() {
        let deployment = live("m", "u-1");
        let workload = workload(
            &md(),
            &[Component::aggregated(&md())],
            &[Some(&deployment), None],
        );
        assert_eq!(
            serde_json::to_value(&workload).unwrap(),
            json!({"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "m",
                                  "uid": "u-1", "role": "aggregated"}],
                   "podSelector": {"airunway.ai/deployment": "m", "app": "m"},
                   "container": "vllm", "port": 8000})
        );
        assert_eq!(
            workload.selector_string().as_deref(),
            Some("airunway.ai/deployment=m,app=m")
        );
    }

    #[test]
    fn several_components_share_the_deployment_label_and_list_only_live_deployments() {
        let components = [
            component("m-decode", "decode"),
            component("m-prefill", "prefill"),
        ];
        let decode = live("m-decode", "u-d");
        let prefill = live("m-prefill", "u-p");
        let both = workload(&md(), &components, &[Some(&decode), Some(&prefill), None]);
        assert_eq!(
            both.pod_selector,
            Some(BTreeMap::from([(
                "airunway.ai/deployment".to_string(),
                "m".to_string()
            )]))
        );
        let roles: Vec<_> = both
            .workloads
            .unwrap()
            .into_iter()
            .map(|w| (w.name, w.uid, w.role))
            .collect();
        assert_eq!(
            roles,
            [
                ("m-decode".into(), Some("u-d".into()), Some("decode".into())),
                (
                    "m-prefill".into(),
                    Some("u-p".into()),
                    Some("prefill".into())
                )
            ]
        );
        let one = workload(&md(), &components, &[None, Some(&prefill)]);
        assert_eq!(one.workloads.unwrap().len(), 1);
        let none = workload(&md(), &components, &[]);
        assert_eq!(none.workloads, None);
        assert_eq!(none.container.as_deref(), Some("vllm"));
    }
}
