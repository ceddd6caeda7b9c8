//! The `kube-endpoints` command line: offline planning, conformance checks, and (through the
//! controller crate) the live controllers.

pub mod bench;
pub mod conformance;
pub mod listen;
pub mod manifests;
pub mod offline;
