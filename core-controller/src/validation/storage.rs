//! `model.storage.volumes`: the Go AI Runway's rules, texts and field paths
//! (`spec.model.storage.volumes[i].<field>`), with one departure: a `modelCache` volume of a
//! Hugging Face model with neither `size` nor `claimName` is valid (it uses the namespace's
//! shared cache, [`airunway_api::storage`]); the Go AI Runway requires a `claimName` there.
//!
//! The rules read each volume as the mutating webhook leaves it (the defaults of
//! [`ModelDeploymentSpec::with_defaults_named`](airunway_api::v1alpha1::ModelDeploymentSpec::with_defaults_named)
//! are taken into account), so a deployment stored without the webhook is judged alike at
//! reconcile time.

use std::collections::HashSet;
use std::sync::LazyLock;

use airunway_api::constants::messages;
use airunway_api::storage::{
    ACCESS_MODES, GO_DOWNLOAD_JOB_SUFFIX, ModelCacheKey, SYSTEM_PATHS, VolumePurpose,
    managed_claim_name,
};
use airunway_api::v1alpha1::{ModelDeployment, StorageVolume};
use kube::core::cel::{KubeCelExt, cel};

use super::FieldError;

/// The field of the volume list.
const VOLUMES: &str = "spec.model.storage.volumes";
/// Longest name of a Kubernetes object named by a DNS subdomain (claims, Jobs).
const MAX_OBJECT_NAME_LENGTH: usize = 253;
/// The spellings of the purposes, in the Go AI Runway's order.
const PURPOSES: [&str; 3] = ["modelCache", "compilationCache", "custom"];

fn volumes(md: &ModelDeployment) -> &[StorageVolume] {
    md.spec
        .model
        .storage
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default()
}

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// Every rule of the Go AI Runway's `validateStorage`, in its order, for `md`'s volumes.
pub(super) fn validate_storage(md: &ModelDeployment, errors: &mut Vec<FieldError>) {
    let volumes = volumes(md);
    if volumes.is_empty() {
        return;
    }
    let deployment = md.metadata.name.as_deref().unwrap_or_default();
    // The shared cache's claim, when the model can have one (a Hugging Face model with an id).
    let shared_claim = ModelCacheKey::of(&md.spec).map(|key| key.cache_name());
    let mut names = HashSet::new();
    let mut mount_paths = HashSet::new();
    let mut claims = HashSet::new();
    let (mut model_caches, mut compilation_caches) = (0, 0);
    let mut managed_model_cache = false;
    for (i, volume) in volumes.iter().enumerate() {
        let field = |child: &str| format!("{VOLUMES}[{i}].{child}");
        let mut error = |child: &str, message: String| {
            errors.push(FieldError::new(field(child), message));
        };
        let managed = volume.size.is_some();
        let read_only = volume.read_only == Some(true);
        let purpose = VolumePurpose::of(volume);
        let written_claim = non_empty(volume.claim_name.as_ref());
        let shared = !managed
            && written_claim.is_none()
            && purpose == Some(VolumePurpose::ModelCache)
            && shared_claim.is_some();
        if !managed && written_claim.is_none() && !shared {
            error(
                "claimName",
                messages::STORAGE_CLAIM_NAME_REQUIRED.to_string(),
            );
        }
        if managed && read_only {
            error(
                "readOnly",
                messages::STORAGE_READ_ONLY_WITH_SIZE.to_string(),
            );
        }
        let generated = managed_claim_name(deployment, &volume.name);
        if managed && written_claim.is_some_and(|claim| claim != generated) {
            error(
                "claimName",
                messages::storage_claim_name_with_size(&generated),
            );
        }
        if managed && generated.len() > MAX_OBJECT_NAME_LENGTH {
            error("name", messages::storage_claim_name_too_long(&generated));
        }
        if let Some(mode) = non_empty(volume.access_mode.as_ref()) {
            if !ACCESS_MODES.contains(&mode) {
                error(
                    "accessMode",
                    messages::unsupported_value(mode, &ACCESS_MODES),
                );
            }
            if !managed {
                error(
                    "accessMode",
                    messages::STORAGE_ACCESS_MODE_WITHOUT_SIZE.to_string(),
                );
            }
        }
        if volume.storage_class_name.is_some() && !managed {
            error(
                "storageClassName",
                messages::STORAGE_CLASS_WITHOUT_SIZE.to_string(),
            );
        }
        if !names.insert(volume.name.as_str()) {
            error("name", messages::STORAGE_DUPLICATE_NAME.to_string());
        }
        let written_path = non_empty(volume.mount_path.as_ref());
        if let Some(path) =
            written_path.or_else(|| purpose.and_then(VolumePurpose::default_mount_path))
            && !mount_paths.insert(path)
        {
            error(
                "mountPath",
                messages::STORAGE_DUPLICATE_MOUNT_PATH.to_string(),
            );
        }
        let claim = match (written_claim, managed) {
            (Some(claim), _) => Some(claim.to_string()),
            (None, true) => Some(generated),
            (None, false) if shared => shared_claim.clone(),
            (None, false) => None,
        };
        if let Some(claim) = claim
            && !claims.insert(claim)
        {
            error(
                "claimName",
                messages::STORAGE_DUPLICATE_CLAIM_NAME.to_string(),
            );
        }
        if let Some(path) = written_path {
            if !path.starts_with('/') {
                error(
                    "mountPath",
                    messages::STORAGE_MOUNT_PATH_RELATIVE.to_string(),
                );
            }
            if let Some(system) = SYSTEM_PATHS.iter().find(|system| {
                path == **system
                    || path
                        .strip_prefix(**system)
                        .is_some_and(|rest| rest.starts_with('/'))
            }) {
                error("mountPath", messages::storage_system_path(system));
            }
        } else if purpose == Some(VolumePurpose::Custom) {
            error(
                "mountPath",
                messages::STORAGE_MOUNT_PATH_REQUIRED.to_string(),
            );
        }
        match purpose {
            Some(VolumePurpose::ModelCache) => {
                model_caches += 1;
                managed_model_cache |= managed && !read_only;
            }
            Some(VolumePurpose::CompilationCache) => compilation_caches += 1,
            Some(VolumePurpose::Custom) => {}
            // The CRD's enum refuses it; reached only by an object stored before the enum.
            None => error(
                "purpose",
                messages::unsupported_value(
                    volume.purpose.as_deref().unwrap_or_default(),
                    &PURPOSES,
                ),
            ),
        }
    }
    for (count, purpose) in [
        (model_caches, VolumePurpose::ModelCache),
        (compilation_caches, VolumePurpose::CompilationCache),
    ] {
        if count > 1 {
            errors.push(FieldError::new(
                VOLUMES,
                messages::storage_one_per_purpose(purpose.as_str()),
            ));
        }
    }
    let job = format!("{deployment}{GO_DOWNLOAD_JOB_SUFFIX}");
    if managed_model_cache && job.len() > MAX_OBJECT_NAME_LENGTH {
        errors.push(FieldError::new(
            "metadata.name",
            messages::storage_download_job_name_too_long(&job),
        ));
    }
}

/// The Go AI Runway's update rules for managed volumes (those with `size` in `old`): one may
/// not be removed (its claim would be orphaned) nor changed (quantities compared by value, so
/// `1Gi` to `1024Mi` is no change). Both objects are read with their defaults, so an object
/// stored without the webhook compares alike.
pub fn validate_storage_update(old: &ModelDeployment, new: &ModelDeployment) -> Vec<FieldError> {
    let defaulted = |md: &ModelDeployment| {
        let spec = md.spec.with_defaults_named(md.metadata.name.as_deref());
        spec.model
            .storage
            .and_then(|s| s.volumes)
            .unwrap_or_default()
    };
    let old_volumes = defaulted(old);
    let new_volumes = defaulted(new);
    let mut errors = Vec::new();
    let managed = old_volumes.iter().filter(|v| v.size.is_some());
    for old_volume in managed.clone() {
        if !new_volumes.iter().any(|v| v.name == old_volume.name) {
            errors.push(FieldError::new(
                VOLUMES,
                messages::storage_managed_volume_removed(&old_volume.name),
            ));
        }
    }
    for (i, new_volume) in new_volumes.iter().enumerate() {
        if let Some(old_volume) = managed.clone().find(|v| v.name == new_volume.name)
            && !same_volume(old_volume, new_volume)
        {
            errors.push(FieldError::new(
                format!("{VOLUMES}[{i}]"),
                messages::STORAGE_MANAGED_VOLUME_IMMUTABLE,
            ));
        }
    }
    errors
}

/// Whether two (defaulted) volumes are the same: every field alike, an empty string as absent
/// (as the Go AI Runway's strings) but `storageClassName` (absent: the cluster's default;
/// `""`: none), `readOnly` omitted as `false`, sizes by value.
fn same_volume(a: &StorageVolume, b: &StorageVolume) -> bool {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    a.name == b.name
        && text(&a.claim_name) == text(&b.claim_name)
        && text(&a.mount_path) == text(&b.mount_path)
        && text(&a.purpose) == text(&b.purpose)
        && a.read_only.unwrap_or(false) == b.read_only.unwrap_or(false)
        && text(&a.access_mode) == text(&b.access_mode)
        && a.storage_class_name == b.storage_class_name
        && match (&a.size, &b.size) {
            (None, None) => true,
            (Some(a), Some(b)) => same_quantity(a, b),
            _ => false,
        }
}

/// The CEL library of the Kubernetes API server (kube's port of it), whose `quantity()` parses
/// a quantity as the API server does.
static KUBERNETES_CEL: LazyLock<cel::Context<'static>> =
    LazyLock::new(|| cel::Context::default().with_all());
/// `a` and `b` are the same quantity.
static SAME_QUANTITY: LazyLock<Option<cel::Program>> =
    LazyLock::new(|| cel::Program::compile("quantity(a).compareTo(quantity(b)) == 0").ok());

/// Whether `a` and `b` are the same Kubernetes quantity (`1Gi` and `1024Mi` are); text that is
/// no quantity is the same only as itself.
pub(super) fn same_quantity(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let Some(program) = SAME_QUANTITY.as_ref() else {
        return false;
    };
    let mut context = KUBERNETES_CEL.new_inner_scope();
    context.add_variable_from_value("a", a.to_string());
    context.add_variable_from_value("b", b.to_string());
    matches!(program.execute(&context), Ok(cel::Value::Bool(true)))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{md, one};
    use super::super::validate;
    use super::*;
    use serde_json::{Value, json};

    /// A valid deployment named `name` with these volumes.
    fn with_volumes(name: &str, volumes: Value) -> ModelDeployment {
        md(
            name,
            json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": volumes}},
                "engine": {"type": "vllm"}}),
        )
    }

    fn volume_errors(volumes: Value) -> Vec<FieldError> {
        validate(&with_volumes("qwen", volumes))
    }

    #[test]
    fn every_go_message_with_its_field() {
        let path = |i: usize, field: &str| format!("spec.model.storage.volumes[{i}].{field}");
        let table: Vec<(Value, Vec<FieldError>)> = vec![
            (
                json!([{"name": "data", "purpose": "custom", "mountPath": "/data"}]),
                one(&path(0, "claimName"), messages::STORAGE_CLAIM_NAME_REQUIRED),
            ),
            (
                json!([{"name": "compiled", "purpose": "compilationCache"}]),
                one(
                    &path(0, "claimName"),
                    "claimName is required when size is not set (must reference a pre-existing PVC)",
                ),
            ),
            (
                json!([{"name": "cache", "purpose": "modelCache", "size": "2Gi", "readOnly": true}]),
                one(
                    &path(0, "readOnly"),
                    "readOnly must not be true when size is set (controller-created PVCs need write access)",
                ),
            ),
            (
                json!([{"name": "cache", "purpose": "modelCache", "size": "2Gi", "claimName": "my-custom-pvc"}]),
                one(
                    &path(0, "claimName"),
                    r#"claimName must not be set when size is set (auto-generated as "qwen-cache")"#,
                ),
            ),
            (
                json!([{"name": "cache", "purpose": "modelCache", "size": "2Gi", "accessMode": "ReadWriteSometimes"}]),
                one(
                    &path(0, "accessMode"),
                    r#"Unsupported value: "ReadWriteSometimes": supported values: "ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod""#,
                ),
            ),
            (
                json!([{"name": "vol", "purpose": "modelCache", "claimName": "some-pvc", "accessMode": "ReadWriteOnce"}]),
                one(
                    &path(0, "accessMode"),
                    "accessMode is only applicable when size is set (controller-created PVCs)",
                ),
            ),
            (
                json!([{"name": "vol", "purpose": "modelCache", "claimName": "some-pvc", "storageClassName": "azurefile-premium"}]),
                one(
                    &path(0, "storageClassName"),
                    "storageClassName is only applicable when size is set (controller-created PVCs)",
                ),
            ),
            (
                // The API server refuses it first (the list's key), the webhook says it too.
                json!([{"name": "cache", "purpose": "modelCache", "claimName": "pvc-a"},
                       {"name": "cache", "purpose": "custom", "claimName": "pvc-b", "mountPath": "/data"}]),
                one(&path(1, "name"), "duplicate volume name"),
            ),
            (
                json!([{"name": "vol-a", "claimName": "pvc-a", "mountPath": "/shared-path"},
                       {"name": "vol-b", "claimName": "pvc-b", "mountPath": "/shared-path"}]),
                one(&path(1, "mountPath"), "duplicate mount path"),
            ),
            (
                json!([{"name": "vol-a", "claimName": "pvc-a", "mountPath": "/a"},
                       {"name": "vol-b", "claimName": "pvc-a", "mountPath": "/b"}]),
                one(&path(1, "claimName"), "duplicate claim name"),
            ),
            (
                json!([{"name": "vol", "claimName": "some-pvc", "mountPath": "data/models"}]),
                one(
                    &path(0, "mountPath"),
                    "mountPath must be an absolute path (start with /)",
                ),
            ),
            (
                json!([{"name": "vol", "purpose": "custom", "claimName": "some-pvc"}]),
                one(
                    &path(0, "mountPath"),
                    "mountPath is required when purpose is custom",
                ),
            ),
            (
                json!([{"name": "vol", "claimName": "some-pvc", "mountPath": "/proc/data"}]),
                one(
                    &path(0, "mountPath"),
                    "mountPath must not overlap with system path /proc",
                ),
            ),
            (
                json!([{"name": "cache-a", "purpose": "modelCache", "claimName": "pvc-a", "mountPath": "/model-cache-a"},
                       {"name": "cache-b", "purpose": "modelCache", "claimName": "pvc-b", "mountPath": "/model-cache-b"}]),
                one(
                    "spec.model.storage.volumes",
                    "at most one volume with purpose=modelCache is allowed",
                ),
            ),
            (
                json!([{"name": "a", "purpose": "compilationCache", "size": "1Gi"},
                       {"name": "b", "purpose": "compilationCache", "size": "1Gi", "mountPath": "/other"}]),
                one(
                    "spec.model.storage.volumes",
                    "at most one volume with purpose=compilationCache is allowed",
                ),
            ),
            (
                json!([{"name": "vol", "purpose": "scratch", "claimName": "c", "mountPath": "/s"}]),
                one(
                    &path(0, "purpose"),
                    r#"Unsupported value: "scratch": supported values: "modelCache", "compilationCache", "custom""#,
                ),
            ),
        ];
        for (volumes, expected) in table {
            assert_eq!(volume_errors(volumes.clone()), expected, "{volumes}");
        }
    }

    #[test]
    fn every_system_path_and_only_at_or_under_it() {
        for system in SYSTEM_PATHS {
            for path in [system.to_string(), format!("{system}/x/y")] {
                assert_eq!(
                    volume_errors(json!([{"name": "v", "claimName": "c", "mountPath": path}])),
                    one(
                        "spec.model.storage.volumes[0].mountPath",
                        &format!("mountPath must not overlap with system path {system}")
                    ),
                    "{path}"
                );
            }
        }
        for fine in ["/devices", "/etcetera", "/var/runner", "/var", "/data/etc"] {
            assert_eq!(
                volume_errors(json!([{"name": "v", "claimName": "c", "mountPath": fine}])),
                vec![],
                "{fine}"
            );
        }
    }

    #[test]
    fn the_two_name_length_checks_keep_the_go_texts() {
        // Our names are at most 45 characters, so these fire only for names stored before
        // (reconcile reports them beside the name's own error).
        let long = "a".repeat(251);
        let found = validate(&with_volumes(
            &long,
            json!([{"name": "mc", "purpose": "modelCache", "size": "1Gi"}]),
        ));
        let claim = format!("{long}-mc");
        let job = format!("{long}-model-download");
        assert_eq!(
            found
                .iter()
                .filter(|e| !e.message.contains("cannot change"))
                .cloned()
                .collect::<Vec<_>>(),
            vec![
                FieldError::new(
                    "spec.model.storage.volumes[0].name",
                    format!(
                        "auto-generated PVC claim name {claim:?} exceeds the 253-character Kubernetes name limit (got 254 characters); use a shorter ModelDeployment or volume name"
                    ),
                ),
                FieldError::new(
                    "metadata.name",
                    format!(
                        "auto-generated download Job name {job:?} exceeds the 253-character Kubernetes name limit (got 266 characters); use a shorter ModelDeployment name"
                    ),
                ),
            ]
        );
        // A read-only or unmanaged model cache has no download Job of the Go kind.
        let found = validate(&with_volumes(
            &"b".repeat(245),
            json!([{"name": "mc", "purpose": "modelCache", "claimName": "c"}]),
        ));
        assert!(
            found
                .iter()
                .all(|e| e.field == "metadata.name" && !e.message.contains("download Job")),
            "{found:?}"
        );
    }

    #[test]
    fn the_shared_cache_departure() {
        // A model cache with neither size nor claim uses the namespace's shared cache.
        assert_eq!(
            volume_errors(json!([{"name": "cache", "purpose": "modelCache"}])),
            vec![]
        );
        // Not for a custom source (nothing to download), nor for the other purposes.
        let custom = md(
            "c",
            json!({"model": {"source": "custom", "storage": {"volumes": [{"name": "cache", "purpose": "modelCache"}]}}, "image": "x/y:1"}),
        );
        assert_eq!(
            validate(&custom),
            one(
                "spec.model.storage.volumes[0].claimName",
                messages::STORAGE_CLAIM_NAME_REQUIRED
            )
        );
        // Its claim is the cache's: another volume naming that claim is a duplicate.
        let cache = ModelCacheKey::of(&with_volumes("qwen", json!([])).spec)
            .unwrap()
            .cache_name();
        assert_eq!(
            volume_errors(json!([{"name": "cache", "purpose": "modelCache"},
                {"name": "again", "claimName": cache, "mountPath": "/again"}])),
            one(
                "spec.model.storage.volumes[1].claimName",
                "duplicate claim name"
            )
        );
    }

    #[test]
    fn defaults_count_as_written() {
        // The model cache's default mount path collides with a custom volume mounted there.
        assert_eq!(
            volume_errors(json!([{"name": "cache", "purpose": "modelCache"},
                {"name": "data", "claimName": "d", "mountPath": "/model-cache"}])),
            one(
                "spec.model.storage.volumes[1].mountPath",
                "duplicate mount path"
            )
        );
        // A managed claim's generated name collides with a claim named so.
        assert_eq!(
            volume_errors(
                json!([{"name": "cache", "purpose": "modelCache", "size": "1Gi"},
                {"name": "data", "claimName": "qwen-cache", "mountPath": "/data"}])
            ),
            one(
                "spec.model.storage.volumes[1].claimName",
                "duplicate claim name"
            )
        );
        // The generated claim name, written by the webhook, is accepted.
        assert_eq!(
            volume_errors(
                json!([{"name": "cache", "purpose": "modelCache", "size": "1Gi", "claimName": "qwen-cache",
                "accessMode": "ReadWriteMany", "storageClassName": ""}])
            ),
            vec![]
        );
    }

    #[test]
    fn the_go_shapes_are_valid() {
        for volumes in [
            json!([{"name": "model-cache", "purpose": "modelCache", "claimName": "pvc-claim", "mountPath": "/model-cache"}]),
            json!([{"name": "model-cache", "purpose": "modelCache", "size": "100Gi", "storageClassName": "azurelustre-static", "accessMode": "ReadWriteMany"}]),
            json!([{"name": "vol-1", "purpose": "modelCache", "mountPath": "/model-cache", "readOnly": false, "claimName": "pvc-lustre"},
                   {"name": "compile", "purpose": "compilationCache", "size": "10Gi"},
                   {"name": "scratch", "purpose": "custom", "claimName": "scratch", "mountPath": "/scratch", "readOnly": true}]),
        ] {
            assert_eq!(volume_errors(volumes.clone()), vec![], "{volumes}");
        }
    }

    fn update(old: Value, new: Value) -> Vec<FieldError> {
        validate_storage_update(&with_volumes("qwen", old), &with_volumes("qwen", new))
    }

    #[test]
    fn managed_volumes_cannot_be_removed_or_changed() {
        let managed = json!({"name": "model-cache", "purpose": "modelCache", "size": "2Gi"});
        let existing = json!({"name": "data", "claimName": "d", "mountPath": "/data"});
        assert_eq!(
            update(json!([managed, existing]), json!([existing])),
            one(
                "spec.model.storage.volumes",
                r#"managed storage volume "model-cache" cannot be removed (it has an associated PVC; delete the ModelDeployment to clean up managed storage)"#
            )
        );
        for changed in [
            json!({"name": "model-cache", "purpose": "modelCache", "size": "10Gi"}),
            json!({"name": "model-cache", "purpose": "modelCache", "size": "2Gi", "accessMode": "ReadWriteOnce"}),
            json!({"name": "model-cache", "purpose": "modelCache", "size": "2Gi", "storageClassName": ""}),
            json!({"name": "model-cache", "purpose": "modelCache", "size": "2Gi", "mountPath": "/weights"}),
            json!({"name": "model-cache", "purpose": "modelCache", "claimName": "qwen-model-cache"}),
        ] {
            assert_eq!(
                update(json!([existing, managed]), json!([existing, changed])),
                one(
                    "spec.model.storage.volumes[1]",
                    "managed storage volume is immutable once created (delete the ModelDeployment to change managed storage configuration)"
                ),
                "{changed}"
            );
        }
        // The same volume with its defaults written, its size in other units, or other
        // (unmanaged) volumes changed: no error.
        for same in [
            json!([{"name": "model-cache", "purpose": "modelCache", "size": "2048Mi", "claimName": "qwen-model-cache",
                "accessMode": "ReadWriteMany", "mountPath": "/model-cache", "readOnly": false}]),
            json!([{"name": "model-cache", "purpose": "modelCache", "size": "2147483648"}, {"name": "new", "claimName": "n", "mountPath": "/n"}]),
        ] {
            assert_eq!(
                update(json!([managed, existing]), same.clone()),
                vec![],
                "{same}"
            );
        }
        // Only managed volumes are held: an existing claim may go or change.
        assert_eq!(update(json!([existing]), json!([])), vec![]);
    }

    #[test]
    fn quantities_compare_by_value() {
        for (a, b) in [
            ("1Gi", "1024Mi"),
            ("1G", "1000M"),
            ("1.5Gi", "1536Mi"),
            ("1000m", "1"),
            ("2", "2"),
        ] {
            assert!(same_quantity(a, b), "{a} == {b}");
        }
        for (a, b) in [
            ("1Gi", "1G"),
            ("1", "2"),
            ("x", "y"),
            ("1Gi", "not a quantity"),
        ] {
            assert!(!same_quantity(a, b), "{a} != {b}");
        }
    }
}
