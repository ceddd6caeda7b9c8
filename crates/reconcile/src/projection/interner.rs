//! Shares equal immutable values between cached objects.
//!
//! The pods of one ReplicaSet carry the same labels and the same container ports; kept once
//! per pod, they are a heap block or two per pod that says what the pod next to it already
//! says. An [`Interner`] hands out one `Arc` per distinct value, so those pods share it. It
//! holds a reference to every value it has handed out and lets go of those no one else holds
//! any more when it has grown to twice what it held after its last sweep, so values of
//! objects long gone do not pile up, at an amortised constant cost per call.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

/// Distinct values of `T`, each handed out as one shared `Arc`.
#[derive(Debug)]
pub struct Interner<T: ?Sized> {
    values: HashSet<Arc<T>, foldhash::fast::RandomState>,
    /// How many values were still in use after the last sweep.
    kept: usize,
}

impl<T: ?Sized> Default for Interner<T> {
    fn default() -> Self {
        Self {
            values: HashSet::default(),
            kept: 0,
        }
    }
}

/// Below this many values the interner never sweeps: a small table costs less than the scan.
const SWEEP_FLOOR: usize = 64;

impl<T: ?Sized + Eq + Hash> Interner<T> {
    /// The shared value equal to `value`, or `value` itself (then shared from now on; an
    /// owned value such as a `Vec` moves into the `Arc` without a copy of its elements).
    pub fn intern<V>(&mut self, value: V) -> Arc<T>
    where
        V: Borrow<T>,
        Arc<T>: From<V>,
    {
        if let Some(shared) = self.values.get(value.borrow()) {
            return Arc::clone(shared);
        }
        if self.values.len() >= SWEEP_FLOOR.max(2 * self.kept) {
            self.values.retain(|v| Arc::strong_count(v) > 1);
            self.kept = self.values.len();
        }
        let shared: Arc<T> = Arc::from(value);
        self.values.insert(Arc::clone(&shared));
        shared
    }

    /// How many distinct values the interner holds (some perhaps no longer used elsewhere).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_allocation() {
        let mut interner = Interner::<[u32]>::default();
        let a = interner.intern(Vec::from([1, 2, 3]));
        let b = interner.intern(&[1, 2, 3][..]);
        let c = interner.intern(&[4][..]);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(interner.len(), 2);
    }

    #[test]
    fn values_no_one_holds_are_let_go_as_it_grows() {
        let mut interner = Interner::<str>::default();
        let kept = interner.intern("kept");
        for i in 0..10_000 {
            // Each value is dropped by its only user at once.
            drop(interner.intern(format!("gone-{i}")));
        }
        assert!(
            interner.len() <= 2 * SWEEP_FLOOR,
            "{} values held",
            interner.len()
        );
        assert!(Arc::ptr_eq(&kept, &interner.intern("kept")));
    }
}
