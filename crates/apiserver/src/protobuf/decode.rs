//! Protobuf bytes to Kubernetes JSON, walking the [`Schema`].
//!
//! The JSON is what kube-apiserver's own JSON encoding of the same object would be: a plain
//! Go field reads back as its zero value when absent and is left out when zero and
//! `omitempty`; a pointer field, and a struct, appears when it was on the wire; a nil slice or
//! map without `omitempty` is `null`.

use super::forms;
use super::schema::{Card, Field, Form, Message, MessageId, Scalar, Schema, Type};
use super::wire::{Reader, Wire};
use super::ProtobufError;
use serde_json::{Map, Value};

/// Decodes one message of type `id`.
pub(crate) fn message(
    schema: &Schema,
    id: MessageId,
    bytes: &[u8],
) -> Result<Value, ProtobufError> {
    let m = schema.message(id);
    match m.form {
        Form::Plain => {
            let mut object = Map::new();
            fill(schema, m, bytes, &mut object)?;
            Ok(Value::Object(object))
        }
        Form::Time => {
            let (seconds, _) = timestamp(bytes)?;
            // Go reads whole seconds only; the nanos of a Time are dropped.
            match seconds {
                None => Ok(Value::Null),
                Some(s) if s == forms::ZERO_TIME_SECONDS => Ok(Value::Null),
                Some(s) => forms::format_time(s).map(Value::from),
            }
        }
        Form::MicroTime => {
            let (seconds, nanos) = timestamp(bytes)?;
            match seconds {
                None => Ok(Value::Null),
                Some(s) if s == forms::ZERO_TIME_SECONDS && nanos < 1_000 => Ok(Value::Null),
                Some(s) => forms::format_micro_time(s, nanos).map(Value::from),
            }
        }
        Form::Duration => {
            let mut nanos = 0;
            for_each(bytes, |number, wire| {
                if number == 1 {
                    nanos = varint(wire)? as i64;
                }
                Ok(())
            })?;
            Ok(Value::from(forms::format_duration(nanos)))
        }
        Form::IntOrString => {
            let (mut kind, mut int, mut string) = (0, 0, String::new());
            for_each(bytes, |number, wire| {
                match number {
                    1 => kind = varint(wire)? as i64,
                    2 => int = varint(wire)? as i64 as i32,
                    3 => string = String::from_utf8_lossy(wire.bytes()?).into_owned(),
                    _ => {}
                }
                Ok(())
            })?;
            Ok(if kind == 1 {
                Value::from(string)
            } else {
                Value::from(int)
            })
        }
        Form::Quantity => {
            // A zero Quantity reads as "0", as Go's does.
            let mut text = "0".to_owned();
            for_each(bytes, |number, wire| {
                if number == 1 {
                    text = String::from_utf8_lossy(wire.bytes()?).into_owned();
                }
                Ok(())
            })?;
            Ok(Value::from(text))
        }
        Form::RawExtension | Form::FieldsV1 => {
            let mut raw: Option<&[u8]> = None;
            for_each(bytes, |number, wire| {
                if number == 1 {
                    raw = Some(wire.bytes()?);
                }
                Ok(())
            })?;
            match raw {
                None | Some([]) => Ok(Value::Null),
                Some(raw) if m.form == Form::RawExtension && super::payload(raw).is_some() => {
                    let _nested = Nesting::enter()?;
                    super::decode_object_with(schema, raw)
                }
                Some(raw) => serde_json::from_slice(raw)
                    .map_err(|e| ProtobufError::new(format!("the raw bytes are not JSON: {e}"))),
            }
        }
        Form::List => {
            let mut object = Map::new();
            fill(schema, m, bytes, &mut object)?;
            Ok(match object.remove("items") {
                Some(items @ Value::Array(_)) => items,
                _ => Value::Array(Vec::new()),
            })
        }
    }
}

/// How many protobuf objects embedded in RawExtensions (a watch event's object, a List's
/// items) may be nested in one another. The schema bounds every other recursion, but these
/// could nest as deep as the input is long.
const MAX_NESTED_OBJECTS: u32 = 16;

thread_local! {
    static NESTED_OBJECTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One level of embedded objects, left when dropped.
struct Nesting;

impl Nesting {
    fn enter() -> Result<Self, ProtobufError> {
        NESTED_OBJECTS.with(|depth| {
            if depth.get() >= MAX_NESTED_OBJECTS {
                return Err(ProtobufError::new(format!(
                    "objects are nested more than {MAX_NESTED_OBJECTS} deep"
                )));
            }
            depth.set(depth.get() + 1);
            Ok(Nesting)
        })
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        NESTED_OBJECTS.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// The seconds (when any field was present) and nanos of a Time or MicroTime.
fn timestamp(bytes: &[u8]) -> Result<(Option<i64>, i32), ProtobufError> {
    let (mut seconds, mut nanos) = (None, 0);
    for_each(bytes, |number, wire| {
        match number {
            1 => seconds = Some(varint(wire)? as i64),
            2 => nanos = varint(wire)? as i64 as i32,
            _ => {}
        }
        Ok(())
    })?;
    if seconds.is_none() && !bytes.is_empty() {
        seconds = Some(0);
    }
    Ok((seconds, nanos))
}

fn for_each<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(u32, Wire<'a>) -> Result<(), ProtobufError>,
) -> Result<(), ProtobufError> {
    let mut reader = Reader::new(bytes);
    while !reader.is_empty() {
        let (number, wire) = reader.field()?;
        each(number, wire)?;
    }
    Ok(())
}

fn varint(wire: Wire<'_>) -> Result<u64, ProtobufError> {
    match wire {
        Wire::Varint(v) => Ok(v),
        other => Err(ProtobufError::new(format!(
            "expected a varint, found a {} value",
            other.name()
        ))),
    }
}

/// Decodes the fields of a plain message into `object`; an inlined field's message writes
/// into the same object.
fn fill(
    schema: &Schema,
    m: &Message,
    bytes: &[u8],
    object: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    let mut present = vec![false; m.fields.len()];
    let mut reader = Reader::new(bytes);
    while !reader.is_empty() {
        let (number, wire) = reader.field()?;
        let Some((position, field)) = m.position(number) else {
            // A field this schema does not know: skipped, as protobuf readers do.
            continue;
        };
        present[position] = true;
        read_field(schema, field, wire, object).map_err(|e| e.at(&field.json))?;
    }
    for (field, present) in m.fields.iter().zip(present) {
        settle(schema, field, present, object)?;
    }
    Ok(())
}

fn read_field(
    schema: &Schema,
    field: &Field,
    wire: Wire<'_>,
    object: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    match field.card {
        Card::Single => {
            if field.inline {
                if let Type::Message(id) = field.ty {
                    fill(schema, schema.message(id), wire.bytes()?, object)?;
                }
                return Ok(());
            }
            let value = value(schema, field.ty, wire)?;
            object.insert(field.json.clone(), value);
        }
        Card::Repeated => {
            let slot = object
                .entry(field.json.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(items) = slot else {
                return Err(ProtobufError::new("a repeated field met a non-list"));
            };
            match (field.ty, wire) {
                // Packed numbers: several values in one length-delimited run.
                (Type::Scalar(s), Wire::Len(run)) if s.packable() => {
                    let mut reader = Reader::new(run);
                    while !reader.is_empty() {
                        let wire = match s.wire_type() {
                            super::wire::FIXED32 => Wire::Fixed32(reader.fixed32()?),
                            super::wire::FIXED64 => Wire::Fixed64(reader.fixed64()?),
                            _ => Wire::Varint(reader.varint()?),
                        };
                        items.push(scalar(s, wire)?);
                    }
                }
                (ty, wire) => {
                    items.push(value(schema, ty, wire).map_err(|e| e.index(items.len()))?)
                }
            }
        }
        Card::Map { key, value: ty } => {
            let (mut k, mut v) = (None, None);
            for_each(wire.bytes()?, |number, wire| {
                match number {
                    1 => k = Some(map_key(key, wire)?),
                    2 => v = Some(value(schema, ty, wire)?),
                    _ => {}
                }
                Ok(())
            })?;
            let k = k.unwrap_or_default();
            let v = match v {
                Some(v) => v,
                None => zero(schema, ty)?,
            };
            let slot = object
                .entry(field.json.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = slot {
                map.insert(k, v);
            }
        }
    }
    Ok(())
}

/// Applies Go's zero values and `omitempty` to one field once the message is read.
fn settle(
    schema: &Schema,
    field: &Field,
    present: bool,
    object: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    let omit = field.omitempty || field.omitzero;
    match (field.card, field.ty) {
        (Card::Single, Type::Message(id)) if field.inline => {
            if !present {
                // The zero struct's own fields, as Go would print them.
                fill(schema, schema.message(id), &[], object)?;
            }
        }
        // A []byte is a slice in Go: nil when absent, like a pointer.
        (Card::Single, Type::Scalar(s)) if !field.ptr && s != Scalar::Bytes => {
            if !present {
                if !omit {
                    object.insert(field.json.clone(), zero_scalar(s));
                }
            } else if omit && object.get(&field.json).is_some_and(is_zero_scalar) {
                object.remove(&field.json);
            }
        }
        (Card::Single, ty) => {
            let bytes = ty == Type::Scalar(Scalar::Bytes);
            if present {
                let remove = object.get(&field.json).is_some_and(|v| {
                    (field.omitzero && is_empty(v)) || (bytes && field.omitempty && v == "")
                });
                if remove {
                    object.remove(&field.json);
                }
            } else if !field.omitempty {
                // A nil pointer or slice is null; a struct prints as its zero value.
                let zero = if field.ptr || bytes {
                    Value::Null
                } else {
                    zero(schema, ty)?
                };
                object.insert(field.json.clone(), zero);
            }
        }
        (Card::Repeated | Card::Map { .. }, _) => {
            if !present && !field.omitempty {
                object.insert(field.json.clone(), Value::Null);
            }
        }
    }
    Ok(())
}

fn is_zero_scalar(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Whether a struct's JSON is its zero value (for `omitzero`).
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.values().all(is_empty),
        Value::Array(items) => items.is_empty(),
        other => is_zero_scalar(other),
    }
}

fn zero_scalar(s: Scalar) -> Value {
    match s {
        Scalar::String => Value::from(""),
        Scalar::Bool => Value::from(false),
        Scalar::Bytes => Value::Null,
        Scalar::Double | Scalar::Float => Value::from(0.0),
        _ => Value::from(0),
    }
}

/// The value of a map entry that had none on the wire.
fn zero(schema: &Schema, ty: Type) -> Result<Value, ProtobufError> {
    match ty {
        Type::Scalar(s) => Ok(zero_scalar(s)),
        Type::Message(id) => message(schema, id, &[]),
    }
}

fn value(schema: &Schema, ty: Type, wire: Wire<'_>) -> Result<Value, ProtobufError> {
    match ty {
        Type::Scalar(s) => scalar(s, wire),
        Type::Message(id) => message(schema, id, wire.bytes()?),
    }
}

fn map_key(key: Scalar, wire: Wire<'_>) -> Result<String, ProtobufError> {
    Ok(match scalar(key, wire)? {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

fn mismatch(s: Scalar, wire: Wire<'_>) -> ProtobufError {
    ProtobufError::new(format!("a {s:?} field holds a {} value", wire.name()))
}

fn float(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn scalar(s: Scalar, wire: Wire<'_>) -> Result<Value, ProtobufError> {
    Ok(match (s, wire) {
        (Scalar::Int32 | Scalar::Enum, Wire::Varint(v)) => Value::from(v as i64 as i32),
        (Scalar::Int64, Wire::Varint(v)) => Value::from(v as i64),
        (Scalar::Uint32, Wire::Varint(v)) => Value::from(v as u32),
        (Scalar::Uint64, Wire::Varint(v)) => Value::from(v),
        (Scalar::Sint32, Wire::Varint(v)) => {
            Value::from(((v >> 1) as i64 ^ -((v & 1) as i64)) as i32)
        }
        (Scalar::Sint64, Wire::Varint(v)) => Value::from((v >> 1) as i64 ^ -((v & 1) as i64)),
        (Scalar::Bool, Wire::Varint(v)) => Value::from(v != 0),
        (Scalar::Fixed32, Wire::Fixed32(v)) => Value::from(v),
        (Scalar::Sfixed32, Wire::Fixed32(v)) => Value::from(v as i32),
        (Scalar::Float, Wire::Fixed32(v)) => float(f64::from(f32::from_bits(v))),
        (Scalar::Fixed64, Wire::Fixed64(v)) => Value::from(v),
        (Scalar::Sfixed64, Wire::Fixed64(v)) => Value::from(v as i64),
        (Scalar::Double, Wire::Fixed64(v)) => float(f64::from_bits(v)),
        (Scalar::String, Wire::Len(b)) => Value::from(String::from_utf8_lossy(b).into_owned()),
        (Scalar::Bytes, Wire::Len(b)) => Value::from(forms::base64_encode(b)),
        (s, wire) => return Err(mismatch(s, wire)),
    })
}
