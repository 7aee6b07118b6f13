//! The sandbox command, run non-interactively as a user would: `up` (with and without
//! `--simulate-upstream`), the final table of every example in `examples/`, then `down`, and no
//! process left behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use airunway_e2e::paths;
use airunway_e2e::process::{is_alive, tail};
use airunway_e2e::sandbox::State;

/// Runs the sandbox binary with `args`, killing it after `timeout`; returns (success, stdout+stderr).
fn sandbox(state: &Path, args: &[&str], timeout: Duration) -> (bool, String) {
    let binary = paths::our_binary("airunway-sandbox").unwrap();
    let log = state.with_extension("out");
    let file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new(binary)
        .args(args)
        .arg(format!("--state-dir={}", state.display()))
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    (status.is_some_and(|s| s.success()), output)
}

/// Stops the sandbox even when the test fails.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = sandbox(&self.0, &["down"], Duration::from_secs(60));
        }
    }
}

/// The rows of the last table printed: name -> columns.
fn final_table(output: &str) -> Vec<Vec<String>> {
    let start = output.rfind("\nNAME ").expect("a table");
    output[start + 1..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            // Columns are separated by two or more spaces; the selected reason contains single spaces.
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

fn run_up(simulate: bool) {
    let state = std::env::temp_dir().join(format!(
        "airunway-sandbox-test-{}-{simulate}",
        std::process::id()
    ));
    let _down = Down(state.clone());
    let mut args = vec!["up", "--no-build", "--timeout-seconds=150"];
    if simulate {
        args.push("--simulate-upstream");
    }
    let started = Instant::now();
    let (ok, output) = sandbox(&state, &args, Duration::from_secs(240));
    eprintln!(
        "sandbox up (simulate={simulate}) took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert!(ok, "sandbox up failed:\n{output}");

    // Every example is applied, the invalid one is refused with the webhook's message.
    let examples: Vec<PathBuf> = std::fs::read_dir(paths::workspace_root().join("examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    assert_eq!(examples.len(), 8);
    for example in &examples {
        let name = example.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            output.contains(&format!("examples/{name}")),
            "{name} was not applied:\n{output}"
        );
    }
    assert!(output.contains("REJECTED examples/invalid-privileged-override.yaml: admission webhook \"validate.modeldeployments.airunway.ai\" denied the request: spec.provider.overrides.frontend.hostNetwork: key 'hostNetwork' is not allowed"), "{output}");

    let rows = final_table(&output);
    let expected_phase = if simulate { "Running" } else { "Deploying" };
    // Without simulation no KAITO controller runs, so the KAITO provider is not ready and the
    // llama.cpp example waits, Pending, for a provider.
    let gemma = if simulate {
        (
            "gemma-cpu",
            "llamacpp",
            "kaito",
            "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated",
            "Workspace/gemma-cpu",
        )
    } else {
        ("gemma-cpu", "llamacpp", "-", "-", "-")
    };
    let expected = [
        gemma,
        (
            "llama-70b-pd",
            "vllm",
            "dynamo",
            "explicit provider selection",
            "DynamoGraphDeployment/llama-70b-pd",
        ),
        (
            "llama-8b",
            "vllm",
            "dynamo",
            "matched capabilities: engine=vllm, gpu=true, mode=aggregated",
            "DynamoGraphDeployment/llama-8b",
        ),
        (
            "qwen3-llmd",
            "vllm",
            "llmd",
            "explicit provider selection",
            "Deployment/qwen3-llmd",
        ),
        (
            "qwen3-pd",
            "vllm",
            "llmd",
            "explicit provider selection",
            "Deployment/qwen3-pd-decode",
        ),
        (
            "qwen3-ray",
            "vllm",
            "kuberay",
            "explicit provider selection",
            "RayService/qwen3-ray",
        ),
        (
            "qwen3-vllm",
            "vllm",
            "vllm",
            "explicit provider selection",
            "Deployment/qwen3-vllm",
        ),
    ];
    assert_eq!(rows.len(), expected.len(), "{output}");
    for (row, (name, engine, provider, reason, upstream)) in rows.iter().zip(expected) {
        // llm-d's and vLLM's upstream is Kubernetes itself: Running in both modes.
        let phase = if name == "gemma-cpu" && !simulate {
            "Pending"
        } else if provider == "llmd" || provider == "vllm" {
            "Running"
        } else {
            expected_phase
        };
        assert_eq!(
            row,
            &vec![
                name.to_string(),
                engine.into(),
                provider.into(),
                reason.into(),
                phase.into(),
                upstream.into()
            ],
            "{output}"
        );
    }
    // The sandbox says what is real and what is simulated.
    assert!(
        output.contains("REAL       etcd, kube-apiserver"),
        "{output}"
    );
    assert!(
        output.contains("REAL       llm-d and direct vLLM upstream"),
        "{output}"
    );
    assert!(
        output.contains("SIMULATED  nodes and kubelets: KWOK"),
        "{output}"
    );
    if simulate {
        assert!(output.contains("SIMULATED  KAITO controller"), "{output}");
    } else {
        assert!(output.contains("REAL       KubeRay operator"), "{output}");
        assert!(
            output.contains("No KAITO or Dynamo operator runs here"),
            "{output}"
        );
        // The real KubeRay operator expanded the example's RayService into a RayCluster whose
        // Ray Pods run on the simulated nodes (a head and one GPU worker).
        assert!(
            output.contains("RayCluster qwen3-ray-raycluster-")
                && output.contains(": state ready, 2 Ray Pods Running on simulated nodes"),
            "{output}\n--- the end of the KubeRay operator's log ---\n{}",
            tail(&state.join("logs/kuberay-operator.log"), 60)
        );
    }
    assert!(output.contains("export KUBECONFIG="), "{output}");

    // down stops everything it started and removes the state.
    let processes = State::new(Some(state.clone())).processes();
    assert!(processes.len() >= 11, "{processes:?}");
    assert!(
        processes.iter().all(|(_, pid)| is_alive(*pid)),
        "everything runs after up returns"
    );
    let (ok, output) = sandbox(&state, &["down"], Duration::from_secs(60));
    assert!(ok, "{output}");
    let left: Vec<_> = processes.iter().filter(|(_, pid)| is_alive(*pid)).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!state.exists(), "the state folder is removed");
}

#[test]
fn sandbox_with_simulated_upstream_reaches_running() {
    run_up(true);
}

#[test]
fn sandbox_without_simulation_stops_at_deploying() {
    run_up(false);
}
