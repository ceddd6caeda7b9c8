//! Scenarios: a live-controller test as data. A [`Scenario`] lists the steps of a test in
//! order (objects to create, changes and faults to send, the controllers to start or stop,
//! what to wait for) and [`Scenario::run`] runs them on a fresh [`TestCluster`], so that a test
//! states only what differs from the others.
//!
//! Each step runs once the one before it returned. A wait retries until its condition holds
//! and fails a hung test after [`crate::DEADLINE`]; a plan step waits until the live objects
//! equal what the controllers write for the stored objects from scratch. Every wait keeps what
//! it saw under its description, for the assertions a test makes afterwards
//! ([`Run::slices`], [`Run::endpoints`], [`Run::event`]).
//!
//! Names in steps refer to objects of the `default` namespace; created objects carry their
//! own.

mod expect;
mod run;

use std::fmt;
use std::time::Duration;

use apiserver::{FaultResponse, Faults};
use controller::Options;
use k8s_openapi::api::core::v1::{Endpoints, Event};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub use expect::{
    absent, addresses_are, endpoint_conditions_are, endpoint_not_ready, endpoint_ready,
    metric_holds, normal, pods_are, served, warning, EventLike, Message,
};
pub use run::Run;

use crate::build::{pod, web, NodeBuilder, PodBuilder, ServiceBuilder};
use crate::cluster::{Controllers, Manager, TestCluster};
use crate::inspect::strings;

/// The namespace step names refer to.
const NS: &str = "default";

/// What a wait on slices expects of them.
type SlicesHold = Box<dyn Fn(&[EndpointSlice]) -> bool + Send + Sync>;
/// What a wait on an Endpoints object expects of it, or of its absence.
type EndpointsHold = Box<dyn Fn(Option<&Endpoints>) -> bool + Send + Sync>;
/// What a wait on a namespace's Events expects of them.
type EventsHold = Box<dyn Fn(&[Event]) -> bool + Send + Sync>;
/// A condition on what a run holds in memory (metrics, request counts), `Err` saying what
/// it saw.
type RunHolds = Box<dyn Fn(&Run) -> Result<(), String> + Send + Sync>;

/// The steps of a live-controller test, built in order; [`Scenario::run`] runs them.
#[must_use = "a scenario does nothing until it is run"]
pub struct Scenario {
    nodes: Nodes,
    steps: Vec<Step>,
}

/// The nodes a fresh cluster starts with.
enum Nodes {
    /// [`crate::DEFAULT_NODE`], without zone ([`TestCluster::start`]).
    Default,
    /// None ([`TestCluster::start_without_nodes`]).
    None,
}

/// An object a scenario creates: a builder's, or a typed object written as it is.
pub enum Object {
    /// A namespace of this name.
    Namespace(String),
    /// A node and its status.
    Node(NodeBuilder),
    /// A Service.
    Service(ServiceBuilder),
    /// A pod and its status, as a kubelet writes it.
    Pod(PodBuilder),
    /// An Endpoints object, in its namespace or `default`.
    Endpoints(Endpoints),
    /// An EndpointSlice, in its namespace or `default`.
    Slice(EndpointSlice),
}

/// `From` each object a scenario creates, into its variant of [`Object`].
macro_rules! object_from {
    ($($variant:ident($kind:ty)),* $(,)?) => {$(
        impl From<$kind> for Object {
            fn from(object: $kind) -> Self {
                Self::$variant(object)
            }
        }
    )*};
}

object_from!(
    Node(NodeBuilder),
    Service(ServiceBuilder),
    Pod(PodBuilder),
    Endpoints(Endpoints),
    Slice(EndpointSlice),
);

/// The slices a wait reads: those a controller manages for a Service.
#[derive(Debug)]
pub struct SlicesOf {
    manager: Manager,
    service: String,
}

/// A Service's name stands for the slices the EndpointSlice controller manages for it.
impl From<&str> for SlicesOf {
    fn from(service: &str) -> Self {
        Self {
            manager: Manager::EndpointSlice,
            service: service.into(),
        }
    }
}

/// The slices the mirroring controller manages for `service`'s Endpoints.
pub fn mirrored(service: &str) -> SlicesOf {
    SlicesOf {
        manager: Manager::Mirroring,
        service: service.into(),
    }
}

/// An object a change is sent to.
#[derive(Debug)]
enum Target {
    Pod(String),
    Service(String),
    Node(String),
    Endpoints(String),
    Namespace(String),
    /// The first (by name) of a Service's slices, as the conformance steps'
    /// `first-slice-of:SVC`.
    FirstSliceOf(SlicesOf),
}

/// One step of a scenario.
enum Step {
    Create(Box<Object>),
    /// Sets a pod's Ready condition, stamped now or at the given time.
    Ready {
        pod: String,
        ready: bool,
        since: Option<Timestamp>,
    },
    PodIps {
        pod: String,
        ips: Vec<String>,
    },
    Patch(Target, Value),
    Delete(Target),
    Faults(Box<dyn FnOnce(&Faults) + Send>),
    Start(Box<Options>),
    Stop,
    Slices {
        of: SlicesOf,
        what: String,
        holds: SlicesHold,
    },
    WrittenAgain {
        of: SlicesOf,
        what: String,
    },
    Endpoints {
        name: String,
        what: String,
        holds: EndpointsHold,
    },
    PlannedSlices(String),
    PlannedEndpoints(String),
    Event(Box<EventLike>),
    Events {
        what: String,
        holds: EventsHold,
    },
    Until {
        what: String,
        holds: RunHolds,
    },
    Check(Box<dyn FnOnce(&Run) + Send>),
}

impl fmt::Display for Step {
    /// What the step does, for the message of a step that failed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Create(object) => write!(f, "create {}", object.kind()),
            Step::Ready { pod, ready, .. } => write!(f, "set {pod} ready={ready}"),
            Step::PodIps { pod, ips } => write!(f, "set {pod}'s IPs to {ips:?}"),
            Step::Patch(target, patch) => write!(f, "patch {target:?} with {patch}"),
            Step::Delete(target) => write!(f, "delete {target:?}"),
            Step::Faults(_) => write!(f, "change the faults"),
            Step::Start(_) => write!(f, "start the controllers"),
            Step::Stop => write!(f, "stop the controllers"),
            Step::Slices { of, what, .. } => write!(f, "wait for {of:?}: {what}"),
            Step::WrittenAgain { of, what, .. } => {
                write!(f, "delete the first of {of:?}, wait for {what}")
            }
            Step::Endpoints { name, what, .. } => write!(f, "wait for Endpoints {name}: {what}"),
            Step::PlannedSlices(service) => write!(f, "wait for the planned slices of {service}"),
            Step::PlannedEndpoints(service) => {
                write!(f, "wait for the planned Endpoints of {service}")
            }
            Step::Event(event) => write!(f, "wait for {} about {}", event.reason, event.involved),
            Step::Events { what, .. } => write!(f, "wait for Events: {what}"),
            Step::Until { what, .. } => write!(f, "wait for {what}"),
            Step::Check(_) => write!(f, "check what the run holds"),
        }
    }
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Object::Namespace(_) => "a namespace",
            Object::Node(_) => "a node",
            Object::Service(_) => "a Service",
            Object::Pod(_) => "a pod",
            Object::Endpoints(_) => "an Endpoints object",
            Object::Slice(_) => "an EndpointSlice",
        }
    }
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// A scenario on a cluster with [`crate::DEFAULT_NODE`], where [`crate::pod`] schedules
    /// pods.
    pub fn new() -> Self {
        Self {
            nodes: Nodes::Default,
            steps: Vec::new(),
        }
    }

    /// A scenario on a cluster without nodes (a node without a zone would turn topology
    /// hints off cluster-wide).
    pub fn without_nodes() -> Self {
        Self {
            nodes: Nodes::None,
            ..Self::new()
        }
    }

    /// A scenario that starts with the [`web`] Service and `pods`.
    pub fn web(pods: impl IntoIterator<Item = PodBuilder>) -> Self {
        Self::new().create(web()).create_all(pods)
    }

    fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    // ---- objects and changes ----

    /// Creates an object (a pod with its status, a node with its status).
    pub fn create(self, object: impl Into<Object>) -> Self {
        self.step(Step::Create(Box::new(object.into())))
    }

    /// Creates each object, in order.
    pub fn create_all<O: Into<Object>>(self, objects: impl IntoIterator<Item = O>) -> Self {
        objects.into_iter().fold(self, Self::create)
    }

    /// Creates a namespace.
    pub fn create_namespace(self, name: &str) -> Self {
        self.create(Object::Namespace(name.into()))
    }

    /// Turns a pod's Ready condition true, stamped now.
    pub fn pod_ready(self, pod: &str) -> Self {
        self.ready(pod, true, None)
    }

    /// Turns a pod's Ready condition false, stamped now.
    pub fn pod_not_ready(self, pod: &str) -> Self {
        self.ready(pod, false, None)
    }

    /// Turns a pod's Ready condition true with `since` as its lastTransitionTime.
    pub fn pod_ready_since(self, pod: &str, since: Timestamp) -> Self {
        self.ready(pod, true, Some(since))
    }

    fn ready(self, pod: &str, ready: bool, since: Option<Timestamp>) -> Self {
        self.step(Step::Ready {
            pod: pod.into(),
            ready,
            since,
        })
    }

    /// Replaces a pod's IPs.
    pub fn pod_ips(self, pod: &str, ips: &[&str]) -> Self {
        self.step(Step::PodIps {
            pod: pod.into(),
            ips: strings(ips),
        })
    }

    /// Merge-patches a pod.
    pub fn patch_pod(self, name: &str, patch: Value) -> Self {
        self.step(Step::Patch(Target::Pod(name.into()), patch))
    }

    /// Merge-patches a Service.
    pub fn patch_service(self, name: &str, patch: Value) -> Self {
        self.step(Step::Patch(Target::Service(name.into()), patch))
    }

    /// Merge-patches a node.
    pub fn patch_node(self, name: &str, patch: Value) -> Self {
        self.step(Step::Patch(Target::Node(name.into()), patch))
    }

    /// Merge-patches an Endpoints object.
    pub fn patch_endpoints(self, name: &str, patch: Value) -> Self {
        self.step(Step::Patch(Target::Endpoints(name.into()), patch))
    }

    /// Merge-patches the first of `slices` (a Service's name, or [`mirrored`]), behind the
    /// controller's back.
    pub fn patch_first_slice_of(self, slices: impl Into<SlicesOf>, patch: Value) -> Self {
        self.step(Step::Patch(Target::FirstSliceOf(slices.into()), patch))
    }

    /// Deletes a pod (it stays, terminating, while it has finalizers).
    pub fn delete_pod(self, name: &str) -> Self {
        self.step(Step::Delete(Target::Pod(name.into())))
    }

    /// Deletes a Service.
    pub fn delete_service(self, name: &str) -> Self {
        self.step(Step::Delete(Target::Service(name.into())))
    }

    /// Deletes an Endpoints object.
    pub fn delete_endpoints(self, name: &str) -> Self {
        self.step(Step::Delete(Target::Endpoints(name.into())))
    }

    /// Deletes a namespace (it stays, terminating, while it holds objects with finalizers).
    pub fn delete_namespace(self, name: &str) -> Self {
        self.step(Step::Delete(Target::Namespace(name.into())))
    }

    /// Deletes the first of `slices` (a Service's name, or [`mirrored`]).
    pub fn delete_first_slice_of(self, slices: impl Into<SlicesOf>) -> Self {
        self.step(Step::Delete(Target::FirstSliceOf(slices.into())))
    }

    /// Deletes the first of `slices` (a Service's name, or [`mirrored`]) behind the back of
    /// the controller that wrote it, and waits until it is written again: one slice, of
    /// another name and uid, with the same endpoints; it is kept under `what`. The delete
    /// waits until the controller has counted the create: it counts one only after recording
    /// the slice in its tracker, and only a slice it knows it wrote is worth replacing (a
    /// delete before that is a race of its own).
    pub fn slice_written_again(self, slices: impl Into<SlicesOf>, what: &str) -> Self {
        let slices = slices.into();
        let changes = slices.manager.changes_metric();
        self.until(
            "the writer to record its create",
            metric_holds(changes, &[("operation", "create")], |n| n >= 1.0),
        )
        .step(Step::WrittenAgain {
            of: slices,
            what: what.into(),
        })
    }

    /// Changes the server's faults (errors, latency, dropped watches) from here on.
    pub fn faults(self, change: impl FnOnce(&Faults) + Send + 'static) -> Self {
        self.step(Step::Faults(Box::new(change)))
    }

    /// Makes the server answer the next `count` requests of `verb` on `resource` with
    /// `response` ([`Faults::fail_next`]).
    pub fn fail_next(
        self,
        verb: &'static str,
        resource: &'static str,
        count: u64,
        response: FaultResponse,
    ) -> Self {
        self.faults(move |faults| faults.fail_next(verb, resource, count, response))
    }

    // ---- the controllers ----

    /// Starts the controllers with `options` and waits until their informers synced; the
    /// plan steps after it plan with the same `--max-endpoints-per-slice`.
    pub fn start(self, options: Options) -> Self {
        self.step(Step::Start(Box::new(options)))
    }

    /// Stops the controllers and checks that they returned without error.
    pub fn stop(self) -> Self {
        self.step(Step::Stop)
    }

    // ---- waits ----

    /// Waits until `slices` (a Service's name for the slices the EndpointSlice controller
    /// manages for it, or [`mirrored`]) satisfy `holds`; what they held is kept under `what`.
    pub fn slices(
        self,
        slices: impl Into<SlicesOf>,
        what: &str,
        holds: impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.step(Step::Slices {
            of: slices.into(),
            what: what.into(),
            holds: Box::new(holds),
        })
    }

    /// Waits until the Endpoints object `name`, or its absence, satisfies `holds`; what was
    /// seen is kept under `what`.
    pub fn endpoints(
        self,
        name: &str,
        what: &str,
        holds: impl Fn(Option<&Endpoints>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.step(Step::Endpoints {
            name: name.into(),
            what: what.into(),
            holds: Box::new(holds),
        })
    }

    /// Waits until the slices of `service` equal what the controllers write for the stored
    /// objects from scratch ([`TestCluster::wait_for_planned_slices_with`]).
    pub fn planned_slices(self, service: &str) -> Self {
        self.step(Step::PlannedSlices(service.into()))
    }

    /// Waits until the Endpoints object of `service` equals what the controllers write for
    /// the stored objects from scratch ([`TestCluster::wait_for_planned_endpoints`]).
    pub fn planned_endpoints(self, service: &str) -> Self {
        self.step(Step::PlannedEndpoints(service.into()))
    }

    /// Waits for an Event with the reason of `expected` about its object, and checks that it
    /// says what `expected` states; it is kept under its reason.
    pub fn event(self, expected: EventLike) -> Self {
        self.step(Step::Event(Box::new(expected)))
    }

    /// Waits until the Events of `default` satisfy `holds`.
    pub fn events(
        self,
        what: &str,
        holds: impl Fn(&[Event]) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.step(Step::Events {
            what: what.into(),
            holds: Box::new(holds),
        })
    }

    /// Waits until `holds`, a condition on what the run holds in memory (the controllers'
    /// metrics, the server's request counts), returns `Ok`; its `Err` says what it saw.
    pub fn until(
        self,
        what: &str,
        holds: impl Fn(&Run) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.step(Step::Until {
            what: what.into(),
            holds: Box::new(holds),
        })
    }

    /// Runs `assert`, the test's assertions on what the run holds in memory, at this point.
    pub fn check(self, assert: impl FnOnce(&Run) + Send + 'static) -> Self {
        self.step(Step::Check(Box::new(assert)))
    }

    // ---- running ----

    /// Runs the steps on a fresh cluster and returns it with what the waits saw.
    pub async fn run(self) -> anyhow::Result<Run> {
        let cluster = match self.nodes {
            Nodes::Default => TestCluster::start().await,
            Nodes::None => TestCluster::start_without_nodes(),
        };
        self.run_on(cluster).await
    }

    /// Runs the steps on a fresh cluster, for a test whose steps state all it checks.
    pub async fn run_to_end(self) -> anyhow::Result<()> {
        self.run().await?;
        Ok(())
    }

    /// Runs the steps on `cluster`, set up by the test for what steps cannot express (an
    /// object naming another's uid).
    pub async fn run_on(self, cluster: TestCluster) -> anyhow::Result<Run> {
        let mut run = Run::new(cluster);
        run.resume(self).await?;
        Ok(run)
    }
}

// ---- scenarios several tests share ----

/// A Service `web` appears in a namespace, `doomed`, just before the namespace is deleted: the
/// controller's create of `resource` is held in the server until the namespace is
/// terminating, and the refusal that follows is dropped quietly, with no error and no retry.
/// `syncs` reads the controller's `syncs{result}` counter.
pub fn create_refused_in_a_terminating_namespace(
    options: Options,
    resource: &'static str,
    syncs: fn(&Controllers, &str) -> f64,
) -> Scenario {
    let held = Duration::from_secs(1);
    Scenario::new()
        .create_namespace("doomed")
        // A pod that cannot go away keeps the namespace Terminating rather than gone.
        .create(pod("held").ns("doomed").finalizer("example.com/hold"))
        .faults(move |faults| faults.add_latency("create", resource, held))
        .start(options)
        .create(web().ns("doomed"))
        .until(
            "the controller to send its create",
            served("create", resource, 1),
        )
        .delete_namespace("doomed")
        .until(
            "the refused sync and the deletion sync to finish",
            move |run| {
                let controllers = run.controllers();
                let done = syncs(controllers, "success") + syncs(controllers, "error");
                (done >= 2.0).then_some(()).ok_or(format!("{done} syncs"))
            },
        )
        .check(move |run| {
            let errors = syncs(run.controllers(), "error");
            assert_eq!(errors, 0.0, "no error, no retry");
            assert_eq!(run.cluster.requests("create", resource), 1);
        })
}
