//! Criterion benchmarks of the reconcile crate's pure decision functions, in one target: a
//! module per function measured (see `benches/README.md`). Run one with its module name as
//! the filter, e.g. `cargo bench -p kube-endpoints-reconcile --features testing --bench
//! reconcile -- plan_slices`.

mod common;
mod endpoints_repack;
mod flap_sync;
mod metrics_gauges;
mod node_topology;
mod plan_slices;
mod slice_fill;
mod stored_objects;
mod topology_hints;

criterion::criterion_group! {
    name = benches;
    config = common::config();
    targets =
        endpoints_repack::bench_plan_endpoints,
        flap_sync::bench_flap_sync,
        metrics_gauges::bench_gauges,
        node_topology::bench_node_event,
        plan_slices::bench_plan_slices,
        slice_fill::bench_fill,
        stored_objects::bench_stored_objects,
        topology_hints::bench_add_hints,
}
criterion::criterion_main!(benches);
