//! LoRA adapters on a vLLM server (pure, docs/lora.md): the flags that load `spec.adapters` at
//! start, the claims mounted for `pvc://` sources, and the sources vLLM cannot load.
//!
//! - `--enable-lora`, `--max-loras <number of adapters>`, `--max-lora-rank <rank>` (the
//!   smallest rank vLLM accepts at or above the largest `maxRank`, omitted when none is given:
//!   vLLM's default, 16), then `--lora-modules <name>=<path>...` (vLLM's `name=path` form, one
//!   token per adapter, in list order);
//! - the path: a Hugging Face repository id, which vLLM resolves itself (from the `HF_HOME`
//!   cache when it holds the adapter, else by downloading it, at `main`), or
//!   `/lora-adapters/<claim>/<path>` for `pvc://<claim>/<path>`, each claim mounted read-only
//!   there once (volumes `lora-adapters-<n>`); an adapter fetched through the model cache
//!   ([`storage::adapter_downloads`]) at a commit is loaded from its snapshot in the cache,
//!   `<model cache mount>/hub/models--<org>--<name>/snapshots/<commit>`, the one revision
//!   other than `main` a path can name before the download (a branch or tag resolves to a
//!   commit only then);
//! - a flag whose key the user sets in `engine.args`/`engine.extraArgs` is left out where the
//!   provider lets the user's keys win.

use serde_json::{Value, json};

use crate::lora::{AdapterSource, parse_source, revision, vllm_max_lora_rank};
use crate::storage;
use crate::v1alpha1::{LoraAdapter, ModelDeployment};

/// Where `pvc://` claims are mounted (`<root>/<claim>`).
pub const MOUNT_ROOT: &str = "/lora-adapters";
/// The prefix of the adapter claims' volume names (`<prefix>-<n>`).
pub const VOLUME_PREFIX: &str = "lora-adapters";

/// The snapshot directory vLLM loads `adapter` of `md` from: an adapter fetched through the
/// model cache at a commit (`None` otherwise).
fn cached_snapshot(md: &ModelDeployment, adapter: &LoraAdapter) -> Option<String> {
    let revision = revision(adapter);
    if !storage::is_commit(revision) {
        return None;
    }
    storage::adapter_downloads(md)
        .into_iter()
        .find(|d| d.name == adapter.name)
        .map(|d| storage::hub_snapshot_path(&d.volume.mount_path, &d.key.adapter_id, revision))
}

/// `Ok` when vLLM can load every adapter of `md`, else the first one it cannot, naming the
/// field and the fix: only Hugging Face and `pvc://` sources, since vLLM does not fetch URLs;
/// and a Hugging Face adapter at `main` only (`--lora-modules` takes no revision), unless it is
/// fetched through the model cache at a commit, whose snapshot path is rendered instead. An
/// unparsable source is left to validation.
pub fn check(md: &ModelDeployment) -> Result<(), String> {
    for (index, adapter) in md.spec.lora_adapters().iter().enumerate() {
        let Ok(source) = parse_source(&adapter.source) else {
            continue;
        };
        match source {
            AdapterSource::HuggingFace(_)
                if revision(adapter) != "main" && cached_snapshot(md, adapter).is_none() =>
            {
                return Err(format!(
                    "spec.adapters[{index}].revision: vLLM loads a Hugging Face adapter at its main revision only (--lora-modules takes no revision): remove the revision, give a full commit id and a shared modelCache volume (the adapter is then fetched through the model cache and loaded from its snapshot), or copy that revision to a PersistentVolumeClaim and use pvc://<claim>/<path>"
                ));
            }
            AdapterSource::Https(_) | AdapterSource::S3(_) | AdapterSource::Gcs(_) => {
                return Err(format!(
                    "spec.adapters[{index}].source: vLLM loads adapters from Hugging Face or a pvc:// claim, not from a {} source: copy the adapter to a PersistentVolumeClaim and use pvc://<claim>/<path>, or publish it on Hugging Face",
                    source.kind()
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The claims of the `pvc://` sources, each once, in list order.
fn claims(adapters: &[LoraAdapter]) -> Vec<&str> {
    let mut claims: Vec<&str> = Vec::new();
    for adapter in adapters {
        if let Ok(AdapterSource::Pvc { claim, .. }) = parse_source(&adapter.source)
            && !claims.contains(&claim)
        {
            claims.push(claim);
        }
    }
    claims
}

/// The path vLLM loads `adapter` of `md` from (`None`: a source vLLM cannot load, see
/// [`check`]).
pub fn path(md: &ModelDeployment, adapter: &LoraAdapter) -> Option<String> {
    match parse_source(&adapter.source).ok()? {
        AdapterSource::HuggingFace(id) => {
            Some(cached_snapshot(md, adapter).unwrap_or_else(|| id.to_string()))
        }
        AdapterSource::Pvc { claim, path: "" } => Some(format!("{MOUNT_ROOT}/{claim}")),
        AdapterSource::Pvc { claim, path } => Some(format!("{MOUNT_ROOT}/{claim}/{path}")),
        AdapterSource::Https(_) | AdapterSource::S3(_) | AdapterSource::Gcs(_) => None,
    }
}

/// The LoRA flags of `md` (none without adapters), leaving out those whose key is in
/// `user_keys`.
pub fn args(md: &ModelDeployment, user_keys: &[String]) -> Vec<String> {
    let adapters = md.spec.lora_adapters();
    if adapters.is_empty() {
        return Vec::new();
    }
    let mut flags: Vec<(&str, Vec<String>)> = vec![
        ("enable-lora", Vec::new()),
        ("max-loras", vec![adapters.len().to_string()]),
    ];
    if let Some(rank) = vllm_max_lora_rank(adapters) {
        flags.push(("max-lora-rank", vec![rank.to_string()]));
    }
    let modules: Vec<String> = adapters
        .iter()
        .filter_map(|a| path(md, a).map(|p| format!("{}={p}", a.name)))
        .collect();
    if !modules.is_empty() {
        flags.push(("lora-modules", modules));
    }
    flags
        .into_iter()
        .filter(|(key, _)| !user_keys.iter().any(|k| k == key))
        .flat_map(|(key, values)| std::iter::once(format!("--{key}")).chain(values))
        .collect()
}

/// Adds the volumes and read-only mounts of the claims `pvc://` adapters are on.
pub fn add_volumes(md: &ModelDeployment, volumes: &mut Vec<Value>, mounts: &mut Vec<Value>) {
    for (index, claim) in claims(md.spec.lora_adapters()).into_iter().enumerate() {
        let name = format!("{VOLUME_PREFIX}-{index}");
        volumes.push(json!({"name": name,
            "persistentVolumeClaim": {"claimName": claim, "readOnly": true}}));
        mounts.push(
            json!({"name": name, "mountPath": format!("{MOUNT_ROOT}/{claim}"), "readOnly": true}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::vllm_kit::render::{
        ArgsStyle, Component, deployment, vllm_args, vllm_args_with,
    };

    fn md(spec: Value) -> ModelDeployment {
        serde_json::from_value(
            json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "ns", "uid": "u"}, "spec": spec}),
        )
        .unwrap()
    }

    fn two_adapters() -> ModelDeployment {
        md(
            json!({"model": {"id": "Qwen/Qwen3-0.6B"}, "engine": {"type": "vllm"},
            "adapters": [{"name": "sql", "source": "hf://org/sql-lora", "maxRank": 8},
                         {"name": "chat", "source": "pvc://loras/chat/v2", "maxRank": 12},
                         {"name": "tone", "source": "pvc://loras"}]}),
        )
    }

    #[test]
    fn flags_follow_the_adapters_after_the_derived_flags() {
        let md = two_adapters();
        assert_eq!(
            vllm_args(&md, &Component::aggregated(&md)),
            [
                "--model",
                "Qwen/Qwen3-0.6B",
                "--enable-prefix-caching",
                "--enable-lora",
                "--max-loras",
                "3",
                "--max-lora-rank",
                "16",
                "--lora-modules",
                "sql=org/sql-lora",
                "chat=/lora-adapters/loras/chat/v2",
                "tone=/lora-adapters/loras"
            ]
        );
        let plain = super::tests::md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm"}}));
        assert!(args(&plain, &[]).is_empty(), "no adapters, no flags");
        let unranked = super::tests::md(json!({"model": {"id": "a/b"},
            "adapters": [{"name": "x", "source": "a/x"}]}));
        assert_eq!(
            args(&unranked, &[]),
            [
                "--enable-lora",
                "--max-loras",
                "1",
                "--lora-modules",
                "x=a/x"
            ],
            "no --max-lora-rank without a maxRank"
        );
    }

    #[test]
    fn the_users_keys_win_where_the_provider_lets_them() {
        let md = md(json!({"model": {"id": "a/b"}, "engine": {"type": "vllm",
            "args": {"max-loras": "4"}, "extraArgs": ["--max-lora-rank=64"]},
            "adapters": [{"name": "x", "source": "a/x", "maxRank": 8}]}));
        let style = ArgsStyle {
            user_keys_win: true,
            ..ArgsStyle::default()
        };
        let rendered = vllm_args_with(&md, &Component::aggregated(&md), &style);
        assert_eq!(
            rendered,
            [
                "--model",
                "a/b",
                "--enable-prefix-caching",
                "--enable-lora",
                "--lora-modules",
                "x=a/x",
                "--max-loras",
                "4",
                "--max-lora-rank=64"
            ]
        );
    }

    #[test]
    fn claims_are_mounted_read_only_once() {
        let md = two_adapters();
        let deployment = deployment(&md, &Component::aggregated(&md), "img");
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"],
            json!([{"name": "lora-adapters-0", "persistentVolumeClaim": {"claimName": "loras", "readOnly": true}}])
        );
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"name": "lora-adapters-0", "mountPath": "/lora-adapters/loras", "readOnly": true}])
        );
    }

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn a_cached_adapter_at_a_commit_is_loaded_from_its_snapshot() {
        let spec = |volumes: Value| {
            json!({"model": {"id": "Qwen/Qwen3-0.6B", "storage": {"volumes": volumes}},
                "engine": {"type": "vllm"},
                "adapters": [{"name": "sql", "source": "hf://org/sql-lora", "revision": COMMIT},
                             {"name": "chat", "source": "org/chat-lora"}]})
        };
        let shared = md(spec(
            json!([{"name": "w", "purpose": "modelCache", "mountPath": "/weights"}]),
        ));
        assert_eq!(check(&shared), Ok(()));
        assert_eq!(
            args(&shared, &[]),
            [
                "--enable-lora",
                "--max-loras",
                "2",
                "--lora-modules",
                &format!("sql=/weights/hub/models--org--sql-lora/snapshots/{COMMIT}"),
                "chat=org/chat-lora"
            ],
            "at main the repository id, which vLLM resolves from HF_HOME"
        );
        // Without a shared cache a commit is refused as before.
        let own = md(spec(
            json!([{"name": "w", "purpose": "modelCache", "size": "10Gi"}]),
        ));
        assert!(check(&own).unwrap_err().starts_with(
            "spec.adapters[0].revision: vLLM loads a Hugging Face adapter at its main revision only"
        ));
        // A branch or tag, even cached: no path names it before the download.
        let mut branch = shared.clone();
        branch.spec.adapters.as_mut().unwrap()[0].revision = Some("v2".into());
        assert!(check(&branch).is_err());
    }

    #[test]
    fn sources_vllm_cannot_load_are_refused_with_the_field_and_the_fix() {
        assert_eq!(check(&two_adapters()), Ok(()));
        let revision = md(json!({"model": {"id": "a/b"}, "adapters": [
            {"name": "x", "source": "a/x", "revision": "main"},
            {"name": "y", "source": "a/y", "revision": "v2"}]}));
        assert!(check(&revision).unwrap_err().starts_with(
            "spec.adapters[1].revision: vLLM loads a Hugging Face adapter at its main revision only"
        ));
        let s3 =
            md(json!({"model": {"id": "a/b"}, "adapters": [{"name": "x", "source": "s3://b/x"}]}));
        assert_eq!(
            check(&s3),
            Err("spec.adapters[0].source: vLLM loads adapters from Hugging Face or a pvc:// claim, not from a s3 source: copy the adapter to a PersistentVolumeClaim and use pvc://<claim>/<path>, or publish it on Hugging Face".into())
        );
    }
}
