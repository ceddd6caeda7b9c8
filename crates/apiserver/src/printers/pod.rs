//! NAME READY STATUS RESTARTS AGE, and IP NODE NOMINATED NODE READINESS GATES with `-o wide`,
//! for pods.
//!
//! STATUS is not the phase: like upstream, it is the most telling reason among the init
//! containers, then the containers (a waiting or terminated reason wins), then Terminating for
//! a pod being deleted.

use super::{age, column, created, name, wide, Column, AGE, NAME};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodSpec, PodStatus};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    column("Status", "The aggregate status of the containers in this pod."),
    column("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    AGE,
    wide("IP", "podIP address allocated to the pod."),
    wide("Node", "NodeName indicates in which node this pod is scheduled."),
    wide("Nominated Node", "nominatedNodeName is set when this pod preempts other pods on the node."),
    wide("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness."),
];

fn has_condition(status: &PodStatus, type_: &str) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// When a container last finished before its restart, if it ever did.
fn last_termination(container: &ContainerStatus) -> Option<Timestamp> {
    container
        .last_state
        .as_ref()?
        .terminated
        .as_ref()?
        .finished_at
        .as_ref()
        .map(|t| t.0)
}

/// Counts of one pod gathered from its container statuses.
struct Summary {
    reason: String,
    ready: usize,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

impl Summary {
    fn restarted(&mut self, container: &ContainerStatus) {
        self.restarts += i64::from(container.restart_count);
        if let Some(at) = last_termination(container) {
            if self.last_restart.is_none_or(|last| last < at) {
                self.last_restart = Some(at);
            }
        }
    }
}

fn summarize(spec: &PodSpec, status: &PodStatus) -> Summary {
    let mut reason = status.phase.clone().unwrap_or_default();
    if let Some(r) = status.reason.as_ref().filter(|r| !r.is_empty()) {
        reason = r.clone();
    }
    let gated = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("SchedulingGated"));
    if gated {
        reason = "SchedulingGated".to_owned();
    }
    let mut summary = Summary {
        reason,
        ready: 0,
        restarts: 0,
        last_restart: None,
    };
    // Sidecars (init containers that restart always) count towards READY and RESTARTS.
    let mut sidecars = Summary {
        reason: String::new(),
        ready: 0,
        restarts: 0,
        last_restart: None,
    };
    let init_specs = spec.init_containers.as_deref().unwrap_or_default();
    let is_sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| c.name == name && c.restart_policy.as_deref() == Some("Always"))
    };
    let init_statuses = status
        .init_container_statuses
        .as_deref()
        .unwrap_or_default();
    let mut initializing = false;
    for (i, container) in init_statuses.iter().enumerate() {
        summary.restarted(container);
        let sidecar = is_sidecar(&container.name);
        if sidecar {
            sidecars.restarted(container);
        }
        let state = container.state.as_ref();
        let terminated = state.and_then(|s| s.terminated.as_ref());
        let waiting = state.and_then(|s| s.waiting.as_ref());
        if terminated.is_some_and(|t| t.exit_code == 0) {
            continue;
        }
        if sidecar && container.started == Some(true) {
            if container.ready {
                summary.ready += 1;
            }
            continue;
        }
        summary.reason = match (terminated, waiting) {
            (Some(t), _) => match t.reason.as_deref().filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None => match t.signal.filter(|s| *s != 0) {
                    Some(signal) => format!("Init:Signal:{signal}"),
                    None => format!("Init:ExitCode:{}", t.exit_code),
                },
            },
            (None, Some(w))
                if w.reason
                    .as_deref()
                    .is_some_and(|r| !r.is_empty() && r != "PodInitializing") =>
            {
                format!("Init:{}", w.reason.as_deref().unwrap_or_default())
            }
            _ => format!("Init:{i}/{}", init_specs.len()),
        };
        initializing = true;
        break;
    }
    if !initializing || has_condition(status, "Initialized") {
        summary.restarts = sidecars.restarts;
        summary.last_restart = sidecars.last_restart;
        let mut running = false;
        for container in status.container_statuses.iter().flatten().rev() {
            summary.restarted(container);
            let state = container.state.as_ref();
            let waiting = state.and_then(|s| s.waiting.as_ref());
            let terminated = state.and_then(|s| s.terminated.as_ref());
            if let Some(r) = waiting
                .and_then(|w| w.reason.clone())
                .filter(|r| !r.is_empty())
            {
                summary.reason = r;
            } else if let Some(t) = terminated {
                summary.reason = match t.reason.clone().filter(|r| !r.is_empty()) {
                    Some(r) => r,
                    None => match t.signal.filter(|s| *s != 0) {
                        Some(signal) => format!("Signal:{signal}"),
                        None => format!("ExitCode:{}", t.exit_code),
                    },
                };
            } else if container.ready && state.is_some_and(|s| s.running.is_some()) {
                running = true;
                summary.ready += 1;
            }
        }
        // A completed container beside a running one: the pod itself is still running.
        if summary.reason == "Completed" && running {
            summary.reason = if has_condition(status, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_owned();
        }
    }
    summary
}

fn readiness_gates(spec: &PodSpec, status: &PodStatus) -> String {
    let gates = spec.readiness_gates.as_deref().unwrap_or_default();
    if gates.is_empty() {
        return "<none>".to_owned();
    }
    let passed = gates
        .iter()
        .filter(|g| {
            status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == g.condition_type)
                .is_some_and(|c| c.status == "True")
        })
        .count();
    format!("{passed}/{}", gates.len())
}

fn or_none(value: Option<String>) -> String {
    value
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "<none>".to_owned())
}

pub(super) fn cells(pod: &Pod, now: Timestamp) -> Vec<Value> {
    let spec = pod.spec.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let mut summary = summarize(&spec, &status);
    if pod.metadata.deletion_timestamp.is_some() {
        let phase = status.phase.as_deref().unwrap_or_default();
        if status.reason.as_deref() == Some("NodeLost") {
            summary.reason = "Unknown".to_owned();
        } else if phase != "Succeeded" && phase != "Failed" {
            summary.reason = "Terminating".to_owned();
        }
    }
    let restarts = match summary.last_restart {
        Some(at) if summary.restarts != 0 => {
            format!("{} ({} ago)", summary.restarts, age::since(Some(at), now))
        }
        _ => summary.restarts.to_string(),
    };
    let ip = status
        .pod_ips
        .as_ref()
        .and_then(|ips| ips.first())
        .map(|ip| ip.ip.clone());
    vec![
        name(&pod.metadata),
        Value::from(format!("{}/{}", summary.ready, spec.containers.len())),
        Value::from(summary.reason),
        Value::from(restarts),
        Value::from(created(&pod.metadata, now)),
        Value::from(or_none(ip)),
        Value::from(or_none(spec.node_name.clone())),
        Value::from(or_none(status.nominated_node_name.clone())),
        Value::from(readiness_gates(&spec, &status)),
    ]
}

/// Row conditions kubectl uses to tell finished pods apart.
pub(super) fn conditions(pod: &Pod) -> Option<Value> {
    let (reason, message) = match pod.status.as_ref()?.phase.as_deref()? {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(
        serde_json::json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    fn status_and_ready(p: &Pod) -> (String, String) {
        let cells = cells(p, super::super::now());
        (
            cells[2].as_str().unwrap().to_owned(),
            cells[1].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn pod_status_prefers_container_reasons_over_the_phase() {
        let cases = [
            (
                "running and ready pod shows Running",
                json!({"phase": "Running", "containerStatuses": [
                {"name": "c", "ready": true, "restartCount": 0, "image": "x", "imageID": "", "state": {"running": {}}}]}),
                ("Running", "1/1"),
            ),
            (
                "waiting container shows its reason",
                json!({"phase": "Pending", "containerStatuses": [
                {"name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
                ("ContainerCreating", "0/1"),
            ),
            (
                "failed init container shows Init:reason",
                json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "i", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
                ("Init:Error", "0/1"),
            ),
            (
                "pod without status shows its phase",
                json!({"phase": "Pending"}),
                ("Pending", "0/1"),
            ),
        ];
        for (behaviour, status, want) in cases {
            let p = pod(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}, "status": status}));
            let (s, r) = status_and_ready(&p);
            assert_eq!((s.as_str(), r.as_str()), want, "{behaviour}");
        }
    }

    #[test]
    fn deleted_pod_shows_terminating_and_wide_cells_fill_none() {
        let p = pod(
            json!({"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}),
        );
        let cells = cells(&p, super::super::now());
        assert_eq!(cells[2], "Terminating");
        assert_eq!(cells[3], "0");
        assert_eq!(&cells[5..], ["<none>", "<none>", "<none>", "<none>"]);
    }
}
