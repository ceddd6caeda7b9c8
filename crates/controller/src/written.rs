//! Our creates and replaces, reading back only the metadata the controllers use.
//!
//! kube's `Api::create` and `Api::replace` decode the API server's answer as the whole object.
//! A written slice comes back with every endpoint and its managedFields: tens of kilobytes
//! decoded into hundreds of small allocations, for the trackers to read its uid, generation,
//! labels and resourceVersion. These send the same requests (URL, field manager) through the
//! same client, and decode the answer's metadata alone.
//!
//! The body goes out in the negotiated encoding: protobuf (as kube-controller-manager sends
//! it) unless the run asked for JSON or the server refused protobuf, in which case the write
//! is sent again in JSON and JSON is used from then on.

use crate::field_manager::post_params;
use crate::wire::kinds::meta::MetadataOnly;
use crate::wire::kinds::WriteKind;
use crate::wire::objects::{self, Write};
use crate::wire::{envelope, Negotiated};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::{Error, Resource};
use prost::Message;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a write needs of an object: both encodings, and an empty object to hold metadata.
pub trait Writable: Resource + WriteKind + Serialize + Default + Clone {}
impl<K: Resource + WriteKind + Serialize + Default + Clone> Writable for K {}

/// Writes `object` by `how`; returns the written object's metadata in an otherwise empty
/// `K`.
pub async fn write<K: Writable>(
    api: &Api<K>,
    how: Write<'_>,
    object: &K,
    wire: &Negotiated,
) -> kube::Result<K> {
    let metadata = objects::write(api, how, object, &post_params(), wire, metadata_of).await?;
    let mut written = K::default();
    *written.meta_mut() = metadata;
    Ok(written)
}

/// The metadata of a write's answer, in whichever encoding it came.
fn metadata_of(protobuf: bool, body: bytes::Bytes) -> kube::Result<ObjectMeta> {
    if protobuf {
        let raw = envelope::open(body)
            .map(|o| o.raw)
            .map_err(|e| Error::Service(Box::new(e)))?;
        Ok(MetadataOnly::decode(raw)
            .map_err(|e| Error::Service(Box::new(e)))?
            .metadata
            .unwrap_or_default()
            .into())
    } else {
        Ok(serde_json::from_slice::<Answer>(&body)
            .map_err(Error::SerdeError)?
            .metadata
            .into())
    }
}

/// The API server's JSON answer to a write, as far as we read it: serde skips the rest
/// unbuilt.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    generation: Option<i64>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

impl From<Metadata> for ObjectMeta {
    fn from(m: Metadata) -> Self {
        ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            uid: m.uid,
            generation: m.generation,
            resource_version: m.resource_version,
            labels: m.labels,
            ..ObjectMeta::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Encoding;
    use apiserver::{ApiServer, Config};
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
    use kube::Client;

    fn slice(ip: &str) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                name: Some("web-abc".into()),
                namespace: Some("default".into()),
                labels: Some([("kubernetes.io/service-name".into(), "web".into())].into()),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".into(),
            endpoints: vec![Endpoint {
                addresses: vec![ip.into()],
                ..Endpoint::default()
            }],
            ..EndpointSlice::default()
        }
    }

    /// The metadata read back is the stored object's, and the write is the same request
    /// kube's own methods send (field manager included).
    #[tokio::test]
    async fn writes_read_back_the_stored_metadata() {
        for encoding in [Encoding::Protobuf, Encoding::Json] {
            writes_read_back_the_stored_metadata_in(encoding).await;
        }
    }

    async fn writes_read_back_the_stored_metadata_in(encoding: Encoding) {
        let wire = Negotiated::new(encoding);
        let server = ApiServer::new(Config::default());
        let api: Api<EndpointSlice> =
            Api::namespaced(Client::new(server.service(), "default"), "default");

        let created = write(&api, Write::Create, &slice("10.0.0.1"), &wire)
            .await
            .unwrap();
        let stored = api.get("web-abc").await.unwrap();
        assert_eq!(created.metadata.uid, stored.metadata.uid);
        assert_eq!(created.metadata.generation, stored.metadata.generation);
        assert_eq!(
            created.metadata.resource_version,
            stored.metadata.resource_version
        );
        assert_eq!(created.metadata.labels, stored.metadata.labels);
        assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
        assert!(created.endpoints.is_empty(), "only the metadata is read");
        let managers: Vec<_> = stored.metadata.managed_fields.iter().flatten().collect();
        assert!(managers
            .iter()
            .any(|m| m.manager.as_deref() == Some(crate::field_manager::FIELD_MANAGER)));

        let mut next = slice("10.0.0.2");
        next.metadata.resource_version = stored.metadata.resource_version.clone();
        let replaced = write(&api, Write::Replace { name: "web-abc" }, &next, &wire)
            .await
            .unwrap();
        let stored = api.get("web-abc").await.unwrap();
        assert_eq!(stored.endpoints[0].addresses, vec!["10.0.0.2".to_string()]);
        assert_eq!(replaced.metadata.generation, stored.metadata.generation);
        assert_eq!(
            replaced.metadata.resource_version,
            stored.metadata.resource_version
        );

        // A refused write is kube's error, as before.
        let err = write(&api, Write::Create, &slice("10.0.0.3"), &wire)
            .await
            .unwrap_err();
        assert!(crate::api_errors::is_already_exists(&err), "{err:?}");
        assert_eq!(wire.current(), encoding, "the server speaks both");
    }
}
