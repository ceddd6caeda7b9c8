//! Live controllers.
