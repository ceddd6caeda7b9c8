//! Our creates and replaces, reading back only the metadata the controllers use.
//!
//! kube's `Api::create` and `Api::replace` decode the API server's answer as the whole object.
//! A written slice comes back with every endpoint and its managedFields: tens of kilobytes
//! decoded into hundreds of small allocations, for the trackers to read its uid, generation,
//! labels and resourceVersion. These send the same requests (URL, body, field manager) through
//! the same client, and decode the answer's metadata alone.

use crate::field_manager::post_params;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::core::Request;
use kube::{Error, Resource};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Creates `object`; returns the created object's metadata in an otherwise empty `K`.
pub async fn create<K>(api: &Api<K>, object: &K) -> kube::Result<K>
where
    K: Resource + Serialize + Default + Clone,
{
    let body = serde_json::to_vec(object).map_err(Error::SerdeError)?;
    let request = Request::new(api.resource_url())
        .create(&post_params(), body)
        .map_err(Error::BuildRequest)?;
    send(api, "create", request).await
}

/// Replaces the object `name` with `object`; returns the written object's metadata in an
/// otherwise empty `K`.
pub async fn replace<K>(api: &Api<K>, name: &str, object: &K) -> kube::Result<K>
where
    K: Resource + Serialize + Default + Clone,
{
    let body = serde_json::to_vec(object).map_err(Error::SerdeError)?;
    let request = Request::new(api.resource_url())
        .replace(name, &post_params(), body)
        .map_err(Error::BuildRequest)?;
    send(api, "replace", request).await
}

/// Sends `request` through `api`'s client, tagged with its verb as kube's own methods tag
/// theirs, and keeps the answer's metadata.
async fn send<K>(
    api: &Api<K>,
    verb: &'static str,
    mut request: http::Request<Vec<u8>>,
) -> kube::Result<K>
where
    K: Resource + Default + Clone,
{
    request.extensions_mut().insert(verb);
    let answer: Answer = api.clone().into_client().request(request).await?;
    let mut written = K::default();
    *written.meta_mut() = answer.metadata.into();
    Ok(written)
}

/// The API server's answer to a write, as far as we read it: serde skips the rest unbuilt.
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
        let server = ApiServer::new(Config::default());
        let api: Api<EndpointSlice> =
            Api::namespaced(Client::new(server.service(), "default"), "default");

        let created = create(&api, &slice("10.0.0.1")).await.unwrap();
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
        let replaced = replace(&api, "web-abc", &next).await.unwrap();
        let stored = api.get("web-abc").await.unwrap();
        assert_eq!(stored.endpoints[0].addresses, vec!["10.0.0.2".to_string()]);
        assert_eq!(replaced.metadata.generation, stored.metadata.generation);
        assert_eq!(
            replaced.metadata.resource_version,
            stored.metadata.resource_version
        );

        // A refused write is kube's error, as before.
        let err = create(&api, &slice("10.0.0.3")).await.unwrap_err();
        assert!(crate::api_errors::is_already_exists(&err), "{err:?}");
    }
}
