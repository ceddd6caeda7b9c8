//! Making Prometheus instruments and registering them, in one step.
//!
//! Every instrument the controllers export is registered into the run's registry as it is
//! made, so that none is made and then forgotten, and the subsystem or constant label that
//! a group of them shares (`endpoint_slice_controller`, a queue's `name`) is applied in one
//! place. Names, help texts, labels and buckets stay each caller's, as upstream has them.

use prometheus::core::Collector;
use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

/// Makes instruments under one subsystem (or none) and one set of constant labels, and
/// registers each into `registry`. Making one fails when its name is already registered.
#[derive(Debug, Clone)]
pub struct Instruments<'r> {
    registry: &'r Registry,
    subsystem: &'r str,
    const_label: Option<(&'r str, &'r str)>,
}

impl<'r> Instruments<'r> {
    /// Instruments named as given.
    pub fn new(registry: &'r Registry) -> Self {
        Self {
            registry,
            subsystem: "",
            const_label: None,
        }
    }

    /// Instruments whose names start with `subsystem_`.
    pub fn with_subsystem(registry: &'r Registry, subsystem: &'r str) -> Self {
        Self {
            subsystem,
            ..Self::new(registry)
        }
    }

    /// Instruments that all carry the constant label `name="value"`.
    pub fn with_const_label(registry: &'r Registry, name: &'r str, value: &'r str) -> Self {
        Self {
            const_label: Some((name, value)),
            ..Self::new(registry)
        }
    }

    /// The options of the instrument `name`, for an instrument registered as part of a
    /// collector of its own rather than alone.
    pub fn opts(&self, name: &str, help: &str) -> Opts {
        let opts = Opts::new(name, help).subsystem(self.subsystem);
        match self.const_label {
            Some((label, value)) => opts.const_label(label, value),
            None => opts,
        }
    }

    /// Registers `instrument` and hands it back (clones share its values).
    pub fn register<C: Collector + Clone + 'static>(
        &self,
        instrument: C,
    ) -> Result<C, prometheus::Error> {
        self.registry.register(Box::new(instrument.clone()))?;
        Ok(instrument)
    }

    /// A counter or gauge.
    pub fn metric<M: Metric>(&self, name: &str, help: &str) -> Result<M, prometheus::Error> {
        self.register(M::with_opts(self.opts(name, help))?)
    }

    /// A counter or gauge by `labels`.
    pub fn metric_vec<M: MetricVec>(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<M, prometheus::Error> {
        self.register(M::new(self.opts(name, help), labels)?)
    }

    /// A histogram with `buckets`.
    pub fn histogram(
        &self,
        name: &str,
        help: &str,
        buckets: Vec<f64>,
    ) -> Result<Histogram, prometheus::Error> {
        let opts = HistogramOpts::from(self.opts(name, help)).buckets(buckets);
        self.register(Histogram::with_opts(opts)?)
    }

    /// A histogram with `buckets`, by `labels`.
    pub fn histogram_vec(
        &self,
        name: &str,
        help: &str,
        buckets: Vec<f64>,
        labels: &[&str],
    ) -> Result<HistogramVec, prometheus::Error> {
        let opts = HistogramOpts::from(self.opts(name, help)).buckets(buckets);
        self.register(HistogramVec::new(opts, labels)?)
    }
}

/// A counter or gauge, made from its options.
pub trait Metric: Collector + Clone + Sized + 'static {
    /// The instrument named by `opts`.
    fn with_opts(opts: Opts) -> Result<Self, prometheus::Error>;
}

/// A counter or gauge by labels, made from its options and label names.
pub trait MetricVec: Collector + Clone + Sized + 'static {
    /// The instrument named by `opts`, by `labels`.
    fn new(opts: Opts, labels: &[&str]) -> Result<Self, prometheus::Error>;
}

/// Implements [`Metric`] and [`MetricVec`] through the `prometheus` types' own constructors.
macro_rules! made_from_opts {
    (single: $($metric:ty),+; by_labels: $($vec:ty),+) => {
        $(impl Metric for $metric {
            fn with_opts(opts: Opts) -> Result<Self, prometheus::Error> {
                <$metric>::with_opts(opts)
            }
        })+
        $(impl MetricVec for $vec {
            fn new(opts: Opts, labels: &[&str]) -> Result<Self, prometheus::Error> {
                <$vec>::new(opts, labels)
            }
        })+
    };
}

made_from_opts! {
    single: IntCounter, IntGauge, Gauge;
    by_labels: IntCounterVec, IntGaugeVec, GaugeVec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruments_carry_their_subsystem_or_constant_label() {
        let registry = Registry::new();
        Instruments::with_subsystem(&registry, "endpoint_slice_controller")
            .metric::<Gauge>("endpoints_desired", "Number of endpoints desired")
            .unwrap()
            .set(2.0);
        Instruments::with_const_label(&registry, "name", "endpoint")
            .metric::<IntGauge>("workqueue_depth", "Current depth of workqueue")
            .unwrap()
            .set(1);
        let text = crate::metrics::render(&registry).unwrap();
        assert!(text.contains("\nendpoint_slice_controller_endpoints_desired 2\n"));
        assert!(text.contains("\nworkqueue_depth{name=\"endpoint\"} 1\n"));
    }

    #[test]
    fn an_instrument_made_twice_under_one_name_fails() {
        let registry = Registry::new();
        let instruments = Instruments::new(&registry);
        instruments.metric::<IntCounter>("syncs", "Syncs").unwrap();
        assert!(instruments.metric::<IntCounter>("syncs", "Syncs").is_err());
    }
}
