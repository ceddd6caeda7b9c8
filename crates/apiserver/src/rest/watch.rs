//! Watch: a stream of newline-delimited JSON events that follows the history.
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
use super::{flag, Params, Target};
use crate::history::{Change, EventType};
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

fn encode(kind: &str, object: &Value) -> Bytes {
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

/// An ERROR event carrying `error`'s Status, which ends a watch.
fn expired_event(error: &ApiError) -> Bytes {
    encode("ERROR", &error.to_status())
}

/// What one watch selects.
struct Filter {
    target: Target,
    selection: Selection,
    table: Option<TableRequest>,
}

impl Filter {
    /// One event line, its object turned into a Table row when the watch asked for Tables.
    fn encode(&self, kind: &str, object: &Value) -> Bytes {
        match self.table {
            Some(request) => {
                let rv = crate::store::meta_str(object, "resourceVersion").unwrap_or_default();
                let table = table::table(self.target.resource, [object], rv, request);
                encode(kind, &table)
            }
            None => encode(kind, object),
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
    let selection = match Selection::from_params(params) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let timeout = match params.get("timeoutSeconds").map(|t| t.parse::<u64>()) {
        None => None,
        Some(Ok(secs)) => Some(Duration::from_secs(secs)),
        Some(Err(_)) => return ApiError::bad_request("invalid timeoutSeconds").into_response(),
    };
    let from = match params.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => match rv.parse::<u64>() {
            Ok(rv) => Some(rv),
            Err(_) => {
                return ApiError::bad_request(format!("invalid resourceVersion {rv:?}"))
                    .into_response()
            }
        },
    };
    let bookmarks = flag(params, "allowWatchBookmarks");
    let send_initial_events = match params.get("sendInitialEvents").map(String::as_str) {
        None => None,
        Some("true" | "1") => Some(true),
        Some("false" | "0") => Some(false),
        Some(other) => {
            return ApiError::bad_request(format!("invalid sendInitialEvents {other:?}"))
                .into_response()
        }
    };
    let errors = watch_list_errors(
        shared.watch_list.load(std::sync::atomic::Ordering::Relaxed),
        send_initial_events,
        params.get("resourceVersionMatch").map(String::as_str),
    );
    if !errors.is_empty() {
        return ApiError::invalid_list_options(&errors).into_response();
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
            let _sent = tx
                .send(expired_event(&ApiError::expired(requested, current + 1)))
                .await;
            return;
        }
        if let Some(requested) = from.filter(|rv| *rv > current) {
            // A resourceVersion this server never handed out: it was restarted with fresh
            // state, or the client is confused. kube-apiserver's watch cache waits up to 3 s for
            // it and then sends this error as the watch's only event; our store is never behind
            // its own writes, so there is nothing to wait for.
            let error = ApiError::too_large_resource_version(requested, current);
            let _sent = tx.send(expired_event(&error)).await;
            return;
        }
        run(shared, filter, start, timeout, bookmarks, tx).await;
    });
    let stream =
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|b| b.map(Ok::<_, Infallible>)));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
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
    Expired(ApiError),
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
                if out.send(filter.encode("ADDED", item)).await.is_err() {
                    return;
                }
            }
            if end_bookmark {
                let mut bookmark = bookmark(&filter.target, rv);
                bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                if out.send(encode("BOOKMARK", &bookmark)).await.is_err() {
                    return;
                }
            }
            rv
        }
    };
    loop {
        match drain(&shared, &filter, &mut last, &mut out).await {
            Ok(()) => {}
            Err(Stop::Expired(error)) => {
                let _sent = tx.send(expired_event(&error)).await;
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
                if out.send(encode("BOOKMARK", &bookmark(&filter.target, rv))).await.is_err() {
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
        .map_err(|e| Stop::Expired(ApiError::expired(e.requested, e.oldest)))?;
    for change in changes {
        if let Some((kind, object)) = filter.event_for(&change) {
            out.send(filter.encode(kind, object)).await?;
        }
        *last = change.resource_version;
    }
    Ok(())
}
