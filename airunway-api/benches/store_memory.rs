//! Memory of the ModelDeployment stores the controllers keep (issue 41): bytes per deployment
//! held by a reflector store of generated deployments — decoded as the watches decode them and
//! trimmed as the core and a provider trim them, and untrimmed for comparison — at 1,000 and
//! 10,000 deployments, the upstream objects of a provider's watch cache (compact and as
//! `DynamicObject`s), then (divan) the time and allocations of filling such a store.
//!
//! `cargo bench -p airunway-api --features provider-sdk --bench store_memory`
//!
//! The CI short form is `tests/store_memory.rs` (the same stores at 500, against a budget).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
#![recursion_limit = "256"]

#[path = "support/store_fixture.rs"]
mod store_fixture;

use divan::{AllocProfiler, Bencher, black_box};
use store_fixture::{
    Counting, Keeper, UpstreamHeld, bytes_per_deployment, deployment_text, store,
    upstream_bytes_per_object, upstream_text,
};

#[global_allocator]
static ALLOC: AllocProfiler<Counting> = AllocProfiler::new(Counting);

fn main() {
    println!("bytes held per deployment (live heap after filling the store, divided by N):");
    println!("| keeper | 1,000 | 10,000 |");
    println!("|---|---|---|");
    for keeper in [
        Keeper::Core,
        Keeper::Provider,
        Keeper::ProviderTyped,
        Keeper::Untrimmed,
    ] {
        let small = bytes_per_deployment(1_000, keeper);
        let large = bytes_per_deployment(10_000, keeper);
        println!("| {keeper:?} | {small:.0} B | {large:.0} B |");
    }
    println!(
        "one deployment as listed: {} bytes of JSON",
        deployment_text(0).len()
    );
    println!("bytes held per upstream object in a provider's watch cache:");
    println!("| held as | 1,000 | 10,000 |");
    println!("|---|---|---|");
    for held in [UpstreamHeld::Compact, UpstreamHeld::Dynamic] {
        let small = upstream_bytes_per_object(1_000, held);
        let large = upstream_bytes_per_object(10_000, held);
        println!("| {held:?} | {small:.0} B | {large:.0} B |");
    }
    println!(
        "one upstream object (a RayService) as listed: {} bytes of JSON",
        upstream_text(0).len()
    );
    divan::main();
}

/// Filling a core store (decode, trim, insert) from the listed text of `n` deployments.
#[divan::bench(args = [1_000, 10_000], sample_count = 5, sample_size = 1)]
fn fill_core_store(bencher: Bencher<'_, '_>, n: usize) {
    let texts: Vec<String> = (0..n).map(deployment_text).collect();
    bencher.bench_local(|| black_box(store(&texts, Keeper::Core)));
}

/// Filling a provider store (decode, trim, insert).
#[divan::bench(args = [1_000, 10_000], sample_count = 5, sample_size = 1)]
fn fill_provider_store(bencher: Bencher<'_, '_>, n: usize) {
    let texts: Vec<String> = (0..n).map(deployment_text).collect();
    bencher.bench_local(|| black_box(store(&texts, Keeper::Provider)));
}
