//! The placeholder: a Service whose slices would all go away keeps one empty slice, so
//! consumers can tell "no endpoints" from "not reconciled yet".

use crate::address_family::AddressType;
use crate::projection::ServiceInfo;
use crate::slice::fill::new_slice;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use std::sync::Arc;

/// The placeholder slice for an address type: no ports, no endpoints.
pub fn placeholder(service: &ServiceInfo, address_type: AddressType) -> EndpointSlice {
    new_slice(service, &[], address_type)
}

/// True when an existing slice already is the placeholder: same namespace, labels and
/// address type, and neither ports nor endpoints. Upstream compares only these fields, so
/// a matching slice is kept instead of being deleted and created again.
pub fn is_placeholder(existing: &Arc<EndpointSlice>, wanted: &EndpointSlice) -> bool {
    existing.metadata.namespace == wanted.metadata.namespace
        && existing.metadata.labels.clone().unwrap_or_default()
            == wanted.metadata.labels.clone().unwrap_or_default()
        && existing.address_type == wanted.address_type
        && existing.endpoints.is_empty()
        && existing.ports.as_ref().is_none_or(|p| p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::service;

    #[test]
    fn an_identical_placeholder_is_recognised() {
        let svc = service("s").build();
        let mut existing = placeholder(&svc, AddressType::IPv4);
        existing.metadata.name = Some("s-abcde".into());
        assert!(is_placeholder(
            &Arc::new(existing.clone()),
            &placeholder(&svc, AddressType::IPv4)
        ));
        existing
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("x".into(), "y".into());
        assert!(!is_placeholder(
            &Arc::new(existing),
            &placeholder(&svc, AddressType::IPv4)
        ));
    }
}
