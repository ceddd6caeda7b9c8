//! One side reduced to what its [`Rules`] keep: a map from (object, part) to a typed fact.
//!
//! Lists whose order does not count are sorted by their JSON text, so two sides holding the
//! same elements hold equal lists; the text is also how an element is shown in a difference.

use super::{Objects, Rules};
use crate::endpoints::OVER_CAPACITY;
use crate::labels::{
    MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY,
};
use crate::trigger_time::ANNOTATION as TRIGGER_TIME;
use k8s_openapi::api::core::v1::{EndpointPort, EndpointSubset, ObjectReference};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointHints, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Which fact: the object it is about and which part of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    /// `namespace/name` of the Service (slices, hints), Endpoints or involved object (events).
    pub subject: String,
    /// The part: `Endpoints labels`, `EndpointSlices IPv4 ports=[…] sizes`, `events`, …
    pub what: String,
}

/// The facts of one side.
pub(super) type Facts = BTreeMap<Key, Fact>;

/// One fact.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Fact {
    /// A value compared whole.
    One(Box<Item>),
    /// A list, compared element by element (sorted first when its order does not count).
    List(Vec<Item>),
    /// The subsets of a truncated Endpoints object: which subset keeps how many of the
    /// truncated addresses follows a uid-dependent order, so two of these are the same when
    /// their totals are, and each subset's counts are within one.
    Truncated(Vec<Share>),
}

impl Fact {
    fn one(item: Item) -> Self {
        Fact::One(Box::new(item))
    }
}

/// A value within a fact. Serialised, it is the JSON text a difference shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum Item {
    /// A number of slices or endpoints.
    Count(usize),
    /// Labels or annotations (`None` only where absent and empty differ).
    Map(Option<BTreeMap<String, String>>),
    /// An Endpoints subset.
    Subset(EndpointSubset),
    /// A slice's endpoint.
    Endpoint(Endpoint),
    /// The metadata of a slice that counts.
    Meta(SliceMeta),
    /// A hint value.
    Hints(EndpointHints),
    /// `type reason` of an event.
    Event(String),
    /// A whole slice.
    Slice(EndpointSlice),
    /// A truncated subset's counts.
    Share(Share),
}

/// How many addresses a subset of a truncated Endpoints object keeps, by its ports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Share {
    pub ports: Option<Vec<EndpointPort>>,
    pub ready: usize,
    pub not_ready: usize,
}

/// What counts of a slice's metadata under the corpus rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SliceMeta {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    owner_references: Vec<Owner>,
}

/// An ownerReference without its uid.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Owner {
    api_version: String,
    kind: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    controller: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block_owner_deletion: Option<bool>,
}

impl Item {
    /// The JSON text of the value: how it is sorted and shown.
    pub(super) fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("<{e}>"))
    }
}

/// Sorted by JSON text, for lists whose order does not count.
fn sorted(mut items: Vec<Item>) -> Vec<Item> {
    items.sort_by_cached_key(Item::text);
    items
}

/// The facts `rules` keep of `objects`.
pub(super) fn of(objects: &Objects<'_>, rules: Rules) -> Facts {
    match rules {
        Rules::Planned => planned(objects),
        Rules::Static | Rules::Dynamic | Rules::Restored => corpus(objects, rules),
    }
}

fn key(subject: &str, what: impl Into<String>) -> Key {
    Key {
        subject: subject.to_owned(),
        what: what.into(),
    }
}

fn subject(meta: &ObjectMeta, name: Option<&str>) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        name.unwrap_or_default()
    )
}

/// `default/kubernetes` is the API server's own and not part of the corpus.
fn is_excluded(subject: &str) -> bool {
    subject == "default/kubernetes"
}

/// Annotations without the trigger time: whether upstream's last write carried it depends on
/// how often it synced the Service, and a run from scratch cannot know when the change behind
/// a live write happened.
fn annotations(meta: &ObjectMeta) -> BTreeMap<String, String> {
    let mut annotations = meta.annotations.clone().unwrap_or_default();
    annotations.remove(TRIGGER_TIME);
    annotations
}

/// The other side's server assigned other uids and resourceVersions to the pods.
fn without_uid(target: &mut Option<ObjectReference>) {
    if let Some(target) = target {
        target.uid = None;
        target.resource_version = None;
    }
}

fn subset_addresses_without_uids(subset: &mut EndpointSubset) {
    for address in subset
        .addresses
        .iter_mut()
        .flatten()
        .chain(subset.not_ready_addresses.iter_mut().flatten())
    {
        without_uid(&mut address.target_ref);
    }
}

/// The corpus rules (`shared/conformance/README.md`).
fn corpus(objects: &Objects<'_>, rules: Rules) -> Facts {
    let mut facts = Facts::new();
    for endpoints in &objects.endpoints {
        let meta = &endpoints.metadata;
        let subject = subject(meta, meta.name.as_deref());
        if is_excluded(&subject) {
            continue;
        }
        facts.insert(
            key(&subject, "Endpoints labels"),
            Fact::one(Item::Map(Some(meta.labels.clone().unwrap_or_default()))),
        );
        let annotations = annotations(meta);
        let truncated = annotations.contains_key(OVER_CAPACITY);
        facts.insert(
            key(&subject, "Endpoints annotations"),
            Fact::one(Item::Map(Some(annotations))),
        );
        let subsets = endpoints.subsets.iter().flatten();
        if truncated {
            let mut shares: Vec<Share> = subsets
                .map(|s| Share {
                    ports: s.ports.clone(),
                    ready: s.addresses.as_ref().map_or(0, Vec::len),
                    not_ready: s.not_ready_addresses.as_ref().map_or(0, Vec::len),
                })
                .collect();
            shares.sort_by_cached_key(|s| Item::Share(s.clone()).text());
            facts.insert(
                key(&subject, "Endpoints truncated subsets"),
                Fact::Truncated(shares),
            );
        } else {
            // Addresses keep their order (upstream sorts them by IP); subsets do not (upstream
            // sorts them by a hash that includes pod uids). Absent lists are empty ones.
            let subsets = subsets
                .map(|s| {
                    let mut subset = EndpointSubset {
                        addresses: Some(s.addresses.clone().unwrap_or_default()),
                        not_ready_addresses: Some(
                            s.not_ready_addresses.clone().unwrap_or_default(),
                        ),
                        ports: Some(s.ports.clone().unwrap_or_default()),
                    };
                    subset_addresses_without_uids(&mut subset);
                    Item::Subset(subset)
                })
                .collect();
            facts.insert(
                key(&subject, "Endpoints subsets"),
                Fact::List(sorted(subsets)),
            );
        }
    }

    // Slices by Service, controller, address type and port list.
    let mut groups: BTreeMap<(String, String), Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in &objects.slices {
        let meta = &slice.metadata;
        let label = |k: &str| {
            meta.labels
                .as_ref()
                .and_then(|l| l.get(k))
                .map(String::as_str)
        };
        // Mirrored slices follow the same rules, grouped apart from the controller's own;
        // slices of other controllers are not part of the comparison.
        let owner = match label(SLICE_MANAGED_BY) {
            Some(SLICE_CONTROLLER_NAME) => "EndpointSlices",
            Some(MIRRORING_CONTROLLER_NAME) => "mirrored EndpointSlices",
            _ => continue,
        };
        let subject = subject(meta, label(SERVICE_NAME));
        if is_excluded(&subject) {
            continue;
        }
        let ports = slice.ports.as_deref().unwrap_or_default();
        let ports = serde_json::to_string(ports).unwrap_or_default();
        let what = format!("{owner} {} ports={ports}", slice.address_type);
        groups.entry((subject, what)).or_default().push(slice);
    }
    // Hint values and how many endpoints carry each, by Service, controller and address type.
    let mut hints: BTreeMap<Key, Vec<(EndpointHints, usize)>> = BTreeMap::new();
    for ((subject, what), slices) in groups {
        let mut sizes: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
        sizes.sort();
        let (part, fact) = match rules {
            Rules::Dynamic => (
                "total endpoints",
                Fact::one(Item::Count(sizes.iter().sum())),
            ),
            Rules::Restored => (
                "empty slices",
                Fact::one(Item::Count(sizes.iter().filter(|n| **n == 0).count())),
            ),
            Rules::Static | Rules::Planned => (
                "sizes",
                Fact::List(sizes.into_iter().map(Item::Count).collect()),
            ),
        };
        facts.insert(key(&subject, format!("{what} {part}")), fact);

        let hint_key = key(&subject, what.split(" ports=").next().unwrap_or(&what));
        let mut endpoints = Vec::new();
        let mut metas = Vec::new();
        for slice in slices {
            for endpoint in &slice.endpoints {
                let mut endpoint = endpoint.clone();
                // Which endpoints get a foreign zone's hint follows map order: hints are
                // compared per Service and address type, by value and count.
                if let Some(h) = endpoint.hints.take() {
                    let counts = hints.entry(hint_key.clone()).or_default();
                    match counts.iter_mut().find(|(v, _)| *v == h) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((h, 1)),
                    }
                }
                without_uid(&mut endpoint.target_ref);
                endpoints.push(Item::Endpoint(endpoint));
            }
            let meta = &slice.metadata;
            metas.push(Item::Meta(SliceMeta {
                labels: meta.labels.clone().unwrap_or_default(),
                annotations: annotations(meta),
                owner_references: meta
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|o| Owner {
                        api_version: o.api_version.clone(),
                        kind: o.kind.clone(),
                        name: o.name.clone(),
                        controller: o.controller,
                        block_owner_deletion: o.block_owner_deletion,
                    })
                    .collect(),
            }));
        }
        let mut metas = sorted(metas);
        if rules == Rules::Restored {
            metas.dedup();
        }
        facts.insert(
            key(&subject, format!("{what} endpoints")),
            Fact::List(sorted(endpoints)),
        );
        facts.insert(key(&subject, format!("{what} metadata")), Fact::List(metas));
    }
    for (Key { subject, what }, counts) in hints {
        let values = sorted(counts.iter().map(|(h, _)| Item::Hints(h.clone())).collect());
        let mut n: Vec<usize> = counts.iter().map(|(_, n)| *n).collect();
        n.sort();
        facts.insert(
            key(&subject, format!("{what} hint values")),
            Fact::List(values),
        );
        facts.insert(
            key(&subject, format!("{what} hint counts")),
            Fact::List(n.into_iter().map(Item::Count).collect()),
        );
    }

    let mut events: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &objects.events {
        let subject = format!("{}/{}", e.namespace, e.name);
        if !is_excluded(&subject) && !e.lost_a_race() {
            events
                .entry(subject)
                .or_default()
                .insert(format!("{} {}", e.type_, e.reason));
        }
    }
    for (subject, set) in events {
        facts.insert(
            key(&subject, "events"),
            Fact::List(set.into_iter().map(Item::Event).collect()),
        );
    }
    facts
}

/// The live controllers against a run from scratch ([`Rules::Planned`]).
fn planned(objects: &Objects<'_>) -> Facts {
    let mut facts = Facts::new();
    for endpoints in &objects.endpoints {
        let meta = &endpoints.metadata;
        let subject = subject(meta, meta.name.as_deref());
        facts.insert(
            key(&subject, "Endpoints labels"),
            Fact::one(Item::Map(meta.labels.clone())),
        );
        let annotations = Some(annotations(meta)).filter(|a| !a.is_empty());
        facts.insert(
            key(&subject, "Endpoints annotations"),
            Fact::one(Item::Map(annotations)),
        );
        let subsets = endpoints
            .subsets
            .iter()
            .flatten()
            .map(|s| {
                let mut subset = s.clone();
                subset_addresses_without_uids(&mut subset);
                Item::Subset(subset)
            })
            .collect();
        facts.insert(key(&subject, "Endpoints subsets"), Fact::List(subsets));
    }
    let mut slices: BTreeMap<String, Vec<Item>> = BTreeMap::new();
    for slice in &objects.slices {
        let meta = &slice.metadata;
        let service = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME))
            .map(String::as_str);
        let mut slice = EndpointSlice {
            metadata: ObjectMeta {
                namespace: meta.namespace.clone(),
                labels: meta.labels.clone(),
                annotations: Some(annotations(meta)).filter(|a| !a.is_empty()),
                // The run from scratch assigned its own uids; that the live slices are owned
                // by the live Service is for the caller to check.
                owner_references: meta.owner_references.clone().map(|owners| {
                    owners
                        .into_iter()
                        .map(|o| OwnerReference {
                            uid: String::new(),
                            ..o
                        })
                        .collect()
                }),
                ..ObjectMeta::default()
            },
            ..(*slice).clone()
        };
        for endpoint in &mut slice.endpoints {
            endpoint.hints = None;
            without_uid(&mut endpoint.target_ref);
        }
        slice
            .endpoints
            .sort_by_cached_key(|e| serde_json::to_string(e).unwrap_or_default());
        slices
            .entry(subject(meta, service))
            .or_default()
            .push(Item::Slice(slice));
    }
    for (subject, items) in slices {
        facts.insert(key(&subject, "EndpointSlices"), Fact::List(sorted(items)));
    }
    facts
}
