//! `airunway-provider-llmd`: the AI Runway provider for llm-d (Deployment and Service).
//!
//! Not implemented yet. Its registration (capabilities, explicit-only selection) is settled in
//! `core-controller/tests/fixtures/shipped-providers/llmd.yaml`; the shim will be built on the
//! provider SDK in `airunway-api` like `provider-kaito` and `provider-dynamo`. Until then the
//! binary refuses to start rather than pretend to serve deployments.

fn main() -> std::process::ExitCode {
    eprintln!(
        "airunway-provider-llmd is not implemented yet: deployments named for the 'llmd' provider are not served. \
         See docs/providers/llmd.md."
    );
    std::process::ExitCode::from(2)
}
