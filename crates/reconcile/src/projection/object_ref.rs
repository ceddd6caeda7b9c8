//! An `ObjectReference` as cached endpoints hold it.
//!
//! Nearly every endpoint points at a pod with four fields (kind, namespace, name, uid). As a
//! `core/v1` `ObjectReference` that is seven optional `String`s (168 bytes) and four heap
//! blocks; here the four fields sit inline (names when they fit in 24 bytes, the uid as its
//! 16 bytes, see [`super::Uid`]), and the three a pod reference never carries (apiVersion,
//! fieldPath, resourceVersion) are boxed away for the objects that do.

use compact_str::CompactString;
use k8s_openapi::api::core::v1::ObjectReference;

/// A reference to the object behind an endpoint (normally its pod), kept compact.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactRef {
    kind: Option<CompactString>,
    namespace: Option<CompactString>,
    name: Option<CompactString>,
    uid: Option<super::Uid>,
    /// apiVersion, fieldPath and resourceVersion, when any is set (the other fields unset).
    rest: Option<Box<ObjectReference>>,
}

impl CompactRef {
    /// Takes a reference apart.
    pub fn new(mut reference: ObjectReference) -> Self {
        let kind = compact(reference.kind.take());
        let namespace = compact(reference.namespace.take());
        let name = compact(reference.name.take());
        let uid = reference.uid.take().map(super::Uid::from);
        // What is left is apiVersion, fieldPath and resourceVersion: boxed whole when any is
        // set, so that a field the type may gain is kept too.
        let rest = (reference != ObjectReference::default()).then(|| Box::new(reference));
        Self {
            kind,
            namespace,
            name,
            uid,
            rest,
        }
    }

    /// The reference as the API has it, equal to the one [`CompactRef::new`] took.
    pub fn to_object_ref(&self) -> ObjectReference {
        let rest = self.rest.as_deref();
        ObjectReference {
            api_version: rest.and_then(|r| r.api_version.clone()),
            field_path: rest.and_then(|r| r.field_path.clone()),
            kind: string(&self.kind),
            name: string(&self.name),
            namespace: string(&self.namespace),
            resource_version: rest.and_then(|r| r.resource_version.clone()),
            uid: self.uid.as_ref().map(super::Uid::to_string),
        }
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
