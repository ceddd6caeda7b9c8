//! How far an informer has got: the resourceVersion up to which every change of its kind has
//! been applied to the store and handed to the handlers.
//!
//! A caller waiting for the controllers to run out of work (`plan`, the conformance cases)
//! must know that no change the server holds is still on its way to a handler: between a
//! write and the watch event that queues the next sync, every queue is empty. The server hands
//! out one increasing resourceVersion and a watch delivers its kind's changes in that order,
//! so "this informer applied everything up to n" and "the server's latest change of this kind
//! is at n or before" together say that nothing is on its way. Bookmarks move the version on
//! as events do. While a list is read, and while a watch reconnects (possibly to a server that
//! restarted with other state), the version is unknown.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Stands for "unknown": resourceVersions start at 1.
const UNKNOWN: u64 = 0;

/// One informer's progress. Clones share it; the informer advances it, callers read it.
#[derive(Debug, Clone)]
pub struct Progress {
    group: Arc<str>,
    plural: Arc<str>,
    applied: Arc<AtomicU64>,
}

impl Progress {
    /// The progress of an informer of the resource `plural` in API group `group` (empty for
    /// the core group), unknown until it has applied a list.
    pub fn new(group: Cow<'_, str>, plural: Cow<'_, str>) -> Self {
        Self {
            group: group.into(),
            plural: plural.into(),
            applied: Arc::new(AtomicU64::new(UNKNOWN)),
        }
    }

    /// The API group of the watched resource (empty for the core group).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The plural name of the watched resource, e.g. `endpointslices`.
    pub fn plural(&self) -> &str {
        &self.plural
    }

    /// The resourceVersion through which every change has been applied and handled, or
    /// `None` while that is unknown (listing, reconnecting, a version that is not a number).
    pub fn applied(&self) -> Option<u64> {
        Some(self.applied.load(Ordering::SeqCst)).filter(|v| *v != UNKNOWN)
    }

    /// Whether the informer has applied and handled every change up to `latest`, the
    /// resourceVersion of the server's latest change of this resource.
    pub fn has_applied(&self, latest: u64) -> bool {
        self.applied().is_some_and(|applied| applied >= latest)
    }

    /// Everything up to `resource_version` has been applied and handled. A version that is not
    /// a number (servers other than etcd-backed ones may hand out opaque versions) makes the
    /// progress unknown rather than wrong.
    pub(crate) fn advance_to(&self, resource_version: &str) {
        let version = resource_version.parse::<u64>().unwrap_or(UNKNOWN);
        self.applied.store(version, Ordering::SeqCst);
    }

    /// The informer starts over (a new list) or reconnects: what it applied may not match
    /// what the server on the other end holds.
    pub(crate) fn forget(&self) {
        self.applied.store(UNKNOWN, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> Progress {
        Progress::new("".into(), "pods".into())
    }

    #[test]
    fn progress_is_unknown_until_a_version_is_applied_and_after_it_is_forgotten() {
        let progress = pods();
        assert_eq!(progress.applied(), None);
        assert!(!progress.has_applied(1));
        progress.advance_to("41");
        assert_eq!(progress.applied(), Some(41));
        assert!(progress.has_applied(41));
        assert!(progress.has_applied(7));
        assert!(
            !progress.has_applied(42),
            "a later change is still on its way"
        );
        progress.forget();
        assert!(!progress.has_applied(1));
    }

    #[test]
    fn an_opaque_version_makes_the_progress_unknown() {
        let progress = pods();
        progress.advance_to("12");
        progress.advance_to("opaque");
        assert_eq!(progress.applied(), None);
        assert_eq!((progress.group(), progress.plural()), ("", "pods"));
    }
}
