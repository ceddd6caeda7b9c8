//! Kubernetes JSON to protobuf bytes, walking the [`Schema`].
//!
//! The bytes follow Go's generated marshallers, so that an object encodes as kube-apiserver
//! would encode it: fields in number order, map entries sorted by key, a plain (non-pointer)
//! scalar always written (its zero value when the JSON leaves it out, as `omitempty` does), a
//! pointer field only when set. A struct field is written when the JSON has it (Go always
//! writes them, and kube-apiserver's JSON always has them), so that what the JSON leaves out
//! stays out when the bytes are read back.

use super::forms;
use super::schema::{Card, Field, Form, MessageId, Scalar, Schema, Type};
use super::wire::{put_bytes, put_key, put_nested, put_varint};
use super::ProtobufError;
use serde_json::{Map, Value};

const NULL: Value = Value::Null;

/// Encodes `value` as a message of type `id`, appending to `out`.
pub(crate) fn message(
    schema: &Schema,
    id: MessageId,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let m = schema.message(id);
    match (m.form, value) {
        (Form::Plain, Value::Object(object)) => plain(schema, &m.fields, object, out),
        (Form::Plain | Form::List | Form::RawExtension | Form::FieldsV1, Value::Null) => Ok(()),
        (Form::Plain, _) => Err(expected("an object", value)),
        (Form::Time, Value::Null) => Ok(()),
        (Form::Time, Value::String(text)) => {
            let (seconds, _) = forms::parse_time(text)?;
            // Go writes nothing for its zero time, and only whole seconds otherwise.
            if seconds != forms::ZERO_TIME_SECONDS {
                timestamp(out, seconds, 0);
            }
            Ok(())
        }
        (Form::MicroTime, Value::Null) => Ok(()),
        (Form::MicroTime, Value::String(text)) => {
            let (seconds, nanos) = forms::parse_time(text)?;
            if seconds != forms::ZERO_TIME_SECONDS || nanos >= 1_000 {
                timestamp(out, seconds, nanos / 1_000 * 1_000);
            }
            Ok(())
        }
        (Form::Time | Form::MicroTime, _) => Err(expected("a time string", value)),
        (Form::Duration, Value::String(text)) => {
            put_key(out, 1, super::wire::VARINT);
            put_varint(out, forms::parse_duration(text)? as u64);
            Ok(())
        }
        (Form::Duration, _) => Err(expected("a duration string", value)),
        (Form::IntOrString, Value::String(text)) => {
            int_or_string(out, 1, 0, text);
            Ok(())
        }
        (Form::IntOrString, Value::Number(_)) => {
            let int = integer(value, i64::from(i32::MIN), i64::from(i32::MAX))?;
            int_or_string(out, 0, int, "");
            Ok(())
        }
        (Form::IntOrString, Value::Null) => {
            int_or_string(out, 0, 0, "");
            Ok(())
        }
        (Form::IntOrString, _) => Err(expected("a number or a string", value)),
        (Form::Quantity, Value::String(text)) => {
            put_bytes(out, 1, text.as_bytes());
            Ok(())
        }
        // A quantity written as a bare number, which Kubernetes accepts on input.
        (Form::Quantity, Value::Number(n)) => {
            put_bytes(out, 1, n.to_string().as_bytes());
            Ok(())
        }
        (Form::Quantity, Value::Null) => {
            put_bytes(out, 1, b"0");
            Ok(())
        }
        (Form::Quantity, _) => Err(expected("a quantity string", value)),
        (Form::RawExtension | Form::FieldsV1, _) => {
            let raw = serde_json::to_vec(value)
                .map_err(|e| ProtobufError::new(format!("encoding the raw JSON: {e}")))?;
            put_bytes(out, 1, &raw);
            Ok(())
        }
        (Form::List, Value::Array(items)) => {
            let field = m
                .field(1)
                .ok_or_else(|| ProtobufError::new("a list without items"))?;
            repeated(schema, field, items, out)
        }
        (Form::List, _) => Err(expected("a list", value)),
    }
}

fn timestamp(out: &mut Vec<u8>, seconds: i64, nanos: i32) {
    put_key(out, 1, super::wire::VARINT);
    put_varint(out, seconds as u64);
    put_key(out, 2, super::wire::VARINT);
    put_varint(out, nanos as i64 as u64);
}

/// Go writes all three fields of an IntOrString.
fn int_or_string(out: &mut Vec<u8>, kind: u64, int: i64, text: &str) {
    put_key(out, 1, super::wire::VARINT);
    put_varint(out, kind);
    put_key(out, 2, super::wire::VARINT);
    put_varint(out, int as u64);
    put_bytes(out, 3, text.as_bytes());
}

fn expected(what: &str, found: &Value) -> ProtobufError {
    let found = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    ProtobufError::new(format!("expected {what}, found {found}"))
}

/// The fields of a plain message, read from one JSON object.
fn plain(
    schema: &Schema,
    fields: &[Field],
    object: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    for field in fields {
        encode_field(schema, field, object, out).map_err(|e| e.at(&field.json))?;
    }
    Ok(())
}

fn encode_field(
    schema: &Schema,
    field: &Field,
    object: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    if field.inline {
        // The embedded struct reads its fields from the same JSON object.
        if let Type::Message(id) = field.ty {
            put_nested(out, field.number, |out| {
                plain(schema, &schema.message(id).fields, object, out)
            })?;
        }
        return Ok(());
    }
    let value = object.get(&field.json);
    match (field.card, field.ty) {
        (Card::Single, Type::Scalar(s)) => match value {
            Some(v) if !v.is_null() => {
                put_key(out, field.number, s.wire_type());
                scalar(s, v, out)?;
            }
            // A plain Go field is on the wire even when zero; a []byte only when non-nil.
            _ if !field.ptr && s != Scalar::Bytes => {
                put_key(out, field.number, s.wire_type());
                zero_scalar(s, out);
            }
            _ => {}
        },
        (Card::Single, Type::Message(id)) => {
            let write = match value {
                Some(Value::Null) => !field.ptr,
                Some(_) => true,
                // An `omitzero` struct is absent from JSON exactly when zero; Go still
                // writes it, and reading it back leaves it out again.
                None => !field.ptr && field.omitzero,
            };
            if write {
                put_nested(out, field.number, |out| {
                    message(schema, id, value.unwrap_or(&NULL), out)
                })?;
            }
        }
        (Card::Repeated, _) => match value {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => repeated(schema, field, items, out)?,
            Some(other) => return Err(expected("a list", other)),
        },
        (Card::Map { key, value: ty }, _) => match value {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                // Go sorts map keys before writing them.
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_unstable();
                for k in keys {
                    let v = &map[k];
                    put_nested(out, field.number, |out| {
                        put_key(out, 1, key.wire_type());
                        map_key(key, k, out)?;
                        element(schema, ty, 2, v, out)
                    })
                    .map_err(|e| e.at(k))?;
                }
            }
            Some(other) => return Err(expected("an object", other)),
        },
    }
    Ok(())
}

fn repeated(
    schema: &Schema,
    field: &Field,
    items: &[Value],
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    for (index, item) in items.iter().enumerate() {
        element(schema, field.ty, field.number, item, out).map_err(|e| e.index(index))?;
    }
    Ok(())
}

/// One item of a repeated field, or the value of a map entry, as field `number`: a null
/// scalar is written as its zero value.
fn element(
    schema: &Schema,
    ty: Type,
    number: u32,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match ty {
        Type::Scalar(s) => {
            put_key(out, number, s.wire_type());
            if value.is_null() {
                zero_scalar(s, out);
                Ok(())
            } else {
                scalar(s, value, out)
            }
        }
        Type::Message(id) => put_nested(out, number, |out| message(schema, id, value, out)),
    }
}

fn zero_scalar(s: Scalar, out: &mut Vec<u8>) {
    match s.wire_type() {
        super::wire::FIXED32 => out.extend_from_slice(&[0; 4]),
        super::wire::FIXED64 => out.extend_from_slice(&[0; 8]),
        // A varint 0, or an empty length-delimited value.
        _ => out.push(0),
    }
}

/// An integer within `[min, max]`; integral floats (`3.0`) are taken too.
fn integer(value: &Value, min: i64, max: i64) -> Result<i64, ProtobufError> {
    let n = match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
        }),
        _ => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(_) => Err(ProtobufError::new(format!("{value} is out of range"))),
        None => Err(expected("an integer", value)),
    }
}

fn unsigned(value: &Value, max: u64) -> Result<u64, ProtobufError> {
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(n) if n <= max => Ok(n),
            _ => Err(ProtobufError::new(format!(
                "{value} is not an unsigned integer in range"
            ))),
        },
        _ => Err(expected("an unsigned integer", value)),
    }
}

fn number(value: &Value) -> Result<f64, ProtobufError> {
    value.as_f64().ok_or_else(|| expected("a number", value))
}

fn scalar(s: Scalar, value: &Value, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    const I32: (i64, i64) = (i32::MIN as i64, i32::MAX as i64);
    match s {
        Scalar::String => match value {
            Value::String(text) => {
                put_varint(out, text.len() as u64);
                out.extend_from_slice(text.as_bytes());
            }
            other => return Err(expected("a string", other)),
        },
        Scalar::Bytes => match value {
            Value::String(text) => {
                let bytes = forms::base64_decode(text)?;
                put_varint(out, bytes.len() as u64);
                out.extend_from_slice(&bytes);
            }
            other => return Err(expected("a base64 string", other)),
        },
        Scalar::Bool => match value {
            Value::Bool(b) => out.push(u8::from(*b)),
            other => return Err(expected("a boolean", other)),
        },
        // Negative int32s are sign-extended to ten bytes, as protobuf specifies.
        Scalar::Int32 | Scalar::Enum => put_varint(out, integer(value, I32.0, I32.1)? as u64),
        Scalar::Int64 => put_varint(out, integer(value, i64::MIN, i64::MAX)? as u64),
        Scalar::Uint32 => put_varint(out, unsigned(value, u64::from(u32::MAX))?),
        Scalar::Uint64 => put_varint(out, unsigned(value, u64::MAX)?),
        Scalar::Sint32 | Scalar::Sint64 => {
            let (min, max) = if s == Scalar::Sint32 {
                I32
            } else {
                (i64::MIN, i64::MAX)
            };
            let n = integer(value, min, max)?;
            put_varint(out, ((n << 1) ^ (n >> 63)) as u64);
        }
        Scalar::Fixed32 => {
            out.extend_from_slice(&(unsigned(value, u64::from(u32::MAX))? as u32).to_le_bytes())
        }
        Scalar::Sfixed32 => {
            out.extend_from_slice(&(integer(value, I32.0, I32.1)? as i32).to_le_bytes())
        }
        Scalar::Fixed64 => out.extend_from_slice(&unsigned(value, u64::MAX)?.to_le_bytes()),
        Scalar::Sfixed64 => {
            out.extend_from_slice(&integer(value, i64::MIN, i64::MAX)?.to_le_bytes())
        }
        Scalar::Float => out.extend_from_slice(&(number(value)? as f32).to_le_bytes()),
        Scalar::Double => out.extend_from_slice(&number(value)?.to_le_bytes()),
    }
    Ok(())
}

/// A map key, which JSON always holds as a string.
fn map_key(key: Scalar, text: &str, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    let value = match key {
        Scalar::String => Value::from(text),
        Scalar::Bool => Value::from(
            text.parse::<bool>()
                .map_err(|_| ProtobufError::new(format!("invalid boolean key {text:?}")))?,
        ),
        _ => serde_json::from_str::<serde_json::Number>(text)
            .map(Value::Number)
            .map_err(|_| ProtobufError::new(format!("invalid numeric key {text:?}")))?,
    };
    scalar(key, &value, out)
}
