//! An object's namespace, name and resourceVersion, read in place from its protobuf message.
//!
//! Every kind's message has its `ObjectMeta` at field 1, and `ObjectMeta` has `name` at 1,
//! `namespace` at 3 and `resourceVersion` at 6. Stepping over the other fields' bytes finds
//! the three without decoding (or allocating) anything, which is all the watch needs to know
//! whether an event is the echo of our own write (see `crate::informer::echoes`).

use prost::encoding::{decode_varint, WireType};

/// What identifies one version of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity<'a> {
    /// Empty for cluster-scoped objects.
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The version's resourceVersion.
    pub resource_version: &'a str,
}

/// The identity in `object` (a kind's message, out of its envelope); `None` when the
/// message is malformed or has no name or resourceVersion.
pub fn read(object: &[u8]) -> Option<Identity<'_>> {
    let metadata = fields(object).find(|(number, _)| *number == 1)?.1?;
    let (mut namespace, mut name, mut resource_version) = ("", None, None);
    for (number, bytes) in fields(metadata) {
        let text = || bytes.and_then(|b| std::str::from_utf8(b).ok());
        match number {
            1 => name = Some(text()?),
            3 => namespace = text()?,
            6 => resource_version = Some(text()?),
            _ => {}
        }
    }
    Some(Identity {
        namespace,
        name: name.filter(|n| !n.is_empty())?,
        resource_version: resource_version.filter(|v| !v.is_empty())?,
    })
}

/// The fields of a message: each one's number, and its bytes when it is length-delimited.
/// Ends early at the first malformed field (the caller then finds nothing, or too little).
fn fields(mut message: &[u8]) -> impl Iterator<Item = (u32, Option<&[u8]>)> {
    std::iter::from_fn(move || {
        if message.is_empty() {
            return None;
        }
        let key = decode_varint(&mut message).ok()?;
        let number = u32::try_from(key >> 3).ok()?;
        let wire_type = WireType::try_from(key & 7).ok()?;
        let skip = |message: &mut &[u8], n: usize| {
            let rest = message.get(n..)?;
            *message = rest;
            Some(())
        };
        match wire_type {
            WireType::Varint => {
                decode_varint(&mut message).ok()?;
                Some((number, None))
            }
            WireType::SixtyFourBit => skip(&mut message, 8).map(|()| (number, None)),
            WireType::ThirtyTwoBit => skip(&mut message, 4).map(|()| (number, None)),
            WireType::LengthDelimited => {
                let len = usize::try_from(decode_varint(&mut message).ok()?).ok()?;
                let bytes = message.get(..len)?;
                message = &message[len..];
                Some((number, Some(bytes)))
            }
            WireType::StartGroup | WireType::EndGroup => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::kinds::WriteKind;
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use prost::Message;

    fn slice(namespace: Option<&str>, name: Option<&str>, version: Option<&str>) -> Vec<u8> {
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                namespace: namespace.map(str::to_owned),
                name: name.map(str::to_owned),
                resource_version: version.map(str::to_owned),
                generation: Some(4),
                labels: Some([("a".to_owned(), "b".to_owned())].into()),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".into(),
            endpoints: vec![Endpoint {
                addresses: vec!["10.0.0.1".into()],
                ..Endpoint::default()
            }],
            ports: None,
        };
        slice.to_message().encode_to_vec()
    }

    #[test]
    fn reads_namespace_name_and_version_past_the_other_fields() {
        let bytes = slice(Some("shop"), Some("web-abc"), Some("812"));
        assert_eq!(
            read(&bytes),
            Some(Identity {
                namespace: "shop",
                name: "web-abc",
                resource_version: "812",
            })
        );
        let cluster = slice(None, Some("n1"), Some("3"));
        assert_eq!(read(&cluster).map(|i| i.namespace), Some(""));
    }

    #[test]
    fn finds_nothing_without_a_name_or_version_or_in_broken_bytes() {
        assert_eq!(read(&slice(Some("shop"), None, Some("1"))), None);
        assert_eq!(read(&slice(Some("shop"), Some("web"), None)), None);
        let bytes = slice(Some("shop"), Some("web-abc"), Some("812"));
        for cut in 0..bytes.len() {
            // Never a panic; at most what the bytes before the cut said.
            let _ = read(&bytes[..cut]);
        }
        assert_eq!(read(&[0xff, 0xff]), None);
        assert_eq!(read(&[]), None);
    }
}
