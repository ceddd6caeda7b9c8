//! LAST SEEN TYPE REASON OBJECT MESSAGE, and SUBOBJECT SOURCE FIRST SEEN COUNT NAME with
//! `-o wide`, for core and `events.k8s.io` events.
//!
//! kube-apiserver stores both API versions as one internal type and prints them alike, so
//! both are first read into [`EventView`] with the core field names.

use super::{age, column, wide, Column, NAME};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::api::events::v1::Event as EventV1;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
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

/// The fields the printer reads, with the core API's names.
struct EventView<'a> {
    metadata: &'a ObjectMeta,
    first: Option<Timestamp>,
    last: Option<Timestamp>,
    event_time: Option<Timestamp>,
    count: i32,
    series: Option<(i32, Timestamp)>,
    involved: Option<&'a ObjectReference>,
    type_: Option<&'a str>,
    reason: Option<&'a str>,
    message: Option<&'a str>,
    source: Option<&'a EventSource>,
    reporting_controller: Option<&'a str>,
    reporting_instance: Option<&'a str>,
}

pub(super) fn core_cells(event: &Event, now: Timestamp) -> Vec<Value> {
    cells(
        &EventView {
            metadata: &event.metadata,
            first: event.first_timestamp.as_ref().map(|t| t.0),
            last: event.last_timestamp.as_ref().map(|t| t.0),
            event_time: event.event_time.as_ref().map(|t| t.0),
            count: event.count.unwrap_or(0),
            series: event
                .series
                .as_ref()
                .and_then(|s| Some((s.count.unwrap_or(0), s.last_observed_time.as_ref()?.0))),
            involved: Some(&event.involved_object),
            type_: event.type_.as_deref(),
            reason: event.reason.as_deref(),
            message: event.message.as_deref(),
            source: event.source.as_ref(),
            reporting_controller: event.reporting_component.as_deref(),
            reporting_instance: event.reporting_instance.as_deref(),
        },
        now,
    )
}

pub(super) fn events_v1_cells(event: &EventV1, now: Timestamp) -> Vec<Value> {
    cells(
        &EventView {
            metadata: &event.metadata,
            first: event.deprecated_first_timestamp.as_ref().map(|t| t.0),
            last: event.deprecated_last_timestamp.as_ref().map(|t| t.0),
            event_time: event.event_time.as_ref().map(|t| t.0),
            count: event.deprecated_count.unwrap_or(0),
            series: event
                .series
                .as_ref()
                .map(|s| (s.count, s.last_observed_time.0)),
            involved: event.regarding.as_ref(),
            type_: event.type_.as_deref(),
            reason: event.reason.as_deref(),
            message: event.note.as_deref(),
            source: event.deprecated_source.as_ref(),
            reporting_controller: event.reporting_controller.as_deref(),
            reporting_instance: event.reporting_instance.as_deref(),
        },
        now,
    )
}

/// `component, host`, each falling back to the reporting controller and instance.
fn source(event: &EventView<'_>) -> String {
    let pick = |a: Option<&str>, b: Option<&str>| {
        a.filter(|s| !s.is_empty())
            .or(b)
            .unwrap_or_default()
            .to_owned()
    };
    let component = pick(
        event.source.and_then(|s| s.component.as_deref()),
        event.reporting_controller,
    );
    let host = pick(
        event.source.and_then(|s| s.host.as_deref()),
        event.reporting_instance,
    );
    match (component.is_empty(), host.is_empty()) {
        (true, _) => String::new(),
        (false, true) => component,
        (false, false) => format!("{component}, {host}"),
    }
}

fn cells(event: &EventView<'_>, now: Timestamp) -> Vec<Value> {
    let first = match event.first {
        Some(at) => age::since(Some(at), now),
        None => age::since(event.event_time, now),
    };
    let mut last = match event.last {
        Some(at) => age::since(Some(at), now),
        None => first.clone(),
    };
    let mut count = event.count;
    if let Some((series_count, observed)) = event.series {
        last = age::since(Some(observed), now);
        count = series_count;
    } else if count == 0 {
        // Events of the newer API are singletons without a count.
        count = 1;
    }
    let kind = event
        .involved
        .and_then(|o| o.kind.as_deref())
        .unwrap_or_default()
        .to_lowercase();
    let target = match event.involved.and_then(|o| o.name.as_deref()) {
        Some(name) if !name.is_empty() => format!("{kind}/{name}"),
        _ => kind,
    };
    let text = |s: Option<&str>| Value::from(s.unwrap_or_default().to_owned());
    vec![
        Value::from(last),
        text(event.type_),
        text(event.reason),
        Value::from(target),
        text(event.involved.and_then(|o| o.field_path.as_deref())),
        Value::from(source(event)),
        Value::from(event.message.unwrap_or_default().trim().to_owned()),
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
