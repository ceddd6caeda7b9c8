//! NAME ADDRESSTYPE PORTS ENDPOINTS AGE for EndpointSlices.

use super::{column, created, list_with_more, name, Column, AGE, NAME};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    column(
        "AddressType",
        "addressType specifies the type of address carried by this EndpointSlice.",
    ),
    column(
        "Ports",
        "ports specifies the list of network ports exposed by each endpoint in this slice.",
    ),
    column(
        "Endpoints",
        "endpoints is a list of unique endpoints in this slice.",
    ),
    AGE,
];

pub(super) fn cells(slice: &EndpointSlice, now: Timestamp) -> Vec<Value> {
    // A port without a number matches every port; upstream shows its name, or `*`.
    let ports = slice
        .ports
        .iter()
        .flatten()
        .map(|p| match (p.port, &p.name) {
            (Some(port), _) => port.to_string(),
            (None, Some(name)) => name.clone(),
            (None, None) => "*".to_owned(),
        });
    let addresses = slice
        .endpoints
        .iter()
        .flat_map(|e| e.addresses.iter().cloned());
    vec![
        name(&slice.metadata),
        Value::from(slice.address_type.clone()),
        Value::from(list_with_more(ports, "<unset>")),
        Value::from(list_with_more(addresses, "<unset>")),
        Value::from(created(&slice.metadata, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::printed;
    use super::*;
    use serde_json::json;

    #[test]
    fn slice_cells_list_ports_and_addresses_or_unset() {
        // Each slice with the row kube-apiserver prints for it.
        let cases = [
            (
                json!({
                    "metadata": {"name": "web-abc"},
                    "addressType": "IPv4",
                    "ports": [{"name": "http", "port": 80}, {"name": "any"}],
                    "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]},
                        {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}],
                }),
                json!([
                    "web-abc",
                    "IPv4",
                    "80,any",
                    "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
                    "<unknown>"
                ]),
            ),
            (
                json!({"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": []}),
                json!(["e", "IPv4", "<unset>", "<unset>", "<unknown>"]),
            ),
        ];
        for (slice, row) in cases {
            assert_eq!(printed(cells, slice), row);
        }
    }
}
