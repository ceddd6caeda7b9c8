//! `kubernetes_build_info`, the gauge kube-controller-manager exports so that dashboards can
//! show which build each replica runs.

use prometheus::{IntGaugeVec, Opts, Registry};

/// Registers `kubernetes_build_info` (always 1) with upstream's label names, filled with
/// this binary's version.
pub fn register(registry: &Registry) -> prometheus::Result<()> {
    let gauge = IntGaugeVec::new(
        Opts::new(
            "kubernetes_build_info",
            "A metric with a constant '1' value labeled by major, minor, git version, git \
             commit, git tree state, build date, Go version, compiler and platform.",
        ),
        &[
            "major",
            "minor",
            "git_version",
            "git_commit",
            "git_tree_state",
            "build_date",
            "go_version",
            "compiler",
            "platform",
        ],
    )?;
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    let platform = format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH);
    gauge
        .with_label_values(&[
            major,
            minor,
            &format!("v{version}"),
            "",
            "",
            "",
            "",
            "rustc",
            &platform,
        ])
        .set(1);
    registry.register(Box::new(gauge))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus::Encoder;

    #[test]
    fn build_info_is_exported_with_upstreams_label_names() {
        let registry = Registry::new();
        register(&registry).expect("registers");
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .expect("encodes");
        let text = String::from_utf8(out).expect("utf-8");
        let line = text
            .lines()
            .find(|l| l.starts_with("kubernetes_build_info{"))
            .expect("the gauge is listed");
        for label in ["major=", "minor=", "git_version=", "platform=", "compiler="] {
            assert!(line.contains(label), "{label} missing: {line}");
        }
        assert!(line.ends_with(" 1"), "{line}");
    }
}
