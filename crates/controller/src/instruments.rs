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

    /// A counter.
    pub fn int_counter(&self, name: &str, help: &str) -> Result<IntCounter, prometheus::Error> {
        self.register(IntCounter::with_opts(self.opts(name, help))?)
    }

    /// A counter by `labels`.
    pub fn int_counter_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntCounterVec, prometheus::Error> {
        self.register(IntCounterVec::new(self.opts(name, help), labels)?)
    }

    /// An integer gauge.
    pub fn int_gauge(&self, name: &str, help: &str) -> Result<IntGauge, prometheus::Error> {
        self.register(IntGauge::with_opts(self.opts(name, help))?)
    }

    /// An integer gauge by `labels`.
    pub fn int_gauge_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntGaugeVec, prometheus::Error> {
        self.register(IntGaugeVec::new(self.opts(name, help), labels)?)
    }

    /// A gauge.
    pub fn gauge(&self, name: &str, help: &str) -> Result<Gauge, prometheus::Error> {
        self.register(Gauge::with_opts(self.opts(name, help))?)
    }

    /// A gauge by `labels`.
    pub fn gauge_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<GaugeVec, prometheus::Error> {
        self.register(GaugeVec::new(self.opts(name, help), labels)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruments_carry_their_subsystem_or_constant_label() {
        let registry = Registry::new();
        Instruments::with_subsystem(&registry, "endpoint_slice_controller")
            .gauge("endpoints_desired", "Number of endpoints desired")
            .unwrap()
            .set(2.0);
        Instruments::with_const_label(&registry, "name", "endpoint")
            .int_gauge("workqueue_depth", "Current depth of workqueue")
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
        instruments.int_counter("syncs", "Syncs").unwrap();
        assert!(instruments.int_counter("syncs", "Syncs").is_err());
    }
}
