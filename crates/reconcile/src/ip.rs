//! IP parsing as Kubernetes does it: leading zeros in IPv4 octets are tolerated ("sloppy"), and
//! an IPv4-mapped IPv6 address counts as IPv4.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Parses an address the way upstream's `ParseIPSloppy` does.
pub fn parse_sloppy(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(normalise(ip));
    }
    if s.contains(':') {
        // An IPv6 address with a dotted tail may carry leading zeros in that tail.
        let (head, tail) = s.rsplit_once(':')?;
        let v4 = parse_v4_sloppy(tail)?;
        let rebuilt = format!("{head}:{v4}");
        return rebuilt
            .parse::<Ipv6Addr>()
            .ok()
            .map(|ip| normalise(IpAddr::V6(ip)));
    }
    parse_v4_sloppy(s).map(IpAddr::V4)
}

fn parse_v4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(Ipv4Addr::from(octets))
}

fn normalise(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// True when the string is an IPv6 address (and not an IPv4-mapped one).
pub fn is_ipv6(s: &str) -> bool {
    matches!(parse_sloppy(s), Some(IpAddr::V6(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_is_written_in_canonical_form() {
        let ip = parse_sloppy("FD00:0010:0000:0000:0000:0000:0000:0001").unwrap();
        assert_eq!(ip.to_string(), "fd00:10::1");
    }

    #[test]
    fn ipv4_octets_with_leading_zeros_are_accepted() {
        assert_eq!(
            parse_sloppy("010.001.002.003").unwrap().to_string(),
            "10.1.2.3"
        );
    }

    #[test]
    fn ipv4_mapped_ipv6_counts_as_ipv4() {
        assert!(!is_ipv6("::ffff:10.0.0.1"));
        assert_eq!(
            parse_sloppy("::ffff:10.0.0.1").unwrap().to_string(),
            "10.0.0.1"
        );
    }

    #[test]
    fn garbage_is_not_an_ip() {
        assert_eq!(parse_sloppy("10.0.0"), None);
        assert_eq!(parse_sloppy("not-an-ip"), None);
    }
}
