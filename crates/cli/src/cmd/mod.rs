//! One module per subcommand.

pub mod conformance;
pub mod plan;
