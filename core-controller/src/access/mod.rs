//! The upstream access check (`--check-upstream-access`, docs/security.md): once a provider is
//! decided, the core asks the API server with a `SubjectAccessReview` whether the deployment's
//! spec author ([`author`]) may `create` each resource the provider's registration lists
//! (`spec.upstreamResources`) in the deployment's namespace. If not, the provider is not
//! selected (`ProviderSelected=False`, reason `UpstreamAccessDenied`, the missing permission
//! named), so the provider never deploys it.
//!
//! Answers are cached by (user, groups, namespace, group, resource) for a bounded time (the
//! `--upstream-access-cache-ttl`): a reconcile within it makes no request; a new spec author is
//! a new key; a permission granted or taken away is seen once the entry expires (a denied
//! deployment is looked at again after that time).

pub mod author;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use airunway_api::constants::{annotations, field_managers, reasons};
use airunway_api::managed_fields::OwnedFields;
use airunway_api::v1alpha1::{InferenceProviderConfig, ModelDeployment, UpstreamResource};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

use crate::selection::ProviderDecision;
use crate::status::CoreDecision;
use author::Author;

/// Most cached answers; past it, expired entries go, then all of them.
const MAX_CACHED: usize = 16_384;

/// A failure of the check itself (the deployment is retried, its status left as it is).
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The SubjectAccessReview could not be made.
    #[error("asking whether {user} may create {resource} in namespace {namespace}: {source}")]
    Review {
        /// The spec author.
        user: String,
        /// `<resource>.<group>`.
        resource: String,
        /// The deployment's namespace.
        namespace: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
}

impl AccessError {
    /// A short, static label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            AccessError::Review { .. } => "access_review",
        }
    }
}

/// What the check found for one deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The author may create every resource (or there is nothing to check).
    Allowed,
    /// Not selected: the reason of `ProviderSelected=False` and its message.
    Denied {
        /// `UpstreamAccessDenied`.
        reason: &'static str,
        /// What is missing and how to fix it.
        message: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    author: Author,
    namespace: String,
    resource: UpstreamResource,
}

/// The check with its cache of answers.
pub struct Check {
    client: Client,
    ttl: Duration,
    cache: Mutex<HashMap<Key, (Instant, bool)>>,
    reviews: std::sync::atomic::AtomicU64,
}

impl Check {
    /// A check asking through `client`, caching each answer for `ttl`.
    pub fn new(client: Client, ttl: Duration) -> Check {
        Check {
            client,
            ttl,
            cache: Mutex::new(HashMap::new()),
            reviews: Default::default(),
        }
    }

    /// How long an answer is kept (and when a denied deployment is looked at again).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// SubjectAccessReviews made so far.
    pub fn reviews(&self) -> u64 {
        self.reviews.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Replaces a decided provider that `md`'s spec author may not use with
    /// [`ProviderDecision::AccessDenied`] (and no provider availability). A provider kept from
    /// another selector's choice is not the core's to take back and is left alone.
    pub async fn gate(
        &self,
        md: &ModelDeployment,
        providers: &[InferenceProviderConfig],
        decision: &mut CoreDecision,
    ) -> Result<(), AccessError> {
        let Some(provider) = checked_provider(md, decision.provider.as_ref()) else {
            return Ok(());
        };
        let verdict = self.verdict(md, &provider, providers).await?;
        if let Verdict::Denied { reason, message } = verdict {
            decision.provider = Some(ProviderDecision::AccessDenied {
                provider,
                reason,
                message,
            });
            decision.provider_availability = None;
        }
        Ok(())
    }

    async fn verdict(
        &self,
        md: &ModelDeployment,
        provider: &str,
        providers: &[InferenceProviderConfig],
    ) -> Result<Verdict, AccessError> {
        let namespace = md.namespace().unwrap_or_default();
        let resources = match required_resources(provider, providers) {
            Ok(resources) => resources,
            Err(message) => return Ok(denied(message)),
        };
        let Some(author) = author::of(md) else {
            return Ok(denied(format!(
                "Provider {provider} not selected: no spec author is recorded (annotation {} is missing), so the upstream access check cannot tell who asks for {}; the core's mutating webhook records it when the spec is created or changed: have the deployment's owner change its spec while the webhook runs (docs/security.md)",
                annotations::access::SPEC_AUTHOR,
                list(&resources)
            )));
        };
        let mut missing = Vec::new();
        for resource in &resources {
            if !self.allowed(&author, &namespace, resource).await? {
                missing.push(resource.clone());
            }
        }
        Ok(if missing.is_empty() {
            Verdict::Allowed
        } else {
            denied(denial_message(provider, &author, &namespace, &missing))
        })
    }

    async fn allowed(
        &self,
        author: &Author,
        namespace: &str,
        resource: &UpstreamResource,
    ) -> Result<bool, AccessError> {
        let key = Key {
            author: author.clone(),
            namespace: namespace.to_string(),
            resource: resource.clone(),
        };
        if let Some(allowed) = self.cached(&key) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec: review_spec(author, namespace, resource),
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        self.reviews
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| AccessError::Review {
                user: author.user.clone(),
                resource: resource.qualified(),
                namespace: namespace.to_string(),
                source,
            })?;
        let allowed = answer.status.is_some_and(|s| s.allowed);
        self.remember(key, allowed);
        Ok(allowed)
    }

    fn cached(&self, key: &Key) -> Option<bool> {
        let cache = self.cache.lock().ok()?;
        let (at, allowed) = cache.get(key)?;
        (at.elapsed() < self.ttl).then_some(*allowed)
    }

    fn remember(&self, key: Key, allowed: bool) {
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        if cache.len() >= MAX_CACHED {
            let ttl = self.ttl;
            cache.retain(|_, (at, _)| at.elapsed() < ttl);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now(), allowed));
    }
}

fn denied(message: String) -> Verdict {
    Verdict::Denied {
        reason: reasons::access::UPSTREAM_ACCESS_DENIED,
        message,
    }
}

/// The provider the check applies to (pure): one named in the spec or selected by the rules
/// now, or kept from the core's own earlier choice; not one another selector set.
pub fn checked_provider(
    md: &ModelDeployment,
    decision: Option<&ProviderDecision>,
) -> Option<String> {
    match decision? {
        ProviderDecision::Explicit { provider } | ProviderDecision::Selected { provider, .. } => {
            Some(provider.clone())
        }
        ProviderDecision::Kept { provider }
            if OwnedFields::of(&md.metadata, field_managers::CORE)
                .owns(&["status", "provider", "name"]) =>
        {
            Some(provider.clone())
        }
        _ => None,
    }
}

/// The resources `provider`'s registration says it creates (pure), or why they are not known.
pub fn required_resources(
    provider: &str,
    providers: &[InferenceProviderConfig],
) -> Result<Vec<UpstreamResource>, String> {
    let Some(registration) = providers.iter().find(|p| p.name_any() == provider) else {
        return Err(format!(
            "Provider {provider} not selected: it is not registered (no InferenceProviderConfig named {provider}), so the upstream resources it would create are not known to the upstream access check"
        ));
    };
    match registration.spec.upstream_resources.as_deref() {
        Some(resources) if !resources.is_empty() => Ok(resources.to_vec()),
        _ => Err(format!(
            "Provider {provider} not selected: its registration (InferenceProviderConfig {provider}) lists no spec.upstreamResources, so the upstream access check cannot tell what it would create; upgrade the provider to an SDK that declares them, or have an administrator add them"
        )),
    }
}

/// The `SubjectAccessReview` for `author` creating `resource` in `namespace` (pure).
pub fn review_spec(
    author: &Author,
    namespace: &str,
    resource: &UpstreamResource,
) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        user: Some(author.user.clone()),
        groups: Some(author.groups.clone()),
        resource_attributes: Some(ResourceAttributes {
            namespace: Some(namespace.to_string()),
            verb: Some("create".to_string()),
            group: Some(resource.group.clone()),
            resource: Some(resource.resource.clone()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn list(resources: &[UpstreamResource]) -> String {
    resources
        .iter()
        .map(UpstreamResource::qualified)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `ProviderSelected`'s message for a denial (pure): the permission missing and the fix.
pub fn denial_message(
    provider: &str,
    author: &Author,
    namespace: &str,
    missing: &[UpstreamResource],
) -> String {
    let what = list(missing);
    format!(
        "Provider {provider} not selected: user \"{}\" may not create {what} in namespace \"{namespace}\" (the spec author, {}); grant the user or one of their groups \"create\" on {what} in \"{namespace}\" (a Role and RoleBinding), or have a user who may change the spec",
        author.user,
        annotations::access::SPEC_AUTHOR
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ipc(name: &str, resources: serde_json::Value) -> InferenceProviderConfig {
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig",
            "metadata": {"name": name}, "spec": {"upstreamResources": resources}}),
        )
        .unwrap()
    }

    fn alice() -> Author {
        Author {
            user: "alice".into(),
            groups: vec!["team-a".into(), "system:authenticated".into()],
        }
    }

    #[test]
    fn the_denial_names_the_user_the_resource_the_namespace_and_the_fix() {
        let ray = UpstreamResource {
            group: "ray.io".into(),
            resource: "rayservices".into(),
        };
        assert_eq!(
            denial_message("kuberay", &alice(), "team-a", &[ray]),
            "Provider kuberay not selected: user \"alice\" may not create rayservices.ray.io in namespace \"team-a\" (the spec author, airunway.ai/spec-author); grant the user or one of their groups \"create\" on rayservices.ray.io in \"team-a\" (a Role and RoleBinding), or have a user who may change the spec"
        );
    }

    #[test]
    fn the_review_asks_for_create_as_the_author() {
        let spec = review_spec(
            &alice(),
            "team-a",
            &UpstreamResource {
                group: String::new(),
                resource: "services".into(),
            },
        );
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            json!({"user": "alice", "groups": ["team-a", "system:authenticated"],
                   "resourceAttributes": {"namespace": "team-a", "verb": "create", "group": "", "resource": "services"}})
        );
    }

    #[test]
    fn resources_come_from_the_registration() {
        let providers = [
            ipc(
                "vllm",
                json!([{"group": "apps", "resource": "deployments"}, {"resource": "services"}]),
            ),
            ipc("old", json!([])),
        ];
        assert_eq!(
            required_resources("vllm", &providers)
                .unwrap()
                .iter()
                .map(UpstreamResource::qualified)
                .collect::<Vec<_>>(),
            ["deployments.apps", "services"]
        );
        assert!(
            required_resources("old", &providers)
                .unwrap_err()
                .contains("lists no spec.upstreamResources")
        );
        assert!(
            required_resources("kaito", &providers)
                .unwrap_err()
                .contains("it is not registered")
        );
    }

    #[test]
    fn a_denial_selects_no_provider_and_holds_the_deployment_pending() {
        use airunway_api::constants::condition_types;
        use airunway_api::v1alpha1::{ConditionStatus, Phase};
        let md: ModelDeployment = serde_json::from_value(json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "team-a", "generation": 1},
            "spec": {"model": {"id": "a/b"}, "engine": {"type": "vllm"}, "resources": {"gpu": {"count": 1}}, "provider": {"name": "vllm"}}}))
        .unwrap();
        let mut decision =
            crate::status::decide(&md, &[], true, &crate::selection::RuleSet::default());
        assert_eq!(
            checked_provider(&md, decision.provider.as_ref()),
            Some("vllm".into())
        );
        let message = "Provider vllm not selected: user \"alice\" may not create deployments.apps"
            .to_string();
        decision.provider = Some(ProviderDecision::AccessDenied {
            provider: "vllm".into(),
            reason: reasons::access::UPSTREAM_ACCESS_DENIED,
            message: message.clone(),
        });
        decision.provider_availability = None;
        let desired = crate::status::desired_status(&md, &decision);
        assert_eq!(desired.provider, None, "status.provider.name is not set");
        let selected = desired
            .conditions
            .iter()
            .find(|c| c.type_ == condition_types::PROVIDER_SELECTED)
            .unwrap();
        assert_eq!(selected.status, ConditionStatus::False);
        assert_eq!(selected.reason, "UpstreamAccessDenied");
        assert_eq!(selected.message, message);
        assert!(
            !desired
                .conditions
                .iter()
                .any(|c| c.type_ == condition_types::PROVIDER_HEALTHY)
        );
        assert_eq!(desired.phase, Some((Phase::Pending, message)));
    }

    #[tokio::test]
    async fn answers_are_kept_for_the_ttl_per_author_namespace_and_resource() {
        // A client that is never used: the cache alone is tested here (the reviews themselves
        // run against the real API server in e2e/tests/access.rs).
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let check = Check::new(client, Duration::from_millis(200));
        let key = |user: &str, namespace: &str| Key {
            author: Author {
                user: user.into(),
                groups: vec!["team-a".into()],
            },
            namespace: namespace.into(),
            resource: UpstreamResource {
                group: "ray.io".into(),
                resource: "rayservices".into(),
            },
        };
        assert_eq!(check.cached(&key("alice", "a")), None);
        check.remember(key("alice", "a"), false);
        check.remember(key("bob", "a"), true);
        assert_eq!(check.cached(&key("alice", "a")), Some(false));
        assert_eq!(check.cached(&key("bob", "a")), Some(true));
        assert_eq!(check.cached(&key("alice", "b")), None);
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(check.cached(&key("alice", "a")), None, "expired");
        assert_eq!(check.reviews(), 0);
    }

    #[test]
    fn only_the_cores_own_choices_are_checked() {
        let md: ModelDeployment = serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "a"}, "spec": {"model": {"id": "a/b"}}}),
        )
        .unwrap();
        let explicit = ProviderDecision::Explicit {
            provider: "vllm".into(),
        };
        assert_eq!(checked_provider(&md, Some(&explicit)), Some("vllm".into()));
        // Kept from a choice no manager of the core's made: another selector's, not checked.
        let kept = ProviderDecision::Kept {
            provider: "vllm".into(),
        };
        assert_eq!(checked_provider(&md, Some(&kept)), None);
        assert_eq!(
            checked_provider(&md, Some(&ProviderDecision::NoHealthyProviders)),
            None
        );
        assert_eq!(checked_provider(&md, None), None);
    }
}
