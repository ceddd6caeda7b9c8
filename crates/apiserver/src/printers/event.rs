//! LAST SEEN TYPE REASON OBJECT MESSAGE, and SUBOBJECT SOURCE FIRST SEEN COUNT NAME with
//! `-o wide`, for core and `events.k8s.io` events.
//!
//! kube-apiserver stores both API versions as one internal type and prints them alike, so
//! an `events.k8s.io/v1` event is first converted to a core one.

use super::{age, column, wide, Column, NAME};
use k8s_openapi::api::core::v1::{Event, EventSeries};
use k8s_openapi::api::events::v1::Event as EventV1;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[
    column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    column("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    column("Object", "The object that this event is about."),
    wide("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."),
    wide("Source", "The component reporting this event."),
    column("Message", "A human-readable description of the status of this operation."),
    wide("First Seen", "The time at which the event was first recorded."),
    wide("Count", "The number of times this event has occurred."),
    Column { priority: 1, ..NAME },
];

pub(super) fn events_v1_cells(event: &EventV1, now: Timestamp) -> Vec<Value> {
    core_cells(&as_core(event), now)
}

/// An `events.k8s.io/v1` event with the core API's field names, as kube-apiserver converts
/// both to one internal type before printing.
fn as_core(event: &EventV1) -> Event {
    Event {
        metadata: event.metadata.clone(),
        first_timestamp: event.deprecated_first_timestamp.clone(),
        last_timestamp: event.deprecated_last_timestamp.clone(),
        event_time: event.event_time.clone(),
        count: event.deprecated_count,
        series: event.series.as_ref().map(|s| EventSeries {
            count: Some(s.count),
            last_observed_time: Some(s.last_observed_time.clone()),
        }),
        involved_object: event.regarding.clone().unwrap_or_default(),
        type_: event.type_.clone(),
        reason: event.reason.clone(),
        message: event.note.clone(),
        source: event.deprecated_source.clone(),
        reporting_component: event.reporting_controller.clone(),
        reporting_instance: event.reporting_instance.clone(),
        ..Event::default()
    }
}

/// `component, host`, each falling back to the reporting controller and instance.
fn source(event: &Event) -> String {
    let pick = |a: Option<&str>, b: Option<&str>| {
        a.filter(|s| !s.is_empty())
            .or(b)
            .unwrap_or_default()
            .to_owned()
    };
    let source = event.source.as_ref();
    let component = pick(
        source.and_then(|s| s.component.as_deref()),
        event.reporting_component.as_deref(),
    );
    let host = pick(
        source.and_then(|s| s.host.as_deref()),
        event.reporting_instance.as_deref(),
    );
    match (component.is_empty(), host.is_empty()) {
        (true, _) => String::new(),
        (false, true) => component,
        (false, false) => format!("{component}, {host}"),
    }
}

pub(super) fn core_cells(event: &Event, now: Timestamp) -> Vec<Value> {
    let first = match event.first_timestamp.as_ref().map(|t| t.0) {
        Some(at) => age::since(Some(at), now),
        None => age::since(event.event_time.as_ref().map(|t| t.0), now),
    };
    let mut last = match event.last_timestamp.as_ref().map(|t| t.0) {
        Some(at) => age::since(Some(at), now),
        None => first.clone(),
    };
    let mut count = event.count.unwrap_or(0);
    let series = event
        .series
        .as_ref()
        .and_then(|s| Some((s.count.unwrap_or(0), s.last_observed_time.as_ref()?.0)));
    if let Some((series_count, observed)) = series {
        last = age::since(Some(observed), now);
        count = series_count;
    } else if count == 0 {
        // Events of the newer API are singletons without a count.
        count = 1;
    }
    let involved = &event.involved_object;
    let kind = involved.kind.as_deref().unwrap_or_default().to_lowercase();
    let target = match involved.name.as_deref() {
        Some(name) if !name.is_empty() => format!("{kind}/{name}"),
        _ => kind,
    };
    let text = |s: Option<&str>| Value::from(s.unwrap_or_default().to_owned());
    vec![
        Value::from(last),
        text(event.type_.as_deref()),
        text(event.reason.as_deref()),
        Value::from(target),
        text(involved.field_path.as_deref()),
        Value::from(source(event)),
        Value::from(
            event
                .message
                .as_deref()
                .unwrap_or_default()
                .trim()
                .to_owned(),
        ),
        Value::from(first),
        Value::from(i64::from(count)),
        Value::from(event.metadata.name.clone().unwrap_or_default()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_event_apis_print_the_same_row() {
        let now = super::super::now();
        let core: Event = serde_json::from_value(json!({
            "metadata": {"name": "web.1"},
            "involvedObject": {"kind": "Service", "name": "web", "namespace": "default"},
            "type": "Warning", "reason": "FailedToUpdateEndpointSlices", "message": " boom ",
            "source": {"component": "endpoint-slice-controller"},
        }))
        .unwrap();
        let v1: EventV1 = serde_json::from_value(json!({
            "metadata": {"name": "web.1"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Service", "name": "web", "namespace": "default"},
            "type": "Warning", "reason": "FailedToUpdateEndpointSlices", "note": " boom ",
            "reportingController": "endpoint-slice-controller", "reportingInstance": "",
        }))
        .unwrap();
        let core = core_cells(&core, now);
        let v1 = events_v1_cells(&v1, now);
        assert_eq!(core[1..7], v1[1..7]);
        assert_eq!(core[3], "service/web");
        assert_eq!(core[5], "endpoint-slice-controller");
        assert_eq!(core[6], "boom");
        assert_eq!(core[0], "<unknown>");
        assert_eq!((&core[8], &v1[8]), (&json!(1), &json!(1)));
    }
}
