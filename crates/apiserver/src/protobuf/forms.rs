//! The JSON spellings of Kubernetes' special values: RFC 3339 times, Go durations, and base64
//! for `bytes` fields.

use super::ProtobufError;
use k8s_openapi::jiff::Timestamp;

/// Go's zero `time.Time` (January 1, year 1, UTC) in Unix seconds: `null` in JSON and nothing
/// on the wire.
pub(crate) const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Parses an RFC 3339 time into Unix seconds and nanoseconds.
pub(crate) fn parse_time(text: &str) -> Result<(i64, i32), ProtobufError> {
    let at: Timestamp = text
        .parse()
        .map_err(|e| ProtobufError::new(format!("invalid time {text:?}: {e}")))?;
    Ok((at.as_second(), at.subsec_nanosecond()))
}

fn whole_seconds(seconds: i64) -> Result<String, ProtobufError> {
    let at = Timestamp::from_second(seconds)
        .map_err(|e| ProtobufError::new(format!("time {seconds}s is out of range: {e}")))?;
    // A whole-second timestamp displays as `YYYY-MM-DDTHH:MM:SSZ`.
    Ok(at.to_string())
}

/// `meta.v1.Time` in JSON: whole seconds, UTC.
pub(crate) fn format_time(seconds: i64) -> Result<String, ProtobufError> {
    whole_seconds(seconds)
}

/// `meta.v1.MicroTime` in JSON: always six fractional digits, UTC.
pub(crate) fn format_micro_time(seconds: i64, nanos: i32) -> Result<String, ProtobufError> {
    let text = whole_seconds(seconds)?;
    let micros = nanos.clamp(0, 999_999_999) / 1_000;
    let stem = text.strip_suffix('Z').unwrap_or(&text);
    Ok(format!("{stem}.{micros:06}Z"))
}

const SECOND: u64 = 1_000_000_000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// `value / unit` with its fraction, trailing zeros dropped: `fraction(1_500, 1_000)` is `1.5`.
fn fraction(value: u64, unit: u64) -> String {
    let (whole, part) = (value / unit, value % unit);
    if part == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{part:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A duration in nanoseconds as Go's `time.Duration.String` spells it: `1h2m3.5s`, `1.5ms`,
/// `0s`.
pub(crate) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let body = if n < 1_000 {
        format!("{n}ns")
    } else if n < 1_000_000 {
        format!("{}µs", fraction(n, 1_000))
    } else if n < SECOND {
        format!("{}ms", fraction(n, 1_000_000))
    } else {
        let (hours, rest) = (n / HOUR, n % HOUR);
        let (minutes, rest) = (rest / MINUTE, rest % MINUTE);
        let seconds = fraction(rest, SECOND);
        match (hours, minutes) {
            (0, 0) => format!("{seconds}s"),
            (0, m) => format!("{m}m{seconds}s"),
            (h, m) => format!("{h}h{m}m{seconds}s"),
        }
    };
    format!("{sign}{body}")
}

/// Parses a Go duration string (`1h30m`, `1.5s`, `-2ms`, `0`) into nanoseconds.
pub(crate) fn parse_duration(text: &str) -> Result<i64, ProtobufError> {
    let bad = || ProtobufError::new(format!("invalid duration {text:?}"));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(bad)?;
        let (number, tail) = rest.split_at(number_end);
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => u128::from(SECOND),
            "m" => u128::from(MINUTE),
            "h" => u128::from(HOUR),
            _ => return Err(bad()),
        };
        let (whole, part) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && part.is_empty() {
            return Err(bad());
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(bad)?;
        let mut place = scale;
        for digit in part.bytes() {
            if !digit.is_ascii_digit() {
                return Err(bad());
            }
            place /= 10;
            value += u128::from(digit - b'0') * place;
        }
        total = total.checked_add(value).ok_or_else(bad)?;
        rest = tail;
    }
    let total = i64::try_from(total).map_err(|_| bad())?;
    Ok(if negative { -total } else { total })
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as Go writes `[]byte` in JSON.
pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(crate) fn base64_decode(text: &str) -> Result<Vec<u8>, ProtobufError> {
    let bad = || ProtobufError::new("invalid base64");
    let text = text.as_bytes();
    if !text.len().is_multiple_of(4) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for (index, chunk) in text.chunks(4).enumerate() {
        let last = index + 1 == text.len() / 4;
        let mut n = 0u32;
        let mut padding = 0;
        for (i, &c) in chunk.iter().enumerate() {
            let value = match c {
                b'=' if last && i >= 2 => {
                    padding += 1;
                    0
                }
                _ if padding > 0 => return Err(bad()),
                _ => ALPHABET.iter().position(|&a| a == c).ok_or_else(bad)? as u32,
            };
            n = (n << 6) | value;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - padding]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(
            parse_time("2024-01-02T03:04:05Z").unwrap(),
            (1_704_164_645, 0)
        );
        assert_eq!(
            parse_time("2024-01-02T04:04:05.5+01:00").unwrap(),
            (1_704_164_645, 500_000_000)
        );
        assert_eq!(format_time(1_704_164_645).unwrap(), "2024-01-02T03:04:05Z");
        assert_eq!(
            format_micro_time(1_704_164_645, 123_456_789).unwrap(),
            "2024-01-02T03:04:05.123456Z"
        );
        assert_eq!(
            format_micro_time(1_704_164_645, 0).unwrap(),
            "2024-01-02T03:04:05.000000Z"
        );
        assert_eq!(
            parse_time("0001-01-01T00:00:00Z").unwrap().0,
            ZERO_TIME_SECONDS
        );
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn durations_are_spelled_as_go_spells_them() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (2_000_000, "2ms"),
            (1_500_000_000, "1.5s"),
            (90 * 1_000_000_000, "1m30s"),
            (3_600 * 1_000_000_000, "1h0m0s"),
            (-(3_723_000_000_000 + 5), "-1h2m3.000000005s"),
        ] {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text).unwrap(), nanos, "{text}");
        }
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration(".5s").unwrap(), 500_000_000);
        assert_eq!(parse_duration("0").unwrap(), 0);
        for bad in ["", "1", "1x", "s", "1..2s", "-"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn base64_round_trips_with_padding() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"\xff\x00\x10\x80", "/wAQgA=="),
        ] {
            assert_eq!(base64_encode(bytes), text);
            assert_eq!(base64_decode(text).unwrap(), bytes);
        }
        for bad in ["Zg", "Z===", "Zg=a", "Z!==", "Zg==Zg=="] {
            assert!(base64_decode(bad).is_err(), "{bad}");
        }
    }
}
