//! `render`, the SDK's offline command, for this provider (issue 40): the example
//! `examples/gpu-vllm-direct.yaml` renders to the provider's own render of the deployment (the one its
//! unit tests check), with the SDK's labels and hashes around it.

use airunway_api::provider::testing::offline_render;
use airunway_provider_vllm::VllmProvider;

#[test]
fn render_gives_the_providers_own_render() {
    offline_render::assert_render_is_the_providers_own(
        &VllmProvider::default(),
        env!("CARGO_MANIFEST_DIR"),
        "gpu-vllm-direct.yaml",
        "Deployment",
    );
}

/// The registration `airunway-core` decides with offline (its shipped fixture) is this
/// provider's.
#[test]
fn registration_matches_the_shipped_fixture() {
    offline_render::assert_registration_is_the_shipped_fixture(
        &VllmProvider::default(),
        env!("CARGO_MANIFEST_DIR"),
    );
}
