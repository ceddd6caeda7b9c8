//! Field management: who set which fields of an object, recorded in `metadata.managedFields`
//! as kube-apiserver records it.
//!
//! Readers of managedFields (kubectl, and the controllers' migration guard, which tells from
//! them that another controller wrote an object it manages) need to see who wrote which fields
//! and when. kube-apiserver computes that with server-side apply's field sets and the
//! resources' schemas; we keep an approximation that gives the same answer for those readers:
//!
//! - The manager is the request's `fieldManager` parameter, else its User-Agent up to the
//!   first `/` (so `kube-controller-manager/v1.35.0 (linux/amd64) ...` writes as
//!   `kube-controller-manager`), else the empty string, as kube-apiserver does.
//! - An Update (create, replace, and JSON, merge and strategic merge patches) gives its manager
//!   every field whose value it set or changed; other managers lose those fields. An Apply
//!   gives its manager exactly the fields of its configuration. Removed fields leave every set.
//! - Lists are owned whole, as kube-apiserver owns atomic lists (a slice's `endpoints` and
//!   `ports`, an Endpoints' `subsets`); maps and objects are owned field by field.
//! - `apiVersion`, `kind` and the metadata the server owns are never tracked. An entry's time
//!   moves (on the server's clock) only when its manager took fields; entries left without
//!   fields are dropped.
//! - A request that carries managedFields replaces the recorded ones (`[{}]` clears them),
//!   as on the real server; one that carries none keeps them.

use crate::store::set_meta;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// Metadata fields the server owns, which are in nobody's field set.
const SERVER_OWNED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
];

/// Field managers' names are cut to this many bytes, as kube-apiserver cuts them.
const MAX_MANAGER_LEN: usize = 128;

/// The manager name of a request: `fieldManager`, else the User-Agent's product (the part
/// before the first `/`, without unprintable characters, at most 128 bytes).
pub(crate) fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    let product = user_agent
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default();
    let mut name = String::new();
    for c in product.chars().filter(|c| !c.is_control()) {
        if name.len() + c.len_utf8() > MAX_MANAGER_LEN {
            break;
        }
        name.push(c);
    }
    name
}

/// A set of fields, each a path of FieldsV1 keys (`f:metadata`, `f:labels`, `f:app`).
type FieldSet = BTreeSet<Vec<String>>;

/// Who writes, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Writer {
    /// The manager name (see [`manager_name`]).
    pub manager: String,
    /// The configuration of a server-side apply, whose fields the manager then owns; `None`
    /// for an Update.
    pub applied: Option<Value>,
    /// `Some("status")` for writes to the status subresource.
    pub subresource: Option<&'static str>,
}

/// One managedFields entry, with its fields as a set.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: Value,
    time: Value,
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn parse(value: &Value) -> Self {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let mut fields = FieldSet::new();
        if let Some(set) = value.get("fieldsV1") {
            collect_leaves(set, &mut Vec::new(), &mut fields, &|k| k.to_owned());
        }
        Self {
            manager: text("manager").unwrap_or_default(),
            operation: text("operation").unwrap_or_default(),
            api_version: value.get("apiVersion").cloned().unwrap_or(Value::Null),
            time: value.get("time").cloned().unwrap_or(Value::Null),
            subresource: text("subresource").filter(|s| !s.is_empty()),
            fields,
        }
    }

    fn to_json(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("manager".into(), json!(self.manager));
        entry.insert("operation".into(), json!(self.operation));
        if !self.api_version.is_null() {
            entry.insert("apiVersion".into(), self.api_version.clone());
        }
        if !self.time.is_null() {
            entry.insert("time".into(), self.time.clone());
        }
        entry.insert("fieldsType".into(), json!("FieldsV1"));
        entry.insert("fieldsV1".into(), fields_v1(&self.fields));
        if let Some(subresource) = &self.subresource {
            entry.insert("subresource".into(), json!(subresource));
        }
        Value::Object(entry)
    }

    fn belongs_to(&self, writer: &Writer) -> bool {
        self.manager == writer.manager
            && self.operation == writer.operation()
            && self.subresource.as_deref() == writer.subresource
    }
}

impl Writer {
    /// An Update by `manager`, to the status subresource when `status` is set.
    pub(crate) fn update(manager: &str, status: bool) -> Self {
        Self {
            manager: manager.to_owned(),
            applied: None,
            subresource: status.then_some("status"),
        }
    }

    fn operation(&self) -> &'static str {
        if self.applied.is_some() {
            "Apply"
        } else {
            "Update"
        }
    }

    /// Records this write in `new`'s managedFields. `old` is the stored object it replaces
    /// (`None` for a create), `api_version` the request's group/version and `now` the
    /// server's time.
    pub(crate) fn record(
        &self,
        old: Option<&Value>,
        new: &mut Value,
        api_version: &str,
        now: Value,
    ) {
        let mut changed = FieldSet::new();
        let mut removed = FieldSet::new();
        diff(old, new, &mut Vec::new(), &mut changed, &mut removed);
        // A create (or a new metadata) brings server-owned fields along as new leaves.
        changed.retain(|path| !is_untracked_path(path));
        let sent = new
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .and_then(Value::as_array)
            .filter(|entries| !entries.is_empty());
        let recorded = sent.or_else(|| {
            old.and_then(|o| o.get("metadata"))
                .and_then(|m| m.get("managedFields"))
                .and_then(Value::as_array)
        });
        let mut entries: Vec<Entry> = recorded.into_iter().flatten().map(Entry::parse).collect();

        let lost = |path: &Vec<String>| covered(path, &changed) || covered(path, &removed);
        for entry in entries.iter_mut().filter(|e| !e.belongs_to(self)) {
            entry.fields.retain(|path| !lost(path));
        }
        let taken = match &self.applied {
            Some(config) => {
                let mut fields = FieldSet::new();
                collect_tracked_leaves(config, &mut fields);
                fields
            }
            None => changed.clone(),
        };
        let own = match entries.iter_mut().find(|e| e.belongs_to(self)) {
            Some(entry) => entry,
            None => {
                entries.push(Entry {
                    manager: self.manager.clone(),
                    operation: self.operation().to_owned(),
                    api_version: Value::Null,
                    time: Value::Null,
                    subresource: self.subresource.map(str::to_owned),
                    fields: FieldSet::new(),
                });
                entries.last_mut().expect("an entry was just pushed")
            }
        };
        if self.applied.is_some() {
            own.fields = taken;
            own.time = now;
            own.api_version = json!(api_version);
        } else {
            own.fields.retain(|path| !covered(path, &removed));
            if !taken.is_empty() {
                own.fields.extend(taken);
                own.time = now;
                own.api_version = json!(api_version);
            }
        }
        entries.retain(|e| !e.fields.is_empty());
        if entries.is_empty() {
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        } else {
            let entries = entries.iter().map(Entry::to_json).collect();
            set_meta(new, "managedFields", Value::Array(entries));
        }
    }
}

/// Whether `path` is `prefix` or lies under one of `prefixes`.
fn covered(path: &[String], prefixes: &FieldSet) -> bool {
    (1..=path.len()).any(|n| prefixes.contains(&path[..n]))
}

/// Whether a field at `prefix` (a path of FieldsV1 keys) is never tracked.
fn untracked(prefix: &[String], key: &str) -> bool {
    match prefix {
        [] => key == "apiVersion" || key == "kind",
        [meta] if meta == "f:metadata" => SERVER_OWNED_METADATA.contains(&key),
        _ => false,
    }
}

/// The fields set or changed from `old` to `new`, and those removed, under `prefix`.
fn diff(
    old: Option<&Value>,
    new: &Value,
    prefix: &mut Vec<String>,
    changed: &mut FieldSet,
    removed: &mut FieldSet,
) {
    match (old, new) {
        (Some(Value::Object(before)), Value::Object(after)) => {
            for (key, value) in after {
                if untracked(prefix, key) {
                    continue;
                }
                prefix.push(format!("f:{key}"));
                diff(before.get(key), value, prefix, changed, removed);
                prefix.pop();
            }
            for key in before.keys() {
                if !after.contains_key(key) && !untracked(prefix, key) {
                    let mut path = prefix.clone();
                    path.push(format!("f:{key}"));
                    removed.insert(path);
                }
            }
        }
        (None, value) => collect_leaves(value, prefix, changed, &|k| format!("f:{k}")),
        (Some(before), after) => {
            if before != after && !prefix.is_empty() {
                changed.insert(prefix.clone());
            }
        }
    }
}

fn is_untracked_path(path: &[String]) -> bool {
    (0..path.len()).any(|n| {
        path[n]
            .strip_prefix("f:")
            .is_some_and(|key| untracked(&path[..n], key))
    })
}

/// The leaf fields of an object written as a whole (a create, or an Apply's configuration),
/// without the untracked ones.
fn collect_tracked_leaves(value: &Value, out: &mut FieldSet) {
    collect_leaves(value, &mut Vec::new(), out, &|k| format!("f:{k}"));
    out.retain(|path| !is_untracked_path(path));
}

/// Every leaf under `value`: scalars, lists, and empty objects. `key` turns a JSON key into a
/// path element (`f:` prefixed for objects, unchanged for FieldsV1 sets).
fn collect_leaves(
    value: &Value,
    prefix: &mut Vec<String>,
    out: &mut FieldSet,
    key: &dyn Fn(&str) -> String,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                prefix.push(key(k));
                collect_leaves(v, prefix, out, key);
                prefix.pop();
            }
        }
        _ => {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
        }
    }
}

/// A field set as a FieldsV1 object: nested keys, `{}` at the leaves.
fn fields_v1(fields: &FieldSet) -> Value {
    nest(fields.iter().map(Vec::as_slice))
}

fn nest<'a>(paths: impl Iterator<Item = &'a [String]>) -> Value {
    let mut children: std::collections::BTreeMap<&str, Vec<&[String]>> = Default::default();
    for path in paths {
        if let Some((first, rest)) = path.split_first() {
            children.entry(first).or_default().push(rest);
        }
    }
    Value::Object(
        children
            .into_iter()
            .map(|(key, rests)| (key.to_owned(), nest(rests.into_iter())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(manager: &str) -> Writer {
        Writer::update(manager, false)
    }

    fn entries(object: &Value) -> Vec<Value> {
        object["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn slice(endpoints: Value) -> Value {
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "web-abc", "namespace": "default", "uid": "u1",
                         "resourceVersion": "5",
                         "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        })
    }

    fn created_by(manager: &str, object: Value) -> Value {
        let mut object = object;
        writer(manager).record(None, &mut object, "discovery.k8s.io/v1", json!("t1"));
        object
    }

    /// `old` changed by the merge patch `change` in an Update by `manager` at `time`.
    fn updated_by(manager: &str, time: &str, old: &Value, change: Value) -> Value {
        let mut new = old.clone();
        json_patch::merge(&mut new, &change);
        writer(manager).record(Some(old), &mut new, "v", json!(time));
        new
    }

    /// The slice kube-endpoints created at t1 with one endpoint, 10.0.0.1.
    fn created_with_one_endpoint() -> Value {
        created_by(
            "kube-endpoints",
            slice(json!([{"addresses": ["10.0.0.1"]}])),
        )
    }

    /// `old` with its one endpoint moved to `ip` by `manager` at `time`.
    fn moved(old: &Value, ip: &str, manager: &str, time: &str) -> Value {
        updated_by(
            manager,
            time,
            old,
            json!({"endpoints": [{"addresses": [ip]}]}),
        )
    }

    #[test]
    fn the_manager_is_the_field_manager_parameter_else_the_user_agents_product() {
        assert_eq!(
            manager_name(Some("kube-endpoints"), Some("kubectl/v1")),
            "kube-endpoints"
        );
        assert_eq!(
            manager_name(
                None,
                Some("kube-controller-manager/v1.35.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:endpointslice-controller")
            ),
            "kube-controller-manager"
        );
        assert_eq!(manager_name(Some(""), Some("kubectl/v1.35")), "kubectl");
        assert_eq!(manager_name(None, None), "");
        assert_eq!(manager_name(None, Some(&"a".repeat(300))).len(), 128);
    }

    #[test]
    fn a_create_gives_its_manager_every_field_but_the_server_owned_ones() {
        let object = created_with_one_endpoint();
        let recorded = entries(&object);
        assert_eq!(recorded.len(), 1);
        assert_eq!(recorded[0]["manager"], "kube-endpoints");
        assert_eq!(recorded[0]["operation"], "Update");
        assert_eq!(recorded[0]["apiVersion"], "discovery.k8s.io/v1");
        assert_eq!(recorded[0]["time"], "t1");
        assert_eq!(recorded[0]["fieldsType"], "FieldsV1");
        assert_eq!(
            recorded[0]["fieldsV1"],
            json!({
                "f:addressType": {},
                "f:endpoints": {},
                "f:metadata": {"f:labels": {"f:endpointslice.kubernetes.io/managed-by": {}}},
                "f:ports": {},
            })
        );
    }

    #[test]
    fn an_update_moves_the_changed_fields_to_its_manager() {
        let old = created_with_one_endpoint();
        let new = moved(&old, "10.0.0.2", "kube-controller-manager", "t2");
        let recorded = entries(&new);
        assert_eq!(recorded.len(), 2, "{recorded:#?}");
        assert_eq!(recorded[0]["manager"], "kube-endpoints");
        assert!(recorded[0]["fieldsV1"].get("f:endpoints").is_none());
        assert_eq!(recorded[0]["time"], "t1");
        assert_eq!(recorded[1]["manager"], "kube-controller-manager");
        assert_eq!(recorded[1]["fieldsV1"], json!({"f:endpoints": {}}));
        assert_eq!(recorded[1]["time"], "t2");
    }

    #[test]
    fn a_manager_that_loses_all_its_fields_is_dropped() {
        let old = created_with_one_endpoint();
        let foreign = moved(&old, "10.0.0.2", "kube-controller-manager", "t2");
        let reverted = moved(&foreign, "10.0.0.1", "kube-endpoints", "t3");
        let recorded = entries(&reverted);
        assert_eq!(recorded.len(), 1, "{recorded:#?}");
        assert_eq!(recorded[0]["manager"], "kube-endpoints");
        assert_eq!(recorded[0]["time"], "t3");
    }

    #[test]
    fn a_label_edit_owns_only_the_label() {
        let old = created_by("kube-endpoints", slice(json!([])));
        let label = json!({"metadata": {"labels": {"team": "a"}}});
        let new = updated_by("kubectl-label", "t2", &old, label);
        let recorded = entries(&new);
        assert_eq!(
            recorded[1]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:team": {}}}})
        );
        assert_eq!(
            recorded[0]["time"], "t1",
            "the creator kept its fields and time"
        );
    }

    #[test]
    fn a_write_that_changes_nothing_keeps_the_entries_and_their_times() {
        let old = created_by("kube-endpoints", slice(json!([])));
        let bump = json!({"metadata": {"resourceVersion": "6"}});
        let new = updated_by("kube-controller-manager", "t2", &old, bump);
        assert_eq!(entries(&new), entries(&old));
    }

    #[test]
    fn removed_fields_leave_every_set() {
        let old = created_by("kube-endpoints", slice(json!([])));
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({});
        writer("kubectl-edit").record(Some(&old), &mut new, "v", json!("t2"));
        let recorded = entries(&new);
        assert!(
            recorded[0]["fieldsV1"]["f:metadata"].is_null(),
            "{recorded:#?}"
        );
    }

    #[test]
    fn an_apply_owns_exactly_its_configuration() {
        let old = created_by("kube-endpoints", slice(json!([])));
        let config = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                            "metadata": {"name": "web-abc", "labels": {"team": "a"}}});
        let mut new = old.clone();
        new["metadata"]["labels"]["team"] = json!("a");
        let apply = Writer {
            manager: "ops".into(),
            applied: Some(config),
            subresource: None,
        };
        apply.record(Some(&old), &mut new, "v", json!("t2"));
        let recorded = entries(&new);
        assert_eq!(recorded[1]["operation"], "Apply");
        assert_eq!(
            recorded[1]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:team": {}}}})
        );
    }

    #[test]
    fn managed_fields_sent_with_a_write_replace_the_recorded_ones() {
        let old = created_by("kube-endpoints", slice(json!([])));
        let sent = json!({"metadata": {"managedFields": [{}]}});
        let new = updated_by("kubectl-edit", "t2", &old, sent);
        assert!(new["metadata"].get("managedFields").is_none(), "{new:#}");
    }

    #[test]
    fn status_writes_are_recorded_under_their_subresource() {
        let old = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n"}, "status": {}});
        let mut new = old.clone();
        new["status"] = json!({"podIP": "10.0.0.1"});
        Writer::update("kubelet", true).record(Some(&old), &mut new, "v1", json!("t"));
        let recorded = entries(&new);
        assert_eq!(recorded[0]["subresource"], "status");
        assert_eq!(
            recorded[0]["fieldsV1"],
            json!({"f:status": {"f:podIP": {}}})
        );
    }
}
