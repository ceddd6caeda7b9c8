//! Embedded API server.
