//! The offline commands against the real control plane (issue 40): every example and every
//! document of the core's invalid corpus is checked offline (`airunway_core::offline`, the
//! code behind `airunway-core validate` and `select`) and created through the API server with
//! the core's webhooks: the offline verdict must be the cluster's (refused with the same
//! messages, or admitted), and an admitted deployment must get the `status.provider.name` and
//! `status.engine.type` the offline `select` gave it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use airunway_api::offline::{self, Severity};
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment};
use airunway_e2e::admission::{
    core_identity, create_raw, install_webhooks, remove_webhooks, start_core, wait_webhook_active,
};
use airunway_e2e::binaries::free_port;
use airunway_e2e::providers::{delete_all, register_shipped};
use airunway_e2e::wait::eventually;
use airunway_e2e::{TestEnv, cluster_lock, paths};
use kube::api::{Api, ListParams};

const WAIT: Duration = Duration::from_secs(60);

fn inputs() -> Vec<PathBuf> {
    let root = paths::workspace_root();
    vec![
        root.join("examples"),
        root.join("core-controller/tests/fixtures/invalid"),
    ]
}

#[tokio::test]
async fn offline_verdicts_are_the_clusters() {
    let _lock = cluster_lock().await;
    let env = TestEnv::new("offline").await;
    delete_all(&env.client).await;
    register_shipped(
        &env.client,
        &["dynamo", "kaito", "kuberay", "llmd", "vllm"],
        true,
    )
    .await;
    let kubeconfig = core_identity(&env).await;
    let port = free_port();
    install_webhooks(&env, port).await;
    let _core = start_core(&env, &kubeconfig, port, &[]).await;
    wait_webhook_active(&env).await;

    // The providers as the cluster has them: what the webhook decides with.
    let ipcs: Api<InferenceProviderConfig> = Api::all(env.client.clone());
    let providers = ipcs.list(&ListParams::default()).await.unwrap().items;
    let mut documents = offline::read_documents(&inputs()).unwrap();
    for document in &mut documents {
        document.default_namespace(&env.namespace);
    }
    let selected = airunway_core::offline::select(&documents, &providers, true);

    let api: Api<ModelDeployment> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut admitted = Vec::new();
    for document in documents.iter().filter(|d| d.is("ModelDeployment")) {
        let (_, findings) = airunway_core::offline::validate_document(document, &providers, true);
        let errors: Vec<&offline::Finding> = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        let (code, _warnings, body) =
            create_raw(&env.client, &env.namespace, &document.value).await;
        let location = document.location();
        if errors.is_empty() {
            assert!(
                (200..300).contains(&code),
                "{location}: valid offline, refused by the cluster ({code}): {body}"
            );
            admitted.push(document.name().to_string());
        } else {
            assert!(
                (400..500).contains(&code),
                "{location}: invalid offline ({errors:?}), admitted by the cluster"
            );
            let message = body["message"].as_str().unwrap_or_default();
            for error in errors {
                assert!(
                    message.contains(&error.message),
                    "{location}: offline {:?} not in the cluster's {message:?}",
                    error.message
                );
            }
        }
    }

    // Every admitted deployment gets the engine and provider `select` gave it.
    for name in admitted {
        let expected = selected
            .deployments
            .iter()
            .find(|d| d.name == name)
            .unwrap();
        let (engine, provider) = eventually(&format!("{name} to get a provider"), WAIT, || async {
            let md = api.get(&name).await.map_err(|e| e.to_string())?;
            let status = md.status.clone().unwrap_or_default();
            let provider = status
                .provider
                .and_then(|p| p.name)
                .ok_or("no provider yet")?;
            let engine = status
                .engine
                .and_then(|e| e.engine_type)
                .map(|e| e.to_string());
            Ok((engine, provider))
        })
        .await;
        assert_eq!(Some(provider), expected.provider, "{name}");
        assert_eq!(engine, expected.engine, "{name}");
    }
    remove_webhooks(&env.client).await;
}
