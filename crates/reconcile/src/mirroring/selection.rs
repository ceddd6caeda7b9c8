//! Which Endpoints objects are mirrored.
//!
//! Upstream mirrors an Endpoints object only when it exists, does not opt out with the
//! skip-mirror label, is not a leader-election record, and its Service exists without a
//! selector (a Service with a selector has slices from the EndpointSlice controller). In
//! every other case the slices it mirrored earlier are removed, so the checks run in
//! upstream's order and each names the reason.

use crate::endpoints::LEADER_ANNOTATION;
use crate::labels::SKIP_MIRROR;
use crate::projection::ServiceInfo;
use k8s_openapi::api::core::v1::Endpoints;

/// Why an Endpoints object is not mirrored (and its mirrored slices are deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupReason {
    /// The Endpoints object does not exist.
    EndpointsMissing,
    /// The Endpoints carries `endpointslice.kubernetes.io/skip-mirror: "true"`.
    SkipMirrorLabel,
    /// The Endpoints is a leader-election record (it carries
    /// `control-plane.alpha.kubernetes.io/leader`).
    LeaderElection,
    /// The Service does not exist.
    ServiceMissing,
    /// The Service has a selector.
    ServiceHasSelector,
}

/// True when the Endpoints object may be mirrored on its own terms: no skip-mirror label set
/// to `"true"` and no leader-election annotation. The handlers use this to ignore events.
pub fn should_mirror(endpoints: &Endpoints) -> bool {
    skip_reason(endpoints).is_none()
}

fn skip_reason(endpoints: &Endpoints) -> Option<CleanupReason> {
    let meta = &endpoints.metadata;
    // Only the exact value "true" opts out; any other value is mirrored like a label.
    if meta
        .labels
        .as_ref()
        .and_then(|l| l.get(SKIP_MIRROR))
        .is_some_and(|v| v == "true")
    {
        return Some(CleanupReason::SkipMirrorLabel);
    }
    // The annotation's presence is enough, whatever it holds.
    if meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(LEADER_ANNOTATION))
    {
        return Some(CleanupReason::LeaderElection);
    }
    None
}

/// The Endpoints to mirror, or why there is none. Checked in upstream's order: the
/// Endpoints, its own opt-outs, then the Service.
pub fn mirror_target<'a>(
    service: Option<&ServiceInfo>,
    endpoints: Option<&'a Endpoints>,
) -> Result<&'a Endpoints, CleanupReason> {
    let endpoints = endpoints.ok_or(CleanupReason::EndpointsMissing)?;
    if let Some(reason) = skip_reason(endpoints) {
        return Err(reason);
    }
    let service = service.ok_or(CleanupReason::ServiceMissing)?;
    // The projection already treats an empty selector as none, as the API server stores it.
    if service.selector.is_some() {
        return Err(CleanupReason::ServiceHasSelector);
    }
    Ok(endpoints)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{endpoints, service};

    #[test]
    fn endpoints_of_a_service_without_selector_are_mirrored() {
        let svc = service("ext").no_selector().build();
        let ep = endpoints("ext").build();
        assert!(mirror_target(Some(&svc), Some(&ep)).is_ok());
    }

    #[test]
    fn mirroring_is_decided_in_upstream_order() {
        let selectorless = service("ext").no_selector().build();
        let with_selector = service("ext").build();
        let plain = endpoints("ext").build();
        let skipped = endpoints("ext").label(SKIP_MIRROR, "true").build();
        let leader = endpoints("ext")
            .annotation(LEADER_ANNOTATION, r#"{"holderIdentity":"a"}"#)
            .build();
        let cases = [
            (
                "missing Endpoints",
                Some(&selectorless),
                None,
                CleanupReason::EndpointsMissing,
            ),
            (
                "skip-mirror label is checked before the Service",
                None,
                Some(&skipped),
                CleanupReason::SkipMirrorLabel,
            ),
            (
                "leader-election record is never mirrored",
                Some(&selectorless),
                Some(&leader),
                CleanupReason::LeaderElection,
            ),
            (
                "missing Service",
                None,
                Some(&plain),
                CleanupReason::ServiceMissing,
            ),
            (
                "Service with a selector",
                Some(&with_selector),
                Some(&plain),
                CleanupReason::ServiceHasSelector,
            ),
        ];
        for (behaviour, svc, ep, want) in cases {
            assert_eq!(mirror_target(svc, ep).err(), Some(want), "{behaviour}");
        }
    }

    #[test]
    fn skip_mirror_label_opts_out_only_when_true() {
        assert!(!should_mirror(
            &endpoints("ext").label(SKIP_MIRROR, "true").build()
        ));
        assert!(should_mirror(
            &endpoints("ext").label(SKIP_MIRROR, "false").build()
        ));
        assert!(should_mirror(&endpoints("ext").build()));
    }

    #[test]
    fn leader_election_annotation_opts_out_whatever_its_value() {
        assert!(!should_mirror(
            &endpoints("ext").annotation(LEADER_ANNOTATION, "").build()
        ));
    }
}
