//! Running a scenario's steps, and what its waits saw.

use std::fmt;

use anyhow::Context;
use controller::config::Settings;
use k8s_openapi::api::core::v1::{Endpoints, Event};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::Value;

use super::{Object, Scenario, SlicesOf, Step, Target, NS};
use crate::cluster::{Controllers, TestCluster};
use crate::wait::eventually;

/// What a wait saw.
enum Seen {
    Slices(Vec<EndpointSlice>),
    Endpoints(Option<Box<Endpoints>>),
    Event(Box<Event>),
}

/// A scenario's cluster and controllers after its steps, with what each wait saw.
pub struct Run {
    /// The cluster the steps ran on.
    pub cluster: TestCluster,
    controllers: Option<Controllers>,
    max_endpoints_per_slice: u32,
    seen: Vec<(String, Seen)>,
}

impl Run {
    /// A run on `cluster`, before any step.
    pub(super) fn new(cluster: TestCluster) -> Self {
        Self {
            cluster,
            controllers: None,
            max_endpoints_per_slice: Settings::default().max_endpoints_per_slice,
            seen: Vec::new(),
        }
    }

    /// The running controllers; fails the test when none run.
    pub fn controllers(&self) -> &Controllers {
        self.controllers
            .as_ref()
            .expect("the scenario started controllers")
    }

    /// The slices the last wait described as `what` saw.
    pub fn slices(&self, what: &str) -> &[EndpointSlice] {
        match self.seen(what) {
            Seen::Slices(slices) => slices,
            _ => panic!("the wait for {what:?} saw no slices"),
        }
    }

    /// The Endpoints object (or its absence) the last wait described as `what` saw.
    pub fn endpoints(&self, what: &str) -> Option<&Endpoints> {
        match self.seen(what) {
            Seen::Endpoints(endpoints) => endpoints.as_deref(),
            _ => panic!("the wait for {what:?} saw no Endpoints"),
        }
    }

    /// The Event the wait for `reason` found.
    pub fn event(&self, reason: &str) -> &Event {
        match self.seen(reason) {
            Seen::Event(event) => event,
            _ => panic!("the wait for {reason:?} saw no Event"),
        }
    }

    fn seen(&self, what: &str) -> &Seen {
        self.seen
            .iter()
            .rev()
            .find(|(described, _)| described == what)
            .map(|(_, seen)| seen)
            .unwrap_or_else(|| panic!("no wait was described as {what:?}"))
    }

    /// Stops the controllers, if any run, and checks that they returned without error.
    pub async fn stop(self) {
        if let Some(controllers) = self.controllers {
            controllers.stop().await;
        }
    }

    /// Runs more steps on this run's cluster and controllers (the scenario's nodes are not
    /// used): for a test that acts on what the steps before saw.
    pub async fn resume(&mut self, scenario: Scenario) -> anyhow::Result<()> {
        for (i, step) in scenario.steps.into_iter().enumerate() {
            let described = step.to_string();
            self.apply(step)
                .await
                .with_context(|| format!("step {} ({described})", i + 1))?;
        }
        Ok(())
    }

    async fn apply(&mut self, step: Step) -> anyhow::Result<()> {
        let cluster = &self.cluster;
        match step {
            Step::Create(object) => self.create(*object).await?,
            Step::Ready {
                pod,
                ready,
                since: None,
            } => cluster.set_pod_ready(NS, &pod, ready).await?,
            Step::Ready {
                pod,
                ready,
                since: Some(since),
            } => cluster.set_pod_ready_since(NS, &pod, ready, since).await?,
            Step::PodIps { pod, ips } => {
                let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
                cluster.set_pod_ips(NS, &pod, &ips).await?;
            }
            Step::Patch(target, patch) => self.patch(target, patch).await?,
            Step::Delete(target) => self.delete(target).await?,
            Step::Faults(change) => change(cluster.faults()),
            Step::Start(options) => {
                self.max_endpoints_per_slice = options.settings.max_endpoints_per_slice;
                self.controllers = Some(cluster.run_controllers(*options).await);
            }
            Step::Stop => {
                let controllers = self.controllers.take().context("no controllers run")?;
                controllers.stop().await;
            }
            Step::Slices { of, what, holds } => {
                let slices = cluster
                    .wait_for_slices_by(of.manager, NS, &of.service, &what, holds)
                    .await;
                self.seen.push((what, Seen::Slices(slices)));
            }
            Step::WrittenAgain { of, what } => {
                let gone = self.first_slice_of(&of).await?;
                remove(cluster.slices(NS), &gone.name_any()).await?;
                let again = |s: &[EndpointSlice]| match s {
                    [new] => {
                        new.name_any() != gone.name_any()
                            && new.uid() != gone.uid()
                            && new.endpoints == gone.endpoints
                    }
                    _ => false,
                };
                let slices = cluster
                    .wait_for_slices_by(of.manager, NS, &of.service, &what, again)
                    .await;
                self.seen.push((what, Seen::Slices(slices)));
            }
            Step::Endpoints { name, what, holds } => {
                let endpoints = cluster.wait_for_endpoints(NS, &name, &what, holds).await;
                self.seen
                    .push((what, Seen::Endpoints(endpoints.map(Box::new))));
            }
            Step::PlannedSlices(service) => {
                cluster
                    .wait_for_planned_slices_with(NS, &service, self.max_endpoints_per_slice)
                    .await
            }
            Step::PlannedEndpoints(service) => {
                cluster.wait_for_planned_endpoints(NS, &service).await
            }
            Step::Event(expected) => {
                let event = cluster
                    .wait_for_event(NS, &expected.involved, &expected.reason)
                    .await;
                expected.check(&event).map_err(anyhow::Error::msg)?;
                self.seen
                    .push((expected.reason, Seen::Event(Box::new(event))));
            }
            Step::Events { what, holds } => {
                cluster.wait_for_events(NS, &what, holds).await;
            }
            Step::Until { what, holds } => {
                let run = &*self;
                eventually(&what, || {
                    let held = holds(run);
                    async move { held }
                })
                .await;
            }
            Step::Check(assert) => assert(self),
        }
        Ok(())
    }

    async fn create(&self, object: Object) -> anyhow::Result<()> {
        let cluster = &self.cluster;
        match object {
            Object::Namespace(name) => {
                cluster.create_namespace(&name).await?;
            }
            Object::Node(node) => {
                cluster.create_node(&node).await?;
            }
            Object::Service(service) => {
                cluster.create_service(&service).await?;
            }
            Object::Pod(pod) => {
                cluster.create_pod(&pod).await?;
            }
            Object::Endpoints(endpoints) => {
                let ns = endpoints.namespace().unwrap_or_else(|| NS.into());
                let api = cluster.endpoints(&ns);
                api.create(&PostParams::default(), &endpoints).await?;
            }
            Object::Slice(slice) => {
                let ns = slice.namespace().unwrap_or_else(|| NS.into());
                let api = cluster.slices(&ns);
                api.create(&PostParams::default(), &slice).await?;
            }
        }
        Ok(())
    }

    async fn patch(&self, target: Target, patch: Value) -> anyhow::Result<()> {
        let cluster = &self.cluster;
        match target {
            Target::Pod(name) => merge(cluster.pods(NS), &name, patch).await,
            Target::Service(name) => merge(cluster.services(NS), &name, patch).await,
            Target::Node(name) => merge(cluster.nodes(), &name, patch).await,
            Target::Endpoints(name) => merge(cluster.endpoints(NS), &name, patch).await,
            Target::Namespace(name) => merge(cluster.namespaces(), &name, patch).await,
            Target::FirstSliceOf(slices) => {
                let name = self.first_slice_of(&slices).await?.name_any();
                merge(cluster.slices(NS), &name, patch).await
            }
        }
    }

    async fn delete(&self, target: Target) -> anyhow::Result<()> {
        let cluster = &self.cluster;
        match target {
            Target::Pod(name) => remove(cluster.pods(NS), &name).await,
            Target::Service(name) => remove(cluster.services(NS), &name).await,
            Target::Node(name) => remove(cluster.nodes(), &name).await,
            Target::Endpoints(name) => remove(cluster.endpoints(NS), &name).await,
            Target::Namespace(name) => remove(cluster.namespaces(), &name).await,
            Target::FirstSliceOf(slices) => {
                let name = self.first_slice_of(&slices).await?.name_any();
                remove(cluster.slices(NS), &name).await
            }
        }
    }

    async fn first_slice_of(&self, slices: &SlicesOf) -> anyhow::Result<EndpointSlice> {
        let listed = self
            .cluster
            .slices_managed_by(slices.manager, NS, &slices.service)
            .await?;
        listed
            .into_iter()
            .next()
            .with_context(|| format!("no slice of {slices:?}"))
    }
}

/// Merge-patches the object `name` of `api`.
async fn merge<K>(api: Api<K>, name: &str, patch: Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Deletes the object `name` of `api`.
async fn remove<K>(api: Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    api.delete(name, &DeleteParams::default()).await?;
    Ok(())
}
