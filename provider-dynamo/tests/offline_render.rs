//! `render`, the SDK's offline command, for this provider (issue 40): the example
//! `examples/gpu-vllm-dynamo.yaml` renders to the provider's own render of the deployment (the one its
//! unit tests check), with the SDK's labels and hashes around it.

use airunway_api::provider::testing::offline_render;
use airunway_provider_dynamo::DynamoProvider;

#[test]
fn render_gives_the_providers_own_render() {
    offline_render::assert_render_is_the_providers_own(
        &DynamoProvider,
        env!("CARGO_MANIFEST_DIR"),
        "gpu-vllm-dynamo.yaml",
        "DynamoGraphDeployment",
    );
}
