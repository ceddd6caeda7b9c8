//! Typed keys for the objects the controllers track, displayed as `namespace/name`.

use std::fmt;

/// Identifies a Service (and so its Endpoints object and its slices).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceKey {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
}

impl ServiceKey {
    /// Builds a key from its parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}
