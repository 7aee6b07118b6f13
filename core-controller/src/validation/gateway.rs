//! `spec.gateway`: the references to a user's InferencePool (`poolRef`) and Gateway
//! (`gatewayRef`), and the combinations that make no sense (docs/gateway.md).

use airunway_api::constants::messages;
use airunway_api::kubernetes_names::{is_dns1123_label, is_dns1123_subdomain};
use airunway_api::v1alpha1::ModelDeploymentSpec;

use super::FieldError;

/// The errors of `spec.gateway`: names that cannot name an object, `poolRef` beside
/// `httpRouteRef` (the user's route names its own backend), and either reference while the
/// gateway is disabled.
pub(super) fn validate_gateway(spec: &ModelDeploymentSpec, errors: &mut Vec<FieldError>) {
    let Some(gateway) = spec.gateway.as_ref() else {
        return;
    };
    let disabled = gateway.enabled == Some(false);
    if let Some(pool) = gateway.pool_ref.as_deref() {
        if !is_dns1123_subdomain(pool) {
            errors.push(FieldError::new(
                "spec.gateway.poolRef",
                messages::GATEWAY_POOL_REF_NAME,
            ));
        }
        if gateway.http_route_ref.is_some() {
            errors.push(FieldError::new(
                "spec.gateway.poolRef",
                messages::GATEWAY_POOL_REF_WITH_ROUTE_REF,
            ));
        }
        if disabled {
            errors.push(FieldError::new(
                "spec.gateway.poolRef",
                messages::GATEWAY_REF_WHILE_DISABLED,
            ));
        }
    }
    if let Some(reference) = gateway.gateway_ref.as_ref() {
        if !is_dns1123_subdomain(&reference.name) {
            errors.push(FieldError::new(
                "spec.gateway.gatewayRef.name",
                messages::GATEWAY_REF_NAME,
            ));
        }
        if reference
            .namespace
            .as_deref()
            .is_some_and(|n| !is_dns1123_label(n))
        {
            errors.push(FieldError::new(
                "spec.gateway.gatewayRef.namespace",
                messages::GATEWAY_REF_NAMESPACE,
            ));
        }
        if disabled {
            errors.push(FieldError::new(
                "spec.gateway.gatewayRef",
                messages::GATEWAY_REF_WHILE_DISABLED,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn errors(gateway: Value) -> Vec<FieldError> {
        let spec: ModelDeploymentSpec =
            serde_json::from_value(json!({"model": {"id": "a/b"}, "gateway": gateway})).unwrap();
        let mut errors = Vec::new();
        validate_gateway(&spec, &mut errors);
        errors
    }

    fn one(field: &str, message: &str) -> Vec<FieldError> {
        vec![FieldError::new(field, message)]
    }

    #[test]
    fn references_and_their_combinations() {
        assert!(
            errors(json!({"poolRef": "shared", "gatewayRef": {"name": "gw", "namespace": "edge"}}))
                .is_empty()
        );
        assert!(
            errors(json!({"gatewayRef": {"name": "gw"}, "httpRouteRef": "mine"})).is_empty(),
            "the Gateway whose status and listener the user's route is judged by"
        );
        assert!(errors(json!({"enabled": true, "poolRef": "shared"})).is_empty());
        assert!(errors(json!({"enabled": false})).is_empty());
        assert_eq!(
            errors(json!({"poolRef": "shared", "httpRouteRef": "mine"})),
            one(
                "spec.gateway.poolRef",
                messages::GATEWAY_POOL_REF_WITH_ROUTE_REF
            )
        );
        assert_eq!(
            errors(json!({"poolRef": "shared", "enabled": false})),
            one("spec.gateway.poolRef", messages::GATEWAY_REF_WHILE_DISABLED)
        );
        assert_eq!(
            errors(json!({"gatewayRef": {"name": "gw"}, "enabled": false})),
            one(
                "spec.gateway.gatewayRef",
                messages::GATEWAY_REF_WHILE_DISABLED
            )
        );
        assert_eq!(
            errors(json!({"poolRef": "Shared_Pool"})),
            one("spec.gateway.poolRef", messages::GATEWAY_POOL_REF_NAME)
        );
        assert_eq!(
            errors(json!({"gatewayRef": {"name": "gw/x"}})),
            one("spec.gateway.gatewayRef.name", messages::GATEWAY_REF_NAME)
        );
        assert_eq!(
            errors(json!({"gatewayRef": {"name": "gw", "namespace": "edge.example"}})),
            one(
                "spec.gateway.gatewayRef.namespace",
                messages::GATEWAY_REF_NAMESPACE
            )
        );
    }
}
