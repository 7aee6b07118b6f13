//! `airunway-provider-kuberay`: the AI Runway provider for KubeRay (RayService).
//!
//! Not implemented yet. Its registration (capabilities, explicit-only selection) is settled in
//! `core-controller/tests/fixtures/shipped-providers/kuberay.yaml`; the shim will be built on the
//! provider SDK in `airunway-api` like `provider-kaito` and `provider-dynamo`. Until then the
//! binary refuses to start rather than pretend to serve deployments.

fn main() -> std::process::ExitCode {
    eprintln!(
        "airunway-provider-kuberay is not implemented yet: deployments named for the 'kuberay' provider are not served. \
         See docs/providers/kuberay.md."
    );
    std::process::ExitCode::from(2)
}
