//! The string formats Kubernetes names and addresses must follow: DNS labels and subdomains,
//! qualified names, label values, port names, IP addresses and domain names.
//!
//! Each check returns the problems found as upstream's messages (apimachinery's
//! `util/validation`), empty when the value is fine. Upstream matches regular expressions; these
//! walk the bytes instead, which keeps the crate free of a regex engine and is linear in the
//! input. The messages still quote upstream's expressions, since that is what clients see.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// A format check: the problems of a value, as upstream's messages; empty when it is fine.
pub(crate) type Rule = fn(&str) -> Vec<String>;

/// Longest DNS label.
const LABEL_MAX: usize = 63;
/// Longest DNS subdomain.
const SUBDOMAIN_MAX: usize = 253;

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    // Go appends "', " after each example and " or " between them, hence the double space.
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

/// The message for a number outside `lo..=hi`.
pub(crate) fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(value: &str) -> bool {
    let b = value.as_bytes();
    b.first().is_some_and(|c| is_lower_alnum(*c))
        && b.last().is_some_and(|c| is_lower_alnum(*c))
        && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
}

/// A DNS label (RFC 1123): namespace names, hostnames, port names of Services.
pub(crate) fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX {
        errors.push(max_len_error(LABEL_MAX));
    }
    if !matches_dns1123_label(value) {
        errors.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errors
}

/// A DNS subdomain (RFC 1123): most object names, node names.
pub(crate) fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        errors.push(max_len_error(SUBDOMAIN_MAX));
    }
    if !value.split('.').all(matches_dns1123_label) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// A DNS label in RFC 1035's stricter form (starts with a letter): Service names.
pub(crate) fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX {
        errors.push(max_len_error(LABEL_MAX));
    }
    let starts_with_letter = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !starts_with_letter || !matches_dns1123_label(value) {
        errors.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(value: &str) -> bool {
    let b = value.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A qualified name, `[prefix/]name`, with a DNS subdomain as prefix: label keys,
/// `appProtocol`.
pub(crate) fn qualified_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errors.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_MAX {
        errors.push(format!("name part {}", max_len_error(LABEL_MAX)));
    }
    if !matches_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// A label value: empty, or at most 63 characters of a qualified name's alphabet.
pub(crate) fn label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX {
        errors.push(max_len_error(LABEL_MAX));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errors.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// An IANA service name as used for container port names and named target ports.
pub(crate) fn port_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let b = value.as_bytes();
    if b.len() > 15 {
        errors.push(max_len_error(15));
    }
    if b.is_empty() || !b.iter().all(|c| is_lower_alnum(*c) || *c == b'-') {
        errors.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    }
    if !b.iter().any(u8::is_ascii_lowercase) {
        errors.push("must contain at least one letter (a-z)".to_owned());
    }
    if value.contains("--") {
        errors.push("must not contain consecutive hyphens".to_owned());
    }
    if b.first() == Some(&b'-') || b.last() == Some(&b'-') {
        errors.push("must not begin or end with a hyphen".to_owned());
    }
    errors
}

/// A port number, 1 to 65535.
pub(crate) fn port_number(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// An IP address parsed the lenient way Go's `net.ParseIP` used to, which is what upstream
/// first checks a legacy IP field against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SloppyIp {
    /// The address; IPv4-mapped IPv6 addresses are returned as IPv4, as Go treats them.
    pub ip: IpAddr,
    /// Whether the text had an octet with a leading zero (`010.0.0.1`), which strict
    /// validation rejects because other software reads such octets as octal.
    pub leading_zeros: bool,
    /// Whether the text was an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`).
    pub mapped: bool,
}

/// Parses dotted-quad IPv4 allowing leading zeros in octets (`010.001.002.003`), with the
/// parser upstream's `ParseIPSloppy` rules already have in `reconcile`.
fn parse_ipv4_with_zeros(text: &str) -> Option<Ipv4Addr> {
    if text.contains(':') {
        return None;
    }
    match reconcile::ip::parse_sloppy(text)? {
        IpAddr::V4(ip) => Some(ip),
        IpAddr::V6(_) => None,
    }
}

/// Parses an IP address leniently; `None` when it is no IP at all.
pub(crate) fn parse_ip_sloppy(text: &str) -> Option<SloppyIp> {
    if let Ok(ip) = text.parse::<Ipv4Addr>() {
        return Some(SloppyIp {
            ip: IpAddr::V4(ip),
            leading_zeros: false,
            mapped: false,
        });
    }
    if let Some(ip) = parse_ipv4_with_zeros(text) {
        return Some(SloppyIp {
            ip: IpAddr::V4(ip),
            leading_zeros: true,
            mapped: false,
        });
    }
    // Zone suffixes (`fe80::1%eth0`) are not IPs to Go either, and std rejects them too.
    let v6 = text.parse::<Ipv6Addr>().ok()?;
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => SloppyIp {
            ip: IpAddr::V4(v4),
            leading_zeros: false,
            mapped: true,
        },
        None => SloppyIp {
            ip: IpAddr::V6(v6),
            leading_zeros: false,
            mapped: false,
        },
    })
}

/// The message upstream gives a value that is no IP address at all.
pub(crate) const NOT_AN_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// Checks an IP in a field that predates strict validation (pod IPs, ClusterIPs, Endpoints
/// addresses). Upstream's StrictIPCIDRValidation rules apply: no leading zeros, no
/// IPv4-mapped IPv6; a non-canonical IPv6 spelling is still accepted.
pub(crate) fn legacy_ip(text: &str) -> Vec<String> {
    match parse_ip_sloppy(text) {
        None => vec![NOT_AN_IP.to_owned()],
        Some(ip) => {
            let mut errors = Vec::new();
            if ip.leading_zeros {
                errors.push("must not have leading 0s".to_owned());
            }
            if ip.mapped {
                errors.push("must not be an IPv4-mapped IPv6 address".to_owned());
            }
            errors
        }
    }
}

/// Rejects addresses that make no sense as a destination: unspecified, loopback, link-local
/// unicast and link-local multicast (upstream's `ValidateEndpointIP`). `text` must parse.
pub(crate) fn endpoint_ip(text: &str) -> Vec<String> {
    let Some(SloppyIp { ip, .. }) = parse_ip_sloppy(text) else {
        return vec!["must be a valid IP address".to_owned()];
    };
    let mut errors = Vec::new();
    if ip.is_unspecified() {
        errors.push(format!("may not be unspecified ({text})"));
    }
    if ip.is_loopback() {
        errors.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_owned());
    }
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    if link_local {
        errors.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_owned());
    }
    let link_local_multicast = match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => (v6.segments()[0] & 0xff0f) == 0xff02,
    };
    if link_local_multicast {
        errors.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_owned(),
        );
    }
    errors
}

/// Which IP family an address of an EndpointSlice must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    V4,
    V6,
}

/// Checks an address of an `IPv4` or `IPv6` EndpointSlice.
pub(crate) fn ip_of_family(text: &str, family: Family) -> Vec<String> {
    let ip = parse_ip_sloppy(text).map(|p| p.ip);
    match (family, ip) {
        (Family::V4, Some(IpAddr::V4(_))) | (Family::V6, Some(IpAddr::V6(_))) => Vec::new(),
        (Family::V4, _) => vec!["must be a valid IPv4 address".to_owned()],
        (Family::V6, _) => vec!["must be a valid IPv6 address".to_owned()],
    }
}

/// Checks an address of an `FQDN` EndpointSlice. Returns the value upstream reports with the
/// message (a single bad label, or the whole name), and at most one message.
pub(crate) fn fully_qualified_domain_name(name: &str) -> Option<(String, String)> {
    let trimmed = name.strip_suffix('.').unwrap_or(name);
    let errors = dns1123_subdomain(trimmed);
    if !errors.is_empty() {
        return Some((trimmed.to_owned(), errors.join(",")));
    }
    if trimmed.split('.').count() < 2 {
        return Some((
            trimmed.to_owned(),
            "should be a domain with at least two segments separated by dots".to_owned(),
        ));
    }
    trimmed.split('.').find_map(|label| {
        let errors = dns1123_label(label);
        (!errors.is_empty()).then(|| (label.to_owned(), errors.join(",")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels_and_subdomains_follow_rfc_1123() {
        assert_rule(dns1123_label, &["web-1"], &["web.1", "-web"]);
        assert_eq!(dns1123_label(&"a".repeat(64)).len(), 1);
        assert_rule(dns1123_subdomain, &["a.b-c.d"], &["a..b", "Web"]);
        assert_rule(dns1035_label, &["web"], &["1web"]);
    }

    /// Asserts that `rule` finds no problem with the `valid` values and some with each of
    /// the `invalid` ones.
    fn assert_rule(rule: Rule, valid: &[&str], invalid: &[&str]) {
        for value in valid {
            assert_eq!(rule(value), Vec::<String>::new(), "{value:?}");
        }
        for value in invalid {
            assert!(!rule(value).is_empty(), "{value:?}");
        }
    }

    #[test]
    fn label_messages_quote_upstream_examples() {
        assert_eq!(
            dns1123_label("a.b"),
            vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
        );
    }

    #[test]
    fn qualified_names_may_carry_a_subdomain_prefix() {
        assert_rule(
            qualified_name,
            &["app", "kubernetes.io/service-name"],
            &["/x", "a/b/c", "bad key", "Example.com/x"],
        );
        assert_rule(label_value, &["", "My_value.1"], &["-x"]);
    }

    #[test]
    fn port_names_need_a_letter_and_no_double_hyphen() {
        assert_rule(
            port_name,
            &["http", "h2c-8080"],
            &["8080", "a--b", "http-proxy-12345"],
        );
    }

    #[test]
    fn sloppy_ip_parsing_flags_leading_zeros_and_mapped_addresses() {
        assert!(legacy_ip("10.0.0.1").is_empty());
        assert!(legacy_ip("fd00::1").is_empty());
        assert_eq!(legacy_ip("010.0.0.1"), vec!["must not have leading 0s"]);
        assert_eq!(
            legacy_ip("::ffff:10.0.0.1"),
            vec!["must not be an IPv4-mapped IPv6 address"]
        );
        assert_eq!(legacy_ip("999.1.1.1"), vec![NOT_AN_IP]);
        assert_eq!(legacy_ip("not-an-ip"), vec![NOT_AN_IP]);
    }

    #[test]
    fn special_addresses_are_not_endpoints() {
        assert!(endpoint_ip("10.0.0.1").is_empty());
        assert_eq!(endpoint_ip("127.0.0.1").len(), 1);
        assert_eq!(endpoint_ip("0.0.0.0").len(), 1);
        assert_eq!(endpoint_ip("169.254.1.1").len(), 1);
        assert_eq!(endpoint_ip("224.0.0.5").len(), 1);
        assert_eq!(endpoint_ip("fe80::1").len(), 1);
        assert_eq!(endpoint_ip("ff02::1").len(), 1);
        assert!(endpoint_ip("2001:db8::1").is_empty());
    }

    #[test]
    fn slice_addresses_are_checked_by_family_and_domain() {
        assert!(ip_of_family("10.0.0.1", Family::V4).is_empty());
        assert!(!ip_of_family("fd00::1", Family::V4).is_empty());
        assert!(ip_of_family("fd00::1", Family::V6).is_empty());
        assert!(!ip_of_family("10.0.0.1", Family::V6).is_empty());
        assert!(fully_qualified_domain_name("foo.example.com").is_none());
        assert!(fully_qualified_domain_name("example.com.").is_none());
        for bad in [
            "foo.*",
            "FOO.example.com",
            "under_score.example.com",
            "*.example.com",
            "localhost",
        ] {
            assert!(fully_qualified_domain_name(bad).is_some(), "{bad}");
        }
    }
}
