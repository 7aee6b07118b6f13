//! The model cache's shell: the watch caches (ModelCaches, PersistentVolumeClaims, download
//! Jobs), the `ModelCache` controller, and the storage part of a ModelDeployment's reconcile.
//! Decisions are [`super::plan`]'s and [`super::deployment`]'s.
//!
//! Writes: the cache's claim, the downloader's identity and the Job with server-side apply
//! under [`CORE_MODEL_CACHE`] (only when missing, so a steady cache costs no request); the
//! cache's status (only when it changed); the finalizer with a merge patch guarded by the
//! `resourceVersion`. A deployment's caches and managed claims are created (never changed), a
//! stale managed claim deleted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use airunway_api::apply_body;
use airunway_api::cache_trim;
use airunway_api::conditions::DesiredCondition;
use airunway_api::constants::field_managers::CORE_MODEL_CACHE;
use airunway_api::constants::finalizers::MODEL_CACHE_IN_USE;
use airunway_api::constants::labels;
use airunway_api::kube_error::ErrorClass;
use airunway_api::runtime::{InvalidObjects, WatchBackoff, guarded_watcher};
use airunway_api::storage;
use airunway_api::v1alpha1::{ModelCache, ModelCacheDefaults, ModelDeployment};
use futures::{Stream, StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::plan::{self, CacheInputs, ClaimState, JobState};
use super::{CacheConfig, ModelCacheError, adapters, deployment, render};

/// Objects a shared watch buffers for its slowest subscriber.
const SHARED_BUFFER: usize = 1024;
/// How long a deployment's reconcile waits for the claim and cache watches to fill at start.
const CACHE_SYNC_WAIT: Duration = Duration::from_secs(30);
/// A cache is looked at again this often without a change.
const RESYNC: Duration = Duration::from_secs(300);
/// How many caches are reconciled at once.
const CONCURRENCY: u16 = 8;

/// The model cache of a running core (leader only).
pub struct Integration {
    client: Client,
    config: CacheConfig,
    caches: Store<ModelCache>,
    claims: Store<PersistentVolumeClaim>,
    jobs: Store<Job>,
    deployments: Store<ModelDeployment>,
}

fn api_error(action: &'static str, object: String) -> impl FnOnce(kube::Error) -> ModelCacheError {
    move |source| ModelCacheError::Api {
        action,
        object,
        source,
    }
}

/// Whether `e` says the object is there already.
fn already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl Integration {
    /// Starts the watches and the `ModelCache` controller. `cache_triggers` are the caches whose
    /// users changed (see [`super::users`]); a ModelCache that does not decode is reported
    /// through `invalid` and skipped. Returns the integration and the deployments to
    /// reconcile because one of their caches or claims changed.
    pub fn start(
        client: Client,
        config: CacheConfig,
        deployments: Store<ModelDeployment>,
        cache_triggers: mpsc::Receiver<ObjectRef<ModelCache>>,
        invalid: InvalidObjects,
        shutdown: CancellationToken,
    ) -> (
        Arc<Integration>,
        impl Stream<Item = ObjectRef<ModelDeployment>> + Send + 'static,
    ) {
        let cache_writer = reflector::store::Writer::<ModelCache>::new_shared(SHARED_BUFFER, ());
        let caches = cache_writer.as_reader();
        let claim_writer =
            reflector::store::Writer::<PersistentVolumeClaim>::new_shared(SHARED_BUFFER, ());
        let claims = claim_writer.as_reader();
        let (jobs, job_writer) = reflector::store::<Job>();
        let cache_events = subscribe(&cache_writer);
        let cache_events_md = subscribe(&cache_writer);
        let claim_events = subscribe(&claim_writer);
        let claim_events_md = subscribe(&claim_writer);
        drive(
            guarded_watcher(
                client.clone(),
                watcher::Config::default(),
                invalid,
                caches.clone(),
            )
            .backoff(WatchBackoff::default())
            .reflect_shared(cache_writer),
            "ModelCache",
            shutdown.clone(),
        );
        drive(
            watcher(
                Api::<PersistentVolumeClaim>::all(client.clone()),
                watcher::Config::default(),
            )
            .backoff(WatchBackoff::default())
            .modify(|c: &mut PersistentVolumeClaim| cache_trim::drop_ownership(&mut c.metadata))
            .reflect_shared(claim_writer),
            "PersistentVolumeClaim",
            shutdown.clone(),
        );
        let job_changes = watcher(
            Api::<Job>::all(client.clone()),
            watcher::Config::default().labels(&format!(
                "{}={}",
                labels::JOB_TYPE,
                labels::JOB_TYPE_MODEL_DOWNLOAD
            )),
        )
        .backoff(WatchBackoff::default())
        .modify(|j: &mut Job| cache_trim::drop_ownership(&mut j.metadata))
        .reflect(job_writer)
        .applied_objects()
        .filter(|item| std::future::ready(item.is_ok()));

        let integration = Arc::new(Integration {
            client,
            config,
            caches: caches.clone(),
            claims: claims.clone(),
            jobs,
            deployments: deployments.clone(),
        });
        let triggers = stream::unfold(cache_triggers, |mut receiver| async move {
            receiver.recv().await.map(|r| (r, receiver))
        });
        // A claim changing re-queues the caches that download into it: their own claim, and a
        // deployment's managed claim its private cache names (owned by the deployment, so an
        // owner-reference mapping would miss it).
        let by_claim_name = {
            let caches = caches.clone();
            move |claim: Arc<PersistentVolumeClaim>| {
                let name = claim.name_any();
                let namespace = claim.namespace();
                caches
                    .state()
                    .into_iter()
                    .filter(|c| c.namespace() == namespace && plan::claim_name(c) == name)
                    .map(|c| ObjectRef::from_obj(&*c))
                    .collect::<Vec<_>>()
            }
        };
        let controller = Controller::for_shared_stream(cache_events, caches)
            .watches_shared_stream(claim_events, by_claim_name)
            .owns_stream(job_changes)
            .reconcile_on(triggers)
            .with_config(kube::runtime::controller::Config::default().concurrency(CONCURRENCY))
            .graceful_shutdown_on(shutdown.cancelled_owned());
        tokio::spawn(
            controller
                .run(reconcile_cache, error_policy, integration.clone())
                .for_each(|result| async move {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "model cache controller event");
                    }
                }),
        );

        // Deployments to look at again: those naming a cache that changed, or mounting a claim
        // that changed.
        let by_cache = {
            let deployments = deployments.clone();
            cache_events_md.flat_map(move |cache| {
                let name = cache.name_any();
                let namespace = cache.namespace();
                stream::iter(users_where(&deployments, namespace.as_deref(), |md| {
                    storage::download(md).is_some_and(|d| d.cache_name == name)
                        || adapters::cache_names(md).contains(&name)
                }))
            })
        };
        let by_claim = claim_events_md.flat_map(move |claim| {
            let name = claim.name_any();
            let namespace = claim.namespace();
            stream::iter(users_where(&deployments, namespace.as_deref(), |md| {
                storage::resolved_volumes(md)
                    .iter()
                    .any(|v| v.claim_name == name)
            }))
        });
        (integration, stream::select(by_cache, by_claim))
    }

    /// The storage part of a deployment's reconcile (`md`: the effective deployment): creates
    /// what its volumes need (and the caches of its adapters, [`adapters`]), brings the
    /// propagated labels of its own claims and cache to `propagated`, and returns its
    /// `StorageReady`, `ModelDownloaded` and `AdaptersDownloaded` conditions (none without
    /// volumes). `defaults` (its runtime configuration's) replace the core's flags for
    /// the size and retention of a shared cache it creates.
    pub async fn reconcile_deployment(
        &self,
        md: &ModelDeployment,
        defaults: Option<&ModelCacheDefaults>,
        propagated: &BTreeMap<String, String>,
    ) -> Result<Vec<DesiredCondition>, ModelCacheError> {
        if storage::resolved_volumes(md).is_empty() {
            return Ok(vec![]);
        }
        let namespace = md
            .namespace()
            .ok_or(ModelCacheError::MissingField("metadata.namespace"))?;
        // Until the claim and cache watches are filled, a claim would look missing: retried.
        let synced = tokio::time::timeout(CACHE_SYNC_WAIT, async {
            self.claims.wait_until_ready().await?;
            self.caches.wait_until_ready().await
        })
        .await;
        if !matches!(synced, Ok(Ok(()))) {
            return Err(ModelCacheError::NotSynced);
        }
        let claims = |name: &str| self.claims.get(&ObjectRef::new(name).within(&namespace));
        let cache = storage::download(md).and_then(|d| {
            self.caches
                .get(&ObjectRef::new(&d.cache_name).within(&namespace))
        });
        let config = with_defaults(&self.config, defaults);
        let plan = deployment::plan_labeled(md, &claims, cache.as_deref(), &config, propagated);
        if md.is_dry_run() {
            // A dry run creates nothing: its conditions name what would be created.
            let adapter_plan = adapters::plan(
                md,
                cache.as_deref(),
                &|name| self.caches.get(&ObjectRef::new(name).within(&namespace)),
                &config,
            );
            return Ok(crate::dry_run::storage_conditions(plan, adapter_plan));
        }
        let claims_api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), &namespace);
        for body in &plan.create_claims {
            let claim: PersistentVolumeClaim =
                serde_json::from_value(body.clone()).map_err(|e| ModelCacheError::Render {
                    object: format!("{namespace}/{}", body["metadata"]["name"]),
                    reason: e.to_string(),
                })?;
            let object = format!("{namespace}/{}", claim.name_any());
            match claims_api.create(&PostParams::default(), &claim).await {
                Ok(_) => tracing::info!(%object, "created PersistentVolumeClaim"),
                Err(e) if already_exists(&e) => {}
                Err(e) => return Err(api_error("create PersistentVolumeClaim", object)(e)),
            }
        }
        if let Some(name) = &plan.delete_cache {
            let api: Api<ModelCache> = Api::namespaced(self.client.clone(), &namespace);
            let object = format!("{namespace}/{name}");
            tracing::info!(%object, deployment = %md.name_any(), "deleting the deployment's ModelCache of its previous model");
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {}
                Err(e) => return Err(api_error("delete ModelCache", object)(e)),
            }
        }
        if let Some(body) = &plan.create_cache {
            let api: Api<ModelCache> = Api::namespaced(self.client.clone(), &namespace);
            let cache: ModelCache =
                serde_json::from_value(body.clone()).map_err(|e| ModelCacheError::Render {
                    object: format!("{namespace}/{}", body["metadata"]["name"]),
                    reason: e.to_string(),
                })?;
            let object = format!("{namespace}/{}", cache.name_any());
            match api.create(&PostParams::default(), &cache).await {
                Ok(_) => tracing::info!(%object, deployment = %md.name_any(), "created ModelCache"),
                Err(e) if already_exists(&e) => {}
                Err(e) => return Err(api_error("create ModelCache", object)(e)),
            }
        }
        for (kind, name, patch) in &plan.relabel {
            let object = format!("{namespace}/{name}");
            let result = match kind {
                deployment::Relabel::Claim => claims_api
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(|_| ()),
                deployment::Relabel::Cache => {
                    Api::<ModelCache>::namespaced(self.client.clone(), &namespace)
                        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                        .await
                        .map(|_| ())
                }
            };
            match result {
                Ok(()) => tracing::info!(%object, ?kind, "propagated labels updated"),
                Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {}
                Err(e) => return Err(api_error("patch labels of", object)(e)),
            }
        }
        // The adapters' caches, on the model cache's claim, once the model cache exists.
        let adapter_plan = adapters::plan(
            md,
            cache.as_deref(),
            &|name| self.caches.get(&ObjectRef::new(name).within(&namespace)),
            &config,
        );
        for body in &adapter_plan.create {
            let api: Api<ModelCache> = Api::namespaced(self.client.clone(), &namespace);
            let adapter_cache: ModelCache =
                serde_json::from_value(body.clone()).map_err(|e| ModelCacheError::Render {
                    object: format!("{namespace}/{}", body["metadata"]["name"]),
                    reason: e.to_string(),
                })?;
            let object = format!("{namespace}/{}", adapter_cache.name_any());
            match api.create(&PostParams::default(), &adapter_cache).await {
                Ok(_) => {
                    tracing::info!(%object, deployment = %md.name_any(), "created the ModelCache of an adapter")
                }
                Err(e) if already_exists(&e) => {}
                Err(e) => return Err(api_error("create ModelCache", object)(e)),
            }
        }
        for name in &plan.delete_claims {
            let object = format!("{namespace}/{name}");
            tracing::info!(%object, "deleting a managed PersistentVolumeClaim left by an earlier deployment");
            match claims_api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {}
                Err(e) => return Err(api_error("delete PersistentVolumeClaim", object)(e)),
            }
        }
        let mut conditions = plan.conditions;
        conditions.extend(adapter_plan.condition);
        Ok(conditions)
    }

    /// Applies `body` (a rendered object) under the model cache's field manager.
    async fn apply<K>(&self, namespace: &str, body: &Value) -> Result<(), ModelCacheError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let name = body["metadata"]["name"].as_str().unwrap_or_default();
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        api.patch(
            name,
            &PatchParams::apply(CORE_MODEL_CACHE).force(),
            &apply_body::apply(body),
        )
        .await
        .map(|_| ())
        .map_err(api_error(
            "apply",
            format!("{namespace}/{name} ({})", K::kind(&())),
        ))
    }
}

/// The core's cache options with a runtime configuration's `modelCache` defaults over them
/// (size, and retention policy and period, each when given and, for the period, parseable).
pub fn with_defaults(config: &CacheConfig, defaults: Option<&ModelCacheDefaults>) -> CacheConfig {
    let mut out = config.clone();
    let Some(defaults) = defaults else {
        return out;
    };
    if let Some(size) = defaults.size.as_ref().filter(|s| !s.is_empty()) {
        out.size.clone_from(size);
    }
    if let Some(retention) = &defaults.retention {
        if let Some(policy) = retention.policy {
            out.retention = policy;
        }
        if let Some(period) = retention
            .period
            .as_deref()
            .and_then(|p| airunway_api::runtime::parse_duration(p).ok())
        {
            out.retention_period = period;
        }
    }
    out
}

/// The changes a shared writer's store takes in, each after the store holds it (a writer made
/// with `new_shared` always gives one).
fn subscribe<K>(
    writer: &reflector::store::Writer<K>,
) -> impl Stream<Item = Arc<K>> + Send + 'static + use<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    stream::iter(writer.subscribe()).flatten()
}

/// Runs `events` (a reflector) until `shutdown`, logging errors (the backoff paces retries).
fn drive<K, S>(events: S, kind: &'static str, shutdown: CancellationToken)
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    K: Send + 'static,
{
    tokio::spawn(async move {
        futures::pin_mut!(events);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                event = events.next() => match event {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => tracing::warn!(error = %e, kind, "watch failed; retrying"),
                    None => return,
                },
            }
        }
    });
}

/// The deployments in `namespace` that `uses` says use something.
fn users_where(
    deployments: &Store<ModelDeployment>,
    namespace: Option<&str>,
    uses: impl Fn(&ModelDeployment) -> bool,
) -> Vec<ObjectRef<ModelDeployment>> {
    deployments
        .state()
        .into_iter()
        .filter(|md| md.namespace().as_deref() == namespace && uses(md))
        .map(|md| ObjectRef::from_obj(&*md))
        .collect()
}

/// The deployments using `cache` (names, sorted).
fn users(deployments: &Store<ModelDeployment>, cache: &ModelCache) -> Vec<String> {
    let name = cache.name_any();
    let mut users: Vec<String> = deployments
        .state()
        .into_iter()
        .filter(|md| {
            md.namespace() == cache.namespace()
                && (storage::download(md).is_some_and(|d| d.cache_name == name)
                // A deployment whose model changed no longer uses its old private cache.
                && deployment::serves(md, cache)
                    // An adapter cache's name says all it holds (adapter, revision, claim).
                    || adapters::cache_names(md).contains(&name))
        })
        .map(|md| md.name_any())
        .collect();
    users.sort();
    users
}

async fn reconcile_cache(
    cache: Arc<ModelCache>,
    ctx: Arc<Integration>,
) -> Result<Action, ModelCacheError> {
    let namespace = cache
        .namespace()
        .ok_or(ModelCacheError::MissingField("metadata.namespace"))?;
    let name = cache
        .metadata
        .name
        .clone()
        .ok_or(ModelCacheError::MissingField("metadata.name"))?;
    let object = format!("{namespace}/{name}");
    // Users are counted from the deployment cache, and what exists from the claim and Job
    // caches: until they are filled, a cache would look unused (and a short retention could
    // delete it) or its objects missing. Look again shortly instead.
    let synced = tokio::time::timeout(CACHE_SYNC_WAIT, async {
        ctx.deployments.wait_until_ready().await?;
        ctx.claims.wait_until_ready().await?;
        ctx.jobs.wait_until_ready().await
    })
    .await;
    if !matches!(synced, Ok(Ok(()))) {
        tracing::debug!(%object, "watch caches not filled yet; looking again shortly");
        return Ok(Action::requeue(Duration::from_secs(5)));
    }
    let claim_name = plan::claim_name(&cache);
    let claim = ctx
        .claims
        .get(&ObjectRef::new(&claim_name).within(&namespace));
    let job = ctx
        .jobs
        .get(&ObjectRef::new(&storage::download_job_name(&name)).within(&namespace))
        // Only a Job of this cache counts (a Job of that name owned by something else is
        // reported by the failed create).
        .filter(|job| {
            job.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| Some(&o.uid) == cache.metadata.uid.as_ref())
        });
    let plan = plan::plan(&CacheInputs {
        cache: &cache,
        claim: ClaimState::of(claim.as_deref()),
        job: job.as_deref().map(JobState::of),
        users: users(&ctx.deployments, &cache),
        now: Timestamp::now(),
    });
    let api: Api<ModelCache> = Api::namespaced(ctx.client.clone(), &namespace);
    if plan.add_finalizer {
        set_finalizer(&api, &cache, true, &object).await?;
    }
    if plan.create_claim {
        ctx.apply::<PersistentVolumeClaim>(&namespace, &render::claim(&cache))
            .await?;
    }
    if plan.create_job {
        let [account, role, binding] = render::identity(&cache);
        ctx.apply::<ServiceAccount>(&namespace, &account).await?;
        ctx.apply::<Role>(&namespace, &role).await?;
        ctx.apply::<RoleBinding>(&namespace, &binding).await?;
        ctx.apply::<Job>(
            &namespace,
            &render::job(&cache, &ctx.config, &plan.claim_name),
        )
        .await?;
        tracing::info!(%object, "created the download Job");
    }
    // The Job's labels follow the cache's propagated labels (its Pod template cannot change
    // once created).
    if !plan.create_job
        && let Some(job) = &job
        && let Some(patch) = crate::runtime_config::relabel_patch(
            &job.metadata,
            &crate::runtime_config::propagated_of(&cache.metadata),
        )
    {
        let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
        match jobs
            .patch(
                &job.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => tracing::info!(%object, "propagated labels of the download Job updated"),
            Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {}
            Err(e) => return Err(api_error("patch labels of the Job of", object)(e)),
        }
    }
    if plan.release_finalizer {
        // Nothing to say on an object about to go (and a status write first would make the
        // finalizer patch's resourceVersion stale).
        set_finalizer(&api, &cache, false, &object).await?;
        tracing::info!(%object, "released the ModelCache: no deployment uses it");
        return Ok(Action::await_change());
    }
    if !plan::is_current(&cache, &plan.status) {
        let body = plan::status_patch(&cache, &plan.status, Timestamp::now());
        match api
            .patch_status(
                &name,
                &PatchParams::apply(CORE_MODEL_CACHE).force(),
                &apply_body::apply(&body),
            )
            .await
        {
            Ok(_) => {}
            // Gone meanwhile (its finalizer was released): nothing left to say.
            Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {
                return Ok(Action::await_change());
            }
            Err(e) => return Err(api_error("apply status", object)(e)),
        }
    }
    if plan.delete {
        tracing::info!(%object, "deleting the ModelCache: unused for its retention period");
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if ErrorClass::of(&e) == ErrorClass::NotFound => {}
            Err(e) => return Err(api_error("delete", object)(e)),
        }
        return Ok(Action::await_change());
    }
    Ok(Action::requeue(
        plan.requeue_after.map_or(RESYNC, |d| d.min(RESYNC)),
    ))
}

/// Adds (`hold`) or removes [`MODEL_CACHE_IN_USE`], keeping every other finalizer; the
/// `resourceVersion` makes a concurrent change fail (and the reconcile retry) instead of
/// being overwritten.
async fn set_finalizer(
    api: &Api<ModelCache>,
    cache: &ModelCache,
    hold: bool,
    object: &str,
) -> Result<(), ModelCacheError> {
    let mut finalizers: Vec<String> = cache
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| f.as_str() != MODEL_CACHE_IN_USE)
        .cloned()
        .collect();
    if hold {
        finalizers.push(MODEL_CACHE_IN_USE.to_string());
    }
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": cache.metadata.resource_version,
    }});
    match api
        .patch(
            &cache.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if !hold && ErrorClass::of(&e) == ErrorClass::NotFound => Ok(()),
        Err(e) => Err(api_error("patch finalizers of", object.to_string())(e)),
    }
}

fn error_policy(cache: Arc<ModelCache>, error: &ModelCacheError, _: Arc<Integration>) -> Action {
    tracing::warn!(error = %error, category = error.category(), object = %cache.name_any(), "ModelCache reconcile failed");
    if error.is_transient() {
        Action::requeue(Duration::from_secs(5))
    } else {
        Action::await_change()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn md(namespace: &str, name: &str, model: &str, volume: Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}-{name}")},
            "spec": {"model": {"id": model, "storage": {"volumes": [volume]}}},
        }))
        .unwrap()
    }

    fn cache(namespace: &str, name: &str, model: &str) -> ModelCache {
        serde_json::from_value(json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"source": "huggingface", "modelId": model, "claimName": name},
        }))
        .unwrap()
    }

    #[test]
    fn users_are_the_deployments_of_the_namespace_that_name_the_cache_for_its_model() {
        let (store, mut writer) = reflector::store::<ModelDeployment>();
        let shared = json!({"name": "w", "purpose": "modelCache"});
        let own = json!({"name": "w", "purpose": "modelCache", "size": "1Gi"});
        for md in [
            md("team", "b", "org/m", shared.clone()),
            md("team", "a", "org/m", shared.clone()),
            md("other", "c", "org/m", shared.clone()),
            md("team", "d", "org/other", shared),
            // Its own cache `e-w`, but it serves another model now.
            md("team", "e", "org/new", own),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(md));
        }
        let name = shared_name("org/m");
        assert_eq!(users(&store, &cache("team", &name, "org/m")), ["a", "b"]);
        assert_eq!(
            users(&store, &cache("team", "e-w", "org/old")),
            Vec::<String>::new()
        );
        assert_eq!(users_where(&store, Some("other"), |_| true).len(), 1);
    }

    #[test]
    fn an_adapter_caches_users_are_the_deployments_of_that_adapter_on_that_model_cache() {
        let (store, mut writer) = reflector::store::<ModelDeployment>();
        let shared = json!({"name": "w", "purpose": "modelCache"});
        let with = |name: &str, model: &str, adapter: &str| {
            let mut md = md("team", name, model, shared.clone());
            md.spec.adapters =
                Some(serde_json::from_value(json!([{"name": "a", "source": adapter}])).unwrap());
            md
        };
        for md in [
            with("x", "org/m", "org/sql-lora"),
            with("y", "org/m", "hf://org/sql-lora"),
            with("z", "org/other", "org/sql-lora"),
            with("w", "org/m", "org/chat-lora"),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(md));
        }
        let name = adapters::cache_names(&with("x", "org/m", "org/sql-lora"))[0].clone();
        assert_eq!(
            users(&store, &cache("team", &name, "org/sql-lora")),
            ["x", "y"]
        );
        // The model cache still counts all its users.
        assert_eq!(
            users(&store, &cache("team", &shared_name("org/m"), "org/m")),
            ["w", "x", "y"]
        );
    }

    /// The shared cache name of a model id.
    fn shared_name(model: &str) -> String {
        storage::ModelCacheKey {
            source: airunway_api::v1alpha1::ModelSource::Huggingface,
            model_id: model.into(),
            revision: storage::DEFAULT_REVISION.into(),
        }
        .cache_name()
    }
}
