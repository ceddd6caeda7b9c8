//! Rewriting the uids one loaded object uses to refer to another.
//!
//! A manifest dump carries the uids of the cluster it came from, and the server assigns new
//! ones on create. References by uid (an `ownerReferences` entry, an address's `targetRef`, an
//! event's `involvedObject` or `regarding`) must follow, or pre-existing EndpointSlices stop
//! being owned by their Service and the controller recreates them instead of reusing them
//! (`shared/conformance/README.md`, "Loading").

use serde_json::Value;
use std::collections::BTreeMap;

/// Input uid to the uid the server assigned to the same object.
pub(super) type UidMap = BTreeMap<String, String>;

/// Replaces every uid reference of `object` found in `uids`; returns whether anything changed.
/// References to uids not in the map (objects that were not loaded) are left as they are.
pub(super) fn remap_references(object: &mut Value, uids: &UidMap) -> bool {
    let mut changed = false;
    for_each_reference(object, &mut |reference| {
        let Some(uid) = reference.get_mut("uid") else {
            return;
        };
        if let Some(new) = uid.as_str().and_then(|old| uids.get(old)) {
            if uid != new.as_str() {
                *uid = Value::String(new.clone());
                changed = true;
            }
        }
    });
    changed
}

/// Calls `f` on each object reference (a JSON object with a `uid`) held by `object`.
fn for_each_reference(object: &mut Value, f: &mut impl FnMut(&mut Value)) {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Some(owners) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("ownerReferences"))
        .and_then(Value::as_array_mut)
    {
        owners.iter_mut().for_each(&mut *f);
    }
    match kind.as_str() {
        "Endpoints" => {
            for subset in array_mut(object, "subsets") {
                for field in ["addresses", "notReadyAddresses"] {
                    for address in array_mut(subset, field) {
                        if let Some(target) = address.get_mut("targetRef") {
                            f(target);
                        }
                    }
                }
            }
        }
        "EndpointSlice" => {
            for endpoint in array_mut(object, "endpoints") {
                if let Some(target) = endpoint.get_mut("targetRef") {
                    f(target);
                }
            }
        }
        "Event" => {
            // Core events name `involvedObject`, events.k8s.io ones `regarding` and `related`.
            for field in ["involvedObject", "regarding", "related"] {
                if let Some(target) = object.get_mut(field) {
                    f(target);
                }
            }
        }
        _ => {}
    }
}

fn array_mut<'a>(value: &'a mut Value, field: &str) -> impl Iterator<Item = &'a mut Value> {
    value
        .get_mut(field)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn uids() -> UidMap {
        UidMap::from([
            ("old-svc".to_owned(), "new-svc".to_owned()),
            ("old-pod".to_owned(), "new-pod".to_owned()),
        ])
    }

    #[test]
    fn slice_owner_and_target_refs_follow_the_new_uids() {
        let mut slice = json!({
            "kind": "EndpointSlice",
            "metadata": {"ownerReferences": [
                {"kind": "Service", "name": "web", "uid": "old-svc"},
                {"kind": "Thing", "name": "x", "uid": "not-loaded"},
            ]},
            "endpoints": [{"addresses": ["10.0.0.1"], "targetRef": {"kind": "Pod", "uid": "old-pod"}}],
        });
        assert!(remap_references(&mut slice, &uids()));
        assert_eq!(slice["metadata"]["ownerReferences"][0]["uid"], "new-svc");
        assert_eq!(slice["metadata"]["ownerReferences"][1]["uid"], "not-loaded");
        assert_eq!(slice["endpoints"][0]["targetRef"]["uid"], "new-pod");
    }

    #[test]
    fn endpoints_addresses_of_both_readiness_follow_the_new_uids() {
        let mut endpoints = json!({
            "kind": "Endpoints",
            "subsets": [{
                "addresses": [{"ip": "10.0.0.1", "targetRef": {"uid": "old-pod"}}],
                "notReadyAddresses": [{"ip": "10.0.0.2", "targetRef": {"uid": "old-pod"}}],
            }],
        });
        assert!(remap_references(&mut endpoints, &uids()));
        assert_eq!(
            endpoints["subsets"][0]["addresses"][0]["targetRef"]["uid"],
            "new-pod"
        );
        assert_eq!(
            endpoints["subsets"][0]["notReadyAddresses"][0]["targetRef"]["uid"],
            "new-pod"
        );
    }

    #[test]
    fn object_without_known_references_is_unchanged() {
        let mut pod = json!({
            "kind": "Pod",
            "metadata": {"ownerReferences": [{"kind": "ReplicaSet", "uid": "rs-uid"}]},
        });
        let before = pod.clone();
        assert!(!remap_references(&mut pod, &uids()));
        assert_eq!(pod, before);
    }
}
