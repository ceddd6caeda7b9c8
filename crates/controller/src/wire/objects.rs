//! Reading and writing whole objects in the negotiated encoding: what the leader election
//! does with its Lease (the controllers' own writes read back only metadata, see
//! [`crate::written`]).
//!
//! With protobuf negotiated, the request body is protobuf and the answer is read in
//! whichever encoding the server chose; a server refusing protobuf (406, 415) gets the
//! request again in JSON, and JSON from then on.

use super::kinds::WriteKind;
use super::{envelope, exchange, Encoding, Negotiated};
use kube::api::{Api, PostParams};
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
    let client = api.clone().into_client();
    exchange::negotiated(wire, |encoding| {
        let client = &client;
        async move {
            let body = match (object, encoding) {
                (None, _) => Vec::new(),
                (Some(object), Encoding::Protobuf) => object.to_body(),
                (Some(object), Encoding::Json) => {
                    serde_json::to_vec(object).map_err(Error::SerdeError)?
                }
            };
            let request = build(body).map_err(Error::BuildRequest)?;
            let (protobuf, body) = exchange::send(client, verb, encoding, request)
                .await?
                .read()
                .await?;
            if protobuf {
                envelope::open(body)
                    .and_then(K::from_enveloped)
                    .map_err(|e| Error::Service(Box::new(e)))
            } else {
                serde_json::from_slice(&body).map_err(Error::SerdeError)
            }
        }
    })
    .await
}
