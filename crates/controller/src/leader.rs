//! Leader election on a `coordination.k8s.io/v1` Lease, following client-go's protocol.
//!
//! Only one replica may write Endpoints and EndpointSlices, or two would fight over every
//! slice. We keep client-go's rules so that the Lease reads the same to anyone who knows
//! them: a candidate takes the Lease when it has no holder or when the record has not
//! changed, by the candidate's own clock, for the record's `leaseDurationSeconds` (clocks
//! of different machines are never compared); the leader renews every retry period and
//! gives up leading when it cannot renew within the renew deadline; on shutdown it hands
//! the Lease back (empty holder, 1s duration) so a standby takes over at once. Writes are
//! plain updates guarded by `resourceVersion`, which every API server supports. We do not
//! use kube-lease-manager: it writes with server-side apply and has its own duration/grace
//! rules rather than client-go's renew deadline and retry period.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use crate::wire::objects;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::LeaderElectionSettings;
use crate::health::Liveness;

/// How long past the renew deadline a leader may go without renewing before `/healthz`
/// fails: kube-controller-manager's leader-election health check allows 20s on top of its
/// lease duration. We count from the renew deadline, the point where a healthy elector has
/// already given up leading, so only a wedged one trips the check.
pub const HEALTH_CHECK_MARGIN: Duration = Duration::from_secs(20);

/// client-go's jitter factor for the acquire loop: waits are 1x to 2.2x the retry period.
const JITTER_FACTOR: f64 = 1.2;

/// This process's identity in the Lease: the hostname, `_`, and a random suffix, as
/// kube-controller-manager builds it (the suffix tells apart two runs on one host).
pub fn default_identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|name| name.into_string().ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "kube-endpoints".to_string());
    format!("{host}_{:016x}", random_u64())
}

/// A random number from the standard library's randomly keyed hasher; enough for an
/// identity suffix and for jitter, and no extra dependency.
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

/// Why [`LeaderElector::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadershipEnd {
    /// Shutdown was asked for; the Lease was released if we held it.
    ShutDown,
    /// The Lease could not be renewed within the renew deadline. Upstream exits the process
    /// here; the caller should too, after its controllers stopped.
    Lost,
    /// The leading future returned on its own; the Lease was released.
    Finished,
}

/// What one try decided to write.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// No Lease exists: create it with this spec.
    Create(LeaseSpec),
    /// Write this spec over the Lease we read.
    Update(LeaseSpec),
    /// Someone else holds a valid Lease.
    Wait,
}

/// The protocol's state, without I/O: the last record seen and when we saw it change.
#[derive(Debug, Clone)]
struct Election {
    identity: String,
    lease_duration: Duration,
    observed: Option<(LeaseSpec, Instant)>,
}

fn seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)
}

impl Election {
    fn new(identity: String, lease_duration: Duration) -> Self {
        Self {
            identity,
            lease_duration,
            observed: None,
        }
    }

    /// Whether the last record seen names us as holder.
    fn is_leader(&self) -> bool {
        self.observed.as_ref().is_some_and(|(spec, _)| {
            spec.holder_identity.as_deref() == Some(self.identity.as_str())
        })
    }

    /// The other holder the last record seen names, if any: someone took the Lease over (a
    /// standby after it expired by its clock, or the record came back from a restore naming
    /// an earlier leader). We no longer lead, whatever our renew deadline says.
    fn other_holder(&self) -> Option<&str> {
        let (spec, _) = self.observed.as_ref()?;
        spec.holder_identity
            .as_deref()
            .filter(|holder| !holder.is_empty() && *holder != self.identity)
    }

    /// Whether the last record seen is still in force at `now`: it changed less than its
    /// own `leaseDurationSeconds` ago, by our clock.
    fn lease_valid(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|(spec, seen)| {
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.lease_duration, Duration::from_secs);
            *seen + duration > now
        })
    }

    /// Records `spec` as seen at `now`, unless it is the record already seen.
    fn observe(&mut self, spec: &LeaseSpec, now: Instant) {
        if self.observed.as_ref().is_none_or(|(seen, _)| seen != spec) {
            self.observed = Some((spec.clone(), now));
        }
    }

    /// Records a spec we wrote successfully.
    fn wrote(&mut self, spec: LeaseSpec, now: Instant) {
        self.observed = Some((spec, now));
    }

    /// Decides what to write given the current Lease spec (`None`: no Lease exists).
    fn plan(&mut self, current: Option<&LeaseSpec>, now: Instant, wall: Timestamp) -> Step {
        let stamp = MicroTime(wall);
        let mut spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(seconds(self.lease_duration)),
            acquire_time: Some(stamp.clone()),
            renew_time: Some(stamp),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };
        let Some(current) = current else {
            return Step::Create(spec);
        };
        self.observe(current, now);
        let held = current
            .holder_identity
            .as_deref()
            .is_some_and(|holder| !holder.is_empty());
        if held && self.lease_valid(now) && !self.is_leader() {
            return Step::Wait;
        }
        let transitions = current.lease_transitions.unwrap_or(0);
        if self.is_leader() {
            spec.acquire_time.clone_from(&current.acquire_time);
            spec.lease_transitions = Some(transitions);
        } else {
            spec.lease_transitions = Some(transitions.saturating_add(1));
        }
        Step::Update(spec)
    }

    /// The spec that hands the Lease back, if we hold it.
    fn release(&self, wall: Timestamp) -> Option<LeaseSpec> {
        if !self.is_leader() {
            return None;
        }
        let transitions = self
            .observed
            .as_ref()
            .and_then(|(spec, _)| spec.lease_transitions);
        Some(LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(MicroTime(wall)),
            renew_time: Some(MicroTime(wall)),
            lease_transitions: transitions,
            ..LeaseSpec::default()
        })
    }
}

/// Runs the election for one Lease and the work of the leader.
pub struct LeaderElector {
    api: Api<Lease>,
    wire: crate::wire::Negotiated,
    settings: LeaderElectionSettings,
    election: Election,
    /// The Lease as last read or written, for its resourceVersion.
    lease: Option<Lease>,
    /// Where to report renewals, and the margin past the renew deadline it allows.
    liveness: Option<(Liveness, Duration)>,
}

impl LeaderElector {
    /// An elector for the Lease named in `settings`, competing as `identity` (see
    /// [`default_identity`]).
    pub fn new(client: Client, settings: LeaderElectionSettings, identity: String) -> Self {
        let api = Api::namespaced(client, &settings.resource_namespace);
        let election = Election::new(identity, settings.lease_duration);
        Self {
            api,
            wire: crate::wire::Negotiated::default(),
            settings,
            election,
            lease: None,
            liveness: None,
        }
    }

    /// Reports each renewal to `liveness`, which then fails when this elector leads but has
    /// not renewed for the renew deadline plus `margin` (see [`HEALTH_CHECK_MARGIN`]), and
    /// once the Lease is lost.
    pub fn with_liveness(mut self, liveness: Liveness, margin: Duration) -> Self {
        self.liveness = Some((liveness, margin));
        self
    }

    /// Reads and writes the Lease in the encoding `wire` negotiates (protobuf unless told).
    #[must_use]
    pub fn with_wire(mut self, wire: crate::wire::Negotiated) -> Self {
        self.wire = wire;
        self
    }

    /// This elector's identity.
    pub fn identity(&self) -> &str {
        &self.election.identity
    }

    /// Waits for the Lease, then runs `lead` while renewing it.
    ///
    /// `lead` gets a token that is cancelled when leadership is lost or `shutdown`
    /// completes; on shutdown it should then stop its controllers and return, and the Lease
    /// is released after it has. When the Lease is lost, `lead` is dropped where it stands,
    /// with whatever it had under way, and the Lease is left to expire. If `shutdown` completes before the Lease
    /// is acquired, `lead` never runs.
    pub async fn run<F, Fut>(mut self, lead: F, shutdown: impl Future<Output = ()>) -> LeadershipEnd
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut shutdown = std::pin::pin!(shutdown);
        let name = self.settings.resource_name.clone();
        let namespace = self.settings.resource_namespace.clone();
        info!(lease = %name, %namespace, identity = %self.identity(), "attempting to acquire leader lease");
        loop {
            if self.try_acquire_or_renew().await {
                break;
            }
            let pause = self
                .settings
                .retry_period
                .mul_f64(1.0 + JITTER_FACTOR * unit_random());
            tokio::select! {
                () = &mut shutdown => return LeadershipEnd::ShutDown,
                () = tokio::time::sleep(pause) => {}
            }
        }
        info!(lease = %name, %namespace, identity = %self.identity(), "acquired leader lease");

        let token = CancellationToken::new();
        let lead = lead(token.clone());
        let mut lead = std::pin::pin!(lead);
        let end = tokio::select! {
            () = &mut lead => None,
            () = self.keep_renewing() => Some(LeadershipEnd::Lost),
            () = &mut shutdown => Some(LeadershipEnd::ShutDown),
        };
        token.cancel();
        if end == Some(LeadershipEnd::Lost) {
            // Before waiting for the controllers: if they hang while stopping, the liveness
            // probe restarts the process.
            if let Some((liveness, _)) = &self.liveness {
                liveness.lost();
            }
        }
        let end = match end {
            // Another replica may lead from now on: in-flight syncs are abandoned, not
            // finished, so that nothing is written on a lease this replica no longer holds
            // (kube-controller-manager exits at once for the same reason). Dropping `lead`
            // drops the controllers and the requests they have under way.
            Some(LeadershipEnd::Lost) => LeadershipEnd::Lost,
            Some(end) => {
                lead.await;
                end
            }
            None => LeadershipEnd::Finished,
        };
        if end == LeadershipEnd::Lost {
            warn!(lease = %name, %namespace, "leader lease lost");
        } else {
            self.release().await;
        }
        end
    }

    /// Renews every retry period; returns when a renewal did not succeed within the renew
    /// deadline, or as soon as the Lease reads as held by another replica.
    ///
    /// client-go goes on leading until its renew deadline even after it read another holder
    /// in the record. We stop at once: every write made in that window races the new
    /// leader's, and an Endpoints object written last by the old leader is one no event
    /// brings back to the new one.
    async fn keep_renewing(&mut self) {
        loop {
            tokio::time::sleep(self.settings.retry_period).await;
            let deadline = Instant::now() + self.settings.renew_deadline;
            loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(true) => break,
                    Ok(false) => {
                        if let Some(holder) = self.election.other_holder() {
                            warn!(
                                lease = %self.settings.resource_name,
                                %holder,
                                "the leader lease is held by another replica"
                            );
                            return;
                        }
                    }
                    Err(_) => return,
                }
                let next = Instant::now() + self.settings.retry_period;
                if next >= deadline {
                    tokio::time::sleep_until(deadline).await;
                    return;
                }
                tokio::time::sleep_until(next).await;
            }
        }
    }

    /// One round of the protocol; `true` when we hold the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let name = self.settings.resource_name.clone();
        let current = match objects::get_opt(&self.api, &name, &self.wire).await {
            Ok(current) => current,
            Err(error) => {
                warn!(lease = %name, %error, "cannot read leader lease");
                return false;
            }
        };
        let now = Instant::now();
        // A Lease without a spec reads as one without a holder.
        let spec = current
            .as_ref()
            .map(|lease| lease.spec.clone().unwrap_or_default());
        let step = self.election.plan(spec.as_ref(), now, Timestamp::now());
        let written = match step {
            Step::Wait => return false,
            Step::Create(spec) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(self.settings.resource_namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                objects::create(&self.api, &lease, &PostParams::default(), &self.wire).await
            }
            Step::Update(spec) => {
                let Some(mut lease) = current else {
                    return false;
                };
                lease.spec = Some(spec);
                objects::replace(&self.api, &name, &lease, &PostParams::default(), &self.wire).await
            }
        };
        match written {
            Ok(lease) => {
                let spec = lease.spec.clone().unwrap_or_default();
                self.election.wrote(spec, Instant::now());
                self.lease = Some(lease);
                let leading = self.election.is_leader();
                if let (true, Some((liveness, margin))) = (leading, &self.liveness) {
                    liveness.renewed(self.settings.renew_deadline + *margin);
                }
                leading
            }
            Err(error) => {
                warn!(lease = %name, %error, "cannot write leader lease");
                false
            }
        }
    }

    /// Hands the Lease back so that a standby need not wait for it to expire.
    async fn release(&mut self) {
        let Some(spec) = self.election.release(Timestamp::now()) else {
            return;
        };
        let Some(mut lease) = self.lease.take() else {
            return;
        };
        lease.spec = Some(spec);
        let name = self.settings.resource_name.clone();
        match objects::replace(&self.api, &name, &lease, &PostParams::default(), &self.wire).await {
            Ok(_) => {
                info!(lease = %name, "released leader lease");
                if let Some((liveness, _)) = &self.liveness {
                    liveness.not_leading();
                }
            }
            Err(error) => warn!(lease = %name, %error, "cannot release leader lease"),
        }
    }
}

/// A random number in `[0, 1)`.
fn unit_random() -> f64 {
    // 53 random bits fill an f64's mantissa exactly.
    (random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests;
