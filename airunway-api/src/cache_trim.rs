//! What the controllers keep of watched objects (pure). A reflector store holds every object
//! of a kind for the life of the process; keeping only what the reconciles read keeps memory
//! proportional to what matters at 10,000 deployments.
//!
//! Removed: `managedFields` entries other than the status subresource's (the controllers read
//! status ownership only, see [`crate::managed_fields`]) and the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (a second copy of the spec
//! that nothing here reads). Upstream objects lose their `managedFields` entirely.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The annotation `kubectl apply` keeps a copy of the applied object in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops the last-applied annotation and every `managedFields` entry that is not about the
/// status subresource.
pub fn keep_status_ownership(meta: &mut ObjectMeta) {
    drop_last_applied(meta);
    if let Some(entries) = meta.managed_fields.as_mut() {
        entries.retain(|e| e.subresource.as_deref() == Some("status"));
        entries.shrink_to_fit();
    }
}

/// [`keep_status_ownership`], and of that only what `manager` owns (a provider reads nothing
/// else).
pub fn keep_status_ownership_of(meta: &mut ObjectMeta, manager: &str) {
    keep_status_ownership(meta);
    if let Some(entries) = meta.managed_fields.as_mut() {
        entries.retain(|e| e.manager.as_deref() == Some(manager));
        entries.shrink_to_fit();
    }
}

/// Drops the last-applied annotation and all `managedFields`.
pub fn drop_ownership(meta: &mut ObjectMeta) {
    drop_last_applied(meta);
    meta.managed_fields = None;
}

fn drop_last_applied(meta: &mut ObjectMeta) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> ObjectMeta {
        serde_json::from_value(json!({
            "name": "m",
            "annotations": {LAST_APPLIED_ANNOTATION: "{\"spec\":{}}", "airunway.ai/x": "y"},
            "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
                {"manager": "airunway-core", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
            ],
        }))
        .unwrap()
    }

    #[test]
    fn status_ownership_is_all_that_is_kept() {
        let mut m = meta();
        keep_status_ownership(&mut m);
        let managers: Vec<_> = m
            .managed_fields
            .iter()
            .flatten()
            .map(|e| e.manager.clone().unwrap())
            .collect();
        assert_eq!(managers, ["airunway-core"]);
        assert_eq!(
            m.annotations.unwrap().keys().collect::<Vec<_>>(),
            ["airunway.ai/x"]
        );
    }

    #[test]
    fn a_provider_keeps_only_its_own_status_ownership() {
        let mut m = meta();
        keep_status_ownership_of(&mut m, "kaito-provider");
        assert!(m.managed_fields.unwrap().is_empty());
        let mut m = meta();
        keep_status_ownership_of(&mut m, "airunway-core");
        assert_eq!(m.managed_fields.unwrap().len(), 1);
    }

    #[test]
    fn upstream_objects_keep_no_ownership() {
        let mut m = meta();
        drop_ownership(&mut m);
        assert!(m.managed_fields.is_none());
        assert!(!m.annotations.unwrap().contains_key(LAST_APPLIED_ANNOTATION));
    }
}
