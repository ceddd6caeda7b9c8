//! Typed keys for the objects the controllers track, displayed as `namespace/name`.

use compact_str::CompactString;
use std::fmt;

/// Identifies a Service (and so its Endpoints object and its slices). Both parts are kept
/// inline when they fit in 24 bytes, as nearly all do: every pod event makes the keys of its
/// Services, and every queue, tracker and metric clones them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceKey {
    /// The Service's namespace.
    pub namespace: CompactString,
    /// The Service's name.
    pub name: CompactString,
}

impl ServiceKey {
    /// Builds a key from its parts.
    pub fn new(namespace: impl Into<CompactString>, name: impl Into<CompactString>) -> Self {
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
