//! Live controllers.

pub mod client;
pub mod config;
pub mod health;
pub mod informer;
pub mod leader;
pub mod metrics;
pub mod queue;
pub mod token_bucket;
