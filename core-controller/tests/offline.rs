//! The offline commands (issue 40): `validate` over every example (all valid but the one
//! invalid on purpose) and over the invalid corpus (`tests/fixtures/invalid`, each file saying
//! what it expects), `select` giving each example the provider the sandbox suite expects
//! (e2e/tests/sandbox.rs), `explain`'s reasons, and the real binary's output and exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use airunway_api::offline::{self, Severity, exit};
use airunway_core::offline::{select, shipped_providers, validate};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn documents(path: &Path) -> Vec<offline::Document> {
    let mut documents = offline::read_documents(&[path.to_path_buf()]).unwrap();
    for document in &mut documents {
        document.default_namespace("default");
    }
    documents
}

#[test]
fn every_example_is_valid_but_the_invalid_one() {
    let providers = shipped_providers().unwrap();
    let report = validate(&documents(&workspace().join("examples")), &providers, true);
    let errors: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.line())
        .collect();
    // The webhook's message, as the sandbox suite sees the cluster refuse it.
    assert_eq!(
        errors,
        ["../examples/invalid-privileged-override.yaml:0: spec.provider.overrides.frontend.hostNetwork: key 'hostNetwork' is not allowed in provider.overrides: it would escalate the privileges of the model server pods"
            .replace("../", &format!("{}/", workspace().display()))],
        "{errors:#?}"
    );
}

#[test]
fn the_invalid_corpus_gets_the_messages_it_expects() {
    let providers = shipped_providers().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(!expected.is_empty(), "{}", file.display());
        let report = validate(&documents(&file), &providers, true);
        assert_eq!(report.exit_code(), exit::FINDINGS, "{}", file.display());
        let found: Vec<String> = report
            .findings
            .iter()
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect();
        for expectation in expected {
            assert!(
                found.iter().any(|f| f.starts_with(expectation)),
                "{}: {expectation:?} not among {found:#?}",
                file.display()
            );
        }
    }
}

#[test]
fn select_gives_each_example_the_sandbox_suites_provider() {
    let providers = shipped_providers().unwrap();
    let report = select(&documents(&workspace().join("examples")), &providers, true);
    let rows: Vec<(&str, &str, &str, &str)> = report
        .deployments
        .iter()
        .filter(|d| d.valid)
        .map(|d| {
            (
                d.name.as_str(),
                d.engine.as_deref().unwrap_or("-"),
                d.provider.as_deref().unwrap_or("-"),
                d.provider_reason.as_deref().unwrap_or("-"),
            )
        })
        .collect();
    // e2e/tests/sandbox.rs (with the upstream simulated, every provider ready), in file order.
    assert_eq!(
        rows,
        [
            (
                "gemma-cpu",
                "llamacpp",
                "kaito",
                "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated"
            ),
            (
                "llama-70b-pd",
                "vllm",
                "dynamo",
                "explicit provider selection"
            ),
            ("qwen3-pd", "vllm", "llmd", "explicit provider selection"),
            ("qwen3-vllm", "vllm", "vllm", "explicit provider selection"),
            (
                "llama-8b",
                "vllm",
                "dynamo",
                "matched capabilities: engine=vllm, gpu=true, mode=aggregated"
            ),
            (
                "qwen3-ray",
                "vllm",
                "kuberay",
                "explicit provider selection"
            ),
            ("qwen3-llmd", "vllm", "llmd", "explicit provider selection"),
        ]
    );
}

#[test]
fn explain_says_why_each_provider_lost() {
    let providers = shipped_providers().unwrap();
    let dir = std::env::temp_dir().join(format!("airunway-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("auto.yaml");
    std::fs::write(
        &file,
        "apiVersion: airunway.ai/v1alpha1\nkind: ModelDeployment\nmetadata: {name: auto}\nspec:\n  model: {id: a/b}\n  serving: {mode: disaggregated}\n  engine: {type: vllm}\n  scaling:\n    prefill: {replicas: 1, gpu: {count: 1}}\n    decode: {replicas: 1, gpu: {count: 1}}\n",
    )
    .unwrap();
    let report = select(&documents(&file), &providers, true);
    let decision = &report.deployments[0];
    assert_eq!(decision.provider.as_deref(), Some("dynamo"));
    let outcomes: Vec<(&str, &str)> = decision
        .providers
        .iter()
        .map(|p| (p.name.as_str(), p.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("dynamo", "chosen"),
            ("kaito", "incapable"),
            ("kuberay", "no_rule_matched"),
            ("llmd", "no_rule_matched"),
            ("vllm", "incapable"),
        ]
    );
    assert_eq!(
        decision.providers[4].reason,
        "engine vllm does not support disaggregated mode"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_binary_prints_findings_and_exits_with_its_codes() {
    let core = env!("CARGO_BIN_EXE_airunway-core");
    let examples = workspace().join("examples");
    let valid = Command::new(core)
        .args(["validate", "-f"])
        .arg(examples.join("gpu-vllm-dynamo.yaml"))
        .output()
        .unwrap();
    assert_eq!(valid.status.code(), Some(exit::CLEAN));
    assert!(valid.stdout.is_empty());

    let invalid = Command::new(core)
        .arg("validate")
        .arg(examples.join("invalid-privileged-override.yaml"))
        .output()
        .unwrap();
    assert_eq!(invalid.status.code(), Some(exit::FINDINGS));
    assert!(
        String::from_utf8_lossy(&invalid.stdout).contains(
            "invalid-privileged-override.yaml:0: spec.provider.overrides.frontend.hostNetwork: key 'hostNetwork'"
        )
    );

    let missing = Command::new(core)
        .args(["select", "/nonexistent.yaml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(exit::USAGE));

    let json = Command::new(core)
        .args(["select", "-o", "json"])
        .arg(examples.join("cpu-llamacpp-kaito.yaml"))
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(exit::CLEAN));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["deployments"][0]["provider"], "kaito");
}
