//! Log lines shaped like kube-controller-manager's, so that the log pipelines and grep habits
//! built for it keep working: klog's text header, or component-base's JSON, with `-v N`
//! verbosity. Neither format ever writes terminal colour codes.

use crate::args::{LoggingFlags, LoggingFormat};
use serde_json::{Number, Value};
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The klog verbosity an event of `level` is logged at. Our `info!` is what upstream logs
/// unconditionally or at V(2); `debug!` is its V(4) (per-sync lines); `trace!` its V(6).
pub fn verbosity_of(level: Level) -> u8 {
    match level {
        Level::TRACE => 6,
        Level::DEBUG => 4,
        _ => 0,
    }
}

/// The filter for klog verbosity `v`: this project's debug lines (its V(4) lines) from 4,
/// the libraries' debug lines (HTTP requests, as client-go logs them at V(6)) from 6, and
/// everything from 8.
pub fn filter_for(v: u8) -> String {
    match v {
        0..=3 => "info".into(),
        4..=5 => {
            "info,controller=debug,kube_endpoints=debug,apiserver=debug,reconcile=debug".into()
        }
        6..=7 => "debug".into(),
        _ => "trace".into(),
    }
}

/// Installs the global subscriber on stderr. `RUST_LOG`, when set, overrides `-v`.
pub fn init(flags: &LoggingFlags) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter_for(flags.verbosity)));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(Klog {
            format: flags.logging_format,
            pid: std::process::id(),
        })
        .init();
}

/// The event formatter for both formats.
pub struct Klog {
    /// Text or JSON.
    pub format: LoggingFormat,
    /// Written in the text header where klog writes the process id.
    pub pid: u32,
}

impl<S, N> FormatEvent<S, N> for Klog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let file = fields
            .log_file
            .clone()
            .or_else(|| meta.file().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned());
        let line = fields
            .log_line
            .or_else(|| meta.line().map(u64::from))
            .unwrap_or(0);
        let line_out = match self.format {
            LoggingFormat::Text => text_line(
                *meta.level(),
                now.as_secs(),
                now.subsec_micros(),
                self.pid,
                &format!("{}:{line}", base_name(&file, 1)),
                &fields,
            ),
            LoggingFormat::Json => json_line(
                *meta.level(),
                now.as_secs_f64() * 1000.0,
                &format!("{}:{line}", base_name(&file, 2)),
                fields,
            ),
        };
        writeln!(writer, "{line_out}")
    }
}

/// The last `parts` components of a source path (klog prints the file name; the JSON
/// logger prints the package directory and file).
fn base_name(path: &str, parts: usize) -> &str {
    let mut cut = path.len();
    for _ in 0..parts {
        match path[..cut].rfind('/') {
            Some(i) => cut = i,
            None => return path,
        }
    }
    &path[cut + 1..]
}

/// An event's message and key/values, in the order they were given.
#[derive(Debug, Default)]
struct Fields {
    message: String,
    pairs: Vec<(String, Value)>,
    /// Where a line bridged from the `log` crate was written (tracing's own metadata then
    /// names the bridge).
    log_file: Option<String>,
    log_line: Option<u64>,
}

impl Fields {
    fn push(&mut self, name: &str, value: Value) {
        match (name, value) {
            ("log.file", Value::String(file)) => self.log_file = Some(file),
            ("log.line", Value::Number(n)) => self.log_line = n.as_u64(),
            ("log.target" | "log.module_path", _) => {}
            (name, value) => self.pairs.push((name.to_owned(), value)),
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.push(field.name(), Value::String(text));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.push(field.name(), Value::String(value.to_owned()));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field.name(), Value::Number(value.into()));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field.name(), Value::Number(value.into()));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        let number = Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.push(field.name(), number);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field.name(), Value::Bool(value));
    }
}

/// klog's header (`Lmmdd hh:mm:ss.uuuuuu pid file:line] `), then the quoted message and
/// `key=value` pairs with strings quoted, as klog's structured calls print them.
fn text_line(
    level: Level,
    secs: u64,
    micros: u32,
    pid: u32,
    caller: &str,
    fields: &Fields,
) -> String {
    let letter = match level {
        Level::ERROR => 'E',
        Level::WARN => 'W',
        _ => 'I',
    };
    let (_, month, day) = civil_date(secs / 86_400);
    let in_day = secs % 86_400;
    let mut out = format!(
        "{letter}{month:02}{day:02} {:02}:{:02}:{:02}.{micros:06} {pid:>7} {caller}] {}",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60,
        quote(&fields.message),
    );
    for (key, value) in &fields.pairs {
        let _ = match value {
            Value::String(s) => write!(out, " {key}={}", quote(s)),
            other => write!(out, " {key}={other}"),
        };
    }
    out
}

/// A JSON string literal, as klog quotes strings.
fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// component-base's JSON shape: `ts` (milliseconds since the epoch), `caller`, `msg`, `v`
/// for non-errors, then the key/values.
fn json_line(level: Level, ts_millis: f64, caller: &str, fields: Fields) -> String {
    // Built by hand so that the keys keep upstream's order: ts, caller, msg, v, then the
    // key/values as given.
    let ts = Number::from_f64(ts_millis).map_or(Value::Null, Value::Number);
    let mut out = format!(
        "{{\"ts\":{ts},\"caller\":{},\"msg\":{}",
        quote(caller),
        quote(&fields.message)
    );
    if level != Level::ERROR {
        let _ = write!(out, ",\"v\":{}", verbosity_of(level));
    }
    for (key, value) in fields.pairs {
        if !matches!(key.as_str(), "ts" | "caller" | "msg" | "v") {
            let _ = write!(out, ",{}:{value}", quote(&key));
        }
    }
    out.push('}');
    out
}

/// (year, month, day) of a count of days since 1970-01-01, by Howard Hinnant's
/// days-to-civil algorithm.
fn civil_date(days: u64) -> (i64, u32, u32) {
    let z = i64::try_from(days).unwrap_or(i64::MAX / 2) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are small and positive by construction.
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_since_the_epoch_become_calendar_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(19_684), (2023, 11, 23));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
    }

    #[test]
    fn a_text_line_has_klogs_header_and_quoted_values() {
        let fields = Fields {
            message: "Finished syncing service".into(),
            pairs: vec![
                ("service".into(), Value::String("default/web".into())),
                ("workers".into(), Value::Number(5.into())),
            ],
            ..Fields::default()
        };
        // 2023-11-23 12:00:00 UTC.
        let line = text_line(
            Level::INFO,
            1_700_740_800,
            42,
            123,
            "service_workers.rs:81",
            &fields,
        );
        assert_eq!(
            line,
            "I1123 12:00:00.000042     123 service_workers.rs:81] \"Finished syncing service\" \
             service=\"default/web\" workers=5"
        );
    }

    #[test]
    fn a_json_line_has_ts_caller_msg_v_and_the_key_values() {
        let fields = Fields {
            message: "Finished syncing service".into(),
            pairs: vec![("service".into(), Value::String("default/web".into()))],
            ..Fields::default()
        };
        let line = json_line(Level::DEBUG, 1.5, "src/service_workers.rs:81", fields);
        let value: Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(value["ts"], 1.5);
        assert_eq!(value["caller"], "src/service_workers.rs:81");
        assert_eq!(value["msg"], "Finished syncing service");
        assert_eq!(value["v"], 4);
        assert_eq!(value["service"], "default/web");
        assert!(line.starts_with("{\"ts\":1.5,\"caller\":"), "{line}");
    }

    #[test]
    fn verbosity_maps_to_levels_as_upstream_uses_them() {
        assert_eq!(filter_for(9), "trace");
        assert_eq!(filter_for(2), "info");
        assert!(filter_for(4).contains("controller=debug"));
    }

    #[test]
    fn callers_keep_the_last_path_components() {
        assert_eq!(base_name("crates/controller/src/a.rs", 1), "a.rs");
        assert_eq!(base_name("crates/controller/src/a.rs", 2), "src/a.rs");
        assert_eq!(base_name("a.rs", 2), "a.rs");
    }
}
