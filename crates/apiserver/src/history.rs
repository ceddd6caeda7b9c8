//! The bounded window of past changes that watches replay from.
//!
//! Every write produces exactly one event with its new resourceVersion. A watch starting at
//! resourceVersion `n` needs every event after `n`; once the window has dropped any of them,
//! the watch cannot be served and the client must re-list. kube-apiserver answers that case
//! with a 410 Gone `Expired` error, and clients (kube-rs's watcher, client-go's reflector) are
//! written to recover from it, so we keep the same contract.

use crate::resources::Resource;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// An object was created.
    Added,
    /// An object was changed.
    Modified,
    /// An object was removed.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change to one object.
#[derive(Debug)]
pub struct Change {
    /// resourceVersion the write produced.
    pub resource_version: u64,
    /// Which resource the object belongs to.
    pub resource: &'static Resource,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (for deletes: the object as it was removed).
    pub object: Arc<Value>,
    /// For modifications, the object before, so a selector watch can turn a change that moves
    /// an object out of (or into) its selection into DELETED (or ADDED).
    pub previous: Option<Arc<Value>>,
    /// `object` as a protobuf body, once a protobuf watch has sent it: every other protobuf
    /// watcher sends the same bytes instead of encoding the object again.
    pub protobuf: std::sync::OnceLock<bytes::Bytes>,
}

/// The watch from `requested` needs changes the window no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    /// The resourceVersion the watch asked for.
    pub requested: u64,
    /// The oldest resourceVersion from which a watch can still start.
    pub oldest: u64,
}

/// The kept changes, oldest first.
#[derive(Debug, Clone)]
pub struct History {
    changes: VecDeque<Arc<Change>>,
    window: usize,
    /// Every change after this resourceVersion is still held.
    horizon: u64,
}

impl History {
    /// An empty history that keeps at most `window` changes (at least one).
    pub fn new(window: usize) -> Self {
        Self {
            changes: VecDeque::new(),
            window: window.max(1),
            horizon: 0,
        }
    }

    /// Records a change; changes must arrive in resourceVersion order.
    pub fn push(&mut self, change: Change) {
        self.changes.push_back(Arc::new(change));
        while self.changes.len() > self.window {
            if let Some(dropped) = self.changes.pop_front() {
                self.horizon = dropped.resource_version;
            }
        }
    }

    /// Forgets every change up to `current`, so watches from any older resourceVersion expire.
    pub fn compact(&mut self, current: u64) {
        self.changes.clear();
        self.horizon = current;
    }

    /// The changes after `resource_version`, oldest first.
    pub fn since(&self, resource_version: u64) -> Result<Vec<Arc<Change>>, Expired> {
        if resource_version < self.horizon {
            return Err(Expired {
                requested: resource_version,
                oldest: self.horizon,
            });
        }
        let start = self
            .changes
            .partition_point(|c| c.resource_version <= resource_version);
        Ok(self.changes.iter().skip(start).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::RESOURCES;

    fn change(rv: u64) -> Change {
        Change {
            resource_version: rv,
            resource: &RESOURCES[0],
            kind: EventType::Added,
            object: Arc::new(Value::Null),
            previous: None,
            protobuf: Default::default(),
        }
    }

    #[test]
    fn watch_from_inside_the_window_gets_later_changes() {
        let mut h = History::new(3);
        for rv in 1..=5 {
            h.push(change(rv));
        }
        let rvs: Vec<u64> = h
            .since(2)
            .unwrap()
            .iter()
            .map(|c| c.resource_version)
            .collect();
        assert_eq!(rvs, vec![3, 4, 5]);
        assert!(h.since(5).unwrap().is_empty());
    }

    #[test]
    fn watch_from_before_the_window_is_expired() {
        let mut h = History::new(3);
        for rv in 1..=5 {
            h.push(change(rv));
        }
        assert_eq!(
            h.since(1).err(),
            Some(Expired {
                requested: 1,
                oldest: 2
            })
        );
    }

    #[test]
    fn compaction_expires_every_older_watch() {
        let mut h = History::new(10);
        h.push(change(1));
        h.compact(1);
        assert!(h.since(0).is_err());
        assert!(h.since(1).unwrap().is_empty());
    }
}
