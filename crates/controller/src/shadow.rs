//! Shadow mode: the controllers run beside whoever writes, with writes turned off, and say
//! where they would write something else.
//!
//! Each sync plans as usual. Instead of writing, it hands what it would write to [`Shadow`]:
//! nothing means the objects in the cluster are what we would have written. Something is not
//! yet a divergence, because the other writer may simply not have caught up with the same
//! change; it becomes one when the same would-be writes are still there after a grace period
//! during which they did not change. Divergences are logged, counted in
//! `shadow_divergent_services` and `shadow_checks_total{result}`, and listed in a report file.
//! Nothing is written to the cluster: no objects, no Events, no Lease.

use crate::state_lock::StateLock;
use reconcile::keys::ServiceKey;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// What one check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// We would write nothing.
    Same,
    /// We would write something; check again after this long.
    Pending(Duration),
    /// We still would write the same thing after the grace period.
    Divergent,
}

impl Check {
    fn label(self) -> &'static str {
        match self {
            Check::Same => "same",
            Check::Pending(_) => "pending",
            Check::Divergent => "divergent",
        }
    }
}

/// A Service on which one controller would write something else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// Which controller: `Endpoints` or `EndpointSlice`.
    pub controller: &'static str,
    /// The Service, `namespace/name`.
    pub service: String,
    /// What the controller would write, one line each.
    pub would_write: Vec<String>,
}

#[derive(Debug)]
struct Entry {
    since: Instant,
    would_write: Vec<String>,
    reported: bool,
}

/// The shared record of every controller's checks.
#[derive(Debug)]
pub struct Shadow {
    grace: Duration,
    report: Option<PathBuf>,
    entries: StateLock<BTreeMap<(&'static str, ServiceKey), Entry>>,
    divergent: prometheus::IntGauge,
    checks: prometheus::IntCounterVec,
}

impl Shadow {
    /// A record whose divergences need `grace` without change, registered in `registry`;
    /// `report`, when given, is rewritten with the current divergences (JSON) whenever they
    /// change.
    pub fn new(
        grace: Duration,
        report: Option<PathBuf>,
        registry: &prometheus::Registry,
    ) -> Result<Self, prometheus::Error> {
        let instruments = crate::instruments::Instruments::new(registry);
        let divergent = instruments.metric::<prometheus::IntGauge>(
            "shadow_divergent_services",
            "Services on which a shadow controller would write something else, after the grace period",
        )?;
        let checks = instruments.metric_vec::<prometheus::IntCounterVec>(
            "shadow_checks_total",
            "Shadow checks of a Service, by result: same, pending or divergent",
            &["result"],
        )?;
        Ok(Self {
            grace,
            report,
            entries: StateLock::new(BTreeMap::new()),
            divergent,
            checks,
        })
    }

    /// Records one sync's would-be writes for `service` (empty: nothing to write).
    pub fn check(
        &self,
        controller: &'static str,
        service: &ServiceKey,
        would_write: Vec<String>,
    ) -> Check {
        let now = Instant::now();
        let key = (controller, service.clone());
        let (check, changed) = {
            let mut entries = self.entries.lock();
            if would_write.is_empty() {
                let was_reported = entries.remove(&key).is_some_and(|e| e.reported);
                (Check::Same, was_reported)
            } else {
                let entry = entries.entry(key).or_insert_with(|| Entry {
                    since: now,
                    would_write: Vec::new(),
                    reported: false,
                });
                if entry.would_write != would_write {
                    // Something moved: the grace period starts again.
                    let was_reported = entry.reported;
                    *entry = Entry {
                        since: now,
                        would_write,
                        reported: false,
                    };
                    (Check::Pending(self.grace), was_reported)
                } else if now.duration_since(entry.since) >= self.grace {
                    let newly = !entry.reported;
                    entry.reported = true;
                    if newly {
                        tracing::error!(
                            controller,
                            service = %service,
                            would_write = ?entry.would_write,
                            "shadow: this controller would write something else than the cluster holds"
                        );
                    }
                    (Check::Divergent, newly)
                } else {
                    let left = self.grace.saturating_sub(now.duration_since(entry.since));
                    (Check::Pending(left), false)
                }
            }
        };
        self.checks.with_label_values(&[check.label()]).inc();
        if changed {
            self.publish();
        }
        check
    }

    /// The divergences confirmed so far, by controller and Service.
    pub fn divergences(&self) -> Vec<Divergence> {
        self.entries
            .lock()
            .iter()
            .filter(|(_, e)| e.reported)
            .map(|((controller, service), e)| Divergence {
                controller,
                service: service.to_string(),
                would_write: e.would_write.clone(),
            })
            .collect()
    }

    fn publish(&self) {
        let divergences = self.divergences();
        self.divergent
            .set(i64::try_from(divergences.len()).unwrap_or(i64::MAX));
        let Some(path) = &self.report else { return };
        // A small file, rewritten only when the set changes: written in place of a separate
        // task, and through a temporary name so a reader never sees half of it.
        let tmp = path.with_extension("tmp");
        let written = serde_json::to_vec_pretty(&divergences)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(err) = written {
            tracing::warn!(path = %path.display(), %err, "shadow: writing the report failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shadow(grace: Duration) -> Shadow {
        Shadow::new(grace, None, &prometheus::Registry::new()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_difference_becomes_a_divergence_only_after_the_grace_period_without_change() {
        let s = shadow(Duration::from_secs(10));
        let web = ServiceKey::new("ns", "web");
        let writes = || vec!["update EndpointSlice web-1".to_owned()];
        assert_eq!(
            s.check("EndpointSlice", &web, writes()),
            Check::Pending(Duration::from_secs(10))
        );
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(matches!(
            s.check("EndpointSlice", &web, writes()),
            Check::Pending(_)
        ));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(s.check("EndpointSlice", &web, writes()), Check::Divergent);
        assert_eq!(s.divergences().len(), 1);
        assert_eq!(s.divergent.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_changing_difference_restarts_the_grace_period_and_agreement_clears_it() {
        let s = shadow(Duration::from_secs(10));
        let web = ServiceKey::new("ns", "web");
        s.check("EndpointSlice", &web, vec!["a".into()]);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(
            s.check("EndpointSlice", &web, vec!["b".into()]),
            Check::Pending(Duration::from_secs(10))
        );
        assert!(s.divergences().is_empty());
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(
            s.check("EndpointSlice", &web, vec!["b".into()]),
            Check::Divergent
        );
        assert_eq!(s.check("EndpointSlice", &web, Vec::new()), Check::Same);
        assert!(s.divergences().is_empty());
        assert_eq!(s.divergent.get(), 0);
    }
}
