//! An `ObjectReference` as cached endpoints hold it.
//!
//! Nearly every endpoint points at a pod of its own object's namespace with four fields
//! (kind `Pod`, that namespace, name, uid). As a `core/v1` `ObjectReference` that is seven
//! optional `String`s (168 bytes) and four heap blocks. Here only the name (inline when it
//! fits in 24 bytes) and the uid (its 16 bytes, see [`super::Uid`]) are kept; kind and
//! namespace are implied by the slice or Endpoints object holding the reference, and given
//! back from it. A reference that is anything else (another kind or namespace, no kind, or
//! apiVersion, fieldPath or resourceVersion set, as hand-written Endpoints may have) keeps
//! its other fields boxed, as written.

use compact_str::CompactString;
use k8s_openapi::api::core::v1::ObjectReference;

/// A reference to the object behind an endpoint (normally its pod), kept compact.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactRef {
    name: Option<CompactString>,
    uid: Option<super::Uid>,
    /// Every field but name and uid, when the reference is not to a pod of the holder's
    /// namespace with nothing else set; `None` stands for kind `Pod` in that namespace.
    other: Option<Box<ObjectReference>>,
}

impl CompactRef {
    /// Takes a reference apart; `home` is the namespace of the object holding it.
    pub fn new(mut reference: ObjectReference, home: Option<&str>) -> Self {
        let name = compact(reference.name.take());
        let uid = reference.uid.take().map(super::Uid::from);
        // A pod of the holder's namespace, with a namespace written (a holder with none
        // keeps whatever it holds): implied, so nothing more is kept. Anything else, whole.
        // Every field is named, so that a field the type gains must be decided on here.
        let ObjectReference {
            api_version,
            field_path,
            kind,
            name: _,
            namespace,
            resource_version,
            uid: _,
        } = &reference;
        let implied = home.is_some()
            && namespace.as_deref() == home
            && kind.as_deref() == Some("Pod")
            && api_version.is_none()
            && field_path.is_none()
            && resource_version.is_none();
        Self {
            name,
            uid,
            other: (!implied).then(|| Box::new(reference)),
        }
    }

    /// The reference as the API has it, equal to the one [`CompactRef::new`] took; `home` is
    /// the namespace given to it then.
    pub fn to_object_ref(&self, home: Option<&str>) -> ObjectReference {
        let name = string(&self.name);
        let uid = self.uid.as_ref().map(super::Uid::to_text);
        match self.other.as_deref() {
            None => ObjectReference {
                kind: Some("Pod".to_owned()),
                namespace: home.map(str::to_owned),
                name,
                uid,
                ..ObjectReference::default()
            },
            Some(other) => ObjectReference {
                name,
                uid,
                ..other.clone()
            },
        }
    }
}

impl CompactRef {
    /// The referenced object's name.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The referenced object's uid.
    pub fn uid(&self) -> Option<&super::Uid> {
        self.uid.as_ref()
    }

    /// The referenced object's namespace; `home` is the namespace given to
    /// [`CompactRef::new`].
    pub fn namespace<'a>(&'a self, home: Option<&'a str>) -> Option<&'a str> {
        match self.other.as_deref() {
            None => home,
            Some(other) => other.namespace.as_deref(),
        }
    }

    /// Whether the reference equals `other` in every field but `resourceVersion` (as
    /// [`crate::pod_rules::same_reference`] compares two references), without building it
    /// back; `home` is the namespace given to [`CompactRef::new`].
    pub fn same_as(&self, home: Option<&str>, other: &ObjectReference) -> bool {
        let uid_equal = match (&self.uid, other.uid.as_deref()) {
            (Some(uid), Some(text)) => uid == text,
            (None, None) => true,
            _ => false,
        };
        let rest_equal = match self.other.as_deref() {
            None => {
                other.kind.as_deref() == Some("Pod")
                    && other.namespace.as_deref() == home
                    && other.api_version.is_none()
                    && other.field_path.is_none()
            }
            // Every field named, so that a field the type gains must be decided on here.
            Some(ObjectReference {
                api_version,
                field_path,
                kind,
                name: _,
                namespace,
                resource_version: _,
                uid: _,
            }) => {
                *api_version == other.api_version
                    && *field_path == other.field_path
                    && *kind == other.kind
                    && *namespace == other.namespace
            }
        };
        uid_equal && rest_equal && self.name.as_deref() == other.name.as_deref()
    }
}

/// An optional string, inline when short.
pub(super) fn compact(text: Option<String>) -> Option<CompactString> {
    text.map(CompactString::from)
}

/// An optional string back as the API types hold it.
pub(super) fn string(text: &Option<CompactString>) -> Option<String> {
    text.as_ref().map(|t| t.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(kind: Option<&str>, namespace: Option<&str>) -> ObjectReference {
        ObjectReference {
            kind: kind.map(str::to_owned),
            namespace: namespace.map(str::to_owned),
            name: Some("web-0".to_owned()),
            uid: Some("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11".to_owned()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn a_pod_of_the_holders_namespace_keeps_only_its_name_and_uid() {
        let pod = reference(Some("Pod"), Some("shop"));
        let compact = CompactRef::new(pod.clone(), Some("shop"));
        assert!(compact.other.is_none());
        assert_eq!(compact.to_object_ref(Some("shop")), pod);
        assert!(std::mem::size_of::<CompactRef>() <= 56);
    }

    #[test]
    fn a_compact_reference_compares_as_the_reference_it_was_made_from() {
        use crate::pod_rules::same_reference;
        let pod = reference(Some("Pod"), Some("shop"));
        let variants = [
            pod.clone(),
            ObjectReference {
                resource_version: Some("7".to_owned()),
                ..pod.clone()
            },
            ObjectReference {
                uid: Some("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d12".to_owned()),
                ..pod.clone()
            },
            ObjectReference {
                uid: Some("not-a-uuid".to_owned()),
                ..pod.clone()
            },
            ObjectReference {
                uid: None,
                ..pod.clone()
            },
            ObjectReference {
                name: Some("web-1".to_owned()),
                ..pod.clone()
            },
            ObjectReference {
                api_version: Some("v1".to_owned()),
                ..pod.clone()
            },
            ObjectReference {
                field_path: Some("spec".to_owned()),
                ..pod.clone()
            },
            reference(Some("Pod"), Some("other")),
            reference(Some("Node"), Some("shop")),
            reference(None, Some("shop")),
            reference(Some("Pod"), None),
            ObjectReference::default(),
        ];
        for home in [Some("shop"), None] {
            for held in &variants {
                let compact = CompactRef::new(held.clone(), home);
                for other in &variants {
                    assert_eq!(
                        compact.same_as(home, other),
                        same_reference(Some(held), Some(other)),
                        "{held:?} held in {home:?} against {other:?}"
                    );
                }
                assert_eq!(compact.name(), held.name.as_deref());
                assert_eq!(compact.namespace(home), held.namespace.as_deref());
            }
        }
    }

    #[test]
    fn every_other_reference_comes_back_as_written() {
        let field_path = ObjectReference {
            field_path: Some("spec".to_owned()),
            ..reference(Some("Pod"), Some("shop"))
        };
        let unnamed = ObjectReference {
            name: None,
            uid: None,
            ..reference(Some("Pod"), Some("shop"))
        };
        let cases = [
            (reference(Some("Pod"), Some("other")), Some("shop")),
            (reference(Some("Node"), Some("shop")), Some("shop")),
            (reference(None, Some("shop")), Some("shop")),
            (reference(Some("Pod"), None), Some("shop")),
            (reference(Some("Pod"), None), None),
            (reference(Some("Pod"), Some("")), Some("")),
            (ObjectReference::default(), Some("shop")),
            (field_path, Some("shop")),
            (unnamed, Some("shop")),
        ];
        for (written, home) in cases {
            let compact = CompactRef::new(written.clone(), home);
            assert_eq!(compact.to_object_ref(home), written, "held in {home:?}");
        }
    }
}
