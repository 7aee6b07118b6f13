//! Reading a DynamoGraphDeployment in the shape of the version the provider rendered
//! (`v1beta1` on Dynamo ≥ 1.5: `spec.components[]` with pod templates; `v1alpha1` on Dynamo
//! 1.1: `spec.services`), for the tests.

use kube::api::ApiResource;
use serde_json::Value;

/// The storage version of the Dynamo ≥ 1.5 CRD installed by default.
pub const V1BETA1: &str = "v1beta1";
/// The only version of the Dynamo 1.1 CRD (`e2e/fixtures/upstream-crd-versions/dynamo-1.1/`).
pub const V1ALPHA1: &str = "v1alpha1";

/// The DynamoGraphDeployment resource at `version`.
pub fn resource(version: &str) -> ApiResource {
    ApiResource {
        group: "nvidia.com".into(),
        version: version.into(),
        api_version: format!("nvidia.com/{version}"),
        kind: "DynamoGraphDeployment".into(),
        plural: "dynamographdeployments".into(),
    }
}

/// The components of `dgd` with their names: `spec.components[]` by `name`, or the
/// `spec.services` map.
pub fn components(dgd: &Value) -> Vec<(&str, &Value)> {
    if let Some(list) = dgd["spec"]["components"].as_array() {
        return list
            .iter()
            .filter_map(|c| c["name"].as_str().map(|name| (name, c)))
            .collect();
    }
    dgd["spec"]["services"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, s)| (name.as_str(), s))
        .collect()
}

/// The component `name` of `dgd` (`Value::Null` when it has none).
pub fn component<'a>(dgd: &'a Value, name: &str) -> &'a Value {
    components(dgd)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(&Value::Null, |(_, c)| c)
}

/// The component names of `dgd`, sorted.
pub fn names(dgd: &Value) -> Vec<String> {
    let mut names: Vec<String> = components(dgd)
        .into_iter()
        .map(|(name, _)| name.to_string())
        .collect();
    names.sort();
    names
}

/// The position of component `name` in `spec.components` (a `v1beta1` graph).
pub fn index(dgd: &Value, name: &str) -> Option<usize> {
    dgd["spec"]["components"]
        .as_array()?
        .iter()
        .position(|c| c["name"] == name)
}

/// The container `main` of a component: `podTemplate.spec.containers[name=main]` on `v1beta1`,
/// `extraPodSpec.mainContainer` on `v1alpha1`.
pub fn main_container(component: &Value) -> &Value {
    if let Some(containers) = component["podTemplate"]["spec"]["containers"].as_array() {
        return containers
            .iter()
            .find(|c| c["name"] == "main")
            .unwrap_or(&Value::Null);
    }
    &component["extraPodSpec"]["mainContainer"]
}

/// The container named `name` of a `v1beta1` component's pod template.
pub fn container<'a>(component: &'a Value, name: &str) -> &'a Value {
    component["podTemplate"]["spec"]["containers"]
        .as_array()
        .and_then(|list| list.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_shapes() {
        let beta = json!({"spec": {"components": [
            {"name": "VllmWorker", "podTemplate": {"spec": {"containers": [{"name": "side"}, {"name": "main", "image": "b"}]}}},
            {"name": "Frontend"}]}});
        let alpha = json!({"spec": {"services": {"VllmWorker": {"extraPodSpec": {"mainContainer": {"image": "a"}}}, "Frontend": {}}}});
        assert_eq!(names(&beta), ["Frontend", "VllmWorker"]);
        assert_eq!(names(&alpha), ["Frontend", "VllmWorker"]);
        assert_eq!(main_container(component(&beta, "VllmWorker"))["image"], "b");
        assert_eq!(
            main_container(component(&alpha, "VllmWorker"))["image"],
            "a"
        );
        assert_eq!(
            container(component(&beta, "VllmWorker"), "side")["name"],
            "side"
        );
        assert_eq!(index(&beta, "Frontend"), Some(1));
        assert_eq!(index(&alpha, "Frontend"), None);
        assert_eq!(resource(V1BETA1).api_version, "nvidia.com/v1beta1");
    }
}
