//! Labels the controllers write: mirrored service labels, the headless marker and the
//! managed-by keys.

use crate::projection::ServiceInfo;
use std::collections::BTreeMap;

/// Slice label naming the Service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// Slice label naming the managing controller.
pub const SLICE_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// Our value of [`SLICE_MANAGED_BY`] (the upstream controller's, since we replace it).
pub const SLICE_CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// Endpoints label naming the managing controller.
pub const ENDPOINTS_MANAGED_BY: &str = "endpoints.kubernetes.io/managed-by";
/// Our value of [`ENDPOINTS_MANAGED_BY`].
pub const ENDPOINTS_CONTROLLER_NAME: &str = "endpoint-controller";
/// Present (empty) on objects of a headless Service.
pub const HEADLESS: &str = "service.kubernetes.io/headless";
/// Our value of [`SLICE_MANAGED_BY`] on slices mirrored from hand-written Endpoints (the
/// upstream mirroring controller's, since we replace it too).
pub const MIRRORING_CONTROLLER_NAME: &str = "endpointslicemirroring-controller.k8s.io";
/// Endpoints label that, set to `"true"`, keeps the mirroring controller away from the object.
pub const SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
/// Annotation kubectl keeps on applied objects; never mirrored onto slices.
pub const LAST_APPLIED_CONFIG: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// True for the keys the slice controller owns; a Service cannot set them on its slices.
pub fn is_reserved_slice_label(key: &str) -> bool {
    key == SERVICE_NAME || key == SLICE_MANAGED_BY || key == HEADLESS
}

/// The labels a slice of this Service carries, and whether the existing ones drifted.
/// Drift is judged on non-reserved labels only: the slice's own service-name, managed-by
/// and headless labels never cause an update.
pub fn slice_labels(
    existing: Option<&BTreeMap<String, String>>,
    service: &ServiceInfo,
) -> (BTreeMap<String, String>, bool) {
    let mut labels: BTreeMap<String, String> = service
        .labels
        .iter()
        .filter(|(k, _)| !is_reserved_slice_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let drifted = match existing {
        Some(existing) => {
            let mut ours = existing.iter().filter(|(k, _)| !is_reserved_slice_label(k));
            existing
                .iter()
                .filter(|(k, _)| !is_reserved_slice_label(k))
                .count()
                != labels.len()
                || !ours.all(|(k, v)| labels.get(k) == Some(v))
        }
        None => !labels.is_empty(),
    };
    if !service.is_ip_set() {
        labels.insert(HEADLESS.to_owned(), String::new());
    }
    labels.insert(SERVICE_NAME.to_owned(), service.name.clone());
    labels.insert(
        SLICE_MANAGED_BY.to_owned(),
        SLICE_CONTROLLER_NAME.to_owned(),
    );
    (labels, drifted)
}

/// The labels of a Service's v1 Endpoints object: the Service's own labels, the managed-by
/// label, and the headless marker when the Service has no ClusterIP.
pub fn endpoints_labels(service: &ServiceInfo) -> BTreeMap<String, String> {
    let mut labels = service.labels.clone();
    labels.insert(
        ENDPOINTS_MANAGED_BY.to_owned(),
        ENDPOINTS_CONTROLLER_NAME.to_owned(),
    );
    if service.is_ip_set() {
        labels.remove(HEADLESS);
    } else {
        labels.insert(HEADLESS.to_owned(), String::new());
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::service;

    #[test]
    fn reserved_labels_on_the_service_are_ignored_for_slices() {
        let svc = service("web")
            .label("team", "a")
            .label(SERVICE_NAME, "evil")
            .label(SLICE_MANAGED_BY, "someone")
            .build();
        let (labels, _) = slice_labels(None, &svc);
        assert_eq!(labels.get(SERVICE_NAME).map(String::as_str), Some("web"));
        assert_eq!(
            labels.get(SLICE_MANAGED_BY).map(String::as_str),
            Some(SLICE_CONTROLLER_NAME)
        );
        assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    }

    #[test]
    fn headless_services_mark_their_slices() {
        let (labels, _) = slice_labels(None, &service("db").cluster_ip("None").build());
        assert_eq!(labels.get(HEADLESS).map(String::as_str), Some(""));
        let (labels, _) = slice_labels(None, &service("web").build());
        assert!(!labels.contains_key(HEADLESS));
    }

    #[test]
    fn label_drift_ignores_reserved_keys() {
        let svc = service("web").label("team", "a").build();
        let (current, _) = slice_labels(None, &svc);
        assert!(!slice_labels(Some(&current), &svc).1);
        let mut changed = current.clone();
        changed.insert("team".into(), "b".into());
        assert!(slice_labels(Some(&changed), &svc).1);
        let mut only_reserved = current.clone();
        only_reserved.insert(HEADLESS.into(), String::new());
        assert!(!slice_labels(Some(&only_reserved), &svc).1);
    }

    #[test]
    fn endpoints_carry_service_labels_managed_by_and_headless() {
        let labels = endpoints_labels(&service("db").cluster_ip("None").label("app", "db").build());
        assert_eq!(labels.get("app").map(String::as_str), Some("db"));
        assert_eq!(
            labels.get(ENDPOINTS_MANAGED_BY).map(String::as_str),
            Some("endpoint-controller")
        );
        assert_eq!(labels.get(HEADLESS).map(String::as_str), Some(""));
    }
}
