//! Live controllers.

pub mod client;
pub mod informer;
pub mod queue;
pub mod token_bucket;
