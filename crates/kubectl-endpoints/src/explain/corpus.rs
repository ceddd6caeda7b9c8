//! Checking explain against the conformance corpus: a pod is a ready or not-ready endpoint
//! exactly when upstream kube-controller-manager put it in a slice with that condition.

use super::Explanation;
use serde_json::Value;
use std::collections::BTreeMap;

/// The ready condition of every pod upstream put in a slice of `service` (`namespace/name`),
/// by pod name, from an `upstream.json` recording.
fn upstream_pods(upstream: &Value, service: &str) -> BTreeMap<String, bool> {
    let (namespace, name) = service.split_once('/').unwrap_or(("", service));
    let mut pods = BTreeMap::new();
    for slice in upstream["endpointslices"].as_array().into_iter().flatten() {
        let ours = slice.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace)
            && slice
                .pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                == Some(name);
        if !ours {
            continue;
        }
        for endpoint in slice["endpoints"].as_array().into_iter().flatten() {
            let target = &endpoint["targetRef"];
            if target["kind"].as_str().unwrap_or("Pod") != "Pod" {
                continue;
            }
            if let Some(pod) = target["name"].as_str() {
                let ready = endpoint
                    .pointer("/conditions/ready")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                pods.insert(pod.to_owned(), ready);
            }
        }
    }
    pods
}

/// Where `explanations` disagree with upstream's recording, one line each: a pod upstream put
/// in a slice must have an in-slice verdict with the same ready condition, and every other pod
/// an exclusion verdict.
pub fn disagreements(explanations: &[Explanation], upstream: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for e in explanations {
        let mut upstream_pods = upstream_pods(upstream, &e.service);
        for pod in &e.pods {
            let theirs = if pod.verdict == super::Verdict::SelectorMismatch {
                upstream_pods.get(&pod.name).copied()
            } else {
                upstream_pods.remove(&pod.name)
            };
            let agrees = match theirs {
                Some(ready) => pod.verdict.in_slices() && pod.in_slices.ready == Some(ready),
                None => {
                    !pod.verdict.in_slices()
                        && pod.in_slices.ready.is_none()
                        && pod.verdict != super::Verdict::Unexplained
                }
            };
            if !agrees {
                lines.push(format!(
                    "{} pod {}: explain says {:?} (ready {:?}: {}), upstream {}",
                    e.service,
                    pod.name,
                    pod.verdict.phrase(),
                    pod.in_slices.ready,
                    pod.reason,
                    match theirs {
                        Some(ready) => format!("has it in a slice with ready={ready}"),
                        None => "has it in no slice".to_owned(),
                    }
                ));
            }
        }
        for (pod, ready) in upstream_pods {
            lines.push(format!(
                "{} pod {pod}: upstream has it in a slice with ready={ready}, explain does not \
                 list it",
                e.service
            ));
        }
    }
    lines
}
