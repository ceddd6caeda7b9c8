use k8s_openapi::api::core::v1::Node;

/// The fields of a Node the EndpointSlice controller reads: its zone for endpoints, and
/// readiness, role and CPU for the topology cache.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeInfo {
    /// Name.
    pub name: String,
    /// The `topology.kubernetes.io/zone` label, if set and non-empty.
    pub zone: Option<String>,
    /// The Ready condition is True.
    pub ready: bool,
    /// Carries a control-plane or master role label: ignored by topology.
    pub control_plane: bool,
    /// Allocatable CPU in millicores (0 when unknown or unparsable).
    pub cpu_millis: i64,
}

/// The zone label.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

impl NodeInfo {
    /// Projects a full Node. Returns `None` without a name.
    pub fn from_node(node: &Node) -> Option<Self> {
        let name = node.metadata.name.clone().filter(|n| !n.is_empty())?;
        let labels = node.metadata.labels.as_ref();
        let status = node.status.as_ref();
        Some(Self {
            name,
            zone: labels
                .and_then(|l| l.get(ZONE_LABEL))
                .filter(|z| !z.is_empty())
                .cloned(),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status == "True"),
            control_plane: labels.is_some_and(|l| {
                l.contains_key("node-role.kubernetes.io/control-plane")
                    || l.contains_key("node-role.kubernetes.io/master")
            }),
            cpu_millis: status
                .and_then(|s| s.allocatable.as_ref())
                .and_then(|a| a.get("cpu"))
                .and_then(|q| parse_cpu_millis(&q.0))
                .unwrap_or(0),
        })
    }
}

/// Parses a CPU quantity ("4", "500m", "1.5", "2k") into millicores, rounding up as the
/// API machinery's `MilliValue` does. Returns `None` for anything unparsable.
pub fn parse_cpu_millis(q: &str) -> Option<i64> {
    let q = q.trim();
    let (number, scale) = match q.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => q.split_at(i),
        None => (q, ""),
    };
    // Multiplier to millis, expressed as (numerator, denominator).
    let (mul, div): (i128, i128) = match scale {
        "" => (1000, 1),
        "m" => (1, 1),
        "u" => (1, 1000),
        "n" => (1, 1_000_000),
        "k" => (1_000_000, 1),
        "M" => (1_000_000_000, 1),
        "G" => (1_000_000_000_000, 1),
        "Ki" => (1024 * 1000, 1),
        "Mi" => (1024 * 1024 * 1000, 1),
        "Gi" => (1024 * 1024 * 1024 * 1000, 1),
        _ => return None,
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let int_part = int_part.strip_prefix('+').unwrap_or(int_part);
    if !digits_ok(int_part) || !digits_ok(frac_part) || frac_part.len() > 18 {
        return None;
    }
    let int: i128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().ok()?
    };
    let frac_den: i128 = 10i128.pow(frac_part.len() as u32);
    let frac: i128 = if frac_part.is_empty() {
        0
    } else {
        frac_part.parse().ok()?
    };
    let numerator = (int * frac_den + frac) * mul;
    let denominator = frac_den * div;
    let millis = (numerator + denominator - 1) / denominator;
    i64::try_from(millis).ok()
}

#[cfg(test)]
mod tests {
    use super::parse_cpu_millis;

    #[test]
    fn cpu_quantities_parse_to_millicores() {
        assert_eq!(parse_cpu_millis("4"), Some(4000));
        assert_eq!(parse_cpu_millis("500m"), Some(500));
        assert_eq!(parse_cpu_millis("1.5"), Some(1500));
        assert_eq!(parse_cpu_millis("0.0001"), Some(1));
        assert_eq!(parse_cpu_millis("2k"), Some(2_000_000));
        assert_eq!(parse_cpu_millis("abc"), None);
    }
}
