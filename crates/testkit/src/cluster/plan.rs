//! What the controllers should converge to: the objects they write for the stored ones from
//! scratch, and waits until the live objects equal them.

use std::fmt::Debug;

use anyhow::Context;
use controller::config::Settings;
use controller::Options;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::Api;
use reconcile::compare::{differences, Objects, Rules, Sides};
use serde_json::Value;

use super::{options, TestCluster};

impl TestCluster {
    /// A fresh server holding this one's namespaces, nodes, Services and Pods (no Endpoints or
    /// slices), on which the controllers ran until they settled: what they write for the
    /// stored objects from scratch, through the same code path `plan` uses.
    pub async fn rerun_from_scratch(
        &self,
        max_endpoints_per_slice: u32,
    ) -> anyhow::Result<TestCluster> {
        let mut objects: Vec<Value> = Vec::new();
        objects.extend(values_of(self.namespaces()).await?);
        objects.extend(values_of(self.nodes()).await?);
        objects.extend(values_of(Api::<Service>::all(self.client.clone())).await?);
        objects.extend(values_of(Api::<Pod>::all(self.client.clone())).await?);
        let (server, client) = crate::server::start();
        server.apply_objects(objects)?;
        let fresh = TestCluster { server, client };
        let options = Options {
            settings: Settings {
                max_endpoints_per_slice,
                ..Settings::default()
            },
            ..options()
        };
        // The code path `plan` runs, with its settle wait.
        kubectl_endpoints::plan::run_until_settled(&fresh.server, fresh.client.clone(), &options)
            .await
            .context("running the controllers on the copy")?;
        Ok(fresh)
    }

    /// The slices the controllers write for the Service as it is stored now, from scratch.
    pub async fn planned_slices(
        &self,
        ns: &str,
        service: &str,
        max_endpoints_per_slice: u32,
    ) -> anyhow::Result<Vec<EndpointSlice>> {
        self.rerun_from_scratch(max_endpoints_per_slice)
            .await?
            .managed_slices(ns, service)
            .await
    }

    /// The Endpoints object the controllers write for the Service as stored now, from scratch.
    pub async fn planned_endpoints(&self, ns: &str, service: &str) -> anyhow::Result<Endpoints> {
        self.rerun_from_scratch(100)
            .await?
            .get_endpoints(ns, service)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no Endpoints {ns}/{service} from scratch"))
    }

    /// Waits until the managed slices of `service` equal, by [`Rules::Planned`],
    /// what `plan_slices` computes for the stored objects from scratch.
    pub async fn wait_for_planned_slices(&self, ns: &str, service: &str) {
        self.wait_for_planned_slices_with(ns, service, 100).await;
    }

    /// [`Self::wait_for_planned_slices`] for a controller run with another
    /// `--max-endpoints-per-slice`.
    pub async fn wait_for_planned_slices_with(
        &self,
        ns: &str,
        service: &str,
        max_endpoints_per_slice: u32,
    ) {
        let what = format!("slices of {ns}/{service} to equal the plan from scratch");
        self.wait_for_plan(&what, || {
            self.slices_match_plan(ns, service, max_endpoints_per_slice)
        })
        .await;
    }

    /// Waits until the Endpoints object of `service` equals, by [`Rules::Planned`],
    /// what `plan_endpoints` computes for the stored objects from scratch.
    pub async fn wait_for_planned_endpoints(&self, ns: &str, service: &str) {
        let what = format!("Endpoints {ns}/{service} to equal the plan from scratch");
        self.wait_for_plan(&what, || self.endpoints_match_plan(ns, service))
            .await;
    }

    /// Retries `compare` each time the server stores a write until it finds no difference;
    /// a timeout shows the last differences (or the error that kept it from comparing).
    async fn wait_for_plan<Fut>(&self, what: &str, compare: impl Fn() -> Fut)
    where
        Fut: std::future::Future<Output = anyhow::Result<()>>,
    {
        self.eventually(what, || {
            let compared = compare();
            async move { compared.await.map_err(|e| format!("{e:#}")) }
        })
        .await;
    }

    /// `Ok` when the managed slices of `service` are all owned by the Service as stored now
    /// and equal the plan from scratch.
    async fn slices_match_plan(
        &self,
        ns: &str,
        service: &str,
        max_endpoints_per_slice: u32,
    ) -> anyhow::Result<()> {
        let planned = self
            .planned_slices(ns, service, max_endpoints_per_slice)
            .await?;
        let live = self.managed_slices(ns, service).await?;
        let uid = self.services(ns).get(service).await?.metadata.uid;
        if let Some(foreign) = live.iter().find(|s| {
            !s.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| Some(&o.uid) == uid.as_ref())
        }) {
            anyhow::bail!(
                "slice {:?} is not owned by the Service's uid {uid:?}",
                foreign.metadata.name
            );
        }
        differences_from_plan(&Objects::of_slices(&live), &Objects::of_slices(&planned))
    }

    /// `Ok` when the Endpoints object of `service` equals the plan from scratch.
    async fn endpoints_match_plan(&self, ns: &str, service: &str) -> anyhow::Result<()> {
        let planned = self.planned_endpoints(ns, service).await?;
        let live = self.get_endpoints(ns, service).await?;
        differences_from_plan(
            &Objects::of_endpoints(live.as_ref()),
            &Objects::of_endpoints([&planned]),
        )
    }
}

/// Every object `api` lists, as JSON.
async fn values_of<K>(api: Api<K>) -> anyhow::Result<Vec<Value>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + Debug,
{
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?)
}

/// `Ok` when the live objects equal the plan from scratch by [`Rules::Planned`], else each
/// difference on a line, labelled live and plan.
fn differences_from_plan(live: &Objects<'_>, plan: &Objects<'_>) -> anyhow::Result<()> {
    let found = differences(live, plan, Rules::Planned, Sides::PLAN);
    anyhow::ensure!(
        found.is_empty(),
        "{}",
        found
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(())
}
