//! Whether the serving path the deployment asked for works (pure): `Ready` is never `True`
//! while the gateway route the deployment asked for is known broken. The core owns
//! `GatewayReady` (docs/gateway.md); the provider folds it into `Ready` when it writes its
//! status, so the two never disagree and neither writes the other's field.

use crate::constants::{condition_types, reasons};
use crate::v1alpha1::{ConditionStatus, ModelDeployment, NotReadyReason, NotReadyStatus};

/// `GatewayReady=False` reasons that do not make a deployment not ready: the user turned the
/// gateway off for it, or deleted the route AI Runway created (it is not recreated; the
/// deployment still serves through its Service).
pub const NOT_BLOCKING: [&str; 2] = [reasons::gateway::DISABLED, reasons::gateway::ROUTE_DELETED];

/// The reason a deployment whose pods serve is nonetheless not ready, from the core's
/// `GatewayReady`: `GatewayNotReady` while it is `False` for any reason but those of
/// [`NOT_BLOCKING`] (a route waiting for the Gateway to accept it, a route or pool refused, no
/// Gateway although `spec.gateway.enabled: true`, the core yet to wire a deployment that just
/// became `Running`). `None` without `GatewayReady` (no gateway integration in the cluster, or
/// the deployment did not ask for one) or while it is `True`.
pub fn gateway_blocks(md: &ModelDeployment) -> Option<NotReadyStatus> {
    let gateway = md.condition(condition_types::GATEWAY_READY)?;
    if gateway.status != ConditionStatus::False
        || NOT_BLOCKING.contains(&gateway.reason.as_deref().unwrap_or_default())
    {
        return None;
    }
    Some(NotReadyStatus::new(
        NotReadyReason::GatewayNotReady,
        format!(
            "The model server is ready but the gateway does not route to it ({}: {})",
            gateway.reason.as_deref().unwrap_or_default(),
            gateway.message.as_deref().unwrap_or_default()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(gateway: Option<(&str, &str)>) -> ModelDeployment {
        let conditions: Vec<_> = gateway
            .into_iter()
            .map(|(status, reason)| {
                json!({"type": "GatewayReady", "status": status, "reason": reason,
                       "message": "HTTPRoute ns/m is waiting for Gateway gw to accept it",
                       "lastTransitionTime": "2026-01-01T00:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "generation": 1},
            "spec": {"model": {"id": "a/b"}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn a_route_the_gateway_has_not_accepted_blocks_ready() {
        for reason in [
            reasons::gateway::ROUTE_PENDING,
            reasons::gateway::NOT_RUNNING,
            reasons::gateway::NO_GATEWAY,
            reasons::gateway::POOL_FAILED,
            "NotAllowedByListeners",
        ] {
            let blocked = gateway_blocks(&md(Some(("False", reason)))).expect(reason);
            assert_eq!(blocked.reason, NotReadyReason::GatewayNotReady);
            assert!(blocked.message.contains(reason), "{}", blocked.message);
        }
        assert_eq!(
            gateway_blocks(&md(Some(("False", reasons::gateway::ROUTE_PENDING))))
                .unwrap()
                .message,
            "The model server is ready but the gateway does not route to it (RoutePending: HTTPRoute ns/m is waiting for Gateway gw to accept it)"
        );
    }

    #[test]
    fn no_gateway_condition_an_accepted_route_or_a_disabled_gateway_do_not() {
        assert_eq!(gateway_blocks(&md(None)), None);
        assert_eq!(
            gateway_blocks(&md(Some(("True", reasons::gateway::CONFIGURED)))),
            None
        );
        for reason in NOT_BLOCKING {
            assert_eq!(gateway_blocks(&md(Some(("False", reason)))), None);
        }
    }
}
