//! `provider.overrides` for KubeRay (pure): design doc §4.15 (`head.resources`,
//! `head.rayStartParams`) and the same settings for the worker groups (`worker.resources`,
//! `worker.rayStartParams`).
//!
//! The overrides are deep-merged onto the provider's defaults: a value replaces the default, a
//! JSON `null` deletes it (e.g. `head: {rayStartParams: {dashboard-host: null}}` drops the
//! default `dashboard-host`; `head: {resources: null}` leaves the head without CPU and memory
//! settings). The SDK checks them against [`SCHEMA`] before the render: unknown keys at any
//! depth are reported as warnings and ignored; a value of the wrong type fails the render
//! naming the path; a key that would escalate the privileges of the Ray pods (e.g.
//! `securityContext`, `hostNetwork`) fails the render wherever it appears, even if the core's
//! admission webhook was bypassed.

use std::collections::BTreeMap;

use airunway_api::provider::overrides::{self, OverrideSchema, OverrideType};
use airunway_api::serde_json::{Map, Value};

/// Override keys refused anywhere: they would let a user who may only create ModelDeployments
/// run Ray pods with more privilege than the provider grants (the same keys the core's
/// webhook refuses).
pub const ESCALATING_KEYS: &[&str] = &airunway_api::constants::ESCALATING_OVERRIDE_KEYS;

/// The head group key.
pub const HEAD: &str = "head";
/// The worker groups key (every worker group: `gpu-workers`, or prefill and decode).
pub const WORKER: &str = "worker";

const GROUP: OverrideType = OverrideType::Object(&[
    (
        "resources",
        OverrideType::Object(&[
            ("cpu", OverrideType::Quantity),
            ("memory", OverrideType::Quantity),
        ]),
    ),
    ("rayStartParams", OverrideType::StringMap),
]);

/// The overrides KubeRay understands, declared once (see [`crate::KubeRayProvider`]'s
/// `overrides`): a `null` deletes a default; privilege-escalating keys are refused anywhere.
pub const SCHEMA: OverrideSchema = OverrideSchema::keys(&[(HEAD, GROUP), (WORKER, GROUP)])
    .nulls_delete_defaults()
    .refusing_anywhere(&[ESCALATING_KEYS], "the Ray pods");

/// One overridable value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Setting {
    /// Not overridden: the provider's default applies.
    #[default]
    Default,
    /// `null`: no value at all.
    Deleted,
    /// The given value.
    Set(String),
}

impl Setting {
    /// The value after the override: `default` unless set or deleted.
    pub fn or(&self, default: Option<&str>) -> Option<String> {
        match self {
            Setting::Default => default.map(str::to_string),
            Setting::Deleted => None,
            Setting::Set(value) => Some(value.clone()),
        }
    }
}

/// The overrides of one group (head or workers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupOverrides {
    /// CPU (request and limit).
    pub cpu: Setting,
    /// Memory (request and limit).
    pub memory: Setting,
    /// `rayStartParams`: `true` drops the provider's defaults first (`rayStartParams: null`).
    pub clear_params: bool,
    /// `rayStartParams` entries: `Some` sets, `None` deletes.
    pub params: BTreeMap<String, Option<String>>,
}

impl GroupOverrides {
    /// `defaults` with the overrides merged in.
    pub fn ray_start_params(&self, defaults: &[(&str, String)]) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = if self.clear_params {
            BTreeMap::new()
        } else {
            defaults
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect()
        };
        for (key, value) in &self.params {
            match value {
                Some(value) => {
                    out.insert(key.clone(), value.clone());
                }
                None => {
                    out.remove(key);
                }
            }
        }
        out
    }

    fn delete(&mut self, rest: &[&str]) -> bool {
        match rest {
            [] => {
                self.cpu = Setting::Deleted;
                self.memory = Setting::Deleted;
                self.clear_params = true;
            }
            ["resources"] => {
                self.cpu = Setting::Deleted;
                self.memory = Setting::Deleted;
            }
            ["resources", "cpu"] => self.cpu = Setting::Deleted,
            ["resources", "memory"] => self.memory = Setting::Deleted,
            ["rayStartParams"] => self.clear_params = true,
            ["rayStartParams", key] => {
                self.params.insert((*key).to_string(), None);
            }
            _ => return false,
        }
        true
    }
}

/// The parsed overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KubeRayOverrides {
    /// The head group.
    pub head: GroupOverrides,
    /// Every worker group.
    pub worker: GroupOverrides,
}

/// `map` without its `null` values (at any depth), and the dotted paths of those.
fn without_nulls(
    map: &Map<String, Value>,
    prefix: &[String],
) -> (Map<String, Value>, Vec<Vec<String>>) {
    let mut kept = Map::new();
    let mut nulls = Vec::new();
    for (key, value) in map {
        let mut path = prefix.to_vec();
        path.push(key.clone());
        match value {
            Value::Null => nulls.push(path),
            Value::Object(inner) => {
                let (inner_kept, inner_nulls) = without_nulls(inner, &path);
                kept.insert(key.clone(), Value::Object(inner_kept));
                nulls.extend(inner_nulls);
            }
            other => {
                kept.insert(key.clone(), other.clone());
            }
        }
    }
    (kept, nulls)
}

fn strings(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect()
}

/// Parses `provider.overrides`, already checked against [`SCHEMA`] by the SDK (unknown keys
/// reported, types and refused keys checked): the `null`s become deletions, the values
/// settings.
pub fn parse(map: Option<&Map<String, Value>>) -> KubeRayOverrides {
    let mut out = KubeRayOverrides::default();
    let Some(map) = map else {
        return out;
    };
    let (kept, nulls) = without_nulls(map, &[]);
    for path in nulls {
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        // A null the schema does not declare was reported by the SDK and is ignored.
        match parts.split_first() {
            Some((&HEAD, rest)) => out.head.delete(rest),
            Some((&WORKER, rest)) => out.worker.delete(rest),
            _ => false,
        };
    }
    for (key, group) in [(HEAD, &mut out.head), (WORKER, &mut out.worker)] {
        let kept = Some(&kept);
        for (field, setting) in [("cpu", &mut group.cpu), ("memory", &mut group.memory)] {
            if let Some(value) =
                overrides::get(kept, &format!("{key}.resources.{field}")).and_then(Value::as_str)
            {
                *setting = Setting::Set(value.to_string());
            }
        }
        for (param, value) in strings(overrides::get(kept, &format!("{key}.rayStartParams"))) {
            group.params.insert(param, Some(value));
        }
    }
    out
}
