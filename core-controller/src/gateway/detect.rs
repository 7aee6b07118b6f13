//! Whether the cluster serves the gateway kinds, from a watch on their
//! CustomResourceDefinitions (so installing or removing them needs no restart of the core).
//!
//! A kind counts as served when its CRD exists, is `Established`, and serves `v1`. Istio's
//! `DestinationRule` is watched the same way (served at `v1beta1`, the version the Go AI
//! Runway writes); it is optional: without it the endpoint picker gets no DestinationRule. So
//! is the Inference Extension's `InferenceModelRewrite` (served at `v1alpha2` by v1.5.0):
//! without it a deployment's LoRA adapters are routed by the HTTPRoute alone.
//!
//! The detection also carries when the InferencePool CRD served now was created: a pool
//! created before it belongs to a CRD that was deleted since (with all its objects), so a watch
//! cache still holding it is stale ([`predates_crd`]).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The InferencePool CRD.
pub const INFERENCE_POOLS_CRD: &str = "inferencepools.inference.networking.k8s.io";
/// The HTTPRoute CRD.
pub const HTTP_ROUTES_CRD: &str = "httproutes.gateway.networking.k8s.io";
/// The Gateway CRD.
pub const GATEWAYS_CRD: &str = "gateways.gateway.networking.k8s.io";
/// The version each must serve.
pub const VERSION: &str = "v1";
/// Istio's DestinationRule CRD (optional: present where Istio is installed).
pub const DESTINATION_RULES_CRD: &str = "destinationrules.networking.istio.io";
/// The DestinationRule version the core writes (the Go AI Runway's).
pub const DESTINATION_RULE_VERSION: &str = "v1beta1";
/// The Inference Extension's InferenceModelRewrite CRD (optional).
pub const MODEL_REWRITES_CRD: &str = "inferencemodelrewrites.inference.networking.x-k8s.io";

/// Which gateway kinds the cluster serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Detection {
    /// `inferencepools` in `inference.networking.k8s.io/v1`.
    pub inference_pools: bool,
    /// `httproutes` in `gateway.networking.k8s.io/v1`.
    pub http_routes: bool,
    /// `gateways` in `gateway.networking.k8s.io/v1`.
    pub gateways: bool,
    /// `destinationrules` in `networking.istio.io/v1beta1` (Istio installed; optional).
    pub destination_rules: bool,
    /// `inferencemodelrewrites` in `inference.networking.x-k8s.io/v1alpha2` (optional).
    pub model_rewrites: bool,
    /// When the served InferencePool CRD was created (Unix seconds; `None`: not served).
    pub inference_pools_since: Option<i64>,
}

/// Whether `object` (as JSON) was created before its CRD, created at `crd_created` (Unix
/// seconds): then it is what a watch cache kept of a CRD deleted since, not a live object.
/// (Timestamps have one-second resolution: an object of the same second counts as live.)
pub fn predates_crd(object: &serde_json::Value, crd_created: Option<i64>) -> bool {
    let created = object
        .pointer("/metadata/creationTimestamp")
        .and_then(serde_json::Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_second());
    matches!((created, crd_created), (Some(created), Some(crd)) if created < crd)
}

impl Detection {
    /// Every kind is served.
    pub fn available(&self) -> bool {
        self.missing().is_empty()
    }

    /// The required CRDs (`<plural>.<group>`) not served at `v1` (Istio's is optional).
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.inference_pools, INFERENCE_POOLS_CRD),
            (self.http_routes, HTTP_ROUTES_CRD),
            (self.gateways, GATEWAYS_CRD),
        ]
        .into_iter()
        .filter(|(served, _)| !served)
        .map(|(_, name)| name)
        .collect()
    }
}

/// Whether `crd` is established and serves `version`.
pub fn serves(crd: &CustomResourceDefinition, version: &str) -> bool {
    let established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    established
        && crd
            .spec
            .versions
            .iter()
            .any(|v| v.name == version && v.served)
}

/// The live detection, kept current by watches on the three CRDs.
#[derive(Clone)]
pub struct Detector {
    current: watch::Receiver<Detection>,
}

impl Detector {
    /// A detector fixed at `detection` (tests, or the integration turned off).
    pub fn fixed(detection: Detection) -> Detector {
        let (sender, current) = watch::channel(detection);
        // The value stays; nobody sends again.
        drop(sender);
        Detector { current }
    }

    /// Starts the watches (each selects one CRD by name, so only four objects are cached).
    pub fn start(client: Client, shutdown: CancellationToken) -> Detector {
        let (sender, current) = watch::channel(Detection::default());
        let sender = Arc::new(sender);
        for name in [
            INFERENCE_POOLS_CRD,
            HTTP_ROUTES_CRD,
            GATEWAYS_CRD,
            DESTINATION_RULES_CRD,
            MODEL_REWRITES_CRD,
        ] {
            let api: Api<CustomResourceDefinition> = Api::all(client.clone());
            let sender = sender.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let (store, writer) = reflector::store();
                let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
                let stream = watcher(api, config)
                    .default_backoff()
                    .modify(airunway_api::cache_trim::crd_availability)
                    .reflect(writer);
                futures::pin_mut!(stream);
                loop {
                    let event = tokio::select! {
                        _ = shutdown.cancelled() => return,
                        event = stream.next() => event,
                    };
                    match event {
                        None => return,
                        Some(Err(e)) => {
                            tracing::debug!(crd = name, error = %e, "CRD watch error");
                            continue;
                        }
                        Some(Ok(_)) => {}
                    }
                    let version = match name {
                        DESTINATION_RULES_CRD => DESTINATION_RULE_VERSION,
                        MODEL_REWRITES_CRD => super::render::MODEL_REWRITE_VERSION,
                        _ => VERSION,
                    };
                    let served_crd = store.state().into_iter().find(|crd| serves(crd, version));
                    let served = served_crd.is_some();
                    let since = served_crd.and_then(|crd| {
                        crd.metadata
                            .creation_timestamp
                            .as_ref()
                            .map(|t| t.0.as_second())
                    });
                    sender.send_if_modified(|d| {
                        let mut changed = false;
                        if name == INFERENCE_POOLS_CRD && d.inference_pools_since != since {
                            d.inference_pools_since = since;
                            changed = true;
                        }
                        let slot = match name {
                            INFERENCE_POOLS_CRD => &mut d.inference_pools,
                            HTTP_ROUTES_CRD => &mut d.http_routes,
                            DESTINATION_RULES_CRD => &mut d.destination_rules,
                            MODEL_REWRITES_CRD => &mut d.model_rewrites,
                            _ => &mut d.gateways,
                        };
                        changed |= *slot != served;
                        *slot = served;
                        if changed {
                            tracing::info!(crd = name, served, "gateway CRD availability changed");
                        }
                        changed
                    });
                }
            });
        }
        Detector { current }
    }

    /// What is served now.
    pub fn current(&self) -> Detection {
        *self.current.borrow()
    }

    /// A receiver that sees every change.
    pub fn changes(&self) -> watch::Receiver<Detection> {
        self.current.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(established: &str, versions: Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": INFERENCE_POOLS_CRD},
            "spec": {"group": "inference.networking.k8s.io", "scope": "Namespaced",
                     "names": {"plural": "inferencepools", "kind": "InferencePool"},
                     "versions": versions},
            "status": {"conditions": [{"type": "Established", "status": established}]},
        }))
        .unwrap()
    }
    use serde_json::Value;

    #[test]
    fn served_means_established_and_v1_served() {
        let v1 = json!([{"name": "v1", "served": true, "storage": true}]);
        assert!(serves(&crd("True", v1.clone()), VERSION));
        assert!(!serves(&crd("False", v1), VERSION));
        let alpha = json!([{"name": "v1alpha2", "served": true, "storage": true},
                           {"name": "v1", "served": false, "storage": false}]);
        assert!(!serves(&crd("True", alpha), VERSION));
    }

    /// A pool older than the InferencePool CRD served now is what a cache kept of the CRD
    /// deleted before (its pools went with it).
    #[test]
    fn an_object_older_than_its_crd_is_stale() {
        let pool = |created: &str| json!({"metadata": {"name": "p", "creationTimestamp": created}});
        let crd: i64 = "2026-11-27T09:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_second();
        assert!(predates_crd(&pool("2026-11-27T08:59:59Z"), Some(crd)));
        assert!(
            !predates_crd(&pool("2026-11-27T09:00:00Z"), Some(crd)),
            "same second: live"
        );
        assert!(!predates_crd(&pool("2026-11-27T09:00:05Z"), Some(crd)));
        assert!(
            !predates_crd(&pool("2026-11-27T08:00:00Z"), None),
            "no CRD time known"
        );
        assert!(
            !predates_crd(&json!({"metadata": {}}), Some(crd)),
            "no creation time"
        );
    }

    #[test]
    fn missing_names_each_crd() {
        let none = Detection::default();
        assert_eq!(
            none.missing(),
            [INFERENCE_POOLS_CRD, HTTP_ROUTES_CRD, GATEWAYS_CRD]
        );
        let all = Detection {
            inference_pools: true,
            http_routes: true,
            gateways: true,
            ..Detection::default()
        };
        assert!(
            all.available(),
            "Istio's DestinationRule and the InferenceModelRewrite are optional"
        );
        assert_eq!(Detector::fixed(all).current(), all);
        let istio_only = Detection {
            destination_rules: true,
            ..Detection::default()
        };
        assert_eq!(istio_only.missing(), none.missing());
    }
}
