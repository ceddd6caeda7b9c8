//! Checks shared by every kind with ports: the protocol, the number range, named ports.

use super::field::{invalid_each, FieldError, Path};
use super::formats::{dns1123_label, port_name, port_number, qualified_name};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The protocols a port may carry.
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// A port's protocol: required, and one of TCP, UDP, SCTP. (Defaulting fills in TCP first, so
/// only an explicit empty string is ever missing.)
pub(crate) fn protocol(value: Option<&str>, path: &Path, errors: &mut Vec<FieldError>) {
    match value {
        None | Some("") => errors.push(FieldError::required(path, "")),
        Some(p) if !PROTOCOLS.contains(&p) => {
            errors.push(FieldError::not_supported(path, p, PROTOCOLS));
        }
        Some(_) => {}
    }
}

/// A port's name, in a list of `ports` ports: required when the list holds several, a DNS
/// label when given.
pub(crate) fn name(name: &str, ports: usize, path: &Path, errors: &mut Vec<FieldError>) {
    if name.is_empty() {
        if ports > 1 {
            errors.push(FieldError::required(path, ""));
        }
    } else {
        invalid_each(errors, path, name, dns1123_label(name));
    }
}

/// A port's `appProtocol`, when given: a qualified name.
pub(crate) fn app_protocol(value: Option<&str>, path: &Path, errors: &mut Vec<FieldError>) {
    if let Some(app) = value {
        invalid_each(errors, path, app, qualified_name(app));
    }
}

/// A port number, 1 to 65535.
pub(crate) fn number(port: i32, path: &Path, errors: &mut Vec<FieldError>) {
    errors.extend(
        port_number(i64::from(port))
            .iter()
            .map(|m| FieldError::invalid(path, port, m)),
    );
}

/// A port given by number (1 to 65535) or by name (an IANA service name), such as a Service's
/// `targetPort`.
pub(crate) fn number_or_name(port: &IntOrString, path: &Path, errors: &mut Vec<FieldError>) {
    match port {
        IntOrString::Int(n) => number(*n, path, errors),
        IntOrString::String(name) => errors.extend(
            port_name(name)
                .iter()
                .map(|m| FieldError::invalid(path, name.as_str(), m)),
        ),
    }
}
