//! A log of the requests the server served, in the terms RBAC authorises them: verb, API
//! group, resource, subresource, namespace and name, plus the client's `User-Agent`.
//!
//! It is off until [`crate::ApiServer::record_requests`] turns it on, because it keeps every
//! request: `kube-endpoints dev` and the benches serve millions and only tests read the log.
//! The RBAC test replays the controllers' scenarios with it on and checks every record
//! against the manifests' rules.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use axum::http::{header, HeaderMap};

use crate::rest::Target;

/// One request, as an authoriser sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestRecord {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// API group; empty for the core group.
    pub group: String,
    /// Resource plural, e.g. `endpointslices`.
    pub resource: String,
    /// `status` for the status subresource.
    pub subresource: Option<String>,
    /// The namespace in the path; `None` for cluster-scoped and all-namespace requests.
    pub namespace: Option<String>,
    /// The object's name, for requests on one object.
    pub name: Option<String>,
    /// The `User-Agent` header, which tells the clients of one server apart.
    pub user_agent: Option<String>,
}

/// The records, and whether to keep them.
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    enabled: AtomicBool,
    records: Mutex<Vec<RequestRecord>>,
}

impl RequestLog {
    /// Starts or stops recording; stopping keeps what was recorded.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Release);
    }

    /// Records one request to `target`, if recording is on.
    pub fn record(&self, verb: &str, target: &Target, headers: &HeaderMap) {
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        let record = RequestRecord {
            verb: verb.to_owned(),
            group: target.resource.group.to_owned(),
            resource: target.resource.plural.to_owned(),
            subresource: target.status.then(|| "status".to_owned()),
            namespace: target.namespace.clone(),
            name: target.name.clone(),
            user_agent: headers
                .get(header::USER_AGENT)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
        };
        self.lock().push(record);
    }

    /// The records so far, oldest first.
    pub fn snapshot(&self) -> Vec<RequestRecord> {
        self.lock().clone()
    }

    /// Forgets every record.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RequestRecord>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, PostParams};
    use kube::Client;
    use serde_json::json;

    use crate::{ApiServer, Config};

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn requests_are_recorded_only_while_recording_is_on() {
        let server = ApiServer::new(Config::default());
        let pods: Api<Pod> = Api::namespaced(Client::new(server.service(), "default"), "default");
        pods.create(&PostParams::default(), &pod()).await.unwrap();
        assert!(server.request_log().is_empty(), "off by default");

        server.record_requests(true);
        pods.get_status("web").await.unwrap();
        Api::<Pod>::all(Client::new(server.service(), "default"))
            .list(&Default::default())
            .await
            .unwrap();
        let log = server.request_log();
        let seen: Vec<_> = log
            .iter()
            .map(|r| {
                (
                    r.verb.as_str(),
                    r.group.as_str(),
                    r.resource.as_str(),
                    r.subresource.as_deref(),
                    r.namespace.as_deref(),
                    r.name.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "get",
                    "",
                    "pods",
                    Some("status"),
                    Some("default"),
                    Some("web")
                ),
                ("list", "", "pods", None, None, None),
            ]
        );

        server.clear_request_log();
        assert!(server.request_log().is_empty());
    }
}
