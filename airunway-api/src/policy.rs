//! ModelDeploymentPolicy evaluation (docs/policy.md), pure: which policies select a namespace
//! ([`selects`]), how many GPUs a deployment asks for ([`gpu_demand`]), which rules it breaks
//! ([`check_rules`], [`quota_at_admission`]) and, at reconcile time, which deployments of a
//! namespace keep its quota in creation order ([`fit_in_order`]). The core's webhook and its
//! reconcile call the same functions on the deployment with its runtime configuration applied
//! (`crate::runtime_config::apply`); so can offline tools.

use std::collections::BTreeMap;

use kube::core::{Selector, SelectorExt};

use crate::constants::messages::policy as messages;
use crate::image_reference;
use crate::v1alpha1::{
    EngineType, ModelDeploymentPolicy, ModelDeploymentSpec, ServingMode, unused_override_paths,
};

/// The most `allowedOverridePaths` violations reported for one deployment and policy (the
/// rest are the same finding).
pub const MAX_OVERRIDE_FINDINGS: usize = 8;

/// Whether `policy` governs a namespace with `labels`. No `namespaceSelector` selects every
/// namespace; a selector the API server stored but that does not parse (an unknown operator)
/// selects none, and the core logs it.
pub fn selects(policy: &ModelDeploymentPolicy, labels: &BTreeMap<String, String>) -> bool {
    match &policy.spec.namespace_selector {
        None => true,
        Some(selector) => Selector::try_from(selector.clone())
            .map(|s| s.matches(labels))
            .unwrap_or(false),
    }
}

/// How many GPUs a deployment asks for, and how that was counted (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuDemand {
    /// The GPUs.
    pub total: i64,
    /// The fields multiplied, with their values, e.g.
    /// `spec.resources.gpu.count × spec.scaling.replicas (4 × 2)`.
    pub formula: String,
}

/// The GPUs `spec` asks for at most: aggregated, GPUs per worker (`gpu_count()`, which counts
/// the one GPU the webhook defaults) times workers; disaggregated,
/// `prefill.gpu × prefill.replicas plus decode.gpu × decode.replicas`, times `scaling.replicas`
/// (the unit the scale subresource scales). With `scaling.autoscaling` its `maxReplicas` counts instead of `scaling.replicas`:
/// the autoscaler may take the deployment there, and never over a quota. Pass the effective
/// spec (runtime configuration applied), so a config's autoscaling counts.
pub fn gpu_demand(spec: &ModelDeploymentSpec) -> GpuDemand {
    let scaling = spec.scaling.as_ref();
    let (units, units_field) = match scaling.and_then(|s| s.autoscaling.as_ref()) {
        Some(autoscaling) => (
            i64::from(autoscaling.max_replicas),
            "spec.scaling.autoscaling.maxReplicas",
        ),
        None => (i64::from(spec.replicas()), "spec.scaling.replicas"),
    };
    match spec.serving_mode() {
        ServingMode::Aggregated => {
            let per = i64::from(spec.gpu_count());
            GpuDemand {
                total: per.saturating_mul(units),
                formula: format!("spec.resources.gpu.count × {units_field} ({per} × {units})"),
            }
        }
        ServingMode::Disaggregated => {
            let role = |r: Option<&crate::v1alpha1::ComponentScaling>| {
                let gpus = r
                    .and_then(|r| r.gpu.as_ref())
                    .and_then(|g| g.count)
                    .unwrap_or(0);
                let replicas = r.and_then(|r| r.replicas).unwrap_or(1);
                (i64::from(gpus), i64::from(replicas))
            };
            let (pg, pr) = role(scaling.and_then(|s| s.prefill.as_ref()));
            let (dg, dr) = role(scaling.and_then(|s| s.decode.as_ref()));
            let per_unit = pg.saturating_mul(pr).saturating_add(dg.saturating_mul(dr));
            GpuDemand {
                total: per_unit.saturating_mul(units),
                formula: format!(
                    "(spec.scaling.prefill.gpu.count × spec.scaling.prefill.replicas + spec.scaling.decode.gpu.count × spec.scaling.decode.replicas) × {units_field} (({pg} × {pr} + {dg} × {dr}) × {units})"
                ),
            }
        }
    }
}

/// A rule of a ModelDeploymentPolicy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// `allowedProviders`.
    AllowedProviders,
    /// `allowedEngines`.
    AllowedEngines,
    /// `allowedImages`.
    AllowedImages,
    /// `allowedOverridePaths`.
    AllowedOverridePaths,
    /// `maxGpusPerDeployment`.
    MaxGpusPerDeployment,
    /// `gpuQuota`.
    GpuQuota,
}

impl Rule {
    /// The field name of the rule in the policy's spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::AllowedProviders => "allowedProviders",
            Rule::AllowedEngines => "allowedEngines",
            Rule::AllowedImages => "allowedImages",
            Rule::AllowedOverridePaths => "allowedOverridePaths",
            Rule::MaxGpusPerDeployment => "maxGpusPerDeployment",
            Rule::GpuQuota => "gpuQuota",
        }
    }
}

/// A rule a deployment breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The policy's name.
    pub policy: String,
    /// The rule.
    pub rule: Rule,
    /// The deployment's field at fault (`spec.provider.name`, ...).
    pub field: String,
    /// The message, naming the policy, the rule and the field (`messages::policy`).
    pub message: String,
}

/// What the rules look at: the effective spec (runtime configuration applied), and the engine
/// and provider with the field they come from (the spec's, or the core's choice at reconcile
/// time).
#[derive(Clone, Debug)]
pub struct Subject<'a> {
    /// The effective spec.
    pub spec: &'a ModelDeploymentSpec,
    /// The engine and where it comes from; `None` while unknown (chosen later by the core).
    pub engine: Option<(EngineType, &'a str)>,
    /// The provider and where it comes from; `None` while unknown.
    pub provider: Option<(&'a str, &'a str)>,
}

impl<'a> Subject<'a> {
    /// The spec's own engine and provider (what admission knows).
    pub fn of_spec(spec: &'a ModelDeploymentSpec) -> Subject<'a> {
        Subject {
            spec,
            engine: spec.explicit_engine().map(|e| (e, "spec.engine.type")),
            provider: spec.explicit_provider().map(|p| (p, "spec.provider.name")),
        }
    }
}

/// `[a, b]`.
fn listed<T: AsRef<str>>(items: &[T]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("[{}]", items.join(", "))
}

/// `domain/path` of a parsed reference (the form `allowedImages` entries are written in).
pub fn normalised_repository(image: &str) -> Option<String> {
    let parsed = image_reference::parse(image).ok()?;
    Some(if parsed.domain.is_empty() {
        parsed.path
    } else {
        format!("{}/{}", parsed.domain.to_lowercase(), parsed.path)
    })
}

/// Whether the normalised `repository` is under one of the `allowed` prefixes (whole
/// components; the registry compared without case).
pub fn image_allowed(repository: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|entry| {
        let entry = entry.trim_end_matches('/');
        let (host, rest) = entry.split_once('/').unwrap_or((entry, ""));
        let entry = if rest.is_empty() {
            host.to_lowercase()
        } else {
            format!("{}/{rest}", host.to_lowercase())
        };
        repository == entry
            || repository
                .strip_prefix(entry.as_str())
                .is_some_and(|tail| tail.starts_with('/'))
    })
}

/// Every rule of `policy` but `gpuQuota` that `subject` breaks (quota depends on the other
/// deployments: [`quota_at_admission`], [`fit_in_order`]).
pub fn check_rules(policy: &ModelDeploymentPolicy, subject: &Subject<'_>) -> Vec<Violation> {
    let name = policy.metadata.name.clone().unwrap_or_default();
    let spec = &policy.spec;
    let mut out = Vec::new();
    let mut violation = |rule: Rule, field: String, message: String| {
        out.push(Violation {
            policy: name.clone(),
            rule,
            field,
            message,
        })
    };
    if let (Some(allowed), Some((provider, field))) = (&spec.allowed_providers, subject.provider)
        && !allowed.iter().any(|a| a == provider)
    {
        violation(
            Rule::AllowedProviders,
            field.to_string(),
            messages::provider_not_allowed(&name, &listed(allowed), field, provider),
        );
    }
    if let (Some(allowed), Some((engine, field))) = (&spec.allowed_engines, subject.engine)
        && !allowed.contains(&engine)
    {
        let names: Vec<&str> = allowed.iter().map(|e| e.as_str()).collect();
        violation(
            Rule::AllowedEngines,
            field.to_string(),
            messages::engine_not_allowed(&name, &listed(&names), field, engine.as_str()),
        );
    }
    if let (Some(allowed), Some(image)) = (&spec.allowed_images, subject.spec.image_override()) {
        let field = if subject
            .spec
            .engine
            .as_ref()
            .and_then(|e| e.image.as_deref())
            .is_some_and(|i| !i.is_empty())
        {
            "spec.engine.image"
        } else {
            "spec.image"
        };
        let repository = normalised_repository(image);
        if !repository
            .as_deref()
            .is_some_and(|r| image_allowed(r, allowed))
        {
            let shown = repository.unwrap_or_else(|| "not a valid image reference".to_string());
            violation(
                Rule::AllowedImages,
                field.to_string(),
                messages::image_not_allowed(&name, &listed(allowed), field, image, &shown),
            );
        }
    }
    if let (Some(allowed), Some(overrides)) = (
        &spec.allowed_override_paths,
        subject
            .spec
            .provider
            .as_ref()
            .and_then(|p| p.overrides.as_ref()),
    ) {
        for path in unused_override_paths(overrides, allowed)
            .into_iter()
            .take(MAX_OVERRIDE_FINDINGS)
        {
            let field = format!("spec.{path}");
            let message = messages::override_not_allowed(&name, &listed(allowed), &field);
            violation(Rule::AllowedOverridePaths, field, message);
        }
    }
    if let Some(max) = spec.max_gpus_per_deployment {
        let demand = gpu_demand(subject.spec);
        if demand.total > i64::from(max) {
            violation(
                Rule::MaxGpusPerDeployment,
                demand_field(subject.spec),
                messages::too_many_gpus(&name, i64::from(max), &demand.formula, demand.total),
            );
        }
    }
    out
}

/// The field a GPU finding points at.
fn demand_field(spec: &ModelDeploymentSpec) -> String {
    match spec.serving_mode() {
        ServingMode::Aggregated => "spec.resources.gpu.count".to_string(),
        ServingMode::Disaggregated => "spec.scaling".to_string(),
    }
}

/// `gpuQuota` at admission: `reserved` GPUs are held by the namespace's other deployments (the
/// ledger), and `demand` is this deployment's.
pub fn quota_at_admission(
    policy: &ModelDeploymentPolicy,
    namespace: &str,
    reserved: i64,
    spec: &ModelDeploymentSpec,
) -> Option<Violation> {
    let quota = i64::from(policy.spec.gpu_quota?);
    let demand = gpu_demand(spec);
    if demand.total == 0 || reserved.saturating_add(demand.total) <= quota {
        return None;
    }
    let name = policy.metadata.name.clone().unwrap_or_default();
    Some(Violation {
        message: messages::quota_exceeded(
            &name,
            namespace,
            quota,
            reserved,
            &demand.formula,
            demand.total,
        ),
        policy: name,
        rule: Rule::GpuQuota,
        field: demand_field(spec),
    })
}

/// One deployment of a namespace, for [`fit_in_order`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Claim {
    /// `metadata.creationTimestamp` as RFC 3339 (sorts in time order; empty sorts first).
    pub created: String,
    /// `metadata.name`.
    pub name: String,
    /// Its [`gpu_demand`] total.
    pub gpus: i64,
}

/// The reconcile-time quota: walking the namespace's deployments in creation order (then
/// name), each keeps its GPUs when they fit in what the earlier fitting ones left; one that
/// does not fit is over quota, with the GPUs taken before it. A deployment asking for none
/// always fits.
pub fn fit_in_order(quota: i64, claims: &[Claim]) -> BTreeMap<String, Option<i64>> {
    let mut sorted: Vec<&Claim> = claims.iter().collect();
    sorted.sort();
    let mut taken: i64 = 0;
    let mut out = BTreeMap::new();
    for claim in sorted {
        if taken.saturating_add(claim.gpus) <= quota {
            taken = taken.saturating_add(claim.gpus);
            out.insert(claim.name.clone(), None);
        } else {
            out.insert(claim.name.clone(), Some(taken));
        }
    }
    out
}

/// The reconcile-time `gpuQuota` finding for a deployment [`fit_in_order`] left out, with the
/// GPUs `earlier` deployments took.
pub fn quota_by_order(
    policy: &ModelDeploymentPolicy,
    namespace: &str,
    earlier: i64,
    spec: &ModelDeploymentSpec,
) -> Option<Violation> {
    let quota = i64::from(policy.spec.gpu_quota?);
    let demand = gpu_demand(spec);
    let name = policy.metadata.name.clone().unwrap_or_default();
    Some(Violation {
        message: messages::quota_exceeded_by_order(
            &name,
            namespace,
            quota,
            earlier,
            &demand.formula,
            demand.total,
        ),
        policy: name,
        rule: Rule::GpuQuota,
        field: demand_field(spec),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1alpha1::ModelDeployment;
    use serde_json::{Value, json};

    fn spec(value: Value) -> ModelDeploymentSpec {
        serde_json::from_value(value).unwrap()
    }

    fn policy(name: &str, spec: Value) -> ModelDeploymentPolicy {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeploymentPolicy",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn aggregated_demand_is_gpus_per_worker_times_replicas() {
        let s = spec(
            json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 4}}, "scaling": {"replicas": 2}}),
        );
        assert_eq!(
            gpu_demand(&s),
            GpuDemand {
                total: 8,
                formula: "spec.resources.gpu.count × spec.scaling.replicas (4 × 2)".into()
            }
        );
        // No replicas: one worker.
        let s = spec(json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 3}}}));
        assert_eq!(gpu_demand(&s).total, 3);
        // CPU only.
        let s = spec(
            json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}, "scaling": {"replicas": 5}}),
        );
        assert_eq!(gpu_demand(&s).total, 0);
    }

    #[test]
    fn the_webhook_default_gpu_counts() {
        // An explicit GPU engine without resources gets one GPU per worker (gpu_count()).
        let s = spec(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "scaling": {"replicas": 3}}),
        );
        assert_eq!(gpu_demand(&s).total, 3);
        // With an image override it does not (the CEL no_gpu rule's reading).
        let s = spec(
            json!({"model": {"id": "a/b"}, "engine": {"type": "vllm", "image": "r.io/x:1"}, "scaling": {"replicas": 3}}),
        );
        assert_eq!(gpu_demand(&s).total, 0);
    }

    #[test]
    fn disaggregated_demand_counts_both_roles_and_the_unit() {
        let s = spec(
            json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"},
            "scaling": {"prefill": {"replicas": 1, "gpu": {"count": 2}}, "decode": {"replicas": 2, "gpu": {"count": 1}}}}),
        );
        let d = gpu_demand(&s);
        assert_eq!(d.total, 4);
        assert_eq!(
            d.formula,
            "(spec.scaling.prefill.gpu.count × spec.scaling.prefill.replicas + spec.scaling.decode.gpu.count × spec.scaling.decode.replicas) × spec.scaling.replicas ((2 × 1 + 1 × 2) × 1)"
        );
        let s = spec(
            json!({"model": {"id": "a/b"}, "serving": {"mode": "disaggregated"},
            "scaling": {"replicas": 2, "prefill": {"gpu": {"count": 2}}, "decode": {"replicas": 3, "gpu": {"count": 1}}}}),
        );
        assert_eq!(gpu_demand(&s).total, (2 + 3) * 2);
    }

    #[test]
    fn autoscaling_counts_its_maximum() {
        let s = spec(
            json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 2}},
            "scaling": {"replicas": 1, "autoscaling": {"maxReplicas": 6, "metrics": [{"type": "queueDepth", "target": "5"}]}}}),
        );
        let d = gpu_demand(&s);
        assert_eq!(d.total, 12);
        assert!(
            d.formula
                .contains("spec.scaling.autoscaling.maxReplicas (2 × 6)")
        );
    }

    #[test]
    fn a_runtime_config_autoscaling_default_counts() {
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "team"},
            "spec": {"model": {"id": "a/b"}, "resources": {"gpu": {"count": 1}}},
        }))
        .unwrap();
        let defaults: crate::v1alpha1::RuntimeDefaults = serde_json::from_value(json!({
            "autoscaling": {"maxReplicas": 4, "metrics": [{"type": "queueDepth", "target": "5"}]}
        }))
        .unwrap();
        assert_eq!(gpu_demand(&md.spec).total, 1);
        let effective = crate::runtime_config::apply(&md, Some(&defaults));
        assert_eq!(gpu_demand(&effective.deployment.spec).total, 4);
    }

    #[test]
    fn selectors_pick_namespaces_by_label() {
        let labels: BTreeMap<String, String> = [("team".to_string(), "a".to_string())]
            .into_iter()
            .collect();
        assert!(selects(&policy("all", json!({})), &labels));
        assert!(selects(
            &policy(
                "a",
                json!({"namespaceSelector": {"matchLabels": {"team": "a"}}})
            ),
            &labels
        ));
        assert!(!selects(
            &policy(
                "b",
                json!({"namespaceSelector": {"matchLabels": {"team": "b"}}})
            ),
            &labels
        ));
        assert!(selects(
            &policy(
                "e",
                json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "c"]}]}})
            ),
            &labels
        ));
        assert!(!selects(
            &policy(
                "bad",
                json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Near", "values": ["a"]}]}})
            ),
            &labels
        ));
    }

    #[test]
    fn each_rule_gives_its_message() {
        let p = policy(
            "team-limits",
            json!({"allowedProviders": ["vllm"], "allowedEngines": ["vllm"], "allowedImages": ["registry.example.com/team"],
                   "maxGpusPerDeployment": 4, "allowedOverridePaths": ["deployment.*"]}),
        );
        let s = spec(
            json!({"model": {"id": "a/b"}, "provider": {"name": "kaito", "overrides": {"deployment": {"x": 1}, "hostNetwork": true}},
            "engine": {"type": "sglang", "image": "docker.io/lmsys/sglang:v1"}, "resources": {"gpu": {"count": 4}}, "scaling": {"replicas": 2}}),
        );
        let found = check_rules(&p, &Subject::of_spec(&s));
        let messages: Vec<&str> = found.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                r#"ModelDeploymentPolicy "team-limits": allowedProviders is [vllm]; spec.provider.name is "kaito""#,
                r#"ModelDeploymentPolicy "team-limits": allowedEngines is [vllm]; spec.engine.type is "sglang""#,
                r#"ModelDeploymentPolicy "team-limits": allowedImages is [registry.example.com/team]; spec.engine.image is "docker.io/lmsys/sglang:v1" (docker.io/lmsys/sglang)"#,
                r#"ModelDeploymentPolicy "team-limits": allowedOverridePaths is [deployment.*]; spec.provider.overrides.hostNetwork is not among them"#,
                r#"ModelDeploymentPolicy "team-limits": maxGpusPerDeployment is 4; spec.resources.gpu.count × spec.scaling.replicas (4 × 2) asks for 8"#,
            ]
        );
        let fields: Vec<&str> = found.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.provider.name",
                "spec.engine.type",
                "spec.engine.image",
                "spec.provider.overrides.hostNetwork",
                "spec.resources.gpu.count"
            ]
        );
    }

    #[test]
    fn a_compliant_deployment_and_unknown_choices_pass() {
        let p = policy(
            "p",
            json!({"allowedProviders": ["vllm"], "allowedEngines": ["vllm"], "allowedImages": ["docker.io/vllm"],
                   "maxGpusPerDeployment": 8, "allowedOverridePaths": []}),
        );
        let s = spec(
            json!({"model": {"id": "a/b"}, "engine": {"image": "vllm/vllm-openai:v0.9"}, "resources": {"gpu": {"count": 4}}, "scaling": {"replicas": 2}}),
        );
        // Engine and provider left to the core: admission cannot judge them yet.
        assert_eq!(check_rules(&p, &Subject::of_spec(&s)), []);
        // At reconcile time the core's choices are judged.
        let chosen = Subject {
            spec: &s,
            engine: Some((EngineType::Sglang, "status.engine.type")),
            provider: Some(("kaito", "status.provider.name")),
        };
        let rules: Vec<Rule> = check_rules(&p, &chosen).iter().map(|v| v.rule).collect();
        assert_eq!(rules, [Rule::AllowedProviders, Rule::AllowedEngines]);
    }

    #[test]
    fn image_prefixes_match_whole_components() {
        let allowed = vec![
            "ghcr.io/org".to_string(),
            "Registry.Example.com:5000".to_string(),
        ];
        let repo = |i: &str| normalised_repository(i).unwrap();
        assert!(image_allowed(&repo("ghcr.io/org/x:1"), &allowed));
        assert!(image_allowed(
            &repo(
                "ghcr.io/org/team/x@sha256:0000000000000000000000000000000000000000000000000000000000000000"
            ),
            &allowed
        ));
        assert!(!image_allowed(&repo("ghcr.io/organisation/x"), &allowed));
        assert!(!image_allowed(&repo("ghcr.io/other/org/x"), &allowed));
        assert!(image_allowed(
            &repo("registry.example.com:5000/any/thing:2"),
            &allowed
        ));
        assert!(!image_allowed(&repo("registry.example.com/any"), &allowed));
        // Docker Hub short names are normalised before matching.
        assert_eq!(repo("busybox"), "docker.io/library/busybox");
        assert!(image_allowed(
            &repo("busybox:1"),
            &["docker.io/library".to_string()]
        ));
    }

    #[test]
    fn an_empty_override_allowance_refuses_every_override() {
        let p = policy("p", json!({"allowedOverridePaths": []}));
        let s = spec(
            json!({"model": {"id": "a/b"}, "provider": {"overrides": {"a": 1, "b": {"c": 2}}}}),
        );
        let fields: Vec<String> = check_rules(&p, &Subject::of_spec(&s))
            .into_iter()
            .map(|v| v.field)
            .collect();
        assert_eq!(
            fields,
            ["spec.provider.overrides.a", "spec.provider.overrides.b"]
        );
    }

    #[test]
    fn quota_at_admission_counts_the_others() {
        let p = policy("q", json!({"gpuQuota": 4}));
        let s = spec(json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 2}}}));
        assert_eq!(quota_at_admission(&p, "team", 2, &s), None);
        let v = quota_at_admission(&p, "team", 3, &s).unwrap();
        assert_eq!(
            v.message,
            r#"ModelDeploymentPolicy "q": gpuQuota of namespace "team" is 4; 3 are reserved by other deployments and spec.resources.gpu.count × spec.scaling.replicas (2 × 1) asks for 2"#
        );
        // A CPU deployment never breaks a quota, even a full one.
        let cpu = spec(json!({"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}}));
        assert_eq!(quota_at_admission(&p, "team", 9, &cpu), None);
        // No quota rule.
        assert_eq!(
            quota_at_admission(&policy("n", json!({})), "team", 100, &s),
            None
        );
    }

    #[test]
    fn quota_in_creation_order() {
        let claim = |created: &str, name: &str, gpus: i64| Claim {
            created: created.into(),
            name: name.into(),
            gpus,
        };
        let claims = [
            claim("2026-01-01T00:00:03Z", "d", 1),
            claim("2026-01-01T00:00:01Z", "b", 2),
            claim("2026-01-01T00:00:01Z", "a", 1),
            claim("2026-01-01T00:00:02Z", "c", 2),
            claim("2026-01-01T00:00:04Z", "e", 0),
        ];
        let fit = fit_in_order(4, &claims);
        // a (1) and b (2) fit, c (2) does not (3 taken), d (1) fits in what is left, e has none.
        assert_eq!(fit["a"], None);
        assert_eq!(fit["b"], None);
        assert_eq!(fit["c"], Some(3));
        assert_eq!(fit["d"], None);
        assert_eq!(fit["e"], None);
        let p = policy("q", json!({"gpuQuota": 4}));
        let s = spec(json!({"model": {"id": "a/b"}, "resources": {"gpu": {"count": 2}}}));
        assert_eq!(
            quota_by_order(&p, "team", 3, &s).unwrap().message,
            r#"ModelDeploymentPolicy "q": gpuQuota of namespace "team" is 4; 3 are taken by deployments created earlier and spec.resources.gpu.count × spec.scaling.replicas (2 × 1) asks for 2"#
        );
    }
}
