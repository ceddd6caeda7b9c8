//! The server's own record of the requests it answered, in the terms RBAC authorises them
//! (verb, API group, resource, subresource, namespace, name, and the user when a token this
//! server issued authenticated the request) plus the client's `User-Agent`, the answer's
//! status code and, for an accepted write, the object as answered. Requests refused with a
//! 401 for an expired or revoked token are recorded too, without a user.
//!
//! `plan` reports the writes the controllers made from this log, so what it prints is what
//! reached the API server; the RBAC test checks every record against the manifests' rules.
//! It is off unless [`crate::Config::record_requests`] or [`crate::ApiServer::record_requests`]
//! turns it on: `kubectl-endpoints dev` and the benches serve millions of requests and only tests
//! and `plan` read the log.

use axum::http::{header, HeaderMap};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::rest::Target;
use crate::tokens::ServiceAccountUser;

/// One request, as an authoriser sees it, and how it was answered.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// API group; empty for the core group.
    pub group: String,
    /// Resource plural, e.g. `endpointslices`.
    pub resource: String,
    /// `status` for the status subresource, `token` for a ServiceAccount's TokenRequest.
    pub subresource: Option<String>,
    /// The namespace in the path; `None` for cluster-scoped and all-namespace requests.
    pub namespace: Option<String>,
    /// The object's name: from the path, or for a create the name the server gave it.
    pub name: Option<String>,
    /// Who sent the request: the ServiceAccount user
    /// (`system:serviceaccount:{namespace}:{name}`) of a token this server issued through a
    /// TokenRequest; `None` for every other request, which the server does not authenticate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The `User-Agent` header, which tells the clients of one server apart.
    pub user_agent: Option<String>,
    /// The HTTP status code of the answer.
    pub code: u16,
    /// The Content-Type of the answer, which tells the encoding it was served in
    /// (`application/json`, `application/vnd.kubernetes.protobuf`, or with `;stream=watch`
    /// for a protobuf watch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// For a write the server accepted, the object as it answered it (absent for reads,
    /// refusals, deletes answered with a Status and TokenRequests, whose answer is a
    /// credential rather than a stored object), as the JSON text it sent: a slice of a
    /// hundred endpoints takes a tenth of the memory this way that it takes as a parsed
    /// `Value`, and `plan` keeps every write of a run. [`RequestRecord::parsed_object`] parses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Box<RawValue>>,
}

impl RequestRecord {
    /// A record of `verb` on `target`, answered with `code`.
    pub(crate) fn new(verb: &str, target: &Target, headers: &HeaderMap, code: u16) -> Self {
        Self {
            verb: verb.to_owned(),
            group: target.resource.group.to_owned(),
            resource: target.resource.plural.to_owned(),
            subresource: target.subresource.map(|s| s.name().to_owned()),
            namespace: target.namespace.clone(),
            name: target.name.clone(),
            user: target.user.as_ref().map(|u| u.username.clone()),
            user_agent: user_agent(headers),
            code,
            content_type: None,
            object: None,
        }
    }

    /// A record of a create of a review (TokenReview, SubjectAccessReview): cluster-scoped,
    /// unnamed and never stored; `user` sent it, when a token this server issued says so.
    pub(crate) fn review(
        group: &str,
        plural: &str,
        headers: &HeaderMap,
        user: Option<&ServiceAccountUser>,
        code: u16,
    ) -> Self {
        Self {
            verb: "create".to_owned(),
            group: group.to_owned(),
            resource: plural.to_owned(),
            subresource: None,
            namespace: None,
            name: None,
            user: user.map(|u| u.username.clone()),
            user_agent: user_agent(headers),
            code,
            content_type: None,
            object: None,
        }
    }

    /// The object the server answered an accepted write with, parsed.
    pub fn parsed_object(&self) -> Option<Value> {
        self.object
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// Whether the request asked to change something.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// Whether the server answered with success.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

fn user_agent(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The records, and whether to keep them.
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    enabled: AtomicBool,
    records: Mutex<Vec<RequestRecord>>,
}

impl RequestLog {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled: AtomicBool::new(enabled),
            records: Mutex::default(),
        }
    }

    /// Starts or stops recording; stopping keeps what was recorded.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Release);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    pub fn push(&self, record: RequestRecord) {
        if self.enabled() {
            self.lock().push(record);
        }
    }

    /// The records so far, oldest first.
    pub fn snapshot(&self) -> Vec<RequestRecord> {
        self.lock().clone()
    }

    /// The records so far, oldest first, leaving the log empty: no copy of what may be
    /// tens of megabytes of written objects.
    pub fn take(&self) -> Vec<RequestRecord> {
        std::mem::take(&mut *self.lock())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Forgets every record.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> MutexGuard<'_, Vec<RequestRecord>> {
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
                    r.code,
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
                    Some("web"),
                    200
                ),
                ("list", "", "pods", None, None, None, 200),
            ]
        );

        let taken = server.take_request_log();
        assert_eq!(taken.len(), log.len(), "take hands over every record");
        assert!(server.request_log().is_empty(), "and leaves none behind");
        server.clear_request_log();
        assert!(server.request_log().is_empty());
    }

    #[tokio::test]
    async fn an_accepted_create_is_recorded_with_its_generated_name_and_object() {
        let server = ApiServer::new(Config {
            record_requests: true,
            ..Config::default()
        });
        let pods: Api<Pod> = Api::namespaced(Client::new(server.service(), "default"), "default");
        let mut generated = pod();
        generated.metadata.name = None;
        generated.metadata.generate_name = Some("web-".into());
        let created = pods
            .create(&PostParams::default(), &generated)
            .await
            .unwrap();
        let log = server.request_log();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].name, created.metadata.name);
        assert_eq!(
            log[0]
                .parsed_object()
                .and_then(|o| o.pointer("/metadata/uid").cloned())
                .and_then(|u| u.as_str().map(str::to_owned)),
            created.metadata.uid
        );
    }
}
