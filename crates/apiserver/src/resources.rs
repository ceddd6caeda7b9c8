//! The catalogue of resource types the server serves, and the typed view of each.
//!
//! Objects are stored as JSON, but every write passes through the matching k8s-openapi type
//! once. That rejects bodies of the wrong shape with a 400, drops unknown fields the way the
//! real API server prunes them, and makes what clients read back decode cleanly.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// When a write bumps `metadata.generation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationRule {
    /// The kind carries no generation.
    None,
    /// Generation starts at 1 and bumps when `spec` changes.
    Spec,
    /// Generation starts at 1 and bumps when anything outside `metadata` changes
    /// (EndpointSlices, which have no `spec`).
    AllButMetadata,
}

/// One served resource type.
#[derive(Debug)]
pub struct Resource {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// API version within the group.
    pub version: &'static str,
    /// Plural name used in paths, e.g. `pods`.
    pub plural: &'static str,
    /// Singular name, e.g. `pod`.
    pub singular: &'static str,
    /// Kind, e.g. `Pod`.
    pub kind: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names kubectl accepts, e.g. `po`.
    pub short_names: &'static [&'static str],
    /// Whether the resource has a `/status` subresource (the main resource then ignores status).
    pub status: bool,
    /// How `metadata.generation` is kept.
    pub generation: GenerationRule,
    /// Whether a PUT to a missing object creates it, as the real server allows for these kinds.
    pub create_on_update: bool,
}

/// Every resource the server serves, grouped by API group in discovery order.
pub static RESOURCES: &[Resource] = &[
    Resource {
        group: "",
        version: "v1",
        plural: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        short_names: &["ns"],
        status: true,
        generation: GenerationRule::None,
        create_on_update: false,
    },
    Resource {
        group: "",
        version: "v1",
        plural: "nodes",
        singular: "node",
        kind: "Node",
        namespaced: false,
        short_names: &["no"],
        status: true,
        generation: GenerationRule::None,
        create_on_update: false,
    },
    Resource {
        group: "",
        version: "v1",
        plural: "pods",
        singular: "pod",
        kind: "Pod",
        namespaced: true,
        short_names: &["po"],
        status: true,
        generation: GenerationRule::None,
        create_on_update: false,
    },
    Resource {
        group: "",
        version: "v1",
        plural: "services",
        singular: "service",
        kind: "Service",
        namespaced: true,
        short_names: &["svc"],
        status: true,
        generation: GenerationRule::Spec,
        create_on_update: false,
    },
    Resource {
        group: "",
        version: "v1",
        plural: "endpoints",
        singular: "endpoints",
        kind: "Endpoints",
        namespaced: true,
        short_names: &["ep"],
        status: false,
        generation: GenerationRule::None,
        create_on_update: true,
    },
    Resource {
        group: "",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        status: false,
        generation: GenerationRule::None,
        create_on_update: true,
    },
    Resource {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        namespaced: true,
        short_names: &["sa"],
        status: false,
        generation: GenerationRule::None,
        create_on_update: false,
    },
    Resource {
        group: "discovery.k8s.io",
        version: "v1",
        plural: "endpointslices",
        singular: "endpointslice",
        kind: "EndpointSlice",
        namespaced: true,
        short_names: &[],
        status: false,
        generation: GenerationRule::AllButMetadata,
        create_on_update: false,
    },
    Resource {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        status: false,
        generation: GenerationRule::None,
        create_on_update: true,
    },
    Resource {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        singular: "lease",
        kind: "Lease",
        namespaced: true,
        short_names: &[],
        status: false,
        generation: GenerationRule::None,
        create_on_update: true,
    },
];

impl Resource {
    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The name used in messages and fault rules: `pods`, `endpointslices.discovery.k8s.io`.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether the resource has the `token` subresource (TokenRequest): only ServiceAccounts.
    pub fn has_token(&self) -> bool {
        self.group.is_empty() && self.kind == "ServiceAccount"
    }

    /// Passes an object through its k8s-openapi type, which checks its shape and sets
    /// `apiVersion` and `kind`. Returns the serde message on a body of the wrong shape.
    pub(crate) fn normalize(&self, value: Value) -> Result<Value, String> {
        use k8s_openapi::api;
        match (self.group, self.kind) {
            ("", "Namespace") => roundtrip::<api::core::v1::Namespace>(value),
            ("", "Node") => roundtrip::<api::core::v1::Node>(value),
            ("", "Pod") => roundtrip::<api::core::v1::Pod>(value),
            ("", "Service") => roundtrip::<api::core::v1::Service>(value),
            ("", "Endpoints") => roundtrip::<api::core::v1::Endpoints>(value),
            ("", "Event") => roundtrip::<api::core::v1::Event>(value),
            ("", "ServiceAccount") => roundtrip::<api::core::v1::ServiceAccount>(value),
            ("discovery.k8s.io", _) => roundtrip::<api::discovery::v1::EndpointSlice>(value),
            ("events.k8s.io", _) => roundtrip::<api::events::v1::Event>(value),
            ("coordination.k8s.io", _) => roundtrip::<api::coordination::v1::Lease>(value),
            _ => Ok(value),
        }
    }
}

fn roundtrip<T: DeserializeOwned + Serialize>(value: Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(value).map_err(|e| e.to_string())?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// The `namespaces` resource, which the namespace lifecycle rules need by name.
pub fn namespaces() -> &'static Resource {
    &RESOURCES[0]
}

/// The `serviceaccounts` resource, whose tokens authenticate requests.
pub fn service_accounts() -> &'static Resource {
    find("", "v1", "serviceaccounts").expect("serviceaccounts is in RESOURCES")
}

/// Finds a resource by the group, version and plural of a request path.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Finds a resource by an object's `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static Resource> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// The groups served under `/apis`, in discovery order.
pub fn groups() -> Vec<&'static str> {
    let mut groups: Vec<&'static str> = Vec::new();
    for r in RESOURCES.iter().filter(|r| !r.group.is_empty()) {
        if !groups.contains(&r.group) {
            groups.push(r.group);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_is_the_first_resource() {
        assert_eq!(namespaces().plural, "namespaces");
    }

    #[test]
    fn service_accounts_alone_have_a_token_subresource() {
        assert_eq!(service_accounts().kind, "ServiceAccount");
        let with_token: Vec<_> = RESOURCES.iter().filter(|r| r.has_token()).collect();
        assert_eq!(with_token.len(), 1);
    }

    #[test]
    fn kinds_are_found_by_api_version() {
        assert_eq!(by_kind("v1", "Pod").map(|r| r.plural), Some("pods"));
        assert_eq!(
            by_kind("discovery.k8s.io/v1", "EndpointSlice").map(|r| r.plural),
            Some("endpointslices")
        );
        assert_eq!(
            by_kind("events.k8s.io/v1", "Event").map(|r| r.group),
            Some("events.k8s.io")
        );
        assert!(by_kind("apps/v1", "Deployment").is_none());
    }

    #[test]
    fn normalize_sets_type_fields_and_rejects_wrong_shapes() {
        let pods = find("", "v1", "pods").unwrap();
        let pod = pods
            .normalize(serde_json::json!({"metadata": {"name": "a"}, "junk": 1}))
            .unwrap();
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["apiVersion"], "v1");
        assert!(pod.get("junk").is_none());
        assert!(pods
            .normalize(serde_json::json!({"spec": {"containers": 3}}))
            .is_err());
    }
}
