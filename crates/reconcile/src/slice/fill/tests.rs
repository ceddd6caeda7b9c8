use super::*;
use crate::slice::endpoint::pod_to_endpoint;
use crate::testing::{pod, service};
use std::ops::Range;

fn desired(names: Range<usize>) -> DesiredEndpoints {
    let svc = service("s").build();
    names
        .map(|i| {
            let p = pod(&format!("p{i:04}"))
                .ip(&format!("10.0.{}.{}", i / 250, i % 250))
                .build();
            let ep = pod_to_endpoint(&p, None, &svc, AddressType::IPv4);
            (EndpointKey::of(&ep), ep)
        })
        .collect()
}

/// The same endpoints, every one now ready.
fn all_ready(mut endpoints: DesiredEndpoints) -> DesiredEndpoints {
    for ep in endpoints.values_mut() {
        ep.conditions.as_mut().unwrap().ready = Some(true);
    }
    endpoints
}

fn existing_slice(name: &str, endpoints: DesiredEndpoints) -> Arc<EndpointSlice> {
    let mut slice = new_slice(&service("s").build(), &[], AddressType::IPv4);
    slice.metadata.name = Some(name.into());
    slice.endpoints = endpoints.into_values().collect();
    Arc::new(slice)
}

/// Fills one IPv4 port group of `svc`, 100 endpoints a slice, into the named existing slices,
/// each holding the endpoints of its range of pods.
fn fill(
    svc: &ServiceInfo,
    existing: &[(&str, Range<usize>)],
    wanted: DesiredEndpoints,
) -> GroupOutcome {
    let existing: Vec<Arc<StoredSlice>> = existing
        .iter()
        .map(|(name, pods)| {
            Arc::new(StoredSlice::new(EndpointSlice::clone(&existing_slice(
                name,
                desired(pods.clone()),
            ))))
        })
        .collect();
    fill_port_group(svc, &existing, wanted, &[], AddressType::IPv4, 100)
}

/// What a fill decided, in brief: the sizes of the slices it creates (smallest first), the
/// name and new size of each slice it updates, the names of those it deletes, and the
/// endpoints it adds and removes.
#[derive(Debug, Default, PartialEq)]
struct Writes<'a> {
    create: Vec<usize>,
    update: Vec<(&'a str, usize)>,
    delete: Vec<&'a str>,
    added: usize,
    removed: usize,
}

/// No writes; a case adds the ones it expects with the methods of [`Writes`].
fn writes() -> Writes<'static> {
    Writes::default()
}

impl<'a> Writes<'a> {
    fn of(out: &'a GroupOutcome) -> Self {
        let name = |s: &'a EndpointSlice| s.metadata.name.as_deref().unwrap();
        let mut create: Vec<usize> = out.create.iter().map(|s| s.endpoints.len()).collect();
        create.sort();
        Self {
            create,
            update: out
                .update
                .iter()
                .map(|s| (name(s), s.endpoints.len()))
                .collect(),
            delete: out.delete.iter().map(|s| name(s)).collect(),
            added: out.added,
            removed: out.removed,
        }
    }

    fn create(mut self, sizes: &[usize]) -> Self {
        self.create = sizes.to_vec();
        self
    }

    fn update(mut self, name: &'a str, size: usize) -> Self {
        self.update.push((name, size));
        self
    }

    fn delete(mut self, name: &'a str) -> Self {
        self.delete.push(name);
        self
    }

    fn added(mut self, endpoints: usize) -> Self {
        self.added = endpoints;
        self
    }

    fn removed(mut self, endpoints: usize) -> Self {
        self.removed = endpoints;
        self
    }
}

/// A fill of service `s`'s group: the existing slices, the endpoints wanted, the writes due.
struct Case {
    behaviour: &'static str,
    existing: &'static [(&'static str, Range<usize>)],
    wanted: DesiredEndpoints,
    want: Writes<'static>,
}

#[test]
fn fills_keep_slices_full_and_touch_as_few_as_they_can() {
    let cases = [
        Case {
            behaviour: "250 endpoints and no slices make slices of 100, 100 and 50",
            existing: &[],
            wanted: desired(0..250),
            want: writes().create(&[50, 100, 100]).added(250),
        },
        Case {
            behaviour: "slices holding just the wanted endpoints stay unwritten",
            existing: &[("a", 0..100), ("b", 100..150)],
            wanted: desired(0..150),
            want: writes(),
        },
        Case {
            behaviour: "removed endpoints update their slice, and a slice left empty is deleted",
            existing: &[("a", 0..10), ("b", 10..20)],
            wanted: desired(0..5),
            want: writes().update("a", 5).delete("b").removed(15),
        },
        Case {
            behaviour: "new endpoints top up a slice already being updated (a lost p0)",
            existing: &[("a", 0..50), ("b", 50..60)],
            wanted: desired(1..70),
            want: writes().update("a", 59).added(10).removed(1),
        },
        Case {
            behaviour: "leftovers go to the unchanged slice that ends closest to full",
            existing: &[("a", 0..30), ("b", 30..90)],
            wanted: desired(0..95),
            want: writes().update("b", 65).added(5),
        },
        Case {
            behaviour: "a full slice's worth of leftovers gets a new slice",
            existing: &[("a", 0..10)],
            wanted: desired(0..110),
            want: writes().create(&[100]).added(100),
        },
        Case {
            behaviour: "changed endpoint conditions update the slice in place",
            existing: &[("a", 0..3)],
            wanted: all_ready(desired(0..3)),
            want: writes().update("a", 3),
        },
    ];
    for case in cases {
        let out = fill(&service("s").build(), case.existing, case.wanted);
        assert_eq!(Writes::of(&out), case.want, "{}", case.behaviour);
    }
}

#[test]
fn label_drift_updates_an_otherwise_unchanged_slice() {
    let svc = service("s").label("team", "x").build();
    let out = fill(&svc, &[("a", 0..3)], desired(0..3));
    assert_eq!(Writes::of(&out), writes().update("a", 3));
    assert_eq!(
        out.update[0]
            .metadata
            .labels
            .as_ref()
            .unwrap()
            .get("team")
            .map(String::as_str),
        Some("x")
    );
}

#[test]
fn new_slices_have_generate_name_and_a_controller_owner() {
    let s = new_slice(&service("web").build(), &[], AddressType::IPv4);
    assert_eq!(s.metadata.generate_name.as_deref(), Some("web-"));
    let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.api_version.as_str(),
            owner.uid.as_str()
        ),
        ("Service", "v1", "uid-web")
    );
}
