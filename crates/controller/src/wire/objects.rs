//! Reading and writing whole objects in the negotiated encoding: what the leader election
//! does with its Lease (the controllers' own writes read back only metadata, see
//! [`crate::written`]).
//!
//! With protobuf negotiated, the request body is protobuf and the answer is read in
//! whichever encoding the server chose; a server refusing protobuf (406, 415) gets the
//! request again in JSON, and JSON from then on.

use super::kinds::WriteKind;
use super::{envelope, is_protobuf, refuses_protobuf, status, Encoding, Negotiated};
use http_body_util::BodyExt;
use kube::api::{Api, PostParams};
use kube::client::Body;
use kube::core::Request;
use kube::{Error, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// What these functions need of a kind: both encodings.
pub trait WholeObject: Resource + WriteKind + Serialize + DeserializeOwned + Clone {}
impl<K: Resource + WriteKind + Serialize + DeserializeOwned + Clone> WholeObject for K {}

/// The object `name`, or `None` when there is none.
pub async fn get_opt<K: WholeObject>(
    api: &Api<K>,
    name: &str,
    wire: &Negotiated,
) -> kube::Result<Option<K>> {
    let request = |_| Request::new(api.resource_url()).get(name, &Default::default());
    match send(api, wire, "get", None, &request).await {
        Ok(object) => Ok(Some(object)),
        Err(Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

/// Creates `object`; returns it as stored.
pub async fn create<K: WholeObject>(
    api: &Api<K>,
    object: &K,
    params: &PostParams,
    wire: &Negotiated,
) -> kube::Result<K> {
    send(api, wire, "create", Some(object), &|body| {
        Request::new(api.resource_url()).create(params, body)
    })
    .await
}

/// Replaces the object `name` with `object`; returns it as stored.
pub async fn replace<K: WholeObject>(
    api: &Api<K>,
    name: &str,
    object: &K,
    params: &PostParams,
    wire: &Negotiated,
) -> kube::Result<K> {
    send(api, wire, "replace", Some(object), &|body| {
        Request::new(api.resource_url()).replace(name, params, body)
    })
    .await
}

/// Builds the request around a body (empty for a get).
type Build<'a> =
    &'a (dyn Fn(Vec<u8>) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> + Sync);

async fn send<K: WholeObject>(
    api: &Api<K>,
    wire: &Negotiated,
    verb: &'static str,
    object: Option<&K>,
    build: Build<'_>,
) -> kube::Result<K> {
    if wire.current() == Encoding::Protobuf {
        let body = object.map(WriteKind::to_body).unwrap_or_default();
        match once(api, verb, Encoding::Protobuf, build(body)).await {
            Err(error) if refuses_protobuf(&error) => {
                if wire.refused() {
                    tracing::warn!(%error, "the API server refuses protobuf; using JSON from now on");
                }
            }
            result => return result,
        }
    }
    let body = match object {
        Some(object) => serde_json::to_vec(object).map_err(Error::SerdeError)?,
        None => Vec::new(),
    };
    once(api, verb, Encoding::Json, build(body)).await
}

async fn once<K: WholeObject>(
    api: &Api<K>,
    verb: &'static str,
    encoding: Encoding,
    request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
) -> kube::Result<K> {
    let mut request = request.map_err(Error::BuildRequest)?;
    request.extensions_mut().insert(verb);
    if encoding == Encoding::Protobuf {
        if !request.body().is_empty() {
            let media = http::HeaderValue::from_static(super::PROTOBUF);
            request
                .headers_mut()
                .insert(http::header::CONTENT_TYPE, media);
        }
        let accept = http::HeaderValue::from_static(super::ACCEPT_PROTOBUF);
        request.headers_mut().insert(http::header::ACCEPT, accept);
    }
    let response = api
        .clone()
        .into_client()
        .send(request.map(Body::from))
        .await?;
    let code = response.status();
    let protobuf = is_protobuf(response.headers().get(http::header::CONTENT_TYPE));
    let body = response.into_body().collect().await?.to_bytes();
    if code.is_client_error() || code.is_server_error() {
        let status = status::from_error_body(code.as_u16(), protobuf, body);
        return Err(Error::Api(Box::new(status)));
    }
    if protobuf {
        envelope::open(body)
            .and_then(K::from_enveloped)
            .map_err(|e| Error::Service(Box::new(e)))
    } else {
        serde_json::from_slice(&body).map_err(Error::SerdeError)
    }
}
