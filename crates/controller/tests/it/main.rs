//! The controller crate's integration tests, in one binary: each module is an area (one
//! controller, the informers, leader election, serving, RBAC, faults), and all of them build
//! on the shared test kit (`crates/testkit`).

mod client_budgets;
mod echoes;
mod endpoints_controller;
mod endpointslice;
mod faults;
mod ha;
mod informer;
mod informer_restart;
mod leader;
mod migration_guard;
mod mirroring_controller;
mod rbac;
mod secure_serving;
mod server_restart;
mod shadow;
mod write_latency;
