//! Object uids, kept as their 16 bytes.
//!
//! Every cached pod holds its uid, and so does each endpoint that points at it, in its
//! EndpointSlice and in its Endpoints object: three copies per pod. As text a uid is 36 bytes,
//! too long to sit inside a [`CompactString`], so each copy was a heap block of its own. The
//! API server generates uids as UUIDs written in lowercase hex (`8-4-4-4-12`), which fit in 16
//! bytes and print back to the very same text. Anything else (a uid written by hand, in
//! uppercase, or of another shape) is kept as the text it was.

use compact_str::CompactString;
use std::fmt;

/// A uid: the UUID's bytes when its text is a canonical lowercase UUID, otherwise the text.
/// Built only through [`Uid::new`], so one text has one form and equality is the texts'.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Uid(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A UUID whose text is lowercase hex in the 8-4-4-4-12 layout.
    Uuid([u8; 16]),
    /// Any other text (the empty uid included).
    Text(CompactString),
}

impl Default for Uid {
    fn default() -> Self {
        Self(Repr::Text(CompactString::default()))
    }
}

/// Where the dashes of a canonical UUID are...
const DASHES: [usize; 4] = [8, 13, 18, 23];
/// ...and where the two hex digits of each of its 16 bytes start.
const DIGITS_AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

impl Uid {
    /// The uid of `text`.
    pub fn new(text: &str) -> Self {
        Self(parse_uuid(text).map_or_else(|| Repr::Text(CompactString::from(text)), Repr::Uuid))
    }

    /// Whether the uid is empty (an object not stored yet).
    pub fn is_empty(&self) -> bool {
        matches!(&self.0, Repr::Text(text) if text.is_empty())
    }

    /// Bytes on the heap, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Uuid(_) => 0,
            Repr::Text(text) => super::heap_bytes(text),
        }
    }
}

/// The 16 bytes of a canonical lowercase UUID, `None` for any other text. Every slice and
/// Endpoints object projected parses the uid of each pod it points at, so this is one pass
/// over the text.
fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    fn digit(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if bytes.len() != 36 || DASHES.iter().any(|&at| bytes[at] != b'-') {
        return None;
    }
    let mut out = [0u8; 16];
    for (byte, at) in out.iter_mut().zip(DIGITS_AT) {
        *byte = digit(bytes[at])? << 4 | digit(bytes[at + 1])?;
    }
    Some(out)
}

/// The canonical text of a UUID's 16 bytes.
fn uuid_text(bytes: &[u8; 16]) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b'-'; 36];
    for (byte, at) in bytes.iter().zip(DIGITS_AT) {
        text[at] = HEX[usize::from(byte >> 4)];
        text[at + 1] = HEX[usize::from(byte & 0xf)];
    }
    text
}

impl Uid {
    /// The uid as text, as [`ToString`] would give it without going through a formatter:
    /// every endpoint a sync builds carries its pod's uid.
    pub fn to_text(&self) -> String {
        // Printed on the stack, then copied whole into one block.
        self.text().as_str().to_owned()
    }
}

/// A uid's text without a heap block, for ordering: canonical UUIDs are printed into the
/// value itself. Ordered (and equal) as the texts are.
#[derive(Clone, Copy)]
pub enum UidText<'a> {
    /// Text kept as text.
    Borrowed(&'a str),
    /// A UUID's printed text.
    Printed([u8; 36]),
}

impl UidText<'_> {
    /// The text.
    pub fn as_str(&self) -> &str {
        match self {
            UidText::Borrowed(text) => text,
            // Only ASCII hex digits and dashes are printed.
            UidText::Printed(bytes) => std::str::from_utf8(bytes).unwrap_or_default(),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            UidText::Borrowed(text) => text.as_bytes(),
            UidText::Printed(bytes) => bytes,
        }
    }
}

impl PartialEq for UidText<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for UidText<'_> {}

impl PartialOrd for UidText<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for UidText<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(other.bytes())
    }
}

impl Uid {
    /// The uid's text, printed on the stack when kept as a UUID.
    pub fn text(&self) -> UidText<'_> {
        match &self.0 {
            Repr::Text(text) => UidText::Borrowed(text),
            Repr::Uuid(bytes) => UidText::Printed(uuid_text(bytes)),
        }
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl From<&str> for Uid {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for Uid {
    fn from(text: String) -> Self {
        Self::new(&text)
    }
}

impl PartialEq<str> for Uid {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Repr::Text(text) => text == other,
            Repr::Uuid(bytes) => parse_uuid(other).as_ref() == Some(bytes),
        }
    }
}

impl PartialEq<&str> for Uid {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_texts_order_and_compare_as_the_texts_do() {
        let texts = [
            "",
            "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11",
            "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d12",
            "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d1",
            "0B0C8E2C-4A43-4B6C-9D5E-2B8F0A6E7D11",
            "0b0c8e2c",
            "uid-a",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
        ];
        let uids: Vec<Uid> = texts.iter().map(|t| Uid::new(t)).collect();
        for (a, ta) in uids.iter().zip(texts) {
            assert_eq!(a.text().as_str(), ta);
            assert_eq!(a.to_text(), ta);
            assert_eq!(a.to_string(), ta);
            for (b, tb) in uids.iter().zip(texts) {
                assert_eq!(a.text().cmp(&b.text()), ta.cmp(tb), "{ta} against {tb}");
                assert_eq!(a.text() == b.text(), ta == tb);
            }
        }
    }

    #[test]
    fn a_server_generated_uid_is_kept_in_16_bytes_and_prints_back_the_same() {
        let text = "4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e01";
        let uid = Uid::new(text);
        assert!(matches!(uid.0, Repr::Uuid(_)));
        assert_eq!(uid.to_string(), text);
        assert_eq!(uid.to_text(), text);
        assert_eq!(uid, text);
        assert_eq!(uid.heap_bytes(), 0);
        assert_eq!(format!("{uid:?}"), format!("{text:?}"));
        // As small as the text it replaces, and never on the heap.
        assert_eq!(
            std::mem::size_of::<Uid>(),
            std::mem::size_of::<CompactString>()
        );
    }

    #[test]
    fn any_other_text_is_kept_as_written() {
        for text in [
            "",
            "uid-web-0",
            "4F0C7A52-1111-4D7A-9F3E-2B8F6A1C9E01",
            "4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e0",
            "4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e012",
            "4f0c7a521-111-4d7a-9f3e-2b8f6a1c9e01",
            "4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9eg1",
            "{4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e}",
        ] {
            let uid = Uid::new(text);
            assert!(matches!(uid.0, Repr::Text(_)), "{text}");
            assert_eq!(uid.to_string(), text);
            assert_eq!(uid.to_text(), text);
            assert_eq!(uid, text);
        }
        assert!(Uid::default().is_empty());
        assert!(!Uid::new("4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e01").is_empty());
    }

    #[test]
    fn uids_are_equal_when_their_texts_are() {
        let a = Uid::new("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11");
        assert_eq!(a, Uid::new("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11"));
        assert_ne!(a, Uid::new("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d12"));
        assert_ne!(a, "0B0C8E2C-4A43-4B6C-9D5E-2B8F0A6E7D11");
        assert_ne!(Uid::new("uid-a"), "uid-b");
    }
}
