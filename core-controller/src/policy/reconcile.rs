//! Reconcile-time enforcement: the core judges every deployment of a selected namespace from
//! its caches, so one admitted before a policy changed, or while the webhook was down
//! (failurePolicy Ignore), is reported: `PolicyCompliant=False`, reason `PolicyViolation`,
//! with the policy, the rule and the field in the message, and a Warning event. A deployment
//! no provider serves yet is held (no provider is selected, so nothing is created; `Pending`);
//! one a provider already serves keeps running, reported only (docs/policy.md).

use std::sync::Arc;

use airunway_api::conditions::{DesiredCondition, Progress};
use airunway_api::constants::{condition_types, messages::policy as messages, reasons};
use airunway_api::policy::{self, Claim, Subject, Violation};
use airunway_api::v1alpha1::{ModelDeployment, Phase};
use kube::ResourceExt;
use kube::runtime::reflector::Store;

use super::Policies;
use crate::selection::{EngineDecision, ProviderDecision};
use crate::status::{CoreDecision, DesiredCoreStatus};

/// What the leader's reconcile needs: the policy caches and the deployment cache (for the
/// namespace's quota).
pub struct Enforcement {
    /// The policy caches.
    pub policies: Arc<Policies>,
    /// The deployments (the controller's cache).
    pub deployments: Store<ModelDeployment>,
}

/// The policies' verdict on one deployment.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// How many policies select its namespace.
    pub selecting: usize,
    /// The rules it breaks.
    pub violations: Vec<Violation>,
}

impl Enforcement {
    /// The verdict on `md` given the core's `decision` (its engine and provider choices are
    /// judged when the spec leaves them open); `None` when no policy selects its namespace.
    pub fn verdict(&self, md: &ModelDeployment, decision: &CoreDecision) -> Option<Verdict> {
        let namespace = md.namespace().unwrap_or_default();
        let selecting = self.policies.selecting(&namespace);
        if selecting.is_empty() {
            return None;
        }
        let effective = self.policies.effective(md);
        let spec = &effective.spec;
        let engine = match spec.explicit_engine() {
            Some(engine) => Some((engine, "spec.engine.type")),
            None => decision
                .engine
                .as_ref()
                .and_then(EngineDecision::engine)
                .map(|e| (e, "status.engine.type")),
        };
        let chosen = decision
            .provider
            .as_ref()
            .and_then(ProviderDecision::provider)
            .map(str::to_string)
            .or_else(|| md.selected_provider().map(str::to_string));
        let provider = match spec.explicit_provider() {
            Some(provider) => Some((provider, "spec.provider.name")),
            None => chosen.as_deref().map(|p| (p, "status.provider.name")),
        };
        let subject = Subject {
            spec,
            engine,
            provider,
        };
        let mut violations: Vec<Violation> = selecting
            .iter()
            .flat_map(|p| policy::check_rules(p, &subject))
            .collect();
        let quotas: Vec<_> = selecting
            .iter()
            .filter(|p| p.spec.gpu_quota.is_some())
            .collect();
        if !quotas.is_empty() {
            let claims = self.claims(&namespace);
            let name = md.name_any();
            for quota in quotas {
                let fit =
                    policy::fit_in_order(i64::from(quota.spec.gpu_quota.unwrap_or(0)), &claims);
                if let Some(Some(earlier)) = fit.get(&name)
                    && let Some(violation) =
                        policy::quota_by_order(quota, &namespace, *earlier, spec)
                {
                    violations.push(violation);
                }
            }
        }
        Some(Verdict {
            selecting: selecting.len(),
            violations,
        })
    }

    /// The namespace's deployments with their GPU demand, for the quota in creation order.
    pub fn claims(&self, namespace: &str) -> Vec<Claim> {
        self.deployments
            .state()
            .iter()
            .filter(|md| md.namespace().as_deref() == Some(namespace))
            .map(|md| Claim {
                created: md
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
                name: md.name_any(),
                gpus: policy::gpu_demand(&self.policies.effective(md).spec).total,
            })
            .collect()
    }
}

/// Puts the verdict into the core's desired status: the `PolicyCompliant` condition (absent
/// when no policy selects the namespace: the core's next apply drops it), and, for a violating
/// deployment no provider serves yet, the hold: no provider is selected, `ProviderSelected`
/// says why, and the phase is `Pending` with `Stalled=True` (a `Failed` validation keeps its
/// phase).
pub fn adjust(md: &ModelDeployment, verdict: Option<&Verdict>, desired: &mut DesiredCoreStatus) {
    let Some(verdict) = verdict else {
        return;
    };
    if verdict.violations.is_empty() {
        desired.conditions.push(DesiredCondition::new(
            condition_types::POLICY_COMPLIANT,
            true,
            reasons::policy::COMPLIANT,
            messages::compliant(verdict.selecting),
        ));
        return;
    }
    let message = verdict
        .violations
        .iter()
        .map(|v| v.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    desired.conditions.push(DesiredCondition::new(
        condition_types::POLICY_COMPLIANT,
        false,
        reasons::policy::VIOLATION,
        message.clone(),
    ));
    if md.selected_provider().is_some() {
        // Served already: it keeps running; the condition and the event report it.
        return;
    }
    desired.provider = None;
    desired
        .conditions
        .retain(|c| c.type_ != condition_types::PROVIDER_HEALTHY);
    for condition in &mut desired.conditions {
        if condition.type_ == condition_types::PROVIDER_SELECTED {
            *condition = DesiredCondition::new(
                condition_types::PROVIDER_SELECTED,
                false,
                reasons::policy::VIOLATION,
                message.clone(),
            );
        }
    }
    if let Some((phase, text)) = desired.phase.as_mut()
        && *phase != Phase::Failed
    {
        *phase = Phase::Pending;
        *text = format!("{}{message}", messages::HELD_PREFIX);
        desired.conditions.retain(|c| {
            c.type_ != condition_types::RECONCILING && c.type_ != condition_types::STALLED
        });
        desired.conditions.extend(
            Progress::Stalled {
                reason: reasons::policy::VIOLATION.to_string(),
                message,
            }
            .conditions(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airunway_api::policy::Rule;
    use airunway_api::v1alpha1::ConditionStatus;
    use serde_json::json;

    fn md(status: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "team", "generation": 1},
            "spec": {"model": {"id": "a/b"}, "provider": {"name": "kaito"}},
            "status": status,
        }))
        .unwrap()
    }

    fn desired() -> DesiredCoreStatus {
        DesiredCoreStatus {
            engine: None,
            provider: Some(("kaito".into(), "explicit".into())),
            phase: Some((
                Phase::Pending,
                "Waiting for provider kaito to reconcile".into(),
            )),
            conditions: vec![
                DesiredCondition::new(
                    condition_types::PROVIDER_SELECTED,
                    true,
                    "ExplicitSelection",
                    "x",
                ),
                DesiredCondition::new(
                    condition_types::PROVIDER_HEALTHY,
                    true,
                    "ProviderAvailable",
                    "y",
                ),
                DesiredCondition::new(
                    condition_types::RECONCILING,
                    true,
                    "WaitingForProvider",
                    "z",
                ),
                DesiredCondition::new(condition_types::STALLED, false, "WaitingForProvider", "z"),
            ],
            generation: Some(1),
            observed_generation: Some(1),
            runtime_config: None,
        }
    }

    fn violation() -> Verdict {
        Verdict {
            selecting: 1,
            violations: vec![Violation {
                policy: "p".into(),
                rule: Rule::AllowedProviders,
                field: "spec.provider.name".into(),
                message: "ModelDeploymentPolicy \"p\": allowedProviders is [vllm]; spec.provider.name is \"kaito\"".into(),
            }],
        }
    }

    fn condition<'a>(d: &'a DesiredCoreStatus, type_: &str) -> Option<&'a DesiredCondition> {
        d.conditions.iter().find(|c| c.type_ == type_)
    }

    #[test]
    fn no_policy_no_condition() {
        let mut d = desired();
        adjust(&md(json!({})), None, &mut d);
        assert_eq!(d, desired());
    }

    #[test]
    fn a_compliant_deployment_says_so() {
        let mut d = desired();
        adjust(
            &md(json!({})),
            Some(&Verdict {
                selecting: 2,
                violations: vec![],
            }),
            &mut d,
        );
        let c = condition(&d, condition_types::POLICY_COMPLIANT).unwrap();
        assert_eq!(c.status, ConditionStatus::True);
        assert_eq!(d.provider, desired().provider);
    }

    #[test]
    fn a_violating_deployment_without_provider_is_held() {
        let mut d = desired();
        adjust(&md(json!({})), Some(&violation()), &mut d);
        assert_eq!(d.provider, None, "no provider selected");
        let compliant = condition(&d, condition_types::POLICY_COMPLIANT).unwrap();
        assert_eq!(compliant.status, ConditionStatus::False);
        assert_eq!(compliant.reason, reasons::policy::VIOLATION);
        let selected = condition(&d, condition_types::PROVIDER_SELECTED).unwrap();
        assert_eq!(selected.status, ConditionStatus::False);
        assert!(condition(&d, condition_types::PROVIDER_HEALTHY).is_none());
        let (phase, message) = d.phase.clone().unwrap();
        assert_eq!(phase, Phase::Pending);
        assert!(message.starts_with("Policy violation: ModelDeploymentPolicy \"p\""));
        let stalled = condition(&d, condition_types::STALLED).unwrap();
        assert_eq!(stalled.status, ConditionStatus::True);
        assert_eq!(stalled.reason, reasons::policy::VIOLATION);
    }

    #[test]
    fn a_served_deployment_keeps_running_and_is_reported() {
        let mut d = desired();
        d.phase = None;
        let served = md(json!({"provider": {"name": "kaito"}, "phase": "Running"}));
        adjust(&served, Some(&violation()), &mut d);
        assert_eq!(d.provider, desired().provider);
        assert_eq!(d.phase, None);
        assert_eq!(
            condition(&d, condition_types::POLICY_COMPLIANT)
                .unwrap()
                .status,
            ConditionStatus::False
        );
        assert!(condition(&d, condition_types::PROVIDER_HEALTHY).is_some());
    }
}
