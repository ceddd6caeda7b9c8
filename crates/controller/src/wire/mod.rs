//! Kubernetes' protobuf encoding on the wire, as kube-controller-manager speaks it.
//!
//! kube-controller-manager asks the API server for `application/vnd.kubernetes.protobuf`
//! (its `--kube-api-content-type` default). A protobuf body is the four bytes `k8s\0`, then a
//! `runtime.Unknown` envelope naming the object's apiVersion and kind and holding the
//! serialized object; a watch stream is a sequence of frames, each a 4-byte big-endian
//! length and a `WatchEvent` whose object is such an envelope again (see [`envelope`]).
//!
//! What the controllers read is decoded straight into the forms they keep (see [`kinds`]):
//! a pod is decoded into the handful of fields the projection reads, and the rest of its
//! bytes (containers' images and environment, volumes, managedFields) are skipped by the
//! decoder without being allocated. The informers' list and watch over this encoding is
//! [`watcher`]; writes go through [`crate::written`].
//!
//! JSON stays available: `--kube-api-content-type=application/json` asks for it, and an API
//! server that refuses protobuf (406 or 415) gets JSON from then on.

pub mod envelope;
pub(crate) mod exchange;
pub mod identity;
pub mod kinds;
pub mod list;
pub mod objects;
#[cfg(test)]
mod recordings;
pub mod status;
pub mod watcher;

pub use kinds::WireKind;

/// The media type of Kubernetes' protobuf encoding.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The media type of JSON.
pub const JSON: &str = "application/json";
/// What a client speaking protobuf accepts: protobuf first, JSON for what the server cannot
/// encode in it, as client-go asks.
pub const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";

/// How the controllers talk to the API server: `--kube-api-content-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// `application/vnd.kubernetes.protobuf`, falling back to JSON for a server that refuses
    /// it. kube-controller-manager's default, and ours.
    #[default]
    Protobuf,
    /// `application/json` only.
    Json,
}

impl Encoding {
    /// The encoding a `--kube-api-content-type` value names.
    pub fn from_content_type(value: &str) -> Result<Self, String> {
        match value {
            PROTOBUF => Ok(Self::Protobuf),
            JSON => Ok(Self::Json),
            other => Err(format!(
                "unknown content type {other:?}; use {PROTOBUF} or {JSON}"
            )),
        }
    }
}

/// The encoding a run's clients use: what the flag asked for, until the API server refuses
/// protobuf, then JSON for good. Shared by the informers and the writers; cheap to clone.
#[derive(Debug, Clone)]
pub struct Negotiated(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Negotiated {
    /// Starts with `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        Self(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
            encoding == Encoding::Protobuf,
        )))
    }

    /// The encoding to use now.
    pub fn current(&self) -> Encoding {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) {
            Encoding::Protobuf
        } else {
            Encoding::Json
        }
    }

    /// The server refused protobuf: JSON from now on. Returns whether this changed anything
    /// (to log it once).
    pub fn refused(&self) -> bool {
        self.0.swap(false, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Default for Negotiated {
    fn default() -> Self {
        Self::new(Encoding::default())
    }
}

/// Whether an error is the API server refusing protobuf: 406 Not Acceptable (it will not
/// answer in it) or 415 Unsupported Media Type (it will not read it).
pub fn refuses_protobuf(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 406 || status.code == 415)
}

/// Whether a response's `Content-Type` is the protobuf encoding (with or without the
/// `;stream=watch` parameter).
pub fn is_protobuf(content_type: Option<&http::HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(PROTOBUF))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_names_either_encoding_and_nothing_else() {
        assert_eq!(
            Encoding::from_content_type(PROTOBUF),
            Ok(Encoding::Protobuf)
        );
        assert_eq!(Encoding::from_content_type(JSON), Ok(Encoding::Json));
        let error = Encoding::from_content_type("application/yaml").unwrap_err();
        assert!(error.contains("application/yaml") && error.contains(PROTOBUF));
        assert_eq!(Encoding::default(), Encoding::Protobuf);
    }

    #[test]
    fn watch_streams_are_recognised_by_their_media_type() {
        let header = |s: &'static str| http::HeaderValue::from_static(s);
        assert!(is_protobuf(Some(&header(
            "application/vnd.kubernetes.protobuf;stream=watch"
        ))));
        assert!(is_protobuf(Some(&header(
            "application/vnd.kubernetes.protobuf"
        ))));
        assert!(!is_protobuf(Some(&header("application/json"))));
        assert!(!is_protobuf(None));
    }
}
