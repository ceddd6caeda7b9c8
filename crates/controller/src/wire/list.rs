//! Lists (`PodList` and the like), decoded one item at a time.
//!
//! A list message is its `ListMeta` (field 1) and its items (field 2, repeated). The items
//! are handed to the caller as each is decoded, so a list of ten thousand pods never exists
//! as ten thousand decoded pods at once.

use super::envelope::{Enveloped, WireError};
use super::kinds::WireKind;
use bytes::{Buf, Bytes};
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use prost::Message;

/// What a list says of itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListMeta {
    /// The resourceVersion the list was read at.
    pub resource_version: String,
    /// The token for the next page, if any.
    pub continue_token: Option<String>,
}

/// `meta.v1.ListMeta`: resourceVersion and continue.
#[derive(Clone, PartialEq, Message)]
struct ListMetaMessage {
    #[prost(string, optional, tag = "2")]
    resource_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    r#continue: Option<String>,
}

/// Decodes an enveloped list of `K`, giving each item to `each`.
pub fn decode<K: WireKind>(
    list: Enveloped,
    mut each: impl FnMut(K),
) -> Result<ListMeta, WireError> {
    let mut raw = list.expect_kind(&format!("{}List", K::KIND))?;
    let mut meta = ListMeta::default();
    while raw.has_remaining() {
        let (tag, wire_type) = decode_key(&mut raw)?;
        match (tag, wire_type) {
            (1, WireType::LengthDelimited) => {
                let m = ListMetaMessage::decode(length_delimited(&mut raw)?)?;
                meta.resource_version = m.resource_version.unwrap_or_default();
                meta.continue_token = m.r#continue.filter(|c| !c.is_empty());
            }
            (2, WireType::LengthDelimited) => each(K::from_raw(length_delimited(&mut raw)?)?),
            _ => skip_field(wire_type, tag, &mut raw, DecodeContext::default())?,
        }
    }
    Ok(meta)
}

/// The next length-delimited field's bytes, without copying them.
fn length_delimited(raw: &mut Bytes) -> Result<Bytes, WireError> {
    let length = usize::try_from(decode_varint(raw)?).unwrap_or(usize::MAX);
    if length > raw.remaining() {
        return Err(WireError::Truncated);
    }
    Ok(raw.split_to(length))
}
