//! What we wrote, kept until the API server sends it back.
//!
//! Every slice or Endpoints object a controller writes comes back on its informer's watch a
//! moment later: the same endpoints, with new metadata. Decoding it means building every
//! address, name and uid again, one heap block each, to arrive at what we already had. So a
//! write keeps the message it sent, and the canonical form of its bytes (see
//! [`super::canonical`]); when an object of that name comes in, its metadata is decoded and
//! the rest is compared with that form. Equal, the kept message takes the place of decoding;
//! different (someone else wrote it, or the server changed it), the object is decoded as
//! always. What is kept is only ever used when the bytes say it is what came, so the cache
//! is a shortcut, never a source: one cache serves every client of the process.

use super::canonical::{canonical, Shape};
use super::envelope::WireError;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::Message;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// More kept messages than this and the cache starts over: a watch that stopped, so that
/// echoes no longer come, must not make it grow without end.
const MOST_KEPT: usize = 1024;

/// Messages we sent, by namespace and name, with their canonical form.
pub struct SentCache<M> {
    shape: &'static Shape,
    kept: Mutex<HashMap<(String, String), (Vec<u8>, M)>>,
    /// How many objects were recognised.
    recognised: AtomicU64,
}

impl<M: Message + Default> SentCache<M> {
    /// An empty cache of messages of `shape`.
    pub fn new(shape: &'static Shape) -> Self {
        Self {
            shape,
            kept: Mutex::new(HashMap::new()),
            recognised: AtomicU64::new(0),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (Vec<u8>, M)>> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `message`, whose encoding (without envelope) is `raw`, about to be sent for the
    /// object `namespace`/`name`.
    pub fn keep(&self, namespace: &str, name: &str, raw: &[u8], message: M) {
        let mut form = Vec::with_capacity(raw.len());
        if canonical(raw, self.shape, &mut form).is_err() {
            return;
        }
        let mut kept = self.kept();
        if kept.len() >= MOST_KEPT {
            kept.clear();
        }
        kept.insert((namespace.to_owned(), name.to_owned()), (form, message));
    }

    /// Drops what was kept for `namespace`/`name` (its write failed).
    pub fn forget(&self, namespace: &str, name: &str) {
        self.kept().remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// The message behind `raw` (an object's encoding, metadata at field 1), when it is one
    /// we sent: the kept message with `raw`'s metadata put in by `set_metadata`. `None` when
    /// nothing was kept for its name or the rest of it differs; the object must then be
    /// decoded. Either way, what was kept for the name is dropped: it came back.
    pub fn recognise(
        &self,
        raw: &[u8],
        set_metadata: impl FnOnce(&mut M, ObjectMeta),
    ) -> Result<Option<M>, WireError> {
        if self.kept().is_empty() {
            return Ok(None);
        }
        let Some(metadata) = metadata_bytes(raw)? else {
            return Ok(None);
        };
        // The name first (two strings), the whole metadata only for a name that was kept.
        let names = Names::decode(metadata)?;
        let key = (
            names.namespace.unwrap_or_default(),
            names.name.unwrap_or_default(),
        );
        let Some((form, mut message)) = self.kept().remove(&key) else {
            return Ok(None);
        };
        let metadata = ObjectMeta::decode(metadata)?;
        let mut came = Vec::with_capacity(form.len());
        if canonical(raw, self.shape, &mut came).is_err() || came != form {
            return Ok(None);
        }
        set_metadata(&mut message, metadata);
        self.recognised.fetch_add(1, Ordering::Relaxed);
        Ok(Some(message))
    }

    /// How many objects were recognised so far.
    pub fn recognised(&self) -> u64 {
        self.recognised.load(Ordering::Relaxed)
    }

    /// How many messages are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.kept().len()
    }
}

/// An `ObjectMeta`'s name and namespace, at its numbers; the decoder skips the rest.
#[derive(Clone, PartialEq, Message)]
struct Names {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
}

/// The bytes of the metadata (field 1) of an object's encoding; `None` without one, or with
/// more than one (which a decoder would merge: left to it).
fn metadata_bytes(raw: &[u8]) -> Result<Option<&[u8]>, WireError> {
    use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
    let mut rest = raw;
    let mut found = None;
    while !rest.is_empty() {
        let (tag, wire_type) = decode_key(&mut rest)?;
        if tag == 1 && wire_type == WireType::LengthDelimited {
            if found.is_some() {
                return Ok(None);
            }
            let length =
                usize::try_from(decode_varint(&mut rest)?).map_err(|_| WireError::Truncated)?;
            found = Some(rest.get(..length).ok_or(WireError::Truncated)?);
            rest = &rest[length..];
        } else {
            skip_field(wire_type, tag, &mut rest, DecodeContext::default())?;
        }
    }
    Ok(found)
}
