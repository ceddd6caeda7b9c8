//! Reading the cluster's slices, Endpoints, Events and Lease, and waiting on what they hold.

use std::fmt::Debug;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Event};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::Api;
use reconcile::labels::{SERVICE_NAME, SLICE_MANAGED_BY};

use super::{Manager, TestCluster, LEASE_NAME, LEASE_NAMESPACE};
use crate::inspect::pretty;
use crate::wait::eventually_on;

impl TestCluster {
    /// The slices labelled for `service` and managed by the EndpointSlice controller.
    pub async fn managed_slices(
        &self,
        ns: &str,
        service: &str,
    ) -> anyhow::Result<Vec<EndpointSlice>> {
        self.slices_managed_by(Manager::EndpointSlice, ns, service)
            .await
    }

    /// The slices labelled for `service` and managed by `manager`, sorted by name.
    pub async fn slices_managed_by(
        &self,
        manager: Manager,
        ns: &str,
        service: &str,
    ) -> anyhow::Result<Vec<EndpointSlice>> {
        let manager = manager.name();
        let selector = format!("{SERVICE_NAME}={service},{SLICE_MANAGED_BY}={manager}");
        let mut slices = self
            .slices(ns)
            .list(&ListParams::default().labels(&selector))
            .await?
            .items;
        slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(slices)
    }

    /// Waits until the managed slices of `service` satisfy `done`, and returns them.
    pub async fn wait_for_slices(
        &self,
        ns: &str,
        service: &str,
        what: &str,
        done: impl Fn(&[EndpointSlice]) -> bool,
    ) -> Vec<EndpointSlice> {
        self.wait_for_slices_by(Manager::EndpointSlice, ns, service, what, done)
            .await
    }

    /// Waits until the slices `manager` manages for `service` satisfy `done`, and returns
    /// them.
    pub async fn wait_for_slices_by(
        &self,
        manager: Manager,
        ns: &str,
        service: &str,
        what: &str,
        done: impl Fn(&[EndpointSlice]) -> bool,
    ) -> Vec<EndpointSlice> {
        let what = format!("{manager:?} slices of {ns}/{service}: {what}");
        let read = || self.slices_managed_by(manager, ns, service);
        self.wait_for(&what, read, |s| done(s)).await
    }

    /// Reads with `read` each time the server stores a write until what it read satisfies
    /// `done`, and returns it; a timeout shows the last read.
    async fn wait_for<T, Fut>(
        &self,
        what: &str,
        read: impl Fn() -> Fut,
        done: impl Fn(&T) -> bool,
    ) -> T
    where
        T: serde::Serialize + Debug,
        Fut: std::future::Future<Output = anyhow::Result<T>>,
    {
        self.eventually(what, || {
            let read = read();
            let done = &done;
            async move {
                let value = read.await.map_err(|e| e.to_string())?;
                if done(&value) {
                    Ok(value)
                } else {
                    Err(pretty(&value))
                }
            }
        })
        .await
    }

    /// Retries `probe` each time the server stores a write, until it returns `Ok`
    /// ([`crate::wait::eventually_on`]).
    pub async fn eventually<T, F, Fut>(&self, what: &str, probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, String>>,
    {
        eventually_on(self.server.changes(), what, probe).await
    }

    /// Waits until kube-endpoints' Lease (`kube-system/kube-endpoints`) names `identity` as
    /// its holder, and returns it.
    pub async fn wait_for_lease_holder(&self, identity: &str) -> Lease {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), LEASE_NAMESPACE);
        self.eventually(&format!("{identity} to hold the Lease"), || {
            let api = api.clone();
            async move {
                let lease = api.get_opt(LEASE_NAME).await.map_err(|e| e.to_string())?;
                let holder = lease
                    .as_ref()
                    .and_then(|l| l.spec.as_ref())
                    .and_then(|s| s.holder_identity.clone());
                match lease {
                    Some(lease) if holder.as_deref() == Some(identity) => Ok(lease),
                    _ => Err(format!("holder {holder:?}")),
                }
            }
        })
        .await
    }

    /// The Endpoints object named `name`, if it exists.
    pub async fn get_endpoints(&self, ns: &str, name: &str) -> anyhow::Result<Option<Endpoints>> {
        Ok(self.endpoints(ns).get_opt(name).await?)
    }

    /// Waits until the Endpoints object `name` (or its absence) satisfies `done`.
    pub async fn wait_for_endpoints(
        &self,
        ns: &str,
        name: &str,
        what: &str,
        done: impl Fn(Option<&Endpoints>) -> bool,
    ) -> Option<Endpoints> {
        let what = format!("Endpoints {ns}/{name}: {what}");
        self.wait_for(&what, || self.get_endpoints(ns, name), |e| done(e.as_ref()))
            .await
    }

    /// Waits until an Event with `reason` about `involved` exists in `ns`, and returns it.
    pub async fn wait_for_event(&self, ns: &str, involved: &str, reason: &str) -> Event {
        let is_it = |e: &Event| {
            e.reason.as_deref() == Some(reason)
                && e.involved_object.name.as_deref() == Some(involved)
        };
        let what = format!("an event {reason} about {involved}");
        let events = self
            .wait_for_events(ns, &what, |events| events.iter().any(is_it))
            .await;
        events
            .into_iter()
            .find(is_it)
            .expect("the wait saw the event")
    }

    /// Waits until the Events of `ns` satisfy `done`, and returns them.
    pub async fn wait_for_events(
        &self,
        ns: &str,
        what: &str,
        done: impl Fn(&[Event]) -> bool,
    ) -> Vec<Event> {
        let what = format!("Events of {ns}: {what}");
        let read = || async {
            let listed = self.events(ns).list(&ListParams::default()).await?;
            anyhow::Ok(listed.items)
        };
        self.wait_for(&what, read, |e| done(e)).await
    }
}
