//! The `kube-endpoints` command line: planning (the live controllers on an in-process API
//! server), conformance checks, and the live controllers against a cluster.

pub mod audit;
pub mod conformance;
pub mod dynamic;
pub mod fault_schedule;
pub mod flags;
pub mod listen;
pub mod manifests;
pub mod plan;
