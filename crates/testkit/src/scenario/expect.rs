//! What scenario steps commonly expect: of slices, of Endpoints, of Events, and of what a
//! run holds in memory.

use k8s_openapi::api::core::v1::{Endpoints, Event};
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::Run;
use crate::inspect::{addresses, conditions, endpoint_of, pod_names, pretty, strings};

// ---- waits on what the server holds and what a run holds ----

/// Until the controllers' metric `name`, summed over its series with `labels`, satisfies
/// `holds`.
pub fn metric_holds(
    name: &'static str,
    labels: &'static [(&'static str, &'static str)],
    holds: impl Fn(f64) -> bool + Send + Sync + 'static,
) -> impl Fn(&Run) -> Result<(), String> + Send + Sync + 'static {
    move |run| {
        let value = run.controllers().metric(name, labels);
        holds(value)
            .then_some(())
            .ok_or(format!("{name} is {value}"))
    }
}

/// Until the server has served at least `count` requests of `verb` on `resource`.
pub fn served(
    verb: &'static str,
    resource: &'static str,
    count: u64,
) -> impl Fn(&Run) -> Result<(), String> + Send + Sync + 'static {
    move |run| {
        let n = run.cluster.requests(verb, resource);
        (n >= count)
            .then_some(())
            .ok_or(format!("{n} {verb} {resource}"))
    }
}

/// Slices whose endpoints point at exactly these pods (sorted by name).
pub fn pods_are(names: &[&str]) -> impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static {
    let names = strings(names);
    move |slices| pod_names(slices) == names
}

/// Slices holding a ready endpoint for `pod`.
pub fn endpoint_ready(pod: &str) -> impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static {
    endpoint_ready_is(pod, Some(true))
}

/// Slices holding a not-ready endpoint for `pod`.
pub fn endpoint_not_ready(pod: &str) -> impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static {
    endpoint_ready_is(pod, Some(false))
}

fn endpoint_ready_is(
    pod: &str,
    ready: Option<bool>,
) -> impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static {
    let pod = pod.to_owned();
    move |slices| endpoint_of(slices, &pod).is_some_and(|e| conditions(&e).0 == ready)
}

/// Slices holding an endpoint for `pod` with these (ready, serving, terminating)
/// conditions, as [`conditions`] reads them.
pub fn endpoint_conditions_are(
    pod: &str,
    want: (Option<bool>, Option<bool>, Option<bool>),
) -> impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static {
    let pod = pod.to_owned();
    move |slices| endpoint_of(slices, &pod).is_some_and(|e| conditions(&e) == want)
}

/// An Endpoints object (or none, when both lists are empty) with exactly these ready and
/// not-ready IPs, each sorted.
pub fn addresses_are(
    ready: &[&str],
    not_ready: &[&str],
) -> impl Fn(Option<&Endpoints>) -> bool + Send + Sync + 'static {
    let want = (strings(ready), strings(not_ready));
    move |endpoints| addresses(endpoints) == want
}

/// No Endpoints object.
pub fn absent(endpoints: Option<&Endpoints>) -> bool {
    endpoints.is_none()
}

// ---- Events ----

/// An Event a scenario waits for, by its reason and the object it is about, and what it must
/// say: its type, and what a test states with [`EventLike::by`], [`EventLike::about`] and
/// [`EventLike::message`].
#[derive(Debug)]
pub struct EventLike {
    pub(super) involved: String,
    pub(super) reason: String,
    type_: &'static str,
    component: Option<String>,
    kind: Option<String>,
    message: Vec<Message>,
}

/// What an Event's message must be.
#[derive(Debug)]
pub enum Message {
    /// Exactly this.
    Is(String),
    /// Anything that starts with this.
    StartsWith(&'static str),
    /// Anything that ends with this.
    EndsWith(&'static str),
}

impl Message {
    fn holds(&self, message: &str) -> bool {
        match self {
            Message::Is(want) => message == want,
            Message::StartsWith(start) => message.starts_with(start),
            Message::EndsWith(end) => message.ends_with(end),
        }
    }
}

/// A Warning Event with `reason` about the object named `involved`.
pub fn warning(involved: &str, reason: &str) -> EventLike {
    event_like("Warning", involved, reason)
}

/// A Normal Event with `reason` about the object named `involved`.
pub fn normal(involved: &str, reason: &str) -> EventLike {
    event_like("Normal", involved, reason)
}

fn event_like(type_: &'static str, involved: &str, reason: &str) -> EventLike {
    EventLike {
        involved: involved.into(),
        reason: reason.into(),
        type_,
        component: None,
        kind: None,
        message: Vec::new(),
    }
}

impl EventLike {
    /// Reported by `component`.
    pub fn by(mut self, component: &str) -> Self {
        self.component = Some(component.into());
        self
    }

    /// About an object of `kind`.
    pub fn about(mut self, kind: &str) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// With a message that is as `message` says (each call adds a condition).
    pub fn message(mut self, message: Message) -> Self {
        self.message.push(message);
        self
    }

    /// `Ok` when `event` says all this states, else what it says instead.
    pub(super) fn check(&self, event: &Event) -> Result<(), String> {
        let message = event.message.as_deref().unwrap_or_default();
        let stated = |want: &Option<String>, found: &str| want.as_ref().is_none_or(|w| w == found);
        let holds = event.type_.as_deref() == Some(self.type_)
            && stated(&self.component, source_component(event))
            && stated(
                &self.kind,
                event.involved_object.kind.as_deref().unwrap_or_default(),
            )
            && self.message.iter().all(|m| m.holds(message));
        holds
            .then_some(())
            .ok_or_else(|| format!("expected {self:?}, found {}", pretty(event)))
    }
}

/// The component that reported `event`, empty when it says none.
fn source_component(event: &Event) -> &str {
    event
        .source
        .as_ref()
        .and_then(|s| s.component.as_deref())
        .unwrap_or_default()
}
