//! Which watch events make the mirroring controller sync which Endpoints key.
//!
//! The handlers only decide what to queue; these rules are upstream's, kept here so the live
//! controller's handlers stay free of decisions. A Service matters only while it has no
//! selector (or when it gains or loses one); an Endpoints object only while it may be
//! mirrored (or when it stops being so); a slice only when it is (or was) a mirrored slice and
//! the change is not the echo of our own write. Keys from slice events are queued after
//! `--mirroring-endpointslice-updates-batch-period`; the others at once.

use crate::keys::ServiceKey;
use crate::labels::SERVICE_NAME;
use crate::mirroring::is_mirrored;
use crate::mirroring::selection::should_mirror;
use crate::projection::ServiceInfo;
use crate::slice::service_name_of;
use crate::slice::tracker::SliceTracker;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// The key to sync after a Service was added (`old` is `None`), updated, or deleted (`new` is
/// `None`): an added or deleted Service without a selector, or an updated one that gained or
/// lost its selector.
pub fn on_service_event(
    old: Option<&ServiceInfo>,
    new: Option<&ServiceInfo>,
) -> Option<ServiceKey> {
    let queue = match (old, new) {
        (None, Some(svc)) | (Some(svc), None) => svc.selector.is_none(),
        (Some(old), Some(new)) => old.selector.is_none() != new.selector.is_none(),
        (None, None) => false,
    };
    let svc = new.or(old)?;
    queue.then(|| svc.key())
}

/// The key to sync after an Endpoints object was added, updated or deleted: when the new or
/// the old version may be mirrored (so an object that just opted out still has its slices
/// removed).
pub fn on_endpoints_event(old: Option<&Endpoints>, new: Option<&Endpoints>) -> Option<ServiceKey> {
    let queue = old.is_some_and(should_mirror) || new.is_some_and(should_mirror);
    let meta = &new.or(old)?.metadata;
    let key = ServiceKey::new(meta.namespace.clone()?, meta.name.clone()?);
    queue.then_some(key)
}

/// The key to sync after a slice appeared: a mirrored slice we did not write ourselves.
pub fn on_slice_added(slice: &EndpointSlice, tracker: &SliceTracker) -> Option<ServiceKey> {
    if is_mirrored(slice) && tracker.should_sync(slice) {
        endpoints_key(slice)
    } else {
        None
    }
}

/// The keys to sync after a slice changed. A changed service-name label queues both names
/// (whoever manages the slice, since the label is what ties it to an Endpoints); otherwise a
/// slice that became or stopped being mirrored, or a mirrored slice changed by someone else.
pub fn on_slice_updated(
    old: &EndpointSlice,
    new: &EndpointSlice,
    tracker: &SliceTracker,
) -> Vec<ServiceKey> {
    let label = |s: &EndpointSlice| {
        s.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME))
            .cloned()
    };
    if label(old) != label(new) {
        return [endpoints_key(new), endpoints_key(old)]
            .into_iter()
            .flatten()
            .collect();
    }
    let managed_by_changed = is_mirrored(old) != is_mirrored(new);
    if managed_by_changed || (is_mirrored(new) && tracker.should_sync(new)) {
        endpoints_key(new).into_iter().collect()
    } else {
        Vec::new()
    }
}

/// The key to sync after a slice was deleted: a mirrored slice whose deletion we did not ask
/// for. The tracker forgets the slice.
///
/// Upstream syncs only for slices its tracker knows, that is slices this process wrote. We
/// also sync for one it never wrote: a slice restored from a backup carries its old owner's
/// uid, so the garbage collector deletes it once the restored Endpoints has a new uid, and
/// nothing would write it again until the Endpoints changes. The sync writes nothing when
/// the slice should be gone.
pub fn on_slice_deleted(slice: &EndpointSlice, tracker: &mut SliceTracker) -> Option<ServiceKey> {
    if is_mirrored(slice) && tracker.handle_deleted(slice) {
        endpoints_key(slice)
    } else {
        None
    }
}

/// The Endpoints a mirrored slice belongs to; `None` for any other slice.
pub fn mirrored_key(slice: &EndpointSlice) -> Option<ServiceKey> {
    if is_mirrored(slice) {
        endpoints_key(slice)
    } else {
        None
    }
}

/// The Endpoints a slice belongs to: its namespace and service-name label.
fn endpoints_key(slice: &EndpointSlice) -> Option<ServiceKey> {
    let namespace = slice.metadata.namespace.clone()?;
    Some(ServiceKey::new(namespace, service_name_of(slice)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoints::LEADER_ANNOTATION;
    use crate::labels::{SKIP_MIRROR, SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY};
    use crate::testing::{endpoints, service};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn key(name: &str) -> ServiceKey {
        ServiceKey::new("default", name)
    }

    fn slice(service: &str, managed_by: &str, generation: i64) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some(format!("{service}-abc")),
                uid: Some("uid-slice".into()),
                generation: Some(generation),
                labels: Some(
                    [
                        (SERVICE_NAME.to_owned(), service.to_owned()),
                        (SLICE_MANAGED_BY.to_owned(), managed_by.to_owned()),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: Vec::new(),
            ports: None,
        }
    }

    const MIRRORING: &str = crate::labels::MIRRORING_CONTROLLER_NAME;

    #[test]
    fn service_events_queue_only_selectorless_services_or_selector_flips() {
        let without = service("ext").no_selector().build();
        let with = service("ext").build();
        assert_eq!(on_service_event(None, Some(&without)), Some(key("ext")));
        assert_eq!(on_service_event(None, Some(&with)), None);
        assert_eq!(on_service_event(Some(&without), None), Some(key("ext")));
        assert_eq!(on_service_event(Some(&with), None), None);
        assert_eq!(
            on_service_event(Some(&with), Some(&without)),
            Some(key("ext"))
        );
        assert_eq!(
            on_service_event(Some(&without), Some(&with)),
            Some(key("ext"))
        );
        assert_eq!(on_service_event(Some(&without), Some(&without)), None);
    }

    #[test]
    fn endpoints_events_queue_while_either_version_may_be_mirrored() {
        let plain = endpoints("ext").build();
        let skipped = endpoints("ext").label(SKIP_MIRROR, "true").build();
        let leader = endpoints("ext").annotation(LEADER_ANNOTATION, "{}").build();
        assert_eq!(on_endpoints_event(None, Some(&plain)), Some(key("ext")));
        assert_eq!(on_endpoints_event(None, Some(&leader)), None);
        assert_eq!(
            on_endpoints_event(Some(&plain), Some(&skipped)),
            Some(key("ext"))
        );
        assert_eq!(on_endpoints_event(Some(&skipped), Some(&skipped)), None);
        assert_eq!(on_endpoints_event(Some(&skipped), None), None);
        assert_eq!(on_endpoints_event(Some(&plain), None), Some(key("ext")));
    }

    #[test]
    fn slice_events_ignore_our_own_writes_and_other_controllers_slices() {
        let mut tracker = SliceTracker::default();
        let ours = slice("ext", MIRRORING, 2);
        assert_eq!(on_slice_added(&ours, &tracker), Some(key("ext")));
        tracker.update(&ours);
        assert_eq!(on_slice_added(&ours, &tracker), None, "echo of our write");
        assert_eq!(
            on_slice_updated(&ours, &ours, &tracker),
            Vec::<ServiceKey>::new()
        );
        let edited = slice("ext", MIRRORING, 3);
        assert_eq!(on_slice_updated(&ours, &edited, &tracker), vec![key("ext")]);
        let other = slice("web", SLICE_CONTROLLER_NAME, 1);
        assert_eq!(on_slice_added(&other, &tracker), None);
    }

    #[test]
    fn slice_taken_over_or_renamed_queues_every_endpoints_concerned() {
        let tracker = SliceTracker::default();
        let ours = slice("ext", MIRRORING, 1);
        let taken = slice("ext", "someone-else", 1);
        assert_eq!(on_slice_updated(&ours, &taken, &tracker), vec![key("ext")]);
        let renamed = slice("other", "someone-else", 1);
        assert_eq!(
            on_slice_updated(&taken, &renamed, &tracker),
            vec![key("other"), key("ext")]
        );
    }

    #[test]
    fn unexpected_deletion_of_a_mirrored_slice_queues_its_endpoints() {
        let mut tracker = SliceTracker::default();
        let ours = slice("ext", MIRRORING, 1);
        // One this process never wrote too (restored from a backup, say).
        assert_eq!(
            on_slice_deleted(&ours, &mut tracker),
            Some(key("ext")),
            "never tracked"
        );
        tracker.update(&ours);
        assert_eq!(on_slice_deleted(&ours, &mut tracker), Some(key("ext")));
        tracker.update(&ours);
        tracker.expect_deletion(&ours);
        assert_eq!(
            on_slice_deleted(&ours, &mut tracker),
            None,
            "our own delete"
        );
    }
}
