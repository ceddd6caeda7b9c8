//! The protobuf wire format: varints, keys, length-delimited fields, and a reader over them.

use super::ProtobufError;

/// Wire types.
pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const FIXED32: u8 = 5;

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire));
}

/// A length-delimited field holding `bytes`.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A length-delimited field whose content `body` writes straight into `out`: one byte is kept
/// for the length, which fits anything under 128 bytes, and larger contents are moved up to
/// make room for a longer varint. That spares a buffer per nested message.
pub(crate) fn put_nested<E>(
    out: &mut Vec<u8>,
    number: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    put_key(out, number, LEN);
    let at = out.len();
    out.push(0);
    body(out)?;
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        put_varint(&mut prefix, len as u64);
        out.splice(at..=at, prefix);
    }
    Ok(())
}

/// One field's value as it is on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Len(&'a [u8]),
}

impl<'a> Wire<'a> {
    pub fn name(&self) -> &'static str {
        match self {
            Wire::Varint(_) => "varint",
            Wire::Fixed64(_) => "64-bit",
            Wire::Fixed32(_) => "32-bit",
            Wire::Len(_) => "length-delimited",
        }
    }

    /// The bytes of a length-delimited value.
    pub fn bytes(self) -> Result<&'a [u8], ProtobufError> {
        match self {
            Wire::Len(bytes) => Ok(bytes),
            other => Err(ProtobufError::new(format!(
                "expected a length-delimited value, found a {} one",
                other.name()
            ))),
        }
    }
}

/// Reads the fields of one message in order.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn truncated() -> ProtobufError {
        ProtobufError::new("the message is truncated")
    }

    pub fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value = 0u64;
        for (i, byte) in self.rest.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        Err(if self.rest.len() < 10 {
            Self::truncated()
        } else {
            ProtobufError::new("a varint is longer than 10 bytes")
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        if self.rest.len() < n {
            return Err(Self::truncated());
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub fn fixed32(&mut self) -> Result<u32, ProtobufError> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(
            bytes.try_into().map_err(|_| Self::truncated())?,
        ))
    }

    pub fn fixed64(&mut self) -> Result<u64, ProtobufError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(
            bytes.try_into().map_err(|_| Self::truncated())?,
        ))
    }

    /// The next field's number and value.
    pub fn field(&mut self) -> Result<(u32, Wire<'a>), ProtobufError> {
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ProtobufError::new(format!("invalid field key {key}")))?;
        let value = match (key & 7) as u8 {
            VARINT => Wire::Varint(self.varint()?),
            FIXED64 => Wire::Fixed64(self.fixed64()?),
            FIXED32 => Wire::Fixed32(self.fixed32()?),
            LEN => {
                let len = usize::try_from(self.varint()?).map_err(|_| Self::truncated())?;
                Wire::Len(self.take(len)?)
            }
            other => {
                return Err(ProtobufError::new(format!(
                    "field {number} has wire type {other}, which Kubernetes never uses"
                )))
            }
        };
        Ok((number, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_keys_round_trip() {
        for value in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(Reader::new(&out).varint().unwrap(), value);
        }
        let mut out = Vec::new();
        put_key(&mut out, 2, LEN);
        assert_eq!(out, [0x12]);
        assert!(Reader::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn nested_fields_get_the_length_they_need() {
        for len in [0usize, 1, 127, 128, 20_000] {
            let mut out = vec![0xaa];
            put_nested::<()>(&mut out, 3, |out| {
                out.extend(std::iter::repeat_n(7u8, len));
                Ok(())
            })
            .unwrap();
            let mut reader = Reader::new(&out[1..]);
            let (number, value) = reader.field().unwrap();
            assert_eq!(number, 3);
            assert_eq!(value.bytes().unwrap().len(), len);
            assert!(reader.is_empty());
        }
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        assert!(Reader::new(&[0x0a, 0x05, 1, 2]).field().is_err());
        assert!(Reader::new(&[0x0d, 1, 2]).field().is_err());
        assert!(Reader::new(&[0x0b]).field().is_err(), "groups are refused");
        assert!(Reader::new(&[0x00, 0x01]).field().is_err(), "field 0");
    }
}
