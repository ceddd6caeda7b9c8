//! Ages as kubectl shows them: `45s`, `3m20s`, `5h`, `12d`, `2y30d`.
//!
//! kube-apiserver renders every AGE and LAST SEEN cell with apimachinery's human duration,
//! which keeps two units while the larger one is small and drops the smaller unit later.

use k8s_openapi::jiff::Timestamp;

/// The time of the request, read once per table so every row is aged against the same now.
pub(crate) fn now() -> Timestamp {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    Timestamp::new(seconds, 0).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The age of `at` at `now`, or `<unknown>` without a time.
pub(crate) fn since(at: Option<Timestamp>, now: Timestamp) -> String {
    match at {
        Some(at) => human_duration(now.as_second() - at.as_second()),
        None => "<unknown>".to_owned(),
    }
}

/// Formats a duration in whole seconds the way apimachinery's `HumanDuration` does.
pub(crate) fn human_duration(seconds: i64) -> String {
    // Up to a second in the future is clock skew between machines, not an error.
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return two_units(minutes, 'm', seconds % 60, 's');
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return two_units(hours, 'h', minutes % 60, 'm');
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return two_units(days, 'd', hours % 24, 'h');
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return two_units(years, 'y', days % 365, 'd');
    }
    format!("{years}y")
}

/// `3m20s`, or `3m` when the smaller unit counts nothing.
fn two_units(larger: i64, larger_unit: char, smaller: i64, smaller_unit: char) -> String {
    match smaller {
        0 => format!("{larger}{larger_unit}"),
        _ => format!("{larger}{larger_unit}{smaller}{smaller_unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn durations_keep_two_units_while_the_larger_is_small() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (59, "59s"),
            (119, "119s"),
            (200, "3m20s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400 + 5 * 86400, "3y5d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (seconds, want) in cases {
            assert_eq!(human_duration(seconds), want, "{seconds}s");
        }
    }
}
