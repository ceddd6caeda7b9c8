//! The `kube-endpoints` command line: planning (the live controllers on an in-process API
//! server), conformance checks, and the live controllers against a cluster.

pub mod bench;
pub mod conformance;
pub mod dynamic;
pub mod manifests;
pub mod plan;
