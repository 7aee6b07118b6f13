//! Generated input for the gateway renders: every InferencePool, HTTPRoute and
//! InferenceModelRewrite the core renders, for any deployment name, namespace, model name and
//! list of LoRA adapters the ModelDeployment schema admits, is accepted by the upstream CRD
//! schemas the cluster serves (Gateway API Inference Extension v1.5.0, Gateway API v1.5.1),
//! checked offline as the API server checks them (`airunway_api::provider::testing::
//! upstream_schema`). Case counts: `PROPTEST_CASES` (default 256).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use airunway_api::provider::testing::upstream_schema::{UpstreamValidator, upstream_validator};
use airunway_core::gateway::names::Names;
use airunway_core::gateway::render::{self, Owner, PoolRef};
use airunway_core::gateway::select::GatewayRef;
use proptest::collection::{btree_set, vec};
use proptest::prelude::*;

fn validator(path: &str, version: &str) -> UpstreamValidator {
    upstream_validator(env!("CARGO_MANIFEST_DIR"), path, version).unwrap()
}

static POOLS: LazyLock<UpstreamValidator> = LazyLock::new(|| {
    validator(
        "gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml",
        "v1",
    )
});
static ROUTES: LazyLock<UpstreamValidator> = LazyLock::new(|| {
    validator(
        "gateway-api/gateway.networking.k8s.io_httproutes.yaml",
        "v1",
    )
});
static REWRITES: LazyLock<UpstreamValidator> = LazyLock::new(|| {
    validator(
        "gateway-api-inference-extension/inference.networking.x-k8s.io_inferencemodelrewrites.yaml",
        render::MODEL_REWRITE_VERSION,
    )
});

/// A deployment name the core accepts (DNS-1035, at most 45 characters).
fn deployment_name() -> impl Strategy<Value = String> {
    "[a-z]([-a-z0-9]{0,43}[a-z0-9])?"
}

/// An adapter name as `spec.adapters[].name` admits it.
fn adapter_name() -> impl Strategy<Value = String> {
    "[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?"
}

/// A model name: what a spec, the model server or a Hugging Face id gives (printable, at most
/// 256 characters).
fn model_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][ -~]{0,255}"
}

proptest! {
    #[test]
    fn gateway_renders_are_accepted_by_the_upstream_schemas(
        name in deployment_name(),
        namespace in "[a-z]([-a-z0-9]{0,61}[a-z0-9])?",
        model in model_name(),
        adapters in btree_set(adapter_name(), 0..=32),
        port in 1..=65535i32,
        labels in vec(("[a-z]{1,20}", "[a-z0-9]{0,20}"), 0..3),
    ) {
        let owner = Owner {
            name: name.clone(),
            namespace: namespace.clone(),
            uid: "3f1c6a4e-0000-4000-8000-000000000001".into(),
            propagated: labels
                .into_iter()
                .map(|(k, v)| (format!("org.example/{k}"), v))
                .collect::<BTreeMap<_, _>>(),
        };
        let names = Names::of(&name);
        let pool_ref = PoolRef { namespace: namespace.clone(), name: names.pool.clone() };
        let gateway = GatewayRef { namespace: "gateways".into(), name: "inference-gateway".into() };

        let selector = render::pool_selector(None, &name);
        let pool = render::pool(&owner, &names, &selector, port, "0123456789abcdef");
        let errors = POOLS.errors(&pool);
        prop_assert!(errors.is_empty(), "InferencePool {pool}: {errors:?}");

        let adapters: Vec<&str> = adapters.iter().map(String::as_str).collect();
        let mut model_names = vec![model.as_str()];
        model_names.extend(adapters.iter().copied().filter(|a| *a != model));
        let route = render::route(&owner, &names, &gateway, &pool_ref, &model_names, "0123456789abcdef");
        let errors = ROUTES.errors(&route);
        prop_assert!(errors.is_empty(), "HTTPRoute {route}: {errors:?}");
        prop_assert!(route["spec"]["rules"][0]["matches"].as_array().unwrap().len() <= 64);

        if !adapters.is_empty() {
            let rewrite = render::model_rewrite(&owner, &names, &pool_ref, &adapters, "0123456789abcdef");
            let errors = REWRITES.errors(&rewrite);
            prop_assert!(errors.is_empty(), "InferenceModelRewrite {rewrite}: {errors:?}");
        }
    }
}

/// The schemas are the real ones: a route with 65 matches in its rule, or a rewrite without
/// rules, is refused (so an accepted render means something).
#[test]
fn the_schemas_refuse_what_the_api_server_refuses() {
    let owner = Owner {
        name: "m".into(),
        namespace: "n".into(),
        uid: "u".into(),
        propagated: BTreeMap::new(),
    };
    let names = Names::of("m");
    let pool = PoolRef {
        namespace: "n".into(),
        name: "m".into(),
    };
    let gateway = GatewayRef {
        namespace: "g".into(),
        name: "gw".into(),
    };
    let many: Vec<String> = (0..65).map(|i| format!("adapter-{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let route = render::route(&owner, &names, &gateway, &pool, &many, "h");
    assert!(!ROUTES.errors(&route).is_empty());
    let mut rewrite = render::model_rewrite(&owner, &names, &pool, &["a"], "h");
    rewrite["spec"].as_object_mut().unwrap().remove("rules");
    assert!(!REWRITES.errors(&rewrite).is_empty());
}
