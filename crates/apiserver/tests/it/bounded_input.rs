//! What the server does with hostile request bodies: oversized ones get kube-apiserver's 413,
//! deeply nested ones a 400 before any parser runs, and nothing panics.

use apiserver::limits::{MAX_BODY_BYTES, MAX_NESTING};
use apiserver::{ApiServer, Config};
use serde_json::json;
use testkit::server::send;
use testkit::within;

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn body_over_3_mib_is_refused_with_413() {
    let server = ApiServer::new(Config::default());
    let pod = json!({
        "metadata": {"name": "big", "annotations": {"filler": "x".repeat(MAX_BODY_BYTES)}},
    });
    let (code, status) = within(
        "the create",
        send(&server, "POST", PODS, "application/json", pod.to_string()),
    )
    .await;
    assert_eq!(code, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        "Request entity too large: limit is 3145728"
    );
}

#[tokio::test]
async fn body_nested_200000_levels_deep_is_refused_before_parsing() {
    let server = ApiServer::new(Config::default());
    let depth = 200_000;
    let json_body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let yaml_body = format!("metadata: {}{}", "[".repeat(depth), "]".repeat(depth));
    let started = std::time::Instant::now();
    let (code, status) = within(
        "the create",
        send(&server, "POST", PODS, "application/json", json_body),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        format!("the request body is nested deeper than {MAX_NESTING} levels (at line 1)")
    );
    let (code, status) = within(
        "the apply",
        send(
            &server,
            "PATCH",
            &format!("{PODS}/deep"),
            "application/apply-patch+yaml",
            yaml_body,
        ),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    println!(
        "two bodies nested {depth} deep refused in {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn body_nested_within_the_limit_is_parsed() {
    let server = ApiServer::new(Config::default());
    // Annotations hold strings only, so a nested value there is a decoding error (400 from the
    // typed check), not a nesting one: the point is that the text reached the parser.
    let nested = format!("{}1{}", "[".repeat(50), "]".repeat(50));
    let body = format!(r#"{{"metadata": {{"name": "p", "annotations": {{"a": {nested}}}}}}}"#);
    let (code, status) = send(&server, "POST", PODS, "application/json", body).await;
    assert_eq!(code, 400, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(!message.contains("nested deeper"), "{message}");
}

// ---- property: mutated requests get an answer, never a panic or a 500 ----

mod mutated_requests {
    use apiserver::{ApiServer, Config};
    use proptest::prelude::*;
    use serde_json::{json, Value};
    use testkit::server::send;

    /// Valid objects of each kind the controllers use, with the collection they are posted to.
    fn seeds() -> Vec<(&'static str, Value)> {
        vec![
            (
                "/api/v1/namespaces/default/pods",
                json!({"metadata": {"name": "seed", "labels": {"app": "web"}},
                       "spec": {"hostname": "h", "nodeName": "n1", "containers": [{"name": "c", "image": "i",
                                "ports": [{"name": "http", "containerPort": 8080}]}]}}),
            ),
            (
                "/api/v1/namespaces/default/services",
                json!({"metadata": {"name": "seed"},
                       "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
            ),
            (
                "/api/v1/namespaces/default/endpoints",
                json!({"metadata": {"name": "seed"},
                       "subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}], "ports": [{"port": 8080}]}]}),
            ),
            (
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                json!({"metadata": {"name": "seed", "labels": {"kubernetes.io/service-name": "web"}},
                       "addressType": "IPv4",
                       "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                                      "hints": {"forZones": [{"name": "a"}]}}],
                       "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
            ),
            ("/api/v1/namespaces", json!({"metadata": {"name": "seed"}})),
        ]
    }

    const STRINGS: &[&str] = &[
        "",
        "None",
        "IP",
        "FQDN",
        "IPv6",
        "999.1.1.1",
        "::ffff:10.0.0.1",
        "010.0.0.1",
        "127.0.0.1",
        "fe80::1",
        "not-an-ip",
        "a.b",
        "-",
        "UPPER",
        "x/y/z",
        "http--x",
        "9223372036854775807",
        "\u{0}",
        "é",
        "TCP",
        "ICMP",
    ];

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-70_000i64..70_000).prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            prop::sample::select(STRINGS).prop_map(Value::from),
            "[ -~]{0,16}".prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-zA-Z]{1,10}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Every JSON pointer into `value`, the root included.
    fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    pointers(v, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    pointers(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }

    #[derive(Debug, Clone)]
    enum Change {
        /// Replace the value at one of the seed's pointers.
        Set(prop::sample::Index, Value),
        /// Add a field next to one.
        Add(prop::sample::Index, String, Value),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (any::<prop::sample::Index>(), value()).prop_map(|(i, v)| Change::Set(i, v)),
            (any::<prop::sample::Index>(), "[a-zA-Z]{1,12}", value())
                .prop_map(|(i, k, v)| Change::Add(i, k, v)),
        ]
    }

    fn mutate(mut object: Value, changes: &[Change]) -> Value {
        for change in changes {
            let mut all = Vec::new();
            pointers(&object, String::new(), &mut all);
            match change {
                Change::Set(i, v) => {
                    let at = &all[i.index(all.len())];
                    match object.pointer_mut(at) {
                        Some(slot) => *slot = v.clone(),
                        None => object = v.clone(),
                    }
                }
                Change::Add(i, k, v) => {
                    let at = &all[i.index(all.len())];
                    if let Some(Value::Object(map)) = object.pointer_mut(at) {
                        map.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        object
    }

    #[derive(Debug, Clone, Copy)]
    enum Verb {
        Create,
        Replace,
        MergePatch,
        StrategicPatch,
        Apply,
    }

    fn verb() -> impl Strategy<Value = Verb> {
        prop_oneof![
            Just(Verb::Create),
            Just(Verb::Replace),
            Just(Verb::MergePatch),
            Just(Verb::StrategicPatch),
            Just(Verb::Apply),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn mutated_writes_are_answered_with_an_object_or_a_status(
            seed in any::<prop::sample::Index>(),
            changes in prop::collection::vec(change(), 1..5),
            verb in verb(),
            cut in prop::option::weighted(0.1, any::<prop::sample::Index>()),
        ) {
            let seeds = seeds();
            let (collection, object) = seeds[seed.index(seeds.len())].clone();
            let mutated = mutate(object.clone(), &changes);
            let mut body = mutated.to_string();
            if let Some(cut) = cut {
                // Some bodies also end mid-way, as a broken client would send them.
                let mut at = cut.index(body.len() + 1);
                while !body.is_char_boundary(at) {
                    at -= 1;
                }
                body.truncate(at);
            }
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let (code, answer) = runtime.block_on(async {
                let server = ApiServer::new(Config::default());
                let existing = format!("{collection}/seed");
                let (created, _) = send(&server, "POST", collection, "application/json", object.to_string()).await;
                // The seed namespace is taken by nothing, but "seed" is a valid name for all.
                assert!(created == 201, "seed create answered {created}");
                match verb {
                    Verb::Create => send(&server, "POST", collection, "application/json", body).await,
                    Verb::Replace => send(&server, "PUT", &existing, "application/json", body).await,
                    Verb::MergePatch => send(&server, "PATCH", &existing, "application/merge-patch+json", body).await,
                    Verb::StrategicPatch => send(&server, "PATCH", &existing, "application/strategic-merge-patch+json", body).await,
                    Verb::Apply => send(&server, "PATCH", &existing, "application/apply-patch+yaml", body).await,
                }
            });
            prop_assert!(
                matches!(code, 200 | 201 | 400 | 404 | 409 | 413 | 415 | 422),
                "{verb:?} answered {code}: {answer}"
            );
            if code >= 400 {
                prop_assert_eq!(&answer["kind"], "Status", "{}", answer);
                prop_assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", answer);
            }
        }
    }
}
