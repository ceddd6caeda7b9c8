//! The controllers of one seed: either one `controller::run` that the schedule crashes and
//! restarts, or two leader-elected replicas that hand over. Every start is a new process as
//! far as the controllers can tell: new client, new caches, new metrics registry.

use super::cluster::Cluster;
use super::schedule::Topology;
use crate::settle::Controllers;
use anyhow::{bail, Result};
use controller::config::LeaderElectionSettings;
use controller::health::{Liveness, Readiness};
use controller::leader::LeadershipEnd;
use controller::replica::Replica;
use controller::{Activity, Options, RunError};
use prometheus::Registry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a stopping controller may take to finish its in-flight syncs.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// Short Lease timings, so that a hand-over takes about a second (they satisfy client-go's
/// rule: lease duration > renew deadline > 1.2 x retry period).
fn election() -> LeaderElectionSettings {
    LeaderElectionSettings {
        enabled: true,
        lease_duration: Duration::from_millis(1500),
        renew_deadline: Duration::from_millis(1000),
        retry_period: Duration::from_millis(100),
        ..LeaderElectionSettings::default()
    }
}

/// One `controller::run`, in its own task.
struct Single {
    token: CancellationToken,
    task: JoinHandle<Result<(), RunError>>,
    activity: Activity,
    readiness: Readiness,
}

/// One replica, in its own task.
struct Member {
    identity: String,
    shutdown: CancellationToken,
    task: JoinHandle<LeadershipEnd>,
    registry: Registry,
    cut: Arc<AtomicBool>,
}

/// The running controllers.
pub struct Fleet {
    options: Options,
    single: Option<Single>,
    replicas: Vec<Member>,
    topology: Topology,
    started: usize,
}

/// The controllers as the cli runs them (kube-controller-manager's defaults, the three
/// controllers).
pub fn options() -> Options {
    Options {
        settings: controller::config::Settings::default(),
        endpoints: true,
        endpoint_slices: true,
        shadow: None,
        mirroring: true,
    }
}

impl Fleet {
    /// Starts the controllers of `topology`.
    pub fn start(topology: Topology, cluster: &Cluster) -> Self {
        let mut fleet = Self {
            options: options(),
            single: None,
            replicas: Vec::new(),
            topology,
            started: 0,
        };
        match topology {
            Topology::Single => fleet.single = Some(fleet.start_single(cluster)),
            Topology::Pair => {
                for _ in 0..2 {
                    let member = fleet.start_replica(cluster);
                    fleet.replicas.push(member);
                }
            }
        }
        fleet
    }

    fn start_single(&mut self, cluster: &Cluster) -> Single {
        self.started += 1;
        let client = cluster.connect().client;
        let (token, activity, readiness) =
            (CancellationToken::new(), Activity::new(), Readiness::new());
        let options = self.options.clone();
        let task = tokio::spawn({
            let (token, activity, readiness) = (token.clone(), activity.clone(), readiness.clone());
            async move {
                let registry = Registry::new();
                controller::run(client, &options, &registry, readiness, activity, token).await
            }
        });
        Single {
            token,
            task,
            activity,
            readiness,
        }
    }

    fn start_replica(&mut self, cluster: &Cluster) -> Member {
        self.started += 1;
        let identity = format!("replica-{}", self.started);
        let connection = cluster.connect();
        let mut options = self.options.clone();
        options.settings.leader_election = election();
        let registry = Registry::new();
        let replica = Replica {
            clients: connection.client.into(),
            options,
            registry: registry.clone(),
            readiness: Readiness::new(),
            liveness: Liveness::new(),
            identity: identity.clone(),
            health_margin: Duration::from_millis(500),
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(replica.run(shutdown.clone()));
        Member {
            identity,
            shutdown,
            task,
            registry,
            cut: connection.cut,
        }
    }

    /// How many controller processes were started so far.
    pub fn starts(&self) -> usize {
        self.started
    }

    /// Replaces replicas whose task ended (a lost Lease ends the process, and its Deployment
    /// starts a new pod), and a single controller that stopped on its own.
    pub fn tend(&mut self, cluster: &Cluster) -> Result<()> {
        if let Some(single) = &self.single {
            if single.task.is_finished() {
                bail!("the controllers stopped without being asked to");
            }
        }
        for i in 0..self.replicas.len() {
            if self.replicas[i].task.is_finished() {
                let fresh = self.start_replica(cluster);
                self.replicas[i] = fresh;
            }
        }
        Ok(())
    }

    /// Stops the single controller (aborting it mid-sync when `abrupt`, as a crash would;
    /// otherwise letting in-flight syncs finish) and starts a new one after `down`.
    pub async fn restart(&mut self, cluster: &Cluster, abrupt: bool, down: Duration) -> Result<()> {
        if let Some(single) = self.single.take() {
            stop_single(single, abrupt).await?;
        }
        tokio::time::sleep(down).await;
        self.single = Some(self.start_single(cluster));
        Ok(())
    }

    /// The replica that holds the Lease, by its `leader_election_master_status` gauge.
    fn leader(&self) -> Option<usize> {
        self.replicas.iter().position(|m| {
            m.registry.gather().iter().any(|family| {
                family.name() == "leader_election_master_status"
                    && family
                        .get_metric()
                        .iter()
                        .any(|metric| metric.get_gauge().get_value() == 1.0)
            })
        })
    }

    /// Shuts the leading replica down (it releases the Lease) and starts a new replica in
    /// its place. Without a leader at the moment, nothing happens: returns false.
    pub async fn hand_over(&mut self, cluster: &Cluster) -> Result<bool> {
        let Some(i) = self.leader() else {
            return Ok(false);
        };
        let fresh = self.start_replica(cluster);
        let old = std::mem::replace(&mut self.replicas[i], fresh);
        stop_member(old).await?;
        Ok(true)
    }

    /// Cuts the leading replica off the API server for `down`. Returns the replica's
    /// identity, or `None` without a leader.
    pub fn partition(&self, cluster: &Cluster, down: Duration) -> Option<String> {
        let member = &self.replicas[self.leader()?];
        member.cut.store(true, Ordering::SeqCst);
        // Open watches would go on delivering: the connection is gone, so they end too.
        cluster.server().faults().drop_watches();
        let cut = member.cut.clone();
        tokio::spawn(async move {
            tokio::time::sleep(down).await;
            cut.store(false, Ordering::SeqCst);
        });
        Some(member.identity.clone())
    }

    /// Reconnects every partitioned replica.
    pub fn reconnect(&self) {
        for member in &self.replicas {
            member.cut.store(false, Ordering::SeqCst);
        }
    }

    /// What can be seen of the controllers: a single controller's readiness and activity;
    /// nothing of replicas, which keep their queues to themselves.
    pub fn controllers(&self) -> Controllers<'_> {
        match &self.single {
            Some(single) => Controllers::InProcess {
                readiness: &single.readiness,
                activity: &single.activity,
            },
            None => Controllers::Opaque(Box::new(|| true)),
        }
    }

    /// The deployment this fleet runs.
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// Stops everything, letting in-flight syncs finish.
    pub async fn stop(mut self) -> Result<()> {
        if let Some(single) = self.single.take() {
            stop_single(single, false).await?;
        }
        for member in std::mem::take(&mut self.replicas) {
            stop_member(member).await?;
        }
        Ok(())
    }
}

impl Drop for Fleet {
    /// A seed that ends early (a failure, its time limit) must not leave controllers running:
    /// the single controller is aborted, and replicas are told to shut down (aborting one
    /// would leave the controllers it spawned running on their own).
    fn drop(&mut self) {
        if let Some(single) = &self.single {
            single.token.cancel();
            single.task.abort();
        }
        for member in &self.replicas {
            member.shutdown.cancel();
        }
    }
}

async fn stop_single(single: Single, abrupt: bool) -> Result<()> {
    if abrupt {
        single.task.abort();
        // The task was aborted: its result says only that.
        let _aborted = single.task.await;
        return Ok(());
    }
    single.token.cancel();
    match tokio::time::timeout(STOP_TIMEOUT, single.task).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => bail!("the controllers failed: {e}"),
        Ok(Err(e)) => bail!("the controllers' task failed: {e}"),
        Err(_) => bail!(
            "the controllers did not stop within {}s",
            STOP_TIMEOUT.as_secs()
        ),
    }
}

async fn stop_member(member: Member) -> Result<()> {
    member.shutdown.cancel();
    member.cut.store(false, Ordering::SeqCst);
    match tokio::time::timeout(STOP_TIMEOUT, member.task).await {
        Ok(Ok(_end)) => Ok(()),
        Ok(Err(e)) => bail!("replica {}'s task failed: {e}", member.identity),
        Err(_) => bail!(
            "replica {} did not stop within {}s",
            member.identity,
            STOP_TIMEOUT.as_secs()
        ),
    }
}
