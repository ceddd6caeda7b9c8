//! The informers' list and watch, in either encoding, with the events and errors of kube's
//! `watcher()`.
//!
//! kube's watcher decodes JSON only, so the informers have their own: the same states (a
//! streaming list, or pages of a list, then a watch resumed from the last resourceVersion
//! seen; back to the start on 410 Gone), the same [`watcher::Event`]s and
//! [`watcher::Error`]s, whichever encoding is spoken. In protobuf, requests ask for
//! `application/vnd.kubernetes.protobuf` and accept JSON; a server that answers JSON
//! anyway, or refuses protobuf, produces a 406 error, on which the informer starts over in
//! JSON. In JSON, a watch is one JSON event per line, decoded as kube decodes it.
//!
//! Given a [`Recognise`], a protobuf watch past its first list reads each ADDED or MODIFIED
//! event's namespace, name and resourceVersion first, and yields an [`Item::Echo`] instead of
//! decoding the object when the informer knows it as the echo of our own write.

use super::envelope::{self, Frames, WireError};
use super::kinds::meta::MetadataOnly;
use super::kinds::WireKind;
use super::{exchange, list, status, Encoding, JSON, PROTOBUF};
use crate::informer::progress::Progress;
use bytes::Bytes;
use futures::Stream;
use http::header::ACCEPT_ENCODING;
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ListParams, VersionMatch, WatchParams};
use kube::client::Body;
use kube::core::{ObjectList, Request, Status, WatchEvent};
use kube::runtime::watcher::{self, Event, InitialListStrategy, ListSemantic};
use kube::Client;
use prost::Message;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::time::Duration;
use tracing::debug;

/// The annotation of the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

type Result<T, E = watcher::Error> = std::result::Result<T, E>;

/// Lists and watches `K` in `encoding`, as kube's `watcher(api, config)` does in JSON.
///
/// `received` counts the bytes of every list and watch response body. `progress` learns the
/// resourceVersion the consumer has caught up to: that of an event once the consumer asks for
/// the next one (it has applied this one by then), of a list once its `InitDone` is handled,
/// of a bookmark, or of a watch opened to resume; it is forgotten when a new list starts or
/// the watch has to reconnect.
pub fn watcher<K>(
    client: Client,
    config: watcher::Config,
    encoding: Encoding,
    received: Option<prometheus::IntCounter>,
    progress: Progress,
    recognise: Option<Recognise>,
) -> impl Stream<Item = Result<Item<K>>>
where
    K: Watched,
{
    let context = Context {
        client,
        config,
        encoding,
        received,
        progress,
        recognise,
    };
    let start = (context, State::Empty, None::<String>);
    futures::stream::unfold(start, |(context, mut state, reached)| async move {
        // Asked for the next event: the consumer is done with the one it was given.
        if let Some(resource_version) = reached {
            context.progress.advance_to(&resource_version);
        }
        loop {
            let (event, next) = step(&context, state).await;
            state = next;
            if matches!(state, State::Empty) {
                // Back to a list (a 410, a failed start): what was applied counts no more.
                context.progress.forget();
            }
            if let Some(event) = event {
                let reached = reached_by(&event, &state);
                return Some((event, (context, state, reached)));
            }
        }
    })
}

/// The resourceVersion the consumer has caught up to once it has handled `event` (after
/// which the watcher is in `state`): that of a watch event, or of the list `InitDone` ends.
fn reached_by<K>(event: &Result<Item<K>>, state: &State<K>) -> Option<String> {
    match (event, state) {
        (
            Ok(Item::Event(Event::Apply(_) | Event::Delete(_) | Event::InitDone) | Item::Echo(..)),
            State::Watching {
                resource_version, ..
            }
            | State::InitListed { resource_version },
        ) => Some(resource_version.clone()),
        _ => None,
    }
}

/// What the watcher yields: kube's events, and the watch events it took for echoes of our own
/// writes without decoding them.
pub enum Item<K> {
    /// An event, decoded.
    Event(Event<K>),
    /// An ADDED or MODIFIED event that [`Recognise`] recognised, with what it gave for it
    /// and the event's resourceVersion. Builds with debug assertions (the tests) decode the
    /// object all the same and pass it along, for the informer to check the two agree.
    Echo(Echo, String, Option<K>),
}

/// What [`Recognise`] gives for an event it recognised, for the informer that asked.
pub struct Echo(pub Box<dyn std::any::Any + Send>);

/// Tells, from the namespace, name and resourceVersion of a watch event's object alone,
/// whether it is the echo of our own write, and gives what stands in for it (see
/// `crate::informer::echoes`). Asked in protobuf only, of events after the first list.
pub type Recognise = std::sync::Arc<Recogniser>;

/// The function behind [`Recognise`]: namespace, name and resourceVersion in.
pub type Recogniser = dyn Fn(&str, &str, &str) -> Recognition + Send + Sync;

/// What [`Recognise`] says of an event.
pub enum Recognition {
    /// The echo of our write, and what stands in for it.
    Echo(Echo),
    /// Not known as an echo yet, but a write of the object is on its way: its answer may be
    /// read as soon as the runtime runs the tasks already woken.
    InFlight,
    /// Decode it.
    Unknown,
}

/// How many times the watch lets the runtime run other tasks before it decodes an event for
/// an object whose write is on its way. Each time, the runtime polls for I/O and runs what
/// is woken: the write's answer, when it has arrived, is read by then.
const IN_FLIGHT_YIELDS: usize = 3;

/// What the watcher needs of a kind: both encodings.
pub trait Watched:
    WireKind + DeserializeOwned + kube::Resource<DynamicType = ()> + Clone + Send + 'static
{
}
impl<K> Watched for K where
    K: WireKind + DeserializeOwned + kube::Resource<DynamicType = ()> + Clone + Send + 'static
{
}

struct Context {
    client: Client,
    config: watcher::Config,
    encoding: Encoding,
    received: Option<prometheus::IntCounter>,
    progress: Progress,
    recognise: Option<Recognise>,
}

impl Context {
    fn count(&self, bytes: usize) {
        if let Some(received) = &self.received {
            received.inc_by(bytes as u64);
        }
    }
}

enum State<K> {
    /// Nothing known: start with a list (or a streaming list).
    Empty,
    /// Paging through a list.
    InitPage {
        continue_token: Option<String>,
        objects: VecDeque<K>,
        resource_version: Option<String>,
    },
    /// A streaming list: a watch sending the current state first.
    InitialWatch { events: WatchBody },
    /// The list is applied: watch from its resourceVersion.
    InitListed { resource_version: String },
    /// Watching.
    Watching {
        resource_version: String,
        events: WatchBody,
    },
}

async fn step<K: Watched>(
    context: &Context,
    state: State<K>,
) -> (Option<Result<Item<K>>>, State<K>) {
    let config = &context.config;
    match state {
        State::Empty => {
            // A new list: nothing is known to be applied until its InitDone is handled.
            context.progress.forget();
            start_list(context).await
        }
        State::InitPage {
            continue_token,
            mut objects,
            resource_version,
        } => {
            if let Some(object) = objects.pop_front() {
                let state = State::InitPage {
                    continue_token,
                    objects,
                    resource_version,
                };
                return (Some(Ok(Item::Event(Event::InitApply(object)))), state);
            }
            if let (None, Some(resource_version)) = (&continue_token, &resource_version) {
                let resource_version = resource_version.clone();
                return (
                    Some(Ok(Item::Event(Event::InitDone))),
                    State::InitListed { resource_version },
                );
            }
            match list_page::<K>(context, continue_token).await {
                Ok((meta, objects)) => {
                    let resource_version = Some(meta.resource_version).filter(|r| !r.is_empty());
                    if resource_version.is_none() && meta.continue_token.is_none() {
                        return (Some(Err(watcher::Error::NoResourceVersion)), State::Empty);
                    }
                    let state = State::InitPage {
                        continue_token: meta.continue_token,
                        objects: objects.into(),
                        resource_version,
                    };
                    (None, state)
                }
                Err(error) => (
                    Some(Err(watcher::Error::InitialListFailed(error))),
                    State::Empty,
                ),
            }
        }
        State::InitialWatch { mut events } => match events.next::<K>().await {
            Some(Ok(Decoded::Object(kind, object))) if kind != "DELETED" => (
                Some(Ok(Item::Event(Event::InitApply(object)))),
                State::InitialWatch { events },
            ),
            // A streaming list sends no deletes; nothing to apply.
            Some(Ok(Decoded::Object(..))) => (None, State::InitialWatch { events }),
            // Echoes are recognised only after the initial events (`recognise` is set at
            // their end); were one taken here, its object would be missing from the list.
            Some(Ok(Decoded::Echo(..) | Decoded::InFlight(_))) => (
                Some(Err(watcher::Error::WatchFailed(undecodable(
                    &WireError::NoObject("an echo among the initial events".into()),
                )))),
                State::Empty,
            ),
            Some(Ok(Decoded::Bookmark {
                resource_version,
                ends_initial_events,
            })) => {
                if ends_initial_events {
                    // The same stream goes on with changes, echoes of our writes among them.
                    events.recognise = context.recognise.clone();
                    (
                        Some(Ok(Item::Event(Event::InitDone))),
                        State::Watching {
                            resource_version,
                            events,
                        },
                    )
                } else {
                    (None, State::InitialWatch { events })
                }
            }
            Some(Ok(Decoded::Error(status))) => {
                let next = if status.code == 410 {
                    State::Empty
                } else {
                    State::InitialWatch { events }
                };
                (
                    Some(Err(watcher::Error::WatchError(Box::new(status)))),
                    next,
                )
            }
            Some(Err(error)) => (
                Some(Err(watcher::Error::WatchFailed(error))),
                State::InitialWatch { events },
            ),
            None => (None, State::Empty),
        },
        State::InitListed { resource_version } => {
            match open_watch::<K>(context, watch_params(config, false), &resource_version).await {
                Ok(mut events) => {
                    events.recognise = context.recognise.clone();
                    // Resumed where the consumer is: every change since comes on this watch.
                    context.progress.advance_to(&resource_version);
                    (
                        None,
                        State::Watching {
                            resource_version,
                            events,
                        },
                    )
                }
                Err(error) => (
                    Some(Err(watcher::Error::WatchStartFailed(error))),
                    State::InitListed { resource_version },
                ),
            }
        }
        State::Watching {
            resource_version,
            mut events,
        } => match events.next::<K>().await {
            Some(Ok(Decoded::Object(kind, object))) => {
                let seen = object.meta().resource_version.clone().unwrap_or_default();
                if seen.is_empty() {
                    return (Some(Err(watcher::Error::NoResourceVersion)), State::Empty);
                }
                let event = if kind == "DELETED" {
                    Event::Delete(object)
                } else {
                    Event::Apply(object)
                };
                let state = State::Watching {
                    resource_version: seen,
                    events,
                };
                (Some(Ok(Item::Event(event))), state)
            }
            // `WatchBody::next` decodes an event in flight once it has waited enough.
            Some(Ok(Decoded::InFlight(_))) => (
                Some(Err(watcher::Error::WatchFailed(undecodable(
                    &WireError::NoObject("an event left undecoded".into()),
                )))),
                State::Watching {
                    resource_version,
                    events,
                },
            ),
            Some(Ok(Decoded::Echo(echo, seen, decoded))) => {
                let item = Item::Echo(echo, seen.clone(), decoded);
                let state = State::Watching {
                    resource_version: seen,
                    events,
                };
                (Some(Ok(item)), state)
            }
            Some(Ok(Decoded::Bookmark {
                resource_version, ..
            })) => {
                // Every event before the bookmark was handled before this poll.
                context.progress.advance_to(&resource_version);
                (
                    None,
                    State::Watching {
                        resource_version,
                        events,
                    },
                )
            }
            Some(Ok(Decoded::Error(status))) => {
                let next = if status.code == 410 {
                    State::Empty
                } else {
                    State::Watching {
                        resource_version,
                        events,
                    }
                };
                (
                    Some(Err(watcher::Error::WatchError(Box::new(status)))),
                    next,
                )
            }
            Some(Err(error)) => (
                Some(Err(watcher::Error::WatchFailed(error))),
                State::Watching {
                    resource_version,
                    events,
                },
            ),
            None => {
                // The watch ended: the server on the other end may be another one when it
                // reopens.
                context.progress.forget();
                (None, State::InitListed { resource_version })
            }
        },
    }
}

/// The first step of a list: a plain list, or a streaming list's watch.
async fn start_list<K: Watched>(context: &Context) -> (Option<Result<Item<K>>>, State<K>) {
    match context.config.initial_list_strategy {
        InitialListStrategy::ListWatch => (
            Some(Ok(Item::Event(Event::Init))),
            State::InitPage {
                continue_token: None,
                objects: VecDeque::new(),
                resource_version: None,
            },
        ),
        InitialListStrategy::StreamingList => {
            match open_watch::<K>(context, watch_params(&context.config, true), "0").await {
                Ok(events) => (
                    Some(Ok(Item::Event(Event::Init))),
                    State::InitialWatch { events },
                ),
                Err(error) => (
                    Some(Err(watcher::Error::WatchStartFailed(error))),
                    State::Empty,
                ),
            }
        }
    }
}

/// The watch request's parameters: kube's, with `sendInitialEvents` on the first watch of a
/// streaming list.
fn watch_params(config: &watcher::Config, initial: bool) -> WatchParams {
    WatchParams {
        label_selector: config.label_selector.clone(),
        field_selector: config.field_selector.clone(),
        timeout: config.timeout,
        bookmarks: config.bookmarks,
        send_initial_events: initial
            && config.initial_list_strategy == InitialListStrategy::StreamingList,
    }
}

/// One page of the list.
async fn list_page<K: Watched>(
    context: &Context,
    continue_token: Option<String>,
) -> Result<(list::ListMeta, Vec<K>), kube::Error> {
    let config = &context.config;
    let any = config.list_semantic == ListSemantic::Any;
    let params = ListParams {
        label_selector: config.label_selector.clone(),
        field_selector: config.field_selector.clone(),
        resource_version: any.then(|| "0".to_owned()),
        version_match: any.then_some(VersionMatch::NotOlderThan),
        limit: config.page_size,
        continue_token,
        ..ListParams::default()
    };
    let request = Request::new(K::url_path(&(), None))
        .list(&params)
        .map_err(kube::Error::BuildRequest)?;
    let response = send(context, "list", request).await?;
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| read_failed(&e))?
        .to_bytes();
    context.count(body.len());
    match context.encoding {
        Encoding::Protobuf => {
            let mut objects = Vec::new();
            let meta = envelope::open(body)
                .and_then(|l| list::decode::<K>(l, |o| objects.push(o)))
                .map_err(|e| undecodable(&e))?;
            Ok((meta, objects))
        }
        Encoding::Json => {
            let list: ObjectList<K> =
                serde_json::from_slice(&body).map_err(kube::Error::SerdeError)?;
            let meta = list::ListMeta {
                resource_version: list.metadata.resource_version.unwrap_or_default(),
                continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
            };
            Ok((meta, list.items))
        }
    }
}

/// Opens a watch from `resource_version`.
async fn open_watch<K: Watched>(
    context: &Context,
    params: WatchParams,
    resource_version: &str,
) -> Result<WatchBody, kube::Error> {
    let mut request = Request::new(K::url_path(&(), None))
        .watch(&params, resource_version)
        .map_err(kube::Error::BuildRequest)?;
    request
        .headers_mut()
        .insert(ACCEPT_ENCODING, http::HeaderValue::from_static("identity"));
    let response = send(context, "watch", request).await?;
    let idle = Duration::from_secs(u64::from(context.config.timeout.unwrap_or(290))) + IDLE_MARGIN;
    Ok(WatchBody {
        body: response.into_body(),
        encoding: context.encoding,
        frames: Frames::default(),
        lines: Vec::new(),
        idle: IdleTimer::new(idle),
        received: context.received.clone(),
        recognise: None,
    })
}

/// How long past the watch's own timeout a silent stream is given before it is dropped.
const IDLE_MARGIN: Duration = Duration::from_secs(5);

/// Sends `request` in the context's encoding (see [`exchange::send`]); an answer in JSON to a
/// request for protobuf is a 406 (the server will not speak protobuf).
async fn send(
    context: &Context,
    verb: &'static str,
    request: http::Request<Vec<u8>>,
) -> Result<http::Response<Body>, kube::Error> {
    let answer = exchange::send(&context.client, verb, context.encoding, request).await?;
    if !answer.protobuf && context.encoding == Encoding::Protobuf {
        let status = Status::failure(
            &format!("the API server answered in another encoding than {PROTOBUF}; using {JSON}"),
            "NotAcceptable",
        )
        .with_code(406);
        return Err(kube::Error::Api(Box::new(status)));
    }
    Ok(answer.response)
}

fn read_failed(error: &kube::Error) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::other(error.to_string()))
}

fn undecodable(error: &WireError) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        error.to_string(),
    ))
}

/// A watch event, decoded.
#[expect(
    clippy::large_enum_variant,
    reason = "one event at a time, its object moved straight out"
)]
enum Decoded<K> {
    /// ADDED, MODIFIED or DELETED, and its object.
    Object(String, K),
    /// A BOOKMARK.
    Bookmark {
        resource_version: String,
        ends_initial_events: bool,
    },
    /// An ERROR.
    Error(Status),
    /// An ADDED or MODIFIED event recognised as our echo, and its resourceVersion (and, with
    /// debug assertions, its object decoded all the same).
    Echo(Echo, String, Option<K>),
    /// An event for an object whose write is on its way: its frame, to recognise again.
    InFlight(Bytes),
}

/// An open watch's response body.
struct WatchBody {
    body: Body,
    encoding: Encoding,
    /// Protobuf's length-prefixed frames.
    frames: Frames,
    /// JSON's lines: the bytes of the line not yet ended.
    lines: Vec<u8>,
    idle: IdleTimer,
    received: Option<prometheus::IntCounter>,
    /// Recognises echoes of our writes (watches after the first list, in protobuf).
    recognise: Option<Recognise>,
}

/// When a silent stream is given up: `limit` after its last frame.
///
/// A timeout around each read would take a timer off the runtime's wheel and put a new one
/// on for every frame, thousands a second under churn. This timer is armed once; a frame
/// only notes the time, and when the timer fires early (frames came since it was armed) it
/// is armed again for the limit past the last frame.
struct IdleTimer {
    limit: Duration,
    last_frame: tokio::time::Instant,
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl IdleTimer {
    fn new(limit: Duration) -> Self {
        let now = tokio::time::Instant::now();
        Self {
            limit,
            last_frame: now,
            timer: Box::pin(tokio::time::sleep_until(now + limit)),
        }
    }

    /// A frame came.
    fn frame(&mut self) {
        self.last_frame = tokio::time::Instant::now();
    }

    /// Ends once the stream has been silent for the limit.
    async fn silent(&mut self) {
        loop {
            self.timer.as_mut().await;
            let due = self.last_frame + self.limit;
            if tokio::time::Instant::now() >= due {
                return;
            }
            self.timer.as_mut().reset(due);
        }
    }
}

impl WatchBody {
    /// The next event; `None` when the stream ended (the server's timeout, a closed
    /// connection, or silence past the idle limit): the watch is then opened again.
    async fn next<K: Watched>(&mut self) -> Option<Result<Decoded<K>, kube::Error>> {
        loop {
            if let Some(mut event) = self.next_buffered::<K>() {
                let recognise = self.recognise.as_deref();
                for patience in (0..IN_FLIGHT_YIELDS).rev() {
                    let Ok(Decoded::InFlight(frame)) = event else {
                        break;
                    };
                    tokio::task::yield_now().await;
                    event =
                        decode_event(frame, recognise, patience > 0).map_err(|e| undecodable(&e));
                }
                return Some(event);
            }
            let read = tokio::select! {
                biased;
                read = self.body.frame() => Ok(read),
                () = self.idle.silent() => Err(()),
            };
            let frame = match read {
                Ok(Some(Ok(frame))) => frame,
                Ok(Some(Err(error))) => {
                    // As kube's watcher: a stream cut short (EOF) ends, to be resumed from
                    // the last resourceVersion; any other read error is reported.
                    if cut_short(&error) {
                        debug!(%error, "watch stream cut short");
                        return None;
                    }
                    return Some(Err(kube::Error::ReadEvents(std::io::Error::other(error))));
                }
                Ok(None) => return None,
                Err(()) => {
                    debug!(idle = ?self.idle.limit, "watch stream silent past its timeout; reconnecting");
                    return None;
                }
            };
            self.idle.frame();
            if let Ok(data) = frame.into_data() {
                if let Some(received) = &self.received {
                    received.inc_by(data.len() as u64);
                }
                match self.encoding {
                    Encoding::Protobuf => self.frames.push(&data),
                    Encoding::Json => self.lines.extend_from_slice(&data),
                }
            }
        }
    }

    /// The next event already received whole, if any.
    fn next_buffered<K: Watched>(&mut self) -> Option<Result<Decoded<K>, kube::Error>> {
        match self.encoding {
            Encoding::Protobuf => match self.frames.next_frame() {
                Ok(Some(frame)) => Some(
                    decode_event(frame, self.recognise.as_deref(), true)
                        .map_err(|e| undecodable(&e)),
                ),
                Ok(None) => None,
                Err(error) => Some(Err(undecodable(&error))),
            },
            Encoding::Json => loop {
                let end = self.lines.iter().position(|b| *b == b'\n')?;
                let line: Vec<u8> = self.lines.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(decode_json_event(&line));
            },
        }
    }
}

/// One JSON watch line, as kube reads it: an event, or else a bare Status (an error).
fn decode_json_event<K: Watched>(line: &[u8]) -> Result<Decoded<K>, kube::Error> {
    match serde_json::from_slice::<WatchEvent<K>>(line) {
        Ok(WatchEvent::Added(object)) => Ok(Decoded::Object("ADDED".into(), object)),
        Ok(WatchEvent::Modified(object)) => Ok(Decoded::Object("MODIFIED".into(), object)),
        Ok(WatchEvent::Deleted(object)) => Ok(Decoded::Object("DELETED".into(), object)),
        Ok(WatchEvent::Bookmark(bookmark)) => Ok(Decoded::Bookmark {
            ends_initial_events: bookmark
                .metadata
                .annotations
                .contains_key(INITIAL_EVENTS_END),
            resource_version: bookmark.metadata.resource_version,
        }),
        Ok(WatchEvent::Error(status)) => Ok(Decoded::Error(*status)),
        Err(error) => match serde_json::from_slice::<Status>(line) {
            Ok(status) => Err(kube::Error::Api(Box::new(status))),
            Err(_) => Err(kube::Error::SerdeError(error)),
        },
    }
}

/// Whether a body read error is the connection ending mid-stream: an `UnexpectedEof`
/// somewhere in its chain, or hyper's "unexpected EOF during chunk", as kube classifies it.
fn cut_short(error: &kube::Error) -> bool {
    if error.to_string().contains("unexpected EOF during chunk") {
        return true;
    }
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    for _ in 0..16 {
        let Some(e) = current else { return false };
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            || e.to_string().contains("unexpected EOF during chunk")
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// Decodes one protobuf frame, unless `recognise` takes it for an echo of our write. An
/// event for an object whose write is on its way comes back as [`Decoded::InFlight`] when
/// `wait` says the caller may wait for the answer; otherwise it is decoded.
fn decode_event<K: Watched>(
    frame: Bytes,
    recognise: Option<&Recogniser>,
    wait: bool,
) -> Result<Decoded<K>, WireError> {
    let whole = frame.clone();
    let event = envelope::event(frame)?;
    if let (Some(recognise), "ADDED" | "MODIFIED") = (recognise, event.kind.as_str()) {
        if let Some(identity) = super::identity::read(&event.object.raw) {
            let echo = match recognise(identity.namespace, identity.name, identity.resource_version)
            {
                Recognition::Echo(echo) => Some(echo),
                Recognition::InFlight if wait => return Ok(Decoded::InFlight(whole)),
                Recognition::InFlight | Recognition::Unknown => None,
            };
            if let Some(echo) = echo {
                let version = identity.resource_version.to_owned();
                let decoded = if cfg!(debug_assertions) {
                    Some(K::from_enveloped(event.object)?)
                } else {
                    None
                };
                return Ok(Decoded::Echo(echo, version, decoded));
            }
        }
    }
    match event.kind.as_str() {
        "ERROR" => {
            let raw = event.object.expect_kind("Status")?;
            Ok(Decoded::Error(status::from_raw(raw)?))
        }
        "BOOKMARK" => {
            let meta = ObjectMeta::from(
                MetadataOnly::decode(event.object.raw)?
                    .metadata
                    .unwrap_or_default(),
            );
            Ok(Decoded::Bookmark {
                resource_version: meta.resource_version.unwrap_or_default(),
                ends_initial_events: meta
                    .annotations
                    .is_some_and(|a| a.contains_key(INITIAL_EVENTS_END)),
            })
        }
        _ => Ok(Decoded::Object(
            event.kind,
            K::from_enveloped(event.object)?,
        )),
    }
}
