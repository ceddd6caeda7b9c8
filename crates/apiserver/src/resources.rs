//! The catalogue of resource types the server serves, and the typed view of each.
//!
//! Objects are stored as JSON, but every write passes through the matching k8s-openapi type
//! once. That rejects bodies of the wrong shape with a 400, drops unknown fields the way the
//! real API server prunes them, and makes what clients read back decode cleanly.

use schemars::JsonSchema;
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
    Resource::v1("", "namespaces", "namespace", "Namespace", &["ns"])
        .cluster_scoped()
        .with_status(),
    Resource::v1("", "nodes", "node", "Node", &["no"])
        .cluster_scoped()
        .with_status(),
    Resource::v1("", "pods", "pod", "Pod", &["po"]).with_status(),
    Resource::v1("", "services", "service", "Service", &["svc"])
        .with_status()
        .generation(GenerationRule::Spec),
    Resource::v1("", "endpoints", "endpoints", "Endpoints", &["ep"]).created_by_put(),
    Resource::v1("", "events", "event", "Event", &["ev"]).created_by_put(),
    Resource::v1(
        "",
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        &["sa"],
    ),
    Resource::v1(
        "discovery.k8s.io",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
        &[],
    )
    .generation(GenerationRule::AllButMetadata),
    Resource::v1("events.k8s.io", "events", "event", "Event", &["ev"]).created_by_put(),
    Resource::v1("coordination.k8s.io", "leases", "lease", "Lease", &[]).created_by_put(),
];

/// Something done with the k8s-openapi type of a served kind, which
/// [`Resource::with_type`] picks: the one table from kinds to their types.
pub(crate) trait WithType {
    /// What the action gives.
    type Output;
    /// Does the action with `T`, the type of the kind.
    fn with<T: DeserializeOwned + Serialize + JsonSchema>(self) -> Self::Output;
}

/// How the table's rows are written.
impl Resource {
    /// A namespaced resource of `group`'s `v1`, without a status subresource, a generation or
    /// creation by PUT; the setters below add what a kind has.
    const fn v1(
        group: &'static str,
        plural: &'static str,
        singular: &'static str,
        kind: &'static str,
        short_names: &'static [&'static str],
    ) -> Self {
        Self {
            group,
            version: "v1",
            plural,
            singular,
            kind,
            namespaced: true,
            short_names,
            status: false,
            generation: GenerationRule::None,
            create_on_update: false,
        }
    }

    /// Objects of the resource live outside namespaces.
    const fn cluster_scoped(self) -> Self {
        Self {
            namespaced: false,
            ..self
        }
    }

    /// The resource has a `/status` subresource.
    const fn with_status(self) -> Self {
        Self {
            status: true,
            ..self
        }
    }

    /// The resource keeps `metadata.generation` by `generation`.
    const fn generation(self, generation: GenerationRule) -> Self {
        Self { generation, ..self }
    }

    /// A PUT to a missing object creates it.
    const fn created_by_put(self) -> Self {
        Self {
            create_on_update: true,
            ..self
        }
    }
}

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
        self.with_type(Roundtrip(value))
            .unwrap_or_else(|Roundtrip(value)| Ok(value))
    }

    /// Does `action` with the k8s-openapi type of the resource's kind; hands `action` back
    /// for a kind the table does not know.
    pub(crate) fn with_type<A: WithType>(&self, action: A) -> Result<A::Output, A> {
        use k8s_openapi::api::{coordination, core, discovery, events};
        Ok(match (self.group, self.kind) {
            ("", "Namespace") => action.with::<core::v1::Namespace>(),
            ("", "Node") => action.with::<core::v1::Node>(),
            ("", "Pod") => action.with::<core::v1::Pod>(),
            ("", "Service") => action.with::<core::v1::Service>(),
            ("", "Endpoints") => action.with::<core::v1::Endpoints>(),
            ("", "Event") => action.with::<core::v1::Event>(),
            ("", "ServiceAccount") => action.with::<core::v1::ServiceAccount>(),
            ("discovery.k8s.io", "EndpointSlice") => action.with::<discovery::v1::EndpointSlice>(),
            ("events.k8s.io", "Event") => action.with::<events::v1::Event>(),
            ("coordination.k8s.io", "Lease") => action.with::<coordination::v1::Lease>(),
            _ => return Err(action),
        })
    }
}

/// Reads a JSON object as its kind's type and writes it back.
struct Roundtrip(Value);

impl WithType for Roundtrip {
    type Output = Result<Value, String>;

    fn with<T: DeserializeOwned + Serialize + JsonSchema>(self) -> Self::Output {
        let typed: T = serde_json::from_value(self.0).map_err(|e| e.to_string())?;
        serde_json::to_value(typed).map_err(|e| e.to_string())
    }
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
