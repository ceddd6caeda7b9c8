//! The canonical form of a message's bytes: how an object the API server sends back is
//! recognised as the one we wrote, without decoding it.
//!
//! kube-apiserver marshals fields in number order and writes a plain (non-pointer) Go field
//! even when it is empty; prost writes fields in the order the message declares them, and our
//! conversions leave out what is unset. Two encodings of one object can therefore differ in
//! their bytes, but not in their canonical form:
//! - fields sorted by number (a stable sort, so a repeated field keeps its order);
//! - an empty plain field (zero-length bytes, or a zero varint) left out, since the
//!   conversions read it as absent (see `kinds`);
//! - a nested message in canonical form in turn;
//! - the fields a caller compares otherwise (the metadata) left out.
//!
//! Equal canonical forms mean equal objects once converted; different ones say nothing (the
//! caller then decodes as usual).

use prost::bytes::Buf;
use prost::encoding::{decode_key, decode_varint, encode_key, encoded_len_varint, WireType};

/// Bytes that are not a message this module can put in canonical form (malformed, or using
/// what Kubernetes does not: groups, a message field of another wire type). The caller
/// decodes them as usual, and the decoder says what is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

impl From<prost::DecodeError> for Unreadable {
    fn from(_: prost::DecodeError) -> Self {
        Unreadable
    }
}

/// A message's fields, as far as its canonical form cares. Fields not named are kept as
/// they are.
#[derive(Debug)]
pub struct Shape(pub &'static [(u32, Rule)]);

/// What becomes of a field in the canonical form.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// Left out.
    Skip,
    /// A plain Go field: left out when empty.
    Plain,
    /// A message, in canonical form in turn.
    Message(&'static Shape),
}

impl Shape {
    fn rule(&self, tag: u32) -> Option<Rule> {
        self.0
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, rule)| *rule)
    }
}

/// One field as it sits in a message's bytes.
#[derive(Debug, Clone, Copy)]
struct Field {
    tag: u32,
    wire_type: WireType,
    /// Where the key starts, the value starts, and the field ends.
    key: usize,
    value: usize,
    end: usize,
}

/// Appends the canonical form of `message` (a message of `shape`) to `out`.
pub fn canonical(message: &[u8], shape: &Shape, out: &mut Vec<u8>) -> Result<(), Unreadable> {
    // Messages as kube-apiserver writes them are in number order already: written out field
    // by field as they come. One that is not (as prost writes some) is started over, its
    // fields gathered and sorted first.
    let start = out.len();
    let (mut at, mut last) = (0, 0);
    while at < message.len() {
        let field = next_field(message, at)?;
        if field.tag < last {
            out.truncate(start);
            return sorted(message, shape, out);
        }
        last = field.tag;
        emit(message, field, shape, out)?;
        at = field.end;
    }
    Ok(())
}

/// [`canonical`] of a message whose fields are out of number order.
fn sorted(message: &[u8], shape: &Shape, out: &mut Vec<u8>) -> Result<(), Unreadable> {
    let mut fields = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let field = next_field(message, at)?;
        fields.push(field);
        at = field.end;
    }
    fields.sort_by_key(|f| f.tag);
    for field in fields {
        emit(message, field, shape, out)?;
    }
    Ok(())
}

/// The field starting at `at`.
fn next_field(message: &[u8], at: usize) -> Result<Field, Unreadable> {
    let mut rest = &message[at..];
    let (tag, wire_type) = decode_key(&mut rest)?;
    let value = message.len() - rest.len();
    let length = match wire_type {
        WireType::Varint => {
            decode_varint(&mut rest)?;
            message.len() - rest.len() - value
        }
        WireType::LengthDelimited => {
            let length = usize::try_from(decode_varint(&mut rest)?).map_err(|_| Unreadable)?;
            if length > rest.remaining() {
                return Err(Unreadable);
            }
            message.len() - rest.len() - value + length
        }
        WireType::ThirtyTwoBit => 4,
        WireType::SixtyFourBit => 8,
        WireType::StartGroup | WireType::EndGroup => return Err(Unreadable),
    };
    let end = value + length;
    if end > message.len() {
        return Err(Unreadable);
    }
    Ok(Field {
        tag,
        wire_type,
        key: at,
        value,
        end,
    })
}

fn emit(message: &[u8], field: Field, shape: &Shape, out: &mut Vec<u8>) -> Result<(), Unreadable> {
    let whole = &message[field.key..field.end];
    match shape.rule(field.tag) {
        Some(Rule::Skip) => {}
        Some(Rule::Plain) => {
            let mut value = &message[field.value..field.end];
            let empty = match field.wire_type {
                WireType::LengthDelimited => decode_varint(&mut value)? == 0,
                WireType::Varint => decode_varint(&mut value)? == 0,
                _ => false,
            };
            if !empty {
                out.extend_from_slice(whole);
            }
        }
        Some(Rule::Message(inner)) if field.wire_type == WireType::LengthDelimited => {
            let mut value = &message[field.value..field.end];
            decode_varint(&mut value)?;
            encode_key(field.tag, WireType::LengthDelimited, out);
            // Room for the length as the field has it: the canonical form is never longer
            // (it only drops empty fields), and rarely short enough to need fewer bytes.
            let width = encoded_len_varint(value.len() as u64);
            let header = out.len();
            out.resize(header + width, 0);
            canonical(value, inner, out)?;
            let mut length = [0u8; 10];
            let used = put_varint((out.len() - header - width) as u64, &mut length);
            if used == width {
                out[header..header + width].copy_from_slice(&length[..used]);
            } else {
                out.splice(header..header + width, length[..used].iter().copied());
            }
        }
        Some(Rule::Message(_)) => return Err(Unreadable),
        None => out.extend_from_slice(whole),
    }
    Ok(())
}

/// Writes `value` as a varint into `into`; returns how many bytes it took.
fn put_varint(mut value: u64, into: &mut [u8; 10]) -> usize {
    let mut used = 0;
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            into[used] = byte;
            return used + 1;
        }
        into[used] = byte | 0x80;
        used += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    static INNER: Shape = Shape(&[(1, Rule::Plain)]);
    static OUTER: Shape = Shape(&[
        (1, Rule::Skip),
        (3, Rule::Message(&INNER)),
        (4, Rule::Plain),
    ]);

    #[derive(Clone, PartialEq, Message)]
    struct Inner {
        #[prost(string, optional, tag = "1")]
        name: Option<String>,
        #[prost(string, optional, tag = "2")]
        other: Option<String>,
    }

    /// Declares its fields out of number order, as some of Kubernetes' messages do.
    #[derive(Clone, PartialEq, Message)]
    struct Outer {
        #[prost(string, optional, tag = "1")]
        skipped: Option<String>,
        #[prost(string, optional, tag = "4")]
        plain: Option<String>,
        #[prost(message, repeated, tag = "3")]
        items: Vec<Inner>,
        #[prost(string, repeated, tag = "2")]
        list: Vec<String>,
    }

    fn form(message: &impl Message) -> Vec<u8> {
        let mut out = Vec::new();
        canonical(&message.encode_to_vec(), &OUTER, &mut out).unwrap();
        out
    }

    fn item(name: Option<&str>, other: Option<&str>) -> Inner {
        Inner {
            name: name.map(str::to_owned),
            other: other.map(str::to_owned),
        }
    }

    #[test]
    fn order_skipped_fields_and_empty_plain_fields_do_not_count() {
        let ours = Outer {
            skipped: Some("mine".into()),
            plain: None,
            items: vec![item(None, Some("x")), item(Some("b"), None)],
            list: vec!["p".into(), "q".into()],
        };
        let theirs = Outer {
            skipped: Some("theirs".into()),
            plain: Some(String::new()),
            items: vec![item(Some(""), Some("x")), item(Some("b"), None)],
            list: vec!["p".into(), "q".into()],
        };
        assert_eq!(form(&ours), form(&theirs));

        // The sorted form decodes to the same message, less what it leaves out.
        let mut decoded = Outer::decode(&*form(&ours)).unwrap();
        decoded.skipped = ours.skipped.clone();
        assert_eq!(decoded, ours);
    }

    #[test]
    fn a_nested_message_whose_form_needs_a_shorter_length_gets_it() {
        // 129 bytes as written (a two-byte length), 127 once the empty name is dropped.
        let long = "x".repeat(125);
        let written = Outer {
            items: vec![item(Some(""), Some(&long))],
            ..Outer::default()
        };
        let without = Outer {
            items: vec![item(None, Some(&long))],
            ..Outer::default()
        };
        assert_eq!(written.items[0].encoded_len(), 129);
        assert_eq!(form(&written), form(&without));
        assert_eq!(Outer::decode(&*form(&written)).unwrap(), without);
    }

    #[test]
    fn what_the_conversions_tell_apart_stays_apart() {
        let base = Outer {
            items: vec![item(Some("a"), None), item(Some("b"), None)],
            list: vec!["p".into(), "q".into()],
            ..Outer::default()
        };
        let variants = [
            // A pointer field: empty is not absent.
            Outer {
                items: vec![item(Some("a"), Some("")), item(Some("b"), None)],
                ..base.clone()
            },
            // A repeated field's order.
            Outer {
                items: vec![item(Some("b"), None), item(Some("a"), None)],
                ..base.clone()
            },
            Outer {
                list: vec!["q".into(), "p".into()],
                ..base.clone()
            },
            // A repeated field's empty element.
            Outer {
                list: vec!["p".into(), "q".into(), String::new()],
                ..base.clone()
            },
            Outer {
                plain: Some("set".into()),
                ..base.clone()
            },
        ];
        for variant in variants {
            assert_ne!(form(&base), form(&variant), "{variant:?}");
        }
    }

    #[test]
    fn broken_bytes_are_an_error_not_a_form() {
        let bytes = Outer {
            plain: Some("value".into()),
            ..Outer::default()
        }
        .encode_to_vec();
        let mut out = Vec::new();
        assert!(canonical(&bytes[..bytes.len() - 1], &OUTER, &mut out).is_err());
        // A group (wire type 3) is not something Kubernetes writes.
        assert!(canonical(&[0x0b], &OUTER, &mut Vec::new()).is_err());
    }
}
