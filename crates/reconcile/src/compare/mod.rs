//! When two sets of Endpoints, EndpointSlices and Events count as the same.
//!
//! Our controllers are checked against four kinds of answers: upstream kube-controller-manager's
//! recordings (the conformance corpus), a cluster that has lived through changes (`audit`,
//! `explain`), a plan run after faults and restarts (the fault verdict), and, in the
//! controller's own tests, the same controllers run from scratch. None of them can be compared
//! byte for byte: generated names, uids, resourceVersions and timestamps differ by
//! construction, and upstream writes some of its choices in Go map order. Each [`Rules`]
//! variant says exactly what is kept, and every caller takes its comparison from here, so a
//! rule is written (and loosened, or not) in one place. The corpus rules are those of
//! `shared/conformance/README.md`.
//!
//! Both sides are reduced to *facts* (one per Service or object and part of it: its labels,
//! its slices' sizes, the endpoints of one port list, …), and the facts the two sides disagree
//! on become [`Difference`]s, each naming its two sides with the [`Sides`] the caller chose.

mod difference;
mod facts;

#[cfg(test)]
mod tests;

pub use difference::{Difference, Gap};

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// Which comparison rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// A corpus case settled once on its input: slices of a Service, address type and port
    /// list by their sorted sizes and the sorted union of their endpoints (hints apart), plus
    /// each slice's labels, annotations and ownerReferences; hints by the values used and how
    /// many endpoints carry each; Endpoints exactly, apart from the order of their subsets
    /// (a truncated one by its subsets' counts); Events by their (type, reason) per object.
    Static,
    /// A corpus case with steps, or a cluster that has been through changes: as
    /// [`Rules::Static`], but a port list's slices by their total number of endpoints (after
    /// removals, how they are split follows which slice each endpoint first landed in).
    Dynamic,
    /// A cluster whose API server restarted with lost state (the objects of now or of a
    /// backup, under new uids): its slices came back from there, so how the endpoints are
    /// split among them is history (upstream does not merge two slices that each keep an
    /// endpoint). As [`Rules::Static`], but slices by the endpoints they hold (a duplicate
    /// still shows), the number of empty slices (a left-over placeholder shows) and their
    /// distinct metadata.
    Restored,
    /// The live controllers against the same controllers run from scratch on the same
    /// objects: nothing is left out and nothing follows map order, so everything counts but
    /// names, uids (also in ownerReferences and targetRefs), resourceVersions, generations,
    /// timestamps, the trigger-time annotation, hints and the order of endpoints within a
    /// slice. Each slice is compared whole (which endpoints share a slice counts), the
    /// Endpoints object with its subsets and addresses in order. Events are not compared.
    Planned,
}

/// What each side of a comparison is called in its differences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sides {
    /// The first side, the one being checked.
    pub ours: &'static str,
    /// The second side, the one it is checked against.
    pub theirs: &'static str,
}

impl Sides {
    /// Our controllers against upstream's recording.
    pub const UPSTREAM: Sides = Sides {
        ours: "ours",
        theirs: "upstream",
    };
    /// The live controllers against the same controllers run from scratch.
    pub const PLAN: Sides = Sides {
        ours: "live",
        theirs: "plan",
    };
}

/// One side's objects, borrowed.
#[derive(Debug, Clone, Default)]
pub struct Objects<'a> {
    /// Endpoints objects.
    pub endpoints: Vec<&'a Endpoints>,
    /// EndpointSlices.
    pub slices: Vec<&'a EndpointSlice>,
    /// Events, as far as the comparison reads them.
    pub events: Vec<&'a Event>,
}

impl<'a> Objects<'a> {
    /// Endpoints and EndpointSlices, without Events.
    pub fn new(
        endpoints: impl IntoIterator<Item = &'a Endpoints>,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
    ) -> Self {
        Self {
            endpoints: endpoints.into_iter().collect(),
            slices: slices.into_iter().collect(),
            events: Vec::new(),
        }
    }

    /// EndpointSlices only.
    pub fn of_slices(slices: impl IntoIterator<Item = &'a EndpointSlice>) -> Self {
        Self::new([], slices)
    }

    /// Endpoints objects only.
    pub fn of_endpoints(endpoints: impl IntoIterator<Item = &'a Endpoints>) -> Self {
        Self::new(endpoints, [])
    }

    /// The same objects with these Events.
    pub fn with_events(self, events: impl IntoIterator<Item = &'a Event>) -> Self {
        Self {
            events: events.into_iter().collect(),
            ..self
        }
    }
}

/// An Event, as far as the comparison reads it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Event {
    /// The involved object's namespace.
    pub namespace: String,
    /// The involved object's name.
    pub name: String,
    /// Normal or Warning.
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

impl Event {
    /// Upstream's Warnings for a write that lost a race with its own informer: it synced the
    /// Service again before its cache had seen its last write. The corpus leaves them out of
    /// the comparison; a controller that never loses that race is better, not different.
    pub fn lost_a_race(&self) -> bool {
        self.type_ == "Warning"
            && match self.reason.as_str() {
                "FailedToCreateEndpoint" => self.message.contains("already exists"),
                "FailedToUpdateEndpoint" | "FailedToUpdateEndpointSlices" => {
                    self.message.contains("the object has been modified")
                }
                _ => false,
            }
    }
}

impl From<&k8s_openapi::api::core::v1::Event> for Event {
    fn from(e: &k8s_openapi::api::core::v1::Event) -> Self {
        let o = &e.involved_object;
        Self {
            namespace: o.namespace.clone().unwrap_or_default(),
            name: o.name.clone().unwrap_or_default(),
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
        }
    }
}

/// What `ours` and `theirs` disagree on under `rules`, by Service (or object) and part,
/// each difference naming its sides as `sides` says. Empty when they count as the same.
pub fn differences(
    ours: &Objects<'_>,
    theirs: &Objects<'_>,
    rules: Rules,
    sides: Sides,
) -> Vec<Difference> {
    difference::between(&facts::of(ours, rules), &facts::of(theirs, rules), sides)
}
