//! Orderings upstream derives from hashes of Go's debug print of a value.
//!
//! Upstream sorts the ports of an EndpointSlice by the FNV-128a hash, and the ports of an
//! Endpoints subset by the MD5 hash, of a `%#v`-style dump of each port (type names, field
//! names, pointers followed). Those orders are visible in the written objects, so to write
//! the same objects we reproduce the dump for the two port types and sort by the same hashes.

use md5::{Digest, Md5};

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

/// MD5 of the bytes.
pub fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
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
