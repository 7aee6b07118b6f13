//! The dependency-direction rule: inside the workspace, the only dependency edge allowed is
//! "anything → airunway-api". Binary crates (the core, the providers, the tools) never depend on
//! each other, so each releases on its own. One exception: the e2e harness's tests may
//! `[dev-dependencies]` on members (to send the providers' pure renders to a real API server).

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The one crate every workspace member may depend on.
pub const SHARED_CRATE: &str = "airunway-api";

/// The test harness, whose tests may call other members' pure code (`[dev-dependencies]` only:
/// nothing it builds links a member but the shared crate, so every binary still releases alone).
pub const HARNESS_CRATE: &str = "airunway-e2e";

/// Dependency edges between workspace members that break the rule, as `from -> to`.
pub fn violations(metadata: &Value) -> Result<Vec<String>> {
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata without packages")?;
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            let kind = dep["kind"].as_str().unwrap_or("normal");
            if name == HARNESS_CRATE && kind == "dev" {
                continue;
            }
            if members.contains(&dep_name) && dep_name != SHARED_CRATE {
                out.push(format!("{name} -> {dep_name} ({kind})"));
            }
        }
    }
    Ok(out)
}

/// Runs `cargo metadata` for the workspace and fails when the rule is broken.
pub fn check(workspace_root: &std::path::Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(workspace_root)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("parsing cargo metadata")?;
    let bad = violations(&metadata)?;
    if !bad.is_empty() {
        bail!(
            "workspace crates may only depend on {SHARED_CRATE} among workspace members; found:\n  {}",
            bad.join("\n  ")
        );
    }
    let count = metadata["packages"].as_array().map_or(0, Vec::len);
    println!("dependency direction ok: {count} workspace crates depend only on {SHARED_CRATE}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(extra_dep_of_core: Option<&str>) -> Value {
        let mut core_deps = vec![
            json!({"name": "airunway-api", "kind": null}),
            json!({"name": "tokio", "kind": null}),
        ];
        if let Some(dep) = extra_dep_of_core {
            core_deps.push(json!({"name": dep, "kind": null}));
        }
        json!({"packages": [
            {"name": "airunway-api", "dependencies": [{"name": "kube", "kind": null}]},
            {"name": "airunway-core", "dependencies": core_deps},
            {"name": "airunway-provider-kaito", "dependencies": [{"name": "airunway-api", "kind": null}]},
        ]})
    }

    #[test]
    fn passes_when_everything_depends_only_on_the_api_crate() {
        assert!(violations(&metadata(None)).unwrap().is_empty());
    }

    #[test]
    fn fails_when_a_binary_depends_on_another_binary() {
        assert_eq!(
            violations(&metadata(Some("airunway-provider-kaito"))).unwrap(),
            vec!["airunway-core -> airunway-provider-kaito (normal)".to_string()]
        );
    }

    #[test]
    fn only_the_harness_may_dev_depend_on_a_binary() {
        let mut m = metadata(None);
        m["packages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "airunway-e2e", "dependencies": [
            {"name": "airunway-provider-kaito", "kind": "dev"}]}));
        assert!(violations(&m).unwrap().is_empty());
        m["packages"][3]["dependencies"][0]["kind"] = Value::Null;
        assert_eq!(
            violations(&m).unwrap(),
            vec!["airunway-e2e -> airunway-provider-kaito (normal)".to_string()]
        );
        m["packages"][3]["dependencies"][0]["kind"] = json!("dev");
        m["packages"][1]["dependencies"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "airunway-provider-kaito", "kind": "dev"}));
        assert_eq!(
            violations(&m).unwrap(),
            vec!["airunway-core -> airunway-provider-kaito (dev)".to_string()]
        );
    }

    #[test]
    fn the_real_workspace_passes() {
        check(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).unwrap();
    }
}
