//! The schedule of one seed: which controllers run, what the cluster starts with, and the
//! timed list of churn and faults to apply. Pure data drawn from the seed, so a failing seed
//! can be printed and re-run alone.

use apiserver::SeededRng;
use std::fmt;
use std::time::Duration;

/// Namespaces the workload uses (the first is always there; each seed takes one or two more).
pub const NAMESPACES: &[&str] = &["default", "shop", "ops"];
/// Apps a pod can be labelled with and a Service can select.
pub const APPS: &[&str] = &["web", "api"];
/// Services per namespace are drawn from these names.
pub const SERVICES: &[&str] = &["svc-0", "svc-1", "svc-2"];
/// The index in [`SERVICES`] of the headless Service.
pub const HEADLESS: usize = 2;
/// Pods per namespace are drawn from these names.
pub const PODS: usize = 6;
/// Nodes, with their zones; they never change.
pub const NODES: &[(&str, &str)] = &[("node-a", "zone-a"), ("node-b", "zone-b")];

/// How the controllers are deployed for a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One `controller::run`, crashed and restarted by the schedule.
    Single,
    /// Two leader-elected replicas, handing over by the schedule.
    Pair,
}

/// The ports a Service exposes; pods always carry `http` 8080 and `metrics` 9090.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSet {
    /// `http` 80 -> 8080.
    Http,
    /// `http` 80 -> named `http`, `metrics` 9090 -> 9090.
    HttpAndMetrics,
    /// `web` 8080 -> 8080.
    Web,
}

/// What a Service looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceShape {
    /// The app it selects; `None` is a selector-less Service, whose Endpoints are written
    /// by hand and mirrored.
    pub selector: Option<&'static str>,
    /// Its ports.
    pub ports: PortSet,
    /// `clusterIP: None`: always for [`HEADLESS`], never for the others. Upstream's
    /// Endpoints controller leaves out the headless label when it decides whether Endpoints
    /// need an update, so a Service deleted and re-created with the other kind, synced once
    /// for both, keeps the old label: an end state only that history reaches.
    pub headless: bool,
    /// `publishNotReadyAddresses`.
    pub publish_not_ready: bool,
}

/// A pod as the workload wants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodShape {
    /// Its `app` label.
    pub app: &'static str,
    /// Its node.
    pub node: usize,
    /// Which of its IPs it has (IPs are unique per namespace, pod and generation).
    pub ip_generation: u8,
    /// Ready condition.
    pub ready: bool,
}

/// One change the workload makes, as a user or kubelet would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Churn {
    /// Create the pod, or make an existing one look like this.
    PutPod {
        ns: usize,
        pod: usize,
        shape: PodShape,
    },
    /// Delete a pod.
    DeletePod { ns: usize, pod: usize },
    /// Set a pod's Ready condition.
    SetReady { ns: usize, pod: usize, ready: bool },
    /// Give a pod a new IP.
    SetIp {
        ns: usize,
        pod: usize,
        generation: u8,
    },
    /// Create the Service, or give an existing one this shape.
    PutService {
        ns: usize,
        service: usize,
        shape: ServiceShape,
    },
    /// Delete a Service (and, as a user would, its hand-written Endpoints).
    DeleteService { ns: usize, service: usize },
    /// Write a selector-less Service's Endpoints by hand (skipped when the Service has a
    /// selector or does not exist).
    PutEndpoints {
        ns: usize,
        service: usize,
        addresses: Vec<u8>,
    },
    /// Delete a Service's Endpoints, whoever wrote them.
    DeleteEndpoints { ns: usize, service: usize },
    // No "delete a slice": upstream re-creates a deleted slice only when this very
    // controller process wrote it (its tracker knows the slice), so after a restart or
    // hand-over the slice stays missing until the Service syncs for another reason. That
    // end state depends on the history, and no run from scratch reproduces it.
}

/// Which kind of request an error or latency rule hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Verb, or `*`.
    pub verb: &'static str,
    /// Resource plural, or `*`.
    pub resource: &'static str,
}

/// The answer an error rule gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 500.
    Internal,
    /// 429 with Retry-After.
    TooMany,
    /// 409.
    Conflict,
}

/// A fault that holds until lifted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// Fail a share of matching requests.
    Errors {
        target: Target,
        rate: f64,
        kind: ErrorKind,
    },
    /// Delay matching requests.
    Latency { target: Target, delay: Duration },
    /// Close each watch after this many events.
    ShortWatches { events: u64 },
}

/// A fault that happens at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The next `count` updates of `resource` get a 409.
    Conflicts { resource: &'static str, count: u64 },
    /// Every open watch is closed.
    DropWatches,
    /// The next watch of `resource` gets a 410, and every watch is closed to make it happen.
    ExpireWatch { resource: &'static str },
    /// The history is forgotten and every watch closed: every informer resumes into a 410.
    Compact,
    /// A copy of the cluster's objects is kept, for a later restart to come back to.
    Backup,
    /// The API server restarts with fresh state (new resourceVersions and uids), holding the
    /// objects it holds now or, with `from_backup`, those of the last backup.
    ServerRestart { from_backup: bool },
    /// The single controller stops (cancelled, or aborted mid-sync when `abrupt`) and a new
    /// one starts with empty caches after `down`.
    ControllerRestart { abrupt: bool, down: Duration },
    /// The leading replica shuts down (releasing the Lease) and a new replica starts.
    HandOver,
    /// The leading replica loses its connection to the API server for `down`: its renewals
    /// fail, it gives up, the standby takes over; then it comes back as a new replica.
    Partition { down: Duration },
}

/// What happens at a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A workload change.
    Churn(Churn),
    /// A rule starts; `id` names it for [`Action::Lift`].
    Impose { id: usize, rule: Rule },
    /// A rule ends.
    Lift { id: usize },
    /// An instant fault.
    Fault(Event),
}

/// One timed action.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Time since the schedule started.
    pub at: Duration,
    /// What to do.
    pub action: Action,
}

/// Everything one seed runs.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed it was drawn from.
    pub seed: u64,
    /// How the controllers run.
    pub topology: Topology,
    /// How many of [`NAMESPACES`] are used.
    pub namespaces: usize,
    /// The workload before the controllers start (applied in order, without faults).
    pub initial: Vec<Churn>,
    /// The steps, by time.
    pub steps: Vec<Step>,
}

/// What the schedules may contain.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    /// Draw API server restarts with lost state.
    pub restarts: bool,
    /// How long the faults and churn last.
    pub span: Duration,
}

struct Draw(SeededRng);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    fn coin(&mut self) -> bool {
        self.0.coin()
    }
    /// True with probability `percent`/100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.0.next_u64() % (to - from + 1))
    }

    fn service_shape(&mut self, service: usize) -> ServiceShape {
        let selector = if self.chance(25) {
            None
        } else {
            Some(self.pick(APPS))
        };
        ServiceShape {
            selector,
            ports: self.pick(&[PortSet::Http, PortSet::HttpAndMetrics, PortSet::Web]),
            headless: service == HEADLESS,
            publish_not_ready: self.chance(20),
        }
    }

    fn pod_shape(&mut self) -> PodShape {
        PodShape {
            app: self.pick(APPS),
            node: self.below(NODES.len()),
            ip_generation: 0,
            ready: self.chance(75),
        }
    }

    fn addresses(&mut self) -> Vec<u8> {
        let n = 1 + self.below(3);
        let mut addresses: Vec<u8> = (0..n).map(|_| 1 + self.below(20) as u8).collect();
        addresses.sort_unstable();
        addresses.dedup();
        addresses
    }

    fn churn(&mut self, namespaces: usize) -> Churn {
        let ns = self.below(namespaces);
        let pod = self.below(PODS);
        let service = self.below(SERVICES.len());
        match self.below(100) {
            0..=24 => Churn::PutPod {
                ns,
                pod,
                shape: self.pod_shape(),
            },
            25..=34 => Churn::DeletePod { ns, pod },
            35..=54 => Churn::SetReady {
                ns,
                pod,
                ready: self.coin(),
            },
            55..=62 => Churn::SetIp {
                ns,
                pod,
                generation: 1 + self.below(3) as u8,
            },
            63..=74 => Churn::PutService {
                ns,
                service,
                shape: self.service_shape(service),
            },
            75..=79 => Churn::DeleteService { ns, service },
            80..=89 => Churn::PutEndpoints {
                ns,
                service,
                addresses: self.addresses(),
            },
            90..=94 => Churn::DeleteEndpoints { ns, service },
            _ => Churn::SetReady {
                ns,
                pod,
                ready: self.coin(),
            },
        }
    }

    fn target(&mut self) -> Target {
        let verb = self.pick(&["*", "create", "update", "delete", "list", "watch", "get"]);
        let resource = self.pick(&["*", "endpointslices", "endpoints", "pods", "services"]);
        Target { verb, resource }
    }

    fn rule(&mut self) -> Rule {
        match self.below(10) {
            0..=5 => {
                let mut target = self.target();
                let kind =
                    self.pick(&[ErrorKind::Internal, ErrorKind::TooMany, ErrorKind::Conflict]);
                // A real server answers 409 only to writes.
                if kind == ErrorKind::Conflict
                    && matches!(target.verb, "*" | "get" | "list" | "watch")
                {
                    target.verb = "update";
                }
                Rule::Errors {
                    target,
                    rate: [0.1, 0.3, 0.5][self.below(3)],
                    kind,
                }
            }
            6..=8 => Rule::Latency {
                target: self.target(),
                delay: self.millis(5, 150),
            },
            _ => Rule::ShortWatches {
                events: 1 + self.below(5) as u64,
            },
        }
    }

    fn event(&mut self, topology: Topology, mix: &Mix) -> Event {
        let resource = self.pick(&["pods", "services", "endpoints", "endpointslices", "nodes"]);
        let kinds = if mix.restarts { 9 } else { 7 };
        match self.below(kinds) {
            0 => Event::Conflicts {
                resource: self.pick(&["endpointslices", "endpoints"]),
                count: 1 + self.below(3) as u64,
            },
            1 => Event::DropWatches,
            2 => Event::ExpireWatch { resource },
            3 => Event::Compact,
            4..=6 => match topology {
                Topology::Single => Event::ControllerRestart {
                    abrupt: self.coin(),
                    down: self.millis(0, 300),
                },
                Topology::Pair if self.coin() => Event::HandOver,
                Topology::Pair => Event::Partition {
                    down: self.millis(200, 1500),
                },
            },
            7 => Event::Backup,
            _ => Event::ServerRestart {
                from_backup: self.coin(),
            },
        }
    }
}

impl Schedule {
    /// The schedule of `seed`.
    pub fn draw(seed: u64, mix: &Mix) -> Self {
        // The generator spreads even small, neighbouring seeds over unrelated sequences.
        let mut d = Draw(SeededRng::new(seed));
        let topology = if d.coin() {
            Topology::Single
        } else {
            Topology::Pair
        };
        let namespaces = 1 + d.below(NAMESPACES.len());
        let mut initial = Vec::new();
        for ns in 0..namespaces {
            for service in 0..SERVICES.len() {
                if d.chance(70) {
                    initial.push(Churn::PutService {
                        ns,
                        service,
                        shape: d.service_shape(service),
                    });
                    initial.push(Churn::PutEndpoints {
                        ns,
                        service,
                        addresses: d.addresses(),
                    });
                }
            }
            for pod in 0..PODS {
                if d.chance(70) {
                    initial.push(Churn::PutPod {
                        ns,
                        pod,
                        shape: d.pod_shape(),
                    });
                }
            }
        }

        let span = mix.span.as_millis() as u64;
        let mut steps = Vec::new();
        for _ in 0..(8 + d.below(12)) {
            steps.push(Step {
                at: d.millis(0, span),
                action: Action::Churn(d.churn(namespaces)),
            });
        }
        for id in 0..(1 + d.below(4)) {
            let start = d.millis(0, span * 3 / 4);
            let end = start + d.millis(100, span / 2);
            steps.push(Step {
                at: start,
                action: Action::Impose { id, rule: d.rule() },
            });
            steps.push(Step {
                at: end,
                action: Action::Lift { id },
            });
        }
        for _ in 0..(1 + d.below(4)) {
            steps.push(Step {
                at: d.millis(0, span),
                action: Action::Fault(d.event(topology, mix)),
            });
        }
        // A stable sort keeps each rule's start before its end when they coincide.
        steps.sort_by_key(|s| s.at);
        Self {
            seed,
            topology,
            namespaces,
            initial,
            steps,
        }
    }

    /// Whether any step restarts the API server.
    pub fn restarts_server(&self) -> bool {
        self.faults().contains(&"server restart")
    }

    /// The kind of each fault in the schedule, in order (one entry per rule imposed or
    /// instant fault), for a tally of what a run of seeds covered.
    pub fn faults(&self) -> Vec<&'static str> {
        self.steps
            .iter()
            .filter_map(|step| match &step.action {
                Action::Impose { rule, .. } => Some(match rule {
                    Rule::Errors {
                        kind: ErrorKind::Internal,
                        ..
                    } => "5xx",
                    Rule::Errors {
                        kind: ErrorKind::TooMany,
                        ..
                    } => "429",
                    Rule::Errors {
                        kind: ErrorKind::Conflict,
                        ..
                    } => "409 rate",
                    Rule::Latency { .. } => "latency",
                    Rule::ShortWatches { .. } => "short watches",
                }),
                Action::Fault(event) => Some(match event {
                    Event::Conflicts { .. } => "409 burst",
                    Event::DropWatches => "dropped watches",
                    Event::ExpireWatch { .. } => "forced 410",
                    Event::Compact => "compaction",
                    Event::Backup => "backup",
                    Event::ServerRestart { .. } => "server restart",
                    Event::ControllerRestart { abrupt: true, .. } => "controller crash",
                    Event::ControllerRestart { abrupt: false, .. } => "controller restart",
                    Event::HandOver => "hand-over",
                    Event::Partition { .. } => "partition",
                }),
                Action::Churn(_) | Action::Lift { .. } => None,
            })
            .collect()
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: {:?} controllers, {} namespaces, {} initial objects",
            self.seed,
            self.topology,
            self.namespaces,
            self.initial.len()
        )?;
        for step in &self.steps {
            writeln!(f, "  {:>5}ms {:?}", step.at.as_millis(), step.action)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(restarts: bool) -> Mix {
        Mix {
            restarts,
            span: Duration::from_secs(2),
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_schedule() {
        let (a, b) = (Schedule::draw(7, &mix(true)), Schedule::draw(7, &mix(true)));
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.steps, b.steps);
        assert_ne!(a.to_string(), Schedule::draw(8, &mix(true)).to_string());
    }

    #[test]
    fn server_restarts_are_drawn_only_when_switched_on() {
        assert!((0..200).all(|s| !Schedule::draw(s, &mix(false)).restarts_server()));
        assert!((0..200).any(|s| Schedule::draw(s, &mix(true)).restarts_server()));
    }

    #[test]
    fn every_rule_is_lifted_after_it_is_imposed_and_steps_are_in_time_order() {
        for seed in 0..200 {
            let schedule = Schedule::draw(seed, &mix(true));
            assert!(schedule.steps.windows(2).all(|w| w[0].at <= w[1].at));
            let mut open = std::collections::BTreeSet::new();
            for step in &schedule.steps {
                match step.action {
                    Action::Impose { id, .. } => assert!(open.insert(id), "seed {seed}"),
                    Action::Lift { id } => assert!(open.remove(&id), "seed {seed}"),
                    _ => {}
                }
            }
            assert!(open.is_empty(), "seed {seed}: {open:?} never lifted");
        }
    }

    #[test]
    fn both_topologies_and_their_own_controller_faults_are_drawn() {
        let schedules: Vec<Schedule> = (0..100).map(|s| Schedule::draw(s, &mix(false))).collect();
        for topology in [Topology::Single, Topology::Pair] {
            assert!(schedules.iter().any(|s| s.topology == topology));
        }
        for schedule in &schedules {
            for step in &schedule.steps {
                match (&step.action, schedule.topology) {
                    (Action::Fault(Event::ControllerRestart { .. }), Topology::Pair)
                    | (
                        Action::Fault(Event::HandOver | Event::Partition { .. }),
                        Topology::Single,
                    ) => {
                        panic!(
                            "seed {}: {:?} drew {:?}",
                            schedule.seed, schedule.topology, step.action
                        )
                    }
                    _ => {}
                }
            }
        }
    }
}
