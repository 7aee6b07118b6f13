//! CEL selection rules, evaluated with the `cel` crate (through kube's Kubernetes CEL
//! extensions, so rules have the same functions as CRD validation rules).
//!
//! # What a rule sees
//!
//! Two variables:
//!
//! - `spec`: the ModelDeployment spec as stored, with
//!   1. the schema defaults filled in where missing (`model.source: huggingface`,
//!      `serving.mode: aggregated`, `scaling.replicas: 1`, `gpu.type: nvidia.com/gpu`,
//!      prefill/decode `replicas: 1`);
//!   2. `engine.type` set to the resolved engine (the user's, or the one the core selected);
//!   3. the objects `model`, `provider`, `engine`, `serving`, `scaling` and `resources` always
//!      present (empty when omitted), so `has(spec.resources.gpu)` never fails on a missing
//!      parent;
//!   4. `resources.gpu.count` set to 0 when `resources.gpu` is given without a count.
//!
//!   Nothing else is invented: in particular `resources.gpu` stays absent when omitted.
//! - `metadata`: `{name, namespace, labels, annotations}` of the deployment (labels and
//!   annotations are `{}` when there are none).
//!
//! A rule must return a bool. A rule that fails at run time (e.g. `spec.model.id.startsWith(1)`)
//! counts as false; the error is logged, counted in `airunway_selection_rule_errors_total`,
//! and recorded in the provider's `SelectionRulesValid` condition.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use airunway_api::v1alpha1::{EngineType, ModelDeployment};
use kube::core::cel::{KubeCelExt, cel};

use super::cost::{self, Shape};
use serde_json::{Value, json};

/// A rule that could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// The provider.
    pub provider: String,
    /// Index of the rule in `spec.selectionRules`.
    pub index: usize,
    /// The rule text.
    pub condition: String,
    /// The CEL error.
    pub message: String,
}

/// A compiled rule, or why it does not compile.
pub type CompiledRule = Arc<Result<cel::Program, String>>;

/// Compiled rules, cached by expression text (compilation is the expensive part).
#[derive(Clone, Default)]
pub struct RuleSet {
    cache: Arc<Mutex<HashMap<String, CompiledRule>>>,
}

impl RuleSet {
    /// Compiles `condition` (cached).
    pub fn compile(&self, condition: &str) -> CompiledRule {
        if let Ok(cache) = self.cache.lock()
            && let Some(hit) = cache.get(condition)
        {
            return hit.clone();
        }
        let compiled = Arc::new(compile(condition));
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() > 4096 {
                cache.clear();
            }
            cache.insert(condition.to_string(), compiled.clone());
        }
        compiled
    }
}

/// Compiles a rule, with the CEL parse error as text.
pub fn compile(condition: &str) -> Result<cel::Program, String> {
    cel::Program::compile(condition).map_err(|e| e.to_string())
}

/// The CEL standard library with the Kubernetes extensions, registered once: every rule
/// context is a child scope of it.
static KUBERNETES_FUNCTIONS: LazyLock<cel::Context<'static>> =
    LazyLock::new(|| cel::Context::default().with_all());

/// The variables a rule is evaluated against (see the module docs), built once per deployment
/// and shared by every rule evaluated for it.
pub struct RuleInput {
    context: cel::Context<'static>,
    spec_shape: Shape,
    metadata_shape: Shape,
}

/// Evaluation steps spent on one selection decision (see [`super::cost`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent(pub u64);

impl RuleInput {
    /// Builds the input for `md` with `engine` as the resolved engine.
    pub fn new(md: &ModelDeployment, engine: Option<EngineType>) -> Result<RuleInput, String> {
        let spec_value = rule_spec(md, engine)?;
        let meta = &md.metadata;
        let metadata = json!({
            "name": meta.name.clone().unwrap_or_default(),
            "namespace": meta.namespace.clone().unwrap_or_default(),
            "labels": meta.labels.clone().unwrap_or_default(),
            "annotations": meta.annotations.clone().unwrap_or_default(),
        });
        let mut context = KUBERNETES_FUNCTIONS.new_inner_scope();
        context.add_variable_from_value("spec", json_to_cel(&spec_value));
        context.add_variable_from_value("metadata", json_to_cel(&metadata));
        Ok(RuleInput {
            context,
            spec_shape: Shape::of_json(&spec_value),
            metadata_shape: Shape::of_json(&metadata),
        })
    }

    /// Evaluates `program` if its cost bound for this input fits the per-rule budget and what is
    /// left of the decision's (`spent`); otherwise the rule is not run and counts as an error.
    pub fn evaluate_within_budget(
        &self,
        program: &cel::Program,
        spent: &mut Spent,
    ) -> Result<bool, String> {
        let bound = cost::bound(program.expression(), &self.spec_shape, &self.metadata_shape)
            .map_err(|e| e.0)?;
        if bound > cost::RULE_BUDGET {
            return Err(format!(
                "not evaluated: it may take up to {bound} evaluation steps on this deployment, over the budget of {} per rule",
                cost::RULE_BUDGET
            ));
        }
        if spent.0.saturating_add(bound) > cost::DECISION_BUDGET {
            return Err(format!(
                "not evaluated: the selection decision's budget of {} evaluation steps is used up",
                cost::DECISION_BUDGET
            ));
        }
        spent.0 = spent.0.saturating_add(bound);
        self.evaluate(program)
    }

    /// Evaluates `program`: `Ok(bool)` or the error.
    pub fn evaluate(&self, program: &cel::Program) -> Result<bool, String> {
        match program.execute(&self.context) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "rule returned {} instead of a bool",
                type_name(&other)
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Converts JSON to a CEL value the way Kubernetes does: integers are `int` (not `uint`, which
/// would make `spec.resources.gpu.count == 0` false), other numbers `double`.
pub fn json_to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => items.iter().map(json_to_cel).collect::<Vec<_>>().into(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), json_to_cel(v)))
            .collect::<HashMap<String, cel::Value>>()
            .into(),
    }
}

fn type_name(value: &cel::Value) -> &'static str {
    match value {
        cel::Value::Int(_) => "an int",
        cel::Value::UInt(_) => "a uint",
        cel::Value::Float(_) => "a double",
        cel::Value::String(_) => "a string",
        cel::Value::List(_) => "a list",
        cel::Value::Map(_) => "a map",
        cel::Value::Null => "null",
        _ => "a non-bool value",
    }
}

/// The `spec` variable as JSON (see the module docs).
pub fn rule_spec(md: &ModelDeployment, engine: Option<EngineType>) -> Result<Value, String> {
    let defaulted = md.spec.with_defaults();
    let mut spec = serde_json::to_value(&defaulted).map_err(|e| e.to_string())?;
    let object = spec.as_object_mut().ok_or("spec is not an object")?;
    for key in [
        "model",
        "provider",
        "engine",
        "serving",
        "scaling",
        "resources",
    ] {
        object.entry(key).or_insert_with(|| json!({}));
    }
    if let Some(engine) = engine {
        object["engine"]["type"] = json!(engine.as_str());
    }
    if let Some(gpu) = object["resources"]
        .get_mut("gpu")
        .and_then(Value::as_object_mut)
    {
        gpu.entry("count").or_insert(json!(0));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(spec: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "team-a", "labels": {"team": "a"}}, "spec": spec,
        }))
        .unwrap()
    }

    fn eval(rule: &str, spec: Value, engine: Option<EngineType>) -> Result<bool, String> {
        let input = RuleInput::new(&md(spec), engine)?;
        input.evaluate(&compile(rule)?)
    }

    #[test]
    fn the_documented_input() {
        let spec = rule_spec(
            &md(json!({"model": {"id": "a/b"}, "resources": {"gpu": {"type": "amd.com/gpu"}}})),
            Some(EngineType::Vllm),
        )
        .unwrap();
        assert_eq!(spec["model"]["source"], "huggingface");
        assert_eq!(spec["serving"]["mode"], "aggregated");
        assert_eq!(spec["scaling"]["replicas"], 1);
        assert_eq!(spec["engine"]["type"], "vllm");
        assert_eq!(spec["resources"]["gpu"]["count"], 0);
        assert_eq!(spec["provider"], json!({}));
        let bare = rule_spec(&md(json!({"model": {"id": "a/b"}})), None).unwrap();
        assert_eq!(
            bare["resources"],
            json!({}),
            "resources.gpu is never invented"
        );
        assert!(bare["engine"].get("type").is_none());
    }

    #[test]
    fn the_spec_rules_behave() {
        let kaito_cpu = "!has(spec.resources.gpu) || spec.resources.gpu.count == 0";
        assert_eq!(
            eval(kaito_cpu, json!({"model": {"id": "a/b"}}), None),
            Ok(true)
        );
        assert_eq!(
            eval(
                kaito_cpu,
                json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 0}}}),
                None
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                kaito_cpu,
                json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 2}}}),
                None
            ),
            Ok(false)
        );
        assert_eq!(
            eval(
                "spec.engine.type == 'llamacpp'",
                json!({"model": {"id": "a/b"}}),
                Some(EngineType::Llamacpp)
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                "spec.model.id.startsWith('a/')",
                json!({"model": {"id": "a/b"}}),
                None
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                "metadata.labels.team == 'a' && metadata.namespace == 'team-a'",
                json!({"model": {"id": "a/b"}}),
                None
            ),
            Ok(true)
        );
        // Kubernetes CEL extensions are available.
        assert_eq!(
            eval(
                "spec.model.id.split('/')[0] == 'a'",
                json!({"model": {"id": "a/b"}}),
                None
            ),
            Ok(true)
        );
    }

    #[test]
    fn errors_and_non_bool_results() {
        assert!(
            eval(
                "spec.engine.type == 'vllm'",
                json!({"model": {"id": "a/b"}}),
                None
            )
            .is_err(),
            "engine.type absent: error"
        );
        assert_eq!(
            eval("1 + 1", json!({"model": {"id": "a/b"}}), None),
            Err("rule returned an int instead of a bool".into())
        );
        assert!(compile("spec.engine.type ==").is_err());
    }

    #[test]
    fn compiled_rules_are_cached() {
        let set = RuleSet::default();
        let a = set.compile("true");
        let b = set.compile("true");
        assert!(Arc::ptr_eq(&a, &b));
    }
}
