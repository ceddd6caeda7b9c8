//! One request in a chosen encoding, and the fall back to JSON: what the informers' lists
//! and watches, our writes and the Lease share.
//!
//! [`send`] asks for the encoding (`Accept`, and `Content-Type` for a protobuf body) and
//! reads an unsuccessful answer as the Status it carries, in either encoding.
//! [`negotiated`] tries protobuf while the run still speaks it and, when the server refuses
//! it (406, 415), turns the run to JSON and tries again in JSON.

use super::{is_protobuf, refuses_protobuf, status, Encoding, Negotiated};
use super::{ACCEPT_PROTOBUF, JSON, PROTOBUF};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::HeaderValue;
use http_body_util::BodyExt;
use kube::client::Body;
use kube::Client;
use std::future::Future;

/// A successful answer.
pub(crate) struct Answer {
    /// The response, its body unread.
    pub response: http::Response<Body>,
    /// Whether the server answered in protobuf.
    pub protobuf: bool,
}

impl Answer {
    /// The whole body, and whether it is protobuf.
    pub async fn read(self) -> kube::Result<(bool, Bytes)> {
        let body = self.response.into_body().collect().await?.to_bytes();
        Ok((self.protobuf, body))
    }
}

/// Sends `request` through `client` asking for `encoding`, tagged with `verb` as kube's own
/// methods tag theirs. An unsuccessful answer is `Error::Api` with its Status.
pub(crate) async fn send(
    client: &Client,
    verb: &'static str,
    encoding: Encoding,
    mut request: http::Request<Vec<u8>>,
) -> kube::Result<Answer> {
    request.extensions_mut().insert(verb);
    let has_body = !request.body().is_empty();
    let headers = request.headers_mut();
    match encoding {
        Encoding::Protobuf => {
            if has_body {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROTOBUF));
            }
            headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_PROTOBUF));
        }
        Encoding::Json => {
            headers.insert(ACCEPT, HeaderValue::from_static(JSON));
        }
    }
    let response = client.send(request.map(Body::from)).await?;
    let code = response.status();
    let protobuf = is_protobuf(response.headers().get(CONTENT_TYPE));
    if code.is_client_error() || code.is_server_error() {
        let body = response.into_body().collect().await?.to_bytes();
        let status = status::from_error_body(code.as_u16(), protobuf, body);
        return Err(kube::Error::Api(Box::new(status)));
    }
    Ok(Answer { response, protobuf })
}

/// Runs `attempt` in protobuf while `wire` still speaks it; if the server refuses protobuf,
/// turns `wire` to JSON (warning once) and runs `attempt` again in JSON.
pub(crate) async fn negotiated<T, F>(
    wire: &Negotiated,
    mut attempt: impl FnMut(Encoding) -> F,
) -> kube::Result<T>
where
    F: Future<Output = kube::Result<T>>,
{
    if wire.current() == Encoding::Protobuf {
        match attempt(Encoding::Protobuf).await {
            Err(error) if refuses_protobuf(&error) => {
                if wire.refused() {
                    tracing::warn!(%error, "the API server refuses protobuf; using JSON from now on");
                }
            }
            result => return result,
        }
    }
    attempt(Encoding::Json).await
}
