//! Whether the faulted run ended where a fault-free one would: the Endpoints and
//! EndpointSlices the server holds are compared with what `plan` writes for the same final
//! pods, Services, nodes and hand-written Endpoints, by the conformance rules (generated
//! names, uids and resourceVersions do not count; slice sizes per Service, address type and
//! port list do, so a duplicated or left-over object shows).

use super::api::{list_values, retrying};
use crate::conformance::Written;
use crate::plan::{plan, PlanSettings};
use anyhow::Result;
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::{Api, Client};
use reconcile::compare::{Rules, Sides};
use serde_json::Value;
use std::collections::BTreeSet;

/// The cluster state the controllers answer to: namespaces, nodes, Services, pods, and the
/// Endpoints of selector-less Services (written by hand, or left by the Endpoints controller
/// when the selector went; the mirroring controller copies both). Endpoints of Services with
/// a selector, and every EndpointSlice, are the controllers' to write, so `plan` writes them
/// from nothing.
pub async fn sources(client: &Client) -> Result<Vec<Value>> {
    let services = list_values::<Service>(client).await?;
    let selectorless: BTreeSet<(String, String)> = services
        .iter()
        .filter(|s| {
            s.pointer("/spec/selector")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty())
        })
        .map(|s| (meta(s, "namespace"), meta(s, "name")))
        .collect();
    let mut objects = list_values::<Namespace>(client).await?;
    objects.extend(list_values::<Node>(client).await?);
    objects.extend(services);
    objects.extend(list_values::<Pod>(client).await?);
    objects.extend(
        list_values::<Endpoints>(client)
            .await?
            .into_iter()
            .filter(|e| selectorless.contains(&(meta(e, "namespace"), meta(e, "name")))),
    );
    Ok(objects)
}

fn meta(object: &Value, field: &str) -> String {
    object
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// What `plan` writes for `sources`, with the controllers the faulted run ran.
pub async fn planned(sources: Vec<Value>, options: &controller::Options) -> Result<Written> {
    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    settings.options.settings.max_endpoints_per_slice = options.settings.max_endpoints_per_slice;
    settings.options.settings.mirroring_max_endpoints_per_subset =
        options.settings.mirroring_max_endpoints_per_subset;
    settings.options.endpoints = options.endpoints;
    settings.options.endpoint_slices = options.endpoint_slices;
    settings.options.mirroring = options.mirroring;
    let outcome = plan(sources, &settings).await?;
    Ok(Written::from_outcome(outcome)?.without_events())
}

/// Every Endpoints and EndpointSlice the server holds.
pub async fn live(client: &Client) -> Result<Written> {
    let lp = ListParams::default();
    let endpoints = Api::<Endpoints>::all(client.clone());
    let slices = Api::<EndpointSlice>::all(client.clone());
    Ok(Written {
        endpoints: retrying(|| endpoints.list(&lp)).await?.items,
        endpoint_slices: retrying(|| slices.list(&lp)).await?.items,
        events: Vec::new(),
    })
}

/// What the two sides of a verdict's differences are called: the faulted run and the
/// fault-free result.
pub const SIDES: Sides = Sides {
    ours: "after faults",
    theirs: "plan",
};

/// The differences between the faulted run and the plan, one line each. Events are not
/// compared: the faults make the controllers report failures a fault-free run never sees
/// (neither side carries any). The trigger time is not compared either: it records when the
/// last change the controller saw happened, which a run from scratch cannot know. After a
/// server `restored` from a backup, slices are compared by what they hold, not how it is
/// split ([`Rules::Restored`]).
pub fn differences(live: &Written, planned: &Written, restored: bool) -> Vec<String> {
    let rules = if restored {
        Rules::Restored
    } else {
        Rules::Static
    };
    reconcile::compare::differences(&live.objects(), &planned.objects(), rules, SIDES)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile::trigger_time::ANNOTATION as TRIGGER_TIME;
    use serde_json::json;

    fn slice(name: &str, ips: &[&str]) -> Value {
        json!({
            "metadata": {
                "name": name,
                "namespace": "shop",
                "labels": {
                    "kubernetes.io/service-name": "web",
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                },
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": ips.iter().map(|ip| json!({"addresses": [ip]})).collect::<Vec<_>>(),
        })
    }

    fn written(slices: Vec<Value>) -> Written {
        Written {
            endpoint_slices: slices
                .into_iter()
                .map(|s| serde_json::from_value(s).unwrap())
                .collect(),
            ..Written::default()
        }
    }

    #[test]
    fn generated_names_do_not_count_but_a_duplicated_slice_does() {
        let planned = written(vec![slice("web-abcde", &["10.0.0.1", "10.0.0.2"])]);
        let renamed = written(vec![slice("web-xyzzy", &["10.0.0.1", "10.0.0.2"])]);
        assert_eq!(differences(&renamed, &planned, false), Vec::<String>::new());

        let split = written(vec![
            slice("web-xyzzy", &["10.0.0.1"]),
            slice("web-qwert", &["10.0.0.2"]),
        ]);
        let diffs = differences(&split, &planned, false);
        assert!(diffs.iter().any(|d| d.contains("sizes")), "{diffs:?}");
    }

    #[test]
    fn after_a_restore_the_split_does_not_count_but_a_duplicate_or_an_empty_slice_does() {
        let planned = written(vec![slice("web-abcde", &["10.0.0.1", "10.0.0.2"])]);
        let split = written(vec![
            slice("web-xyzzy", &["10.0.0.1"]),
            slice("web-qwert", &["10.0.0.2"]),
        ]);
        assert_eq!(differences(&split, &planned, true), Vec::<String>::new());
        let duplicated = written(vec![
            slice("web-xyzzy", &["10.0.0.1", "10.0.0.2"]),
            slice("web-qwert", &["10.0.0.2"]),
        ]);
        assert!(!differences(&duplicated, &planned, true).is_empty());
        let left_over = written(vec![
            slice("web-xyzzy", &["10.0.0.1", "10.0.0.2"]),
            slice("web-qwert", &[]),
        ]);
        let diffs = differences(&left_over, &planned, true);
        assert!(
            diffs.iter().any(|d| d.contains("empty slices")),
            "{diffs:?}"
        );
    }

    #[test]
    fn a_left_over_endpoints_object_is_a_difference_but_its_trigger_time_is_not() {
        let endpoints = |name: &str, time: &str| {
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "shop", "annotations": {TRIGGER_TIME: time}}})).unwrap()
        };
        let planned = Written {
            endpoints: vec![endpoints("web", "2026-01-01T00:00:00Z")],
            ..Written::default()
        };
        let same = Written {
            endpoints: vec![endpoints("web", "2026-02-02T00:00:00Z")],
            ..Written::default()
        };
        assert_eq!(differences(&same, &planned, false), Vec::<String>::new());
        let left_over = Written {
            endpoints: vec![
                endpoints("web", "2026-02-02T00:00:00Z"),
                endpoints("gone", "2026-02-02T00:00:00Z"),
            ],
            ..Written::default()
        };
        let diffs = differences(&left_over, &planned, false);
        assert!(
            diffs.iter().any(|d| d.starts_with("shop/gone Endpoints")),
            "{diffs:?}"
        );
        assert!(
            diffs.iter().all(|d| d.contains("only after faults")),
            "{diffs:?}"
        );
    }
}
