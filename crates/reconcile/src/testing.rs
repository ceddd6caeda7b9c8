//! Builders for tests: `pod("a").ip("10.0.0.1").ready(true).build()` and friends.
//! Shared by this crate's tests and, through the `testing` feature, by the other crates.

use crate::projection::{NamedPort, NodeInfo, PodInfo, ServiceInfo, ServicePortInfo, TargetPort};
use crate::Timestamp;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

/// A label map (or selector) from pairs.
pub fn label_map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Decodes an API object from the text of `value`, as the informer decodes what the API server
/// sends: lists grown as they are read, not sized exactly as `serde_json::from_value` leaves
/// them. Panics when the literal does not decode (tests only).
pub fn decoded<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_str(&value.to_string()).expect("test object literal")
}

/// Parses an RFC 3339 timestamp; panics on a bad literal (tests only).
pub fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamp literal")
}

/// Starts a pod in namespace `default`, uid `uid-<name>`, on node `node-a`, not ready.
pub fn pod(name: &str) -> PodBuilder {
    PodBuilder(PodInfo {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}").into(),
        node_name: "node-a".into(),
        ..Default::default()
    })
}

/// Builder for [`PodInfo`].
#[derive(Debug, Clone)]
pub struct PodBuilder(PodInfo);

impl PodBuilder {
    /// Sets the namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.0.namespace = ns.into();
        self
    }
    /// Appends a pod IP (the first also becomes `podIP`).
    pub fn ip(mut self, ip: &str) -> Self {
        if self.0.ips.is_empty() {
            self.0.pod_ip_v6 = crate::ip::is_ipv6(ip);
        }
        let mut ips = std::mem::take(&mut self.0.ips).into_vec();
        ips.push(ip.into());
        self.0.ips = ips.into_boxed_slice();
        self
    }
    /// Sets readiness.
    pub fn ready(mut self, ready: bool) -> Self {
        self.0.ready = ready;
        self
    }
    /// Sets the Ready condition's transition time.
    pub fn ready_at(mut self, t: Timestamp) -> Self {
        self.0.ready_transition = crate::projection::TransitionTime::new(Some(t));
        self
    }
    /// Marks the pod as being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.deleting = true;
        self
    }
    /// Marks the pod Failed.
    pub fn failed(mut self) -> Self {
        self.0.terminal = true;
        self
    }
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.labels = std::mem::take(&mut self.0.labels).with(k, v);
        self
    }
    /// Sets hostname and subdomain.
    pub fn hostname(mut self, hostname: &str, subdomain: &str) -> Self {
        self.0.dns = crate::projection::PodDns::boxed(hostname.into(), subdomain.into());
        self
    }
    /// Sets the node.
    pub fn node(mut self, node: &str) -> Self {
        self.0.node_name = node.into();
        self
    }
    /// Appends a container port (in FindPort search order).
    pub fn port(mut self, name: &str, protocol: &str, port: i32) -> Self {
        let mut ports = self.0.ports.to_vec();
        ports.push(NamedPort {
            name: name.into(),
            protocol: protocol.into(),
            port,
        });
        self.0.ports = ports.into();
        self
    }
    /// Sets the uid.
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.uid = uid.into();
        self
    }
    /// Finishes.
    pub fn build(self) -> PodInfo {
        self.0
    }
}

/// Starts a ClusterIP IPv4 service in `default` selecting `app=<name>`, uid `uid-<name>`.
pub fn service(name: &str) -> ServiceBuilder {
    ServiceBuilder(ServiceInfo {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        selector: Some([("app".to_owned(), name.to_owned())].into()),
        type_: "ClusterIP".into(),
        cluster_ip: "10.96.0.10".into(),
        ip_families: vec!["IPv4".into()],
        ..Default::default()
    })
}

/// Builder for [`ServiceInfo`].
#[derive(Debug, Clone)]
pub struct ServiceBuilder(ServiceInfo);

impl ServiceBuilder {
    /// Sets the namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.0.namespace = ns.into();
        self
    }
    /// Sets the ClusterIP ("None" for headless).
    pub fn cluster_ip(mut self, ip: &str) -> Self {
        self.0.cluster_ip = ip.into();
        self
    }
    /// Sets ipFamilies.
    pub fn families(mut self, families: &[&str]) -> Self {
        self.0.ip_families = families.iter().map(|f| f.to_string()).collect();
        self
    }
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0.labels.insert(k.into(), v.into());
        self
    }
    /// Adds an annotation.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0.annotations.insert(k.into(), v.into());
        self
    }
    /// Adds a port.
    pub fn port(mut self, port: ServicePortBuilder) -> Self {
        self.0.ports.push(port.0);
        self
    }
    /// Sets publishNotReadyAddresses.
    pub fn publish_not_ready(mut self) -> Self {
        self.0.publish_not_ready_addresses = true;
        self
    }
    /// Sets trafficDistribution.
    pub fn traffic_distribution(mut self, v: &str) -> Self {
        self.0.traffic_distribution = Some(v.into());
        self
    }
    /// Sets the creation time.
    pub fn created(mut self, t: Timestamp) -> Self {
        self.0.creation_timestamp = Some(t);
        self
    }
    /// Marks the service as being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.deleting = true;
        self
    }
    /// Removes the selector (a Service whose Endpoints are written by hand).
    pub fn no_selector(mut self) -> Self {
        self.0.selector = None;
        self
    }
    /// Finishes.
    pub fn build(self) -> ServiceInfo {
        self.0
    }
}

/// Starts a TCP service port whose targetPort is the same number.
pub fn service_port(name: &str, port: i32) -> ServicePortBuilder {
    ServicePortBuilder(ServicePortInfo {
        name: name.into(),
        protocol: "TCP".into(),
        port,
        target_port: TargetPort::Number(port),
        app_protocol: None,
    })
}

/// Builder for [`ServicePortInfo`].
#[derive(Debug, Clone)]
pub struct ServicePortBuilder(pub ServicePortInfo);

impl ServicePortBuilder {
    /// Numeric targetPort.
    pub fn target(mut self, n: i32) -> Self {
        self.0.target_port = TargetPort::Number(n);
        self
    }
    /// Named targetPort.
    pub fn named(mut self, name: &str) -> Self {
        self.0.target_port = TargetPort::Name(name.into());
        self
    }
    /// Protocol.
    pub fn protocol(mut self, p: &str) -> Self {
        self.0.protocol = p.into();
        self
    }
    /// appProtocol.
    pub fn app_protocol(mut self, p: &str) -> Self {
        self.0.app_protocol = Some(p.into());
        self
    }
}

impl std::ops::Deref for ServicePortBuilder {
    type Target = ServicePortInfo;
    fn deref(&self) -> &ServicePortInfo {
        &self.0
    }
}

/// A ready node with a zone and CPU in millicores.
pub fn node(name: &str, zone: &str, cpu_millis: i64) -> NodeInfo {
    NodeInfo {
        name: name.into(),
        zone: (!zone.is_empty()).then(|| zone.to_owned()),
        ready: true,
        control_plane: false,
        cpu_millis,
    }
}

/// Starts a hand-written v1 Endpoints object in `default`, uid `uid-ep-<name>`, no subsets.
pub fn endpoints(name: &str) -> EndpointsBuilder {
    EndpointsBuilder(Endpoints {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-ep-{name}")),
            ..Default::default()
        },
        subsets: None,
    })
}

/// Builder for a v1 [`Endpoints`] object.
#[derive(Debug, Clone)]
pub struct EndpointsBuilder(Endpoints);

impl EndpointsBuilder {
    /// Adds a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        let labels = self.0.metadata.labels.get_or_insert_with(Default::default);
        labels.insert(k.into(), v.into());
        self
    }
    /// Adds an annotation.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        let annotations = self
            .0
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(k.into(), v.into());
        self
    }
    /// Sets the uid.
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.into());
        self
    }
    /// Marks the object as being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(ts("2026-01-01T00:00:00Z")));
        self
    }
    /// Appends a subset.
    pub fn subset(mut self, subset: SubsetBuilder) -> Self {
        self.0.subsets.get_or_insert_with(Vec::new).push(subset.0);
        self
    }
    /// Finishes.
    pub fn build(self) -> Endpoints {
        self.0
    }
}

/// The Service of the conformance case public-appprotocol-ports: three ports whose order
/// differs between the two hashes upstream has sorted them by (MD5 up to v1.34, FNV-128a
/// from v1.35), in slices and in Endpoints subsets alike.
pub fn three_port_service() -> ServiceInfo {
    service("web")
        .port(service_port("web", 443).target(8443).app_protocol("https"))
        .port(service_port("admin", 9000))
        .port(
            service_port("stream", 5000)
                .protocol("UDP")
                .app_protocol("kubernetes.io/ws"),
        )
        .build()
}

/// Starts an empty Endpoints subset.
pub fn subset() -> SubsetBuilder {
    SubsetBuilder(EndpointSubset::default())
}

/// Builder for an [`EndpointSubset`].
#[derive(Debug, Clone)]
pub struct SubsetBuilder(EndpointSubset);

impl SubsetBuilder {
    /// Appends a ready address with only an IP.
    pub fn ready(self, ip: &str) -> Self {
        self.ready_address(endpoint_address(ip))
    }
    /// Appends a not-ready address with only an IP.
    pub fn not_ready(self, ip: &str) -> Self {
        self.not_ready_address(endpoint_address(ip))
    }
    /// Appends a ready address.
    pub fn ready_address(mut self, address: EndpointAddress) -> Self {
        self.0.addresses.get_or_insert_with(Vec::new).push(address);
        self
    }
    /// Appends a not-ready address.
    pub fn not_ready_address(mut self, address: EndpointAddress) -> Self {
        self.0
            .not_ready_addresses
            .get_or_insert_with(Vec::new)
            .push(address);
        self
    }
    /// Appends a TCP port.
    pub fn port(mut self, name: &str, port: i32) -> Self {
        self.0
            .ports
            .get_or_insert_with(Vec::new)
            .push(EndpointPort {
                name: Some(name.into()),
                port,
                protocol: Some("TCP".into()),
                app_protocol: None,
            });
        self
    }
    /// Sets the appProtocol of the port added last.
    pub fn app_protocol(mut self, app_protocol: &str) -> Self {
        if let Some(port) = self.0.ports.as_mut().and_then(|p| p.last_mut()) {
            port.app_protocol = Some(app_protocol.into());
        }
        self
    }
}

impl SubsetBuilder {
    /// The subset's ports alone.
    pub fn build_ports(self) -> Vec<EndpointPort> {
        self.0.ports.unwrap_or_default()
    }
    /// Finishes.
    pub fn build(self) -> EndpointSubset {
        self.0
    }
}

/// An Endpoints address with only an IP.
pub fn endpoint_address(ip: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        ..Default::default()
    }
}
