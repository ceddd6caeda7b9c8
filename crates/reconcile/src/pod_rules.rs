//! Which pods count as endpoints, and what of them is published.

use crate::projection::{PodInfo, ServiceInfo};
use k8s_openapi::api::core::v1::ObjectReference;

/// Why a pod is not an endpoint at all, checked in the order the controllers check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// Its phase is Failed or Succeeded.
    Terminal,
    /// It has no IP yet.
    NoIp,
    /// It is being deleted and terminating pods are not wanted.
    Terminating,
}

/// Why the pod does not belong in Endpoints or EndpointSlices, or `None` when it does: it is
/// not terminal (Failed/Succeeded), it has an IP, and it is not being deleted unless
/// terminating pods are wanted (the slice controller always wants them; the Endpoints
/// controller only with `publishNotReadyAddresses`).
pub fn endpoint_exclusion(pod: &PodInfo, include_terminating: bool) -> Option<Exclusion> {
    if pod.terminal {
        return Some(Exclusion::Terminal);
    }
    // `ips` falls back to `podIP`: empty only when both are.
    if pod.ips.is_empty() {
        return Some(Exclusion::NoIp);
    }
    (!include_terminating && pod.deleting).then_some(Exclusion::Terminating)
}

/// True when the pod belongs in Endpoints or EndpointSlices at all (see
/// [`endpoint_exclusion`]).
pub fn is_endpoint_candidate(pod: &PodInfo, include_terminating: bool) -> bool {
    endpoint_exclusion(pod, include_terminating).is_none()
}

/// True when the pod's hostname is published: it has one, its subdomain names the service, and
/// both live in the same namespace.
pub fn publishes_hostname(pod: &PodInfo, service: &ServiceInfo) -> bool {
    !pod.hostname().is_empty()
        && pod.subdomain() == service.name
        && pod.namespace == service.namespace
}

/// The reference both controllers publish for a pod's address: kind, namespace, name, uid.
pub fn pod_reference(pod: &PodInfo) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.as_str().to_owned()),
        name: Some(pod.name.as_str().to_owned()),
        uid: Some(pod.uid.to_text()),
        ..Default::default()
    }
}

/// Whether two optional references are equal in every field but `resourceVersion`, which
/// both controllers leave out of their comparisons (two absent ones are equal). Compared in
/// place: a sync compares the reference of every endpoint or address it reads.
pub fn same_reference(a: Option<&ObjectReference>, b: Option<&ObjectReference>) -> bool {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (a, b) => return a.is_none() && b.is_none(),
    };
    // Every field named, so that a field the type gains must be decided on here.
    let ObjectReference {
        api_version,
        field_path,
        kind,
        name,
        namespace,
        resource_version: _,
        uid,
    } = a;
    *api_version == b.api_version
        && *field_path == b.field_path
        && *kind == b.kind
        && *name == b.name
        && *namespace == b.namespace
        && *uid == b.uid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service};

    #[test]
    fn failed_and_succeeded_pods_are_never_endpoints() {
        let mut p = pod("a").ip("10.0.0.1").build();
        p.terminal = true;
        assert!(!is_endpoint_candidate(&p, true));
    }

    #[test]
    fn pods_without_ip_are_never_endpoints() {
        assert!(!is_endpoint_candidate(&pod("a").build(), true));
    }

    #[test]
    fn terminating_pods_count_only_when_asked_for() {
        let p = pod("a").ip("10.0.0.1").deleting().build();
        assert!(is_endpoint_candidate(&p, true));
        assert!(!is_endpoint_candidate(&p, false));
    }

    #[test]
    fn hostname_is_published_only_under_the_services_subdomain() {
        let svc = service("web").build();
        let p = pod("a").hostname("a", "web").build();
        assert!(publishes_hostname(&p, &svc));
        let other = pod("a").hostname("a", "other").build();
        assert!(!publishes_hostname(&other, &svc));
        let no_name = pod("a").hostname("", "web").build();
        assert!(!publishes_hostname(&no_name, &svc));
    }
}
