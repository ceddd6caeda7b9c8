//! The metadata of a mirrored slice: what is copied from the Endpoints and what is not.
//!
//! Labels: every Endpoints label, then `kubernetes.io/service-name` (the Endpoints' name) and
//! the mirroring controller's managed-by value on top. Annotations: every Endpoints annotation
//! except the trigger time the Endpoints controller stamps and kubectl's last-applied
//! configuration. The owner is the Endpoints object (not the Service), as its controller, so
//! the slices are garbage collected with it. New slices are named `<endpoints name>-` plus a
//! generated suffix.

use crate::address_family::AddressType;
use crate::labels::{
    LAST_APPLIED_CONFIG, MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SLICE_MANAGED_BY,
};
use crate::slice::fill::generate_name_prefix;
use crate::trigger_time::ANNOTATION as TRIGGER_TIME;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::collections::BTreeMap;

/// True for the annotations that are never copied onto mirrored slices.
pub fn is_unmirrored_annotation(key: &str) -> bool {
    key == TRIGGER_TIME || key == LAST_APPLIED_CONFIG
}

/// The labels of a mirrored slice.
pub fn mirrored_labels(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut labels = endpoints.metadata.labels.clone().unwrap_or_default();
    labels.insert(SERVICE_NAME.to_owned(), name_of(endpoints).to_owned());
    labels.insert(
        SLICE_MANAGED_BY.to_owned(),
        MIRRORING_CONTROLLER_NAME.to_owned(),
    );
    labels
}

/// The annotations of a mirrored slice.
pub fn mirrored_annotations(endpoints: &Endpoints) -> BTreeMap<String, String> {
    endpoints
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| !is_unmirrored_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// True when an existing slice's labels or annotations no longer mirror the Endpoints.
///
/// Upstream compares the slice's labels without its two own keys against the Endpoints'
/// labels as they are, and the slice's annotations as they are against the Endpoints'
/// annotations without the two dropped keys; a missing map equals an empty one. An Endpoints
/// that itself carries one of the slice's own label keys therefore always looks drifted, as it
/// does upstream.
pub fn metadata_drifted(existing: &EndpointSlice, endpoints: &Endpoints) -> bool {
    let slice_labels: BTreeMap<&String, &String> = existing
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| *k != SERVICE_NAME && *k != SLICE_MANAGED_BY)
        .collect();
    let endpoints_labels: BTreeMap<&String, &String> =
        endpoints.metadata.labels.iter().flatten().collect();
    let slice_annotations: BTreeMap<String, String> =
        existing.metadata.annotations.clone().unwrap_or_default();
    slice_labels != endpoints_labels || slice_annotations != mirrored_annotations(endpoints)
}

/// A mirrored slice with no endpoints yet: `name` when it replaces an existing slice,
/// otherwise generateName `<endpoints name>-`.
pub fn new_mirrored_slice(
    endpoints: &Endpoints,
    ports: &[EndpointPort],
    address_type: AddressType,
    name: Option<String>,
) -> EndpointSlice {
    let annotations = mirrored_annotations(endpoints);
    let generate_name = match name {
        Some(_) => None,
        None => Some(generate_name_prefix(name_of(endpoints))),
    };
    EndpointSlice {
        metadata: ObjectMeta {
            name,
            generate_name,
            namespace: endpoints.metadata.namespace.clone(),
            labels: Some(mirrored_labels(endpoints)),
            annotations: (!annotations.is_empty()).then_some(annotations),
            owner_references: Some(vec![owner_reference(endpoints)]),
            ..Default::default()
        },
        address_type: address_type.as_str().to_owned(),
        endpoints: Vec::new(),
        ports: (!ports.is_empty()).then(|| ports.to_vec()),
    }
}

/// The controller reference to the Endpoints object.
pub fn owner_reference(endpoints: &Endpoints) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Endpoints".into(),
        name: name_of(endpoints).to_owned(),
        uid: endpoints.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn name_of(endpoints: &Endpoints) -> &str {
    endpoints.metadata.name.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::endpoints;

    #[test]
    fn endpoints_labels_are_mirrored_with_service_name_and_managed_by_on_top() {
        let ep = endpoints("ext")
            .label("team", "db")
            .label(SLICE_MANAGED_BY, "someone-else")
            .label(SERVICE_NAME, "other")
            .build();
        let labels = mirrored_labels(&ep);
        assert_eq!(
            labels,
            BTreeMap::from([
                ("team".to_owned(), "db".to_owned()),
                (SERVICE_NAME.to_owned(), "ext".to_owned()),
                (
                    SLICE_MANAGED_BY.to_owned(),
                    "endpointslicemirroring-controller.k8s.io".to_owned()
                ),
            ])
        );
    }

    #[test]
    fn trigger_time_and_last_applied_annotations_are_not_mirrored() {
        let ep = endpoints("ext")
            .annotation("owner", "team-db")
            .annotation(TRIGGER_TIME, "2026-01-01T00:00:00Z")
            .annotation(LAST_APPLIED_CONFIG, "{}")
            .build();
        assert_eq!(
            mirrored_annotations(&ep),
            BTreeMap::from([("owner".to_owned(), "team-db".to_owned())])
        );
    }

    #[test]
    fn mirrored_slices_are_owned_by_the_endpoints_as_controller() {
        let ep = endpoints("ext").uid("uid-ep").build();
        let slice = new_mirrored_slice(&ep, &[], AddressType::IPv4, None);
        assert_eq!(
            slice.metadata.owner_references,
            Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Endpoints".into(),
                name: "ext".into(),
                uid: "uid-ep".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }])
        );
        assert_eq!(slice.metadata.namespace.as_deref(), Some("default"));
    }

    #[test]
    fn new_slices_are_named_after_the_endpoints_with_a_generated_suffix() {
        let ep = endpoints("ext").build();
        let new = new_mirrored_slice(&ep, &[], AddressType::IPv4, None);
        assert_eq!(new.metadata.generate_name.as_deref(), Some("ext-"));
        assert_eq!(new.metadata.name, None);
        let kept = new_mirrored_slice(&ep, &[], AddressType::IPv6, Some("ext-abcde".into()));
        assert_eq!(kept.metadata.name.as_deref(), Some("ext-abcde"));
        assert_eq!(kept.metadata.generate_name, None);
        assert_eq!(kept.address_type, "IPv6");
    }

    #[test]
    fn label_or_annotation_drift_is_detected_but_own_keys_are_not_drift() {
        let ep = endpoints("ext")
            .label("team", "db")
            .annotation("owner", "a")
            .annotation(TRIGGER_TIME, "2026-01-01T00:00:00Z")
            .build();
        let current = new_mirrored_slice(&ep, &[], AddressType::IPv4, Some("ext-1".into()));
        assert!(!metadata_drifted(&current, &ep));

        type Edit = (&'static str, fn(&mut ObjectMeta));
        let edits: [Edit; 2] = [
            ("a mirrored label changed", |m| {
                m.labels
                    .as_mut()
                    .unwrap()
                    .insert("team".into(), "web".into());
            }),
            ("an annotation added by hand", |m| {
                m.annotations
                    .as_mut()
                    .unwrap()
                    .insert("added-by-hand".into(), "x".into());
            }),
        ];
        for (behaviour, edit) in edits {
            let mut drifted = current.clone();
            edit(&mut drifted.metadata);
            assert!(metadata_drifted(&drifted, &ep), "{behaviour}");
        }

        let bare = endpoints("ext").build();
        let mut no_maps = new_mirrored_slice(&bare, &[], AddressType::IPv4, Some("ext-1".into()));
        no_maps.metadata.annotations = None;
        assert!(
            !metadata_drifted(&no_maps, &bare),
            "missing maps equal empty ones"
        );
    }

    #[test]
    fn endpoints_carrying_a_slice_own_label_always_look_drifted() {
        let ep = endpoints("ext").label(SERVICE_NAME, "ext").build();
        let slice = new_mirrored_slice(&ep, &[], AddressType::IPv4, Some("ext-1".into()));
        assert!(metadata_drifted(&slice, &ep));
    }
}
