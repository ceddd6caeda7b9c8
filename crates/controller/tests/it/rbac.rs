//! Least privilege, proven: the controllers' scenarios run against the embedded API server
//! with its request log on, and every request they sent must be granted by the RBAC
//! manifests in `deploy/`, while every verb a rule there grants must have been used.
//!
//! The same holds for `overlays/service-account-credentials/`, per identity: with
//! `--use-service-account-credentials` each controller's requests (told apart by the user
//! the server authenticated) must be granted by its bootstrap ClusterRole
//! (`tests/data/bootstrap-controller-roles-v1.36.yaml`, as every cluster has them), and the
//! process's own requests by the overlay's rules, every one of which must be used.
//!
//! The controllers get their own client, marked by a `User-Agent`, so the requests the test
//! itself makes to set scenes up are told apart. One grant is needed without a request: the
//! OwnerReferencesPermissionEnforcement admission plugin lets a client set
//! `blockOwnerDeletion` on an owner reference only if it may update the owner's
//! `finalizers` subresource, so each such reference the controllers wrote counts as an
//! `update services/finalizers`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apiserver::{FaultResponse, NonResourceGrant, RequestRecord, Reviews, TokenUser};
use controller::health::{self, Liveness, Readiness};
use controller::leader::LeadershipEnd;
use controller::secure_serving::{self, Access, SecureServingSettings};
use controller::service_accounts::Identity;
use controller::Clients;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kube::Client;
use prometheus::Registry;
use serde_json::Value;
use testkit::replica::{client_as, ReplicaTask};
use testkit::{options, pod_names, web, web_pod, TestCluster};
use tower::ServiceExt;

/// The `User-Agent` of the controllers' client.
const AGENT: &str = "kube-endpoints-under-test";
/// Where the Deployment runs, and its ServiceAccount.
const NAMESPACE: &str = "kube-system";
const SERVICE_ACCOUNT: &str = "kube-endpoints";
const LEASE: &str = "kube-endpoints";
const NS: &str = "default";

// ---- the RBAC rules of deploy/ ----

/// A rule and where it applies: `None` everywhere (a ClusterRole bound cluster-wide), or
/// one namespace (a Role).
#[derive(Debug, Clone)]
struct Grant {
    source: String,
    namespace: Option<String>,
    rule: PolicyRule,
}

/// One verb on one resource that a rule grants: what "used" is checked for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Permission {
    source: String,
    namespace: Option<String>,
    verb: String,
    group: String,
    resource: String,
    names: Vec<String>,
}

/// A request as an authoriser sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Attributes {
    verb: String,
    group: String,
    /// `resource` or `resource/subresource`, as RBAC rules name them.
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
}

impl From<&RequestRecord> for Attributes {
    fn from(r: &RequestRecord) -> Self {
        Self {
            verb: r.verb.clone(),
            group: r.group.clone(),
            resource: match &r.subresource {
                Some(sub) => format!("{}/{sub}", r.resource),
                None => r.resource.clone(),
            },
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        }
    }
}

/// A path relative to this crate's directory.
fn crate_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Which manifests: `deploy/` as it is, or with the service-account-credentials overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Deploy,
    ServiceAccounts,
}

impl Variant {
    /// The directory of its `kustomization.yaml`.
    fn dir(self) -> PathBuf {
        crate_path(match self {
            Variant::Deploy => "../../deploy",
            Variant::ServiceAccounts => "../../overlays/service-account-credentials",
        })
    }
}

fn read_yaml(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The YAML documents of every file a kustomization in `dir` lists, by file name; a
/// directory among them (the overlay's base) is read the same way.
fn kustomization_files(dir: &Path) -> Vec<(String, Value)> {
    let kustomization = read_yaml(&dir.join("kustomization.yaml"));
    let files = kustomization["resources"]
        .as_array()
        .expect("kustomization resources");
    let mut out = Vec::new();
    for file in files.iter().map(|f| f.as_str().expect("a file name")) {
        let path = dir.join(file);
        if path.is_dir() {
            out.extend(kustomization_files(&path));
        } else {
            out.push((file.to_owned(), read_yaml(&path)));
        }
    }
    out
}

/// The manifests of `variant`. A kustomization's strategic-merge patches of RBAC objects
/// (the overlay's; `deploy/` has none) replace their rules whole, as kustomize applies them
/// (rules have no merge key).
fn manifests(variant: Variant) -> Vec<(String, Value)> {
    let dir = variant.dir();
    let mut objects = kustomization_files(&dir);
    let kustomization = read_yaml(&dir.join("kustomization.yaml"));
    for patch in kustomization["patches"].as_array().into_iter().flatten() {
        let Some(file) = patch["path"].as_str() else {
            continue;
        };
        let patch = read_yaml(&dir.join(file));
        let target = objects
            .iter_mut()
            .find(|(_, o)| {
                o["kind"] == patch["kind"] && o["metadata"]["name"] == patch["metadata"]["name"]
            })
            .unwrap_or_else(|| panic!("{file} patches nothing"));
        target.0 = format!("overlay {file}");
        target.1["rules"] = patch["rules"].clone();
    }
    objects
}

fn parse<T: serde::de::DeserializeOwned>(file: &str, value: &Value) -> T {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Whether a binding's subjects include our ServiceAccount.
fn binds_us(subjects: Option<&Vec<k8s_openapi::api::rbac::v1::Subject>>) -> bool {
    subjects.into_iter().flatten().any(|s| {
        s.kind == "ServiceAccount"
            && s.name == SERVICE_ACCOUNT
            && s.namespace.as_deref() == Some(NAMESPACE)
    })
}

/// The rules bound to our ServiceAccount, following bindings to their roles.
fn grants() -> Vec<Grant> {
    grants_of(Variant::Deploy)
}

/// The rules `variant` binds to our ServiceAccount.
fn grants_of(variant: Variant) -> Vec<Grant> {
    let manifests = manifests(variant);
    let of_kind = |kind: &str| {
        manifests
            .iter()
            .filter(move |(_, v)| v["kind"] == kind)
            .collect::<Vec<_>>()
    };
    let mut grants = Vec::new();
    for (file, value) in of_kind("ClusterRoleBinding") {
        let binding: ClusterRoleBinding = parse(file, value);
        if !binds_us(binding.subjects.as_ref()) {
            continue;
        }
        assert_eq!(binding.role_ref.kind, "ClusterRole", "{file}");
        for (file, value) in of_kind("ClusterRole") {
            let role: ClusterRole = parse(file, value);
            if role.metadata.name.as_deref() == Some(binding.role_ref.name.as_str()) {
                for rule in role.rules.unwrap_or_default() {
                    grants.push(Grant {
                        source: file.clone(),
                        namespace: None,
                        rule,
                    });
                }
            }
        }
    }
    for (file, value) in of_kind("RoleBinding") {
        let binding: RoleBinding = parse(file, value);
        if !binds_us(binding.subjects.as_ref()) {
            continue;
        }
        let namespace = binding.metadata.namespace.clone();
        assert_eq!(binding.role_ref.kind, "Role", "{file}");
        for (file, value) in of_kind("Role") {
            let role: Role = parse(file, value);
            if role.metadata.name.as_deref() == Some(binding.role_ref.name.as_str())
                && role.metadata.namespace == namespace
            {
                for rule in role.rules.unwrap_or_default() {
                    grants.push(Grant {
                        source: file.clone(),
                        namespace: namespace.clone(),
                        rule,
                    });
                }
            }
        }
    }
    grants
}

fn lists(items: &[String], wanted: &str) -> bool {
    items.iter().any(|i| i == "*" || i == wanted)
}

/// Whether `grant` authorises `request`, by RBAC's rules: verb, group and resource listed
/// (or `*`), the name listed when the rule names resources (so never a create, list or
/// watch), and a Role only in its own namespace.
fn allows(grant: &Grant, request: &Attributes) -> bool {
    let rule = &grant.rule;
    let in_scope = grant.namespace.is_none() || grant.namespace == request.namespace;
    let named = match rule.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => request
            .name
            .as_ref()
            .is_some_and(|n| names.iter().any(|m| m == n)),
    };
    in_scope
        && named
        && lists(&rule.verbs, &request.verb)
        && lists(
            rule.api_groups.as_deref().unwrap_or_default(),
            &request.group,
        )
        && lists(
            rule.resources.as_deref().unwrap_or_default(),
            &request.resource,
        )
}

/// Every (verb, group, resource) each grant lists, one by one.
fn permissions(grants: &[Grant]) -> Vec<Permission> {
    let mut out = Vec::new();
    for g in grants {
        let rule = &g.rule;
        for verb in &rule.verbs {
            for group in rule.api_groups.iter().flatten() {
                for resource in rule.resources.iter().flatten() {
                    out.push(Permission {
                        source: g.source.clone(),
                        namespace: g.namespace.clone(),
                        verb: verb.clone(),
                        group: group.clone(),
                        resource: resource.clone(),
                        names: rule.resource_names.clone().unwrap_or_default(),
                    });
                }
            }
        }
    }
    out
}

/// What a check of requests against grants found.
#[derive(Debug, Default, PartialEq)]
struct Verdict {
    /// Requests no grant allows.
    denied: BTreeSet<Attributes>,
    /// Permissions no request needed.
    unused: BTreeSet<Permission>,
}

impl Verdict {
    /// Fails the test when the grants, `named`, leave a request denied.
    fn assert_all_granted(&self, named: &str) {
        assert!(
            self.denied.is_empty(),
            "requests {named} does not grant:\n{}",
            describe(&self.denied)
        );
    }

    /// Fails the test when the grants, `named`, leave a request denied or grant a permission
    /// nothing used.
    fn assert_exactly_granted(&self, named: &str) {
        self.assert_all_granted(named);
        assert!(
            self.unused.is_empty(),
            "permissions {named} grants that nothing used: {:#?}",
            self.unused
        );
    }
}

fn check(grants: &[Grant], requests: &BTreeSet<Attributes>) -> Verdict {
    let denied = requests
        .iter()
        .filter(|r| !grants.iter().any(|g| allows(g, r)))
        .cloned()
        .collect();
    let unused = permissions(grants)
        .into_iter()
        .filter(|p| {
            let narrowed = Grant {
                source: p.source.clone(),
                namespace: p.namespace.clone(),
                rule: PolicyRule {
                    verbs: vec![p.verb.clone()],
                    api_groups: Some(vec![p.group.clone()]),
                    resources: Some(vec![p.resource.clone()]),
                    resource_names: Some(p.names.clone()),
                    non_resource_urls: None,
                },
            };
            !requests.iter().any(|r| allows(&narrowed, r))
        })
        .collect();
    Verdict { denied, unused }
}

// ---- the scenarios ----

/// Who sent a request: `None` for the process's own identity (`--kubeconfig`'s user, the
/// only one without service-account credentials), else the ServiceAccount's user name.
type User = Option<String>;

/// Creates, scales, fails and deletes Services while the controllers run behind a Lease,
/// and returns what they asked of the server, by whom, plus the grants their writes imply.
async fn controllers_requests(variant: Variant) -> anyhow::Result<BTreeSet<(User, Attributes)>> {
    let cluster = TestCluster::start().await;
    cluster.server.record_requests(true);
    // With streaming lists the informers read everything through watches; against a server
    // without them (v1.33) they list, which deploy/ must grant as well. Play that server, so
    // that both verbs are used (a streaming list is authorized as a watch).
    cluster.server.set_watch_list(false);
    // Kept until the end: the service-account clients reach the cluster through it.
    let mut _over_tcp = None;
    // The clients, the process's own, and how their requests are told from the test's.
    let (clients, own, ours): (Clients, Client, fn(&RequestRecord) -> bool) = match variant {
        Variant::Deploy => {
            let client = client_as(&cluster, AGENT);
            (client.clone().into(), client, |r| {
                r.user_agent.as_deref() == Some(AGENT)
            })
        }
        Variant::ServiceAccounts => {
            let (clients, served) = cluster.service_account_clients().await?;
            _over_tcp = Some(served);
            let own = clients.leader_election.clone();
            (clients, own, |r| {
                r.user_agent
                    .as_deref()
                    .is_some_and(|a| a.starts_with(controller::client::USER_AGENT))
            })
        }
    };
    let mut opts = options();
    // Two endpoints per slice, so that scaling down deletes a slice.
    opts.settings.max_endpoints_per_slice = 2;
    // Failed writes are reported as Events; a repeat is a patch of the first. Two Services
    // fail twice each, whatever order their creates come in.
    cluster
        .faults()
        .fail_next("create", "endpoints", 4, FaultResponse::InternalError);

    let replica = ReplicaTask::start_with("rbac", clients, opts);

    cluster.create_namespace("shop").await?;
    for ns in [NS, "shop"] {
        cluster.create_service(&web().ns(ns)).await?;
    }
    for i in 1..=3 {
        cluster
            .create_pod(&web_pod(&format!("web-{i}"), &format!("10.0.0.{i}")))
            .await?;
    }
    cluster
        .create_pod(&web_pod("shop-1", "10.0.1.1").ns("shop"))
        .await?;
    cluster
        .wait_for_slices(NS, "web", "three pods in two slices", |s| {
            s.len() == 2 && pod_names(s) == ["web-1", "web-2", "web-3"]
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    cluster.wait_for_planned_endpoints("shop", "web").await;
    // Four failures over two Services: one of them failed twice, and its Event was patched.
    testkit::eventually("a repeated Event", || {
        let cluster = &cluster;
        async move {
            let mut counts = Vec::new();
            for ns in [NS, "shop"] {
                let events = cluster
                    .events(ns)
                    .list(&Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
                counts.extend(events.items.iter().map(|e| e.count.unwrap_or(1)));
            }
            if counts.iter().any(|c| *c >= 2) {
                Ok(())
            } else {
                Err(format!("event counts {counts:?}"))
            }
        }
    })
    .await;

    // Scale down (updates, and one slice fewer), flip readiness, delete a Service.
    cluster.delete_pod(NS, "web-3").await?;
    cluster.delete_pod(NS, "web-2").await?;
    cluster.set_pod_ready(NS, "web-1", false).await?;
    cluster
        .wait_for_slices(NS, "web", "one not-ready pod in one slice", |s| {
            s.len() == 1
                && testkit::endpoint_of(s, "web-1")
                    .is_some_and(|e| testkit::conditions(&e).0 == Some(false))
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;

    // The grants admission checks on the references the controllers wrote.
    let mut implied = BTreeSet::new();
    for ns in [NS, "shop"] {
        for slice in cluster.managed_slices(ns, "web").await? {
            for owner in slice.metadata.owner_references.iter().flatten() {
                if owner.block_owner_deletion == Some(true) && owner.kind == "Service" {
                    implied.insert(Attributes {
                        verb: "update".into(),
                        group: String::new(),
                        resource: "services/finalizers".into(),
                        namespace: Some(ns.into()),
                        name: Some(owner.name.clone()),
                    });
                }
            }
        }
    }

    cluster.delete_service("shop", "web").await?;
    testkit::eventually("the Endpoints of a deleted Service to go", || {
        let cluster = &cluster;
        async move {
            match cluster.get_endpoints("shop", "web").await {
                Ok(None) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;

    scrape_metrics_with_a_token(&cluster, own).await;

    assert_eq!(replica.stop().await, LeadershipEnd::ShutDown);

    let mut requests: BTreeSet<(User, Attributes)> = cluster
        .server
        .request_log()
        .iter()
        .filter(|r| ours(r))
        .map(|r| (r.user.clone(), Attributes::from(r)))
        .collect();
    // The slices, and the references admission checks, are the EndpointSlice controller's.
    let slice_writer = match variant {
        Variant::Deploy => None,
        Variant::ServiceAccounts => Some(Identity::EndpointSlices.username()),
    };
    requests.extend(implied.into_iter().map(|a| (slice_writer.clone(), a)));
    Ok(requests)
}

/// A scraper gets /metrics from the secure server, whose TokenReviews and
/// SubjectAccessReviews go through the controllers' client: the calls a scrape costs.
/// In-process: the guard is the same with or without TLS in front of it.
async fn scrape_metrics_with_a_token(cluster: &TestCluster, client: Client) {
    const TOKEN: &str = "scraper-token";
    const SCRAPER: &str = "system:serviceaccount:monitoring:prometheus";
    cluster.server.set_reviews(
        Reviews::default()
            .with_token(TOKEN, TokenUser::new(SCRAPER, &[]))
            .with_grant(NonResourceGrant::user_get(SCRAPER, &["/metrics"])),
    );
    let access = Access::new(client.clone(), client, &SecureServingSettings::default());
    let router = secure_serving::guarded(
        health::router(Registry::new(), Readiness::new(), Liveness::new()),
        Arc::new(access),
    );
    let response = router
        .oneshot(
            http::Request::get("/metrics")
                .header(http::header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .body(axum::body::Body::empty())
                .expect("a request"),
        )
        .await
        .expect("the router answers");
    assert_eq!(response.status(), http::StatusCode::OK);
}

fn describe(requests: &BTreeSet<Attributes>) -> String {
    requests
        .iter()
        .map(|r| {
            format!(
                "{} {}/{} ns={:?} name={:?}",
                r.verb, r.group, r.resource, r.namespace, r.name
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_rbac_grants_exactly_what_the_controllers_use() -> anyhow::Result<()> {
    let requests: BTreeSet<Attributes> = controllers_requests(Variant::Deploy)
        .await?
        .into_iter()
        .map(|(_, attributes)| attributes)
        .collect();
    let kinds: BTreeSet<_> = requests
        .iter()
        .map(|r| (r.verb.as_str(), r.resource.as_str()))
        .collect();
    for expected in [
        ("watch", "pods"),
        ("create", "endpointslices"),
        ("delete", "endpointslices"),
        ("delete", "endpoints"),
        ("patch", "events"),
        ("update", "leases"),
        ("create", "tokenreviews"),
        ("create", "subjectaccessreviews"),
    ] {
        assert!(
            kinds.contains(&expected),
            "the scenarios should exercise {expected:?}; they sent\n{}",
            describe(&requests)
        );
    }
    check(&grants(), &requests).assert_exactly_granted("deploy/");
    Ok(())
}

/// The bootstrap ClusterRole `system:controller:<service_account>`, as every cluster has it.
fn bootstrap_grants(service_account: &str) -> Vec<Grant> {
    let path = crate_path("tests/data/bootstrap-controller-roles-v1.36.yaml");
    let name = format!("system:controller:{service_account}");
    let roles = read_yaml(&path);
    let grants: Vec<Grant> = roles["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|role| role["metadata"]["name"] == name.as_str())
        .flat_map(|role| parse::<ClusterRole>(&name, role).rules.unwrap_or_default())
        .map(|rule| Grant {
            source: name.clone(),
            namespace: None,
            rule,
        })
        .collect();
    assert!(!grants.is_empty(), "{name} is not in {}", path.display());
    grants
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_service_account_credentials_each_identity_needs_only_its_own_role(
) -> anyhow::Result<()> {
    let requests = controllers_requests(Variant::ServiceAccounts).await?;
    let of = |user: &User| -> BTreeSet<Attributes> {
        requests
            .iter()
            .filter(|(u, _)| u == user)
            .map(|(_, a)| a.clone())
            .collect()
    };
    let users: BTreeSet<&User> = requests.iter().map(|(u, _)| u).collect();
    let expected: BTreeSet<User> = std::iter::once(None)
        .chain(Identity::ALL.iter().map(|id| Some(id.username())))
        .collect();
    assert!(
        users.iter().all(|u| expected.contains(*u)),
        "requests from unexpected users: {users:?}"
    );

    // kube-endpoints' own identity: the overlay's rules, every one used.
    let own = of(&None);
    check(&grants_of(Variant::ServiceAccounts), &own)
        .assert_exactly_granted("the overlay, for kube-endpoints' own identity,");

    // Each controller: its bootstrap role allows everything it asked. The roles grant more
    // than these controllers use (endpoints/restricted, events.k8s.io), so only denials count.
    for identity in Identity::ALL {
        let asked = of(&Some(identity.username()));
        check(&bootstrap_grants(identity.service_account()), &asked)
            .assert_all_granted(&format!("the bootstrap role of {}", identity.username()));
    }
    // Who wrote what: the audit trail the flag is for.
    let wrote = |identity: Identity, verb: &str, resource: &str| {
        of(&Some(identity.username()))
            .iter()
            .any(|a| a.verb == verb && a.resource == resource)
    };
    assert!(wrote(Identity::Endpoints, "create", "endpoints"));
    assert!(wrote(Identity::EndpointSlices, "create", "endpointslices"));
    assert!(wrote(Identity::EndpointSlices, "watch", "nodes"));
    assert!(wrote(Identity::Endpoints, "watch", "pods"));
    assert!(own.iter().any(|a| a.resource == "serviceaccounts/token"));
    Ok(())
}

// ---- the matcher itself ----

fn request(
    verb: &str,
    group: &str,
    resource: &str,
    ns: Option<&str>,
    name: Option<&str>,
) -> Attributes {
    Attributes {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        namespace: ns.map(Into::into),
        name: name.map(Into::into),
    }
}

#[test]
fn removing_a_rule_from_deploy_leaves_its_requests_denied() {
    let grants = grants();
    let requests: BTreeSet<_> = [
        request(
            "create",
            "discovery.k8s.io",
            "endpointslices",
            Some(NS),
            None,
        ),
        request(
            "update",
            "coordination.k8s.io",
            "leases",
            Some(NAMESPACE),
            Some(LEASE),
        ),
    ]
    .into();
    assert!(check(&grants, &requests).denied.is_empty());

    let without_slices: Vec<_> = grants
        .iter()
        .filter(|g| {
            !g.rule
                .resources
                .iter()
                .flatten()
                .any(|r| r == "endpointslices")
        })
        .cloned()
        .collect();
    assert_eq!(without_slices.len() + 1, grants.len(), "one rule removed");
    let denied: Vec<_> = check(&without_slices, &requests)
        .denied
        .into_iter()
        .collect();
    assert_eq!(
        denied,
        [request(
            "create",
            "discovery.k8s.io",
            "endpointslices",
            Some(NS),
            None
        )]
    );
}

#[test]
fn a_role_grants_only_in_its_namespace_and_only_the_names_it_lists() {
    let grants = grants();
    let denied = |r: Attributes| !check(&grants, &[r].into()).denied.is_empty();
    assert!(!denied(request(
        "get",
        "coordination.k8s.io",
        "leases",
        Some(NAMESPACE),
        Some(LEASE)
    )));
    assert!(denied(request(
        "get",
        "coordination.k8s.io",
        "leases",
        Some(NS),
        Some(LEASE)
    )));
    assert!(denied(request(
        "get",
        "coordination.k8s.io",
        "leases",
        Some(NAMESPACE),
        Some("other")
    )));
    assert!(denied(request(
        "update",
        "",
        "services",
        Some(NS),
        Some("web")
    )));
    assert!(denied(request("list", "", "secrets", None, None)));
}

#[test]
fn a_permission_no_request_needed_is_reported_unused() {
    let grants = grants();
    let verdict = check(&grants, &[request("list", "", "pods", None, None)].into());
    assert!(verdict
        .unused
        .iter()
        .any(|p| p.verb == "watch" && p.resource == "pods"));
    assert!(!verdict
        .unused
        .iter()
        .any(|p| p.verb == "list" && p.resource == "pods"));
}
