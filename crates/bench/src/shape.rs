//! Presets for the cluster shapes at Kubernetes' published scalability thresholds (5,000
//! nodes, 10,000 Services, 150,000 pods, 5,000 backends behind one Service), and `--scale`
//! to shrink them for a laptop or CI.

use anyhow::{bail, Result};

/// A cluster shape at Kubernetes' limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// 5,000 nodes in 3 zones under 10,000 pods in 200 Services: node events re-count the
    /// topology (use with `--scenario nodes`, where hints are on).
    ManyNodes,
    /// 10,000 Services of 15 pods on 100 nodes: whatever is kept per Service, 10,000 times.
    ManyServices,
    /// One Service of 5,000 pods on 100 nodes: 50 slices, and an Endpoints truncated to
    /// 1,000 addresses.
    HugeService,
    /// All the limits at once: 150,000 pods in 10,000 Services on 5,000 nodes.
    Limits,
}

/// How many of each object a run creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Services.
    pub services: usize,
    /// Pods per Service.
    pub pods_per_service: usize,
    /// Nodes.
    pub nodes: usize,
    /// Zones.
    pub zones: usize,
}

impl Shape {
    /// The shape at full size.
    pub fn full(self) -> Size {
        let (services, pods_per_service, nodes) = match self {
            Shape::ManyNodes => (200, 50, 5_000),
            Shape::ManyServices => (10_000, 15, 100),
            Shape::HugeService => (1, 5_000, 100),
            Shape::Limits => (10_000, 15, 5_000),
        };
        Size {
            services,
            pods_per_service,
            nodes,
            zones: 3,
        }
    }

    /// The shape shrunk by `scale` (more than 0, at most 1): what makes it what it is is
    /// scaled, so that a small run keeps its proportions. A huge Service keeps being one
    /// Service with fewer pods; the others keep their pods per Service and have fewer
    /// Services and nodes. Counts round up and stay at least 1 (3 for nodes, one per zone).
    pub fn scaled(self, scale: f64) -> Result<Size> {
        if !(scale > 0.0 && scale <= 1.0) {
            bail!("--scale must be more than 0 and at most 1, not {scale}");
        }
        let by = |n: usize, least: usize| ((n as f64 * scale).ceil() as usize).max(least);
        let full = self.full();
        Ok(match self {
            Shape::HugeService => Size {
                pods_per_service: by(full.pods_per_service, 1),
                nodes: by(full.nodes, full.zones),
                ..full
            },
            Shape::ManyNodes | Shape::ManyServices | Shape::Limits => Size {
                services: by(full.services, 1),
                nodes: by(full.nodes, full.zones),
                ..full
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_shapes_are_kubernetes_limits() {
        let limits = Shape::Limits.full();
        assert_eq!(limits.services * limits.pods_per_service, 150_000);
        assert_eq!(limits.nodes, 5_000);
        assert_eq!(Shape::ManyServices.full().services, 10_000);
        let huge = Shape::HugeService.full();
        assert_eq!((huge.services, huge.pods_per_service), (1, 5_000));
        assert_eq!(Shape::ManyNodes.full().nodes, 5_000);
    }

    #[test]
    fn scaling_keeps_what_makes_the_shape() {
        let huge = Shape::HugeService.scaled(0.01).unwrap();
        assert_eq!(
            (huge.services, huge.pods_per_service, huge.nodes),
            (1, 50, 3)
        );
        let many = Shape::ManyServices.scaled(0.01).unwrap();
        assert_eq!(
            (many.services, many.pods_per_service, many.nodes),
            (100, 15, 3)
        );
        let nodes = Shape::ManyNodes.scaled(0.1).unwrap();
        assert_eq!((nodes.services, nodes.nodes), (20, 500));
        assert_eq!(Shape::Limits.scaled(1.0).unwrap(), Shape::Limits.full());
        for bad in [0.0, -1.0, 1.5, f64::NAN] {
            assert!(Shape::Limits.scaled(bad).is_err(), "{bad}");
        }
    }
}
