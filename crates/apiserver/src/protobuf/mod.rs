//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`).
//!
//! kubectl's typed commands (`kubectl create namespace`, `kubectl create service`) send their
//! object as protobuf, not JSON. The body is a `runtime.Unknown` envelope behind the four
//! magic bytes `k8s\0`, naming the object's apiVersion and kind and holding its bytes. The
//! wire types come from the `k8s-pb` crate; this module converts the decoded object to the
//! JSON the rest of the server stores, so responses stay JSON (which kubectl accepts).
//!
//! Only the kinds kubectl creates with typed commands are converted (see [`to_json`]); a
//! protobuf body of another kind is refused with 415 and a message saying to send JSON.

mod meta;
mod namespace;
mod service;

use crate::resources::Resource;
use crate::status::ApiError;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::Value;

/// The prefix that marks a protobuf-encoded Kubernetes object.
const MAGIC: &[u8] = b"k8s\0";

/// The protobuf payload of `body`, if it is a protobuf-encoded object.
pub(crate) fn payload(body: &[u8]) -> Option<&[u8]> {
    body.strip_prefix(MAGIC)
}

/// Decodes the `runtime.Unknown` envelope after the magic bytes and converts the object it
/// holds to JSON, checking that it is of `resource`'s kind.
pub(crate) fn decode(resource: &Resource, payload: &[u8]) -> Result<Value, ApiError> {
    let bad =
        |why: String| ApiError::bad_request(format!("the protobuf request body is invalid: {why}"));
    let envelope = Unknown::decode(payload).map_err(|e| bad(e.to_string()))?;
    let type_meta = envelope.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    if api_version != resource.api_version() || kind != resource.kind {
        return Err(bad(format!(
            "it holds a {api_version} {kind}, not a {} {}",
            resource.api_version(),
            resource.kind
        )));
    }
    if envelope.content_encoding.is_some_and(|e| !e.is_empty()) {
        return Err(bad("content encodings are not supported".to_owned()));
    }
    let raw = envelope.raw.unwrap_or_default();
    let Some(mut object) = to_json(resource, &raw).map_err(|e| bad(e.to_string()))? else {
        return Err(ApiError::unsupported_body(format!(
            "protobuf bodies of {} are not supported; send application/json",
            resource.qualified_name()
        )));
    };
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".to_owned(), Value::from(api_version));
        map.insert("kind".to_owned(), Value::from(kind));
    }
    Ok(object)
}

/// Converts the bytes of one object; `None` for kinds without a conversion.
fn to_json(resource: &Resource, raw: &[u8]) -> Result<Option<Value>, prost::DecodeError> {
    use k8s_pb::api::core::v1;
    Ok(match (resource.group, resource.kind) {
        ("", "Namespace") => Some(namespace::to_json(&v1::Namespace::decode(raw)?)),
        ("", "Service") => Some(service::to_json(&v1::Service::decode(raw)?)),
        _ => None,
    })
}

/// Builds a JSON object from `(field, value)` pairs, leaving out absent values the way
/// `omitempty` does.
fn object(fields: impl IntoIterator<Item = (&'static str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_owned(), v?)))
            .collect(),
    )
}

fn string(value: &Option<String>) -> Option<Value> {
    value.clone().map(Value::from)
}

fn strings(values: &[String]) -> Option<Value> {
    (!values.is_empty()).then(|| Value::from(values.to_vec()))
}

fn map(values: &std::collections::BTreeMap<String, String>) -> Option<Value> {
    (!values.is_empty()).then(|| {
        Value::Object(
            values
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{find, namespaces};

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
                api_version: Some(api_version.to_owned()),
                kind: Some(kind.to_owned()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [MAGIC, &unknown.encode_to_vec()].concat()
    }

    #[test]
    fn a_protobuf_namespace_decodes_to_its_json() {
        let ns = k8s_pb::api::core::v1::Namespace {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("x".to_owned()),
                ..Default::default()
            }),
            spec: Some(Default::default()),
            status: Some(Default::default()),
        };
        let body = envelope("v1", "Namespace", ns.encode_to_vec());
        let json = decode(namespaces(), payload(&body).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "x"}, "spec": {}, "status": {}})
        );
    }

    #[test]
    fn a_protobuf_body_of_another_kind_or_garbage_is_refused() {
        let body = envelope("v1", "Pod", Vec::new());
        let err = decode(namespaces(), payload(&body).unwrap()).unwrap_err();
        assert_eq!(err.code(), 400);
        let pods = find("", "v1", "pods").unwrap();
        let err = decode(pods, payload(&envelope("v1", "Pod", Vec::new())).unwrap()).unwrap_err();
        assert_eq!(err.code(), 415);
        assert_eq!(decode(pods, b"\xff\xff").unwrap_err().code(), 400);
        assert!(payload(b"{\"kind\": \"Pod\"}").is_none());
    }
}
