//! Renders the kustomizations under `deploy/` the way `kustomize build` does, for the subset of
//! kustomize they use: `resources` (files and directories), `components` (directories holding a
//! `kind: Component`), `images` (`name` with `newName`, `newTag`, `digest`), `configMapGenerator`
//! (`name`, `namespace`, `files`, `options` with `disableNameSuffixHash: true`, `labels` and
//! `annotations`) and nothing else.
//! Any other field is an error naming it, so the subset cannot silently drift from what the
//! files say. Objects come out in kustomize's default (legacy) kind order, then by namespace
//! and name; a repeated object is an error, as in kustomize.
//!
//! The harness has no `kubectl` or `kustomize` binary; this is what `e2e/tests/install.rs`
//! applies (server-side) and what `deploy/install.yaml` is rendered by (`airunway-render`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The fields of a kustomization this renderer understands.
const KNOWN_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "resources",
    "components",
    "images",
    "configMapGenerator",
];

/// The fields of a `configMapGenerator` entry this renderer understands.
const GENERATOR_FIELDS: [&str; 4] = ["name", "namespace", "files", "options"];

/// The fields of a generator's `options` this renderer understands.
const GENERATOR_OPTIONS: [&str; 3] = ["disableNameSuffixHash", "labels", "annotations"];

/// kustomize's legacy order: these kinds first (in this order), then every other kind, then
/// the webhook configurations last.
const FIRST: [&str; 21] = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
];
const LAST: [&str; 2] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// One `images:` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageOverride {
    /// The image name to match (without tag or digest).
    pub name: String,
    /// Replacement name.
    pub new_name: Option<String>,
    /// Replacement tag.
    pub new_tag: Option<String>,
    /// Replacement digest (`sha256:...`); wins over the tag.
    pub digest: Option<String>,
}

/// Renders the kustomization in `dir` (its `kustomization.yaml`).
pub fn render(dir: &Path) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    collect(dir, &mut objects, 0)?;
    check_unique(&objects)?;
    objects.sort_by_key(order_key);
    Ok(objects)
}

/// Renders `dir` as one multi-document YAML text (what `kustomize build` prints).
pub fn render_yaml(dir: &Path) -> Result<String> {
    let objects = render(dir)?;
    let mut out = String::new();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&serde_saphyr::to_string(object).context("writing YAML")?);
    }
    Ok(out)
}

fn kustomization_file(dir: &Path) -> Result<PathBuf> {
    ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .with_context(|| format!("{}: no kustomization.yaml", dir.display()))
}

fn collect(dir: &Path, objects: &mut Vec<Value>, depth: usize) -> Result<()> {
    if depth > 16 {
        bail!(
            "{}: kustomizations nested more than 16 deep (a cycle?)",
            dir.display()
        );
    }
    let file = kustomization_file(dir)?;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let k: Value =
        serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let Some(fields) = k.as_object() else {
        bail!("{}: not a mapping", file.display());
    };
    for key in fields.keys() {
        if !KNOWN_FIELDS.contains(&key.as_str()) {
            bail!(
                "{}: field '{key}' is not supported by the harness's kustomize subset \
                 (e2e/src/kustomize.rs supports {KNOWN_FIELDS:?}); extend it or use these",
                file.display()
            );
        }
    }
    let mut own = Vec::new();
    for entry in strings(&k["resources"], &file, "resources")? {
        let path = dir.join(&entry);
        if path.is_dir() {
            collect(&path, &mut own, depth + 1)?;
        } else {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{}: resource {entry}", file.display()))?;
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            own.extend(docs.into_iter().filter(Value::is_object));
        }
    }
    for entry in strings(&k["components"], &file, "components")? {
        let path = dir.join(&entry);
        let component = kustomization_file(&path)?;
        let text = std::fs::read_to_string(&component)?;
        let c: Value = serde_saphyr::from_str(&text)
            .with_context(|| format!("parsing {}", component.display()))?;
        if c["kind"] != "Component" {
            bail!(
                "{}: components entry {entry} is not a kind: Component",
                file.display()
            );
        }
        collect(&path, &mut own, depth + 1)?;
    }
    own.extend(generated_config_maps(&k["configMapGenerator"], dir, &file)?);
    let images = image_overrides(&k["images"], &file)?;
    for object in &mut own {
        set_images(object, &images);
    }
    objects.extend(own);
    Ok(())
}

fn strings(value: &Value, file: &Path, field: &str) -> Result<Vec<String>> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .with_context(|| format!("{}: {field} must be a list of paths", file.display()))
            })
            .collect(),
        _ => bail!("{}: {field} must be a list of paths", file.display()),
    }
}

/// The ConfigMaps of `configMapGenerator`: each file's text under its base name (or the key of
/// `key=path`). kustomize appends a hash of the content to the name unless
/// `options.disableNameSuffixHash` is true; this subset does not compute that hash, so it asks
/// for the option.
fn generated_config_maps(value: &Value, dir: &Path, file: &Path) -> Result<Vec<Value>> {
    let Some(items) = value.as_array() else {
        if value.is_null() {
            return Ok(Vec::new());
        }
        bail!("{}: configMapGenerator must be a list", file.display());
    };
    let mut maps = Vec::new();
    for item in items {
        let Some(fields) = item.as_object() else {
            bail!(
                "{}: configMapGenerator entries must be mappings",
                file.display()
            );
        };
        for key in fields.keys() {
            if !GENERATOR_FIELDS.contains(&key.as_str()) {
                bail!(
                    "{}: configMapGenerator field '{key}' is not supported by the harness's \
                     kustomize subset (it supports {GENERATOR_FIELDS:?})",
                    file.display()
                );
            }
        }
        let name = item["name"].as_str().with_context(|| {
            format!("{}: configMapGenerator entry without name", file.display())
        })?;
        let options = &item["options"];
        for key in options.as_object().into_iter().flat_map(|o| o.keys()) {
            if !GENERATOR_OPTIONS.contains(&key.as_str()) {
                bail!(
                    "{}: configMapGenerator {name}: option '{key}' is not supported by the \
                     harness's kustomize subset (it supports {GENERATOR_OPTIONS:?})",
                    file.display()
                );
            }
        }
        if options["disableNameSuffixHash"] != Value::Bool(true) {
            bail!(
                "{}: configMapGenerator {name}: set options.disableNameSuffixHash: true (the \
                 harness's kustomize subset does not compute kustomize's name hash)",
                file.display()
            );
        }
        let mut data = serde_json::Map::new();
        for entry in strings(&item["files"], file, "configMapGenerator files")? {
            let (key, path) = match entry.split_once('=') {
                Some((key, path)) => (key.to_string(), path.to_string()),
                None => (
                    Path::new(&entry)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .with_context(|| {
                            format!("{}: configMapGenerator file {entry:?}", file.display())
                        })?
                        .to_string(),
                    entry.clone(),
                ),
            };
            let text = std::fs::read_to_string(dir.join(&path)).with_context(|| {
                format!(
                    "{}: configMapGenerator {name}: reading {path} (a UTF-8 text file)",
                    file.display()
                )
            })?;
            if data.insert(key.clone(), Value::String(text)).is_some() {
                bail!(
                    "{}: configMapGenerator {name}: key {key} appears twice",
                    file.display()
                );
            }
        }
        let mut metadata = serde_json::Map::new();
        metadata.insert("name".into(), Value::String(name.to_string()));
        if let Some(namespace) = item["namespace"].as_str() {
            metadata.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        for field in ["labels", "annotations"] {
            if let Some(map) = options[field].as_object() {
                metadata.insert(field.into(), Value::Object(map.clone()));
            }
        }
        maps.push(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": data,
        }));
    }
    Ok(maps)
}

fn image_overrides(value: &Value, file: &Path) -> Result<Vec<ImageOverride>> {
    let Some(items) = value.as_array() else {
        if value.is_null() {
            return Ok(Vec::new());
        }
        bail!("{}: images must be a list", file.display());
    };
    items
        .iter()
        .map(|i| {
            let field = |k: &str| i[k].as_str().map(str::to_string);
            Ok(ImageOverride {
                name: field("name")
                    .with_context(|| format!("{}: images entry without name", file.display()))?,
                new_name: field("newName"),
                new_tag: field("newTag"),
                digest: field("digest"),
            })
        })
        .collect()
}

/// Splits `repo[:tag][@digest]` (a registry port is not a tag).
fn split_image(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[slash..].rfind(':') {
        Some(colon) => (
            &rest[..slash + colon],
            Some(&rest[slash + colon + 1..]),
            digest,
        ),
        None => (rest, None, digest),
    }
}

/// Applies `images` to every `image:` of the pod template's containers and init containers.
pub fn set_images(object: &mut Value, images: &[ImageOverride]) {
    if images.is_empty() {
        return;
    }
    let Some(spec) = object
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for list in ["containers", "initContainers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(image) = container["image"].as_str().map(str::to_string) else {
                continue;
            };
            let (name, tag, digest) = split_image(&image);
            let Some(o) = images.iter().find(|o| o.name == name) else {
                continue;
            };
            let mut new = o.new_name.clone().unwrap_or_else(|| name.to_string());
            if let Some(d) = &o.digest {
                new = format!("{new}@{d}");
            } else if let Some(t) = o.new_tag.as_deref().or(tag) {
                new = format!("{new}:{t}");
            } else if let Some(d) = digest {
                new = format!("{new}@{d}");
            }
            container["image"] = Value::String(new);
        }
    }
}

fn order_key(object: &Value) -> (usize, String, String, String) {
    let kind = object["kind"].as_str().unwrap_or_default();
    let rank = FIRST
        .iter()
        .position(|k| *k == kind)
        .or_else(|| {
            LAST.iter()
                .position(|k| *k == kind)
                .map(|i| FIRST.len() + 1 + i)
        })
        .unwrap_or(FIRST.len());
    (
        rank,
        kind.to_string(),
        object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn check_unique(objects: &[Value]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for o in objects {
        let id = format!(
            "{} {} {}/{}",
            o["apiVersion"].as_str().unwrap_or_default(),
            o["kind"].as_str().unwrap_or_default(),
            o["metadata"]["namespace"].as_str().unwrap_or_default(),
            o["metadata"]["name"].as_str().unwrap_or_default()
        );
        if !seen.insert(id.clone()) {
            bail!("{id} appears twice in the rendered kustomization");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn image_references_split_without_mistaking_a_port_for_a_tag() {
        assert_eq!(split_image("a/b:1"), ("a/b", Some("1"), None));
        assert_eq!(split_image("r:5000/b"), ("r:5000/b", None, None));
        assert_eq!(
            split_image("r:5000/b:2@sha256:x"),
            ("r:5000/b", Some("2"), Some("sha256:x"))
        );
    }

    #[test]
    fn images_entries_rename_retag_and_pin() {
        let mut d = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"image": "ghcr.io/airunway/airunway-core:0.1.0"}, {"image": "other:1"}]}}}});
        set_images(
            &mut d,
            &[ImageOverride {
                name: "ghcr.io/airunway/airunway-core".into(),
                new_name: Some("reg.example/me/core".into()),
                new_tag: None,
                digest: None,
            }],
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "reg.example/me/core:0.1.0"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][1]["image"],
            "other:1"
        );
        set_images(
            &mut d,
            &[ImageOverride {
                name: "reg.example/me/core".into(),
                new_name: None,
                new_tag: Some("0.2.0".into()),
                digest: Some("sha256:abc".into()),
            }],
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "reg.example/me/core@sha256:abc"
        );
    }

    #[test]
    fn the_grafana_component_renders_the_dashboard_as_a_sidecar_config_map() {
        let dir = crate::paths::workspace_root().join("deploy/components/grafana");
        let objects = render(&dir).unwrap();
        assert_eq!(objects.len(), 1);
        let map = &objects[0];
        assert_eq!(map["kind"], "ConfigMap");
        assert_eq!(map["metadata"]["name"], "airunway-dashboard");
        assert_eq!(map["metadata"]["namespace"], "airunway-system");
        assert_eq!(map["metadata"]["labels"]["grafana_dashboard"], "1");
        let dashboard = std::fs::read_to_string(dir.join("airunway-dashboard.json")).unwrap();
        assert_eq!(map["data"]["airunway-dashboard.json"], dashboard.as_str());
    }

    #[test]
    fn the_monitoring_component_renders() {
        let objects =
            render(&crate::paths::workspace_root().join("deploy/components/monitoring")).unwrap();
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["PodMonitor", "PrometheusRule", "ServiceMonitor"]);
    }

    #[test]
    fn a_generated_config_map_without_disable_name_suffix_hash_is_refused() {
        let dir = std::env::temp_dir().join(format!("kustomize-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "x").unwrap();
        std::fs::write(
            dir.join("kustomization.yaml"),
            "configMapGenerator:\n- name: m\n  files:\n  - a.txt\n",
        )
        .unwrap();
        let error = format!("{:#}", render(&dir).unwrap_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            error.contains("set options.disableNameSuffixHash: true"),
            "{error}"
        );
    }

    #[test]
    fn the_shipped_default_renders_in_kustomize_order() {
        let objects = render(&crate::paths::workspace_root().join("deploy/default")).unwrap();
        assert_eq!(objects[0]["kind"], "Namespace");
        assert_eq!(objects[1]["kind"], "CustomResourceDefinition");
        assert!(
            objects
                .iter()
                .any(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "airunway-core")
        );
        assert_eq!(
            objects.last().unwrap()["kind"],
            "ValidatingWebhookConfiguration"
        );
    }
}
