//! What CI checks about the checked-in generated files, as tests of the built binary: the CRD
//! YAML and the gRPC bindings match their sources (`airunway-codegen --check`), and the binaries
//! depend only on `airunway-api` (`airunway-codegen check-deps`). Running them here, from the
//! binary `cargo test --workspace` builds, spares CI a separate build of the generator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

/// Runs the generator with `arg`; panics with its output when it fails.
fn run_codegen(arg: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_airunway-codegen"))
        .arg(arg)
        .output()
        .expect("starting airunway-codegen");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "airunway-codegen {arg} failed ({}):\n{stdout}{stderr}",
        output.status
    );
    stdout
}

#[test]
fn generated_files_match_their_sources() {
    run_codegen("--check");
}

#[test]
fn binaries_depend_only_on_airunway_api() {
    let report = run_codegen("check-deps");
    assert!(
        report.contains("dependency direction ok"),
        "check-deps said: {report}"
    );
}
