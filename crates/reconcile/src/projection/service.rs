use crate::keys::ServiceKey;
use crate::Timestamp;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// A service port's `targetPort`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetPort {
    /// A port number, used as is.
    Number(i32),
    /// A container port name, resolved per pod.
    Name(String),
}

/// One entry of `spec.ports`, with the API server's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePortInfo {
    /// Port name.
    pub name: String,
    /// Protocol (TCP when unset).
    pub protocol: String,
    /// The service port number.
    pub port: i32,
    /// Where traffic goes on the pod (the port number when unset).
    pub target_port: TargetPort,
    /// `appProtocol`, copied to endpoints.
    pub app_protocol: Option<String>,
}

/// The fields of a Service that the two controllers read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceInfo {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, for owner references.
    pub uid: String,
    /// Labels, mirrored onto Endpoints and slices.
    pub labels: BTreeMap<String, String>,
    /// Annotations (topology mode).
    pub annotations: BTreeMap<String, String>,
    /// `spec.selector`; `None` for no selector (an empty map counts as none).
    pub selector: Option<BTreeMap<String, String>>,
    /// `spec.type`.
    pub type_: String,
    /// `spec.clusterIP` ("" when unset, "None" when headless).
    pub cluster_ip: String,
    /// `spec.ipFamilies`.
    pub ip_families: Vec<String>,
    /// `spec.ports`.
    pub ports: Vec<ServicePortInfo>,
    /// `spec.publishNotReadyAddresses`.
    pub publish_not_ready_addresses: bool,
    /// `spec.trafficDistribution`.
    pub traffic_distribution: Option<String>,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Timestamp>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl ServiceInfo {
    /// Projects a full Service. Returns `None` without namespace or name.
    pub fn from_service(service: &Service) -> Option<Self> {
        let meta = &service.metadata;
        let namespace = meta.namespace.clone().filter(|n| !n.is_empty())?;
        let name = meta.name.clone().filter(|n| !n.is_empty())?;
        let spec = service.spec.clone().unwrap_or_default();
        let ports = spec
            .ports
            .unwrap_or_default()
            .into_iter()
            .map(|p| ServicePortInfo {
                name: p.name.unwrap_or_default(),
                protocol: p.protocol.unwrap_or_else(|| "TCP".to_owned()),
                port: p.port,
                target_port: match p.target_port {
                    Some(IntOrString::Int(n)) => TargetPort::Number(n),
                    Some(IntOrString::String(s)) => match s.parse::<i32>() {
                        // An all-digit string targetPort is a number to the API machinery.
                        Ok(n) => TargetPort::Number(n),
                        Err(_) => TargetPort::Name(s),
                    },
                    None => TargetPort::Number(p.port),
                },
                app_protocol: p.app_protocol,
            })
            .collect();
        Some(Self {
            namespace,
            name,
            uid: meta.uid.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            annotations: meta.annotations.clone().unwrap_or_default(),
            selector: spec.selector.filter(|s| !s.is_empty()),
            type_: spec.type_.unwrap_or_else(|| "ClusterIP".to_owned()),
            cluster_ip: spec.cluster_ip.unwrap_or_default(),
            ip_families: spec.ip_families.unwrap_or_default(),
            ports,
            publish_not_ready_addresses: spec.publish_not_ready_addresses.unwrap_or(false),
            traffic_distribution: spec.traffic_distribution,
            creation_timestamp: meta.creation_timestamp.as_ref().map(|t| t.0),
            deleting: meta.deletion_timestamp.is_some(),
        })
    }

    /// The service's key.
    pub fn key(&self) -> ServiceKey {
        ServiceKey::new(&self.namespace, &self.name)
    }

    /// True when a ClusterIP is set (neither empty nor `None`).
    pub fn is_ip_set(&self) -> bool {
        !self.cluster_ip.is_empty() && self.cluster_ip != "None"
    }

    /// True when the controllers write nothing for this service: ExternalName services and
    /// services without a selector get their endpoints from elsewhere.
    pub fn is_skipped(&self) -> bool {
        self.type_ == "ExternalName" || self.selector.is_none()
    }
}
