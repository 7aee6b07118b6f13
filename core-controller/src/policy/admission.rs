//! The validating webhook's policy check: every rule of every policy selecting the namespace,
//! on the deployment with its runtime configuration applied, then the GPU quota against the
//! namespace's ledger. The ledger is read, checked and written with the read
//! `resourceVersion`; on a conflict (another replica or request wrote in between) it is read
//! again, at most [`MAX_ATTEMPTS`] times. A dry run checks but never writes.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use airunway_api::constants::{labels, messages::policy as messages};
use airunway_api::kube_error::ErrorClass;
use airunway_api::policy::{self, Subject, Violation};
use airunway_api::v1alpha1::ModelDeployment;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube::core::DynamicObject;
use kube::core::ObjectMeta;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use super::Policies;
use super::ledger::{self, Ledger};
use crate::validation::FieldError;
use crate::webhook::admission::deny;

/// Reads of the ledger before the webhook gives up and asks the client to try again. A
/// request loses a round only to a write that succeeded, and once the quota is full nothing is
/// written, so with a quota of q a request loses at most q rounds to creates.
pub const MAX_ATTEMPTS: usize = 12;

/// The time the webhook spends on the ledger at most (the webhook's timeout is 5 s).
const LEDGER_DEADLINE: Duration = Duration::from_secs(3);

fn parse(object: Option<&DynamicObject>) -> Option<ModelDeployment> {
    serde_json::to_value(object?)
        .and_then(serde_json::from_value)
        .ok()
}

fn as_errors(violations: &[Violation]) -> Vec<FieldError> {
    violations
        .iter()
        .map(|v| FieldError {
            field: v.field.clone(),
            message: v.message.clone(),
        })
        .collect()
}

/// A refusal that is not the object's fault: try again.
fn try_again(response: AdmissionResponse, message: String) -> AdmissionResponse {
    let mut response = response.deny(message);
    response.result.code = 429;
    response.result.reason = "TooManyRequests".to_string();
    response
}

/// Checks an admitted ModelDeployment create or update against the policies (`response` is
/// the answer of the other checks; a refusal stays as it is).
pub async fn check(
    policies: &Policies,
    request: &AdmissionRequest<DynamicObject>,
    response: AdmissionResponse,
) -> AdmissionResponse {
    if !response.allowed
        || !matches!(request.operation, Operation::Create | Operation::Update)
        || policies.policies.is_empty()
    {
        return response;
    }
    let Some(object) = request.object.as_ref() else {
        return response;
    };
    // Metadata-only updates are never blocked (as in the other checks).
    if request.operation == Operation::Update
        && request
            .old_object
            .as_ref()
            .is_some_and(|old| old.data.get("spec") == object.data.get("spec"))
    {
        return response;
    }
    let namespace = request.namespace.clone().unwrap_or_default();
    let selecting = policies.selecting(&namespace);
    if selecting.is_empty() {
        return response;
    }
    let Some(md) = parse(Some(object)) else {
        return response;
    };
    let name = md.metadata.name.clone().unwrap_or_default();
    let effective = policies.effective(&md);
    let subject = Subject::of_spec(&effective.spec);
    let violations: Vec<Violation> = selecting
        .iter()
        .flat_map(|p| policy::check_rules(p, &subject))
        .collect();
    if !violations.is_empty() {
        return deny(response, "ModelDeployment", &name, &as_errors(&violations));
    }
    let quotas: Vec<_> = selecting
        .iter()
        .filter(|p| p.spec.gpu_quota.is_some())
        .collect();
    if quotas.is_empty() {
        return response;
    }
    let demand = policy::gpu_demand(&effective.spec).total;
    if request.operation == Operation::Update {
        let old = parse(request.old_object.as_ref())
            .map(|old| policy::gpu_demand(&policies.effective(&old).spec).total);
        // Unchanged: nothing to reserve. Lower: never refused (the ledger follows via the
        // leader's sync, so a smaller deployment is not held up by a busy ledger).
        if old.is_some_and(|old| demand <= old) {
            return response;
        }
    }
    let uid = md.metadata.uid.clone().unwrap_or_default();
    let outcome = tokio::time::timeout(
        LEDGER_DEADLINE,
        reserve(
            policies,
            &Ask {
                namespace: &namespace,
                name: &name,
                uid: &uid,
                demand,
                create: request.operation == Operation::Create,
                dry_run: request.dry_run,
            },
            |reserved| {
                quotas
                    .iter()
                    .filter_map(|p| {
                        policy::quota_at_admission(p, &namespace, reserved, &effective.spec)
                    })
                    .collect()
            },
        ),
    )
    .await;
    match outcome {
        Ok(Reservation::Reserved) => response,
        Ok(Reservation::OverQuota(violations)) => {
            deny(response, "ModelDeployment", &name, &as_errors(&violations))
        }
        Ok(Reservation::Busy) => {
            try_again(response, messages::ledger_busy(&namespace, MAX_ATTEMPTS))
        }
        Ok(Reservation::Failed(error)) => {
            try_again(response, messages::ledger_unavailable(&namespace, &error))
        }
        Err(_) => try_again(
            response,
            messages::ledger_unavailable(&namespace, "timed out"),
        ),
    }
}

/// What the ledger said.
#[derive(Debug)]
enum Reservation {
    /// Reserved (or, in a dry run, would fit).
    Reserved,
    /// Over a quota.
    OverQuota(Vec<Violation>),
    /// Conflicts on every attempt.
    Busy,
    /// The API server refused.
    Failed(String),
}

/// A short random pause before the next attempt, growing with the attempt.
fn backoff(attempt: usize) -> Duration {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let base = 5 * (attempt as u64 + 1);
    Duration::from_millis(base + random % (base * 2))
}

/// The ledger ConfigMap for `namespace` holding `ledger`.
fn ledger_configmap(policies: &Policies, namespace: &str, ledger: &Ledger) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(ledger::configmap_name(namespace)),
            namespace: Some(policies.ledger_namespace.clone()),
            labels: Some(BTreeMap::from([
                (ledger::LEDGER_OF_LABEL.to_string(), namespace.to_string()),
                (
                    labels::MANAGED_BY.to_string(),
                    labels::MANAGED_BY_VALUE.to_string(),
                ),
            ])),
            ..Default::default()
        },
        data: Some(ledger.to_data()),
        ..Default::default()
    }
}

/// The namespace's deployments' demands, read live from the API server: the first entries of a
/// ledger the webhook creates.
async fn seed(policies: &Policies, namespace: &str, name: &str) -> Result<Ledger, kube::Error> {
    let api: Api<ModelDeployment> = Api::namespaced(policies.client.clone(), namespace);
    let now = Timestamp::now();
    let mut ledger = Ledger::default();
    for md in api.list(&ListParams::default()).await?.items {
        if md.metadata.name.as_deref() == Some(name) {
            continue;
        }
        let gpus = policy::gpu_demand(&policies.effective(&md).spec).total;
        ledger.reserve(
            md.metadata.name.as_deref().unwrap_or_default(),
            md.metadata.uid.as_deref().unwrap_or_default(),
            gpus,
            now,
        );
    }
    Ok(ledger)
}

/// What one admission request asks of the ledger.
struct Ask<'a> {
    namespace: &'a str,
    name: &'a str,
    uid: &'a str,
    demand: i64,
    create: bool,
    dry_run: bool,
}

/// Read, check, write with the read `resourceVersion`; again on a conflict.
async fn reserve(
    policies: &Policies,
    ask: &Ask<'_>,
    over_quota: impl Fn(i64) -> Vec<Violation>,
) -> Reservation {
    let Ask {
        namespace,
        name,
        uid,
        demand,
        create,
        dry_run,
    } = *ask;
    let api: Api<ConfigMap> = Api::namespaced(policies.client.clone(), &policies.ledger_namespace);
    let ledger_name = ledger::configmap_name(namespace);
    for attempt in 0..MAX_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        let (mut ledger, existing) = match api.get_opt(&ledger_name).await {
            Ok(Some(configmap)) => (
                Ledger::from_data(&configmap.data.clone().unwrap_or_default()),
                Some(configmap),
            ),
            // No ledger yet: seeded from the namespace's deployments, then created (a
            // concurrent creator makes ours fail with AlreadyExists: read again).
            Ok(None) => match seed(policies, namespace, name).await {
                Ok(ledger) => (ledger, None),
                Err(e) => return Reservation::Failed(e.to_string()),
            },
            Err(e) => return Reservation::Failed(e.to_string()),
        };
        let violations = over_quota(ledger.reserved_by_others(name));
        if !violations.is_empty() {
            return Reservation::OverQuota(violations);
        }
        if dry_run {
            return Reservation::Reserved;
        }
        // A create of a name the ledger holds (a deployment that exists, whose create will
        // fail with AlreadyExists, or one deleted and not pruned yet) never lowers its entry:
        // the leader's sync lowers it once the deployment shows what it asks for.
        let held = ledger.entries.get(name).map_or(0, |e| e.gpus);
        let gpus = if create { demand.max(held) } else { demand };
        ledger.reserve(name, uid, gpus, Timestamp::now());
        let mut desired = ledger_configmap(policies, namespace, &ledger);
        let written = match existing {
            Some(existing) => {
                // The read resourceVersion: the API server refuses the write with a Conflict
                // when anyone wrote in between.
                desired.metadata.resource_version = existing.metadata.resource_version;
                api.replace(&ledger_name, &PostParams::default(), &desired)
                    .await
            }
            None => api.create(&PostParams::default(), &desired).await,
        };
        match written {
            Ok(_) => return Reservation::Reserved,
            Err(e) if ErrorClass::of(&e) == ErrorClass::Conflict => continue,
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(e) => return Reservation::Failed(e.to_string()),
        }
    }
    Reservation::Busy
}
