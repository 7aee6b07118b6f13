//! The gateway integration's metadata watches (shell): the endpoint picker's objects other
//! than its Deployment, and the HTTPRoutes users manage.
//!
//! - The picker's ServiceAccount, Role, RoleBinding, ConfigMap and Service, watched by the
//!   label every object of the integration carries ([`super::render::GATEWAY_OF_LABEL`]), as
//!   metadata only: one deleted (or changed) wakes its deployment, whose route plan finds the
//!   stack incomplete ([`PickerParts::complete`]) and applies it again.
//! - HTTPRoutes without that label (the users'), as metadata only: a change of one (its status
//!   included: every write changes the `resourceVersion`) wakes the deployments of its
//!   namespace whose `spec.gateway.httpRouteRef` names it, so `GatewayReady` follows the
//!   user's route without waiting for a resync.

use std::fmt::Debug;

use airunway_api::runtime::touched_once_stored;
use airunway_api::v1alpha1::ModelDeployment;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::render::GATEWAY_OF_LABEL;

/// The metadata caches of the picker's objects other than its Deployment.
#[derive(Clone)]
pub struct PickerParts {
    service_accounts: Store<PartialObjectMeta<ServiceAccount>>,
    roles: Store<PartialObjectMeta<Role>>,
    role_bindings: Store<PartialObjectMeta<RoleBinding>>,
    config_maps: Store<PartialObjectMeta<ConfigMap>>,
    services: Store<PartialObjectMeta<Service>>,
}

/// The writers of [`PickerParts`], handed to [`spawn_picker_parts`] once the gateway CRDs are
/// served.
pub struct PickerPartWriters {
    service_accounts: reflector::store::Writer<PartialObjectMeta<ServiceAccount>>,
    roles: reflector::store::Writer<PartialObjectMeta<Role>>,
    role_bindings: reflector::store::Writer<PartialObjectMeta<RoleBinding>>,
    config_maps: reflector::store::Writer<PartialObjectMeta<ConfigMap>>,
    services: reflector::store::Writer<PartialObjectMeta<Service>>,
}

impl PickerParts {
    /// Empty caches and their writers.
    pub fn new() -> (PickerParts, PickerPartWriters) {
        let (service_accounts, sa) = reflector::store();
        let (roles, role) = reflector::store();
        let (role_bindings, binding) = reflector::store();
        let (config_maps, config) = reflector::store();
        let (services, service) = reflector::store();
        (
            PickerParts {
                service_accounts,
                roles,
                role_bindings,
                config_maps,
                services,
            },
            PickerPartWriters {
                service_accounts: sa,
                roles: role,
                role_bindings: binding,
                config_maps: config,
                services: service,
            },
        )
    }

    /// Whether every one of the picker's objects `namespace/name` is in its cache.
    pub fn complete(&self, namespace: &str, name: &str) -> bool {
        fn has<K>(store: &Store<PartialObjectMeta<K>>, namespace: &str, name: &str) -> bool
        where
            K: Resource<DynamicType = ()> + Clone,
        {
            store.get(&ObjectRef::new(name).within(namespace)).is_some()
        }
        has(&self.service_accounts, namespace, name)
            && has(&self.roles, namespace, name)
            && has(&self.role_bindings, namespace, name)
            && has(&self.config_maps, namespace, name)
            && has(&self.services, namespace, name)
    }

    /// Waits until every cache has been listed once.
    pub async fn wait_until_ready(&self) {
        let _ = self.service_accounts.wait_until_ready().await;
        let _ = self.roles.wait_until_ready().await;
        let _ = self.role_bindings.wait_until_ready().await;
        let _ = self.config_maps.wait_until_ready().await;
        let _ = self.services.wait_until_ready().await;
    }
}

/// The deployment an object belongs to, by its `ModelDeployment` owner reference.
pub fn owner<K: Resource>(object: &K) -> Option<ObjectRef<ModelDeployment>> {
    let namespace = object.meta().namespace.clone()?;
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|r| {
            r.kind == "ModelDeployment" && r.api_version == airunway_api::constants::API_VERSION
        })
        .map(|r| ObjectRef::new(&r.name).within(&namespace))
}

/// Starts the labelled metadata watch of one picker kind, filling `writer`; an event wakes the
/// object's deployment.
fn spawn_part<K>(
    client: &Client,
    writer: reflector::store::Writer<PartialObjectMeta<K>>,
    sender: &mpsc::Sender<ObjectRef<ModelDeployment>>,
    shutdown: &CancellationToken,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let store = writer.as_reader();
    let stream = watcher(
        Api::<PartialObjectMeta<K>>::all(client.clone()),
        watcher::Config::default().labels(GATEWAY_OF_LABEL),
    )
    .default_backoff()
    .reflect(writer);
    // A re-list's triggers once the store holds it (`stored_triggers`).
    let stream = touched_once_stored(stream, store);
    let sender = sender.clone();
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                event = stream.next() => match event {
                    None => return,
                    Some(Ok(object)) => {
                        if let Some(owner) = owner(&object) {
                            let _ = sender.try_send(owner);
                        }
                    }
                    Some(Err(e)) => tracing::debug!(kind = %K::kind(&()), error = %e, "endpoint picker object watch error"),
                },
            }
        }
    });
}

/// Starts the watches of the picker's objects other than its Deployment.
pub fn spawn_picker_parts(
    client: &Client,
    writers: PickerPartWriters,
    sender: &mpsc::Sender<ObjectRef<ModelDeployment>>,
    shutdown: &CancellationToken,
) {
    spawn_part(client, writers.service_accounts, sender, shutdown);
    spawn_part(client, writers.roles, sender, shutdown);
    spawn_part(client, writers.role_bindings, sender, shutdown);
    spawn_part(client, writers.config_maps, sender, shutdown);
    spawn_part(client, writers.services, sender, shutdown);
}

/// Whether `md` names the route `namespace/name` in `spec.gateway.httpRouteRef`.
pub fn names_route(md: &ModelDeployment, namespace: &str, name: &str) -> bool {
    md.metadata.namespace.as_deref() == Some(namespace)
        && md
            .spec
            .gateway
            .as_ref()
            .and_then(|g| g.http_route_ref.as_deref())
            == Some(name)
}

/// Starts the metadata watch of the HTTPRoutes AI Runway did not create: a change wakes the
/// deployments that name the route in `spec.gateway.httpRouteRef`.
pub fn spawn_user_routes(
    client: &Client,
    routes: &kube::api::ApiResource,
    deployments: &Store<ModelDeployment>,
    sender: &mpsc::Sender<ObjectRef<ModelDeployment>>,
    shutdown: &CancellationToken,
) {
    let stream = watcher(
        Api::<PartialObjectMeta<DynamicObject>>::all_with(client.clone(), routes),
        watcher::Config::default().labels(&format!("!{GATEWAY_OF_LABEL}")),
    )
    .default_backoff()
    .touched_objects();
    let deployments = deployments.clone();
    let sender = sender.clone();
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                event = stream.next() => match event {
                    None => return,
                    Some(Ok(route)) => {
                        let namespace = route.namespace().unwrap_or_default();
                        let name = route.name_any();
                        for md in deployments.state() {
                            if names_route(&md, &namespace, &name) {
                                let _ = sender.try_send(ObjectRef::from_obj(&*md));
                            }
                        }
                    }
                    Some(Err(e)) => tracing::debug!(error = %e, "user HTTPRoute watch error"),
                },
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_users_route_wakes_the_deployments_naming_it() {
        let md: ModelDeployment = serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "team-a"},
            "spec": {"model": {"id": "a/b"}, "gateway": {"httpRouteRef": "mine"}}}))
        .unwrap();
        assert!(names_route(&md, "team-a", "mine"));
        assert!(!names_route(&md, "team-b", "mine"), "another namespace");
        assert!(!names_route(&md, "team-a", "other"));
    }

    #[test]
    fn the_owner_of_a_picker_object() {
        let object: PartialObjectMeta<ConfigMap> = serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "m-epp", "namespace": "team-a",
                "ownerReferences": [{"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
                                     "name": "m", "uid": "u"}]}}))
        .unwrap();
        assert_eq!(owner(&object), Some(ObjectRef::new("m").within("team-a")));
        let foreign: PartialObjectMeta<ConfigMap> = serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "x", "namespace": "team-a",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "m", "uid": "u"}]}}))
        .unwrap();
        assert_eq!(owner(&foreign), None);
    }
}
