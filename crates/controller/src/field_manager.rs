//! The name our writes are recorded under in `metadata.managedFields`.
//!
//! kube-apiserver records each write under the request's `fieldManager`, or else under the
//! product part of its User-Agent; kube-rs sends no User-Agent, so without a name our writes
//! would show up under an empty manager. The migration guard tells our writes from another
//! controller's by this name, so every object write the controllers make carries it.

use kube::api::PostParams;

/// Our field manager. kube-controller-manager's controllers write as
/// `kube-controller-manager` (their User-Agent's product).
pub const FIELD_MANAGER: &str = "kube-endpoints";

/// Parameters for our creates and replaces: the default ones, under [`FIELD_MANAGER`].
pub fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}
