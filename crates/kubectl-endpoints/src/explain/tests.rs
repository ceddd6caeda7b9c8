//! The smallest cluster for each verdict, and for each hints, mirroring and truncation
//! explanation, checked in both the text and the JSON.

use super::*;
use crate::manifests::Object;
use serde_json::{json, Value};

fn node(name: &str, zone: Option<&str>, cpu: &str) -> Object {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(zone) = zone {
        labels["topology.kubernetes.io/zone"] = json!(zone);
    }
    Object::Node(
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {
                "allocatable": {"cpu": cpu},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        }))
        .unwrap(),
    )
}

/// A Service `web` in `default` selecting `app=web` on port 80 → 8080, with `extra` merged
/// into its spec.
fn service(extra: Value) -> Object {
    let mut spec = json!({
        "selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    });
    merge(&mut spec, extra);
    Object::Service(
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": spec
        }))
        .unwrap(),
    )
}

fn merge(into: &mut Value, extra: Value) {
    match (into, extra) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match (a.get_mut(&k), v) {
                    (Some(slot @ Value::Object(_)), v @ Value::Object(_)) => merge(slot, v),
                    (_, Value::Null) => {
                        a.remove(&k);
                    }
                    (_, v) => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// A running, ready pod `name` labelled `app=web` on `node-a` with IP `ip`; `extra` is merged
/// into the whole object.
fn pod(name: &str, ip: &str, extra: Value) -> Object {
    let mut object = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "x"}]},
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    });
    merge(&mut object, extra);
    Object::Pod(serde_json::from_value(object).unwrap())
}

fn namespace() -> Object {
    Object::Namespace(
        serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
        )
        .unwrap(),
    )
}

/// Explains `default/web` in a cluster of `objects` (plus the namespace and, unless given,
/// one node `node-a`).
async fn explain_web(mut objects: Vec<Object>) -> Explanation {
    objects.insert(0, node("node-a", Some("zone-a"), "4"));
    explain_web_with(
        &mut objects,
        &kube_endpoints::flags::CaseFlags::default().output,
    )
    .await
}

/// Explains `default/web` among `objects` exactly (plus the namespace).
async fn explain_web_with(objects: &mut Vec<Object>, flags: &OutputFlags) -> Explanation {
    objects.insert(0, namespace());
    let snapshot = Snapshot::from_objects(std::mem::take(objects));
    let mut all = explain(
        &snapshot,
        Source::Manifests,
        &["default/web".to_owned()],
        flags,
    )
    .await
    .unwrap();
    all.pop().unwrap()
}

fn default_flags() -> OutputFlags {
    kube_endpoints::flags::CaseFlags::default().output
}

fn json_of(e: &Explanation) -> Value {
    serde_json::to_value(e).unwrap()
}

/// Fails unless `explain`'s text for `e` contains each of `parts`, showing the text.
fn assert_text_has(e: &Explanation, parts: &[&str]) {
    let text = render_text(e);
    for part in parts {
        assert!(text.contains(part), "{part:?} not in:\n{text}");
    }
}

/// The Service `web` and its ready pod `web-1` at 10.0.0.1.
fn web_and_its_pod() -> Vec<Object> {
    vec![service(json!({})), pod("web-1", "10.0.0.1", json!({}))]
}

fn the_pod<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no pod {name} in {json:#}"))
}

#[tokio::test]
async fn a_ready_pod_is_a_ready_endpoint() {
    let e = explain_web(web_and_its_pod()).await;
    let j = json_of(&e);
    assert_eq!(j["service"], "default/web");
    let p = the_pod(&j, "web-1");
    assert_eq!(p["verdict"], "ready endpoint");
    assert_eq!(p["ready"], true);
    assert_eq!(p["endpoints"], "addresses");
    assert_eq!(e.exit_code(), 0);
    assert!(e.likely_cause.is_none());
    assert_text_has(
        &e,
        &[
            "ready endpoint (1):\n  web-1  10.0.0.1  node node-a",
            "ready endpoints: 1",
        ],
    );
}

#[tokio::test]
async fn a_not_ready_pod_is_named_with_its_ready_condition() {
    let e = explain_web(vec![
        service(json!({})),
        pod(
            "web-1",
            "10.0.0.1",
            json!({"status": {"conditions": [{
                "type": "Ready", "status": "False", "reason": "ContainersNotReady",
                "message": "containers with unready status: [app]",
                "lastTransitionTime": "2026-11-20T10:00:00Z"
            }]}}),
        ),
    ])
    .await;
    let j = json_of(&e);
    let p = the_pod(&j, "web-1");
    assert_eq!(p["verdict"], "not-ready endpoint");
    assert_eq!(p["ready"], false);
    assert_eq!(p["endpoints"], "notReadyAddresses");
    assert_eq!(p["readyCondition"]["reason"], "ContainersNotReady");
    assert_eq!(p["readyCondition"]["since"], "2026-11-20T10:00:00Z");
    assert_eq!(e.exit_code(), 3);
    assert_text_has(
        &e,
        &[
            "not ready: Ready=False (ContainersNotReady): containers with unready status: [app], \
             since 2026-11-20T10:00:00Z",
        ],
    );
    // Nothing is ready: the cause leads.
    let text = render_text(&e);
    let cause = text.lines().nth(3).unwrap();
    assert!(
        cause.starts_with("  NO READY ENDPOINTS. Most likely cause: 1 of the 1 pod(s)"),
        "{text}"
    );
    assert!(cause.contains("not-ready endpoint"), "{cause}");
}

#[tokio::test]
async fn a_terminating_pod_serves_from_the_slice_but_not_from_endpoints() {
    let deleting =
        json!({"metadata": {"deletionTimestamp": "2026-11-20T10:00:00Z", "finalizers": ["x"]}});
    let e = explain_web(vec![
        service(json!({})),
        pod("web-1", "10.0.0.1", deleting.clone()),
        pod("web-2", "10.0.0.2", {
            let mut d = deleting.clone();
            merge(
                &mut d,
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            );
            d
        }),
    ])
    .await;
    let j = json_of(&e);
    let serving = the_pod(&j, "web-1");
    assert_eq!(serving["verdict"], "serving but terminating");
    assert_eq!(
        (
            &serving["ready"],
            &serving["serving"],
            &serving["terminating"]
        ),
        (&json!(false), &json!(true), &json!(true))
    );
    assert_eq!(serving["endpoints"], "none");
    assert!(serving["endpointsNote"]
        .as_str()
        .unwrap()
        .contains("unless the Service publishes not-ready addresses"));
    let gone = the_pod(&j, "web-2");
    assert_eq!(gone["verdict"], "terminating, not serving");
    assert_eq!(gone["ready"], false);
    assert_text_has(
        &e,
        &[
            "serving but terminating (1):",
            "terminating, not serving (1):\n  web-2  10.0.0.2  node node-a\n    being deleted and not serving (Ready=False)",
            "not in the Endpoints object: terminating pods",
        ],
    );

    // With publishNotReadyAddresses the same pod is ready everywhere.
    let e = explain_web(vec![
        service(json!({"publishNotReadyAddresses": true})),
        pod("web-1", "10.0.0.1", deleting),
    ])
    .await;
    let j = json_of(&e);
    let p = the_pod(&j, "web-1");
    assert_eq!(p["verdict"], "ready endpoint");
    assert_eq!(p["endpoints"], "addresses");
    assert!(p["reason"]
        .as_str()
        .unwrap()
        .contains("publishes not-ready addresses"));
}

#[tokio::test]
async fn finished_and_ip_less_pods_are_excluded() {
    let e = explain_web(vec![
        service(json!({})),
        pod("done", "10.0.0.1", json!({"status": {"phase": "Succeeded"}})),
        pod("failed", "10.0.0.2", json!({"status": {"phase": "Failed"}})),
        pod(
            "pending",
            "",
            json!({"spec": {"nodeName": null}, "status": {"phase": "Pending", "podIP": null, "podIPs": null, "conditions": null}}),
        ),
    ])
    .await;
    let j = json_of(&e);
    for name in ["done", "failed"] {
        let p = the_pod(&j, name);
        assert_eq!(p["verdict"], "excluded: pod Failed or Succeeded", "{name}");
        assert_eq!(p["ready"], Value::Null);
        assert_eq!(p["endpoints"], "none");
    }
    let p = the_pod(&j, "pending");
    assert_eq!(p["verdict"], "excluded: no IP");
    assert!(p["reason"].as_str().unwrap().contains("not scheduled"));
    assert_eq!(e.exit_code(), 3);
    assert_text_has(
        &e,
        &[
            "excluded: pod Failed or Succeeded (2):",
            "excluded: no IP (1):\n  pending  no IP  node -",
        ],
    );
}

#[tokio::test]
async fn a_pod_without_an_ip_of_the_services_family_is_excluded() {
    let e = explain_web(vec![
        service(json!({"ipFamilies": ["IPv6"], "ipFamilyPolicy": "SingleStack", "clusterIP": "fd00::10", "clusterIPs": ["fd00::10"]})),
        pod("web-1", "10.0.0.1", json!({})),
    ])
    .await;
    let j = json_of(&e);
    let p = the_pod(&j, "web-1");
    assert_eq!(p["verdict"], "excluded: no IP of the Service's family");
    assert!(p["reason"].as_str().unwrap().contains("IPv6"), "{p}");
    assert_text_has(&e, &["are not of the Service's address type (IPv6)"]);
}

#[tokio::test]
async fn a_pod_on_an_unknown_node_is_excluded_and_the_failure_event_named() {
    let e = explain_web(vec![
        service(json!({})),
        pod("web-1", "10.0.0.1", json!({"spec": {"nodeName": "ghost"}})),
    ])
    .await;
    let j = json_of(&e);
    let p = the_pod(&j, "web-1");
    assert_eq!(p["verdict"], "excluded: node unknown");
    assert!(p["reason"].as_str().unwrap().contains("\"ghost\""));
    // The Endpoints controller does not need the node.
    assert_eq!(p["endpoints"], "addresses");
    assert!(e
        .events
        .iter()
        .any(|ev| ev.reason == "FailedToUpdateEndpointSlices"
            && ev.message.contains("Node ghost Not Found")));
    assert_text_has(&e, &["in the Endpoints object's addresses"]);
}

#[tokio::test]
async fn a_named_port_the_pod_lacks_is_named_with_the_ports_searched() {
    let e = explain_web(vec![
        service(json!({"ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}
        ]})),
        pod(
            "web-1",
            "10.0.0.1",
            json!({"spec": {"containers": [{"name": "app", "image": "x",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9100, "protocol": "UDP"}]}]}}),
        ),
    ])
    .await;
    let j = json_of(&e);
    let p = the_pod(&j, "web-1");
    assert_eq!(p["verdict"], "port does not resolve");
    assert_eq!(p["ready"], true);
    assert_eq!(p["unresolvedPorts"][0]["servicePort"], "metrics");
    assert_eq!(
        p["unresolvedPorts"][0]["containerPorts"],
        json!(["http/TCP:8080", "metrics/UDP:9100"])
    );
    assert_text_has(
        &e,
        &[
            "Service port \"metrics\" (targetPort metrics TCP): no container port of that name and protocol among [http/TCP:8080, metrics/UDP:9100]",
        ],
    );
}

#[tokio::test]
async fn near_matches_name_the_label_that_differs_and_strangers_are_left_out() {
    let e = explain_web(vec![
        service(json!({"selector": {"app": "web", "tier": "fe"}})),
        pod(
            "other-value",
            "10.0.0.1",
            json!({"metadata": {"labels": {"app": "web", "tier": "be"}}}),
        ),
        pod("missing-key", "10.0.0.2", json!({})),
        pod(
            "stranger",
            "10.0.0.3",
            json!({"metadata": {"labels": {"app": "db", "tier": null}}}),
        ),
    ])
    .await;
    let j = json_of(&e);
    let names: Vec<&str> = j["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["missing-key", "other-value"]);
    let p = the_pod(&j, "other-value");
    assert_eq!(p["verdict"], "selector does not match");
    assert_eq!(
        p["labelDifferences"],
        json!([{"key": "tier", "wanted": "fe", "actual": "be"}])
    );
    let p = the_pod(&j, "missing-key");
    assert_eq!(
        p["labelDifferences"],
        json!([{"key": "tier", "wanted": "fe", "actual": null}])
    );
    assert_text_has(
        &e,
        &[
            "tier=fe wanted, the pod has tier=be",
            "tier=fe wanted, the pod has no label tier",
        ],
    );
    assert!(
        e.likely_cause
            .as_deref()
            .unwrap()
            .starts_with("no pod matches the selector app=web,tier=fe; 2 nearly match"),
        "{:?}",
        e.likely_cause
    );
}

#[tokio::test]
async fn external_name_and_deleted_services_are_not_managed() {
    let e = explain_web(vec![
        service(json!({"type": "ExternalName", "externalName": "example.com", "ports": null})),
        pod("web-1", "10.0.0.1", json!({})),
    ])
    .await;
    let j = json_of(&e);
    assert_eq!(j["management"]["selectorControllers"], false);
    assert_eq!(the_pod(&j, "web-1")["verdict"], "Service not managed");
    assert_eq!(e.exit_code(), 3);
    assert_text_has(&e, &["type ExternalName"]);

    let mut deleting = service(json!({}));
    if let Object::Service(s) = &mut deleting {
        s.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-11-20T10:00:00Z".parse().unwrap(),
        ));
        s.metadata.finalizers = Some(vec!["x".into()]);
    }
    let e = explain_web(vec![deleting, pod("web-1", "10.0.0.1", json!({}))]).await;
    assert!(
        e.management.summary.starts_with("being deleted"),
        "{:?}",
        e.management
    );
    assert_eq!(
        the_pod(&json_of(&e), "web-1")["verdict"],
        "Service not managed"
    );
    assert!(e.likely_cause.unwrap().contains("being deleted"));
}

fn hand_written(labels: Value, annotations: Value, ips: &[&str]) -> Object {
    let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    Object::Endpoints(
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "web", "namespace": "default", "labels": labels, "annotations": annotations},
            "subsets": [{"addresses": addresses, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]
        }))
        .unwrap(),
    )
}

#[tokio::test]
async fn a_selectorless_service_says_whether_and_what_is_mirrored() {
    let no_selector = || service(json!({"selector": null}));
    let ips = ["10.0.0.1", "10.0.0.2", "10.0.0.3"];
    let e = explain_web(vec![
        no_selector(),
        hand_written(json!({}), json!({}), &ips),
    ])
    .await;
    let m = e.mirroring.as_ref().unwrap();
    assert!(m.mirrored && m.not_mirrored.is_empty());
    assert_eq!((m.addresses, m.mirrored_addresses), (3, 3));
    assert_eq!(e.exit_code(), 0);

    // Over --mirroring-max-endpoints-per-subset: the addresses left out are named.
    let flags = OutputFlags {
        mirroring_max_endpoints_per_subset: 2,
        ..default_flags()
    };
    let mut objects = vec![no_selector(), hand_written(json!({}), json!({}), &ips)];
    let e = explain_web_with(&mut objects, &flags).await;
    let m = e.mirroring.as_ref().unwrap();
    assert_eq!(m.mirrored_addresses, 2);
    assert_eq!(m.not_mirrored, ["10.0.0.3"]);
    assert_text_has(
        &e,
        &["not mirrored (over --mirroring-max-endpoints-per-subset, or not an IP): 10.0.0.3"],
    );

    for (labels, annotations, why) in [
        (
            json!({"endpointslice.kubernetes.io/skip-mirror": "true"}),
            json!({}),
            "skip-mirror=true",
        ),
        (
            json!({}),
            json!({"control-plane.alpha.kubernetes.io/leader": "{}"}),
            "leader-election record",
        ),
    ] {
        let e = explain_web(vec![no_selector(), hand_written(labels, annotations, &ips)]).await;
        let m = e.mirroring.as_ref().unwrap();
        assert!(!m.mirrored);
        assert!(m.reason.as_deref().unwrap().contains(why), "{m:?}");
        assert_eq!(e.exit_code(), 3);
        assert_text_has(&e, &[why]);
    }
    let e = explain_web(vec![no_selector()]).await;
    assert!(e
        .likely_cause
        .unwrap()
        .contains("no Endpoints object of its name"));
}

fn hinted_service() -> Object {
    service(json!({})).tap_annotation("service.kubernetes.io/topology-mode", "Auto")
}

trait Annotate {
    fn tap_annotation(self, key: &str, value: &str) -> Self;
}

impl Annotate for Object {
    fn tap_annotation(mut self, key: &str, value: &str) -> Self {
        if let Object::Service(s) = &mut self {
            s.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(key.to_owned(), value.to_owned());
        }
        self
    }
}

fn pods_in(zones: &[(&str, usize)]) -> Vec<Object> {
    let mut out = Vec::new();
    let mut n = 0;
    for (node, count) in zones {
        for _ in 0..*count {
            n += 1;
            out.push(pod(
                &format!("web-{n}"),
                &format!("10.0.0.{n}"),
                json!({"spec": {"nodeName": node}}),
            ));
        }
    }
    out
}

#[tokio::test]
async fn hints_say_why_in_upstreams_words_with_the_zone_figures() {
    // A node without a zone: no CPU shares at all.
    let mut objects = vec![
        hinted_service(),
        node("node-a", Some("zone-a"), "4"),
        node("node-b", None, "4"),
    ];
    objects.extend(pods_in(&[("node-a", 2)]));
    let e = explain_web_with(&mut objects, &default_flags()).await;
    let h = e.hints.as_ref().unwrap();
    assert_eq!(h.mode, "topology-mode Auto");
    assert!(!h.written);
    assert!(h.reason.starts_with("Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"), "{h:?}");
    assert_eq!(
        h.event.as_ref().unwrap().reason,
        "TopologyAwareHintsDisabled"
    );

    // Every node in one zone: upstream's cache calls that insufficient too.
    let mut objects = vec![
        hinted_service(),
        node("node-a", Some("zone-a"), "4"),
        node("node-b", Some("zone-a"), "4"),
    ];
    objects.extend(pods_in(&[("node-a", 2)]));
    let e = explain_web_with(&mut objects, &default_flags()).await;
    assert!(e
        .hints
        .as_ref()
        .unwrap()
        .reason
        .starts_with("Insufficient Node information"));

    // Three zones, two endpoints.
    let three = || {
        vec![
            hinted_service(),
            node("node-a", Some("zone-a"), "4"),
            node("node-b", Some("zone-b"), "4"),
            node("node-c", Some("zone-c"), "8"),
        ]
    };
    let mut objects = three();
    objects.extend(pods_in(&[("node-a", 1), ("node-b", 1)]));
    let e = explain_web_with(&mut objects, &default_flags()).await;
    let h = e.hints.as_ref().unwrap();
    assert!(
        h.reason
            .starts_with("Insufficient number of endpoints (2 endpoints, 3 zones)"),
        "{h:?}"
    );
    let shares: Vec<(String, usize, Option<f64>)> = h
        .zones
        .iter()
        .map(|z| (z.zone.clone(), z.ready_endpoints, z.cpu_share))
        .collect();
    assert_eq!(
        shares,
        [
            ("zone-a".to_owned(), 1, Some(0.25)),
            ("zone-b".to_owned(), 1, Some(0.25)),
            ("zone-c".to_owned(), 0, Some(0.5)),
        ]
    );
    // No allocation, no bounds: the JSON leaves them out.
    assert!(json_of(&e)["hints"]["zones"][2].get("minimum").is_none());
    assert_text_has(
        &e,
        &[
            "zone zone-c: 0 ready endpoint(s), 0 hinted, 50.0% of the CPU",
            "event: Warning TopologyAwareHintsDisabled: Insufficient number of endpoints",
        ],
    );

    // Five endpoints over shares of 1/4, 1/4 and 1/2: the zones' minimums (2, 2 and 3) add
    // up to more than five.
    let mut objects = three();
    objects.extend(pods_in(&[("node-a", 3), ("node-b", 2)]));
    let e = explain_web_with(&mut objects, &default_flags()).await;
    let h = e.hints.as_ref().unwrap();
    assert!(!h.written);
    assert!(
        h.reason.starts_with(
            "Unable to allocate minimum required endpoints to each zone without exceeding \
             overload threshold (5 endpoints, 3 zones)"
        ),
        "{h:?}"
    );

    // Eight endpoints, all in the small zones: zone-c, with half the CPU, takes exactly four.
    let mut objects = three();
    objects.extend(pods_in(&[("node-a", 4), ("node-b", 4)]));
    let e = explain_web_with(&mut objects, &default_flags()).await;
    let h = e.hints.as_ref().unwrap();
    assert!(h.written, "{h:?}");
    let zone_c = h.zones.iter().find(|z| z.zone == "zone-c").unwrap();
    assert_eq!(
        zone_c.allowed,
        Some(HintBounds {
            minimum: 4,
            maximum: 4
        })
    );
    // The JSON carries the bounds as the zone's own `minimum` and `maximum`.
    let zones = &json_of(&e)["hints"]["zones"];
    assert_eq!(
        (&zones[2]["minimum"], &zones[2]["maximum"]),
        (&json!(4), &json!(4))
    );
    assert_eq!(zone_c.hinted_endpoints, 4);

    // trafficDistribution: each endpoint hints its own zone.
    let mut objects = vec![service(json!({"trafficDistribution": "PreferClose"}))];
    objects.extend(pods_in(&[("node-a", 2)]));
    let e = explain_web(objects).await;
    let h = e.hints.as_ref().unwrap();
    assert_eq!(h.mode, "trafficDistribution PreferClose");
    assert!(h.written);
    assert_eq!(h.zones[0].hinted_endpoints, 2);
}

#[tokio::test]
async fn an_endpoints_object_over_capacity_names_the_dropped_addresses() {
    let mut objects = vec![service(json!({}))];
    for n in 0..1002 {
        let ip = format!("10.0.{}.{}", n / 250, n % 250 + 1);
        objects.push(pod(&format!("web-{n:04}"), &ip, json!({})));
    }
    let e = explain_web(objects).await;
    let t = e.truncation.as_ref().expect("truncated");
    assert_eq!((t.offered, t.kept, t.dropped.len()), (1002, 1000, 2));
    let dropped_pods: Vec<&str> = e
        .pods
        .iter()
        .filter(|p| p.endpoints == "none")
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(dropped_pods.len(), 2);
    for pod in &dropped_pods {
        assert!(
            t.dropped.iter().any(|d| d.ends_with(&format!("({pod})"))),
            "{t:?}"
        );
        let p = e.pods.iter().find(|p| p.name == *pod).unwrap();
        assert!(p
            .endpoints_note
            .as_deref()
            .unwrap()
            .contains("truncated to 1000"));
    }
    assert_text_has(&e, &["Endpoints truncated: 1000 of 1002 address(es) kept"]);
    // The table says it once above the pods, and on each dropped pod's line.
    let wide = render(&e, Output::Wide).unwrap();
    assert!(
        wide.contains(
            "Truncated:         the Endpoints object keeps 1000 of 1002 address(es), 2 dropped"
        ),
        "{wide}"
    );
    for pod in &dropped_pods {
        let line = wide.lines().find(|l| l.starts_with(pod)).unwrap();
        assert!(
            line.contains("   truncated   ")
                && line.ends_with("dropped from the Endpoints object: over capacity"),
            "{line}"
        );
    }
}

#[tokio::test]
async fn an_unknown_service_is_refused_with_close_names() {
    let snapshot = Snapshot::from_objects(vec![namespace(), service(json!({}))]);
    let err = find_service(&snapshot, "default/wbe")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "Service default/wbe not found; did you mean default/web?"
    );
    let err = find_service(&snapshot, "default/zzzzzz")
        .unwrap_err()
        .to_string();
    assert_eq!(err, "Service default/zzzzzz not found");
}

#[tokio::test]
async fn the_corpus_check_notices_a_wrong_ready_condition() {
    let e = explain_web(web_and_its_pod()).await;
    let upstream = |ready: bool| {
        json!({"endpointslices": [{
            "metadata": {"namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": ready},
                           "targetRef": {"kind": "Pod", "name": "web-1"}}]
        }]})
    };
    assert!(corpus::disagreements(std::slice::from_ref(&e), &upstream(true)).is_empty());
    let lines = corpus::disagreements(std::slice::from_ref(&e), &upstream(false));
    assert_eq!(lines.len(), 1, "{lines:?}");
    let lines = corpus::disagreements(std::slice::from_ref(&e), &json!({"endpointslices": []}));
    assert!(
        lines[0].contains("upstream has it in no slice"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn what_the_cluster_holds_is_compared_with_the_plan_each_side_named() {
    let slice = Object::EndpointSlice(
        serde_json::from_value(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": "web-old", "namespace": "default",
                "labels": {
                    "kubernetes.io/service-name": "web",
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"
                }
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": true}}]
        }))
        .unwrap(),
    );
    let mut objects = web_and_its_pod();
    objects.push(slice);
    let e = explain_web(objects).await;
    assert_eq!(e.as_written, Some(false));
    assert!(
        e.differences.iter().all(|d| d.starts_with("default/web ")),
        "{:?}",
        e.differences
    );
    let endpoints = e
        .differences
        .iter()
        .find(|d| d.contains(" EndpointSlices IPv4 ") && d.contains(" endpoints: "))
        .unwrap_or_else(|| panic!("{:?}", e.differences));
    assert!(
        endpoints.contains("only plan [{") && endpoints.contains("; only cluster [{"),
        "{endpoints}"
    );
    assert_text_has(
        &e,
        &["The cluster differs from what the controllers would write:\n  default/web "],
    );
}
