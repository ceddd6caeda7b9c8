//! The server refuses what kube-apiserver's validation refuses, for the fields the
//! controllers read or write, with a 422 `Invalid` Status whose causes name the field. One test
//! per rule; each sends raw requests, so that values a typed client would never produce can be
//! sent too.

use apiserver::{ApiServer, Config};
use serde_json::{json, Value};
use testkit::server::send_json;
use testkit::within;

const PODS: &str = "/api/v1/namespaces/default/pods";
const SERVICES: &str = "/api/v1/namespaces/default/services";
const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
const NAMESPACES: &str = "/api/v1/namespaces";

fn server() -> ApiServer {
    ApiServer::new(Config::default())
}

/// Sends a request that must be refused as invalid; returns the Status.
async fn invalid(server: &ApiServer, method: &str, path: &str, body: Value) -> Value {
    let (code, status) = within(path, send_json(server, method, path, &body)).await;
    assert_eq!(code, 422, "{method} {path} answered {status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    status
}

/// Sends a request that must succeed; returns the object.
async fn accepted(server: &ApiServer, method: &str, path: &str, body: Value) -> Value {
    let (code, object) = within(path, send_json(server, method, path, &body)).await;
    assert!(
        (200..300).contains(&code),
        "{method} {path} answered {code}: {object}"
    );
    object
}

/// The causes of a Status as `(field, message)`.
fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Asserts that some cause is at `field` and its message contains `text`.
fn assert_cause(status: &Value, field: &str, text: &str) {
    let causes = causes(status);
    assert!(
        causes.iter().any(|(f, m)| f == field && m.contains(text)),
        "no cause at {field} containing {text:?} in {causes:?}"
    );
}

fn pod(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 8080, "name": "http"}]}]},
    })
}

fn service(name: &str, port: i64) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": port, "targetPort": 8080}]},
    })
}

fn slice(name: &str, address_type: &str, addresses: &[&str]) -> Value {
    json!({
        "metadata": {"name": name},
        "addressType": address_type,
        "endpoints": [{"addresses": addresses}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}

fn endpoints(name: &str, ip: &str, port: i64) -> Value {
    json!({
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": port}]}],
    })
}

/// `body` with the field or list item at the JSON pointer `at` set to `value`.
fn with(mut body: Value, at: &str, value: Value) -> Value {
    let (parent, field) = at.rsplit_once('/').unwrap();
    match body.pointer_mut(parent) {
        Some(Value::Array(items)) => items[field.parse::<usize>().unwrap()] = value,
        Some(parent) => parent[field] = value,
        None => panic!("no {parent} in {body}"),
    }
    body
}

/// One test per create the server must refuse: the test, the collection path and the body
/// POSTed there, then the field of one of the causes and a part of its message; and, for some,
/// a close body the server accepts after all.
macro_rules! refused_creates {
    ($($test:ident: $path:expr, $body:expr => $field:literal, $text:expr $(, then accepts $good:expr)?;)*) => {$(
        #[tokio::test]
        async fn $test() {
            let server = server();
            let status = invalid(&server, "POST", $path, $body).await;
            assert_cause(&status, $field, $text);
            $(accepted(&server, "POST", $path, $good).await;)?
        }
    )*};
}

refused_creates! {
    // IPs
    endpoints_address_that_is_not_an_ip_is_rejected: ENDPOINTS, endpoints("web", "not-an-ip", 8080) => "subsets[0].addresses[0].ip", "must be a valid IP address";
    endpoints_address_in_the_loopback_range_is_rejected: ENDPOINTS, endpoints("web", "127.0.0.1", 8080) => "subsets[0].addresses[0].ip", "may not be in the loopback range (127.0.0.0/8, ::1/128)";
    ipv6_slice_address_must_be_an_ipv6_address: SLICES, slice("s", "IPv6", &["10.0.0.1"]) => "endpoints[0].addresses[0]", "must be a valid IPv6 address", then accepts slice("s", "IPv6", &["fd00::1"]);
    fqdn_slice_address_must_be_a_domain_name: SLICES, slice("s", "FQDN", &["under_score.example.com"]) => "endpoints[0].addresses[0]", "a lowercase RFC 1123 subdomain", then accepts slice("s", "FQDN", &["db.example.com"]);
    slice_ip_address_in_the_link_local_range_is_rejected: SLICES, slice("s", "IPv4", &["169.254.0.9"]) => "endpoints[0].addresses[0]", "may not be in the link-local range";
    // ports
    service_target_port_number_outside_1_to_65535_is_rejected: SERVICES, with(service("web", 80), "/spec/ports/0/targetPort", json!(70000)) => "spec.ports[0].targetPort", "must be between 1 and 65535, inclusive";
    service_target_port_name_must_be_a_port_name: SERVICES, with(service("web", 80), "/spec/ports/0/targetPort", json!("no--way")) => "spec.ports[0].targetPort", "must not contain consecutive hyphens";
    service_with_several_ports_needs_port_names: SERVICES, with(service("web", 80), "/spec/ports", json!([{"port": 80, "name": "http"}, {"port": 443}])) => "spec.ports[1].name", "Required value";
    container_port_outside_1_to_65535_is_rejected: PODS, with(pod("web-1"), "/spec/containers/0/ports/0/containerPort", json!(70000)) => "spec.containers[0].ports[0].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive";
    endpoints_port_outside_1_to_65535_is_rejected: ENDPOINTS, endpoints("web", "10.0.0.1", 0) => "subsets[0].ports[0].port", "must be between 1 and 65535, inclusive";
    slice_port_with_an_unknown_protocol_is_rejected: SLICES, with(slice("s", "IPv4", &["10.0.0.1"]), "/ports/0/protocol", json!("ICMP")) => "ports[0].protocol", "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"";
    // names and labels
    namespace_name_longer_than_63_characters_is_rejected: NAMESPACES, json!({"metadata": {"name": "n".repeat(64)}}) => "metadata.name", "must be no more than 63 characters", then accepts json!({"metadata": {"name": "n".repeat(63)}});
    namespace_name_with_dots_is_rejected: NAMESPACES, json!({"metadata": {"name": "team.a"}}) => "metadata.name", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'";
    service_name_must_start_with_a_letter: SERVICES, service("1web", 80) => "metadata.name", "a DNS-1035 label";
    label_value_with_invalid_syntax_is_rejected: PODS, with(pod("web-1"), "/metadata/labels", json!({"app": "-web"})) => "metadata.labels", "Invalid value: \"-web\": a valid label must be an empty string";
    service_selector_is_checked_like_labels: SERVICES, with(service("web", 80), "/spec/selector", json!({"app": "x".repeat(64)})) => "spec.selector", "must be no more than 63 characters";
    // EndpointSlice shape
    endpoint_without_addresses_is_rejected: SLICES, slice("s", "IPv4", &[]) => "endpoints[0].addresses", "Required value: must contain at least 1 address";
}

// ---- IPs ----

#[tokio::test]
async fn pod_ip_that_is_not_an_ip_is_rejected_and_the_pod_keeps_its_status() {
    let server = server();
    accepted(&server, "POST", PODS, pod("web-1")).await;
    let status_path = format!("{PODS}/web-1/status");
    let status = invalid(
        &server,
        "PATCH",
        &status_path,
        json!({"status": {"podIP": "not-an-ip"}}),
    )
    .await;
    assert_cause(
        &status,
        "status.podIPs[0]",
        "Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
    );
    let (_, stored) = send_json(&server, "GET", &format!("{PODS}/web-1"), &Value::Null).await;
    assert!(stored["status"].get("podIP").is_none(), "{stored}");
}

#[tokio::test]
async fn pod_with_two_ips_of_one_family_is_rejected() {
    let server = server();
    accepted(&server, "POST", PODS, pod("web-1")).await;
    let status = invalid(
        &server,
        "PATCH",
        &format!("{PODS}/web-1/status"),
        json!({"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}}),
    )
    .await;
    assert_cause(
        &status,
        "status.podIPs",
        "may specify no more than one IP for each IP family",
    );
    accepted(
        &server,
        "PATCH",
        &format!("{PODS}/web-1/status"),
        json!({"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}}),
    )
    .await;
}

#[tokio::test]
async fn service_cluster_ip_that_is_not_an_ip_is_rejected() {
    let server = server();
    let body = with(service("web", 80), "/spec/clusterIP", json!("999.1.1.1"));
    let status = invalid(&server, "POST", SERVICES, body).await;
    assert_eq!(
        status["message"],
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: \"999.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    );
    assert_eq!(status["details"]["kind"], "Service");
    assert_eq!(status["details"]["name"], "web");
}

#[tokio::test]
async fn headless_and_allocated_cluster_ips_are_accepted() {
    let server = server();
    let headless = with(service("headless", 80), "/spec/clusterIP", json!("None"));
    let stored = accepted(&server, "POST", SERVICES, headless).await;
    assert_eq!(stored["spec"]["clusterIPs"], json!(["None"]));
    let stored = accepted(&server, "POST", SERVICES, service("allocated", 80)).await;
    assert!(stored["spec"]["clusterIP"]
        .as_str()
        .is_some_and(|ip| ip != "None"));
}

#[tokio::test]
async fn ipv4_slice_address_must_be_a_dotted_quad() {
    let server = server();
    for bad in ["10.0.0", "fd00::1", "not-an-ip"] {
        let status = invalid(&server, "POST", SLICES, slice("s", "IPv4", &[bad])).await;
        assert_cause(
            &status,
            "endpoints[0].addresses[0]",
            "must be a valid IPv4 address",
        );
    }
    accepted(&server, "POST", SLICES, slice("s", "IPv4", &["10.0.0.1"])).await;
}

// ---- ports ----

#[tokio::test]
async fn service_port_above_65535_is_rejected() {
    let server = server();
    let status = invalid(&server, "POST", SERVICES, service("web", 70000)).await;
    assert_eq!(
        causes(&status),
        [(
            "spec.ports[0].port".to_owned(),
            "Invalid value: 70000: must be between 1 and 65535, inclusive".to_owned()
        )]
    );
}

// ---- names and labels ----

#[tokio::test]
async fn pod_name_may_hold_dots_but_no_capitals() {
    let server = server();
    accepted(&server, "POST", PODS, pod("web.v1")).await;
    let status = invalid(&server, "POST", PODS, pod("Web")).await;
    assert_cause(&status, "metadata.name", "a lowercase RFC 1123 subdomain");
}

#[tokio::test]
async fn label_key_with_invalid_syntax_is_rejected() {
    let server = server();
    for key in ["bad key", "Example.com/app", "a/b/c", "/app"] {
        let mut body = pod("web-1");
        body["metadata"]["labels"] = json!({ key: "x" });
        let status = invalid(&server, "POST", PODS, body).await;
        assert_cause(&status, "metadata.labels", key);
    }
}

// ---- EndpointSlice shape ----

#[tokio::test]
async fn slice_address_type_outside_ipv4_ipv6_fqdn_is_rejected() {
    let server = server();
    for bad in ["bogus", "IP"] {
        let status = invalid(&server, "POST", SLICES, slice("s", bad, &["10.0.0.1"])).await;
        assert_eq!(
            status["message"],
            format!("EndpointSlice.discovery.k8s.io \"s\" is invalid: addressType: Unsupported value: \"{bad}\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"")
        );
        assert_eq!(status["details"]["group"], "discovery.k8s.io");
        assert_eq!(status["details"]["kind"], "EndpointSlice");
    }
}

#[tokio::test]
async fn slice_address_type_cannot_change() {
    let server = server();
    let created = accepted(&server, "POST", SLICES, slice("s", "IPv4", &["10.0.0.1"])).await;
    let mut changed = created.clone();
    changed["addressType"] = json!("IPv6");
    changed["endpoints"] = json!([{"addresses": ["fd00::1"]}]);
    let status = invalid(&server, "PUT", &format!("{SLICES}/s"), changed).await;
    assert_cause(&status, "addressType", "field is immutable");
}

#[tokio::test]
async fn slice_with_more_than_1000_endpoints_is_rejected() {
    let server = server();
    let endpoints = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"addresses": [format!("10.0.{}.{}", i / 250, i % 250 + 1)]}))
            .collect()
    };
    let mut body = slice("s", "IPv4", &["10.0.0.1"]);
    body["endpoints"] = json!(endpoints(1001));
    let status = invalid(&server, "POST", SLICES, body.clone()).await;
    assert_eq!(
        causes(&status),
        [(
            "endpoints".to_owned(),
            "Too many: 1001: must have at most 1000 items".to_owned()
        )]
    );
    body["endpoints"] = json!(endpoints(1000));
    accepted(&server, "POST", SLICES, body).await;
}

#[tokio::test]
async fn endpoint_with_more_than_100_addresses_is_rejected() {
    let server = server();
    let addresses: Vec<String> = (1..=101).map(|i| format!("10.0.1.{i}")).collect();
    let addresses: Vec<&str> = addresses.iter().map(String::as_str).collect();
    let status = invalid(&server, "POST", SLICES, slice("s", "IPv4", &addresses)).await;
    assert_cause(
        &status,
        "endpoints[0].addresses",
        "Too many: 101: must have at most 100 items",
    );
}

// ---- updates ----

#[tokio::test]
async fn put_of_null_metadata_is_rejected_and_leaves_the_object_alone() {
    let server = server();
    accepted(&server, "POST", PODS, pod("web-1")).await;
    let path = format!("{PODS}/web-1");
    let (code, status) = send_json(&server, "PUT", &path, &json!({"metadata": null})).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "the name of the object () does not match the name on the URL (web-1)"
    );
    let (_, stored) = send_json(&server, "GET", &path, &Value::Null).await;
    assert_eq!(stored["metadata"]["labels"]["app"], "web");
    assert_eq!(stored["spec"]["containers"][0]["name"], "c");
}

#[tokio::test]
async fn put_without_a_name_is_rejected() {
    let server = server();
    accepted(&server, "POST", SERVICES, service("web", 80)).await;
    let mut body = service("web", 81);
    body["metadata"] = json!({"labels": {"a": "b"}});
    let (code, status) = send_json(&server, "PUT", &format!("{SERVICES}/web"), &body).await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
}

#[tokio::test]
async fn pod_spec_cannot_change_on_update_except_images() {
    let server = server();
    let created = accepted(&server, "POST", PODS, pod("web-1")).await;
    let path = format!("{PODS}/web-1");
    let mut ports_changed = created.clone();
    ports_changed["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(9090);
    let status = invalid(&server, "PUT", &path, ports_changed).await;
    assert_cause(
        &status,
        "spec",
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`",
    );
    let mut image_changed = created;
    image_changed["spec"]["containers"][0]["image"] = json!("nginx:2");
    accepted(&server, "PUT", &path, image_changed).await;
}

#[tokio::test]
async fn patch_that_makes_an_object_invalid_is_rejected() {
    let server = server();
    accepted(&server, "POST", SERVICES, service("web", 80)).await;
    let path = format!("{SERVICES}/web");
    let status = invalid(
        &server,
        "PATCH",
        &path,
        json!({"spec": {"ports": [{"port": 70000}]}}),
    )
    .await;
    assert_cause(&status, "spec.ports[0].port", "70000");
    let (_, stored) = send_json(&server, "GET", &path, &Value::Null).await;
    assert_eq!(stored["spec"]["ports"][0]["port"], 80);
}

#[tokio::test]
async fn several_errors_are_listed_together_in_the_message() {
    let server = server();
    let mut body = service("web", 0);
    body["spec"]["ports"][0]["protocol"] = json!("ICMP");
    let status = invalid(&server, "POST", SERVICES, body).await;
    assert_eq!(causes(&status).len(), 2);
    assert_eq!(
        status["message"],
        "Service \"web\" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"]"
    );
}

#[tokio::test]
async fn loading_an_invalid_object_fails_naming_it() {
    let server = server();
    let mut service = service("web", 70000);
    service["apiVersion"] = json!("v1");
    service["kind"] = json!("Service");
    let err = server.apply_objects(vec![service]).unwrap_err();
    assert_eq!(err.to_string(), "loading Service default/web failed");
    let source = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        source.is_some_and(|s| s.contains("spec.ports[0].port")),
        "{err:?}"
    );
}
