//! One test per rule: each fails if its rule is dropped or loosened.

use super::*;
use crate::testing::decoded;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{json, Value};

const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// A slice of `shop/web` by the EndpointSlice controller, one endpoint per IP, each of pod
/// `p-<ip>`.
fn slice(name: &str, ips: &[&str]) -> Value {
    json!({
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": format!("uid-{name}"),
            "resourceVersion": "7",
            "generation": 2,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "kubernetes.io/service-name": "web",
                MANAGED_BY: "endpointslice-controller.k8s.io",
            },
            "annotations": {TRIGGER: "2026-01-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                 "uid": "svc-uid", "controller": true, "blockOwnerDeletion": true}],
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": ips.iter().map(|ip| json!({
            "addresses": [ip],
            "conditions": {"ready": true},
            "targetRef": {"kind": "Pod", "namespace": "shop", "name": format!("p-{ip}"), "uid": format!("pod-uid-{ip}")},
        })).collect::<Vec<_>>(),
    })
}

/// `shop/web`'s Endpoints, one subset per list of IPs.
fn endpoints(subsets: &[&[&str]]) -> Value {
    json!({
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "uid": "ep-uid",
            "resourceVersion": "3",
            "labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller"},
            "annotations": {TRIGGER: "2026-01-01T00:00:00Z"},
        },
        "subsets": subsets.iter().enumerate().map(|(i, ips)| json!({
            "addresses": ips.iter().map(|ip| json!({
                "ip": ip,
                "targetRef": {"kind": "Pod", "namespace": "shop", "name": format!("p-{ip}"), "uid": format!("pod-uid-{ip}")},
            })).collect::<Vec<_>>(),
            "ports": [{"name": "http", "port": 8080 + i, "protocol": "TCP"}],
        })).collect::<Vec<_>>(),
    })
}

/// A side: its Endpoints, slices and events.
#[derive(Default, Clone)]
struct Side {
    endpoints: Vec<Endpoints>,
    slices: Vec<EndpointSlice>,
    events: Vec<Event>,
}

impl Side {
    fn new(endpoints: Vec<Value>, slices: Vec<Value>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(decoded).collect(),
            ..Self::slices(slices)
        }
    }
    fn slices(slices: Vec<Value>) -> Self {
        Self {
            slices: slices.into_iter().map(decoded).collect(),
            ..Self::default()
        }
    }
    fn endpoints(endpoints: Vec<Value>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(decoded).collect(),
            ..Self::default()
        }
    }
    fn events(events: &[(&str, &str, &str)]) -> Self {
        Self {
            events: events
                .iter()
                .map(|(type_, reason, message)| Event {
                    namespace: "shop".into(),
                    name: "web".into(),
                    type_: (*type_).into(),
                    reason: (*reason).into(),
                    message: (*message).into(),
                })
                .collect(),
            ..Self::default()
        }
    }
    fn objects(&self) -> Objects<'_> {
        Objects::new(&self.endpoints, &self.slices).with_events(&self.events)
    }
}

fn diff(ours: &Side, theirs: &Side, rules: Rules) -> Vec<String> {
    differences(&ours.objects(), &theirs.objects(), rules, Sides::UPSTREAM)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn same(ours: &Side, theirs: &Side, rules: Rules) {
    assert_eq!(diff(ours, theirs, rules), Vec::<String>::new());
}

/// Asserts that some difference between the sides under `rules` is one `wanted` accepts.
fn some_difference(ours: &Side, theirs: &Side, rules: Rules, wanted: impl Fn(&str) -> bool) {
    let diffs = diff(ours, theirs, rules);
    assert!(diffs.iter().any(|d| wanted(d)), "{rules:?}: {diffs:?}");
}

fn differs(ours: &Side, theirs: &Side, rules: Rules, part: &str) {
    let diffs = diff(ours, theirs, rules);
    assert!(
        !diffs.is_empty() && diffs.iter().all(|d| d.contains(part)),
        "expected differences in {part}: {diffs:?}"
    );
}

const CORPUS: [Rules; 3] = [Rules::Static, Rules::Dynamic, Rules::Restored];

fn edit(mut v: Value, f: impl FnOnce(&mut Value)) -> Value {
    f(&mut v);
    v
}

#[test]
fn names_uids_resource_versions_generations_timestamps_and_trigger_times_do_not_count() {
    let theirs = Side::new(
        vec![endpoints(&[&["10.0.0.1"]])],
        vec![slice("web-abcde", &["10.0.0.1", "10.0.0.2"])],
    );
    let ours = Side::new(
        vec![edit(endpoints(&[&["10.0.0.1"]]), |e| {
            e["metadata"]["uid"] = json!("other");
            e["metadata"]["resourceVersion"] = json!("99");
            e["metadata"]["annotations"][TRIGGER] = json!("2027-01-01T00:00:00Z");
            e["subsets"][0]["addresses"][0]["targetRef"]["uid"] = json!("other");
            e["subsets"][0]["addresses"][0]["targetRef"]["resourceVersion"] = json!("5");
        })],
        // The endpoints in another order, too.
        vec![edit(slice("web-xyzzy", &["10.0.0.2", "10.0.0.1"]), |s| {
            s["metadata"]["uid"] = json!("other");
            s["metadata"]["resourceVersion"] = json!("1");
            s["metadata"]["generation"] = json!(9);
            s["metadata"]["creationTimestamp"] = json!("2027-01-01T00:00:00Z");
            s["metadata"]["managedFields"] = json!([{"manager": "x"}]);
            s["metadata"]["annotations"] = json!({});
            s["metadata"]["ownerReferences"][0]["uid"] = json!("other");
            s["endpoints"][0]["targetRef"]["uid"] = json!("other");
            s["endpoints"][0]["targetRef"]["resourceVersion"] = json!("4");
        })],
    );
    for rules in CORPUS.into_iter().chain([Rules::Planned]) {
        same(&ours, &theirs, rules);
    }
}

#[test]
fn an_endpoints_label_annotation_address_or_port_counts() {
    let theirs = Side::endpoints(vec![endpoints(&[&["10.0.0.1", "10.0.0.2"]])]);
    for (part, change) in [
        ("labels", "/metadata/labels/extra"),
        ("annotations", "/metadata/annotations/extra"),
        ("subsets", "/subsets/0/addresses/0/hostname"),
        ("subsets", "/subsets/0/ports/0/name"),
        ("subsets", "/subsets/0/addresses/0/targetRef/name"),
    ] {
        let ours = Side::endpoints(vec![edit(endpoints(&[&["10.0.0.1", "10.0.0.2"]]), |e| {
            let (parent, field) = change.rsplit_once('/').unwrap();
            e.pointer_mut(parent).unwrap()[field] = json!("x");
        })]);
        for rules in CORPUS.into_iter().chain([Rules::Planned]) {
            differs(&ours, &theirs, rules, &format!("shop/web Endpoints {part}"));
        }
    }
}

#[test]
fn the_order_of_addresses_counts_but_the_order_of_subsets_only_against_a_plan() {
    let theirs = Side::endpoints(vec![endpoints(&[&["10.0.0.1", "10.0.0.2"], &["10.0.0.3"]])]);
    let swapped_subsets =
        Side::endpoints(vec![endpoints(&[&["10.0.0.3"], &["10.0.0.1", "10.0.0.2"]])]);
    // The ports follow the subset's position: put them back.
    let swapped_subsets = Side::endpoints(vec![edit(
        serde_json::to_value(&swapped_subsets.endpoints[0]).unwrap(),
        |e| {
            e["subsets"][0]["ports"][0]["port"] = json!(8081);
            e["subsets"][1]["ports"][0]["port"] = json!(8080);
        },
    )]);
    for rules in CORPUS {
        same(&swapped_subsets, &theirs, rules);
    }
    differs(&swapped_subsets, &theirs, Rules::Planned, "subsets");

    let swapped_addresses =
        Side::endpoints(vec![endpoints(&[&["10.0.0.2", "10.0.0.1"], &["10.0.0.3"]])]);
    for rules in CORPUS.into_iter().chain([Rules::Planned]) {
        differs(&swapped_addresses, &theirs, rules, "subsets");
    }
}

#[test]
fn a_truncated_endpoints_counts_by_its_total_and_each_subsets_count_within_one() {
    let truncated = |subsets: &[&[&str]]| {
        edit(endpoints(subsets), |e| {
            e["metadata"]["annotations"]["endpoints.kubernetes.io/over-capacity"] =
                json!("truncated");
        })
    };
    let theirs = Side::endpoints(vec![truncated(&[&["10.0.0.1", "10.0.0.2"], &["10.0.0.3"]])]);
    let shifted = Side::endpoints(vec![truncated(&[&["10.0.0.1"], &["10.0.0.3", "10.0.0.4"]])]);
    for rules in CORPUS {
        same(&shifted, &theirs, rules);
    }
    differs(&shifted, &theirs, Rules::Planned, "subsets");
    let fewer = Side::endpoints(vec![truncated(&[&["10.0.0.1"], &["10.0.0.3"]])]);
    let shifted_by_two = Side::endpoints(vec![truncated(&[
        &[],
        &["10.0.0.3", "10.0.0.4", "10.0.0.5"],
    ])]);
    for rules in CORPUS {
        differs(&fewer, &theirs, rules, "truncated subsets");
        differs(&shifted_by_two, &theirs, rules, "truncated subsets");
    }
}

#[test]
fn how_endpoints_are_split_among_slices_counts_by_sizes_then_totals_then_not_at_all() {
    let theirs = Side::slices(vec![
        slice("a", &["10.0.0.1", "10.0.0.2"]),
        slice("b", &["10.0.0.3"]),
    ]);
    // Same sizes, other endpoints in each: upstream fills new slices in map order.
    let reshuffled = Side::slices(vec![
        slice("c", &["10.0.0.3", "10.0.0.1"]),
        slice("d", &["10.0.0.2"]),
    ]);
    for rules in CORPUS {
        same(&reshuffled, &theirs, rules);
    }
    differs(&reshuffled, &theirs, Rules::Planned, "EndpointSlices");

    // Other sizes, same total.
    let resized = Side::slices(vec![
        slice("c", &["10.0.0.1"]),
        slice("d", &["10.0.0.2"]),
        slice("e", &["10.0.0.3"]),
    ]);
    some_difference(&resized, &theirs, Rules::Static, |d| {
        d.ends_with(" sizes: only ours [1, 1]; only upstream [2]")
    });
    // By totals the split does not count, but each slice's metadata does, so the number of
    // slices still shows.
    differs(&resized, &theirs, Rules::Dynamic, " metadata: only ours [{");
    same(&resized, &theirs, Rules::Restored);
    differs(&resized, &theirs, Rules::Planned, "EndpointSlices");

    // One endpoint fewer.
    let fewer = Side::slices(vec![slice("a", &["10.0.0.1", "10.0.0.2"]), slice("b", &[])]);
    for rules in CORPUS {
        some_difference(&fewer, &theirs, rules, |d| {
            d.contains("endpoints: only upstream [")
        });
    }
    differs(&fewer, &theirs, Rules::Dynamic, "EndpointSlices IPv4");
    some_difference(&fewer, &theirs, Rules::Dynamic, |d| {
        d.contains("total endpoints: ours 2 upstream 3")
    });
}

#[test]
fn after_a_restore_a_duplicated_endpoint_and_a_left_over_empty_slice_still_count() {
    let theirs = Side::slices(vec![slice("a", &["10.0.0.1", "10.0.0.2"])]);
    let split = Side::slices(vec![slice("b", &["10.0.0.1"]), slice("c", &["10.0.0.2"])]);
    same(&split, &theirs, Rules::Restored);
    let duplicated = Side::slices(vec![
        slice("b", &["10.0.0.1", "10.0.0.2"]),
        slice("c", &["10.0.0.2"]),
    ]);
    differs(&duplicated, &theirs, Rules::Restored, "endpoints");
    let left_over = Side::slices(vec![slice("b", &["10.0.0.1", "10.0.0.2"]), slice("c", &[])]);
    differs(&left_over, &theirs, Rules::Restored, "empty slices");
    // A slice with other metadata still shows.
    let relabelled = Side::slices(vec![
        slice("b", &["10.0.0.1"]),
        edit(slice("c", &["10.0.0.2"]), |s| {
            s["metadata"]["labels"]["extra"] = json!("x")
        }),
    ]);
    differs(&relabelled, &theirs, Rules::Restored, "metadata");
}

#[test]
fn every_field_of_an_endpoint_counts_but_its_hints_only_as_values_and_counts() {
    let hinted = |zones: [&str; 4]| {
        Side::slices(vec![edit(
            slice("a", &["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]),
            |s| {
                for (i, zone) in zones.iter().enumerate() {
                    s["endpoints"][i]["hints"] = json!({"forZones": [{"name": zone}]});
                }
            },
        )])
    };
    let theirs = hinted(["z1", "z2", "z1", "z1"]);
    // Which endpoint carries which hint follows map order upstream.
    let moved = hinted(["z2", "z1", "z1", "z1"]);
    for rules in CORPUS.into_iter().chain([Rules::Planned]) {
        same(&moved, &theirs, rules);
    }
    let other_counts = hinted(["z1", "z2", "z2", "z1"]);
    let other_values = hinted(["z1", "z3", "z1", "z1"]);
    for rules in CORPUS {
        differs(&other_counts, &theirs, rules, "hint counts");
        differs(&other_values, &theirs, rules, "hint values");
    }
    // Hints are left out against a plan from scratch.
    same(&other_values, &theirs, Rules::Planned);

    for field in ["nodeName", "zone", "hostname"] {
        let ours = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
            s["endpoints"][0][field] = json!("x")
        })]);
        let theirs = Side::slices(vec![slice("a", &["10.0.0.1"])]);
        for rules in CORPUS {
            differs(&ours, &theirs, rules, "endpoints");
        }
        differs(&ours, &theirs, Rules::Planned, "EndpointSlices");
    }
    let not_ready = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
        s["endpoints"][0]["conditions"]["ready"] = json!(false)
    })]);
    let theirs = Side::slices(vec![slice("a", &["10.0.0.1"])]);
    for rules in CORPUS {
        differs(&not_ready, &theirs, rules, "endpoints");
    }
}

#[test]
fn a_slices_labels_annotations_and_owners_count() {
    let theirs = Side::slices(vec![slice("a", &["10.0.0.1"])]);
    for pointer in [
        "/metadata/labels",
        "/metadata/annotations",
        "/metadata/ownerReferences/0",
    ] {
        let field = if pointer.ends_with('0') {
            "name"
        } else {
            "extra"
        };
        let ours = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
            s.pointer_mut(pointer).unwrap()[field] = json!("x")
        })]);
        for rules in CORPUS {
            differs(&ours, &theirs, rules, "metadata");
        }
        differs(&ours, &theirs, Rules::Planned, "EndpointSlices");
    }
}

#[test]
fn slices_are_grouped_by_address_type_and_port_list_and_mirrored_ones_apart() {
    let theirs = Side::slices(vec![slice("a", &["10.0.0.1"])]);
    let other_port = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
        s["ports"][0]["port"] = json!(9090)
    })]);
    some_difference(&other_port, &theirs, Rules::Static, |d| {
        d.contains("ports=[{\"name\":\"http\",\"port\":9090") && d.contains("only ours")
    });
    let mirrored = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
        s["metadata"]["labels"][MANAGED_BY] = json!("endpointslicemirroring-controller.k8s.io")
    })]);
    some_difference(&mirrored, &theirs, Rules::Dynamic, |d| {
        d.starts_with("shop/web mirrored EndpointSlices IPv4")
    });
}

#[test]
fn default_kubernetes_and_other_controllers_slices_are_left_out_but_not_against_a_plan() {
    let kubernetes = edit(slice("kubernetes", &["192.168.0.1"]), |s| {
        s["metadata"]["namespace"] = json!("default");
        s["metadata"]["labels"]["kubernetes.io/service-name"] = json!("kubernetes");
    });
    let foreign = edit(slice("f", &["10.0.0.9"]), |s| {
        s["metadata"]["labels"][MANAGED_BY] = json!("someone-else")
    });
    let kubernetes_endpoints = edit(endpoints(&[&["192.168.0.1"]]), |e| {
        e["metadata"]["namespace"] = json!("default");
        e["metadata"]["name"] = json!("kubernetes");
    });
    let ours = Side::new(vec![kubernetes_endpoints], vec![kubernetes, foreign]);
    let mut theirs = Side::default();
    for rules in CORPUS {
        same(&ours, &theirs, rules);
    }
    assert_eq!(diff(&ours, &theirs, Rules::Planned).len(), 5);
    // An event about default/kubernetes is left out as well.
    theirs.events = vec![Event {
        namespace: "default".into(),
        name: "kubernetes".into(),
        type_: "Warning".into(),
        reason: "Odd".into(),
        message: String::new(),
    }];
    same(&ours, &theirs, Rules::Static);
}

#[test]
fn events_count_by_type_and_reason_but_not_a_lost_race_or_a_message() {
    let theirs = Side::events(&[
        ("Normal", "TopologyAwareHintsEnabled", "a"),
        (
            "Warning",
            "FailedToUpdateEndpointSlices",
            "Operation cannot be fulfilled: the object has been modified",
        ),
        (
            "Warning",
            "FailedToCreateEndpoint",
            "endpoints \"web\" already exists",
        ),
        (
            "Warning",
            "FailedToUpdateEndpoint",
            "the object has been modified; please apply your changes",
        ),
    ]);
    let ours = Side::events(&[
        ("Normal", "TopologyAwareHintsEnabled", "b"),
        ("Normal", "TopologyAwareHintsEnabled", "c"),
    ]);
    same(&ours, &theirs, Rules::Static);
    // Another failure is a difference.
    let failed = Side::events(&[
        ("Normal", "TopologyAwareHintsEnabled", "b"),
        ("Warning", "FailedToUpdateEndpointSlices", "forbidden"),
    ]);
    differs(&failed, &theirs, Rules::Static, "shop/web events");
    let diffs = diff(&failed, &theirs, Rules::Static);
    assert_eq!(
        diffs,
        vec!["shop/web events: only ours [\"Warning FailedToUpdateEndpointSlices\"]"]
    );
    // Events are not compared against a plan.
    same(&failed, &theirs, Rules::Planned);
}

#[test]
fn against_a_plan_absent_labels_differ_from_empty_ones_as_in_the_objects() {
    let theirs = Side::slices(vec![slice("a", &["10.0.0.1"])]);
    let ours = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
        s["ports"] = json!([])
    })]);
    // No ports and an empty port list are one port list to the corpus ...
    let none = Side::slices(vec![edit(slice("a", &["10.0.0.1"]), |s| {
        s.as_object_mut().unwrap().remove("ports");
    })]);
    for rules in CORPUS {
        same(&ours, &none, rules);
    }
    // ... but not to the exact comparison, which compares the objects as written.
    differs(&ours, &none, Rules::Planned, "EndpointSlices");
    differs(&ours, &theirs, Rules::Planned, "EndpointSlices");

    let labelled = Side::endpoints(vec![edit(endpoints(&[&["10.0.0.1"]]), |e| {
        e["metadata"]["labels"] = json!({})
    })]);
    let unlabelled = Side::endpoints(vec![edit(endpoints(&[&["10.0.0.1"]]), |e| {
        e["metadata"].as_object_mut().unwrap().remove("labels");
    })]);
    for rules in CORPUS {
        same(&labelled, &unlabelled, rules);
    }
    differs(&labelled, &unlabelled, Rules::Planned, "Endpoints labels");
}

#[test]
fn each_side_is_named_by_its_own_label() {
    let theirs = Side::new(
        vec![endpoints(&[&["10.0.0.1"]])],
        vec![slice("a", &["10.0.0.1", "10.0.0.2"])],
    );
    let mut ours = theirs.clone();
    ours.endpoints[0].metadata.name = Some("gone".into());
    ours.slices = vec![decoded(slice("a", &["10.0.0.1", "10.0.0.3"]))];
    let sides = Sides {
        ours: "after faults",
        theirs: "plan",
    };
    let lines: Vec<String> = differences(&ours.objects(), &theirs.objects(), Rules::Static, sides)
        .iter()
        .map(ToString::to_string)
        .collect();
    let find = |start: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start} in {lines:?}"))
            .clone()
    };
    find("shop/gone Endpoints labels: only after faults: {");
    find("shop/web Endpoints subsets: only plan: [");
    let endpoints = find("shop/web EndpointSlices IPv4 ports=");
    assert!(
        endpoints.contains("endpoints: only after faults [{")
            && endpoints.contains("; only plan [{")
            && endpoints.contains("10.0.0.3")
            && !endpoints.contains("ours")
            && !endpoints.contains("upstream"),
        "{endpoints}"
    );

    // The live controllers against a plan.
    let d = differences(
        &Objects::of_slices(&ours.slices),
        &Objects::of_slices(&theirs.slices),
        Rules::Planned,
        Sides::PLAN,
    );
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (d[0].subject.as_str(), d[0].what.as_str()),
        ("shop/web", "EndpointSlices")
    );
    let Gap::Elements { ours, theirs } = &d[0].gap else {
        panic!("{:?}", d[0].gap)
    };
    assert!(ours[0].contains("10.0.0.3") && theirs[0].contains("10.0.0.2"));
    assert!(d[0].to_string().contains("only live [") && d[0].to_string().contains("only plan ["));
}

#[test]
fn a_long_value_is_cut_on_a_character_boundary() {
    let label = "é".repeat(500);
    let ours = Side::endpoints(vec![edit(endpoints(&[]), |e| {
        e["metadata"]["labels"]["x"] = json!(label)
    })]);
    let theirs = Side::endpoints(vec![endpoints(&[])]);
    let diffs = diff(&ours, &theirs, Rules::Static);
    assert!(diffs[0].contains("… ("), "{diffs:?}");
}
