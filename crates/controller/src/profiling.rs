//! `/debug/pprof/profile?seconds=N`: a CPU profile in pprof's format, as kube-controller-manager
//! serves one with `--profiling` (on by default), behind the same authentication and
//! authorization as `/metrics` when served on the secure port.
//!
//! The samples come from `pprof` (a SIGPROF timer at 100 Hz, as Go's profiler uses); this
//! module only turns them into the `profile.proto` message that `go tool pprof` reads. One
//! profile runs at a time, as in Go, where a second request is told the profiler is in use.

use axum::extract::Query;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, UNIX_EPOCH};

/// The profiling path.
pub const PROFILE_PATH: &str = "/debug/pprof/profile";

/// Samples per second, as Go's CPU profiler takes them.
const FREQUENCY: i32 = 100;

/// Seconds profiled when the request names none (or an invalid number), as in Go.
const DEFAULT_SECONDS: u64 = 30;

/// The longest profile served.
const MAX_SECONDS: u64 = 600;

/// Set while a profile is being taken.
static PROFILING: AtomicBool = AtomicBool::new(false);

/// The profiling route, to merge into the serving router.
pub fn router() -> Router {
    Router::new().route(PROFILE_PATH, get(profile))
}

async fn profile(Query(query): Query<HashMap<String, String>>) -> Response {
    let seconds = query
        .get("seconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_SECONDS);
    if seconds > MAX_SECONDS {
        return (
            StatusCode::BAD_REQUEST,
            format!("profile duration exceeds the limit of {MAX_SECONDS}s\n"),
        )
            .into_response();
    }
    if PROFILING.swap(true, Ordering::SeqCst) {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Could not enable CPU profiling: cpu profiling already in use\n",
        )
            .into_response();
    }
    let taken = tokio::task::spawn_blocking(move || take(Duration::from_secs(seconds))).await;
    PROFILING.store(false, Ordering::SeqCst);
    match taken {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"profile\"",
                ),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(error)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Could not enable CPU profiling: {error}\n"),
        )
            .into_response(),
        Err(error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("profiling failed: {error}\n"),
        )
            .into_response(),
    }
}

/// Profiles the whole process for `duration` (blocking this thread), encoded and gzip'd.
fn take(duration: Duration) -> Result<Vec<u8>, pprof::Error> {
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()?;
    std::thread::sleep(duration);
    let report = guard.report().build()?;
    Ok(gzip(&encode(&report))?)
}

/// `bytes` gzip'd, as Go's runtime/pprof writes every profile: `go tool pprof` and other
/// readers take both, but tools that store or forward profiles expect the compressed form.
fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// The messages of pprof's `profile.proto` that a CPU profile uses.
pub mod proto {
    /// A whole profile.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        /// What each value of a sample measures.
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// Program locations, by id.
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// Functions, by id.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Every string; index 0 is "".
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// When the profile started, in nanoseconds since the epoch.
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        /// How long it ran.
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        /// What one period is.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// The sampling period.
        #[prost(int64, tag = "12")]
        pub period: i64,
    }

    /// A kind of value and its unit, as string table indexes.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        /// e.g. "cpu".
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// e.g. "nanoseconds".
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// One stack and its values.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Location ids, the innermost first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per sample type.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        /// Labels (the thread).
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A string label of a sample.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        /// Its key.
        #[prost(int64, tag = "1")]
        pub key: i64,
        /// Its value.
        #[prost(int64, tag = "2")]
        pub str: i64,
    }

    /// A program location.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        /// Its id (from 1).
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its address, when known.
        #[prost(uint64, tag = "3")]
        pub address: u64,
        /// The functions at it: the inlined ones first, the caller they were inlined into last.
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    /// A function and line of a location.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        /// The function's id.
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        /// The line, when known.
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    /// A function.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        /// Its id (from 1).
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its demangled name.
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// Its symbol.
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        /// Its source file.
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// Interns strings into a profile's string table.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut strings = Self::default();
        strings.get("");
        strings
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Encodes a report as a `profile.proto` message: samples counted and in CPU nanoseconds,
/// each labelled with its thread.
pub fn encode(report: &pprof::Report) -> Vec<u8> {
    use proto::*;
    let mut strings = Strings::new();
    let period = 1_000_000_000 / i64::from(report.timing.frequency.max(1));
    let mut functions: HashMap<(String, String, String), u64> = HashMap::new();
    let mut locations: HashMap<Vec<(u64, i64)>, u64> = HashMap::new();
    let mut profile = Profile {
        sample_type: vec![
            ValueType {
                r#type: strings.get("samples"),
                unit: strings.get("count"),
            },
            ValueType {
                r#type: strings.get("cpu"),
                unit: strings.get("nanoseconds"),
            },
        ],
        period_type: Some(ValueType {
            r#type: strings.get("cpu"),
            unit: strings.get("nanoseconds"),
        }),
        period,
        time_nanos: report
            .timing
            .start_time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64),
        duration_nanos: report.timing.duration.as_nanos() as i64,
        ..Profile::default()
    };
    let thread_key = strings.get("thread");
    for (frames, count) in &report.data {
        let mut location_ids = Vec::with_capacity(frames.frames.len());
        for symbols in &frames.frames {
            let lines: Vec<(u64, i64)> = symbols
                .iter()
                .map(|symbol| {
                    let name = symbol.name();
                    let system = symbol.sys_name().into_owned();
                    let file = symbol.filename().into_owned();
                    let next = functions.len() as u64 + 1;
                    let id = *functions
                        .entry((name.clone(), system.clone(), file.clone()))
                        .or_insert_with(|| {
                            profile.function.push(Function {
                                id: next,
                                name: strings.get(&name),
                                system_name: strings.get(&system),
                                filename: strings.get(&file),
                            });
                            next
                        });
                    (id, i64::from(symbol.lineno()))
                })
                .collect();
            let address = symbols.first().and_then(|s| s.addr).map_or(0, |a| a as u64);
            let next = locations.len() as u64 + 1;
            let id = *locations.entry(lines.clone()).or_insert_with(|| {
                profile.location.push(Location {
                    id: next,
                    address,
                    line: lines
                        .iter()
                        .map(|&(function_id, line)| Line { function_id, line })
                        .collect(),
                });
                next
            });
            location_ids.push(id);
        }
        let count = *count as i64;
        profile.sample.push(Sample {
            location_id: location_ids,
            value: vec![count, count * period],
            label: vec![Label {
                key: thread_key,
                str: strings.get(&frames.thread_name_or_id()),
            }],
        });
    }
    profile.string_table = strings.table;
    prost::Message::encode_to_vec(&profile)
}

#[cfg(test)]
mod tests {
    use super::proto::Profile;
    use super::*;
    use prost::Message;

    fn symbol(name: &str, line: u32) -> pprof::Symbol {
        pprof::Symbol {
            name: Some(name.as_bytes().to_vec()),
            addr: None,
            lineno: Some(line),
            filename: Some("src/lib.rs".into()),
        }
    }

    #[test]
    fn a_report_encodes_to_a_profile_with_shared_locations_and_functions() {
        let frames = |leaf: &str| pprof::Frames {
            frames: vec![vec![symbol(leaf, 10)], vec![symbol("main", 3)]],
            thread_name: "worker".into(),
            thread_id: 7,
            sample_timestamp: std::time::SystemTime::now(),
        };
        let mut report = pprof::Report {
            data: [(frames("reconcile"), 3), (frames("decode"), 2)].into(),
            timing: Default::default(),
        };
        report.timing.frequency = 100;
        report.timing.start_time = UNIX_EPOCH + Duration::from_secs(1);
        report.timing.duration = Duration::from_secs(2);
        let profile = Profile::decode(encode(&report).as_slice()).unwrap();
        let s = |i: i64| profile.string_table[i as usize].as_str();
        assert_eq!(s(0), "");
        assert_eq!(profile.period, 10_000_000);
        assert_eq!(profile.duration_nanos, 2_000_000_000);
        assert_eq!(profile.time_nanos, 1_000_000_000);
        let types: Vec<(&str, &str)> = profile
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        // main is one location and one function, shared by both stacks.
        assert_eq!(profile.location.len(), 3);
        assert_eq!(profile.function.len(), 3);
        let mut samples: Vec<(String, Vec<i64>)> = profile
            .sample
            .iter()
            .map(|sample| {
                let leaf = &profile.location[sample.location_id[0] as usize - 1];
                let function = &profile.function[leaf.line[0].function_id as usize - 1];
                assert_eq!(s(sample.label[0].str), "worker");
                (s(function.name).to_owned(), sample.value.clone())
            })
            .collect();
        samples.sort();
        assert_eq!(
            samples,
            [
                ("decode".to_owned(), vec![2, 20_000_000]),
                ("reconcile".to_owned(), vec![3, 30_000_000])
            ]
        );
    }
}
