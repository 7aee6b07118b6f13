//! The provider SDK (feature `provider-sdk`): a provider is a type implementing [`Provider`] (pure
//! functions) and a `main` calling [`run`]. The SDK does the rest of the provider contract:
//!
//! 1. **Registration**: applies InferenceProviderConfig `<name>` (field manager
//!    `<name>-provider`, never forcing, so fields an admin takes over stay theirs), with the probe
//!    endpoint; heartbeats `ready`, `version`, `lastHeartbeat`, `upstreamCRDVersion`,
//!    `upstreamSchemaHash` and the `UpstreamAvailable` condition every `--heartbeat-interval`;
//!    writes `ready: false` on SIGTERM. A provider naming its operator's Deployments
//!    ([`Provider::upstream_controller`]) is ready only while one of them has a ready replica.
//! 2. **Probe**: `grpc.health.v1.Health` and `airunway.provider.v1.ProviderService` on
//!    `--probe-bind-address`.
//! 3. **Reconcile** of the ModelDeployments whose `status.provider.name` is this provider (and
//!    those still carrying its finalizer): pause annotation; finalizer
//!    `airunway.ai/<name>-provider` with `--finalizer-timeout` (5 minutes) and a
//!    `FinalizerTimeout` event; deletion that does not hang when the upstream CRD is gone;
//!    `ProviderCompatible`; schema detection (unknown schema: `ProviderCompatible=False`,
//!    `Failed`); render → server-side apply (force, manager `<name>-provider`) with a controller
//!    owner reference and labels; drift overwritten with a `DriftDetected` event; identity
//!    changes delete and recreate; moving to another provider cleans up and releases the
//!    finalizer and the status fields; status translation applied to the provider-owned status
//!    fields; `ResourceCreated`/`Ready`; `StaleStatus` when the upstream operator has not
//!    reported on the object's latest change for `--stale-status-threshold` (see `staleness.rs`);
//!    events. [`Provider::render`] returns a set of objects (one, or several of the
//!    built-in kinds a provider declares in [`Provider::secondary_kinds`], e.g. llm-d's
//!    Deployments and Services) and [`Provider::translate_status`] reads the live objects of
//!    the set: each object is applied, drift-checked and recreated on its own, objects the
//!    render no longer produces (a changed shape) are deleted, and cleanup deletes them all.
//!    The [`vllm_kit`] (a kit, not part of the contract) has the vLLM compatibility checks,
//!    the vLLM Deployment/Service render, its overrides and the Deployment status translator
//!    llm-d and the direct vLLM provider share. A provider that needs I/O before its pure render (the direct vLLM
//!    provider resolving its image to a digest) implements [`Provider::prepare`]: the
//!    [`Preparation`]'s status fields and conditions are written (manager
//!    `<name>-provider-prepare`, only when changed) and the render sees them.
//!    The pipeline is observe (the watch caches) → `plan::triage` → `plan::plan` (one pure
//!    function over the set of objects, the same one `cycle` (with the `testing` feature) runs offline) → act (fresh reads
//!    only to confirm a cache entry the plan doubts, then the applies and deletions the plan
//!    lists) → `plan::report` (the status, written only when it changed); a change of an
//!    upstream object (its operator's status, an edit, a deletion) arrives through the
//!    provider's watch on its kind (only objects labelled `airunway.ai/managed-by: airunway`),
//!    never by polling. A provider that names its deployments' Pods
//!    ([`Provider::pod_watch_selector`]) gets `Ready=False` with what they report
//!    ([`pod_state`]: unschedulable, image pull, crash loop, OOM, refused credentials, failed
//!    download) while its own reason is missing or generic; a Pod change wakes the deployments
//!    whose `status.workload.podSelector` selects it.
//! 4. **Operations**: metrics, `/healthz`, `/readyz`, Lease leader election, tracing, graceful
//!    shutdown — the same flags as the core.
//!
//! **Public surface**: the contract ([`Provider`] and the types it takes and returns,
//! [`SchemaAdapter`], [`overrides`] with [`OverrideSchema`], the one declaration of a provider's
//! `provider.overrides`), [`run`] / [`run_with_args`] with [`ProviderArgs`] and [`RunError`],
//! [`registration_spec`], and the kits ([`vllm_kit`]). With the feature `testing` (for
//! `[dev-dependencies]`) tests and benches also get the offline cycle (`cycle`), the planner
//! (`plan`), the desired objects and status (`desired`), the registration helpers
//! (`registration`) and the upstream test material (`testing`). Everything else is internal.

mod args;
mod cache_mounts;
mod checked_render;
mod context;
#[cfg(any(test, feature = "testing"))]
pub mod cycle;
#[cfg(feature = "testing")]
pub mod desired;
#[cfg(not(feature = "testing"))]
#[allow(dead_code, reason = "public, and used, only with the feature testing")]
mod desired;
mod dry_run;
mod engine_features;
mod error;
mod finalizer;
mod invalid_generation;
mod kinds;
mod metrics;
pub mod offline_render;
pub mod overrides;
#[cfg(feature = "testing")]
pub mod plan;
#[cfg(not(feature = "testing"))]
#[allow(dead_code, reason = "public, and used, only with the feature testing")]
pub(crate) mod plan;
pub mod pod_state;
mod preparation;
mod probe_server;
mod read_your_writes;
mod reconcile;
#[cfg(feature = "testing")]
pub mod registration;
#[cfg(not(feature = "testing"))]
mod registration;
mod rendered;
mod replica_count;
mod runner;
pub(crate) mod runtime_configs;
mod schema;
mod serving_path;
mod staleness;
mod status_write;
mod statuses;
mod storage_gate;
#[cfg(test)]
mod test_support;
#[cfg(feature = "testing")]
pub mod testing;
mod traits;
pub mod vllm_kit;
mod workload;

/// The async runtime the SDK runs on, re-exported so a provider's `main` needs no other
/// dependency: `#[airunway_api::provider::tokio::main(crate = "airunway_api::provider::tokio")]`.
pub use tokio;

/// A deployment as the provider's watch cache holds it: compactly, decoded by the reconcile
/// (or scrape) that reads it.
pub(crate) type HeldDeployment =
    crate::compact_resource::CompactResource<crate::v1alpha1::ModelDeployment>;

pub use args::ProviderArgs;
pub use cache_mounts::{cache_env, cache_volumes};
#[cfg(feature = "conformance")]
pub(crate) use checked_render::checked_render;
pub use overrides::{OverrideSchema, OverrideType};
pub use plan::controller_missing_hold;
pub use registration::registration_spec;
pub use registration::{ControllerHealth, controller_health};
pub use rendered::{RenderError, RenderWarning, Rendered};
pub use replica_count::{replica_count, sum_replicas};
pub use runner::{RunError, run, run_with_args};
pub use runtime_configs::{ConfigRef, ConfigWait};
pub use schema::{BUILTIN_FINGERPRINT, SchemaAdapter};
pub use traits::{
    Incompatible, Preparation, PreparationHold, Provider, SchemaDetection, TranslatedStatus,
    UpstreamController, UpstreamKind, UpstreamSchema, primary,
};
pub use workload::{Degradation, reference_to};

#[cfg(test)]
mod layout_tests {
    //! The SDK's modules form no import cycle: each module file's references to its siblings
    //! (`super::x`, `crate::provider::x`, and items re-exported by this file resolved to the
    //! module defining them) make a graph, which must be acyclic. Comments and `#[cfg(test)]`
    //! modules are not read; a directory module (`vllm_kit/`, `testing/`) is one node.

    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// The text of a module file without its comment lines and test modules.
    fn code(text: &str) -> String {
        let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        text.lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn ident(text: &str) -> &str {
        let end = text
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        &text[..end]
    }

    /// The first path segments after each of `prefixes` in `text` (a `{a, b::c}` group gives
    /// `a` and `b`), with the prefix that matched.
    fn references<'a>(text: &'a str, prefixes: &[&'static str]) -> Vec<(&'static str, &'a str)> {
        let mut found = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let rest = &text[at..];
            let boundary = text[..at]
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
            let Some(prefix) = prefixes.iter().find(|p| boundary && rest.starts_with(**p)) else {
                at += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            };
            let after = &rest[prefix.len()..];
            if let Some(group) = after.strip_prefix('{') {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                let mut level = 0;
                let mut start = 0;
                for (i, c) in group[..end].char_indices().chain([(end, ',')]) {
                    match c {
                        '{' => level += 1,
                        '}' => level -= 1,
                        ',' if level == 0 => {
                            found.push((*prefix, ident(group[start..i].trim())));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            } else {
                found.push((*prefix, ident(after)));
            }
            at += prefix.len();
        }
        found
    }

    /// `pub use a::{B, C};` in the SDK's root: item name → module.
    fn reexports(root: &str) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        for statement in root.split("pub use ").skip(1) {
            let statement: String = statement
                .split(';')
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .collect();
            let Some((module, items)) = statement.split_once("::") else {
                continue;
            };
            for item in items.trim_matches(['{', '}']).split(',') {
                let item = item.rsplit("::").next().unwrap_or_default();
                if !item.is_empty() {
                    map.insert(item.to_string(), module.to_string());
                }
            }
        }
        map
    }

    /// The module graph of the SDK: node → the nodes it refers to.
    fn graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
        let read = |path: &Path| std::fs::read_to_string(path).unwrap();
        let root = code(&read(&dir.join("mod.rs")));
        let reexported = reexports(&root);
        // (node, whether `super::` is the SDK's root, file text)
        let mut files: Vec<(String, bool, String)> = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                for inner in walk(&path) {
                    let top = inner.parent() == Some(path.as_path());
                    let is_mod = inner.file_name().is_some_and(|n| n == "mod.rs");
                    files.push((stem.clone(), top && is_mod, code(&read(&inner))));
                }
            } else if stem != "mod" {
                files.push((stem, true, code(&read(&path))));
            }
        }
        let nodes: BTreeSet<String> = files.iter().map(|(n, ..)| n.clone()).collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (node, super_is_root, text) in &files {
            let targets = edges.entry(node.clone()).or_default();
            let prefixes: &[&str] = if *super_is_root {
                &["crate::provider::", "super::"]
            } else {
                &["crate::provider::", "super::super::"]
            };
            for (_, name) in references(text, prefixes) {
                let target = if nodes.contains(name) {
                    Some(name.to_string())
                } else {
                    reexported.get(name).cloned()
                };
                if let Some(target) = target
                    && target != *node
                {
                    targets.insert(target);
                }
            }
        }
        edges
    }

    fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
        files
    }

    /// A cycle of `graph`, if it has one.
    fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
        fn visit(
            node: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(start) = path.iter().position(|n| n == node) {
                let mut found = path[start..].to_vec();
                found.push(node.to_string());
                return Some(found);
            }
            if done.contains(node) {
                return None;
            }
            path.push(node.to_string());
            for next in graph.get(node).into_iter().flatten() {
                if let Some(found) = visit(next, graph, path, done) {
                    return Some(found);
                }
            }
            path.pop();
            done.insert(node.to_string());
            None
        }
        let mut done = BTreeSet::new();
        graph
            .keys()
            .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
    }

    #[test]
    fn the_sdk_modules_import_each_other_without_a_cycle() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/provider");
        let graph = graph(&dir);
        assert!(
            graph["reconcile"].contains("context") && graph["finalizer"].contains("context"),
            "the reader sees the steps' imports: {graph:?}"
        );
        assert_eq!(cycle(&graph), None, "import cycle; graph: {graph:?}");
    }

    #[test]
    fn a_cycle_is_found() {
        let text = "use super::a::X;\nuse crate::provider::{b, c::{D, E}};\n// super::z\n";
        let text = code(text);
        let found: Vec<&str> = references(&text, &["crate::provider::", "super::"])
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        assert_eq!(found, ["a", "b", "c"]);
        let graph: BTreeMap<String, BTreeSet<String>> = [
            ("a", vec!["b"]),
            ("b", vec!["c"]),
            ("c", vec!["a"]),
            ("d", vec![]),
        ]
        .into_iter()
        .map(|(n, e)| (n.to_string(), e.into_iter().map(String::from).collect()))
        .collect();
        assert_eq!(cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    }
}
