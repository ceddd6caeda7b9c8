//! The figures of a run: latency percentiles, request counts, CPU and memory from /proc, and
//! their rendering as a table or JSON.

use super::converge::WriteCount;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Percentiles of per-change latencies, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Percentiles {
    /// Changes measured.
    pub count: usize,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 90th percentile.
    pub p90_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Slowest.
    pub max_ms: Option<f64>,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples`.
    pub fn of(samples: &[Duration]) -> Self {
        let mut sorted: Vec<Duration> = samples.to_vec();
        sorted.sort_unstable();
        let rank = |p: f64| -> Option<f64> {
            if sorted.is_empty() {
                return None;
            }
            let index = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted.get(index).map(|d| millis(*d))
        };
        Self {
            count: sorted.len(),
            p50_ms: rank(0.50),
            p90_ms: rank(0.90),
            p99_ms: rank(0.99),
            max_ms: sorted.last().map(|d| millis(*d)),
        }
    }
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Rounds seconds to milliseconds for display.
pub fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e3).round() / 1e3
}

/// Per-change latency figures of one view.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChangeLatency {
    /// Changes the bench wrote that this view should show.
    pub changes: u64,
    /// Latencies of those that it showed, from the write's answer.
    pub latency: Percentiles,
    /// The same, from the change itself: its status stamped, before the load generator's
    /// client sent it (and waited for its rate limit). The controllers'
    /// `trigger_to_write` SLI covers this span, in whole seconds.
    pub from_change: Percentiles,
    /// Changes overtaken by a later change of the same pod before they were seen.
    pub superseded: u64,
    /// Changes never seen (the state they asked for was never shown on its own).
    pub unobserved: usize,
}

/// Requests by the controller.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Requests {
    /// Where the figures come from.
    pub source: String,
    /// Total, when known.
    pub total: Option<u64>,
    /// By verb and resource ("create endpointslices"), when known.
    pub by_verb_resource: BTreeMap<String, u64>,
    /// By verb alone, when known.
    pub by_verb: BTreeMap<String, u64>,
}

/// Controller CPU and memory.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Resources {
    /// CPU seconds (user + system) of the controller during the measured phase.
    pub cpu_seconds: Option<f64>,
    /// What `cpu_seconds` covers.
    pub cpu_note: String,
    /// CPU seconds of the whole process measured, during the measured phase.
    pub process_cpu_seconds: Option<f64>,
    /// Highest resident set size sampled during the run, in bytes.
    pub peak_rss_bytes: Option<u64>,
    /// The process's high-water mark (VmHWM) over its whole life, in bytes.
    pub vm_hwm_bytes: Option<u64>,
    /// What the memory figures cover.
    pub memory_note: String,
}

/// The API server's CPU during the measured phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerCpu {
    /// CPU seconds (user + system), when known.
    pub cpu_seconds: Option<f64>,
    /// Where the figure comes from.
    pub note: String,
}

/// Everything a run reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The scenario.
    pub scenario: String,
    /// Services.
    pub services: usize,
    /// Pods per Service at the start.
    pub pods_per_service: usize,
    /// Nodes.
    pub nodes: usize,
    /// Zones.
    pub zones: usize,
    /// Changes (flap, scale, nodes) or pods per step (rolling) of the measured phase.
    pub churn: usize,
    /// `embedded` or `external`.
    pub controller: String,
    /// `embedded` or the kubeconfig used.
    pub api_server: String,
    /// Whether every Service matched at the end.
    pub converged: bool,
    /// Whether --timeout ended the run.
    pub timed_out: bool,
    /// Seconds to set up (server, controller sync, and for all but `create` the initial
    /// Services and pods until they converged); not part of the figures below.
    pub setup_seconds: f64,
    /// Seconds the load generator spent writing the measured phase.
    pub load_seconds: Option<f64>,
    /// Seconds from the start of the measured phase to full convergence.
    pub convergence_seconds: Option<f64>,
    /// Services that matched at the end.
    pub converged_services: usize,
    /// Pod writes of the load generator in the measured phase.
    pub pod_writes: u64,
    /// Pod writes a second the load generator kept up while it wrote (`--qps` asks for a
    /// rate; the generator's writes in flight and the server's answers may allow less).
    pub load_writes_per_second: Option<f64>,
    /// Who set the pace: `load generator` when the controller converged within a second of
    /// the generator's last write (the run measured the generator, not the controller's
    /// limit), `controller` when it needed longer.
    pub bottleneck: Option<String>,
    /// Per-change latency from a pod write to the first EndpointSlice event showing it.
    pub slice_latency: ChangeLatency,
    /// Per-change latency from a pod write to the first Endpoints event showing it.
    pub endpoints_latency: ChangeLatency,
    /// Requests made by the controller in the measured phase.
    pub controller_requests: Requests,
    /// Requests made by the load generator (including the bench's watches) in the phase.
    pub load_generator_requests: BTreeMap<String, u64>,
    /// EndpointSlice writes seen by the bench's watch.
    pub slice_writes: WriteCount,
    /// Endpoints writes seen by the bench's watch.
    pub endpoints_writes: WriteCount,
    /// Endpoints of topology-mode Auto Services, and how many carry zone hints.
    pub hinted_endpoints: Option<(usize, usize)>,
    /// Controller CPU and memory.
    pub resources: Resources,
    /// The API server's CPU.
    pub api_server_cpu: ServerCpu,
    /// Why some Services did not match (first few).
    pub mismatches: Vec<String>,
    /// `--scenario soak`: the controller's resident memory over the soak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soak: Option<Soak>,
    /// What the controller received, and its CPU per pod change.
    pub wire: Wire,
    /// The controllers' own latency SLI over the phase, when their `/metrics` can be read.
    pub sli: Vec<SliLatency>,
}

/// The controller's side of the wire over the measured phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Wire {
    /// Bytes of list and watch responses the controller's informers received
    /// (`informer_received_bytes_total`).
    pub bytes_read: Option<u64>,
    /// Objects its informers received (`informer_watch_events_total`).
    pub watch_events: Option<u64>,
    /// `bytes_read / watch_events`.
    pub bytes_per_watch_event: Option<f64>,
    /// Controller CPU milliseconds per 1,000 pod changes the load generator made.
    pub cpu_ms_per_1000_pod_changes: Option<f64>,
}

impl Wire {
    /// The figures from the deltas of the phase.
    pub fn new(
        bytes_read: Option<u64>,
        watch_events: Option<u64>,
        cpu_seconds: Option<f64>,
        pod_changes: u64,
    ) -> Self {
        Self {
            bytes_read,
            watch_events,
            bytes_per_watch_event: bytes_read
                .zip(watch_events.filter(|e| *e > 0))
                .map(|(b, e)| (b as f64 / e as f64 * 10.0).round() / 10.0),
            cpu_ms_per_1000_pod_changes: cpu_seconds
                .filter(|_| pod_changes > 0)
                .map(|c| (c * 1000.0 * 1000.0 / pod_changes as f64 * 10.0).round() / 10.0),
        }
    }
}

/// The sum of a counter's series (e.g. `informer_watch_events_total`) on a `/metrics` page.
pub fn scrape_sum(page: &str, metric: &str) -> Option<u64> {
    let prefix = format!("{metric}{{");
    let values: Vec<f64> = page
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() as u64)
}

/// The cumulative buckets `(upper bound, count)` of a histogram on a `/metrics` page, summed
/// over the series whose labels include `wanted` (name, value); `None` when it has none.
pub fn scrape_histogram(page: &str, metric: &str, wanted: (&str, &str)) -> Option<Buckets> {
    let prefix = format!("{metric}_bucket{{");
    let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for line in page.lines() {
        let Some(rest) = line.strip_prefix(&prefix) else {
            continue;
        };
        let Some((labels, value)) = rest.split_once('}') else {
            continue;
        };
        if label(labels, wanted.0) != Some(wanted.1) {
            continue;
        }
        let Some(le) = label(labels, "le").and_then(|l| l.parse::<f64>().ok()) else {
            continue;
        };
        let Ok(count) = value.trim().parse::<f64>() else {
            continue;
        };
        // Keyed by the bound's bits: bounds are positive, so their bits sort as they do.
        buckets.entry(le.to_bits()).or_insert((le, 0.0)).1 += count;
    }
    (!buckets.is_empty()).then(|| Buckets(buckets.into_values().collect()))
}

/// The value of the label `name` among a series' labels (`a="x",b="y"`, between its braces).
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels.split(',').find_map(|l| {
        l.trim()
            .strip_prefix(name)?
            .strip_prefix("=\"")?
            .strip_suffix('"')
    })
}

/// A histogram's cumulative buckets, `(upper bound, count)` in increasing bounds, the last
/// one `+Inf`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Buckets(pub Vec<(f64, f64)>);

impl Buckets {
    /// What was observed since `earlier` (a scrape of the same histogram).
    pub fn since(&self, earlier: Option<&Buckets>) -> Buckets {
        let before = |le: f64| {
            earlier
                .and_then(|e| e.0.iter().find(|(b, _)| *b == le))
                .map_or(0.0, |(_, c)| *c)
        };
        Buckets(
            self.0
                .iter()
                .map(|&(le, count)| (le, (count - before(le)).max(0.0)))
                .collect(),
        )
    }

    /// Observations in all.
    pub fn count(&self) -> f64 {
        self.0.last().map_or(0.0, |(_, c)| *c)
    }

    /// The `q` quantile as Prometheus' `histogram_quantile` computes it: found in its bucket
    /// and interpolated linearly within it; in the `+Inf` bucket, the highest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let (mut lower, mut below) = (0.0, 0.0);
        for &(le, count) in &self.0 {
            if count >= rank {
                if le.is_infinite() {
                    return Some(lower);
                }
                if count == below {
                    return Some(le);
                }
                return Some(lower + (le - lower) * (rank - below) / (count - below));
            }
            (lower, below) = (le, count);
        }
        Some(lower)
    }
}

/// The controllers' own latency SLI over the measured phase, from their `/metrics`
/// (`kube_endpoints_*_to_write_duration_seconds`), in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SliLatency {
    /// `informer_to_write` or `trigger_to_write`.
    pub histogram: String,
    /// The controller (`endpointslice-controller`, ...).
    pub controller: String,
    /// Writes timed.
    pub writes: u64,
    /// Median, interpolated within its bucket as Prometheus does.
    pub p50_ms: Option<f64>,
    /// 90th percentile.
    pub p90_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
}

impl SliLatency {
    /// The figures of `buckets`, observed over the phase.
    pub fn of(histogram: &str, controller: &str, buckets: &Buckets) -> Self {
        let ms = |q: f64| buckets.quantile(q).map(|s| (s * 1e6).round() / 1e3);
        Self {
            histogram: histogram.to_owned(),
            controller: controller.to_owned(),
            writes: buckets.count() as u64,
            p50_ms: ms(0.50),
            p90_ms: ms(0.90),
            p99_ms: ms(0.99),
        }
    }
}

/// The controller's resident memory over a soak.
#[derive(Debug, Clone, Serialize)]
pub struct Soak {
    /// Pods flipped.
    pub flips: u64,
    /// (seconds into the soak, resident bytes), one per sample.
    pub rss_samples: Vec<(f64, u64)>,
    /// Growth of resident memory from the first sample at or after a sixth of the soak
    /// (minute 5 of 30) to the last, in percent.
    pub growth_percent: Option<f64>,
}

impl Soak {
    /// The figures of `samples` taken over `duration`.
    pub fn new(flips: u64, rss_samples: Vec<(f64, u64)>, duration: Duration) -> Self {
        let settled = duration.as_secs_f64() / 6.0;
        let baseline = rss_samples.iter().find(|(at, _)| *at >= settled);
        let growth_percent = match (baseline, rss_samples.last()) {
            (Some(&(_, base)), Some(&(_, last))) if base > 0 => {
                Some((last as f64 - base as f64) / base as f64 * 100.0)
            }
            _ => None,
        };
        Self {
            flips,
            rss_samples,
            growth_percent,
        }
    }
}

/// A figure followed by its unit, or "n/a" when there is none.
fn opt<T: std::fmt::Display>(value: Option<T>, unit: &str) -> String {
    value.map_or("n/a".to_owned(), |v| format!("{v}{unit}"))
}

impl Report {
    /// The report as a two-column table.
    pub fn table(&self) -> String {
        let mut rows: Vec<(String, String)> = vec![
            ("scenario".into(), self.scenario.clone()),
            (
                "size".into(),
                format!(
                    "{} services x {} pods, {} nodes in {} zones, churn {}",
                    self.services, self.pods_per_service, self.nodes, self.zones, self.churn
                ),
            ),
            ("controller".into(), self.controller.clone()),
            ("api server".into(), self.api_server.clone()),
            (
                "result".into(),
                match (self.converged, self.timed_out) {
                    (true, _) => "converged".to_owned(),
                    (false, true) => "TIMED OUT (figures so far)".to_owned(),
                    (false, false) => "NOT converged".to_owned(),
                },
            ),
            (
                "converged services".into(),
                format!("{} / {}", self.converged_services, self.services),
            ),
            ("setup".into(), format!("{}s", self.setup_seconds)),
            ("load written in".into(), opt(self.load_seconds, "s")),
            (
                "time to convergence".into(),
                opt(self.convergence_seconds, "s"),
            ),
            ("pod writes".into(), self.pod_writes.to_string()),
            (
                "load generator rate".into(),
                opt(self.load_writes_per_second, " pod writes/s"),
            ),
            (
                "bottleneck".into(),
                self.bottleneck.clone().unwrap_or_else(|| "n/a".into()),
            ),
        ];
        let quantiles = |p: &Percentiles| {
            [p.p50_ms, p.p90_ms, p.p99_ms, p.max_ms]
                .map(|ms| opt(ms, ""))
                .join(" / ")
        };
        for (name, l) in [
            ("slices", &self.slice_latency),
            ("endpoints", &self.endpoints_latency),
        ] {
            let p = &l.latency;
            rows.push((
                format!("{name} latency p50/p90/p99/max"),
                format!(
                    "{} ms ({} of {} changes; {} superseded, {} unobserved)",
                    quantiles(p),
                    p.count,
                    l.changes,
                    l.superseded,
                    l.unobserved
                ),
            ));
            rows.push((
                format!("{name} latency from the change"),
                format!("{} ms", quantiles(&l.from_change)),
            ));
        }
        for s in &self.sli {
            rows.push((
                format!("SLI {} {}", s.histogram.replace('_', " "), s.controller),
                format!(
                    "{} ms p50/p90/p99 ({} writes)",
                    [s.p50_ms, s.p90_ms, s.p99_ms]
                        .map(|ms| opt(ms, ""))
                        .join(" / "),
                    s.writes
                ),
            ));
        }
        let r = &self.controller_requests;
        rows.push((
            "controller requests".into(),
            format!("{} ({})", opt(r.total, ""), r.source),
        ));
        for (k, v) in &r.by_verb_resource {
            rows.push((format!("  {k}"), v.to_string()));
        }
        let gen: u64 = self.load_generator_requests.values().sum();
        rows.push(("load generator requests".into(), gen.to_string()));
        for (name, w) in [
            ("EndpointSlice", &self.slice_writes),
            ("Endpoints", &self.endpoints_writes),
        ] {
            rows.push((
                format!("{name} writes seen"),
                format!(
                    "{} created, {} updated, {} deleted, {} bytes",
                    w.created, w.updated, w.deleted, w.bytes
                ),
            ));
        }
        if let Some((n, h)) = self.hinted_endpoints {
            rows.push(("hinted endpoints".into(), format!("{h} of {n}")));
        }
        let res = &self.resources;
        rows.push((
            "controller cpu".into(),
            format!("{} ({})", opt(res.cpu_seconds, "s"), res.cpu_note),
        ));
        rows.push(("process cpu".into(), opt(res.process_cpu_seconds, "s")));
        rows.push((
            "api server cpu".into(),
            format!(
                "{} ({})",
                opt(self.api_server_cpu.cpu_seconds, "s"),
                self.api_server_cpu.note
            ),
        ));
        let mib = |b: Option<u64>| {
            b.map_or("n/a".to_owned(), |b| {
                format!("{:.1} MiB", b as f64 / 1048576.0)
            })
        };
        rows.push((
            "peak rss".into(),
            format!(
                "{} sampled, {} VmHWM ({})",
                mib(res.peak_rss_bytes),
                mib(res.vm_hwm_bytes),
                res.memory_note
            ),
        ));
        let wire = &self.wire;
        rows.push((
            "controller received".into(),
            format!(
                "{} bytes in {} watch events, {} bytes per event; {} cpu ms per 1000 pod changes",
                opt(wire.bytes_read, ""),
                opt(wire.watch_events, ""),
                opt(wire.bytes_per_watch_event, ""),
                opt(wire.cpu_ms_per_1000_pod_changes, ""),
            ),
        ));
        if let Some(soak) = &self.soak {
            rows.push((
                "soak".into(),
                format!(
                    "{} flips; rss growth {}",
                    soak.flips,
                    soak.growth_percent.map_or("n/a".to_owned(), |g| format!(
                        "{g:+.1}% from a sixth of the way in to the end"
                    ))
                ),
            ));
            for (at, rss) in &soak.rss_samples {
                rows.push((format!("  rss at {at:.0}s"), mib(Some(*rss))));
            }
        }
        for m in &self.mismatches {
            rows.push(("mismatch".into(), m.clone()));
        }
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        rows.iter()
            .map(|(k, v)| format!("{k:width$}  {v}\n"))
            .collect()
    }
}

/// Who set a measured phase's pace, from when the load generator finished writing and when
/// the controller converged (seconds from the phase's start). A controller that converged
/// within a second of the last write kept up: the generator was the bottleneck.
pub fn bottleneck(load_seconds: Option<f64>, convergence_seconds: Option<f64>) -> Option<String> {
    let (load, converged) = (load_seconds?, convergence_seconds?);
    let lag = (converged - load).max(0.0);
    Some(if lag <= 1.0 {
        format!(
            "load generator: the controller converged {lag:.3}s after its last write; raise \
             --qps and --concurrency to find the controller's limit"
        )
    } else {
        format!("controller: it converged {lag:.3}s after the load generator's last write")
    })
}

/// Turns `(verb, resource)` counts into the report's maps.
pub fn requests(source: &str, counts: &super::count::Counts) -> Requests {
    let mut by_verb = BTreeMap::new();
    let mut by_verb_resource = BTreeMap::new();
    for ((verb, resource), n) in counts {
        *by_verb.entry(verb.clone()).or_default() += n;
        by_verb_resource.insert(format!("{verb} {resource}"), *n);
    }
    Requests {
        source: source.to_owned(),
        total: Some(counts.values().sum()),
        by_verb_resource,
        by_verb,
    }
}

/// Sums `rest_client_requests_total` of a Prometheus text page by its `method` label
/// (client-go's metric; kube-controller-manager exposes it).
pub fn scrape_requests(page: &str) -> Option<BTreeMap<String, u64>> {
    let mut by_method = BTreeMap::new();
    for line in page.lines() {
        let Some(rest) = line.strip_prefix("rest_client_requests_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once('}') else {
            continue;
        };
        let method = label(labels, "method").unwrap_or("unknown");
        let value: f64 = value.trim().parse().ok()?;
        *by_method.entry(method.to_lowercase()).or_default() += value as u64;
    }
    (!by_method.is_empty()).then_some(by_method)
}

/// CPU seconds and memory read from /proc.
pub mod proc {
    use std::path::Path;

    /// The kernel's USER_HZ, the unit of /proc CPU times; 100 on every Linux architecture
    /// we build for (reading it needs `sysconf`, which is unsafe to call).
    const TICKS_PER_SECOND: f64 = 100.0;

    /// user + system CPU seconds from a `stat` file (`/proc/PID/stat` or a task's).
    pub fn cpu_seconds(stat: &Path) -> Option<f64> {
        let text = std::fs::read_to_string(stat).ok()?;
        // The command name may hold spaces and parentheses; fields follow the last ')'.
        let after = text.get(text.rfind(')')? + 1..)?;
        let fields: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 of stat are the 12th and 13th after the name.
        let utime: f64 = fields.get(11)?.parse().ok()?;
        let stime: f64 = fields.get(12)?.parse().ok()?;
        Some((utime + stime) / TICKS_PER_SECOND)
    }

    /// CPU seconds of a process.
    pub fn process_cpu(pid: &str) -> Option<f64> {
        cpu_seconds(&Path::new("/proc").join(pid).join("stat"))
    }

    /// CPU seconds of this process's threads whose name starts with `prefix`.
    pub fn threads_cpu(prefix: &str) -> Option<f64> {
        let tasks = std::fs::read_dir("/proc/self/task").ok()?;
        let mut total = 0.0;
        for task in tasks.flatten() {
            let path = task.path();
            let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if name.starts_with(prefix) {
                total += cpu_seconds(&path.join("stat")).unwrap_or(0.0);
            }
        }
        Some(total)
    }

    /// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in bytes.
    pub fn status_bytes(pid: &str, field: &str) -> Option<u64> {
        let text = std::fs::read_to_string(Path::new("/proc").join(pid).join("status")).ok()?;
        let line = text.lines().find(|l| l.starts_with(field))?;
        let kib: u64 = line
            .get(field.len()..)?
            .trim_start_matches(':')
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(kib * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let p = Percentiles::of(&samples);
        assert_eq!(p.count, 100);
        assert_eq!(p.p50_ms, Some(50.0));
        assert_eq!(p.p90_ms, Some(90.0));
        assert_eq!(p.p99_ms, Some(99.0));
        assert_eq!(p.max_ms, Some(100.0));
        assert_eq!(Percentiles::of(&[]).p50_ms, None);
    }

    #[test]
    fn client_go_request_metrics_are_summed_by_method() {
        let page =
            "# HELP x\nrest_client_requests_total{code=\"200\",host=\"h\",method=\"GET\"} 5\n\
                    rest_client_requests_total{code=\"201\",host=\"h\",method=\"POST\"} 2\n\
                    rest_client_requests_total{code=\"404\",host=\"h\",method=\"GET\"} 1\n";
        let m = scrape_requests(page).unwrap();
        assert_eq!(m.get("get"), Some(&6));
        assert_eq!(m.get("post"), Some(&2));
    }

    #[test]
    fn the_bottleneck_is_the_generator_when_the_controller_kept_up() {
        assert_eq!(
            bottleneck(Some(10.0), Some(10.4)).unwrap(),
            "load generator: the controller converged 0.400s after its last write; raise \
             --qps and --concurrency to find the controller's limit"
        );
        assert!(bottleneck(Some(10.0), Some(14.0))
            .unwrap()
            .starts_with("controller: it converged 4.000s"));
        assert_eq!(
            bottleneck(Some(10.0), None),
            None,
            "not converged: no verdict"
        );
    }

    #[test]
    fn histogram_quantiles_interpolate_within_the_bucket_as_prometheus_does() {
        let page = "x_bucket{controller=\"a\",le=\"0.1\"} 10\n\
                    x_bucket{controller=\"a\",le=\"0.2\"} 30\n\
                    x_bucket{controller=\"a\",le=\"+Inf\"} 40\n\
                    x_bucket{controller=\"b\",le=\"0.1\"} 7\n\
                    x_sum{controller=\"a\"} 9\n";
        let a = scrape_histogram(page, "x", ("controller", "a")).unwrap();
        assert_eq!(a.0, vec![(0.1, 10.0), (0.2, 30.0), (f64::INFINITY, 40.0)]);
        // The 20th of 40 is halfway through the second bucket's 20.
        assert!((a.quantile(0.5).unwrap() - 0.15).abs() < 1e-9);
        assert!((a.quantile(0.25).unwrap() - 0.1).abs() < 1e-9);
        // Beyond the last finite bound: that bound, as histogram_quantile answers.
        assert_eq!(a.quantile(0.99), Some(0.2));
        // Since an earlier scrape: only what came after.
        let earlier = Buckets(vec![(0.1, 10.0), (0.2, 10.0), (f64::INFINITY, 10.0)]);
        let since = a.since(Some(&earlier));
        assert_eq!(since.count(), 30.0);
        assert!((since.quantile(0.5).unwrap() - 0.175).abs() < 1e-9);
        assert_eq!(Buckets::default().quantile(0.5), None);
        assert!(scrape_histogram(page, "x", ("controller", "c")).is_none());
    }

    #[test]
    fn our_own_cpu_and_memory_are_readable() {
        assert!(proc::process_cpu("self").is_some());
        assert!(proc::status_bytes("self", "VmHWM").is_some_and(|b| b > 0));
    }
}
