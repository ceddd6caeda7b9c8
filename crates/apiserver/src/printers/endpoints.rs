//! NAME ENDPOINTS AGE for Endpoints, with upstream's `+ N more...` truncation.

use super::{column, created, name, Column, AGE, NAME};
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    column(
        "Endpoints",
        "The set of all endpoints is the union of all subsets.",
    ),
    AGE,
];

/// The first three ready `ip:port` pairs (every address with every port of its subset, or the
/// bare IP in a subset without ports), then how many more there are; `<none>` without subsets.
fn format_endpoints(endpoints: &Endpoints) -> String {
    let subsets = endpoints.subsets.as_deref().unwrap_or_default();
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    let pairs = subsets.iter().flat_map(|subset| {
        let addresses = subset.addresses.as_deref().unwrap_or_default();
        let ports: Vec<Option<i32>> = match subset.ports.as_deref() {
            Some(ports) if !ports.is_empty() => ports.iter().map(|p| Some(p.port)).collect(),
            // A headless service may have no ports: its addresses are listed bare.
            _ => vec![None],
        };
        ports.into_iter().flat_map(move |port| {
            addresses.iter().map(move |a| match port {
                Some(port) if a.ip.contains(':') => format!("[{}]:{port}", a.ip),
                Some(port) => format!("{}:{port}", a.ip),
                None => a.ip.clone(),
            })
        })
    });
    super::list_with_more(pairs, "")
}

pub(super) fn cells(endpoints: &Endpoints, now: Timestamp) -> Vec<Value> {
    vec![
        name(&endpoints.metadata),
        Value::from(format_endpoints(endpoints)),
        Value::from(created(&endpoints.metadata, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoints(subsets: Value) -> Endpoints {
        serde_json::from_value(json!({"metadata": {"name": "web"}, "subsets": subsets})).unwrap()
    }

    #[test]
    fn endpoints_show_three_pairs_then_how_many_more() {
        let ep = endpoints(json!([{
            "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
            "notReadyAddresses": [{"ip": "10.0.0.9"}],
            "ports": [{"port": 80}, {"port": 443}],
        }]));
        assert_eq!(
            format_endpoints(&ep),
            "10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more..."
        );
    }

    #[test]
    fn endpoints_without_ports_list_bare_ips_and_without_subsets_none() {
        let ep = endpoints(json!([{"addresses": [{"ip": "10.0.0.1"}]}]));
        assert_eq!(format_endpoints(&ep), "10.0.0.1");
        assert_eq!(format_endpoints(&endpoints(json!([]))), "<none>");
    }
}
