//! Waiting until the controllers have settled: the one wait `plan`, the conformance cases
//! (static and dynamic), `dev --exit-when-synced` and the fault schedules share.
//!
//! The controllers are settled once no Endpoints or EndpointSlice write reached the server
//! for a quiet window while they said they were idle all along (synced, and no key ready, in
//! flight or due within the horizon), by the server's
//! [`apiserver::ApiServer::wait_until_quiet`]. Controllers whose state cannot be seen
//! (leader-elected replicas keep their queues to themselves) are taken as idle.

use apiserver::ApiServer;
use controller::health::Readiness;
use controller::Activity;
use std::time::Duration;

/// What settling means for one caller.
#[derive(Debug, Clone, Copy)]
pub struct Quiet {
    /// The resources whose writes must have stopped for the window (`endpoints`,
    /// `endpointslices`).
    pub resources: &'static [&'static str],
    /// The quiet window: how long without such writes, and with the controllers idle,
    /// counts as settled.
    pub window: Duration,
    /// Keys due later than this are not waited for: a long backoff is not work in progress.
    pub horizon: Duration,
    /// How long the wait may take before it gives up.
    pub deadline: Duration,
}

/// What can be seen of the controllers being waited for.
pub enum Controllers<'a> {
    /// Controllers in this process: their readiness and their activity.
    InProcess {
        /// Turns true once their informers synced.
        readiness: &'a Readiness,
        /// Their queues, Event recorders and informers.
        activity: &'a Activity,
    },
    /// Controllers whose state cannot be seen; the function says whether they are idle as
    /// far as anything is known (always true when nothing is).
    Opaque(Box<dyn Fn() -> bool + Send + Sync + 'a>),
}

/// Waits until the controllers have settled (see the module comment). Returns false if
/// `quiet.deadline` passes first.
pub async fn settle(server: &ApiServer, controllers: &Controllers<'_>, quiet: &Quiet) -> bool {
    let idle = || match controllers {
        Controllers::InProcess {
            readiness,
            activity,
        } => readiness.is_synced() && activity.is_idle_within(quiet.horizon),
        Controllers::Opaque(idle) => idle(),
    };
    server
        .wait_until_quiet(quiet.resources, quiet.window, quiet.deadline, idle)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use serde_json::json;

    const QUIET: Quiet = Quiet {
        resources: &["endpoints", "endpointslices"],
        window: Duration::from_millis(250),
        horizon: Duration::from_millis(250),
        deadline: Duration::from_secs(60),
    };

    fn options() -> controller::Options {
        controller::Options {
            settings: controller::config::Settings::default(),
            endpoints: true,
            endpoint_slices: true,
            shadow: None,
            mirroring: true,
        }
    }

    fn node(name: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    }

    fn web(pods: usize) -> Vec<serde_json::Value> {
        let mut objects = vec![
            node("n1"),
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
            }),
        ];
        for i in 0..pods {
            objects.push(pod(i));
        }
        objects
    }

    fn pod(i: usize) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("web-{i}"), "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "podIP": format!("10.0.0.{}", i + 1),
                       "podIPs": [{"ip": format!("10.0.0.{}", i + 1)}],
                       "conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    async fn endpoints_in_slices(client: &kube::Client) -> usize {
        kube::Api::<EndpointSlice>::namespaced(client.clone(), "default")
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|s| s.endpoints.len())
            .sum()
    }

    /// Settling right after the start must wait for the informers' first lists and the syncs
    /// they queue, and settling after a change for the sync the change's watch event queues:
    /// at both moments the slices already hold what the controllers were going to write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_process_controllers_settle_once_what_they_write_is_written() {
        let server = ApiServer::new(apiserver::Config::default());
        server.apply_objects(web(3)).unwrap();
        let client = kube::Client::new(server.service(), "default");
        let (readiness, activity) = (Readiness::new(), Activity::new());
        let token = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn({
            let (client, readiness, activity, token) = (
                client.clone(),
                readiness.clone(),
                activity.clone(),
                token.clone(),
            );
            async move {
                let registry = prometheus::Registry::new();
                controller::run(client, &options(), &registry, readiness, activity, token).await
            }
        });
        let controllers = Controllers::InProcess {
            readiness: &readiness,
            activity: &activity,
        };
        assert!(settle(&server, &controllers, &QUIET).await);
        assert_eq!(endpoints_in_slices(&client).await, 3);
        let writes = server.writes_to(QUIET.resources);

        server.apply_objects(vec![pod(3)]).unwrap();
        assert!(settle(&server, &controllers, &QUIET).await);
        assert_eq!(endpoints_in_slices(&client).await, 4);
        assert!(server.writes_to(QUIET.resources) > writes);

        token.cancel();
        task.await.unwrap().unwrap();
    }
}
