//! `kubectl-endpoints`, the workstation tools: `plan` (the live controllers on an in-process
//! API server), `audit`, `dev` and `apiserver` (the embedded API server), `conformance`,
//! `faults` and `bench`. Nothing here runs in a cluster; the controllers' own binary is
//! `kube-endpoints`, in the crate of that name.

pub mod audit;
pub mod cluster_version;
pub mod conformance;
pub mod dynamic;
pub mod explain;
pub mod fault_schedule;
pub mod listen;
pub mod manifests;
pub mod plan;
pub mod settle;
pub mod snapshot;
