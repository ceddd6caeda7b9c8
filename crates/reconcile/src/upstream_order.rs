//! Orderings upstream derives from hashes of Go's debug print of a value.
//!
//! Upstream sorts the ports of an EndpointSlice, and the ports of an Endpoints subset, by a
//! hash of a `%#v`-style dump of each port (type names, field names, pointers followed): MD5
//! up to v1.34, FNV-128a from v1.35 ([`crate::kube_version::OrderHash`]). Those orders are
//! visible in the written objects, so to write the same objects we reproduce the dump for the
//! two port types and sort by the followed version's hash.

fn ptr_string(out: &mut String, type_name: &str, value: Option<&str>) {
    out.push_str("(*");
    out.push_str(type_name);
    out.push(')');
    match value {
        Some(v) => out.push_str(v),
        None => out.push_str("<nil>"),
    }
}

/// The dump of a discovery/v1 EndpointPort (all fields are pointers).
pub fn slice_port_dump(
    name: Option<&str>,
    protocol: Option<&str>,
    port: Option<i32>,
    app_protocol: Option<&str>,
) -> String {
    let mut out = String::from("(v1.EndpointPort){Name:");
    ptr_string(&mut out, "string", name);
    out.push_str(" Protocol:");
    ptr_string(&mut out, "v1.Protocol", protocol);
    out.push_str(" Port:");
    let port = port.map(|p| p.to_string());
    ptr_string(&mut out, "int32", port.as_deref());
    out.push_str(" AppProtocol:");
    ptr_string(&mut out, "string", app_protocol);
    out.push('}');
    out
}

/// The dump of a core/v1 EndpointPort (only appProtocol is a pointer).
pub fn endpoints_port_dump(
    name: &str,
    port: i32,
    protocol: &str,
    app_protocol: Option<&str>,
) -> String {
    let mut out = format!("(v1.EndpointPort){{Name:(string){name} Port:(int32){port} Protocol:(v1.Protocol){protocol} AppProtocol:");
    ptr_string(&mut out, "string", app_protocol);
    out.push('}');
    out
}

/// FNV-128a of the bytes, big-endian, as Go's `hash/fnv` returns it.
pub fn fnv128a(data: &[u8]) -> [u8; 16] {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut hash = OFFSET;
    for &b in data {
        hash ^= u128::from(b);
        hash = hash.wrapping_mul(PRIME);
    }
    hash.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv128a_matches_the_reference_vectors() {
        // Empty input hashes to the offset basis.
        assert_eq!(
            fnv128a(b""),
            0x6c62272e07bb014262b821756295c58du128.to_be_bytes()
        );
        // Known value for "a" from the FNV reference tables.
        assert_eq!(
            fnv128a(b"a"),
            0xd228cb696f1a8caf78912b704e4a8964u128.to_be_bytes()
        );
    }

    /// Every port list of more than one port that upstream wrote in the corpus, of every
    /// version recorded, taken apart and sorted again by that version's hash, comes out in the
    /// order upstream recorded. Tallies how many lists of each kind, with and without
    /// appProtocol, were checked.
    #[test]
    fn ports_sort_into_the_orders_upstream_recorded_in_the_corpus() {
        use crate::kube_version::{KubeVersion, OrderHash, VersionRules};
        use k8s_openapi::api::core::v1::Endpoints;
        use k8s_openapi::api::discovery::v1::EndpointSlice;

        fn reorderings<T: Clone>(list: &[T]) -> Vec<Vec<T>> {
            let mut reversed = list.to_vec();
            reversed.reverse();
            let mut rotated = list.to_vec();
            rotated.rotate_left(1);
            vec![reversed, rotated]
        }
        fn check<T: Clone + PartialEq + std::fmt::Debug>(
            recorded: &[T],
            sort: fn(&mut [T], OrderHash),
            hash: OrderHash,
            what: &str,
        ) {
            for mut list in reorderings(recorded) {
                sort(&mut list, hash);
                assert_eq!(list, recorded, "{what}");
            }
        }

        let corpus =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
        let mut recordings = vec![(corpus.join("cases"), KubeVersion::NEWEST)];
        for version in KubeVersion::supported() {
            let dir = corpus.join(format!("versions/{version}"));
            if dir.is_dir() {
                recordings.push((dir, version));
            }
        }
        assert_eq!(recordings.len(), 4, "v1.36 and three older versions");
        // (endpoints, slices) x (without, with appProtocol), per hash
        let mut checked = std::collections::BTreeMap::<&str, [[usize; 2]; 2]>::new();
        for (dir, version) in recordings {
            let hash = VersionRules::of(version).order_hash;
            let tally = checked
                .entry(if hash == OrderHash::Md5 { "md5" } else { "fnv" })
                .or_default();
            for case in std::fs::read_dir(&dir).expect("the conformance corpus") {
                let path = case.unwrap().path().join("upstream.json");
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let recorded: serde_json::Value = serde_json::from_str(&text).unwrap();
                let list = |key: &str| recorded[key].as_array().cloned().unwrap_or_default();
                for value in list("endpoints") {
                    let endpoints: Endpoints = serde_json::from_value(value).unwrap();
                    for ports in endpoints
                        .subsets
                        .iter()
                        .flatten()
                        .filter_map(|s| s.ports.as_ref())
                    {
                        if ports.len() > 1 {
                            let what = format!(
                                "{}: Endpoints {:?}",
                                path.display(),
                                endpoints.metadata.name
                            );
                            check(ports, crate::endpoints::repack::sort_ports, hash, &what);
                            tally[0]
                                [usize::from(ports.iter().any(|p| p.app_protocol.is_some()))] += 1;
                        }
                    }
                }
                for value in list("endpointslices") {
                    let slice: EndpointSlice = serde_json::from_value(value).unwrap();
                    let Some(ports) = slice.ports.as_ref().filter(|p| p.len() > 1) else {
                        continue;
                    };
                    let what = format!(
                        "{}: EndpointSlice {:?}",
                        path.display(),
                        slice.metadata.name
                    );
                    check(ports, crate::slice::port_groups::sort_ports, hash, &what);
                    tally[1][usize::from(ports.iter().any(|p| p.app_protocol.is_some()))] += 1;
                }
            }
        }
        // Each hash's recordings hold multi-port slices with and without appProtocol, and a
        // multi-port Endpoints subset with appProtocol (public-appprotocol-ports); none without.
        for (hash, tally) in &checked {
            assert!(
                tally[0][1] > 0 && tally[1][0] > 0 && tally[1][1] > 0,
                "{hash}: port lists checked, [Endpoints, slices] x [without, with appProtocol]: {tally:?}"
            );
        }
        assert_eq!(checked.len(), 2, "both hashes checked");
    }

    #[test]
    fn dumps_have_go_debug_shape() {
        assert_eq!(
            slice_port_dump(Some("http"), Some("TCP"), Some(8080), None),
            "(v1.EndpointPort){Name:(*string)http Protocol:(*v1.Protocol)TCP Port:(*int32)8080 AppProtocol:(*string)<nil>}"
        );
        assert_eq!(
            endpoints_port_dump("http", 8080, "TCP", Some("h2c")),
            "(v1.EndpointPort){Name:(string)http Port:(int32)8080 Protocol:(v1.Protocol)TCP AppProtocol:(*string)h2c}"
        );
    }
}
