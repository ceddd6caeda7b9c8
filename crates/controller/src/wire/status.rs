//! `meta.v1.Status`, the body of an error answer and of a watch's ERROR event, read from
//! either encoding into kube's [`Status`] so that error handling sees one type.

use super::envelope;
use bytes::Bytes;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::core::Status;
use prost::Message;

/// The Status an enveloped protobuf `raw` holds.
pub fn from_raw(raw: Bytes) -> Result<Status, prost::DecodeError> {
    let s = pb::Status::decode(raw)?;
    let mut status = Status {
        status: match s.status.as_deref() {
            Some("Success") => Some(StatusSummary::Success),
            Some("Failure") => Some(StatusSummary::Failure),
            _ => None,
        },
        code: s
            .code
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or_default(),
        message: s.message.unwrap_or_default(),
        reason: s.reason.unwrap_or_default(),
        ..Status::default()
    };
    status.details = s.details.map(|d| StatusDetails {
        name: d.name.unwrap_or_default(),
        group: d.group.unwrap_or_default(),
        kind: d.kind.unwrap_or_default(),
        uid: d.uid.unwrap_or_default(),
        causes: d
            .causes
            .into_iter()
            .map(|c| StatusCause {
                reason: c.reason.unwrap_or_default(),
                message: c.message.unwrap_or_default(),
                field: c.field.unwrap_or_default(),
            })
            .collect(),
        retry_after_seconds: d
            .retry_after_seconds
            .and_then(|s| u32::try_from(s).ok())
            .unwrap_or_default(),
    });
    Ok(status)
}

/// The error an unsuccessful answer's body describes: a Status in protobuf or JSON when it
/// is one, otherwise a Status made from the body's text and the HTTP code (a proxy's page).
pub fn from_error_body(code: u16, protobuf: bool, body: Bytes) -> Status {
    let decoded = if protobuf {
        envelope::open(body.clone())
            .ok()
            .and_then(|o| o.expect_kind("Status").ok())
            .and_then(|raw| from_raw(raw).ok())
    } else {
        serde_json::from_slice::<Status>(&body).ok()
    };
    decoded.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body);
        Status::failure(text.trim(), "Failed to parse error data").with_code(code)
    })
}
