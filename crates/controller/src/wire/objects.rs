//! Reading and writing whole objects in the negotiated encoding: what the leader election
//! does with its Lease (the controllers' own writes read back only metadata, see
//! [`crate::written`]).
//!
//! With protobuf negotiated, the request body is protobuf and the answer is read in
//! whichever encoding the server chose; a server refusing protobuf (406, 415) gets the
//! request again in JSON, and JSON from then on.

use super::kinds::WriteKind;
use super::{envelope, exchange, Encoding, Negotiated};
use bytes::Bytes;
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
    match send(api, wire, "get", None, &request, whole).await {
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
    write(api, Write::Create, object, params, wire, whole).await
}

/// Replaces the object `name` with `object`; returns it as stored.
pub async fn replace<K: WholeObject>(
    api: &Api<K>,
    name: &str,
    object: &K,
    params: &PostParams,
    wire: &Negotiated,
) -> kube::Result<K> {
    write(api, Write::Replace { name }, object, params, wire, whole).await
}

/// A write of an object with a body.
#[derive(Debug, Clone, Copy)]
pub enum Write<'a> {
    /// A create.
    Create,
    /// A replace of the object `name`.
    Replace {
        /// The object replaced.
        name: &'a str,
    },
}

/// Sends `object` by `how`, and reads the answer with `read`.
pub(crate) async fn write<K, T>(
    api: &Api<K>,
    how: Write<'_>,
    object: &K,
    params: &PostParams,
    wire: &Negotiated,
    read: impl Fn(bool, Bytes) -> kube::Result<T> + Sync,
) -> kube::Result<T>
where
    K: Resource + WriteKind + Serialize + Clone,
{
    let request = |body| how.request(api, params, body);
    send(api, wire, how.verb(), Some(object), &request, read).await
}

impl Write<'_> {
    /// The verb, as the request metrics and logs name it.
    fn verb(self) -> &'static str {
        match self {
            Write::Create => "create",
            Write::Replace { .. } => "replace",
        }
    }

    /// The request carrying `body`.
    fn request<K: Resource>(
        self,
        api: &Api<K>,
        params: &PostParams,
        body: Vec<u8>,
    ) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
        let request = Request::new(api.resource_url());
        match self {
            Write::Create => request.create(params, body),
            Write::Replace { name } => request.replace(name, params, body),
        }
    }
}

/// Builds the request around a body (empty for a get).
type Build<'a> =
    &'a (dyn Fn(Vec<u8>) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> + Sync);

/// Sends the request `build` makes, with `object` as its body (or none) in the negotiated
/// encoding, falling back to JSON once if the server refuses protobuf, and reads the answer
/// with `read`, told whether it came in protobuf.
async fn send<K: Resource + WriteKind + Serialize + Clone, T>(
    api: &Api<K>,
    wire: &Negotiated,
    verb: &'static str,
    object: Option<&K>,
    build: Build<'_>,
    read: impl Fn(bool, Bytes) -> kube::Result<T> + Sync,
) -> kube::Result<T> {
    let client = api.clone().into_client();
    exchange::negotiated(wire, |encoding| {
        let (client, read) = (&client, &read);
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
            read(protobuf, body)
        }
    })
    .await
}

/// The whole object of an answer, in whichever encoding it came.
fn whole<K: WholeObject>(protobuf: bool, body: Bytes) -> kube::Result<K> {
    if protobuf {
        envelope::open(body)
            .and_then(K::from_enveloped)
            .map_err(|e| Error::Service(Box::new(e)))
    } else {
        serde_json::from_slice(&body).map_err(Error::SerdeError)
    }
}
