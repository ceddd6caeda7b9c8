//! The v1 Endpoints controller's decisions.
//!
//! [`subsets`] turns each pod into one-address subsets, [`repack`] merges them into the
//! canonical layout, [`truncate`] caps the object at 1000 addresses, `plan` compares with
//! what exists and decides whether to write, and [`stale`] guards against a cache that has
//! not yet seen our last write.

mod plan;
pub mod repack;
pub mod stale;
pub mod subsets;
pub mod truncate;

pub use plan::{plan_endpoints, EndpointsAction, EndpointsInput, EndpointsPlan};

/// Annotation marking an Endpoints object cut down to [`MAX_ADDRESSES`].
pub const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";
/// Most addresses (ready and not ready) one Endpoints object holds.
pub const MAX_ADDRESSES: usize = 1000;
/// Annotation of leader-election records stored in Endpoints; such objects are never touched.
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
