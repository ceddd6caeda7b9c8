//! kube-controller-manager's flags for the two controllers: same names, same defaults.

use anyhow::{bail, Result};
use clap::Args;
use controller::config::Settings;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Parses a Go-style duration: `0`, `500ms`, `15s`, `1m30s`, `2h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return Err("empty duration".into());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{s:?}: missing unit (e.g. 1s)"))?;
        let (number, tail) = rest.split_at(digits);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("{s:?}: bad number {number:?}"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => return Err(format!("{s:?}: unknown unit {other:?}")),
        };
        // Go's time.ParseDuration refuses anything past i64::MAX nanoseconds (about 292
        // years); so do we, rather than panic in the conversion or in later clock arithmetic.
        total = Duration::try_from_secs_f64(value * seconds)
            .ok()
            .and_then(|part| total.checked_add(part))
            .filter(|t| *t <= MAX_DURATION)
            .ok_or_else(|| format!("{s:?}: out of range (at most 2562047h)"))?;
        rest = next;
    }
    Ok(total)
}

/// The longest duration Go's `time.Duration` holds: i64::MAX nanoseconds.
const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// Flags shared by `run` and `dev`.
#[derive(Debug, Args, Clone)]
pub struct ControllerFlags {
    /// Controllers to run: `endpoint`, `endpointslice`, `*` (both); `-name` disables one.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// Number of Endpoints syncs done at once.
    #[arg(long, default_value_t = 5)]
    pub concurrent_endpoint_syncs: u32,
    /// Number of EndpointSlice syncs done at once.
    #[arg(long, default_value_t = 5)]
    pub concurrent_service_endpoint_syncs: u32,
    /// Maximum endpoints in one EndpointSlice (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub max_endpoints_per_slice: u32,
    /// How long pod events wait before the Endpoints controller syncs (batches changes).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub endpoint_updates_batch_period: Duration,
    /// How long pod events wait before the EndpointSlice controller syncs.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub endpointslice_updates_batch_period: Duration,
    /// Client-side limit of requests per second to the API server.
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Client-side burst of requests to the API server.
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Address for /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// Port for /metrics, /healthz and /readyz (0: any free port).
    #[arg(long, default_value_t = 10252)]
    pub port: u16,
}

/// Which of the two controllers a `--controllers` list enables, as kube-controller-manager
/// reads it (`*` is all, `-name` disables), as (endpoints, endpoint slices).
pub fn enabled_controllers(list: &[String]) -> Result<(bool, bool)> {
    let (mut endpoints, mut slices) = (false, false);
    for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match item {
            "*" => (endpoints, slices) = (true, true),
            "endpoint" | "endpoints" => endpoints = true,
            "endpointslice" | "endpointslices" => slices = true,
            "-endpoint" | "-endpoints" => endpoints = false,
            "-endpointslice" | "-endpointslices" => slices = false,
            other => bail!(
                "--controllers: unknown controller {other:?} (known: endpoint, endpointslice, *)"
            ),
        }
    }
    Ok((endpoints, slices))
}

impl ControllerFlags {
    /// The enabled controllers (endpoints, endpoint slices).
    pub fn enabled(&self) -> Result<(bool, bool)> {
        enabled_controllers(&self.controllers)
    }

    /// Settings for the controller crate.
    pub fn settings(&self, kubeconfig: Option<PathBuf>) -> Result<Settings> {
        let mut s = Settings {
            concurrent_endpoint_syncs: self.concurrent_endpoint_syncs,
            concurrent_service_endpoint_syncs: self.concurrent_service_endpoint_syncs,
            max_endpoints_per_slice: self.max_endpoints_per_slice,
            endpoint_updates_batch_period: self.endpoint_updates_batch_period,
            endpointslice_updates_batch_period: self.endpointslice_updates_batch_period,
            ..Settings::default()
        };
        s.client.kubeconfig = kubeconfig;
        s.client.qps = self.kube_api_qps;
        s.client.burst = self.kube_api_burst;
        s.serving.bind_address = self.bind_address;
        s.serving.port = self.port;
        if self.kube_api_qps <= 0.0 {
            bail!("--kube-api-qps must be positive, got {}", self.kube_api_qps);
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5x").is_err());
    }

    #[test]
    fn durations_past_gos_range_are_refused_without_panicking() {
        assert!(parse_duration("2562047h").is_ok());
        for huge in ["2562048h", "99999999999999999999999999h", "1e400s"] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
    }
}
