//! Cost bounds of CEL selection rules (pure).
//!
//! The `cel` crate evaluates without a step limit, so a rule is bounded before it runs: its
//! syntax tree is walked with the largest sizes its inputs can have, giving an upper bound of the
//! work an evaluation can do (in evaluation steps, roughly one per visited node, per character
//! compared and per list element copied). Two size models are used:
//!
//! - **at admission**, the worst case within the CRD's limits ([`Shape::worst_case_input`]): lists
//!   and maps at their `maxItems`/`maxProperties` (else [`DEFAULT_ITEMS`]), strings at their
//!   `maxLength` (else [`DEFAULT_LENGTH`]). A rule over [`RULE_BUDGET`] is refused, naming it.
//! - **at run time**, the actual deployment ([`Shape::of_json`]): a rule whose bound for this
//!   deployment exceeds [`RULE_BUDGET`], or that would take the decision over
//!   [`DECISION_BUDGET`], is not evaluated; it counts as an error (false) and raises
//!   `SelectionRuleError`.
//!
//! Comprehensions multiply (`spec.env.all(a, spec.env.all(b, ...))` is 64 × 64 × ...), string
//! functions cost their input length, `replace` and `+` grow their results, and an accumulator
//! that grows each step (`map`, `filter`) is counted as copied each step. Struct literals are
//! refused (the interpreter does not support them).

use std::collections::BTreeMap;

use kube::core::cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

/// Most evaluation steps one rule may take for one deployment.
pub const RULE_BUDGET: u64 = 1_000_000;
/// Most evaluation steps all the rules of one selection decision may take together.
pub const DECISION_BUDGET: u64 = 10_000_000;
/// Items of a list or map whose schema gives no limit (worst case at admission).
pub const DEFAULT_ITEMS: u64 = 64;
/// Characters of a string whose schema gives no limit (worst case at admission).
pub const DEFAULT_LENGTH: u64 = 1024;
/// Deepest expression or input walked; deeper is refused (rules are at most 1024 characters).
const MAX_DEPTH: usize = 128;

/// The largest value an expression can produce, as far as cost is concerned.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A number, bool, null or timestamp: constant size.
    Scalar,
    /// A string of at most this many bytes.
    Str(u64),
    /// A list of at most this many items of the given shape.
    List(u64, Box<Shape>),
    /// A map of at most this many entries; keys and values of the given shapes.
    Map(u64, Box<Shape>, Box<Shape>),
    /// An object with known fields.
    Object(BTreeMap<String, Shape>),
    /// Anything: a list of up to `items` items or a string of up to `length` bytes, recursively.
    Any {
        /// Bound on items when used as a list or map.
        items: u64,
        /// Bound on bytes when used as a string.
        length: u64,
    },
}

impl Shape {
    fn any() -> Shape {
        Shape::Any {
            items: DEFAULT_ITEMS,
            length: DEFAULT_LENGTH,
        }
    }

    /// The shape of an actual JSON value (bounded walk; deeper than the limit is [`Shape::any`]
    /// with the value's own size).
    pub fn of_json(value: &Value) -> Shape {
        fn walk(value: &Value, depth: usize) -> Shape {
            if depth > MAX_DEPTH {
                let size = value.to_string().len() as u64;
                return Shape::Any {
                    items: size,
                    length: size,
                };
            }
            match value {
                Value::String(s) => Shape::Str(s.len() as u64),
                Value::Array(items) => Shape::List(
                    items.len() as u64,
                    Box::new(
                        items
                            .iter()
                            .map(|i| walk(i, depth + 1))
                            .reduce(join)
                            .unwrap_or(Shape::Scalar),
                    ),
                ),
                Value::Object(map) => Shape::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), walk(v, depth + 1)))
                        .collect(),
                ),
                _ => Shape::Scalar,
            }
        }
        walk(value, 0)
    }

    /// The largest `spec` the CRD admits, from its OpenAPI schema, and the largest `metadata`.
    pub fn worst_case_input(spec_schema: &Value) -> (Shape, Shape) {
        fn walk(schema: &Value, depth: usize) -> Shape {
            if depth > MAX_DEPTH {
                return Shape::any();
            }
            let limit = |key: &str, default: u64| {
                schema.get(key).and_then(Value::as_u64).unwrap_or(default)
            };
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                return Shape::Object(
                    properties
                        .iter()
                        .map(|(k, v)| (k.clone(), walk(v, depth + 1)))
                        .collect(),
                );
            }
            match schema.get("type").and_then(Value::as_str) {
                Some("string") => Shape::Str(limit("maxLength", DEFAULT_LENGTH)),
                Some("array") => Shape::List(
                    limit("maxItems", DEFAULT_ITEMS),
                    Box::new(
                        schema
                            .get("items")
                            .map_or_else(Shape::any, |i| walk(i, depth + 1)),
                    ),
                ),
                Some("object") => match schema.get("additionalProperties") {
                    Some(values) if values.is_object() => Shape::Map(
                        limit("maxProperties", DEFAULT_ITEMS),
                        Box::new(Shape::Str(317)),
                        Box::new(walk(values, depth + 1)),
                    ),
                    _ => Shape::any(),
                },
                Some("integer" | "number" | "boolean") => Shape::Scalar,
                _ => Shape::any(),
            }
        }
        let label_map = |value_length| {
            Shape::Map(
                DEFAULT_ITEMS,
                Box::new(Shape::Str(317)),
                Box::new(Shape::Str(value_length)),
            )
        };
        let metadata = Shape::Object(BTreeMap::from([
            ("name".to_string(), Shape::Str(253)),
            ("namespace".to_string(), Shape::Str(63)),
            ("labels".to_string(), label_map(63)),
            ("annotations".to_string(), label_map(DEFAULT_LENGTH)),
        ]));
        (walk(spec_schema, 0), metadata)
    }

    /// Bytes when used as a string.
    fn length(&self) -> u64 {
        match self {
            Shape::Str(n) => *n,
            Shape::Any { length, .. } => *length,
            Shape::Scalar => 32,
            Shape::List(n, _) | Shape::Map(n, ..) => *n,
            Shape::Object(fields) => fields.len() as u64,
        }
    }

    /// Items when iterated or compared as a collection.
    fn items(&self) -> u64 {
        match self {
            Shape::List(n, _) | Shape::Map(n, ..) => *n,
            Shape::Object(fields) => fields.len() as u64,
            Shape::Any { items, .. } => *items,
            Shape::Str(_) | Shape::Scalar => 0,
        }
    }

    /// What iterating yields (list items, map keys).
    fn element(&self) -> Shape {
        match self {
            Shape::List(_, item) => (**item).clone(),
            Shape::Map(_, key, _) => (**key).clone(),
            Shape::Object(fields) => {
                Shape::Str(fields.keys().map(|k| k.len() as u64).max().unwrap_or(0))
            }
            Shape::Any { .. } => self.clone(),
            _ => Shape::Scalar,
        }
    }

    /// What indexing yields (list items, map values).
    fn value(&self) -> Shape {
        match self {
            Shape::List(_, item) | Shape::Map(_, _, item) => (**item).clone(),
            Shape::Object(fields) => fields
                .values()
                .cloned()
                .reduce(join)
                .unwrap_or(Shape::Scalar),
            Shape::Any { .. } => self.clone(),
            _ => Shape::Scalar,
        }
    }

    /// A rough total size, for comparisons and copies.
    fn size(&self) -> u64 {
        match self {
            Shape::Scalar => 1,
            Shape::Str(n) => *n,
            Shape::List(n, item) => n.saturating_mul(item.size().max(1)),
            Shape::Map(n, key, value) => {
                n.saturating_mul(key.size().saturating_add(value.size()).max(1))
            }
            Shape::Object(fields) => fields
                .values()
                .map(Shape::size)
                .fold(1, u64::saturating_add),
            Shape::Any { items, length } => items.saturating_mul(*length).max(*length),
        }
    }
}

/// The union of two shapes: large enough for either.
fn join(a: Shape, b: Shape) -> Shape {
    match (a, b) {
        (Shape::Scalar, Shape::Scalar) => Shape::Scalar,
        (Shape::Str(x), Shape::Str(y)) => Shape::Str(x.max(y)),
        (Shape::List(n, a), Shape::List(m, b)) => Shape::List(n.max(m), Box::new(join(*a, *b))),
        (Shape::Map(n, ka, va), Shape::Map(m, kb, vb)) => {
            Shape::Map(n.max(m), Box::new(join(*ka, *kb)), Box::new(join(*va, *vb)))
        }
        (Shape::Object(mut a), Shape::Object(b)) => {
            for (k, v) in b {
                let merged = match a.remove(&k) {
                    Some(existing) => join(existing, v),
                    None => v,
                };
                a.insert(k, merged);
            }
            Shape::Object(a)
        }
        (a, b) => Shape::Any {
            items: a.items().max(b.items()).max(1),
            length: a.length().max(b.length()).max(a.size()).max(b.size()),
        },
    }
}

/// Why a rule cannot be bounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unbounded(pub String);

/// Variables in scope while walking.
struct Scope<'a> {
    variables: Vec<(&'a str, Shape)>,
}

impl<'a> Scope<'a> {
    fn get(&self, name: &str) -> Shape {
        self.variables
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map_or_else(Shape::any, |(_, s)| s.clone())
    }
}

/// An upper bound of the steps to evaluate `expr` with `spec` and `metadata` of the given shapes.
pub fn bound(expr: &IdedExpr, spec: &Shape, metadata: &Shape) -> Result<u64, Unbounded> {
    let mut scope = Scope {
        variables: vec![("spec", spec.clone()), ("metadata", metadata.clone())],
    };
    walk(expr, &mut scope, 0).map(|(cost, _)| cost)
}

fn walk<'a>(
    expr: &'a IdedExpr,
    scope: &mut Scope<'a>,
    depth: usize,
) -> Result<(u64, Shape), Unbounded> {
    if depth > MAX_DEPTH {
        return Err(Unbounded(format!(
            "the expression nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let next = depth + 1;
    Ok(match &expr.expr {
        Expr::Literal(LiteralValue::String(s)) => (1, Shape::Str(s.len() as u64)),
        Expr::Literal(LiteralValue::Bytes(b)) => (1, Shape::Str(b.len() as u64)),
        Expr::Literal(_) => (1, Shape::Scalar),
        Expr::Ident(name) => (1, scope.get(name)),
        Expr::Select(select) => {
            let (cost, operand) = walk(&select.operand, scope, next)?;
            let shape = if select.test {
                Shape::Scalar
            } else {
                match operand {
                    Shape::Object(mut fields) => {
                        fields.remove(&select.field).unwrap_or(Shape::Scalar)
                    }
                    other => other.value(),
                }
            };
            (cost.saturating_add(1), shape)
        }
        Expr::List(list) => {
            let mut cost = 1u64;
            let mut item = None;
            for element in &list.elements {
                let (c, s) = walk(element, scope, next)?;
                cost = cost.saturating_add(c);
                item = Some(match item {
                    Some(i) => join(i, s),
                    None => s,
                });
            }
            (
                cost,
                Shape::List(
                    list.elements.len() as u64,
                    Box::new(item.unwrap_or(Shape::Scalar)),
                ),
            )
        }
        Expr::Map(map) => {
            let mut cost = 1u64;
            let (mut key, mut value) = (None, None);
            for entry in &map.entries {
                let EntryExpr::MapEntry(e) = &entry.expr else {
                    return Err(Unbounded(
                        "struct literals are not supported in selection rules".into(),
                    ));
                };
                let (ck, sk) = walk(&e.key, scope, next)?;
                let (cv, sv) = walk(&e.value, scope, next)?;
                cost = cost.saturating_add(ck).saturating_add(cv);
                key = Some(key.map_or(sk.clone(), |k| join(k, sk)));
                value = Some(value.map_or(sv.clone(), |v| join(v, sv)));
            }
            (
                cost,
                Shape::Map(
                    map.entries.len() as u64,
                    Box::new(key.unwrap_or(Shape::Scalar)),
                    Box::new(value.unwrap_or(Shape::Scalar)),
                ),
            )
        }
        Expr::Struct(_) => {
            return Err(Unbounded(
                "struct literals are not supported in selection rules".into(),
            ));
        }
        Expr::Unspecified => return Err(Unbounded("the expression is incomplete".into())),
        Expr::Call(call) => {
            let mut cost = 1u64;
            let mut shapes = Vec::with_capacity(call.args.len() + 1);
            if let Some(target) = &call.target {
                let (c, s) = walk(target, scope, next)?;
                cost = cost.saturating_add(c);
                shapes.push(s);
            }
            for arg in &call.args {
                let (c, s) = walk(arg, scope, next)?;
                cost = cost.saturating_add(c);
                shapes.push(s);
            }
            let (work, shape) = call_cost(&call.func_name, &shapes);
            (cost.saturating_add(work), shape)
        }
        Expr::Comprehension(c) => {
            let (range_cost, range) = walk(&c.iter_range, scope, next)?;
            let (init_cost, init) = walk(&c.accu_init, scope, next)?;
            let rounds = range.items();
            let element = range.element();
            let value = range.value();
            // The accumulator can grow by one item per round (map, filter).
            let accumulator = match &init {
                Shape::List(n, _) => Shape::List(n.saturating_add(rounds), Box::new(Shape::any())),
                Shape::Map(n, k, v) => Shape::Map(n.saturating_add(rounds), k.clone(), v.clone()),
                other => other.clone(),
            };
            let base = scope.variables.len();
            scope.variables.push((c.accu_var.as_str(), accumulator));
            scope.variables.push((c.iter_var.as_str(), element));
            if let Some(second) = &c.iter_var2 {
                scope.variables.push((second.as_str(), value));
            }
            let condition = walk(&c.loop_cond, scope, next);
            let step = walk(&c.loop_step, scope, next);
            scope.variables.truncate(base + 1);
            let result = walk(&c.result, scope, next);
            scope.variables.truncate(base);
            let ((cond_cost, _), (step_cost, step_shape), (result_cost, result_shape)) =
                (condition?, step?, result?);
            let per_round = cond_cost.saturating_add(step_cost).saturating_add(2);
            let shape = match (&init, step_shape) {
                (Shape::List(..), Shape::List(_, item)) => {
                    Shape::List(init.items().saturating_add(rounds), item)
                }
                _ => result_shape,
            };
            (
                range_cost
                    .saturating_add(init_cost)
                    .saturating_add(rounds.saturating_mul(per_round))
                    .saturating_add(result_cost),
                shape,
            )
        }
    })
}

/// The work of calling `function` on arguments of these shapes (target first), and its result.
fn call_cost(function: &str, args: &[Shape]) -> (u64, Shape) {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Shape::Scalar);
    let length = |i: usize| arg(i).length();
    match function {
        "_&&_"
        | "_||_"
        | "!_"
        | "-_"
        | "_-_"
        | "_*_"
        | "_/_"
        | "_%_"
        | "@not_strictly_false"
        | "size"
        | "has"
        | "int"
        | "uint"
        | "double"
        | "bool"
        | "type"
        | "dyn"
        | "isQuantity"
        | "quantity"
        | "isGreaterThan"
        | "isLessThan"
        | "compareTo"
        | "sign"
        | "asInteger"
        | "asApproximateFloat"
        | "isInteger"
        | "add"
        | "sub"
        | "timestamp"
        | "duration" => (
            1 + args
                .iter()
                .map(|a| match a {
                    Shape::Str(n) => *n,
                    _ => 0,
                })
                .sum::<u64>(),
            Shape::Scalar,
        ),
        "_?_:_" => (1, join(arg(1), arg(2))),
        "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
            (1 + arg(0).size().min(arg(1).size()), Shape::Scalar)
        }
        "_+_" => match (arg(0), arg(1)) {
            (Shape::List(n, a), Shape::List(m, b)) => {
                let total = n.saturating_add(m);
                (
                    total.saturating_add(1),
                    Shape::List(total, Box::new(join(*a, *b))),
                )
            }
            (Shape::Scalar, Shape::Scalar) => (1, Shape::Scalar),
            (a, b) => {
                let total = a.length().saturating_add(b.length());
                let items = a.items().saturating_add(b.items());
                (
                    total.saturating_add(items).saturating_add(1),
                    Shape::Any {
                        items,
                        length: total,
                    },
                )
            }
        },
        "_[_]" | "_[?_]" | "_?._" => (1, arg(0).value()),
        "@in" => (
            1 + arg(1).items().saturating_mul(arg(0).size().max(1)),
            Shape::Scalar,
        ),
        "contains" | "startsWith" | "endsWith" | "indexOf" | "lastIndexOf" | "charAt" => {
            (1 + length(0).saturating_add(length(1)), Shape::Scalar)
        }
        "lowerAscii" | "upperAscii" | "trim" | "substring" | "string" | "reverse" => {
            (1 + length(0), Shape::Str(length(0).max(32)))
        }
        "matches" | "find" => (
            1 + (length(0) + 1).saturating_mul(length(1) + 1),
            Shape::Str(length(0)),
        ),
        "findAll" => (
            1 + (length(0) + 1).saturating_mul(length(1) + 1),
            Shape::List(length(0), Box::new(Shape::Str(length(0)))),
        ),
        "replace" => {
            let grown = length(0).saturating_mul(1 + length(2));
            (
                1 + grown.saturating_add(length(0).saturating_mul(length(1) + 1)),
                Shape::Str(grown),
            )
        }
        "split" => (
            1 + length(0),
            Shape::List(length(0) + 1, Box::new(Shape::Str(length(0)))),
        ),
        "join" => {
            let item = arg(0).element().length();
            let total = arg(0)
                .items()
                .saturating_mul(item.saturating_add(length(1)));
            (1 + total, Shape::Str(total))
        }
        "sort" | "isSorted" | "min" | "max" | "sum" | "flatten" | "distinct" | "slice" => {
            let n = arg(0).items().max(1);
            let log = 64 - u64::from(n.leading_zeros());
            (
                1 + n
                    .saturating_mul(log)
                    .saturating_mul(arg(0).element().size().max(1)),
                arg(0),
            )
        }
        // Anything else: linear in everything it is given, result as large as its input.
        _ => (
            1 + args.iter().map(Shape::size).fold(0, u64::saturating_add),
            args.iter().cloned().reduce(join).unwrap_or(Shape::Scalar),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::rules::compile;
    use serde_json::json;

    fn worst() -> (Shape, Shape) {
        let crd = serde_json::to_value(
            <airunway_api::v1alpha1::ModelDeployment as kube::CustomResourceExt>::crd(),
        )
        .unwrap();
        Shape::worst_case_input(
            &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"],
        )
    }

    fn cost(rule: &str) -> Result<u64, Unbounded> {
        let (spec, metadata) = worst();
        bound(compile(rule).unwrap().expression(), &spec, &metadata)
    }

    #[test]
    fn the_shipped_rules_are_cheap() {
        for rule in [
            "!has(spec.resources.gpu) || spec.resources.gpu.count == 0",
            "spec.engine.type == 'llamacpp'",
            "spec.engine.type == 'trtllm' || spec.engine.type == 'sglang'",
            "spec.serving.mode == 'disaggregated'",
            "has(spec.resources.gpu) && spec.resources.gpu.count > 0",
            "spec.model.id.startsWith('example/')",
            "metadata.labels.exists(k, k == 'team')",
        ] {
            let c = cost(rule).unwrap();
            assert!(c < 10_000, "{rule}: {c}");
        }
    }

    #[test]
    fn nested_comprehensions_and_growing_strings_are_over_budget() {
        let nested =
            "spec.env.all(a, spec.env.all(b, spec.env.all(c, spec.env.all(d, a.name != d.name))))";
        assert!(cost(nested).unwrap() > RULE_BUDGET);
        let growing = format!(
            "spec.model.id{} != ''",
            ".replace('a', 'aaaaaaaaaa')".repeat(8)
        );
        assert!(cost(&growing).unwrap() > RULE_BUDGET);
        let mapped = "spec.env.map(a, spec.env.map(b, spec.env.map(c, a.name + b.name + c.name))).size() > 0";
        assert!(cost(mapped).unwrap() > RULE_BUDGET);
    }

    #[test]
    fn actual_sizes_bound_run_time_work() {
        let rule =
            compile("metadata.annotations.exists(k, metadata.annotations[k].matches('^(a|b)*c$'))")
                .unwrap();
        let small = Shape::of_json(&json!({"annotations": {"a": "b"}}));
        let big_value = "x".repeat(100_000);
        let big = Shape::of_json(
            &json!({"annotations": (0..100).map(|i| (format!("k{i}"), json!(big_value.clone()))).collect::<serde_json::Map<_, _>>()}),
        );
        let spec = Shape::of_json(&json!({}));
        assert!(bound(rule.expression(), &spec, &small).unwrap() < 1_000);
        assert!(bound(rule.expression(), &spec, &big).unwrap() > RULE_BUDGET);
    }

    #[test]
    fn struct_literals_are_refused() {
        assert_eq!(
            cost("spec.x == a.b{c: 1}"),
            Err(Unbounded(
                "struct literals are not supported in selection rules".into()
            ))
        );
    }
}
