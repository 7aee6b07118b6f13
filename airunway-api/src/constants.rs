//! Names shared by every AI Runway component: API group, annotations, labels, finalizers, field
//! managers, condition types and reasons, event reasons and the spec's exact messages.
//!
//! Anything a user or a provider author can observe on an object is named here once, so the core,
//! the provider SDK and the tests agree on spelling.

/// The API group of both AI Runway kinds.
pub const GROUP: &str = "airunway.ai";
/// The API version of both AI Runway kinds.
pub const VERSION: &str = "v1alpha1";
/// `<group>/<version>`, the `apiVersion` of both kinds.
pub const API_VERSION: &str = "airunway.ai/v1alpha1";

/// Annotations AI Runway reads.
pub mod annotations {
    /// `"true"` stops every AI Runway controller from writing anything for this deployment.
    pub const RECONCILE_PAUSED: &str = "airunway.ai/reconcile-paused";
    /// On an upstream object: hash of the rendered desired state (drift vs. spec change).
    pub const SPEC_HASH: &str = "airunway.ai/spec-hash";
    /// On an upstream object: hash of the deployment's identity fields (recreate on change).
    pub const IDENTITY_HASH: &str = "airunway.ai/identity-hash";
    /// On an InferenceProviderConfig: the provider's display name (as the Go AI Runway writes
    /// it for its dashboard).
    pub const DISPLAY_NAME: &str = "airunway.ai/display-name";
    /// On an InferenceProviderConfig: the provider's documentation URL (`spec.documentation`).
    pub const DOCUMENTATION_URL: &str = "airunway.ai/documentation-url";
    /// On an autoscaler the core created (`ScaledObject`, `HorizontalPodAutoscaler`): hash of
    /// what it was rendered from (an unchanged hash means nothing to apply).
    pub const AUTOSCALING_INPUTS_HASH: &str = "airunway.ai/autoscaling-inputs-hash";
    /// On a `HorizontalPodAutoscaler` the core created: a JSON object from each External metric
    /// name to the PromQL query that metric stands for, for the metrics adapter's rules
    /// (docs/autoscaling.md).
    pub const AUTOSCALING_QUERIES: &str = "airunway.ai/autoscaling-queries";
    /// On a ModelDeployment: `"true"` asks for a preview. The core selects and validates as
    /// usual; the provider renders and checks the objects but applies nothing upstream, and
    /// writes them into the ConfigMap `<name>`[`super::dry_run::CONFIG_MAP_SUFFIX`]
    /// (docs/gitops.md, "Dry run in the cluster"). Removing it deploys for real.
    pub const DRY_RUN: &str = "airunway.ai/dry-run";

    /// Dynamo's intent mode (docs/providers/dynamo.md, "Intent mode").
    pub mod dynamo {
        /// On a ModelDeployment: the attempt token; a new value starts a new
        /// DynamoGraphDeploymentRequest (profiling again). Copied to the request.
        pub const ATTEMPT: &str = "airunway.ai/dynamo-attempt";
        /// On a DynamoGraphDeploymentRequest: the hash of the inputs it profiles.
        pub const INTENT_HASH: &str = "airunway.ai/dynamo-intent-hash";
    }

    /// The spec author (docs/security.md): who last created or changed a ModelDeployment's
    /// spec, recorded by the core's mutating webhook and held to the request's user by the
    /// `airunway-spec-author` ValidatingAdmissionPolicy (`deploy/components/upstream-access-check`).
    pub mod access {
        /// The username of the request that last created or changed the spec.
        pub const SPEC_AUTHOR: &str = "airunway.ai/spec-author";
        /// That request's groups, joined with [`GROUP_SEPARATOR`] (empty: none).
        pub const SPEC_AUTHOR_GROUPS: &str = "airunway.ai/spec-author-groups";
        /// What joins the groups in [`SPEC_AUTHOR_GROUPS`]; a group holding it cannot be
        /// recorded (the policy refuses the request).
        pub const GROUP_SEPARATOR: &str = ",";
    }

    /// Annotations of the core's runtime configuration support (docs/platform.md).
    pub mod runtime_config {
        /// On an object the core created for a deployment (a managed claim, the deployment's
        /// own ModelCache) and on the download Job of such a cache: the comma-separated keys
        /// of the labels propagated to it from the deployment, so a key no longer propagated
        /// is removed and the cache's Job gets the same labels.
        pub const PROPAGATED_LABELS: &str = "airunway.ai/propagated-labels";
    }
}

/// Labels AI Runway writes.
pub mod labels {
    /// Prefix of the deployment labels that are copied to upstream objects.
    pub const PROPAGATED_PREFIX: &str = "airunway.ai/";
    /// Set on every upstream object a provider creates.
    pub const MANAGED_BY: &str = "airunway.ai/managed-by";
    /// Value of [`MANAGED_BY`].
    pub const MANAGED_BY_VALUE: &str = "airunway";
    /// Set on upstream objects: the name of the owning ModelDeployment.
    pub const DEPLOYMENT: &str = "airunway.ai/deployment";
    /// On every object a provider applies: the provider that manages it (the identity the
    /// shipped admission policies check a provider's writes against).
    pub const PROVIDER: &str = "airunway.ai/provider";
    /// On the model server pods a provider creates: the name of the owning ModelDeployment.
    /// The core's InferencePool selects on it (docs/gateway.md), so every provider whose
    /// pods the gateway routes to writes it on its pod template.
    pub const MODEL_DEPLOYMENT: &str = "airunway.ai/model-deployment";
    /// On a model cache's claim, download Job and its Pod, ServiceAccount, Role and
    /// RoleBinding: the name of the `ModelCache`.
    pub const MODEL_CACHE: &str = "airunway.ai/model-cache";
    /// On a model cache: the first 16 hex digits of the sha256 of what it holds
    /// (`airunway_api::storage::ModelCacheKey::hash`), so the core finds a model's cache by label.
    pub const MODEL_CACHE_KEY: &str = "airunway.ai/model-cache-key";
    /// On an adapter cache the core creates: the shared model cache whose claim it downloads
    /// into (`kubectl get mc -l airunway.ai/adapter-of` lists the adapter caches).
    pub const ADAPTER_OF: &str = "airunway.ai/adapter-of";
    /// On a download Job (the Go AI Runway's label): [`JOB_TYPE_MODEL_DOWNLOAD`].
    pub const JOB_TYPE: &str = "airunway.ai/job-type";
    /// Value of [`JOB_TYPE`] on a model download Job.
    pub const JOB_TYPE_MODEL_DOWNLOAD: &str = "model-download";
}

/// Server-side apply field managers.
pub mod field_managers {
    /// The core controller: owns selection, validation and gateway status.
    pub const CORE: &str = "airunway-core";
    /// The core's webhook CA injector (owns `caBundle` of the webhook configurations).
    pub const CORE_CA_INJECTOR: &str = "airunway-core-ca-injector";
    /// The core's gateway integration: owns the InferencePools, endpoint picker objects and
    /// HTTPRoutes it applies (not the deployment's status, which is [`CORE`]'s).
    pub const CORE_GATEWAY: &str = "airunway-core-gateway";
    /// The core's model cache: owns the ModelCaches' status (all but `status.download`, the
    /// downloader's), their claims, download Jobs and the downloaders' identities.
    pub const CORE_MODEL_CACHE: &str = "airunway-core-model-cache";
    /// The core's autoscaling: owns the `ScaledObject` or `HorizontalPodAutoscaler` it applies
    /// for a deployment with `spec.scaling.autoscaling` (not the deployment's status, which is
    /// [`CORE`]'s).
    pub const CORE_AUTOSCALING: &str = "airunway-core-autoscaling";

    /// The field manager of provider `name`: `<name>-provider`.
    pub fn provider(name: &str) -> String {
        format!("{name}-provider")
    }
}

/// Finalizers.
pub mod finalizers {
    /// On a `ModelCache`: held by the core while a deployment uses the cache, so deleting it
    /// waits until none does (no deployment loses its weights).
    pub const MODEL_CACHE_IN_USE: &str = "airunway.ai/model-cache-in-use";
    /// The finalizer of provider `name`: `airunway.ai/<name>-provider`.
    pub fn provider(name: &str) -> String {
        format!("airunway.ai/{name}-provider")
    }
}

/// Condition types on a ModelDeployment and an InferenceProviderConfig.
pub mod condition_types {
    /// Core: spec validation result.
    pub const VALIDATED: &str = "Validated";
    /// Core: engine resolution result.
    pub const ENGINE_SELECTED: &str = "EngineSelected";
    /// Core: provider selection result.
    pub const PROVIDER_SELECTED: &str = "ProviderSelected";
    /// Core: whether the selected provider is alive (heartbeat and probe).
    pub const PROVIDER_HEALTHY: &str = "ProviderHealthy";
    /// Core: gateway route active.
    pub const GATEWAY_READY: &str = "GatewayReady";
    /// Provider: engine/mode compatibility check.
    pub const PROVIDER_COMPATIBLE: &str = "ProviderCompatible";
    /// Provider: upstream resource creation.
    pub const RESOURCE_CREATED: &str = "ResourceCreated";
    /// Provider: overall readiness, `True` only while the phase is `Running` (what
    /// `kubectl wait --for=condition=Ready` waits for).
    pub const READY: &str = "Ready";
    /// Provider: the upstream operator has not reported on the object's latest change for longer
    /// than `--stale-status-threshold` (spec §13.4); absent on a deployment that never was
    /// stale, `False` once it reports again (see `provider::staleness`).
    pub const STALE_STATUS: &str = "StaleStatus";
    /// Work for the current generation is under way (Kubernetes API conventions; kstatus reads
    /// it as `InProgress`). Written with `status.phase` by whoever owns the phase.
    pub const RECONCILING: &str = "Reconciling";
    /// The deployment cannot progress without a change (kstatus reads it as `Failed`). Written
    /// with `status.phase` by whoever owns the phase.
    pub const STALLED: &str = "Stalled";

    /// InferenceProviderConfig, written by the provider: its upstream CRD is installed and usable.
    pub const UPSTREAM_AVAILABLE: &str = "UpstreamAvailable";
    /// InferenceProviderConfig, written by the core: heartbeat fresh and probe answering.
    pub const AVAILABLE: &str = "Available";
    /// InferenceProviderConfig, written by the core: selection rules evaluate without errors.
    pub const SELECTION_RULES_VALID: &str = "SelectionRulesValid";
    /// ModelDeployment, written by the direct vLLM provider: the image resolved to a digest.
    pub const IMAGE_RESOLVED: &str = "ImageResolved";
    /// ModelDeployment, written by the direct vLLM provider: the image's signature checked.
    pub const IMAGE_VERIFIED: &str = "ImageVerified";
    /// ModelDeployment, written by the direct vLLM provider: a custom image is not vouched for.
    pub const UNSUPPORTED_IMAGE: &str = "UnsupportedImage";
    /// ModelDeployment, written by the direct vLLM provider: recipe provenance annotations read.
    pub const RECIPE_RESOLVED: &str = "RecipeResolved";
    /// ModelDeployment and ModelCache, written by the core: the claims exist and are bound (the
    /// Go AI Runway's type).
    pub const STORAGE_READY: &str = "StorageReady";
    /// ModelDeployment and ModelCache, written by the core: the model is on its cache (the Go AI
    /// Runway's type); while downloading, the message carries the progress.
    pub const MODEL_DOWNLOADED: &str = "ModelDownloaded";
    /// ModelDeployment, written by the core while its Hugging Face adapters are fetched through
    /// the shared model cache (docs/lora.md): `True` once every adapter cache is `Ready` (the
    /// message names them), else the download's progress per adapter
    /// ([`crate::lora::adapter_downloads_message`]); the reasons are `ModelDownloaded`'s.
    pub const ADAPTERS_DOWNLOADED: &str = "AdaptersDownloaded";

    /// ModelDeployment, written by the provider: the deployment serves, but not fully — some
    /// replicas are not ready, or an application is unhealthy while others serve. A condition,
    /// not a phase: the phase stays what the upstream state maps to (`Running` while it
    /// serves), so Go clients' phase values hold; kstatus reads it as abnormal-true and the
    /// Argo CD health check as `Degraded`.
    pub const DEGRADED: &str = "Degraded";
    /// ModelDeployment, written by the core with `spec.scaling.autoscaling`: the autoscaler
    /// exists and can read its metrics (from the autoscaler's own status).
    pub const SCALING_READY: &str = "ScalingReady";
    /// ModelDeployment, written by the core with `spec.scaling.autoscaling`: a metric is active
    /// (the deployment is scaled above its minimum, or woken from zero).
    pub const SCALING_ACTIVE: &str = "ScalingActive";

    /// ModelDeployment, written by the core: whether the runtime configuration the deployment
    /// names was found (True also when the implicit `default` does not exist: no defaults
    /// apply).
    pub const RUNTIME_CONFIG_RESOLVED: &str = "RuntimeConfigResolved";

    /// ModelDeployment, written by the core while at least one ModelDeploymentPolicy selects
    /// the deployment's namespace: whether the deployment keeps every rule (docs/policy.md).
    pub const POLICY_COMPLIANT: &str = "PolicyCompliant";

    /// ModelDeployment, written by the core while the deployment references a Secret
    /// (`spec.secrets.huggingFaceToken`, `spec.env[].valueFrom.secretKeyRef`): whether each
    /// exists in its namespace (checked by a metadata-only read; contents are never read).
    pub const SECRETS_FOUND: &str = "SecretsFound";

    /// Condition types the core owns on a ModelDeployment (server-side apply manager `airunway-core`).
    pub const CORE_OWNED: [&str; 13] = [
        RUNTIME_CONFIG_RESOLVED,
        POLICY_COMPLIANT,
        VALIDATED,
        ENGINE_SELECTED,
        PROVIDER_SELECTED,
        PROVIDER_HEALTHY,
        GATEWAY_READY,
        STORAGE_READY,
        MODEL_DOWNLOADED,
        ADAPTERS_DOWNLOADED,
        SCALING_READY,
        SCALING_ACTIVE,
        SECRETS_FOUND,
    ];
    /// Condition types a provider owns on a ModelDeployment (manager `<name>-provider`).
    pub const PROVIDER_OWNED: [&str; 4] = [PROVIDER_COMPATIBLE, RESOURCE_CREATED, READY, DEGRADED];
    /// Condition types that go with `status.phase` (and `status.observedGeneration`): the core
    /// writes them until a provider takes the deployment, then that provider does.
    pub const WITH_PHASE: [&str; 2] = [RECONCILING, STALLED];
}

/// Condition reasons.
pub mod reasons {
    /// Dynamo's intent mode (docs/providers/dynamo.md, "Intent mode").
    pub mod dynamo {
        /// `ResourceCreated=False`: the intent changed while Dynamo profiles or serves the
        /// request of the same attempt.
        pub const INTENT_LOCKED: &str = "IntentLocked";
        /// `ResourceCreated=False`: the cluster has no DynamoGraphDeploymentRequest API (the
        /// Go AI Runway's reason).
        pub const REQUEST_API_MISSING: &str = "DGDRUnavailable";
    }

    /// `Degraded=True`: some replicas serve, others are not ready.
    pub const REPLICAS_UNAVAILABLE: &str = "ReplicasUnavailable";
    /// `Degraded=True`: the serving application is unhealthy while replicas run (e.g. a Ray
    /// Serve application failed on a ready cluster).
    pub const APPLICATION_UNHEALTHY: &str = "ApplicationUnhealthy";
    /// `Degraded=False`: every replica asked for is ready, or none serves yet (`Ready` says why).
    pub const NOT_DEGRADED: &str = "NotDegraded";
    /// `SecretsFound=True`: every Secret the deployment references exists.
    pub const SECRETS_FOUND: &str = "SecretsFound";
    /// `SecretsFound=False`: a referenced Secret does not exist in the deployment's namespace.
    pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
    /// `StorageReady=True`: every claim is bound (the Go AI Runway's reason).
    pub const PVCS_BOUND: &str = "PVCsBound";
    /// `StorageReady=False`: a claim is not bound yet (the Go AI Runway's reason).
    pub const PVCS_PENDING: &str = "PVCsPending";
    /// `StorageReady=False`: a claim is missing, lost or not ours (the Go AI Runway's reason).
    pub const PVC_FAILED: &str = "PVCFailed";
    /// `ModelDownloaded=True` (the Go AI Runway's reason).
    pub const DOWNLOAD_COMPLETE: &str = "DownloadComplete";
    /// `ModelDownloaded=False` while the Job runs (the Go AI Runway's reason).
    pub const DOWNLOAD_IN_PROGRESS: &str = "DownloadInProgress";
    /// `ModelDownloaded=False`: the Job failed (the Go AI Runway's reason).
    pub const DOWNLOAD_FAILED: &str = "DownloadFailed";
    /// Validated=True.
    pub const VALIDATION_PASSED: &str = "ValidationPassed";
    /// Validated=False.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// EngineSelected/ProviderSelected=True from the spec.
    pub const EXPLICIT_SELECTION: &str = "ExplicitSelection";
    /// EngineSelected/ProviderSelected=True by the core's selection.
    pub const AUTO_SELECTED: &str = "AutoSelected";
    /// ProviderSelected=True, set by another selector (custom selector mechanism).
    pub const EXTERNALLY_SELECTED: &str = "ExternallySelected";
    /// No provider named and the selector is disabled (the Go AI Runway's reason).
    pub const NO_PROVIDER: &str = "NoProvider";
    /// Engine or provider selection found nothing (the Go AI Runway's reason; the message says
    /// why: no engine available, no healthy providers, or why each provider was rejected).
    pub const SELECTION_FAILED: &str = "SelectionFailed";
    /// ProviderSelected=False: selection waits for the spec to validate.
    pub const WAITING_FOR_VALIDATION: &str = "WaitingForValidation";
    /// ProviderSelected=False: selection waits for an engine.
    pub const WAITING_FOR_ENGINE: &str = "WaitingForEngine";
    /// ProviderHealthy=True.
    pub const PROVIDER_AVAILABLE: &str = "ProviderAvailable";
    /// ProviderHealthy=False: the provider stopped heart-beating or answering its probe.
    pub const PROVIDER_STALE: &str = "ProviderStale";
    /// ProviderHealthy=False: the provider reports itself not ready.
    pub const PROVIDER_NOT_READY: &str = "ProviderNotReady";
    /// ProviderHealthy=False: no InferenceProviderConfig exists for the named provider.
    pub const PROVIDER_NOT_REGISTERED: &str = "ProviderNotRegistered";

    /// ProviderCompatible=True.
    pub const COMPATIBILITY_VERIFIED: &str = "CompatibilityVerified";
    /// StaleStatus=True: the upstream operator is behind for longer than the threshold.
    pub const UPSTREAM_STATUS_STALE: &str = "UpstreamStatusStale";
    /// StaleStatus=False: the upstream operator reports on the object again.
    pub const UPSTREAM_STATUS_CURRENT: &str = "UpstreamStatusCurrent";
    /// ProviderCompatible=False: the provider cannot serve this configuration.
    pub const INCOMPATIBLE_CONFIGURATION: &str = "IncompatibleConfiguration";
    /// ProviderCompatible=False: the installed upstream CRD schema is not one the provider knows.
    pub const UNSUPPORTED_SCHEMA: &str = "UnsupportedSchema";
    /// ProviderCompatible=False / ResourceCreated=False: `provider.overrides` has a wrong type.
    pub const INVALID_OVERRIDES: &str = "InvalidOverrides";
    /// `ProviderCompatible=False`: a rendered object breaks the Pod Security policy.
    pub const POD_SECURITY_VIOLATION: &str = "PodSecurityViolation";
    /// ResourceCreated=True.
    pub const RESOURCE_CREATED: &str = "ResourceCreated";
    /// ResourceCreated=False: the upstream CRD is not installed.
    pub const UPSTREAM_CRD_NOT_INSTALLED: &str = "UpstreamCRDNotInstalled";
    /// ResourceCreated=False: the API server refused the upstream object.
    pub const APPLY_FAILED: &str = "ApplyFailed";
    /// ResourceCreated=False: the API server refused an upstream object because the installed
    /// schema does not declare a field the provider wrote (strict field validation; the Go AI
    /// Runway's reason). Nothing was changed; the message names the field.
    pub const INCOMPATIBLE_UPSTREAM: &str = "IncompatibleUpstream";
    /// ResourceCreated=False: the upstream object is being recreated (identity change).
    pub const RECREATING: &str = "Recreating";
    /// ResourceCreated=False and Ready=False: the deployment has the dry-run annotation; its
    /// render is in the preview ConfigMap and nothing is applied upstream.
    pub const DRY_RUN: &str = "DryRun";
    /// ResourceCreated=False and Ready=False: an object of the name the provider renders
    /// exists and belongs to someone else (the Go AI Runway's reason).
    pub const RESOURCE_CONFLICT: &str = "ResourceConflict";
    /// Ready=True.
    pub const DEPLOYMENT_READY: &str = "DeploymentReady";
    /// Ready=False while the upstream operator works (the Go AI Runway's reason; the message
    /// says what is awaited).
    pub const DEPLOYMENT_IN_PROGRESS: &str = "DeploymentInProgress";
    /// Ready=True on a `Running` deployment that asks for no replica (scaled to zero): settled
    /// as asked and ready to be scaled up (as Knative and KServe say of a service at zero); the
    /// message says no replica serves.
    pub const SCALED_TO_ZERO: &str = "ScaledToZero";
    /// Ready=False: the upstream reports an error.
    pub const DEPLOYMENT_FAILED: &str = "DeploymentFailed";
    /// Ready=False: the deployment cannot start (incompatible, schema, CRD missing).
    pub const NOT_DEPLOYED: &str = "NotDeployed";
    /// Reconciling=True before a provider took the deployment: the provider has yet to act.
    pub const WAITING_FOR_PROVIDER: &str = "WaitingForProvider";
    /// Stalled=False while work is in progress.
    pub const PROGRESSING: &str = "Progressing";
    /// Reconciling=False and Stalled=False: everything for this generation is done (`Running`).
    pub const RECONCILED: &str = "Reconciled";
    /// Reconciling=False while Stalled=True: nothing is in progress.
    pub const STALLED: &str = "Stalled";

    /// IPC UpstreamAvailable=True.
    pub const UPSTREAM_CRD_ESTABLISHED: &str = "UpstreamCRDEstablished";
    /// IPC UpstreamAvailable=False: the CRD exists but is not Established.
    pub const UPSTREAM_CRD_NOT_ESTABLISHED: &str = "UpstreamCRDNotEstablished";
    /// IPC UpstreamAvailable=False: the provider is shutting down.
    pub const SHUTTING_DOWN: &str = "ShuttingDown";
    /// IPC Available=True.
    pub const HEALTHY: &str = "Healthy";
    /// IPC Available=False: heartbeat older than the threshold.
    pub const HEARTBEAT_STALE: &str = "HeartbeatStale";
    /// IPC Available=False: the probe failed repeatedly.
    pub const PROBE_FAILED: &str = "ProbeFailed";
    /// IPC Available=False: the provider reports `ready: false`.
    pub const NOT_READY: &str = "NotReady";
    /// IPC UpstreamAvailable=False: no Deployment of the upstream operator exists (also the
    /// `ResourceCreated=False`/`Ready=False` reason of the deployments a provider holds then).
    pub const UPSTREAM_CONTROLLER_MISSING: &str = "UpstreamControllerMissing";
    /// `ImageResolved=False`, and `ResourceCreated=False`/`Ready=False` of a deployment the
    /// direct vLLM provider holds: its default image could not be resolved to a digest.
    pub const IMAGE_RESOLUTION_FAILED: &str = "ImageResolutionFailed";
    /// IPC UpstreamAvailable=False: the upstream operator's Deployment has no ready replica.
    pub const UPSTREAM_CONTROLLER_NOT_READY: &str = "UpstreamControllerNotReady";
    /// A provider's not-ready heartbeat: one of its watches keeps failing.
    pub const WATCH_FAILING: &str = "WatchFailing";
    /// A provider's not-ready heartbeat: its reconcile queue does not drain.
    pub const QUEUE_STALLED: &str = "QueueStalled";
    /// IPC SelectionRulesValid=True.
    pub const RULES_EVALUATED: &str = "RulesEvaluated";
    /// IPC SelectionRulesValid=False.
    pub const RULE_RUNTIME_ERROR: &str = "RuleRuntimeError";

    /// `GatewayReady` reasons (the core's gateway integration, docs/gateway.md).
    pub mod gateway {
        /// True: pool and route exist and the Gateway accepted the route.
        pub const CONFIGURED: &str = "GatewayConfigured";
        /// False: the inference extension or Gateway API CRDs are not served (only when
        /// `spec.gateway.enabled: true`).
        pub const CRDS_NOT_AVAILABLE: &str = "CRDsNotAvailable";
        /// False: no Gateway, or several and none chosen.
        pub const NO_GATEWAY: &str = "NoGateway";
        /// False: `spec.gateway.enabled: false`.
        pub const DISABLED: &str = "GatewayDisabled";
        /// False: the deployment is not `Running`; nothing routes to it.
        pub const NOT_RUNNING: &str = "DeploymentNotRunning";
        /// False: the route exists; its Gateway has not reported on it yet.
        pub const ROUTE_PENDING: &str = "RoutePending";
        /// False: the user deleted the route AI Runway created; it is not recreated.
        pub const ROUTE_DELETED: &str = "HTTPRouteDeleted";
        /// False: `spec.gateway.httpRouteRef` names a route that does not exist.
        pub const ROUTE_NOT_FOUND: &str = "HTTPRouteNotFound";
        /// False: the provider manages the pool and has not created it yet, or the pool
        /// `spec.gateway.poolRef` names does not exist.
        pub const POOL_NOT_FOUND: &str = "InferencePoolNotFound";
        /// False: no model name could be resolved.
        pub const NO_MODEL_NAME: &str = "ModelNameUnknown";
        /// False: the API server refused the pool.
        pub const POOL_FAILED: &str = "InferencePoolFailed";
        /// False: the API server refused an endpoint picker object.
        pub const EPP_FAILED: &str = "EPPFailed";
        /// False: the API server refused the route.
        pub const ROUTE_FAILED: &str = "HTTPRouteFailed";
        /// False: the Gateway's listeners could not be changed.
        pub const GATEWAY_PATCH_FAILED: &str = "GatewayPatchFailed";
        /// False: the API server refused the InferenceModelRewrite of the LoRA adapters.
        pub const MODEL_REWRITE_FAILED: &str = "InferenceModelRewriteFailed";
        /// False: `spec.gateway.poolRef` names an InferencePool AI Runway created for a
        /// deployment (not one the user manages).
        pub const POOL_REF_INVALID: &str = "InferencePoolRefInvalid";

        /// Reasons under which no gateway object of the deployment exists.
        pub const CLEAN: [&str; 4] = [DISABLED, NOT_RUNNING, CRDS_NOT_AVAILABLE, NO_GATEWAY];
    }

    /// `RuntimeConfigResolved` reasons (docs/platform.md).
    pub mod runtime_config {
        /// True: a `RuntimeConfig` in the deployment's namespace applies.
        pub const NAMESPACE_CONFIG: &str = "NamespaceRuntimeConfig";
        /// True: a `ClusterRuntimeConfig` applies.
        pub const CLUSTER_CONFIG: &str = "ClusterRuntimeConfig";
        /// True: no config named `default` exists (the name was not given): no defaults apply.
        pub const DEFAULT_NOT_FOUND: &str = "DefaultRuntimeConfigNotFound";
        /// False: the named config exists in neither scope; the deployment waits for it.
        pub const NOT_FOUND: &str = "RuntimeConfigNotFound";
    }

    /// `ProviderSelected` reasons of the upstream access check (`--check-upstream-access`,
    /// docs/security.md).
    pub mod access {
        /// False: the spec author may not create the provider's upstream resources in the
        /// deployment's namespace, or no spec author is recorded.
        pub const UPSTREAM_ACCESS_DENIED: &str = "UpstreamAccessDenied";
        /// False: the SubjectAccessReview could not be made (retried).
        pub const UPSTREAM_ACCESS_UNKNOWN: &str = "UpstreamAccessUnknown";
    }

    /// `PolicyCompliant` reasons (docs/policy.md).
    pub mod policy {
        /// True: every rule of every policy selecting the namespace holds.
        pub const COMPLIANT: &str = "PolicyCompliant";
        /// False: a rule does not hold; the message names the policy, the rule and the field.
        pub const VIOLATION: &str = "PolicyViolation";
    }

    /// `ScalingReady` and `ScalingActive` reasons the core writes itself (docs/autoscaling.md);
    /// otherwise the autoscaler's own reasons (KEDA's, the HorizontalPodAutoscaler's) are
    /// carried over.
    pub mod autoscaling {
        /// False: the autoscaler exists; its controller has not reported on it yet.
        pub const PENDING: &str = "AutoscalerPending";
        /// False: a named metric the deployment's engine does not export, or a pool metric
        /// without the gateway integration.
        pub const METRIC_UNAVAILABLE: &str = "MetricUnavailable";
        /// False: the engine is not decided yet, so the named metrics cannot be mapped.
        pub const WAITING_FOR_ENGINE: &str = "WaitingForEngine";
        /// False: an object of the autoscaler's name exists and another controller owns it.
        pub const CONFLICT: &str = "AutoscalerConflict";
        /// False: the API server refused the autoscaler.
        pub const APPLY_FAILED: &str = "AutoscalerApplyFailed";
        /// False: the autoscaler's metrics cannot be read, and KEDA scales to its fallback
        /// replica count (KEDA's `Fallback=True`).
        pub const FALLBACK: &str = "FallbackActive";
    }
}

/// The dry-run preview ([`annotations::DRY_RUN`]): the ConfigMap a provider writes the render
/// of a deployment into instead of applying it.
pub mod dry_run {
    /// The preview ConfigMap is named `<deployment name><CONFIG_MAP_SUFFIX>`.
    pub const CONFIG_MAP_SUFFIX: &str = "-preview";
    /// The key of the preview ConfigMap's `data` holding the render (a YAML stream, one
    /// document per object, in the order the provider applies them).
    pub const RENDER_KEY: &str = "render.yaml";
    /// The key of the preview ConfigMap's `data` naming the provider that rendered it.
    pub const PROVIDER_KEY: &str = "provider";
}

/// Event reasons (design doc §9).
pub mod event_reasons {
    /// Normal: the core selected a provider.
    pub const PROVIDER_SELECTED: &str = "ProviderSelected";
    /// Warning: the spec does not validate.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// Warning: no provider could be selected.
    pub const PROVIDER_SELECTION_FAILED: &str = "ProviderSelectionFailed";
    /// Warning: no engine could be selected.
    pub const ENGINE_SELECTION_FAILED: &str = "EngineSelectionFailed";
    /// Warning: the selected provider became stale.
    pub const PROVIDER_UNHEALTHY: &str = "ProviderUnhealthy";
    /// Normal: the selected provider recovered.
    pub const PROVIDER_RECOVERED: &str = "ProviderRecovered";
    /// Normal: a provider created its upstream resource.
    pub const RESOURCE_CREATED: &str = "ResourceCreated";
    /// Normal: a provider deleted its upstream resource to recreate it (identity change).
    pub const RESOURCE_RECREATED: &str = "ResourceRecreated";
    /// Normal: a provider deleted an upstream object of an old shape the deployment no longer
    /// needs (e.g. the aggregated Deployment after a switch to disaggregated serving).
    pub const RESOURCE_DELETED: &str = "ResourceDeleted";
    /// Warning: the upstream resource reports an error.
    pub const PROVIDER_ERROR: &str = "ProviderError";
    /// Warning: the API server refused an upstream object naming a field the installed schema
    /// does not declare (published when the deployment's status turns to it).
    pub const INCOMPATIBLE_UPSTREAM: &str = "IncompatibleUpstream";
    /// Warning: somebody edited the upstream resource; it is being restored.
    pub const DRIFT_DETECTED: &str = "DriftDetected";
    /// Warning: a Secret the deployment references does not exist in its namespace (one event
    /// per missing Secret, each naming it).
    pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
    /// Warning: cleanup timed out and the finalizer was removed.
    pub const FINALIZER_TIMEOUT: &str = "FinalizerTimeout";
    /// Normal: a provider rendered a deployment with the dry-run annotation into its preview
    /// ConfigMap instead of applying it (the message lists the objects' kinds and names).
    pub const DRY_RUN_RENDERED: &str = "DryRunRendered";
    /// Warning: the provider cannot serve this configuration.
    pub const PROVIDER_INCOMPATIBLE: &str = "ProviderIncompatible";
    /// Warning: `provider.overrides` has a key the provider does not know.
    pub const UNKNOWN_OVERRIDE: &str = "UnknownOverride";
    /// Warning: a setting is ignored by the engine or provider.
    pub const SETTING_IGNORED: &str = "SettingIgnored";
    /// Warning: a selection rule failed to evaluate.
    pub const SELECTION_RULE_ERROR: &str = "SelectionRuleError";
    /// Normal: the core applied a deployment's InferencePool and endpoint picker, or its
    /// HTTPRoute.
    pub const GATEWAY_RESOURCES_APPLIED: &str = "GatewayResourcesApplied";
    /// Normal: the core removed a deployment's gateway objects.
    pub const GATEWAY_RESOURCES_REMOVED: &str = "GatewayResourcesRemoved";
    /// Warning: someone deleted the HTTPRoute the core created; it is not recreated for this
    /// spec.
    pub const HTTP_ROUTE_DELETED: &str = "HTTPRouteDeleted";
    /// Normal: the core created a deployment's autoscaler (`ScaledObject` or
    /// `HorizontalPodAutoscaler`).
    pub const AUTOSCALER_CREATED: &str = "AutoscalerCreated";
    /// Normal: the core replaced a deployment's autoscaler by one of the other kind (KEDA
    /// installed or removed).
    pub const AUTOSCALER_REPLACED: &str = "AutoscalerReplaced";
    /// Normal: the core removed a deployment's autoscaler (`spec.scaling.autoscaling` removed).
    pub const AUTOSCALER_REMOVED: &str = "AutoscalerRemoved";
    /// Warning: the API server refused a deployment's autoscaler.
    pub const AUTOSCALER_FAILED: &str = "AutoscalerFailed";
    /// Normal: the deployment names no runtime configuration and no `default` exists in its
    /// namespace or the cluster (AIM's `DefaultRuntimeConfigNotFound`): no defaults apply.
    pub const DEFAULT_RUNTIME_CONFIG_NOT_FOUND: &str = "DefaultRuntimeConfigNotFound";
    /// Warning: the runtime configuration the deployment names does not exist.
    pub const RUNTIME_CONFIG_NOT_FOUND: &str = "RuntimeConfigNotFound";
    /// Normal: the deployment's effective runtime configuration changed (another source, or
    /// its defaults changed).
    pub const RUNTIME_CONFIG_CHANGED: &str = "RuntimeConfigChanged";

    /// Warning: the deployment breaks a ModelDeploymentPolicy rule (`PolicyCompliant` turned
    /// False or its message changed).
    pub const POLICY_VIOLATION: &str = "PolicyViolation";

    /// Warning: the API server holds an object the controller cannot decode (a free-form field
    /// nested past the decoder's depth limit, or a value of the wrong type where the schema
    /// leaves the field open). The object is skipped (its last decoded version, if any, is
    /// kept); the note names the field and the error (docs/reliability.md).
    pub const INVALID_OBJECT: &str = "InvalidObject";
}

/// Kubernetes `StatusCause` types the core's admission answers carry.
pub mod cause_types {
    /// A field's value is not allowed (Kubernetes' `metav1.CauseTypeFieldValueInvalid`).
    pub const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";
}

/// Event actions (the `action` of an `events.k8s.io/v1` Event: what the controller was doing).
pub mod event_actions {
    /// The core selected a provider.
    pub const SELECT_PROVIDER: &str = "SelectProvider";
    /// The core's provider health check.
    pub const PROVIDER_HEALTH: &str = "ProviderHealth";
    /// The core evaluated a provider's selection rules.
    pub const EVALUATE_RULES: &str = "EvaluateRules";
    /// The core's gateway integration applied an InferencePool and its endpoint picker.
    pub const APPLY_INFERENCE_POOL: &str = "ApplyInferencePool";
    /// The core's gateway integration applied (or found deleted) an HTTPRoute.
    pub const APPLY_HTTP_ROUTE: &str = "ApplyHTTPRoute";
    /// The core's gateway integration removed a deployment's gateway objects.
    pub const CLEAN_GATEWAY: &str = "CleanGateway";
    /// The core's gateway integration applied the InferenceModelRewrite of a deployment's LoRA
    /// adapters.
    pub const APPLY_MODEL_REWRITE: &str = "ApplyInferenceModelRewrite";
    /// The core's autoscaling applied or removed a deployment's autoscaler.
    pub const APPLY_AUTOSCALER: &str = "ApplyAutoscaler";
    /// The core checked that the Secrets a deployment references exist.
    pub const CHECK_SECRETS: &str = "CheckSecrets";
    /// A provider checked whether it can serve a deployment.
    pub const CHECK_COMPATIBILITY: &str = "CheckCompatibility";
    /// A provider reconciled a deployment (its upstream object's state, drift repair).
    pub const RECONCILE: &str = "Reconcile";
    /// A provider created an upstream object.
    pub const CREATE: &str = "Create";
    /// A provider deleted an upstream object the deployment no longer needs.
    pub const DELETE: &str = "Delete";
    /// A provider deleted an upstream object to create it again (an identity field changed).
    pub const RECREATE: &str = "Recreate";
    /// A provider rendered a deployment's upstream objects (its notes: unknown overrides).
    pub const RENDER: &str = "Render";
    /// A provider's finalizer cleaned up after a deployment.
    pub const CLEANUP: &str = "Cleanup";

    /// A watch decoded an object it then had to skip ([`super::event_reasons::INVALID_OBJECT`]).
    pub const DECODE: &str = "Decode";

    /// The core's runtime configuration resolution (docs/platform.md).
    pub mod runtime_config {
        /// The core resolved (or failed to resolve) a deployment's runtime configuration.
        pub const RESOLVE: &str = "ResolveRuntimeConfig";
    }
}

/// Trace span names and attribute keys (docs/observability.md "Traces"). Spans are exported
/// over OTLP only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
pub mod traces {
    /// The span of one reconcile of one deployment (the core's and each provider's).
    pub const RECONCILE_SPAN: &str = "airunway.reconcile";
    /// The core's decision: validation, engine and provider selection.
    pub const DECIDE_SPAN: &str = "airunway.decide";
    /// The core's server-side apply of a deployment's status.
    pub const APPLY_STATUS_SPAN: &str = "airunway.apply_status";
    /// A provider's server-side apply of one upstream object.
    pub const APPLY_SPAN: &str = "airunway.apply";
    /// The deployment's key, `<namespace>/<name>`.
    pub const DEPLOYMENT: &str = "airunway.deployment";
    /// The component that reconciles: [`CORE_COMPONENT`] or the provider's name.
    pub const COMPONENT: &str = "airunway.component";
    /// The engine decided (`vllm`, `sglang`, `trtllm`, `llamacpp`); absent when none is.
    pub const ENGINE: &str = "airunway.engine";
    /// Why that engine (`status.engine.selectedReason`).
    pub const ENGINE_REASON: &str = "airunway.engine.reason";
    /// The provider decided; absent when none is.
    pub const PROVIDER: &str = "airunway.provider";
    /// Why that provider (`status.provider.selectedReason`).
    pub const PROVIDER_REASON: &str = "airunway.provider.reason";
    /// The phase the core's decision leads to, while the core holds the phase.
    pub const PHASE: &str = "airunway.phase";
    /// The kind of the upstream object applied.
    pub const UPSTREAM_KIND: &str = "airunway.upstream.kind";
    /// The name of the upstream object applied.
    pub const UPSTREAM_NAME: &str = "airunway.upstream.name";
    /// [`WRITE_CREATE`] or [`WRITE_UPDATE`]: what the apply does to the upstream object.
    pub const UPSTREAM_WRITE: &str = "airunway.upstream.write";
    /// [`UPSTREAM_WRITE`] of an apply that creates the object.
    pub const WRITE_CREATE: &str = "create";
    /// [`UPSTREAM_WRITE`] of an apply that updates an existing object.
    pub const WRITE_UPDATE: &str = "update";
    /// [`COMPONENT`] of the core's spans.
    pub const CORE_COMPONENT: &str = "core";
    /// The W3C `traceparent` of the core's decision that last wrote the selection:
    /// `status.provider.traceparent`, written by the core only in a status apply it makes
    /// anyway; a provider's reconcile span links to it.
    pub const TRACEPARENT_FIELD: &str = "traceparent";
}

/// The environment variable the Hugging Face token reaches model servers as, and the key of the
/// token Secret it is read from (`secrets.huggingFaceToken` names the Secret).
pub const HF_TOKEN_ENV: &str = "HF_TOKEN";

/// Keys refused anywhere in `provider.overrides` (by the core's admission and by providers
/// that merge overrides into pod specs): they would let a user who may only create
/// ModelDeployments run pods with more privilege than the provider grants.
pub const ESCALATING_OVERRIDE_KEYS: [&str; 10] = [
    "securityContext",
    "serviceAccountName",
    "serviceAccount",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "automountServiceAccountToken",
    "nodeName",
    "priorityClassName",
    "runtimeClassName",
];

/// Admission ceilings (the Go AI Runway's limits), enforced by the CRD schema.
pub mod limits {
    /// Most CPU per worker.
    pub const MAX_CPU: &str = "512";
    /// Most memory per worker.
    pub const MAX_MEMORY: &str = "4Ti";
    /// Most GPUs per worker.
    pub const MAX_GPUS: i32 = 64;
    /// Most replicas of a worker pool.
    pub const MAX_REPLICAS: i32 = 32;
}

/// The spec's exact validation messages (design doc §8, spec `000` "Validation Webhook").
pub mod messages {
    /// vLLM without GPU.
    pub const VLLM_REQUIRES_GPU: &str = "vLLM engine requires GPU (set resources.gpu.count > 0)";
    /// SGLang without GPU.
    pub const SGLANG_REQUIRES_GPU: &str =
        "SGLang engine requires GPU (set resources.gpu.count > 0)";
    /// TensorRT-LLM without GPU.
    pub const TRTLLM_REQUIRES_GPU: &str =
        "TensorRT-LLM engine requires GPU (set resources.gpu.count > 0)";
    /// Disaggregated mode with `resources.gpu`.
    pub const DISAGGREGATED_GPU_CONFLICT: &str =
        "Cannot specify both resources.gpu and scaling.prefill/decode";
    /// Disaggregated mode without prefill or decode.
    pub const DISAGGREGATED_REQUIRES_COMPONENTS: &str =
        "Disaggregated mode requires scaling.prefill and scaling.decode";
    /// Disaggregated mode without prefill GPUs.
    pub const DISAGGREGATED_REQUIRES_PREFILL_GPU: &str =
        "Disaggregated mode requires scaling.prefill.gpu.count";
    /// Disaggregated mode without decode GPUs.
    pub const DISAGGREGATED_REQUIRES_DECODE_GPU: &str =
        "Disaggregated mode requires scaling.decode.gpu.count";
    /// No engine given and none can be chosen.
    pub const ENGINE_TYPE_REQUIRED: &str = "engine.type is required";
    /// Hugging Face source without a model id.
    pub const MODEL_ID_REQUIRED: &str = "model.id is required when source is huggingface";
    /// `spec.gateway.poolRef` beside `httpRouteRef`.
    pub const GATEWAY_POOL_REF_WITH_ROUTE_REF: &str = "poolRef and httpRouteRef cannot both be set: a route you manage names its own backend, so AI Runway would create nothing; keep poolRef (AI Runway creates the route to your pool) or httpRouteRef (your route, AI Runway creates the pool)";
    /// `spec.gateway.poolRef` or `gatewayRef` with the gateway disabled.
    pub const GATEWAY_REF_WHILE_DISABLED: &str = "is set but spec.gateway.enabled is false, so nothing is routed; remove it or set enabled to true";
    /// `spec.gateway.poolRef` that is not an object name.
    pub const GATEWAY_POOL_REF_NAME: &str = "must be the name of an InferencePool in the deployment's namespace (a DNS subdomain: lower-case letters, digits, '-' and '.')";
    /// `spec.gateway.gatewayRef.name` that is not an object name.
    pub const GATEWAY_REF_NAME: &str =
        "must be the name of a Gateway (a DNS subdomain: lower-case letters, digits, '-' and '.')";
    /// `spec.gateway.gatewayRef.namespace` that is not a namespace name.
    pub const GATEWAY_REF_NAMESPACE: &str = "must be a namespace name (a DNS label: lower-case letters, digits and '-', at most 63 characters); omit it for the deployment's namespace";
    /// Warning: servedName with a custom source.
    pub const SERVED_NAME_IGNORED: &str = "servedName is ignored for custom source";
    /// Selector disabled and no provider named.
    pub const SELECTOR_DISABLED: &str = "No provider specified and provider-selector not installed";
    /// `scaling.autoscaling.minReplicas` above `maxReplicas`.
    pub const AUTOSCALING_MIN_ABOVE_MAX: &str = "minReplicas must not exceed maxReplicas: lower scaling.autoscaling.minReplicas or raise maxReplicas";
    /// A metric's `target` that is not a positive decimal.
    pub const AUTOSCALING_TARGET_NOT_DECIMAL: &str = "target must be a positive decimal number such as 5 or 0.8 (digits, at most one point, no sign or exponent)";
    /// A metric's `activationTarget` that is not a non-negative decimal.
    pub const AUTOSCALING_ACTIVATION_NOT_DECIMAL: &str = "activationTarget must be a non-negative decimal number such as 0 or 2.5 (digits, at most one point, no sign or exponent)";
    /// `type: prometheus` without `query`.
    pub const AUTOSCALING_QUERY_REQUIRED: &str =
        "query is required for type prometheus: give the PromQL query to scale on";
    /// `query` on a named metric.
    pub const AUTOSCALING_QUERY_NOT_ALLOWED: &str = "query is only for type prometheus: a named metric's query comes from the deployment's engine (docs/autoscaling.md); remove query or use type prometheus";
    /// The same metric type twice.
    pub const AUTOSCALING_DUPLICATE_METRIC: &str =
        "each metric type may appear once: merge the entries of the same type";
    /// A pool metric with `spec.gateway.enabled: false`.
    pub const AUTOSCALING_POOL_NEEDS_GATEWAY: &str = "poolQueueDepth and poolKvCacheUsage come from the gateway's endpoint picker: remove spec.gateway.enabled: false, or use queueDepth or kvCacheUsage";
    /// A storage volume with neither `size` nor `claimName` that is not a model cache of a
    /// Hugging Face model (which uses the shared cache) (the Go AI Runway's text).
    pub const STORAGE_CLAIM_NAME_REQUIRED: &str =
        "claimName is required when size is not set (must reference a pre-existing PVC)";
    /// A managed volume (`size`) marked read-only (the Go AI Runway's text).
    pub const STORAGE_READ_ONLY_WITH_SIZE: &str =
        "readOnly must not be true when size is set (controller-created PVCs need write access)";
    /// A managed volume whose `claimName` is not the generated one (the Go AI Runway's text).
    pub fn storage_claim_name_with_size(generated: &str) -> String {
        format!("claimName must not be set when size is set (auto-generated as {generated:?})")
    }
    /// A managed volume's generated claim name over 253 characters (the Go AI Runway's text).
    pub fn storage_claim_name_too_long(claim: &str) -> String {
        format!(
            "auto-generated PVC claim name {claim:?} exceeds the 253-character Kubernetes name limit (got {} characters); use a shorter ModelDeployment or volume name",
            claim.len()
        )
    }
    /// A value outside an enumeration, as the API server (and the Go AI Runway) words it.
    pub fn unsupported_value(value: &str, supported: &[&str]) -> String {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        format!(
            "Unsupported value: {value:?}: supported values: {}",
            supported.join(", ")
        )
    }
    /// `accessMode` on a volume without `size` (the Go AI Runway's text).
    pub const STORAGE_ACCESS_MODE_WITHOUT_SIZE: &str =
        "accessMode is only applicable when size is set (controller-created PVCs)";
    /// `storageClassName` on a volume without `size` (the Go AI Runway's text).
    pub const STORAGE_CLASS_WITHOUT_SIZE: &str =
        "storageClassName is only applicable when size is set (controller-created PVCs)";
    /// Two volumes of one name (the Go AI Runway's text).
    pub const STORAGE_DUPLICATE_NAME: &str = "duplicate volume name";
    /// Two volumes at one mount path (the Go AI Runway's text).
    pub const STORAGE_DUPLICATE_MOUNT_PATH: &str = "duplicate mount path";
    /// Two volumes of one claim (the Go AI Runway's text).
    pub const STORAGE_DUPLICATE_CLAIM_NAME: &str = "duplicate claim name";
    /// A relative mount path (the Go AI Runway's text).
    pub const STORAGE_MOUNT_PATH_RELATIVE: &str =
        "mountPath must be an absolute path (start with /)";
    /// A `custom` volume without a mount path (the Go AI Runway's text).
    pub const STORAGE_MOUNT_PATH_REQUIRED: &str = "mountPath is required when purpose is custom";
    /// A mount path at or under a system path (the Go AI Runway's text).
    pub fn storage_system_path(system_path: &str) -> String {
        format!("mountPath must not overlap with system path {system_path}")
    }
    /// More than one volume of a cache purpose (the Go AI Runway's text).
    pub fn storage_one_per_purpose(purpose: &str) -> String {
        format!("at most one volume with purpose={purpose} is allowed")
    }
    /// The Go AI Runway's download Job name over 253 characters (its text).
    pub fn storage_download_job_name_too_long(job: &str) -> String {
        format!(
            "auto-generated download Job name {job:?} exceeds the 253-character Kubernetes name limit (got {} characters); use a shorter ModelDeployment name",
            job.len()
        )
    }
    /// An update that removes a managed volume (the Go AI Runway's text).
    pub fn storage_managed_volume_removed(volume: &str) -> String {
        format!(
            "managed storage volume {volume:?} cannot be removed (it has an associated PVC; delete the ModelDeployment to clean up managed storage)"
        )
    }
    /// An update that changes a managed volume (the Go AI Runway's text).
    pub const STORAGE_MANAGED_VOLUME_IMMUTABLE: &str = "managed storage volume is immutable once created (delete the ModelDeployment to change managed storage configuration)";
    /// Warning: a read-only compilation cache (the Go AI Runway's text).
    pub fn storage_read_only_compilation_cache(volume: &str) -> String {
        format!(
            "storage volume {volume:?} has purpose=compilationCache with readOnly=true; compilation cache requires write access"
        )
    }
    /// Warning: a read-only model cache of a Hugging Face model (the Go AI Runway's text).
    pub fn storage_read_only_model_cache(volume: &str) -> String {
        format!(
            "storage volume {volume:?} has purpose=modelCache with readOnly=true; model download will be skipped (ensure the PVC already contains the model data)"
        )
    }
    /// `spec.image` and `spec.engine.image` both set and different (the Go AI Runway's text).
    pub fn image_conflict(legacy: &str, engine: &str) -> String {
        format!(
            "spec.image {legacy:?} conflicts with spec.engine.image {engine:?}; remove spec.image or set both fields to the same value (spec.engine.image is preferred)"
        )
    }
    /// A flag set both in `engine.args` and `engine.extraArgs` (the Go AI Runway's text).
    pub fn launch_flag_conflict(key: &str, token: &str) -> String {
        format!(
            "launch flag {key:?} is set in both spec.engine.args and spec.engine.extraArgs ({token:?}); set it in exactly one place so the engine does not receive conflicting values"
        )
    }
    /// No ready provider at all.
    pub const NO_HEALTHY_PROVIDERS: &str = "No healthy providers available";

    /// `Provider '<name>' CRD not installed in cluster`.
    pub fn provider_crd_not_installed(name: &str) -> String {
        format!("Provider '{name}' CRD not installed in cluster")
    }
    /// Prefix of `status.message` when reconcile-time validation fails (the Go AI Runway's).
    pub const VALIDATION_FAILED_PREFIX: &str = "Validation failed: ";
    /// Prefix of `status.message` when engine selection fails (the Go AI Runway's).
    pub const ENGINE_SELECTION_FAILED_PREFIX: &str = "Engine selection failed: ";
    /// Prefix of `status.message` when provider selection fails (the Go AI Runway's).
    pub const PROVIDER_SELECTION_FAILED_PREFIX: &str = "Provider selection failed: ";
    /// Ready providers, none of which fits (the Go AI Runway's text; ours adds why, per provider).
    pub const NO_COMPATIBLE_PROVIDER: &str = "no compatible provider found for this configuration";
    /// No registered provider offers an engine the deployment can use (the Go AI Runway's text).
    pub const NO_ENGINES_AVAILABLE: &str = "no engines available from registered providers";
    /// No InferenceProviderConfig at all when an engine is to be chosen (the Go AI Runway's text).
    pub const NO_PROVIDERS_REGISTERED: &str =
        "no providers registered (InferenceProviderConfig resources not found)";

    /// The texts of ModelDeploymentPolicy refusals and `PolicyCompliant=False` (docs/policy.md
    /// lists them). Each names the policy object, the rule and the field.
    pub mod policy {
        /// Prefix of `status.message` while a policy holds a deployment.
        pub const HELD_PREFIX: &str = "Policy violation: ";
        /// CEL: `maxGpusPerDeployment` above `gpuQuota`.
        pub const MAX_ABOVE_QUOTA: &str =
            "maxGpusPerDeployment must not exceed gpuQuota: no deployment could use the difference";
        /// CEL: an `allowedImages` entry that does not start with its registry.
        pub const IMAGE_PREFIX_NOT_NORMALISED: &str = "allowedImages entries start with the registry (docker.io/vllm, not vllm): images are matched in normalised form";

        /// `ModelDeploymentPolicy "<policy>": `.
        fn head(policy: &str) -> String {
            format!("ModelDeploymentPolicy {policy:?}: ")
        }

        /// `allowedProviders`.
        pub fn provider_not_allowed(
            policy: &str,
            allowed: &str,
            field: &str,
            provider: &str,
        ) -> String {
            format!(
                "{}allowedProviders is {allowed}; {field} is {provider:?}",
                head(policy)
            )
        }
        /// `allowedEngines`.
        pub fn engine_not_allowed(
            policy: &str,
            allowed: &str,
            field: &str,
            engine: &str,
        ) -> String {
            format!(
                "{}allowedEngines is {allowed}; {field} is {engine:?}",
                head(policy)
            )
        }
        /// `allowedImages`.
        pub fn image_not_allowed(
            policy: &str,
            allowed: &str,
            field: &str,
            image: &str,
            normalised: &str,
        ) -> String {
            format!(
                "{}allowedImages is {allowed}; {field} is {image:?} ({normalised})",
                head(policy)
            )
        }
        /// `allowedOverridePaths`.
        pub fn override_not_allowed(policy: &str, allowed: &str, path: &str) -> String {
            format!(
                "{}allowedOverridePaths is {allowed}; {path} is not among them",
                head(policy)
            )
        }
        /// `maxGpusPerDeployment`.
        pub fn too_many_gpus(policy: &str, max: i64, formula: &str, asked: i64) -> String {
            format!(
                "{}maxGpusPerDeployment is {max}; {formula} asks for {asked}",
                head(policy)
            )
        }
        /// `gpuQuota` at admission: the ledger's other entries and this deployment.
        pub fn quota_exceeded(
            policy: &str,
            namespace: &str,
            quota: i64,
            reserved: i64,
            formula: &str,
            asked: i64,
        ) -> String {
            format!(
                "{}gpuQuota of namespace {namespace:?} is {quota}; {reserved} are reserved by other deployments and {formula} asks for {asked}",
                head(policy)
            )
        }
        /// `gpuQuota` at reconcile time: deployments created earlier keep their GPUs.
        pub fn quota_exceeded_by_order(
            policy: &str,
            namespace: &str,
            quota: i64,
            earlier: i64,
            formula: &str,
            asked: i64,
        ) -> String {
            format!(
                "{}gpuQuota of namespace {namespace:?} is {quota}; {earlier} are taken by deployments created earlier and {formula} asks for {asked}",
                head(policy)
            )
        }
        /// The ledger kept changing under the webhook.
        pub fn ledger_busy(namespace: &str, attempts: usize) -> String {
            format!(
                "the GPU ledger of namespace {namespace:?} changed under {attempts} attempts in a row (many concurrent changes); try again"
            )
        }
        /// The ledger could not be read or written.
        pub fn ledger_unavailable(namespace: &str, error: &str) -> String {
            format!(
                "the GPU ledger of namespace {namespace:?} could not be read or written ({error}); try again"
            )
        }
        /// `PolicyCompliant=True`.
        pub fn compliant(policies: usize) -> String {
            format!(
                "The deployment keeps every rule of the {policies} ModelDeploymentPolicy objects selecting its namespace"
            )
        }
    }
}
