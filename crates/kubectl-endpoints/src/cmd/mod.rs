//! One module per subcommand.

pub mod apiserver;
pub mod audit;
pub mod bench;
pub mod conformance;
pub mod dev;
pub mod explain;
pub mod faults;
pub mod plan;
