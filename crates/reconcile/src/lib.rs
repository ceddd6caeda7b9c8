//! The decisions of the Endpoints and EndpointSlice controllers, as pure functions.
//!
//! Everything that decides *what* the cluster should hold lives here: which pods count, which
//! ports they serve, how endpoints are packed into slices, which hints they carry, what the v1
//! Endpoints object looks like. Nothing in this crate does I/O, awaits, or reads a clock; time
//! comes in as a value. The live controller, the offline `plan` command and the tests all call
//! the same functions:
//!
//! ```text
//!  Service + selected pods + existing slices + nodes + trigger time
//!        │
//!        ▼
//!  slice::plan_slices ──► SlicePlan { batches of create / update / delete, events, metrics }
//!  endpoints::plan_endpoints ──► EndpointsPlan { create | update | nothing, events }
//!
//!  Service (selector-less) + hand-written Endpoints + mirrored slices
//!        │
//!        ▼
//!  mirroring::plan_mirroring ──► MirroringPlan { create / update / delete, events, figures }
//! ```
//!
//! State that upstream keeps between syncs (the topology cache, the slice tracker, the
//! trigger-time tracker, the metrics cache) is held in plain structs with `&mut self` methods;
//! the runtime wraps each in one lock.
#![warn(missing_docs)]

pub mod address_family;
pub mod compare;
pub mod endpoints;
pub mod event;
pub mod find_port;
pub mod ip;
pub mod keys;
pub mod kube_version;
pub mod labels;
pub mod membership;
pub mod metrics_cache;
pub mod mirroring;
pub mod pod_rules;
pub mod projection;
pub mod selector;
pub mod slice;
pub mod topology;
pub mod traffic_distribution;
pub mod trigger_time;
pub mod upstream_order;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use endpoints::{plan_endpoints, EndpointsInput, EndpointsPlan};
pub use kube_version::{KubeVersion, VersionRules};
pub use mirroring::{plan_mirroring, MirroringInput, MirroringPlan};
pub use slice::{plan_slices, SliceInput, SlicePlan};

/// Re-exported so callers name timestamps the way this crate does.
pub use k8s_openapi::jiff::Timestamp;
