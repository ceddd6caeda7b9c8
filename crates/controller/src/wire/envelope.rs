//! The protobuf envelope around every object, and the framing of watch streams.
//!
//! A body is `k8s\0` followed by a `runtime.Unknown` message: `typeMeta` (apiVersion, kind),
//! `raw` (the object's own message), and a content encoding and type that are empty for
//! plain protobuf. A watch stream is a sequence of frames: a 4-byte big-endian length, then a
//! `meta.v1.WatchEvent` of that many bytes, whose `object.raw` is again an enveloped object.
//!
//! The messages here declare only these fields, with their Kubernetes field numbers, and
//! keep `raw` as [`Bytes`] so that decoding from a received buffer slices it instead of
//! copying the object.

use bytes::{Buf, Bytes, BytesMut};
use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
use prost::Message;

/// The prefix of a protobuf-encoded Kubernetes object.
pub const MAGIC: &[u8] = b"k8s\0";

/// The largest watch frame accepted: far above any object the API server stores (etcd's
/// request limit is 1.5 MiB), low enough that a corrupt length cannot make us allocate
/// gigabytes.
const MAX_FRAME: usize = 64 << 20;

/// What went wrong decoding a protobuf body.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The body does not start with `k8s\0`.
    #[error("the body is not a protobuf-encoded Kubernetes object (no k8s\\0 prefix)")]
    NoMagic,
    /// A message did not decode.
    #[error("invalid protobuf: {0}")]
    Decode(#[from] prost::DecodeError),
    /// The envelope holds another kind than the one asked for.
    #[error("expected a {expected}, the server sent a {actual}")]
    WrongKind {
        /// The kind the caller decodes.
        expected: String,
        /// The kind the envelope names.
        actual: String,
    },
    /// The envelope names a content encoding (e.g. gzip) we do not undo.
    #[error("unsupported content encoding {0:?} in a protobuf envelope")]
    ContentEncoding(String),
    /// A watch frame declares an absurd length.
    #[error("a watch frame of {0} bytes is larger than the {MAX_FRAME} bytes accepted")]
    FrameTooLarge(usize),
    /// A length-delimited field runs past the end of its message.
    #[error("a field runs past the end of its message")]
    Truncated,
    /// A watch event without its object.
    #[error("a watch event of type {0:?} carries no object")]
    NoObject(String),
}

/// `runtime.Unknown`: the envelope. Declared here rather than taken from `k8s-pb`, whose
/// `raw` is a `Vec` copied out of the body, where this one shares the body's bytes.
#[derive(Clone, PartialEq, Message)]
pub struct Unknown {
    /// `typeMeta`.
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    /// `raw`: the object's message.
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub raw: Option<Bytes>,
    /// `contentEncoding`: empty for plain protobuf.
    #[prost(string, optional, tag = "3")]
    pub content_encoding: Option<String>,
    /// `contentType`: empty for protobuf.
    #[prost(string, optional, tag = "4")]
    pub content_type: Option<String>,
}

/// `runtime.RawExtension`.
#[derive(Clone, PartialEq, Message)]
pub struct RawExtension {
    /// `raw`: an enveloped object.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub raw: Option<Bytes>,
}

/// `meta.v1.WatchEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct WatchEvent {
    /// `type`: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    /// `object`.
    #[prost(message, optional, tag = "2")]
    pub object: Option<RawExtension>,
}

/// An object taken out of its envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Enveloped {
    /// The envelope's apiVersion.
    pub api_version: String,
    /// The envelope's kind.
    pub kind: String,
    /// The object's own message.
    pub raw: Bytes,
}

impl Enveloped {
    /// Fails unless the envelope holds a `kind`.
    pub fn expect_kind(self, kind: &str) -> Result<Bytes, WireError> {
        if self.kind == kind {
            Ok(self.raw)
        } else {
            Err(WireError::WrongKind {
                expected: kind.to_owned(),
                actual: self.kind,
            })
        }
    }
}

/// Takes an object out of a body (`k8s\0` and the envelope).
pub fn open(mut body: Bytes) -> Result<Enveloped, WireError> {
    if !body.starts_with(MAGIC) {
        return Err(WireError::NoMagic);
    }
    body.advance(MAGIC.len());
    let envelope = Unknown::decode(body)?;
    if let Some(encoding) = envelope.content_encoding.filter(|e| !e.is_empty()) {
        return Err(WireError::ContentEncoding(encoding));
    }
    let type_meta = envelope.type_meta.unwrap_or_default();
    Ok(Enveloped {
        api_version: type_meta.api_version.unwrap_or_default(),
        kind: type_meta.kind.unwrap_or_default(),
        raw: envelope.raw.unwrap_or_default(),
    })
}

/// Puts an object's message (`raw`, its bytes) in an envelope naming `api_version` and
/// `kind`, behind `k8s\0`.
pub fn seal(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let envelope = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(Bytes::from(raw)),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = Vec::with_capacity(MAGIC.len() + envelope.encoded_len());
    body.extend_from_slice(MAGIC);
    envelope
        .encode(&mut body)
        .expect("a Vec grows to hold any message");
    body
}

/// One watch event: its type and its object, still enveloped.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
    pub kind: String,
    /// The object (a Status for ERROR).
    pub object: Enveloped,
}

/// Decodes one frame's `WatchEvent`.
pub fn event(frame: Bytes) -> Result<Event, WireError> {
    let event = WatchEvent::decode(frame)?;
    let kind = event.r#type.unwrap_or_default();
    let Some(raw) = event.object.and_then(|o| o.raw) else {
        return Err(WireError::NoObject(kind));
    };
    Ok(Event {
        kind,
        object: open(raw)?,
    })
}

/// Splits a watch stream's bytes into frames as they arrive.
#[derive(Debug, Default)]
pub struct Frames {
    buffer: BytesMut,
}

impl Frames {
    /// Adds received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// The next complete frame's `WatchEvent` bytes, `Ok(None)` until one has arrived whole.
    pub fn next_frame(&mut self) -> Result<Option<Bytes>, WireError> {
        let Some(header) = self.buffer.get(..4) else {
            return Ok(None);
        };
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if length > MAX_FRAME {
            return Err(WireError::FrameTooLarge(length));
        }
        if self.buffer.len() < 4 + length {
            self.buffer.reserve(4 + length - self.buffer.len());
            return Ok(None);
        }
        self.buffer.advance(4);
        Ok(Some(self.buffer.split_to(length).freeze()))
    }

    /// Whether bytes of an unfinished frame are left (the stream ended mid-frame).
    #[cfg(test)]
    pub fn has_partial_frame(&self) -> bool {
        !self.buffer.is_empty()
    }
}

/// Frames an event as a watch stream carries it.
#[cfg(test)]
pub fn frame(kind: &str, object: Vec<u8>) -> Vec<u8> {
    let event = WatchEvent {
        r#type: Some(kind.to_owned()),
        object: Some(RawExtension {
            raw: Some(Bytes::from(object)),
        }),
    };
    let length = u32::try_from(event.encoded_len()).expect("a watch event under 4 GiB");
    let mut framed = length.to_be_bytes().to_vec();
    event
        .encode(&mut framed)
        .expect("a Vec grows to hold any message");
    framed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_object_opens_to_its_kind_and_bytes() {
        let meta = TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("X".into()),
        };
        let body = seal("discovery.k8s.io/v1", "EndpointSlice", meta.encode_to_vec());
        assert!(body.starts_with(MAGIC));
        let opened = open(Bytes::from(body)).unwrap();
        assert_eq!(opened.api_version, "discovery.k8s.io/v1");
        assert_eq!(opened.kind, "EndpointSlice");
        assert_eq!(TypeMeta::decode(opened.raw.clone()).unwrap(), meta);
        assert!(matches!(
            opened.expect_kind("Pod"),
            Err(WireError::WrongKind { .. })
        ));
    }

    #[test]
    fn a_json_body_is_not_taken_for_protobuf() {
        assert!(matches!(
            open(Bytes::from_static(b"{\"kind\":\"Pod\"}")),
            Err(WireError::NoMagic)
        ));
    }

    #[test]
    fn frames_come_out_whole_however_the_bytes_are_split() {
        let one = frame(
            "ADDED",
            seal("v1", "Pod", TypeMeta::default().encode_to_vec()),
        );
        let two = frame(
            "BOOKMARK",
            seal("v1", "Pod", TypeMeta::default().encode_to_vec()),
        );
        let stream: Vec<u8> = one.iter().chain(&two).copied().collect();
        for split in 1..stream.len() {
            let mut frames = Frames::default();
            let mut kinds = Vec::new();
            for chunk in stream.chunks(split) {
                frames.push(chunk);
                while let Some(frame) = frames.next_frame().unwrap() {
                    kinds.push(event(frame).unwrap().kind);
                }
            }
            assert_eq!(kinds, ["ADDED", "BOOKMARK"], "chunks of {split}");
            assert!(!frames.has_partial_frame());
        }
    }

    #[test]
    fn an_absurd_frame_length_is_an_error_not_an_allocation() {
        let mut frames = Frames::default();
        frames.push(&u32::MAX.to_be_bytes());
        assert!(matches!(
            frames.next_frame(),
            Err(WireError::FrameTooLarge(_))
        ));
    }
}
