//! Requests the driver itself sends (the workload, snapshots, the final read-back). They go
//! through the same faulty server as the controllers', so each is retried while the answer
//! is one a client should retry: 5xx, 429, an injected 409 Conflict, or no connection.

use anyhow::{anyhow, Result};
use kube::api::ListParams;
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// How often a request is tried before the driver gives up on it.
const ATTEMPTS: usize = 60;
/// The pause between tries.
const PAUSE: Duration = Duration::from_millis(20);

/// Whether `error` is worth another try.
fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.code >= 500
                || status.code == 429
                || (status.code == 409 && status.reason != "AlreadyExists")
        }
        kube::Error::Service(_) | kube::Error::HyperError(_) => true,
        _ => false,
    }
}

/// Whether `error` is a 404.
pub fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 404)
}

/// Whether `error` is a 409 AlreadyExists.
pub fn is_already_exists(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

/// Runs `request` until it succeeds or fails in a way retrying cannot help.
pub async fn retrying<T, F, Fut>(mut request: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    loop {
        match request().await {
            Err(e) if transient(&e) && attempt < ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(PAUSE).await;
            }
            result => return result,
        }
    }
}

/// Every object of kind `K` (in all namespaces) as JSON with its `apiVersion` and `kind`,
/// ready for [`apiserver::ApiServer::load_objects`] or `plan`.
pub async fn list_values<K>(client: &Client) -> Result<Vec<Value>>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let api = Api::<K>::all(client.clone());
    let lp = ListParams::default();
    let list = retrying(|| api.list(&lp))
        .await
        .map_err(|e| anyhow!("listing {}: {e}", K::kind(&())))?;
    list.items
        .iter()
        .map(|item| {
            let mut value = serde_json::to_value(item)?;
            if let Some(map) = value.as_object_mut() {
                map.insert("apiVersion".into(), K::api_version(&()).into());
                map.insert("kind".into(), K::kind(&()).into());
            }
            Ok(value)
        })
        .collect()
}
