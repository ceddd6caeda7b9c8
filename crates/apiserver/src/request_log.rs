//! The server's own record of the requests it answered.
//!
//! `plan` reports the writes the controllers made from this log rather than from the
//! controllers' side, so what it prints is what reached the API server, in the order it got
//! there. Tests use it to see which API calls a controller makes. It is off unless
//! [`crate::Config::record_requests`] asks for it: a long-running `dev` server would otherwise
//! keep every request in memory.

use serde::Serialize;
use serde_json::Value;
use std::sync::{Mutex, PoisonError};

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRecord {
    /// get, list, watch, create, update, patch, delete or deletecollection.
    pub verb: String,
    /// The API group ("" for the core group).
    pub group: String,
    /// The resource's plural name, e.g. `endpointslices`.
    pub resource: String,
    /// `status` for the status subresource, else empty.
    pub subresource: String,
    /// The namespace in the path (empty for cluster-scoped or all-namespace requests).
    pub namespace: String,
    /// The object's name: from the path, or for a create the name the server gave it.
    pub name: String,
    /// The HTTP status code of the answer.
    pub code: u16,
    /// For a write the server accepted, the object as it answered it (absent for deletes that
    /// removed the object at once, reads and refusals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
}

impl RequestRecord {
    /// Whether the request asked to change something.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// Whether the server answered with success.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

/// The log itself: `None` when recording is off.
#[derive(Debug, Default)]
pub(crate) struct RequestLog(Option<Mutex<Vec<RequestRecord>>>);

impl RequestLog {
    pub fn new(enabled: bool) -> Self {
        Self(enabled.then(|| Mutex::new(Vec::new())))
    }

    pub fn enabled(&self) -> bool {
        self.0.is_some()
    }

    pub fn push(&self, record: RequestRecord) {
        if let Some(log) = &self.0 {
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(record);
        }
    }

    pub fn snapshot(&self) -> Vec<RequestRecord> {
        self.0
            .as_ref()
            .map(|log| log.lock().unwrap_or_else(PoisonError::into_inner).clone())
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |log| {
            log.lock().unwrap_or_else(PoisonError::into_inner).len()
        })
    }
}
