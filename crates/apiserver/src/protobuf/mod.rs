//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), transcoded to and
//! from the JSON objects the server stores.
//!
//! One generic transcoder serves every kind: it walks the message descriptors of Kubernetes
//! v1.36 (compiled into `schema/descriptors.binpb`), with the Go facts that decide the JSON
//! form of each field (`schema/go-fields.txt`); both come from
//! `scripts/gen-protobuf-schema.sh`, which says how to regenerate them. The schema is parsed
//! once, on first use.
//!
//! On the wire, an object or a list is the four magic bytes `k8s\0` followed by a
//! `runtime.Unknown` envelope: `typeMeta` (apiVersion and kind), `raw` (the object's message)
//! and empty `contentEncoding` and `contentType`. A watch stream is a run of frames, each a
//! 4-byte big-endian length and a `meta.v1.WatchEvent` whose object is a
//! `runtime.RawExtension` holding the object's own envelope.
//!
//! Field names on the wire are Kubernetes' JSON names, so JSON keys map to fields by name.
//! The transcoder follows kube-apiserver both ways: encoding a JSON object gives the bytes
//! kube-apiserver would send for it (fields in number order, map keys sorted, plain Go fields
//! written even when zero), and decoding gives the JSON kube-apiserver would send (see
//! `decode.rs` for the rules on absent and zero fields).

mod decode;
mod encode;
mod forms;
mod schema;
mod wire;

use crate::resources::Resource;
use crate::status::ApiError;
use schema::{MessageId, Schema, SCHEMA};
use serde_json::Value;
use wire::{put_bytes, put_nested, Reader};

/// The media type of protobuf objects and lists.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The prefix that marks a protobuf-encoded Kubernetes object.
pub const MAGIC: &[u8] = b"k8s\0";

/// A value that cannot be transcoded, with where in the object it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ProtobufError {
    message: String,
    /// The path to the value, innermost first.
    path: Vec<String>,
}

impl ProtobufError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            path: Vec::new(),
        }
    }

    /// The error, inside the field `key`.
    pub(crate) fn at(mut self, key: &str) -> Self {
        self.path.push(format!(".{key}"));
        self
    }

    /// The error, inside the list item `index`.
    pub(crate) fn index(mut self, index: usize) -> Self {
        self.path.push(format!("[{index}]"));
        self
    }

    /// What went wrong, without the path.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Where, as `spec.ports[0].port`; empty at the top.
    pub fn path(&self) -> String {
        let path: String = self.path.iter().rev().map(String::as_str).collect();
        path.strip_prefix('.').unwrap_or(&path).to_owned()
    }

    fn describe(&self) -> String {
        match self.path() {
            path if path.is_empty() => self.message.clone(),
            path => format!("{path}: {}", self.message),
        }
    }
}

/// Kinds defined in `meta.k8s.io/v1` that every API group serves as its own.
const META_KINDS: &[&str] = &[
    "Status",
    "WatchEvent",
    "DeleteOptions",
    "ListOptions",
    "GetOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
];

/// The message of objects of `kind` in `api_version`, if Kubernetes defines one and the
/// schema holds it. Only built-in groups count: the core group, `*.k8s.io`, and the
/// single-word groups such as `apps`.
fn message_for(schema: &Schema, api_version: &str, kind: &str) -> Option<MessageId> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if group == "meta.k8s.io" || META_KINDS.contains(&kind) {
        let meta = format!("k8s.io.apimachinery.pkg.apis.meta.{version}.{kind}");
        if let Some(id) = schema.message_id(&meta) {
            return Some(id);
        }
    }
    let package = match group {
        "" => "core",
        g if g.ends_with(".k8s.io") || !g.contains('.') => g.split('.').next()?,
        _ => return None,
    };
    schema.message_id(&format!("k8s.io.api.{package}.{version}.{kind}"))
}

/// The full protobuf message name of `kind` in `api_version`
/// (`discovery.k8s.io/v1`, `EndpointSlice` gives `k8s.io.api.discovery.v1.EndpointSlice`),
/// or `None` for kinds without one (custom resources).
pub fn message_name(api_version: &str, kind: &str) -> Option<&'static str> {
    let schema = &*SCHEMA;
    message_for(schema, api_version, kind).map(|id| schema.message(id).full_name.as_str())
}

/// Whether objects of `kind` in `api_version` can be served as protobuf.
pub(crate) fn supports_kind(api_version: &str, kind: &str) -> bool {
    message_for(&SCHEMA, api_version, kind).is_some()
}

/// Whether objects of `resource` can be served as protobuf.
pub(crate) fn supports(resource: &Resource) -> bool {
    let api_version = resource.api_version();
    let schema = &*SCHEMA;
    message_for(schema, &api_version, resource.kind).is_some()
        && message_for(schema, &api_version, &format!("{}List", resource.kind)).is_some()
}

fn unknown_kind(api_version: &str, kind: &str) -> ProtobufError {
    ProtobufError::new(format!("no protobuf message for {api_version} {kind}"))
}

/// Encodes one message of the schema by its full name, without an envelope.
pub fn encode_message(full_name: &str, value: &Value) -> Result<Vec<u8>, ProtobufError> {
    let schema = &*SCHEMA;
    let id = schema
        .message_id(full_name)
        .ok_or_else(|| ProtobufError::new(format!("no message {full_name}")))?;
    let mut out = Vec::new();
    encode::message(schema, id, value, &mut out)?;
    Ok(out)
}

/// Decodes one message of the schema by its full name, without an envelope.
pub fn decode_message(full_name: &str, bytes: &[u8]) -> Result<Value, ProtobufError> {
    let schema = &*SCHEMA;
    let id = schema
        .message_id(full_name)
        .ok_or_else(|| ProtobufError::new(format!("no message {full_name}")))?;
    decode::message(schema, id, bytes)
}

/// Writes the magic and the envelope of an object whose message `raw` writes.
fn envelope(
    api_version: &str,
    kind: &str,
    capacity: usize,
    raw: impl FnOnce(&mut Vec<u8>) -> Result<(), ProtobufError>,
) -> Result<Vec<u8>, ProtobufError> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(MAGIC);
    put_nested::<ProtobufError>(&mut out, 1, |out| {
        put_bytes(out, 1, api_version.as_bytes());
        put_bytes(out, 2, kind.as_bytes());
        Ok(())
    })?;
    put_nested(&mut out, 2, raw)?;
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Ok(out)
}

/// Encodes a JSON object of `kind` in `api_version` as a protobuf body: the magic, then the
/// envelope holding the object's message. The object's own `apiVersion` and `kind` keys are
/// not read (the arguments name them).
pub fn encode_object(
    api_version: &str,
    kind: &str,
    object: &Value,
) -> Result<Vec<u8>, ProtobufError> {
    let schema = &*SCHEMA;
    let id =
        message_for(schema, api_version, kind).ok_or_else(|| unknown_kind(api_version, kind))?;
    envelope(api_version, kind, 1024, |out| {
        encode::message(schema, id, object, out)
    })
}

/// Encodes a `<kind>List` body: `metadata` is the list's JSON metadata (`resourceVersion`,
/// `continue`), `items` the JSON objects of `kind`.
pub fn encode_list<'a>(
    api_version: &str,
    kind: &str,
    metadata: &Value,
    items: impl IntoIterator<Item = &'a Value>,
) -> Result<Vec<u8>, ProtobufError> {
    let schema = &*SCHEMA;
    let list_kind = format!("{kind}List");
    let list = message_for(schema, api_version, &list_kind)
        .ok_or_else(|| unknown_kind(api_version, &list_kind))?;
    let list = schema.message(list);
    let field = |name: &str| {
        list.field_named(name)
            .ok_or_else(|| ProtobufError::new(format!("{} has no {name}", list.full_name)))
    };
    let (meta_field, items_field) = (field("metadata")?, field("items")?);
    let (schema::Type::Message(meta_id), schema::Type::Message(item_id)) =
        (meta_field.ty, items_field.ty)
    else {
        return Err(ProtobufError::new(format!(
            "{} is not a list",
            list.full_name
        )));
    };
    envelope(api_version, &list_kind, 64 * 1024, |out| {
        put_nested(out, meta_field.number, |out| {
            encode::message(schema, meta_id, metadata, out)
        })
        .map_err(|e| e.at("metadata"))?;
        for (index, item) in items.into_iter().enumerate() {
            put_nested(out, items_field.number, |out| {
                encode::message(schema, item_id, item, out)
            })
            .map_err(|e| e.index(index).at("items"))?;
        }
        Ok(())
    })
}

/// The parts of a `runtime.Unknown` envelope.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

fn open_envelope(body: &[u8]) -> Result<Envelope<'_>, ProtobufError> {
    let payload = payload(body).ok_or_else(|| {
        ProtobufError::new("the body does not start with the protobuf magic k8s\\0")
    })?;
    let mut envelope = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let mut reader = Reader::new(payload);
    while !reader.is_empty() {
        match reader.field()? {
            (1, value) => {
                let mut type_meta = Reader::new(value.bytes()?);
                while !type_meta.is_empty() {
                    match type_meta.field()? {
                        (1, v) => envelope.api_version = text(v.bytes()?),
                        (2, v) => envelope.kind = text(v.bytes()?),
                        _ => {}
                    }
                }
            }
            (2, value) => envelope.raw = value.bytes()?,
            (3, value) if !value.bytes()?.is_empty() => {
                return Err(ProtobufError::new(format!(
                    "content encoding {:?} is not supported",
                    text(value.bytes()?)
                )))
            }
            _ => {}
        }
    }
    Ok(envelope)
}

/// Decodes a protobuf body (magic and envelope) into the JSON object kube-apiserver would
/// send for it, with `apiVersion` and `kind` from the envelope. The items of a list carry no
/// `apiVersion` or `kind`, as in kube-apiserver's JSON lists.
pub fn decode_object(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_object_with(&SCHEMA, body)
}

pub(crate) fn decode_object_with(schema: &Schema, body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = open_envelope(body)?;
    let id = message_for(schema, &envelope.api_version, &envelope.kind)
        .ok_or_else(|| unknown_kind(&envelope.api_version, &envelope.kind))?;
    let mut object = decode::message(schema, id, envelope.raw)?;
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".to_owned(), Value::from(envelope.api_version));
        map.insert("kind".to_owned(), Value::from(envelope.kind));
    }
    Ok(object)
}

/// One frame of a protobuf watch stream: the 4-byte big-endian length, then a `WatchEvent`
/// of `event_type` (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`) whose object is
/// `object`, a protobuf body as [`encode_object`] makes.
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(object.len() + event_type.len() + 16);
    out.extend_from_slice(&[0; 4]);
    put_bytes(&mut out, 1, event_type.as_bytes());
    let raw_extension = put_nested::<std::convert::Infallible>(&mut out, 2, |out| {
        put_bytes(out, 1, object);
        Ok(())
    });
    match raw_extension {
        Ok(()) => {}
        Err(never) => match never {},
    }
    let len = u32::try_from(out.len() - 4).unwrap_or(u32::MAX);
    out[..4].copy_from_slice(&len.to_be_bytes());
    out
}

/// Splits a protobuf watch stream into its `WatchEvent` messages; a partial frame at the end
/// is an error.
pub fn watch_frames(stream: &[u8]) -> Result<Vec<&[u8]>, ProtobufError> {
    let mut frames = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| ProtobufError::new("a watch frame's length is cut short"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if tail.len() < len {
            return Err(ProtobufError::new("a watch frame is cut short"));
        }
        let (frame, tail) = tail.split_at(len);
        frames.push(frame);
        rest = tail;
    }
    Ok(frames)
}

/// Decodes one `WatchEvent` message (a frame without its length) into its type and its
/// object's JSON.
pub fn decode_watch_event(frame: &[u8]) -> Result<(String, Value), ProtobufError> {
    let (mut event_type, mut object) = (String::new(), Value::Null);
    let mut reader = Reader::new(frame);
    while !reader.is_empty() {
        match reader.field()? {
            (1, v) => event_type = String::from_utf8_lossy(v.bytes()?).into_owned(),
            (2, v) => {
                let mut raw = Reader::new(v.bytes()?);
                while !raw.is_empty() {
                    if let (1, v) = raw.field()? {
                        object = decode_object(v.bytes()?).map_err(|e| e.at("object"))?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok((event_type, object))
}

/// Decodes a whole protobuf watch stream into `(type, object)` pairs.
pub fn decode_watch_stream(stream: &[u8]) -> Result<Vec<(String, Value)>, ProtobufError> {
    watch_frames(stream)?
        .into_iter()
        .map(decode_watch_event)
        .collect()
}

/// The protobuf payload of `body` after the magic, if it is a protobuf-encoded object.
pub(crate) fn payload(body: &[u8]) -> Option<&[u8]> {
    body.strip_prefix(MAGIC)
}

/// Decodes a protobuf request body (magic included) into JSON, checking that it holds an
/// object of `resource`'s kind.
pub(crate) fn decode_body(resource: &Resource, body: &[u8]) -> Result<Value, ApiError> {
    decode_kind_body(&resource.api_version(), resource.kind, body)
}

/// [`decode_body`] for an object of `kind` in `api_version` that is not a stored resource
/// (a TokenRequest).
pub(crate) fn decode_kind_body(
    api_version: &str,
    kind: &str,
    body: &[u8],
) -> Result<Value, ApiError> {
    let bad =
        |why: String| ApiError::bad_request(format!("the protobuf request body is invalid: {why}"));
    let envelope = open_envelope(body).map_err(|e| bad(e.to_string()))?;
    if envelope.api_version != api_version || envelope.kind != kind {
        return Err(bad(format!(
            "it holds a {} {}, not a {api_version} {kind}",
            envelope.api_version, envelope.kind
        )));
    }
    let schema = &*SCHEMA;
    let Some(id) = message_for(schema, api_version, kind) else {
        return Err(ApiError::unsupported_body(format!(
            "protobuf bodies of {api_version} {kind} are not supported; send application/json"
        )));
    };
    let mut object = decode::message(schema, id, envelope.raw).map_err(|e| bad(e.to_string()))?;
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".to_owned(), Value::from(envelope.api_version));
        map.insert("kind".to_owned(), Value::from(envelope.kind));
    }
    Ok(object)
}

/// Decodes a protobuf `DeleteOptions` body into its JSON.
pub(crate) fn decode_delete_options(body: &[u8]) -> Result<Value, ApiError> {
    let bad = |why: String| {
        ApiError::bad_request(format!("the protobuf DeleteOptions body is invalid: {why}"))
    };
    // The kind is checked before anything is decoded: only DeleteOptions is read here.
    let envelope = open_envelope(body).map_err(|e| bad(e.to_string()))?;
    if envelope.kind != "DeleteOptions" {
        return Err(bad(format!("it holds a {:?}", envelope.kind)));
    }
    let schema = &*SCHEMA;
    let id = message_for(schema, &envelope.api_version, &envelope.kind)
        .ok_or_else(|| bad(unknown_kind(&envelope.api_version, &envelope.kind).to_string()))?;
    decode::message(schema, id, envelope.raw).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests;
