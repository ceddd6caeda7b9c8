//! Which encoding a response is served in, from the request's `Accept` header.
//!
//! client-go asks for `application/vnd.kubernetes.protobuf, application/json` (or protobuf
//! alone); kube-rs and kubectl for JSON. As kube-apiserver does, the media ranges are taken
//! by descending q-value (in the order written when equal) and the first one the server can
//! serve wins: protobuf for kinds Kubernetes defines a message for, JSON (also for `*/*` and
//! `application/*`) for everything. A request that names protobuf and nothing else the
//! server can serve gets 406 Not Acceptable; one without an Accept header, or naming only
//! types this server never served (YAML), gets JSON as before.

use crate::protobuf;
use crate::status::ApiError;
use axum::http::{header, HeaderMap};

/// The encoding of a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// `application/json`.
    #[default]
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// One media range of an Accept header.
#[derive(Debug)]
struct Range<'a> {
    media: &'a str,
    /// Parameters other than `q`, such as `as=Table`.
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

fn ranges(headers: &HeaderMap) -> Vec<Range<'_>> {
    let mut ranges: Vec<Range<'_>> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().filter(|m| !m.is_empty())?;
            let mut q = 1.0;
            let mut params = Vec::new();
            for param in parts {
                let (k, v) = param.split_once('=').unwrap_or((param, ""));
                let (k, v) = (k.trim(), v.trim());
                if k == "q" {
                    q = v.parse().unwrap_or(1.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(Range { media, params, q })
        })
        .filter(|r| r.q > 0.0)
        .collect();
    // A stable sort keeps the written order among equal q-values.
    ranges.sort_by(|a, b| b.q.total_cmp(&a.q));
    ranges
}

/// The encoding to answer with; `protobuf` says whether the response has a protobuf form.
pub(crate) fn negotiate(headers: &HeaderMap, protobuf: bool) -> Result<Encoding, ApiError> {
    let ranges = ranges(headers);
    let mut named_protobuf = false;
    for range in &ranges {
        let media = range.media.to_ascii_lowercase();
        match media.as_str() {
            protobuf::MEDIA_TYPE => {
                named_protobuf = true;
                // A protobuf Table or metadata-only view (`as=...`) is not served.
                if protobuf && range.params.iter().all(|(k, _)| *k != "as") {
                    return Ok(Encoding::Protobuf);
                }
            }
            "application/json" | "*/*" | "application/*" => return Ok(Encoding::Json),
            _ => {}
        }
    }
    if named_protobuf {
        return Err(ApiError::not_acceptable(&[
            "application/json",
            "application/yaml",
            protobuf::MEDIA_TYPE,
        ]));
    }
    Ok(Encoding::Json)
}

/// Whether the request accepts nothing but protobuf, which discovery and OpenAPI documents
/// (JSON only here) cannot be served in.
pub(crate) fn only_protobuf(headers: &HeaderMap) -> bool {
    negotiate(headers, false).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        HeaderMap::from_iter([(header::ACCEPT, value.parse().unwrap())])
    }

    #[test]
    fn the_first_servable_media_type_wins() {
        let client_go = accept("application/vnd.kubernetes.protobuf, application/json");
        assert_eq!(negotiate(&client_go, true).unwrap(), Encoding::Protobuf);
        assert_eq!(negotiate(&client_go, false).unwrap(), Encoding::Json);
        let json_first = accept("application/json, application/vnd.kubernetes.protobuf");
        assert_eq!(negotiate(&json_first, true).unwrap(), Encoding::Json);
        assert_eq!(
            negotiate(&accept("*/*"), true).unwrap(),
            Encoding::Json,
            "JSON is the default"
        );
        assert_eq!(negotiate(&HeaderMap::new(), true).unwrap(), Encoding::Json);
        assert_eq!(
            negotiate(&accept("application/yaml"), true).unwrap(),
            Encoding::Json
        );
    }

    #[test]
    fn q_values_order_the_media_types() {
        let headers = accept("application/json;q=0.5, application/vnd.kubernetes.protobuf");
        assert_eq!(negotiate(&headers, true).unwrap(), Encoding::Protobuf);
        let headers = accept("application/vnd.kubernetes.protobuf;q=0.5, application/json");
        assert_eq!(negotiate(&headers, true).unwrap(), Encoding::Json);
        let headers = accept("application/json;q=0, application/vnd.kubernetes.protobuf");
        assert_eq!(negotiate(&headers, true).unwrap(), Encoding::Protobuf);
    }

    #[test]
    fn protobuf_alone_for_a_kind_without_it_is_not_acceptable() {
        let only = accept("application/vnd.kubernetes.protobuf");
        assert_eq!(negotiate(&only, true).unwrap(), Encoding::Protobuf);
        let err = negotiate(&only, false).unwrap_err();
        assert_eq!((err.code(), err.reason()), (406, "NotAcceptable"));
        assert!(only_protobuf(&only));
        let table = accept("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io");
        assert_eq!(negotiate(&table, true).unwrap_err().code(), 406);
        assert!(!only_protobuf(&accept(
            "application/vnd.kubernetes.protobuf, */*"
        )));
    }
}
