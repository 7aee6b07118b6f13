//! `airunway-render`: writes `deploy/install.yaml`, the single-file install rendered from
//! `deploy/default` (for people without kustomize), or with `--check` fails when the checked-in
//! file differs from a fresh rendering (CI). Uses the harness's kustomize subset
//! (`airunway_e2e::kustomize`).

use std::process::ExitCode;

use airunway_e2e::{kustomize, paths};

const HEADER: &str = "# AI Runway: CRDs, the core and the shipped providers in airunway-system, rendered from\n\
# deploy/default by `cargo run -p airunway-e2e --bin airunway-render` (do not edit; CI fails on\n\
# drift). Install: kubectl apply --server-side -f deploy/install.yaml\n";

fn main() -> ExitCode {
    let check = std::env::args().skip(1).any(|a| a == "--check");
    let root = paths::workspace_root();
    let rendered = match kustomize::render_yaml(&root.join("deploy/default")) {
        Ok(body) => format!("{HEADER}{body}"),
        Err(e) => {
            eprintln!("error: rendering deploy/default: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let path = root.join("deploy/install.yaml");
    if check {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != rendered {
            eprintln!(
                "error: deploy/install.yaml is out of date with deploy/default: run \
                 `cargo run -p airunway-e2e --bin airunway-render` and commit it"
            );
            return ExitCode::FAILURE;
        }
        println!("deploy/install.yaml is up to date");
        return ExitCode::SUCCESS;
    }
    match std::fs::write(&path, rendered) {
        Ok(()) => {
            println!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: writing {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
