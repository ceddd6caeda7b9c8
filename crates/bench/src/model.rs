//! What the bench wrote, and from it what every Service's endpoints must be.
//!
//! This is deliberately a second, small statement of the upstream rules, written without the
//! `reconcile` crate, so that a bug there cannot hide by being checked against itself:
//!
//! - a pod is an endpoint once it has an IP (the bench only runs pods in phase Running);
//! - in an EndpointSlice, `serving` is the pod's Ready condition, `terminating` is whether it
//!   has a deletionTimestamp, and `ready` is `serving && !terminating`; the endpoint's zone is
//!   the zone label of the pod's node;
//! - in the v1 Endpoints object, terminating pods are left out; a Ready pod is in `addresses`,
//!   any other in `notReadyAddresses`.

/// One endpoint of an EndpointSlice, as far as the bench checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceEndpoint {
    /// The first address.
    pub ip: String,
    /// `conditions.ready`.
    pub ready: bool,
    /// `conditions.serving`.
    pub serving: bool,
    /// `conditions.terminating`.
    pub terminating: bool,
    /// `zone`; in an expectation, `None` means "not checked".
    pub zone: Option<String>,
}

impl SliceEndpoint {
    /// Equal but for the zone, which an expectation may leave unchecked.
    pub fn matches(&self, expected: &SliceEndpoint) -> bool {
        self.ip == expected.ip
            && self.ready == expected.ready
            && self.serving == expected.serving
            && self.terminating == expected.terminating
            && (expected.zone.is_none() || self.zone == expected.zone)
    }
}

/// One address of a v1 Endpoints object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointsAddress {
    /// `ip`.
    pub ip: String,
    /// In `addresses` (true) or `notReadyAddresses` (false).
    pub ready: bool,
}

/// A pod as the bench last wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodModel {
    /// Index of the Service selecting it.
    pub service: usize,
    /// Index of its node.
    pub node: usize,
    /// Its IP, once its status was written.
    pub ip: Option<String>,
    /// Its Ready condition.
    pub ready: bool,
    /// Whether it was deleted and waits on its finalizer.
    pub terminating: bool,
}

impl PodModel {
    /// Its endpoint in the Service's slices; `zone` is its node's, when checked.
    pub fn in_slices(&self, zone: Option<String>) -> Option<SliceEndpoint> {
        Some(SliceEndpoint {
            ip: self.ip.clone()?,
            ready: self.ready && !self.terminating,
            serving: self.ready,
            terminating: self.terminating,
            zone,
        })
    }

    /// Its address in the Service's Endpoints object.
    pub fn in_endpoints(&self) -> Option<EndpointsAddress> {
        if self.terminating {
            return None;
        }
        Some(EndpointsAddress {
            ip: self.ip.clone()?,
            ready: self.ready,
        })
    }
}

/// A node as the bench last wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeModel {
    /// Its name.
    pub name: String,
    /// Its zone label.
    pub zone: String,
    /// Its Ready condition.
    pub ready: bool,
    /// Whether its zone label changed since pods were placed on it; the controller only
    /// refreshes an endpoint's zone when it syncs the Service for another reason, so such
    /// endpoints' zones are not checked.
    pub zone_changed: bool,
}

impl NodeModel {
    /// The zone to expect on endpoints of pods on this node.
    pub fn expected_zone(&self) -> Option<String> {
        (!self.zone_changed).then(|| self.zone.clone())
    }
}

/// A pod model for tests: service 0 on node 0 with one IP.
#[cfg(test)]
pub(crate) fn test_pod(ready: bool, terminating: bool) -> PodModel {
    PodModel {
        service: 0,
        node: 0,
        ip: Some("10.0.0.1".into()),
        ready,
        terminating,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ready: bool, terminating: bool) -> PodModel {
        test_pod(ready, terminating)
    }

    #[test]
    fn a_terminating_ready_pod_is_serving_but_not_ready_and_leaves_endpoints() {
        let e = pod(true, true).in_slices(None).unwrap();
        assert!(e.serving && e.terminating && !e.ready);
        assert_eq!(pod(true, true).in_endpoints(), None);
    }

    #[test]
    fn a_pod_without_ip_is_no_endpoint() {
        let mut p = pod(true, false);
        p.ip = None;
        assert_eq!(p.in_slices(None), None);
        assert_eq!(p.in_endpoints(), None);
    }

    #[test]
    fn an_unready_pod_goes_to_not_ready_addresses() {
        assert_eq!(
            pod(false, false).in_endpoints().map(|a| a.ready),
            Some(false)
        );
    }
}
