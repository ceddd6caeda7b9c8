//! Leases (`coordination.k8s.io/v1`), both ways: every field of a lease's spec is a Go
//! pointer.

use super::meta::{micro_time, micro_time_option_to_pb, object_meta, object_meta_to_pb};
use super::{WireKind, WriteKind};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_pb::api::coordination::v1 as pb;

impl WireKind for Lease {
    type Message = pb::Lease;

    fn from_message(lease: pb::Lease) -> Self {
        Lease {
            metadata: object_meta(lease.metadata.unwrap_or_default()),
            spec: lease.spec.map(|s| LeaseSpec {
                acquire_time: micro_time(s.acquire_time),
                holder_identity: s.holder_identity,
                lease_duration_seconds: s.lease_duration_seconds,
                lease_transitions: s.lease_transitions,
                preferred_holder: s.preferred_holder,
                renew_time: micro_time(s.renew_time),
                strategy: s.strategy,
            }),
        }
    }
}

impl WriteKind for Lease {
    type Full = pb::Lease;

    fn to_message(&self) -> pb::Lease {
        pb::Lease {
            metadata: Some(object_meta_to_pb(&self.metadata)),
            spec: self.spec.as_ref().map(|s| pb::LeaseSpec {
                holder_identity: s.holder_identity.clone(),
                lease_duration_seconds: s.lease_duration_seconds,
                acquire_time: micro_time_option_to_pb(s.acquire_time.as_ref()),
                renew_time: micro_time_option_to_pb(s.renew_time.as_ref()),
                lease_transitions: s.lease_transitions,
                strategy: s.strategy.clone(),
                preferred_holder: s.preferred_holder.clone(),
            }),
        }
    }
}
