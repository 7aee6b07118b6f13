//! The spec author (pure): recorded by the mutating webhook on a create or a spec change, read
//! back by the upstream access check.

use airunway_api::constants::annotations::access::{
    GROUP_SEPARATOR, SPEC_AUTHOR, SPEC_AUTHOR_GROUPS,
};
use airunway_api::v1alpha1::ModelDeployment;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, Operation};
use serde_json::Value;

/// Who last created or changed a deployment's spec.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Author {
    /// The username.
    pub user: String,
    /// The groups, in the order the API server gave them.
    pub groups: Vec<String>,
}

/// Whether `request` creates the object or changes its spec (what the webhooks'
/// `spec-changed` matchCondition and the `airunway-spec-author` policy call a spec change).
fn changes_spec(request: &AdmissionRequest<DynamicObject>) -> bool {
    match request.operation {
        Operation::Create => true,
        Operation::Update => {
            let spec = |o: Option<&DynamicObject>| o.and_then(|o| o.data.get("spec")).cloned();
            spec(request.object.as_ref()) != spec(request.old_object.as_ref())
        }
        _ => false,
    }
}

/// Records the request's user in `object`'s annotations (`airunway.ai/spec-author` and
/// `airunway.ai/spec-author-groups`) when `request` creates it or changes its spec, replacing
/// whatever the client sent; otherwise leaves `object` as it is.
pub fn record(request: &AdmissionRequest<DynamicObject>, object: &mut Value) {
    if !changes_spec(request) {
        return;
    }
    let user = request.user_info.username.clone().unwrap_or_default();
    let groups = request
        .user_info
        .groups
        .as_deref()
        .unwrap_or_default()
        .join(GROUP_SEPARATOR);
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(SPEC_AUTHOR.to_string(), Value::String(user));
        annotations.insert(SPEC_AUTHOR_GROUPS.to_string(), Value::String(groups));
    }
}

/// The recorded author of `md`, or `None` when no (or an empty) username is recorded.
pub fn of(md: &ModelDeployment) -> Option<Author> {
    let annotations = md.metadata.annotations.as_ref()?;
    let user = annotations.get(SPEC_AUTHOR).filter(|u| !u.is_empty())?;
    let groups = annotations
        .get(SPEC_AUTHOR_GROUPS)
        .map(|g| {
            g.split(GROUP_SEPARATOR)
                .filter(|g| !g.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Some(Author {
        user: user.clone(),
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(
        operation: &str,
        object: Value,
        old: Option<Value>,
        user: Value,
    ) -> AdmissionRequest<DynamicObject> {
        let review: kube::core::admission::AdmissionReview<DynamicObject> =
            serde_json::from_value(json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {
                    "uid": "u", "kind": {"group": "airunway.ai", "version": "v1alpha1", "kind": "ModelDeployment"},
                    "resource": {"group": "airunway.ai", "version": "v1alpha1", "resource": "modeldeployments"},
                    "name": "m", "namespace": "team-a",
                    "operation": operation, "userInfo": user, "object": object, "oldObject": old, "dryRun": false,
                }
            }))
            .unwrap();
        review.try_into().unwrap()
    }

    fn md(annotations: Value, spec: Value) -> Value {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
               "metadata": {"name": "m", "namespace": "team-a", "annotations": annotations}, "spec": spec})
    }

    fn alice() -> Value {
        json!({"username": "alice", "groups": ["team-a", "system:authenticated"]})
    }

    #[test]
    fn a_create_records_the_requesting_user_over_a_forged_author() {
        let object = md(
            json!({"airunway.ai/spec-author": "admin", "x": "y"}),
            json!({"model": {"id": "a/b"}}),
        );
        let mut recorded = object.clone();
        record(&request("CREATE", object, None, alice()), &mut recorded);
        assert_eq!(
            recorded["metadata"]["annotations"],
            json!({"airunway.ai/spec-author": "alice", "airunway.ai/spec-author-groups": "team-a,system:authenticated", "x": "y"})
        );
        let md: ModelDeployment = serde_json::from_value(recorded).unwrap();
        assert_eq!(
            of(&md),
            Some(Author {
                user: "alice".into(),
                groups: vec!["team-a".into(), "system:authenticated".into()]
            })
        );
    }

    #[test]
    fn only_a_spec_change_records_on_update() {
        let old = md(
            json!({"airunway.ai/spec-author": "bob", "airunway.ai/spec-author-groups": ""}),
            json!({"model": {"id": "a/b"}}),
        );
        // The same spec: left as it is (the policy keeps the annotations unchanged).
        let same = md(
            json!({"airunway.ai/spec-author": "bob", "airunway.ai/spec-author-groups": "", "note": "1"}),
            json!({"model": {"id": "a/b"}}),
        );
        let mut unchanged = same.clone();
        record(
            &request("UPDATE", same.clone(), Some(old.clone()), alice()),
            &mut unchanged,
        );
        assert_eq!(unchanged, same);
        // A new spec: the updater is the author now; no annotations at all is fine too.
        let changed = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                             "metadata": {"name": "m"}, "spec": {"model": {"id": "a/c"}}});
        let mut recorded = changed.clone();
        record(
            &request("UPDATE", changed, Some(old), json!({"username": "carol"})),
            &mut recorded,
        );
        assert_eq!(
            recorded["metadata"]["annotations"],
            json!({"airunway.ai/spec-author": "carol", "airunway.ai/spec-author-groups": ""})
        );
        let md: ModelDeployment = serde_json::from_value(recorded).unwrap();
        assert_eq!(of(&md).unwrap().groups, Vec::<String>::new());
    }

    #[test]
    fn no_author_without_a_username() {
        let empty: ModelDeployment = serde_json::from_value(md(
            json!({"airunway.ai/spec-author": ""}),
            json!({"model": {"id": "a/b"}}),
        ))
        .unwrap();
        assert_eq!(of(&empty), None);
        let bare: ModelDeployment = serde_json::from_value(md_without_annotations()).unwrap();
        assert_eq!(of(&bare), None);
    }

    fn md_without_annotations() -> Value {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": "m"}, "spec": {"model": {"id": "a/b"}}})
    }
}
