//! Trimming decoded slices and Endpoints to their length before they are cached.
//!
//! A JSON array does not say how long it is, so decoding grows each `Vec` by doubling: a slice
//! of 50 endpoints holds room for 64, and every endpoint's one address sits in room for four.
//! The informers keep these objects for as long as they exist, so the slack would be paid
//! for every cached endpoint; trimming it once, when the object arrives, costs a reallocation
//! per list instead of a copy of the whole object.

use k8s_openapi::api::core::v1::{EndpointSubset, Endpoints};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Trims every list of an EndpointSlice, endpoints and their addresses included.
pub fn fit_slice(slice: &mut EndpointSlice) {
    fit_meta(&mut slice.metadata);
    slice.endpoints.shrink_to_fit();
    for endpoint in &mut slice.endpoints {
        endpoint.addresses.shrink_to_fit();
        if let Some(hints) = endpoint.hints.as_mut() {
            fit(&mut hints.for_zones);
            fit(&mut hints.for_nodes);
        }
    }
    fit(&mut slice.ports);
}

/// Trims every list of an Endpoints object, subsets and their addresses included.
pub fn fit_endpoints(endpoints: &mut Endpoints) {
    fit_meta(&mut endpoints.metadata);
    if let Some(subsets) = endpoints.subsets.as_mut() {
        subsets.shrink_to_fit();
        subsets.iter_mut().for_each(fit_subset);
    }
}

fn fit_subset(subset: &mut EndpointSubset) {
    fit(&mut subset.addresses);
    fit(&mut subset.not_ready_addresses);
    fit(&mut subset.ports);
}

fn fit_meta(meta: &mut ObjectMeta) {
    fit(&mut meta.owner_references);
    fit(&mut meta.finalizers);
}

fn fit<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list.as_mut() {
        list.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decoded_lists_are_trimmed_to_their_length() {
        let endpoints: Vec<_> = (0..5)
            .map(|i| json!({"addresses": [format!("10.0.0.{i}")], "conditions": {"ready": true}}))
            .collect();
        // Decoded from text, as the informers decode: a `Value` would tell the lengths.
        let mut slice: EndpointSlice = serde_json::from_str(
            &json!({
                "metadata": {"name": "web-abc", "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "u"}]},
                "addressType": "IPv4", "endpoints": endpoints,
                "ports": [{"name": "http", "port": 80}]
            })
            .to_string(),
        )
        .unwrap();
        let before = slice.clone();
        assert!(
            slice.endpoints.capacity() > 5,
            "decoding left no slack to trim"
        );
        fit_slice(&mut slice);
        assert_eq!(slice, before);
        assert_eq!(slice.endpoints.capacity(), 5);
        assert!(slice.endpoints.iter().all(|e| e.addresses.capacity() == 1));
        assert_eq!(slice.ports.as_ref().unwrap().capacity(), 1);
        assert_eq!(
            slice.metadata.owner_references.as_ref().unwrap().capacity(),
            1
        );

        let addresses: Vec<_> = (0..3)
            .map(|i| json!({"ip": format!("10.0.0.{i}")}))
            .collect();
        let mut endpoints: Endpoints = serde_json::from_str(
            &json!({
                "metadata": {"name": "web"},
                "subsets": [{"addresses": addresses, "ports": [{"port": 80}]}]
            })
            .to_string(),
        )
        .unwrap();
        let before = endpoints.clone();
        fit_endpoints(&mut endpoints);
        assert_eq!(endpoints, before);
        let subsets = endpoints.subsets.as_ref().unwrap();
        assert_eq!(subsets.capacity(), 1);
        assert_eq!(subsets[0].addresses.as_ref().unwrap().capacity(), 3);
    }
}
