//! Last touches before writing: creates recycle slices that would be deleted, and every
//! written slice gets the trigger-time annotation.

use crate::projection::ServiceInfo;
use crate::slice::is_owned_by;
use crate::trigger_time::{self, ANNOTATION};
use crate::Timestamp;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use std::sync::Arc;

/// Turns creates into updates of slices marked for deletion, taking their names: one write
/// instead of two, and no moment where the endpoints are missing. Only a slice of the same
/// address type that the Service owns is recycled, so a slice left by an older Service of the
/// same name (being garbage collected) is never taken over.
pub fn recycle_deletes(
    service: &ServiceInfo,
    create: &mut Vec<EndpointSlice>,
    update: &mut Vec<EndpointSlice>,
    delete: &mut Vec<Arc<EndpointSlice>>,
) {
    let mut i = 0;
    while i < delete.len() {
        let Some(last) = create.last() else { break };
        let doomed = &delete[i];
        if doomed.address_type == last.address_type && is_owned_by(doomed, service) {
            let mut slice = create.pop().expect("checked non-empty above");
            slice.metadata.name = doomed.metadata.name.clone();
            update.push(slice);
            delete.remove(i);
        } else {
            i += 1;
        }
    }
}

/// Sets or removes the trigger-time annotation.
pub fn set_trigger_time(slice: &mut EndpointSlice, trigger_time: Option<Timestamp>) {
    let annotations = slice
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    match trigger_time {
        Some(t) => {
            annotations.insert(ANNOTATION.to_owned(), trigger_time::format(t));
        }
        None => {
            annotations.remove(ANNOTATION);
        }
    }
    if annotations.is_empty() {
        slice.metadata.annotations = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address_family::AddressType;
    use crate::slice::fill::new_slice;
    use crate::testing::{service, ts};

    fn named(mut s: EndpointSlice, name: &str) -> Arc<EndpointSlice> {
        s.metadata.name = Some(name.into());
        Arc::new(s)
    }

    #[test]
    fn creates_take_over_owned_slices_of_the_same_address_type() {
        let svc = service("s").build();
        let mut create = vec![new_slice(&svc, &[], AddressType::IPv4)];
        let mut update = vec![];
        let mut delete = vec![named(new_slice(&svc, &[], AddressType::IPv4), "s-old")];
        recycle_deletes(&svc, &mut create, &mut update, &mut delete);
        assert!(create.is_empty() && delete.is_empty());
        assert_eq!(update[0].metadata.name.as_deref(), Some("s-old"));
    }

    #[test]
    fn slices_of_another_owner_or_type_are_not_recycled() {
        let svc = service("s").build();
        let other = service("s").build();
        let mut other = other;
        other.uid = "someone-else".into();
        let mut create = vec![new_slice(&svc, &[], AddressType::IPv4)];
        let mut update = vec![];
        let mut delete = vec![
            named(new_slice(&other, &[], AddressType::IPv4), "s-foreign"),
            named(new_slice(&svc, &[], AddressType::IPv6), "s-v6"),
        ];
        recycle_deletes(&svc, &mut create, &mut update, &mut delete);
        assert_eq!(create.len(), 1);
        assert_eq!(delete.len(), 2);
    }

    #[test]
    fn trigger_time_is_set_and_removed() {
        let svc = service("s").build();
        let mut s = new_slice(&svc, &[], AddressType::IPv4);
        set_trigger_time(&mut s, Some(ts("2026-01-01T00:00:00Z")));
        assert_eq!(
            s.metadata.annotations.as_ref().unwrap()[ANNOTATION],
            "2026-01-01T00:00:00Z"
        );
        set_trigger_time(&mut s, None);
        assert_eq!(s.metadata.annotations, None);
    }
}
