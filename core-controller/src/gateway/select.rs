//! Which Gateway the routes attach to (pure).
//!
//! A deployment's own `spec.gateway.gatewayRef` wins ([`select_for`]); else flags naming one (`--gateway-name`, `--gateway-namespace`) win; else the only Gateway in the
//! cluster; else the one labelled `airunway.ai/inference-gateway: "true"`. No Gateway, several
//! without that label, or several with it, is an error whose message says what to do (the Go
//! AI Runway silently took the first of several labelled ones; we do not guess).

use serde_json::Value;

use super::INFERENCE_GATEWAY_LABEL;

/// `<namespace>/<name>` of a Gateway.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GatewayRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for GatewayRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What the integration reads of a Gateway.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewayView {
    /// Which Gateway.
    pub reference: GatewayRef,
    /// Whether it carries `airunway.ai/inference-gateway: "true"`.
    pub labelled: bool,
    /// `status.addresses[*].value`, in order, empty values left out.
    pub addresses: Vec<String>,
    /// `spec.listeners`, as stored.
    pub listeners: Vec<Value>,
    /// The namespaces AI Runway added to the listeners (its annotation).
    pub managed_namespaces: std::collections::BTreeSet<String>,
}

impl GatewayView {
    /// The view of a Gateway object (`gateway.networking.k8s.io/v1`, as JSON); `None` without
    /// a name or namespace.
    pub fn from_object(object: &Value) -> Option<GatewayView> {
        let metadata = object.get("metadata")?;
        let name = metadata.get("name")?.as_str()?.to_string();
        let namespace = metadata.get("namespace")?.as_str()?.to_string();
        let labelled = metadata
            .pointer(&format!(
                "/labels/{}",
                INFERENCE_GATEWAY_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            == Some("true");
        let addresses = object
            .pointer("/status/addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.get("value").and_then(Value::as_str))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect();
        let listeners = object
            .pointer("/spec/listeners")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let managed_namespaces = metadata
            .pointer(&format!(
                "/annotations/{}",
                super::ALLOWED_NAMESPACES_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map(super::allowed::parse_managed)
            .unwrap_or_default();
        Some(GatewayView {
            reference: GatewayRef { namespace, name },
            labelled,
            addresses,
            listeners,
            managed_namespaces,
        })
    }

    /// `status.gateway.endpoint`: the first address the Gateway reports ("" while none).
    pub fn endpoint(&self) -> String {
        self.addresses.first().cloned().unwrap_or_default()
    }
}

/// Chooses the Gateway, or says why none can be chosen and what to do.
pub fn select_gateway<'a>(
    explicit: Option<&GatewayRef>,
    gateways: &'a [GatewayView],
) -> Result<&'a GatewayView, String> {
    if let Some(wanted) = explicit {
        return gateways
            .iter()
            .find(|g| &g.reference == wanted)
            .ok_or_else(|| {
                format!(
                    "Gateway {wanted} named by --gateway-name/--gateway-namespace does not exist; create it, or start the core with the flags naming an existing Gateway"
                )
            });
    }
    match gateways {
        [] => Err("no Gateway found in the cluster; create a Gateway (gateway.networking.k8s.io/v1) for your inference gateway, or set spec.gateway.enabled: false".to_string()),
        [only] => Ok(only),
        several => {
            let labelled: Vec<&GatewayView> = several.iter().filter(|g| g.labelled).collect();
            match labelled.as_slice() {
                [one] => Ok(one),
                [] => Err(format!(
                    "{} Gateways found ({}) and none is labelled {INFERENCE_GATEWAY_LABEL}=\"true\"; label the one AI Runway should route through, or start the core with --gateway-name and --gateway-namespace",
                    several.len(),
                    list(several.iter())
                )),
                many => Err(format!(
                    "{} Gateways are labelled {INFERENCE_GATEWAY_LABEL}=\"true\" ({}); keep the label on one of them, or start the core with --gateway-name and --gateway-namespace",
                    many.len(),
                    list(many.iter().copied())
                )),
            }
        }
    }
}

/// The Gateway `md` names in `spec.gateway.gatewayRef` (its namespace defaults to the
/// deployment's).
pub fn requested(md: &airunway_api::v1alpha1::ModelDeployment) -> Option<GatewayRef> {
    let reference = md.spec.gateway.as_ref()?.gateway_ref.as_ref()?;
    let namespace = reference
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| md.metadata.namespace.clone())
        .unwrap_or_default();
    Some(GatewayRef {
        namespace,
        name: reference.name.clone(),
    })
}

/// Chooses the Gateway of one deployment: the one it names (`own`, from
/// `spec.gateway.gatewayRef`), which must exist, else the cluster-wide choice
/// ([`select_gateway`]).
pub fn select_for<'a>(
    own: Option<&GatewayRef>,
    flags: Option<&GatewayRef>,
    gateways: &'a [GatewayView],
) -> Result<&'a GatewayView, String> {
    match own {
        Some(wanted) => gateways
            .iter()
            .find(|g| &g.reference == wanted)
            .ok_or_else(|| {
                format!(
                    "spec.gateway.gatewayRef names Gateway {wanted}, which does not exist; create it, or correct or remove spec.gateway.gatewayRef (without it the cluster-wide Gateway is used)"
                )
            }),
        None => select_gateway(flags, gateways),
    }
}

fn list<'a>(gateways: impl Iterator<Item = &'a GatewayView>) -> String {
    let mut names: Vec<String> = gateways.map(|g| g.reference.to_string()).collect();
    names.sort();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gateway(namespace: &str, name: &str, labelled: bool) -> GatewayView {
        GatewayView {
            reference: GatewayRef {
                namespace: namespace.into(),
                name: name.into(),
            },
            labelled,
            addresses: vec![],
            listeners: vec![],
            managed_namespaces: Default::default(),
        }
    }

    #[test]
    fn flags_win_and_must_name_an_existing_gateway() {
        let gateways = [gateway("a", "one", false), gateway("b", "two", true)];
        let wanted = GatewayRef {
            namespace: "a".into(),
            name: "one".into(),
        };
        assert_eq!(
            select_gateway(Some(&wanted), &gateways).unwrap().reference,
            wanted
        );
        let missing = GatewayRef {
            namespace: "c".into(),
            name: "x".into(),
        };
        let message = select_gateway(Some(&missing), &gateways).unwrap_err();
        assert!(
            message
                .contains("Gateway c/x named by --gateway-name/--gateway-namespace does not exist"),
            "{message}"
        );
    }

    /// `spec.gateway.gatewayRef` wins over the flags and the label, must exist, and its
    /// namespace defaults to the deployment's.
    #[test]
    fn a_deployments_own_gateway_wins_and_must_exist() {
        let gateways = [gateway("a", "one", false), gateway("b", "two", true)];
        let flags = GatewayRef {
            namespace: "b".into(),
            name: "two".into(),
        };
        let own = GatewayRef {
            namespace: "a".into(),
            name: "one".into(),
        };
        assert_eq!(
            select_for(Some(&own), Some(&flags), &gateways)
                .unwrap()
                .reference,
            own
        );
        assert_eq!(
            select_for(None, Some(&flags), &gateways).unwrap().reference,
            flags
        );
        let missing = GatewayRef {
            namespace: "a".into(),
            name: "gone".into(),
        };
        assert_eq!(
            select_for(Some(&missing), None, &gateways).unwrap_err(),
            "spec.gateway.gatewayRef names Gateway a/gone, which does not exist; create it, or correct or remove spec.gateway.gatewayRef (without it the cluster-wide Gateway is used)"
        );
        let md = |gateway: serde_json::Value| -> airunway_api::v1alpha1::ModelDeployment {
            serde_json::from_value(
                json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": "m", "namespace": "team-a"},
                "spec": {"model": {"id": "a/b"}, "gateway": gateway}}),
            )
            .unwrap()
        };
        assert_eq!(
            requested(&md(json!({"gatewayRef": {"name": "mine"}}))),
            Some(GatewayRef {
                namespace: "team-a".into(),
                name: "mine".into()
            })
        );
        assert_eq!(
            requested(&md(
                json!({"gatewayRef": {"name": "shared", "namespace": "gateways"}})
            )),
            Some(GatewayRef {
                namespace: "gateways".into(),
                name: "shared".into()
            })
        );
        assert_eq!(requested(&md(json!({}))), None);
    }

    #[test]
    fn the_only_gateway_is_chosen_labelled_or_not() {
        let gateways = [gateway("gw", "only", false)];
        assert_eq!(
            select_gateway(None, &gateways).unwrap().reference.name,
            "only"
        );
    }

    #[test]
    fn none_says_to_create_one() {
        let message = select_gateway(None, &[]).unwrap_err();
        assert!(
            message.starts_with("no Gateway found in the cluster; create a Gateway"),
            "{message}"
        );
    }

    #[test]
    fn several_need_exactly_one_label() {
        let unlabelled = [gateway("b", "two", false), gateway("a", "one", false)];
        let message = select_gateway(None, &unlabelled).unwrap_err();
        assert_eq!(
            message,
            "2 Gateways found (a/one, b/two) and none is labelled airunway.ai/inference-gateway=\"true\"; label the one AI Runway should route through, or start the core with --gateway-name and --gateway-namespace"
        );
        let one = [gateway("a", "one", false), gateway("b", "two", true)];
        assert_eq!(select_gateway(None, &one).unwrap().reference.name, "two");
        let both = [gateway("a", "one", true), gateway("b", "two", true)];
        let message = select_gateway(None, &both).unwrap_err();
        assert!(message.starts_with("2 Gateways are labelled airunway.ai/inference-gateway=\"true\" (a/one, b/two); keep the label on one"), "{message}");
    }

    #[test]
    fn view_of_the_programmed_sample() {
        let object = json!({
            "metadata": {"name": "inference-gateway", "namespace": "default",
                         "labels": {"airunway.ai/inference-gateway": "true"},
                         "annotations": {"airunway.ai/allowed-route-namespaces": "team-b,team-a"}},
            "spec": {"listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
            "status": {"addresses": [{"type": "Hostname", "value": ""}, {"type": "IPAddress", "value": "172.18.255.200"}]},
        });
        let view = GatewayView::from_object(&object).unwrap();
        assert!(view.labelled);
        assert_eq!(view.endpoint(), "172.18.255.200");
        assert_eq!(view.listeners.len(), 1);
        assert_eq!(
            view.managed_namespaces.iter().cloned().collect::<Vec<_>>(),
            ["team-a", "team-b"]
        );
        assert!(GatewayView::from_object(&json!({"metadata": {"name": "x"}})).is_none());
        let no_status =
            GatewayView::from_object(&json!({"metadata": {"name": "x", "namespace": "y"}}))
                .unwrap();
        assert_eq!(no_status.endpoint(), "");
    }
}
