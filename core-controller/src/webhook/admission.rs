//! Admission decisions (pure: request in, response out; cluster state passed in).
//!
//! - Mutating, ModelDeployment: schema defaults as a JSON patch that only adds missing keys.
//! - Validating, ModelDeployment: every [`validation`](crate::validation) rule, plus rules that
//!   need cluster state (the named provider is registered and its upstream CRD installed) and
//!   the selector setting; all errors at once, each with its field path; warnings.
//! - Validating, InferenceProviderConfig: engine names, serving modes, priorities, and every
//!   selection rule compiles as CEL and returns a bool.

use airunway_api::conditions;
use airunway_api::constants::{condition_types, messages, reasons};
use airunway_api::resolve::apply_spec_defaults_named;
use airunway_api::v1alpha1::{
    ApiFormat, EngineCapability, EngineType, GatewayCapability, InferenceProviderConfig,
    ModelDeployment, unused_override_paths,
};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use kube::core::response::{StatusCause, StatusDetails};
use serde_json::{Value, json};

use crate::selection::cost::{self, Shape};
use crate::selection::rules::{RuleInput, Spent, compile};

/// The largest `spec` and `metadata` a selection rule can see (from the CRD's limits).
static WORST_CASE_INPUT: std::sync::LazyLock<(Shape, Shape)> =
    std::sync::LazyLock::new(|| Shape::worst_case_input(crate::unknown_fields::spec_schema()));
use crate::validation::{self, FieldError};

/// Builds a denial carrying every error: the message lists `field: message` pairs and
/// `status.details.causes` carries them field by field.
pub fn deny(
    response: AdmissionResponse,
    kind: &str,
    name: &str,
    errors: &[FieldError],
) -> AdmissionResponse {
    let mut response = response.deny(validation::describe(errors));
    response.result.code = 422;
    response.result.reason = "Invalid".to_string();
    response.result.details = Some(StatusDetails {
        name: name.to_string(),
        group: airunway_api::constants::GROUP.to_string(),
        kind: kind.to_string(),
        causes: errors
            .iter()
            .map(|e| StatusCause {
                reason: "FieldValueInvalid".into(),
                message: e.message.clone(),
                field: e.field.clone(),
            })
            .collect(),
        uid: String::new(),
        retry_after_seconds: 0,
    });
    response
}

fn with_warnings(mut response: AdmissionResponse, warnings: Vec<String>) -> AdmissionResponse {
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    response
}

/// The defaulting patch for a ModelDeployment.
pub fn mutate_model_deployment(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Some(object) = request.object.as_ref() else {
        return response;
    };
    let Ok(original) = serde_json::to_value(object) else {
        return response;
    };
    let mut defaulted = original.clone();
    apply_defaults(&mut defaulted);
    crate::access::author::record(request, &mut defaulted);
    let patch = json_patch::diff(&original, &defaulted);
    if patch.0.is_empty() {
        return response;
    }
    match response.clone().with_patch(patch) {
        Ok(patched) => patched,
        Err(e) => {
            tracing::warn!(error = %e, "could not serialise the defaulting patch");
            response
        }
    }
}

/// The schema defaults the mutating webhook adds to a ModelDeployment (the whole object as
/// JSON), in place: only missing keys are added. The offline `validate` applies the same.
pub fn apply_defaults(object: &mut Value) {
    // The name is given (the API server generates one for `generateName` before admission);
    // managed volumes' claim names are derived from it.
    let name = object["metadata"]["name"].as_str().map(str::to_string);
    if let Some(spec) = object.get_mut("spec") {
        apply_spec_defaults_named(spec, name.as_deref());
    }
}

/// What the validating webhook decides for an object: every error (the object is refused when
/// there is one) and the warnings it is admitted with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionVerdict {
    /// The errors, each with its field path.
    pub errors: Vec<FieldError>,
    /// The warnings (only given when there is no error, as the webhook answers).
    pub warnings: Vec<String>,
}

impl AdmissionVerdict {
    /// The admission response: allowed with the warnings, or denied with every error.
    pub fn respond(self, response: AdmissionResponse, kind: &str, name: &str) -> AdmissionResponse {
        if self.errors.is_empty() {
            with_warnings(response, self.warnings)
        } else {
            deny(response, kind, name, &self.errors)
        }
    }
}

/// Validates a ModelDeployment create or update.
pub fn validate_model_deployment(
    request: &AdmissionRequest<DynamicObject>,
    providers: &[InferenceProviderConfig],
    selector_enabled: bool,
) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Some(object) = request.object.as_ref() else {
        return response;
    };
    let name = object.metadata.name.clone().unwrap_or_default();
    let object = serde_json::to_value(object).unwrap_or(Value::Null);
    let old = match request.operation {
        Operation::Update => Some(
            request
                .old_object
                .as_ref()
                .and_then(|old| serde_json::to_value(old).ok())
                .unwrap_or(Value::Null),
        ),
        _ => None,
    };
    model_deployment_verdict(&object, old.as_ref(), providers, selector_enabled).respond(
        response,
        "ModelDeployment",
        &name,
    )
}

/// The validating webhook's decision for a ModelDeployment (pure): `object` is the whole
/// object as JSON, `old` the stored one on an update (`None`: a create). The webhook and the
/// offline `validate` both call it.
pub fn model_deployment_verdict(
    object: &Value,
    old: Option<&Value>,
    providers: &[InferenceProviderConfig],
    selector_enabled: bool,
) -> AdmissionVerdict {
    let create = old.is_none();
    // Metadata-only updates (finalizers, labels, annotations) are never blocked: a provider must
    // always be able to release its finalizer, even from a spec that newer rules reject.
    if old.is_some_and(|old| old.get("spec") == object.get("spec")) {
        return AdmissionVerdict::default();
    }
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let md: ModelDeployment = match serde_json::from_value(object.clone()) {
        Ok(md) => md,
        Err(e) => {
            return AdmissionVerdict {
                errors: vec![FieldError {
                    field: "spec".into(),
                    message: format!("does not parse: {e}"),
                }],
                warnings: vec![],
            };
        }
    };
    // The name on create only (as the Go AI Runway): a stored name cannot change, so an update
    // refused for it could never be made; reconcile still says why such a name cannot run.
    let mut errors = if create {
        validation::validate_name(&name)
    } else {
        vec![]
    };
    errors.extend(validation::validate_spec(&md));
    if let Some(spec) = object.get("spec") {
        errors.extend(crate::unknown_fields::unknown_fields(spec));
    }
    // Managed volumes may be neither removed nor changed (the Go AI Runway's update rules).
    if let Some(old) =
        old.and_then(|old| serde_json::from_value::<ModelDeployment>(old.clone()).ok())
    {
        errors.extend(validation::validate_storage_update(&old, &md));
    }

    // Cluster state: check the named provider when it is set or changed (not on unrelated
    // updates, so a provider that later loses its CRD does not block every edit).
    let old_provider = old
        .and_then(|o| o.get("spec"))
        .and_then(|s| s.get("provider"))
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(provider) = md.spec.explicit_provider()
        && (create || old_provider.as_deref() != Some(provider))
    {
        errors.extend(check_provider(&md, provider, providers));
    }
    // A provider that is not registered yet is allowed (a GitOps sync may apply the deployment
    // in the same wave as the provider): the deployment waits, Pending, until it registers.
    let unregistered = md.spec.explicit_provider().and_then(|provider| {
        (!providers
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some(provider)))
        .then(|| unregistered_provider(provider, providers))
    });
    if !selector_enabled
        && md.spec.explicit_engine().is_none()
        && md.spec.explicit_provider().is_none()
    {
        errors.push(FieldError {
            field: "spec.engine.type".into(),
            message: format!(
                "{}: the provider selector is disabled, so neither the engine nor the provider can be chosen automatically",
                messages::ENGINE_TYPE_REQUIRED
            ),
        });
    }
    if errors.is_empty() {
        let mut warnings = validation::warnings(&md);
        warnings.extend(unused_overrides(&md, providers));
        warnings.extend(unregistered);
        AdmissionVerdict { errors, warnings }
    } else {
        AdmissionVerdict {
            errors,
            warnings: vec![],
        }
    }
}

/// Warnings for `provider.overrides` paths the named provider does not use (it declares the
/// paths it uses in its registration's `overridePaths`).
fn unused_overrides(md: &ModelDeployment, providers: &[InferenceProviderConfig]) -> Vec<String> {
    let Some(provider) = md.spec.explicit_provider() else {
        return vec![];
    };
    let Some(overrides) = md.spec.provider.as_ref().and_then(|p| p.overrides.as_ref()) else {
        return vec![];
    };
    let Some(known) = providers
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(provider))
        .and_then(|p| p.spec.override_paths.as_ref())
    else {
        return vec![];
    };
    let used = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    unused_override_paths(overrides, known)
        .into_iter()
        .map(|path| {
            format!("{path} is not used by provider {provider} and is ignored (it uses: {used})")
        })
        .collect()
}

/// The warning for a `spec.provider.name` that no InferenceProviderConfig registers.
fn unregistered_provider(provider: &str, providers: &[InferenceProviderConfig]) -> String {
    let mut known: Vec<&str> = providers
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    known.sort_unstable();
    let known = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    format!(
        "spec.provider.name: provider '{provider}' is not registered: there is no InferenceProviderConfig named '{provider}' (registered providers: {known}); the deployment stays Pending until it registers"
    )
}

/// Errors for `spec.provider.name = provider` given the registered providers: its upstream CRD
/// is installed and (with an explicit engine) its capabilities fit. A provider that is not
/// registered is no error (the deployment waits for it).
pub fn check_provider(
    md: &ModelDeployment,
    provider: &str,
    providers: &[InferenceProviderConfig],
) -> Vec<FieldError> {
    let Some(ipc) = providers
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(provider))
    else {
        // Not an error: see `unregistered_provider`.
        return vec![];
    };
    let upstream = conditions::find(
        ipc.status.as_ref().and_then(|s| s.conditions.as_deref()),
        condition_types::UPSTREAM_AVAILABLE,
    );
    if upstream.is_some_and(|c| {
        !c.is_true() && c.reason.as_deref() == Some(reasons::UPSTREAM_CRD_NOT_INSTALLED)
    }) {
        return vec![FieldError {
            field: "spec.provider.name".into(),
            message: messages::provider_crd_not_installed(provider),
        }];
    }
    let capabilities = ipc
        .spec
        .capabilities
        .as_ref()
        .map(|c| c.engine_capabilities())
        .unwrap_or_default();
    match md.spec.explicit_engine() {
        Some(engine) if !capabilities.is_empty() => {
            validation::pinned_provider_mismatch(&md.spec, provider, engine, &capabilities)
                .into_iter()
                .collect()
        }
        _ => vec![],
    }
}

/// Sample deployments every selection rule is evaluated against at admission, to check that
/// it returns a bool (CEL here has no static type checker).
fn sample_deployments() -> Vec<ModelDeployment> {
    [
        json!({"model": {"id": "org/model"}, "engine": {"type": "llamacpp"}, "resources": {"gpu": {"count": 0}, "memory": "16Gi", "cpu": "8"}}),
        json!({"model": {"id": "org/model", "servedName": "m"}, "engine": {"type": "vllm", "contextLength": 8192, "trustRemoteCode": false, "args": {"quantization": "awq"}},
               "resources": {"gpu": {"count": 1}}, "provider": {"name": "p", "overrides": {}}, "image": "img", "secrets": {"huggingFaceToken": "s"},
               "nodeSelector": {}, "env": [], "tolerations": [], "podTemplate": {"metadata": {"labels": {}, "annotations": {}}}}),
        json!({"model": {"id": "org/model"}, "engine": {"type": "vllm"}, "serving": {"mode": "disaggregated"},
               "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 2}, "memory": "64Gi"}, "decode": {"replicas": 2, "gpu": {"count": 1}, "memory": "64Gi"}}}),
    ]
    .into_iter()
    .filter_map(|spec| {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "sample", "namespace": "default", "labels": {}, "annotations": {}}, "spec": spec,
        }))
        .ok()
    })
    .collect()
}

/// Validates an InferenceProviderConfig create or update.
pub fn validate_provider_config(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Some(object) = request.object.as_ref() else {
        return response;
    };
    let name = object.metadata.name.clone().unwrap_or_default();
    let spec = object.data.get("spec").cloned().unwrap_or(Value::Null);
    provider_config_verdict(&spec).respond(response, "InferenceProviderConfig", &name)
}

/// The validating webhook's decision for an InferenceProviderConfig's `spec` (pure; the
/// webhook and the offline `validate` both call it).
pub fn provider_config_verdict(spec: &Value) -> AdmissionVerdict {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    let engine_names: Vec<&str> = EngineType::ALL.iter().map(|e| e.as_str()).collect();
    let capabilities = &spec["capabilities"];
    for (i, entry) in capabilities["engines"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = format!("spec.capabilities.engines[{i}]");
        match entry {
            Value::String(engine) if engine_names.contains(&engine.as_str()) => {}
            Value::Object(map) => {
                match map.get("name").and_then(Value::as_str) {
                    Some(engine) if engine_names.contains(&engine) => {}
                    other => errors.push(FieldError {
                        field: format!("{field}.name"),
                        message: format!(
                            "unknown engine {other:?}: must be one of {}",
                            engine_names.join(", ")
                        ),
                    }),
                }
                for (j, mode) in map
                    .get("servingModes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if !matches!(mode.as_str(), Some("aggregated" | "disaggregated")) {
                        errors.push(FieldError {
                            field: format!("{field}.servingModes[{j}]"),
                            message: format!(
                                "unknown serving mode {mode}: must be aggregated or disaggregated"
                            ),
                        });
                    }
                }
                for flag in EngineCapability::BOOLEAN_FIELDS {
                    if map.get(flag).is_some_and(|v| !v.is_boolean()) {
                        errors.push(FieldError {
                            field: format!("{field}.{flag}"),
                            message: "must be true or false".into(),
                        });
                    }
                }
                for key in map.keys() {
                    if !EngineCapability::FIELDS.contains(&key.as_str()) {
                        errors.push(FieldError {
                            field: format!("{field}.{key}"),
                            message: format!(
                                "unknown field: an engine entry has {}",
                                EngineCapability::FIELDS.join(", ")
                            ),
                        });
                    }
                }
                for key in ["apiFormats", "gateway"] {
                    let Some(value) = map.get(key) else { continue };
                    let parsed = match key {
                        "apiFormats" => serde_json::from_value::<Vec<ApiFormat>>(value.clone())
                            .map(|_| ())
                            .map_err(|_| "must be a list of openai-chat, openai-responses, anthropic-messages".to_string()),
                        _ => serde_json::from_value::<GatewayCapability>(value.clone())
                            .map(|_| ())
                            .map_err(|e| format!("is not a gateway capability: {e}")),
                    };
                    if let Err(message) = parsed {
                        errors.push(FieldError {
                            field: format!("{field}.{key}"),
                            message,
                        });
                    }
                }
            }
            other => errors.push(FieldError {
                field,
                message: format!(
                    "unknown engine {other}: must be one of {} (or an object with a name)",
                    engine_names.join(", ")
                ),
            }),
        }
    }

    let samples = sample_deployments();
    for (i, rule) in spec["selectionRules"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if rule["priority"].as_i64().is_some_and(|p| p < 0) {
            errors.push(FieldError {
                field: format!("spec.selectionRules[{i}].priority"),
                message: "must be 0 or greater".into(),
            });
        }
        let Some(condition) = rule["condition"].as_str() else {
            continue;
        };
        let field = format!("spec.selectionRules[{i}].condition");
        let program = match compile(condition) {
            Ok(program) => program,
            Err(e) => {
                errors.push(FieldError {
                    field,
                    message: format!("selection rule {i} does not compile as CEL: {e}"),
                });
                continue;
            }
        };
        let (spec_shape, metadata_shape) = &*WORST_CASE_INPUT;
        match cost::bound(program.expression(), spec_shape, metadata_shape) {
            Err(e) => {
                errors.push(FieldError {
                    field,
                    message: format!("selection rule {i} cannot be bounded: {}", e.0),
                });
                continue;
            }
            Ok(bound) if bound > cost::RULE_BUDGET => {
                errors.push(FieldError {
                    field,
                    message: format!(
                        "selection rule {i} may take up to {bound} evaluation steps on a deployment within the CRD's limits, over the budget of {} per rule: iterate over fewer or smaller fields, avoid nested comprehensions and growing strings",
                        cost::RULE_BUDGET
                    ),
                });
                continue;
            }
            Ok(_) => {}
        }
        for sample in &samples {
            let outcome = RuleInput::new(sample, sample.spec.explicit_engine())
                .and_then(|input| input.evaluate_within_budget(&program, &mut Spent::default()));
            match outcome {
                Ok(_) => {}
                Err(e) if e.starts_with("rule returned") => {
                    errors.push(FieldError {
                        field: field.clone(),
                        message: format!("selection rule {i} must return a bool: {e}"),
                    });
                    break;
                }
                Err(e) => {
                    warnings.push(format!(
                        "selection rule {i} fails on a sample deployment ({e}); at run time a failing rule counts as false"
                    ));
                    break;
                }
            }
        }
    }
    if errors.is_empty() {
        AdmissionVerdict { errors, warnings }
    } else {
        AdmissionVerdict {
            errors,
            warnings: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::AdmissionReview;

    fn request(
        kind: &str,
        operation: &str,
        object: Value,
        old: Option<Value>,
    ) -> AdmissionRequest<DynamicObject> {
        let review: AdmissionReview<DynamicObject> = serde_json::from_value(json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u", "kind": {"group": "airunway.ai", "version": "v1alpha1", "kind": kind},
                "resource": {"group": "airunway.ai", "version": "v1alpha1", "resource": "x"},
                "operation": operation, "userInfo": {}, "object": object, "oldObject": old, "dryRun": false,
                "name": "n", "namespace": "ns",
            }
        }))
        .unwrap();
        review.try_into().unwrap()
    }

    fn md(spec: Value) -> Value {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": "n", "namespace": "ns"}, "spec": spec})
    }

    fn ipc(name: &str, crd_missing: bool) -> InferenceProviderConfig {
        let conditions = if crd_missing {
            json!([{"type": "UpstreamAvailable", "status": "False", "reason": "UpstreamCRDNotInstalled", "message": "x"}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": name}, "spec": {}, "status": {"ready": !crd_missing, "conditions": conditions}}))
        .unwrap()
    }

    #[test]
    fn defaulting_patch_only_adds() {
        let response = mutate_model_deployment(&request(
            "ModelDeployment",
            "CREATE",
            md(json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 1}}})),
            None,
        ));
        let patch: Value = serde_json::from_slice(response.patch.as_ref().unwrap()).unwrap();
        let ops: Vec<(&str, &str)> = patch
            .as_array()
            .unwrap()
            .iter()
            .map(|op| (op["op"].as_str().unwrap(), op["path"].as_str().unwrap()))
            .collect();
        assert!(ops.iter().all(|(op, _)| *op == "add"), "{ops:?}");
        for path in [
            "/spec/model/source",
            "/spec/serving",
            "/spec/scaling",
            "/spec/resources/gpu/type",
        ] {
            assert!(
                ops.iter().any(|(_, p)| *p == path),
                "{path} missing from {ops:?}"
            );
        }
        // Already defaulted: the patch only records the spec author (crate::access::author).
        let full = md(
            json!({"model": {"id": "a/b", "source": "huggingface"}, "serving": {"mode": "aggregated"}, "scaling": {"replicas": 0}}),
        );
        let response = mutate_model_deployment(&request("ModelDeployment", "CREATE", full, None));
        let patch: Value = serde_json::from_slice(response.patch.as_ref().unwrap()).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/metadata/annotations",
                    "value": {"airunway.ai/spec-author": "", "airunway.ai/spec-author-groups": ""}}])
        );
    }

    #[test]
    fn storage_volumes_are_defaulted_with_the_deployments_name() {
        let object = md(
            json!({"model": {"id": "a/b", "source": "huggingface", "storage": {"volumes": [
            {"name": "cache", "purpose": "modelCache", "size": "10Gi"},
            {"name": "compiled", "purpose": "", "mountPath": "/c", "claimName": "c"},
        ]}}, "serving": {"mode": "aggregated"}, "scaling": {"replicas": 1}}),
        );
        let response =
            mutate_model_deployment(&request("ModelDeployment", "CREATE", object.clone(), None));
        let patch: json_patch::Patch =
            serde_json::from_slice(response.patch.as_ref().unwrap()).unwrap();
        let mut patched = object;
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(
            patched["spec"]["model"]["storage"]["volumes"],
            json!([
                {"name": "cache", "purpose": "modelCache", "size": "10Gi", "mountPath": "/model-cache",
                 "claimName": "n-cache", "accessMode": "ReadWriteMany"},
                {"name": "compiled", "purpose": "custom", "mountPath": "/c", "claimName": "c"},
            ])
        );
    }

    #[test]
    fn managed_volumes_are_held_on_update_only() {
        let object = |size: &str| {
            md(json!({"model": {"id": "a/b", "storage": {"volumes": [
                {"name": "cache", "purpose": "modelCache", "size": size}]}}, "engine": {"type": "llamacpp"}}))
        };
        let created = validate_model_deployment(
            &request("ModelDeployment", "CREATE", object("1Gi"), None),
            &[],
            true,
        );
        assert!(created.allowed, "{}", created.result.message);
        let resized = validate_model_deployment(
            &request(
                "ModelDeployment",
                "UPDATE",
                object("2Gi"),
                Some(object("1Gi")),
            ),
            &[],
            true,
        );
        assert_eq!(
            resized.result.message,
            "spec.model.storage.volumes[0]: managed storage volume is immutable once created (delete the ModelDeployment to change managed storage configuration)"
        );
        let mut other = object("1024Mi");
        other["spec"]["scaling"] = json!({"replicas": 2});
        let same = validate_model_deployment(
            &request("ModelDeployment", "UPDATE", other, Some(object("1Gi"))),
            &[],
            true,
        );
        assert!(same.allowed, "{}", same.result.message);
    }

    #[test]
    fn the_name_is_checked_on_create_only() {
        // V9: a name stored under the Go AI Runway (dots, or longer than 45 characters) cannot
        // change, so updates of its spec are admitted; a create is refused naming the rule.
        for name in ["a.b", "m234567890123456789012345678901234567890123456"] {
            let object = |replicas: i64| {
                json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                    "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"model": {"id": "a/b"}, "engine": {"type": "llamacpp"},
                        "scaling": {"replicas": replicas}}})
            };
            let created = validate_model_deployment(
                &request("ModelDeployment", "CREATE", object(1), None),
                &[],
                true,
            );
            assert!(!created.allowed, "{name}");
            assert!(created.result.message.contains("metadata.name"), "{name}");
            let updated = validate_model_deployment(
                &request("ModelDeployment", "UPDATE", object(2), Some(object(1))),
                &[],
                true,
            );
            assert!(updated.allowed, "{name}: {}", updated.result.message);
        }
    }

    #[test]
    fn provider_reference_checks() {
        let providers = [ipc("kaito", false), ipc("dynamo", true)];
        let spec = |p: &str| {
            md(
                json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "provider": {"name": p}}),
            )
        };
        let r = validate_model_deployment(
            &request("ModelDeployment", "CREATE", spec("ghost"), None),
            &providers,
            true,
        );
        // Not registered (yet): admitted with a warning; the deployment waits, Pending.
        assert!(r.allowed);
        assert_eq!(
            r.warnings.unwrap(),
            [
                "spec.provider.name: provider 'ghost' is not registered: there is no InferenceProviderConfig named 'ghost' (registered providers: dynamo, kaito); the deployment stays Pending until it registers"
            ]
        );
        let r = validate_model_deployment(
            &request("ModelDeployment", "CREATE", spec("dynamo"), None),
            &providers,
            true,
        );
        assert_eq!(
            r.result.message,
            "spec.provider.name: Provider 'dynamo' CRD not installed in cluster"
        );
        // An update of a deployment already on that provider is allowed.
        let mut changed = spec("dynamo");
        changed["spec"]["engine"]["contextLength"] = json!(4096);
        let r = validate_model_deployment(
            &request("ModelDeployment", "UPDATE", changed, Some(spec("dynamo"))),
            &providers,
            true,
        );
        assert!(r.allowed, "{}", r.result.message);
        // Metadata-only updates pass even when the spec would not.
        let mut invalid = md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}}));
        invalid["metadata"]["finalizers"] = json!([]);
        let r = validate_model_deployment(
            &request("ModelDeployment", "UPDATE", invalid.clone(), Some(invalid)),
            &providers,
            true,
        );
        assert!(r.allowed, "{}", r.result.message);
        assert!(
            validate_model_deployment(
                &request("ModelDeployment", "CREATE", spec("kaito"), None),
                &providers,
                true
            )
            .allowed
        );
    }

    #[test]
    fn engine_required_when_the_selector_is_off() {
        let r = validate_model_deployment(
            &request(
                "ModelDeployment",
                "CREATE",
                md(json!({"model": {"id": "a/b"}})),
                None,
            ),
            &[],
            false,
        );
        assert!(
            r.result
                .message
                .starts_with("spec.engine.type: engine.type is required"),
            "{}",
            r.result.message
        );
        assert!(
            validate_model_deployment(
                &request(
                    "ModelDeployment",
                    "CREATE",
                    md(json!({"model": {"id": "a/b"}})),
                    None
                ),
                &[],
                true
            )
            .allowed
        );
    }

    #[test]
    fn warnings_reach_the_response() {
        let r = validate_model_deployment(
            &request(
                "ModelDeployment",
                "CREATE",
                md(json!({"model": {"source": "custom", "servedName": "x"}})),
                None,
            ),
            &[],
            true,
        );
        assert!(r.allowed);
        assert_eq!(
            r.warnings,
            Some(vec![messages::SERVED_NAME_IGNORED.to_string()])
        );
    }

    fn config(spec: Value) -> Value {
        json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig", "metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn provider_config_rules_and_engines() {
        let ok = config(
            json!({"capabilities": {"engines": ["vllm", {"name": "llamacpp", "servingModes": ["aggregated"], "cpuSupport": true}]},
            "selectionRules": [{"condition": "spec.engine.type == 'vllm'", "priority": 1}]}),
        );
        assert!(
            validate_provider_config(&request("InferenceProviderConfig", "CREATE", ok, None))
                .allowed
        );

        let r = validate_provider_config(&request(
            "InferenceProviderConfig",
            "CREATE",
            config(json!({
                "capabilities": {"engines": ["vllm", "tensorflow", {"name": "x"}, {"name": "vllm", "servingModes": ["pipelined"]}]},
                "selectionRules": [{"condition": "spec.engine.type ==", "priority": 1}, {"condition": "1 + 1", "priority": 2}]
            })),
            None,
        ));
        let fields: Vec<String> = r
            .result
            .details
            .unwrap()
            .causes
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.capabilities.engines[1]",
                "spec.capabilities.engines[2].name",
                "spec.capabilities.engines[3].servingModes[0]",
                "spec.selectionRules[0].condition",
                "spec.selectionRules[1].condition",
            ]
        );
        assert!(
            r.result
                .message
                .contains("selection rule 0 does not compile as CEL"),
            "{}",
            r.result.message
        );
        assert!(
            r.result.message.contains(
                "selection rule 1 must return a bool: rule returned an int instead of a bool"
            ),
            "{}",
            r.result.message
        );

        let r = validate_provider_config(&request(
            "InferenceProviderConfig",
            "CREATE",
            config(
                json!({"selectionRules": [{"condition": "metadata.labels.team == 'a'", "priority": 1}]}),
            ),
            None,
        ));
        assert!(r.allowed, "runtime errors on samples are warnings");
        assert!(
            r.warnings.unwrap()[0].starts_with("selection rule 0 fails on a sample deployment")
        );
    }

    /// Every shipped provider's registration is admitted (the fixtures each provider's tests
    /// hold to its `registration()`): a field a provider sends that admission does not know
    /// would deny the registration on every cluster with the webhook on.
    #[test]
    fn every_shipped_registration_is_admitted() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/shipped-providers");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            let object: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let r = validate_provider_config(&request(
                "InferenceProviderConfig",
                "CREATE",
                object,
                None,
            ));
            assert!(r.allowed, "{}: {}", path.display(), r.result.message);
            seen += 1;
        }
        assert_eq!(seen, 5, "the five shipped providers");
    }

    /// Every field a provider can register is admitted: an entry serialised from the type
    /// with each field set, as a shim's registration sends it.
    #[test]
    fn every_engine_entry_field_of_the_type_is_admitted() {
        use airunway_api::v1alpha1::ServingMode;
        let mut entry =
            EngineCapability::new(EngineType::Vllm, vec![ServingMode::Aggregated], true, true);
        entry.requires_crd = Some(false);
        entry.gateway = Some(GatewayCapability::default());
        entry.lora_support = true;
        entry.tool_calling_support = true;
        let entry = serde_json::to_value(&entry).unwrap();
        for field in EngineCapability::FIELDS {
            assert!(entry.get(field).is_some(), "{field} not serialised");
        }
        let r = validate_provider_config(&request(
            "InferenceProviderConfig",
            "CREATE",
            config(json!({"capabilities": {"engines": [entry]}})),
            None,
        ));
        assert!(r.allowed, "{}", r.result.message);

        let r = validate_provider_config(&request(
            "InferenceProviderConfig",
            "CREATE",
            config(json!({"capabilities": {"engines": [
                {"name": "vllm", "loraSupport": "yes", "toolCalingSupport": true}
            ]}})),
            None,
        ));
        let fields: Vec<String> = r
            .result
            .details
            .unwrap()
            .causes
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.capabilities.engines[0].loraSupport",
                "spec.capabilities.engines[0].toolCalingSupport",
            ]
        );
    }
}
