//! Events the controllers decide to record, returned as data and published by the runtime.

use serde::Serialize;

/// `Normal` or `Warning`, as in core/v1 Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventType {
    /// An informational event.
    Normal,
    /// Something went wrong or a feature was turned off.
    Warning,
}

impl EventType {
    /// The string written into the Event's `type` field.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event about a Service (or its Endpoints object), as upstream would record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedEvent {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// The machine-readable reason, e.g. `TopologyAwareHintsEnabled`.
    pub reason: String,
    /// The human-readable message.
    pub message: String,
}

impl PlannedEvent {
    /// A Warning event.
    pub fn warning(reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// A Normal event.
    pub fn normal(reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: EventType::Normal,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}
