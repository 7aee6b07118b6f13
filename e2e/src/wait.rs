//! Waiting for things with a timeout and a failure message that says what was expected and
//! what was last seen.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

use airunway_api::v1alpha1::{Condition, ConditionStatus, ModelDeployment};
use kube::Resource;
use kube::api::Api;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Polls `probe` every 200 ms until it returns `Ok(value)`; panics after `timeout` with `what`
/// and the last `Err(description)` the probe gave.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(last) => {
                if Instant::now() > deadline {
                    panic!("timed out after {timeout:?} waiting for {what}\nlast seen: {last}");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until object `name` exists and satisfies `condition`; returns it. The failure message
/// carries the object's last state as YAML.
pub async fn wait_for<K, F>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    what: &str,
    condition: F,
) -> K
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    F: Fn(&K) -> bool,
{
    let described = format!("{what} ({} {name})", short_type_name::<K>());
    eventually(&described, timeout, || async {
        match api.get_opt(name).await {
            Ok(Some(object)) if condition(&object) => Ok(object),
            Ok(Some(object)) => Err(describe(&object)),
            Ok(None) => Err("not found".to_string()),
            Err(e) => Err(format!("error: {e}")),
        }
    })
    .await
}

/// Waits until ModelDeployment `name` has condition `type_` with `status`; returns the
/// deployment and that condition.
pub async fn wait_for_condition(
    api: &Api<ModelDeployment>,
    name: &str,
    timeout: Duration,
    type_: &str,
    status: ConditionStatus,
) -> (ModelDeployment, Condition) {
    let what = format!("{type_}={}", status.as_str());
    let md = wait_for(api, name, timeout, &what, |md| {
        md.condition(type_).is_some_and(|c| c.status == status)
    })
    .await;
    let condition = md
        .condition(type_)
        .cloned()
        .unwrap_or_else(|| panic!("{name}: condition {type_} vanished"));
    (md, condition)
}

/// Waits until object `name` is gone.
pub async fn wait_deleted<K>(api: &Api<K>, name: &str, timeout: Duration)
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let described = format!("{} {name} to be deleted", short_type_name::<K>());
    eventually(&described, timeout, || async {
        match api.get_opt(name).await {
            Ok(None) => Ok(()),
            Ok(Some(object)) => Err(describe(&object)),
            Err(e) => Err(format!("error: {e}")),
        }
    })
    .await
}

/// The last path segment of a type's name (`ModelDeployment`, `DynamicObject`).
fn short_type_name<K>() -> &'static str {
    std::any::type_name::<K>()
        .rsplit("::")
        .next()
        .unwrap_or("object")
}

/// YAML rendering of an object without `managedFields`, for failure messages.
pub fn describe<K: Serialize>(object: &K) -> String {
    let mut value = serde_json::to_value(object).unwrap_or_default();
    if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
    }
    serde_saphyr::to_string(&value).unwrap_or_else(|_| value.to_string())
}
