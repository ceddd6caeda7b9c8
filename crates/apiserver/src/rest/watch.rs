//! Watch: a stream of events that follows the history, as newline-delimited JSON or, when the
//! client negotiated protobuf, as length-prefixed `WatchEvent` frames
//! (`application/vnd.kubernetes.protobuf;stream=watch`). A change's protobuf object is encoded
//! once, by the first protobuf watcher that sends it, and shared by the others.
//!
//! A watch starts from a resourceVersion. Without one (or with "0") it first sends the current
//! objects as ADDED; with one it replays every later change, or answers with an ERROR event
//! holding a 410 Expired Status when the history no longer reaches back that far. A streaming
//! list (`sendInitialEvents=true` with `resourceVersionMatch=NotOlderThan`, kube-apiserver's
//! WatchList) sends the current objects as ADDED whatever the resourceVersion, then a BOOKMARK
//! annotated `k8s.io/initial-events-end`, so a client gets a list without a list request. It then
//! follows new writes until the client goes away, `timeoutSeconds` passes, the server stops, or
//! a fault closes it. Bookmarks carry the latest resourceVersion when the client asks for them.

use super::read::{select, Selection};
use super::table::{self, TableRequest};
use super::{flag, Encoding, Params, Target};
use crate::history::{Change, EventType};
use crate::protobuf;
use crate::state::Shared;
use crate::status::ApiError;
use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Serialize)]
struct WireEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: &'a Value,
}

fn json_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&WireEvent { kind, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// A BOOKMARK event's object: the watched kind at resourceVersion `rv`, nothing else.
fn bookmark(target: &Target, rv: u64) -> Value {
    json!({
        "kind": target.resource.kind,
        "apiVersion": target.resource.api_version(),
        "metadata": {"resourceVersion": rv.to_string()},
    })
}

/// What one watch selects.
struct Filter {
    target: Target,
    selection: Selection,
    table: Option<TableRequest>,
}

impl Filter {
    /// One event, its object turned into a Table row when the watch asked for Tables.
    fn encode(&self, kind: &str, object: &Value) -> Result<Bytes, ApiError> {
        match self.table {
            Some(request) => {
                let rv = crate::store::meta_str(object, "resourceVersion").unwrap_or_default();
                let table = table::table(self.target.resource, [object], rv, request);
                Ok(json_line(kind, &table))
            }
            None => self.plain(kind, object),
        }
    }

    /// One event with the object as it is (bookmarks are never Tables).
    fn plain(&self, kind: &str, object: &Value) -> Result<Bytes, ApiError> {
        match self.target.encoding {
            Encoding::Json => Ok(json_line(kind, object)),
            Encoding::Protobuf => Ok(Bytes::from(protobuf::watch_frame(
                kind,
                &self.envelope(object)?,
            ))),
        }
    }

    /// The protobuf body of an object of the watched resource.
    fn envelope(&self, object: &Value) -> Result<Vec<u8>, ApiError> {
        let resource = self.target.resource;
        protobuf::encode_object(&resource.api_version(), resource.kind, object)
            .map_err(|e| ApiError::internal(format!("encoding a watch event as protobuf: {e}")))
    }

    /// The event for a change: in protobuf, the object's bytes are taken from the change,
    /// where the first watcher to send it keeps them.
    fn encode_change(
        &self,
        kind: &str,
        change: &Change,
        object: &Value,
    ) -> Result<Bytes, ApiError> {
        if self.table.is_some() || self.target.encoding == Encoding::Json {
            return self.encode(kind, object);
        }
        let envelope = match change.protobuf.get() {
            Some(bytes) => bytes.clone(),
            None => {
                let bytes = Bytes::from(self.envelope(object)?);
                // Another watcher may have set it meanwhile; the bytes are the same.
                let _first = change.protobuf.set(bytes.clone());
                bytes
            }
        };
        Ok(Bytes::from(protobuf::watch_frame(kind, &envelope)))
    }

    /// An ERROR event carrying `error`'s Status, which ends a watch.
    fn error_event(&self, error: &ApiError) -> Bytes {
        let status = error.to_status();
        match self.target.encoding {
            Encoding::Json => json_line("ERROR", &status),
            Encoding::Protobuf => match protobuf::encode_object("v1", "Status", &status) {
                Ok(body) => Bytes::from(protobuf::watch_frame("ERROR", &body)),
                Err(e) => {
                    tracing::warn!(error = %e, "encoding a watch error as protobuf failed");
                    Bytes::new()
                }
            },
        }
    }

    fn in_scope(&self, object: &Value) -> bool {
        match &self.target.namespace {
            Some(ns) => crate::store::meta_str(object, "namespace") == Some(ns.as_str()),
            None => true,
        }
    }

    fn selects(&self, object: &Value) -> bool {
        self.in_scope(object) && self.selection.matches(object)
    }

    /// The event this watch sees for a change: a modification that moves an object into the
    /// selection is ADDED, one that moves it out is DELETED, as kube-apiserver's watch cache does.
    fn event_for<'c>(&self, change: &'c Change) -> Option<(&'static str, &'c Value)> {
        if !std::ptr::eq(change.resource, self.target.resource) {
            return None;
        }
        let now = self.selects(&change.object);
        match change.kind {
            EventType::Added | EventType::Deleted => {
                now.then_some((change.kind.as_str(), &*change.object))
            }
            EventType::Modified => {
                let before = change.previous.as_deref().is_some_and(|p| self.selects(p));
                match (before, now) {
                    (true, true) => Some(("MODIFIED", &*change.object)),
                    (false, true) => Some(("ADDED", &*change.object)),
                    (true, false) => Some(("DELETED", &*change.object)),
                    (false, false) => None,
                }
            }
        }
    }
}

/// Starts a watch and returns the streaming response.
/// Watches a collection; with `table`, each event's object is a one-row Table, as kubectl
/// asks for when it prints `get -w`.
pub(crate) fn watch(
    shared: Arc<Shared>,
    target: Target,
    params: &Params,
    table: Option<TableRequest>,
) -> Response {
    let fail = |error: ApiError| error.into_response_as(target.encoding);
    let selection = match Selection::from_params(params) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let timeout = match params.get("timeoutSeconds").map(|t| t.parse::<u64>()) {
        None => None,
        Some(Ok(secs)) => Some(Duration::from_secs(secs)),
        Some(Err(_)) => return fail(ApiError::bad_request("invalid timeoutSeconds")),
    };
    let from = match params.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => match rv.parse::<u64>() {
            Ok(rv) => Some(rv),
            Err(_) => {
                return fail(ApiError::bad_request(format!(
                    "invalid resourceVersion {rv:?}"
                )))
            }
        },
    };
    let bookmarks = flag(params, "allowWatchBookmarks");
    let send_initial_events = match params.get("sendInitialEvents").map(String::as_str) {
        None => None,
        Some("true" | "1") => Some(true),
        Some("false" | "0") => Some(false),
        Some(other) => {
            return fail(ApiError::bad_request(format!(
                "invalid sendInitialEvents {other:?}"
            )))
        }
    };
    let errors = watch_list_errors(
        shared.watch_list.load(std::sync::atomic::Ordering::Relaxed),
        send_initial_events,
        params.get("resourceVersionMatch").map(String::as_str),
    );
    if !errors.is_empty() {
        return fail(ApiError::invalid_list_options(&errors));
    }
    let start = match (send_initial_events, from) {
        (Some(true), _) => Start::Snapshot {
            end_bookmark: bookmarks,
        },
        (Some(false), None) => Start::Now,
        (_, Some(rv)) => Start::After(rv),
        (None, None) => Start::Snapshot {
            end_bookmark: false,
        },
    };
    let label = target.label();
    let content_type = match (target.encoding, table) {
        (Encoding::Protobuf, None) => protobuf::WATCH_MEDIA_TYPE,
        _ => "application/json",
    };
    let filter = Filter {
        target,
        selection,
        table,
    };
    let (tx, mut rx) = mpsc::channel::<Bytes>(256);
    let forced_expiry = shared.faults.take_forced_expiry(&label);
    tokio::spawn(async move {
        let current = shared.read(|c| c.store.resource_version());
        if forced_expiry {
            let requested = from.unwrap_or(current);
            let error = ApiError::expired(requested, current + 1);
            let _sent = tx.send(filter.error_event(&error)).await;
            return;
        }
        if let Some(requested) = from.filter(|rv| *rv > current) {
            // A resourceVersion this server never handed out: it was restarted with fresh
            // state, or the client is confused. kube-apiserver's watch cache waits up to 3 s for
            // it and then sends this error as the watch's only event; our store is never behind
            // its own writes, so there is nothing to wait for.
            let error = ApiError::too_large_resource_version(requested, current);
            let _sent = tx.send(filter.error_event(&error)).await;
            return;
        }
        run(shared, filter, start, timeout, bookmarks, tx).await;
    });
    let stream =
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|b| b.map(Ok::<_, Infallible>)));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}

/// What a watch sends before it follows new changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// The changes after this resourceVersion.
    After(u64),
    /// The current objects as ADDED, then (for a streaming list) the bookmark that ends them.
    Snapshot { end_bookmark: bool },
    /// Nothing: only changes from now on.
    Now,
}

/// kube-apiserver's checks of a watch's `sendInitialEvents` and `resourceVersionMatch`, as
/// `(field, error type, message)`.
fn watch_list_errors(
    enabled: bool,
    send_initial_events: Option<bool>,
    version_match: Option<&str>,
) -> Vec<(&'static str, &'static str, String)> {
    const NOT_OLDER_THAN: &str = "NotOlderThan";
    let mut errors = Vec::new();
    let version_match = version_match.filter(|m| !m.is_empty());
    if send_initial_events.is_some() {
        if version_match != Some(NOT_OLDER_THAN) {
            errors.push((
                "resourceVersionMatch",
                "Forbidden",
                format!(
                    "sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}"
                ),
            ));
        }
        if !enabled {
            errors.push((
                "sendInitialEvents",
                "Forbidden",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".to_owned(),
            ));
        }
    }
    if let Some(m) = version_match {
        if send_initial_events.is_none() {
            errors.push((
                "resourceVersionMatch",
                "Forbidden",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
                    .to_owned(),
            ));
        }
        if m != NOT_OLDER_THAN {
            errors.push((
                "resourceVersionMatch",
                "Unsupported value",
                format!("\"{m}\": supported values: \"{NOT_OLDER_THAN}\""),
            ));
        }
    }
    errors
}

/// Why a watch loop ended early.
enum Stop {
    ClientGone,
    /// The history no longer reaches back far enough, or an event could not be encoded.
    Failed(ApiError),
    Limit,
}

struct Sender {
    tx: mpsc::Sender<Bytes>,
    sent: u64,
    limit: Option<u64>,
}

impl Sender {
    async fn send(&mut self, line: Bytes) -> Result<(), Stop> {
        if self.limit.is_some_and(|l| self.sent >= l) {
            return Err(Stop::Limit);
        }
        self.tx.send(line).await.map_err(|_| Stop::ClientGone)?;
        self.sent += 1;
        Ok(())
    }
}

async fn run(
    shared: Arc<Shared>,
    filter: Filter,
    start: Start,
    timeout: Option<Duration>,
    bookmarks: bool,
    tx: mpsc::Sender<Bytes>,
) {
    let mut changes = shared.subscribe_changes();
    let mut stopping = shared.subscribe_stopping();
    let mut drops = shared.faults.drop_signal();
    let mut out = Sender {
        tx: tx.clone(),
        sent: 0,
        limit: shared.faults.watch_event_limit(),
    };
    // A timeout too large to add to the clock (timeoutSeconds=9223372036854775807) means no
    // deadline, rather than a panic in the watch task.
    let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
    let mut bookmark_timer = tokio::time::interval(shared.bookmark_interval);
    bookmark_timer.tick().await;

    let mut last = match start {
        Start::After(rv) => rv,
        Start::Now => shared.read(|c| c.store.resource_version()),
        Start::Snapshot { end_bookmark } => {
            let (items, rv) = select(&shared, &filter.target, &filter.selection);
            for item in &items {
                let event = match filter.encode("ADDED", item) {
                    Ok(event) => event,
                    Err(error) => {
                        let _sent = tx.send(filter.error_event(&error)).await;
                        return;
                    }
                };
                if out.send(event).await.is_err() {
                    return;
                }
            }
            if end_bookmark {
                let mut bookmark = bookmark(&filter.target, rv);
                bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                let Ok(event) = filter.plain("BOOKMARK", &bookmark) else {
                    return;
                };
                if out.send(event).await.is_err() {
                    return;
                }
            }
            rv
        }
    };
    loop {
        match drain(&shared, &filter, &mut last, &mut out).await {
            Ok(()) => {}
            Err(Stop::Failed(error)) => {
                let _sent = tx.send(filter.error_event(&error)).await;
                return;
            }
            Err(Stop::ClientGone | Stop::Limit) => return,
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = bookmark_timer.tick(), if bookmarks => {
                if drain(&shared, &filter, &mut last, &mut out).await.is_err() {
                    return;
                }
                let rv = shared.read(|c| c.store.resource_version()).max(last);
                let Ok(event) = filter.plain("BOOKMARK", &bookmark(&filter.target, rv)) else {
                    return;
                };
                if out.send(event).await.is_err() {
                    return;
                }
                last = rv;
            }
            _ = sleep_until(deadline) => return,
            _ = stopped(&mut stopping) => return,
            _ = drops.changed() => return,
            _ = tx.closed() => return,
        }
    }
}

/// Completes when the server stops (or its state is gone); holds no guard across the await.
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    let _stopped_or_gone = stopping.wait_for(|s| *s).await.is_ok();
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Sends every change after `last` that this watch selects, and advances `last`.
async fn drain(
    shared: &Shared,
    filter: &Filter,
    last: &mut u64,
    out: &mut Sender,
) -> Result<(), Stop> {
    let changes = shared
        .read(|c| c.store.history().since(*last))
        .map_err(|e| Stop::Failed(ApiError::expired(e.requested, e.oldest)))?;
    for change in changes {
        if let Some((kind, object)) = filter.event_for(&change) {
            let event = filter
                .encode_change(kind, &change, object)
                .map_err(Stop::Failed)?;
            out.send(event).await?;
        }
        *last = change.resource_version;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(encoding: Encoding) -> Filter {
        let mut target = crate::classify::parse_target("", "v1", "pods").unwrap();
        target.encoding = encoding;
        Filter {
            target,
            selection: Selection::default(),
            table: None,
        }
    }

    fn change(name: &str) -> Change {
        Change {
            resource_version: 7,
            resource: crate::resources::find("", "v1", "pods").unwrap(),
            kind: EventType::Added,
            object: Arc::new(json!({"metadata": {"name": name, "namespace": "default"}})),
            previous: None,
            protobuf: Default::default(),
        }
    }

    #[test]
    fn a_change_is_encoded_to_protobuf_once_for_every_watcher() {
        let watcher = filter(Encoding::Protobuf);
        let first = change("web");
        let event = watcher
            .encode_change("ADDED", &first, &first.object)
            .unwrap();
        let kept = first
            .protobuf
            .get()
            .expect("the first watcher keeps the bytes");
        assert_eq!(
            kept.as_ref(),
            protobuf::encode_object("v1", "Pod", &first.object).unwrap()
        );
        assert_eq!(event.as_ref(), protobuf::watch_frame("ADDED", kept));

        // A later watcher sends the kept bytes rather than encoding the object again.
        let second = change("web");
        let _set = second.protobuf.set(Bytes::from_static(b"k8s\0kept"));
        let event = filter(Encoding::Protobuf)
            .encode_change("MODIFIED", &second, &second.object)
            .unwrap();
        assert_eq!(
            event.as_ref(),
            protobuf::watch_frame("MODIFIED", b"k8s\0kept")
        );

        // JSON watchers leave the change alone.
        let third = change("web");
        let line = filter(Encoding::Json)
            .encode_change("ADDED", &third, &third.object)
            .unwrap();
        assert!(line.ends_with(b"\n"));
        assert!(third.protobuf.get().is_none());
    }

    #[test]
    fn errors_in_a_protobuf_watch_are_status_frames() {
        let frame = filter(Encoding::Protobuf).error_event(&ApiError::expired(1, 5));
        let (event_type, status) = protobuf::decode_watch_event(&frame[4..]).unwrap();
        assert_eq!(event_type, "ERROR");
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], 410);
        assert_eq!(status["reason"], "Expired");
    }
}
