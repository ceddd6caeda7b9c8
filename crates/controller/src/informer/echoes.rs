//! Echoes: the watch events that bring back an object exactly as we wrote it.
//!
//! Every slice and Endpoints object the controllers write comes back on their own watch a
//! few milliseconds later, at the resourceVersion the write's answer gave. Decoding it (tens
//! of endpoints, a dozen small strings each) was a large part of handling a readiness flip.
//! The writer already holds what the server stored: the object it sent, with the answer's
//! metadata (its resourceVersion, uid, generation, creation time, labels). So, once a write
//! succeeds, the writer leaves the projection the informer would make of the echo here,
//! under the object's key and the answer's resourceVersion; the watch reads only the key and
//! resourceVersion of each event's metadata, and an event that matches one left here is
//! applied with that projection instead of being decoded.
//!
//! On kube-apiserver the answer comes first nearly always (a watch event passes through
//! etcd's watch and the API server's watch cache), on the embedded server often not. So a
//! writer also notes each update it is about to send; an event for an object with a write
//! on its way is [`Recognised::InFlight`], and the watch lets the runtime run the tasks
//! already woken (the writer reading its answer among them) before it decodes it.
//!
//! What the server stores is what was sent: the controllers send every field the server
//! would default (tests against the embedded server compare the two projections), and the
//! metadata comes from the server's answer. The echo is projected by the informer's own
//! projection, from the sent object with the decoder's rules applied in place
//! ([`Echoed::canonicalise_body`]), so that what the decoder reads as absent (an empty list)
//! is absent in it too. An event the watch decoded for a key replaces what was left for it
//! unless it is older, so a projection whose echo went by (the watch was quicker than the
//! answer) does not stay; a deleted object's goes with it. The table holds only writes whose
//! echo has not arrived yet, a handful at a time; should the watch stop delivering, it is
//! cleared beyond [`LIMIT`] entries.

use super::store::FastMap;
use super::{ObjectKey, Projection, Store};
use crate::wire::kinds::{list, plain, WriteKind};
use crate::wire::{Encoding, Negotiated, WireKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use reconcile::projection::{StoredEndpoints, StoredSlice};
use std::sync::{Arc, Mutex, PoisonError};

/// The most writes whose echoes are awaited at once; beyond, the table starts over.
pub const LIMIT: usize = 4096;

/// Projections of written objects of kind `K`, awaiting their echo. Clones share one table.
pub struct Echoes<K, P> {
    table: Arc<Mutex<Table<P>>>,
    /// The informer's projection, which the echo would have gone through.
    project: Arc<Projection<K, P>>,
    /// The informer's store: an echo already applied is not awaited.
    store: Store<P>,
    /// The run's encoding: echoes are recognised in protobuf only, so in JSON nothing is
    /// left for them.
    wire: Negotiated,
}

/// A kind whose writes stand in for their echoes.
pub trait Echoed {
    /// The object's metadata.
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
    /// Makes everything but the metadata what the watch decodes (see
    /// [`WriteKind::canonicalise_body`]).
    fn canonicalise_body(&mut self);
}

impl<K> Echoed for K
where
    K: WriteKind
        + WireKind<Message = <K as WriteKind>::Full>
        + k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        k8s_openapi::Metadata::metadata_mut(self)
    }

    fn canonicalise_body(&mut self) {
        WriteKind::canonicalise_body(self);
    }
}

/// What a projection says of the version it was made from (and, as every stored object
/// does, of where it lives).
pub trait Versioned: super::store::Keyed {
    /// The resourceVersion of the object projected.
    fn resource_version(&self) -> Option<&str>;
}

impl Versioned for StoredSlice {
    fn resource_version(&self) -> Option<&str> {
        self.without_endpoints()
            .metadata
            .resource_version
            .as_deref()
    }
}

impl Versioned for StoredEndpoints {
    fn resource_version(&self) -> Option<&str> {
        self.without_subsets().metadata.resource_version.as_deref()
    }
}

struct Table<P> {
    awaited: FastMap<ObjectKey, Awaited<P>>,
    /// Objects with a write on its way, by how many.
    in_flight: FastMap<ObjectKey, u32>,
    /// How many echoes were taken.
    taken: u64,
}

impl<P> Default for Table<P> {
    fn default() -> Self {
        Self {
            awaited: FastMap::default(),
            in_flight: FastMap::default(),
            taken: 0,
        }
    }
}

/// What the table says of a watch event.
#[derive(Debug)]
pub enum Recognised<P> {
    /// The echo of our write: its key and projection, taken out of the table.
    Echo(ObjectKey, Arc<P>),
    /// Not an awaited echo, but a write of the object is on its way: its answer may be about
    /// to be read, and this its echo.
    InFlight,
    /// Nothing awaited for the object.
    Unknown,
}

/// A write on its way, from just before it is sent until it is answered or given up (the
/// guard is dropped).
pub struct Flight<'a, K, P> {
    echoes: &'a Echoes<K, P>,
    key: Option<ObjectKey>,
}

impl<K: Echoed, P: Versioned + Send + Sync + 'static> Flight<'_, K, P> {
    /// The write went through: see [`Echoes::written`].
    pub fn written(self, sent: K, answer: &ObjectMeta) {
        self.echoes.written(sent, answer);
    }
}

impl<K, P> Drop for Flight<'_, K, P> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let in_flight = &mut self.echoes.lock().in_flight;
        if let Some(count) = in_flight.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&key);
            }
        }
    }
}

struct Awaited<P> {
    resource_version: String,
    projection: Arc<P>,
}

impl<K, P> Clone for Echoes<K, P> {
    fn clone(&self) -> Self {
        Self {
            table: Arc::clone(&self.table),
            project: Arc::clone(&self.project),
            store: self.store.clone(),
            wire: self.wire.clone(),
        }
    }
}

impl<K, P> std::fmt::Debug for Echoes<K, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Echoes")
            .field("awaited", &self.len())
            .finish()
    }
}

impl<K: Echoed, P: Versioned + Send + Sync + 'static> Echoes<K, P> {
    /// Echoes for the informer that fills `store` with `project`'s output, speaking `wire`
    /// (made by [`Informer::echoes`](super::Informer::echoes)).
    pub(super) fn new(store: Store<P>, wire: Negotiated, project: Arc<Projection<K, P>>) -> Self {
        Self {
            table: Arc::default(),
            project,
            store,
            wire,
        }
    }

    /// A write of `sent` went through and the server answered with `answer` (the metadata
    /// our writes read back): awaits its echo, projected as the informer would project it
    /// from the object the server stored, which `sent` becomes. Fields the answer does not
    /// carry (owner references, generateName, finalizers) are the ones we sent, which the
    /// server keeps.
    pub fn written(&self, mut sent: K, answer: &ObjectMeta) {
        let (Some(name), Some(resource_version)) = (&answer.name, &answer.resource_version) else {
            return;
        };
        if self.wire.current() != Encoding::Protobuf {
            return;
        }
        let key = ObjectKey::new(answer.namespace.as_deref().unwrap_or_default(), name);
        // The watch can be quicker than the answer: the echo was decoded and applied already.
        // (The informer applies what it decoded before it lets go of the runtime, so on one
        // thread this cannot interleave; on more, an entry left behind is dropped by the
        // key's next event.)
        if self
            .store
            .get(&key)
            .is_some_and(|held| held.resource_version() == Some(resource_version))
        {
            return;
        }
        // The decoder's rules for the three (`object_meta`'s): empty reads as absent.
        let metadata = sent.metadata_mut();
        *metadata = ObjectMeta {
            owner_references: metadata.owner_references.take().and_then(list),
            generate_name: plain(metadata.generate_name.take()),
            finalizers: metadata.finalizers.take().and_then(list),
            ..answer.clone()
        };
        sent.canonicalise_body();
        let Some(projection) = (self.project)(sent) else {
            return;
        };
        let awaited = Awaited {
            resource_version: resource_version.clone(),
            projection,
        };
        let awaited_now = &mut self.lock().awaited;
        if awaited_now.len() >= LIMIT {
            awaited_now.clear();
        }
        awaited_now.insert(key, awaited);
    }
}

impl<K, P> Echoes<K, P> {
    /// The informer's wire changed to `wire`.
    pub(super) fn speaking(&mut self, wire: Negotiated) {
        self.wire = wire;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<P>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A write of the object `key` (`None` when the server names it) is about to be sent:
    /// until the guard is dropped, events for the object are [`Recognised::InFlight`].
    pub fn sending(&self, key: Option<ObjectKey>) -> Flight<'_, K, P> {
        if let Some(key) = &key {
            let in_flight = &mut self.lock().in_flight;
            if in_flight.len() >= LIMIT {
                in_flight.clear();
            }
            *in_flight.entry(key.clone()).or_default() += 1;
        }
        Flight { echoes: self, key }
    }

    /// What the table says of an event for the object `name` in `namespace` at
    /// `resource_version`; an awaited echo is taken out.
    pub fn recognise(&self, namespace: &str, name: &str, resource_version: &str) -> Recognised<P> {
        let mut table = self.lock();
        if table.awaited.is_empty() && table.in_flight.is_empty() {
            return Recognised::Unknown;
        }
        let key = ObjectKey::new(namespace, name);
        match table.awaited.get(&key) {
            Some(awaited) if awaited.resource_version == resource_version => {
                if let Some(awaited) = table.awaited.remove(&key) {
                    table.taken += 1;
                    return Recognised::Echo(key, awaited.projection);
                }
            }
            _ => {}
        }
        if table.in_flight.contains_key(&key) {
            Recognised::InFlight
        } else {
            Recognised::Unknown
        }
    }

    /// The watch decoded an event for `key` at `resource_version` (a delete when `deleted`):
    /// what was awaited for the key is dropped unless it is newer than the event.
    pub fn passed(&self, key: &ObjectKey, resource_version: Option<&str>, deleted: bool) {
        let table = &mut self.lock().awaited;
        if table.is_empty() {
            return;
        }
        let Some(awaited) = table.get(key) else {
            return;
        };
        let older = |event: &str| {
            matches!(
                (event.parse::<u64>(), awaited.resource_version.parse::<u64>()),
                (Ok(event), Ok(awaited)) if event < awaited
            )
        };
        if deleted || !resource_version.is_some_and(older) {
            table.remove(key);
        }
    }

    /// How many echoes are awaited.
    pub fn len(&self) -> usize {
        self.lock().awaited.len()
    }

    /// Whether no echo is awaited.
    pub fn is_empty(&self) -> bool {
        self.lock().awaited.is_empty()
    }

    /// How many echoes were taken in all.
    pub fn taken(&self) -> u64 {
        self.lock().taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Versioned for ObjectMeta {
        fn resource_version(&self) -> Option<&str> {
            self.resource_version.as_deref()
        }
    }

    /// Metadata alone.
    impl Echoed for ObjectMeta {
        fn metadata_mut(&mut self) -> &mut ObjectMeta {
            self
        }
        fn canonicalise_body(&mut self) {}
    }

    fn echoes_over(store: Store<ObjectMeta>, wire: Negotiated) -> Echoes<ObjectMeta, ObjectMeta> {
        Echoes::new(store, wire, Arc::new(|m| Some(Arc::new(m))))
    }

    fn echoes() -> Echoes<ObjectMeta, ObjectMeta> {
        echoes_over(Store::new(), Negotiated::default())
    }

    /// The echo taken for an event, if it is one.
    fn take(
        echoes: &Echoes<ObjectMeta, ObjectMeta>,
        namespace: &str,
        name: &str,
        version: &str,
    ) -> Option<(ObjectKey, Arc<ObjectMeta>)> {
        match echoes.recognise(namespace, name, version) {
            Recognised::Echo(key, kept) => Some((key, kept)),
            Recognised::InFlight | Recognised::Unknown => None,
        }
    }

    fn meta(name: &str, resource_version: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("shop".into()),
            name: Some(name.into()),
            resource_version: Some(resource_version.into()),
            ..ObjectMeta::default()
        }
    }

    fn sent() -> ObjectMeta {
        ObjectMeta {
            generate_name: Some("web-".into()),
            finalizers: Some(vec!["f".into()]),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn an_echo_at_the_answers_version_is_taken_once_with_what_was_sent() {
        let echoes = echoes();
        echoes.written(sent(), &meta("web-1", "10"));
        assert!(take(&echoes, "shop", "web-1", "9").is_none());
        assert!(take(&echoes, "other", "web-1", "10").is_none());
        let (key, kept) = take(&echoes, "shop", "web-1", "10").unwrap();
        assert_eq!(key, ObjectKey::new("shop", "web-1"));
        assert_eq!(kept.resource_version.as_deref(), Some("10"));
        assert_eq!(kept.generate_name.as_deref(), Some("web-"));
        assert_eq!(kept.finalizers, Some(vec!["f".into()]));
        assert!(take(&echoes, "shop", "web-1", "10").is_none());
        assert!(echoes.is_empty());
        assert_eq!(echoes.taken(), 1);
    }

    #[test]
    fn a_decoded_event_drops_what_it_makes_stale_but_not_what_is_newer() {
        let echoes = echoes();
        let key = ObjectKey::new("shop", "web-1");
        echoes.written(sent(), &meta("web-1", "10"));
        // The state before our write, still on its way: the echo is yet to come.
        echoes.passed(&key, Some("8"), false);
        assert_eq!(echoes.len(), 1);
        // The echo was decoded before the answer was handled, or something newer came.
        echoes.passed(&key, Some("10"), false);
        assert!(echoes.is_empty());
        echoes.written(sent(), &meta("web-1", "12"));
        echoes.passed(&key, Some("11"), true);
        assert!(echoes.is_empty(), "a delete drops it whatever its version");
        echoes.written(sent(), &meta("web-1", "a"));
        echoes.passed(&key, Some("b"), false);
        assert!(
            echoes.is_empty(),
            "versions that are not numbers are not ordered"
        );
    }

    #[test]
    fn events_for_an_object_being_written_are_in_flight_until_the_answer_or_the_end() {
        let echoes = echoes();
        let key = ObjectKey::new("shop", "web-1");
        let flight = echoes.sending(Some(key.clone()));
        assert!(matches!(
            echoes.recognise("shop", "web-1", "10"),
            Recognised::InFlight
        ));
        assert!(matches!(
            echoes.recognise("shop", "web-2", "10"),
            Recognised::Unknown
        ));
        flight.written(sent(), &meta("web-1", "10"));
        assert!(matches!(
            echoes.recognise("shop", "web-1", "9"),
            Recognised::Unknown
        ));
        assert!(matches!(
            echoes.recognise("shop", "web-1", "10"),
            Recognised::Echo(..)
        ));
        // A write given up (refused, or its future dropped) is in flight no more.
        let failed = echoes.sending(Some(key.clone()));
        assert!(matches!(
            echoes.recognise("shop", "web-1", "11"),
            Recognised::InFlight
        ));
        drop(failed);
        assert!(matches!(
            echoes.recognise("shop", "web-1", "11"),
            Recognised::Unknown
        ));
        // A create the server names is never in flight by name.
        drop(echoes.sending(None));
        assert!(echoes.is_empty());
    }

    #[test]
    fn an_echo_the_watch_brought_before_the_answer_is_not_awaited() {
        let store = Store::new();
        let echoes = echoes_over(store.clone(), Negotiated::default());
        store.insert(
            ObjectKey::new("shop", "web-1"),
            Arc::new(meta("web-1", "10")),
        );
        echoes.written(sent(), &meta("web-1", "10"));
        assert!(echoes.is_empty());
        echoes.written(sent(), &meta("web-1", "11"));
        assert_eq!(echoes.len(), 1);
    }

    #[test]
    fn an_answer_without_a_name_or_version_is_not_awaited_and_the_table_is_bounded() {
        let echoes = echoes();
        echoes.written(sent(), &ObjectMeta::default());
        assert!(echoes.is_empty());
        for i in 0..LIMIT + 10 {
            echoes.written(sent(), &meta(&format!("web-{i}"), "1"));
        }
        assert!(echoes.len() <= LIMIT);
    }

    #[test]
    fn nothing_is_left_for_echoes_in_json_which_are_always_decoded() {
        let echoes = echoes_over(Store::new(), Negotiated::new(Encoding::Json));
        echoes.written(sent(), &meta("web-1", "10"));
        assert!(echoes.is_empty());
    }
}
