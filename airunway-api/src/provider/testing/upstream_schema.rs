//! Rendered objects checked offline against an upstream CRD's `openAPIV3Schema`, as the API
//! server would check them: the structural schema turned into JSON Schema (draft 4, which
//! OpenAPI v3.0 schemas follow) with the Kubernetes extensions spelled out —
//! `x-kubernetes-int-or-string` as integer or string, `nullable` as a `null` type, and objects
//! with `properties` closed (`additionalProperties: false`) unless they preserve unknown fields,
//! because the API server prunes (or, with strict field validation, refuses) a field its schema
//! does not know: a renderer writing one would silently lose it. CEL rules
//! (`x-kubernetes-validations`) and formats are not checked here (the e2e dry-run does), except
//! `isQuantity(self)`, which is the quantity pattern.

use serde_json::{Map, Value, json};

/// A Kubernetes resource quantity (the pattern the API server's OpenAPI gives quantities).
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Deepest schema converted (CRD schemas nest far less).
const MAX_SCHEMA_DEPTH: usize = 128;

/// A validator for one version of an upstream kind.
pub struct UpstreamValidator {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for UpstreamValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpstreamValidator")
    }
}

/// The JSON Schema equivalent of a CRD's `openAPIV3Schema` (see the module docs).
pub fn to_json_schema(openapi: &Value) -> Value {
    convert(openapi, 0)
}

fn convert(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if depth > MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    for (key, value) in map {
        let converted = match key.as_str() {
            "properties" | "patternProperties" | "definitions" => Value::Object(
                value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .map(|(k, v)| (k.clone(), convert(v, depth + 1)))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            "items" | "additionalProperties" | "not" => convert(value, depth + 1),
            "allOf" | "anyOf" | "oneOf" => Value::Array(
                value
                    .as_array()
                    .map(|all| all.iter().map(|v| convert(v, depth + 1)).collect())
                    .unwrap_or_default(),
            ),
            // Annotations and Kubernetes extensions the JSON Schema check ignores.
            "format"
            | "default"
            | "description"
            | "example"
            | "nullable"
            | "x-kubernetes-validations"
            | "x-kubernetes-int-or-string"
            | "x-kubernetes-preserve-unknown-fields"
            | "x-kubernetes-embedded-resource"
            | "x-kubernetes-list-type"
            | "x-kubernetes-list-map-keys"
            | "x-kubernetes-map-type" => {
                continue;
            }
            // Draft 4 wants at least one entry; an empty list requires nothing.
            "required" if value.as_array().is_some_and(Vec::is_empty) => continue,
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    let flag = |name: &str| map.get(name).and_then(Value::as_bool) == Some(true);
    // The one CEL rule with an exact JSON Schema equivalent: `isQuantity(self)`.
    let is_quantity = map
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|rules| rules.iter().any(|r| r["rule"] == "isQuantity(self)"));
    if is_quantity && !out.contains_key("pattern") {
        out.insert("pattern".into(), json!(QUANTITY_PATTERN));
    }
    if flag("x-kubernetes-int-or-string") {
        out.remove("type");
        out.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if flag("nullable")
        && let Some(Value::String(t)) = out.get("type").cloned()
    {
        out.insert("type".into(), json!([t, "null"]));
    }
    if out.contains_key("properties")
        && !out.contains_key("additionalProperties")
        && !flag("x-kubernetes-preserve-unknown-fields")
        && !flag("x-kubernetes-embedded-resource")
    {
        out.insert("additionalProperties".into(), json!(false));
    }
    if flag("x-kubernetes-embedded-resource") {
        // apiVersion, kind and metadata of an embedded object are implied.
        if let Some(Value::Object(props)) = out.get_mut("properties") {
            for implied in ["apiVersion", "kind"] {
                props
                    .entry(implied)
                    .or_insert_with(|| json!({"type": "string"}));
            }
            props
                .entry("metadata")
                .or_insert_with(|| json!({"type": "object"}));
        }
    }
    Value::Object(out)
}

impl UpstreamValidator {
    /// The validator of version `version` of `crd` (a CustomResourceDefinition as JSON).
    pub fn new(crd: &Value, version: &str) -> Result<Self, String> {
        let versions = crd["spec"]["versions"]
            .as_array()
            .ok_or("the CRD has no spec.versions")?;
        let schema = versions
            .iter()
            .find(|v| v["name"] == version)
            .map(|v| &v["schema"]["openAPIV3Schema"])
            .filter(|s| s.is_object())
            .ok_or_else(|| format!("the CRD has no schema for version {version}"))?;
        let mut converted = to_json_schema(schema);
        // The API server knows apiVersion, kind and metadata at the root whatever the schema
        // says (and checks metadata itself).
        if let Some(Value::Object(props)) = converted.get_mut("properties") {
            props.insert("metadata".into(), json!({"type": "object"}));
            props.insert("apiVersion".into(), json!({"type": "string"}));
            props.insert("kind".into(), json!({"type": "string"}));
        }
        let validator = jsonschema::draft4::options()
            .should_validate_formats(false)
            .build(&converted)
            .map_err(|e| {
                let at = e.instance_path().to_string();
                let message: String = e.to_string().chars().rev().take(200).collect();
                format!(
                    "the converted schema does not compile at {at}: …{}",
                    message.chars().rev().collect::<String>()
                )
            })?;
        Ok(UpstreamValidator { validator })
    }

    /// Every error of `object` against the schema, as `<JSON pointer>: <message>`.
    pub fn errors(&self, object: &Value) -> Vec<String> {
        self.validator
            .iter_errors(object)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }
}

/// The validator of AI Runway's own ModelDeployment CRD (`v1alpha1`), as generated from the
/// types: a generated spec it refuses would be refused by the API server.
pub fn model_deployment_validator() -> Result<UpstreamValidator, String> {
    use kube::CustomResourceExt;
    let crd =
        serde_json::to_value(crate::v1alpha1::ModelDeployment::crd()).map_err(|e| e.to_string())?;
    UpstreamValidator::new(&crd, "v1alpha1")
}

/// The validator of the CRD at `path` of the upstream material (see
/// [`super::upstream_file`]), for `version`.
pub fn upstream_validator(
    manifest_dir: &str,
    path: &str,
    version: &str,
) -> Result<UpstreamValidator, String> {
    let crd: Value = super::upstream(manifest_dir, path).map_err(|e| e.to_string())?;
    UpstreamValidator::new(&crd, version)
}
