//! The test kit: what the integration tests of every crate share.
//!
//! - [`cluster`]: an embedded API server per test with an in-process client, the controllers
//!   running in a task, typed access to the objects and waits on what they hold;
//! - [`build`]: the objects the controllers read, built with named setters;
//! - [`inspect`]: reading what the controllers wrote;
//! - [`mirroring`]: hand-written Endpoints and the slices mirrored from them;
//! - [`process`]: running a program and reading how it ended; skipping a test without its tool;
//! - [`replica`]: leader-elected replicas of the controllers, as `run` starts them;
//! - [`scenario`]: a live-controller test's steps as data, and the one runner for them;
//! - [`server`]: raw requests to the embedded API server, and its error Statuses;
//! - [`wait`]: retrying a probe until it holds, and bounding a future, without timing
//!   assertions.
//!
//! Tests run on tokio's multi-thread runtime, as the binaries do, so the controllers' workers
//! really run side by side with the server.

pub mod build;
pub mod cluster;
pub mod inspect;
pub mod mirroring;
pub mod process;
pub mod replica;
pub mod scenario;
pub mod server;
pub mod wait;

pub use build::{
    finished_web_pods, node, pod, service, web, web_pod, web_pods, NodeBuilder, PodBuilder,
    ServiceBuilder, DEFAULT_NODE, ZONE_LABEL,
};
pub use cluster::{
    endpoints_only, metric, mirroring_only, options, slices_only, Controllers, Manager, OverTcp,
    TestCluster,
};
pub use inspect::{
    addresses, conditions, endpoint_of, endpoints_by_pod, endpoints_ports, pod_names, ports,
    pretty, ready_transition, strings, trigger_time,
};
pub use wait::{eventually, eventually_on, until, within, DEADLINE};
