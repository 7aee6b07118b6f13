//! `render`, the SDK's offline command, for this provider (issue 40): the example
//! `examples/gpu-vllm-kuberay.yaml` renders to the provider's own render of the deployment (the one its
//! unit tests check), with the SDK's labels and hashes around it.

use airunway_api::provider::testing::offline_render;
use airunway_provider_kuberay::KubeRayProvider;

#[test]
fn render_gives_the_providers_own_render() {
    offline_render::assert_render_is_the_providers_own(
        &KubeRayProvider,
        env!("CARGO_MANIFEST_DIR"),
        "gpu-vllm-kuberay.yaml",
        "RayService",
    );
}
