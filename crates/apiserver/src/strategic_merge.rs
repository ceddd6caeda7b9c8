//! Strategic merge patch for the built-in kinds we serve.
//!
//! `kubectl apply`, `kubectl patch` and kube-rs's `Patch::Strategic` send this format. It is a
//! JSON merge patch in which some lists merge element by element on a key (containers by
//! `name`, conditions by `type`, ports by `port` or `containerPort`) instead of being replaced,
//! plus a few `$` directives. The real server reads the keys from Go struct tags; here a small
//! table by field name stands in, which covers the fields of the kinds this server holds.

use serde_json::{Map, Value};

/// The merge key of a list field, judged by its name and by what its items hold.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let has = |key: &str| items.iter().any(|i| i.get(key).is_some());
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "conditions" => Some("type"),
        "addresses" if has("type") => Some("type"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" if has("port") => Some("port"),
        "ownerReferences" => Some("uid"),
        "hostAliases" => Some("ip"),
        "taints" => Some("key"),
        _ => None,
    }
}

/// Lists of strings that merge as sets.
fn is_set_list(field: &str) -> bool {
    matches!(field, "finalizers")
}

fn directive(v: &Value) -> Option<&str> {
    v.get("$patch").and_then(Value::as_str)
}

/// A value with every `$` directive removed, for parts of a patch copied in whole.
fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch to `target`, an object of `kind`.
pub fn apply(target: &mut Value, patch: &Value, kind: &str) -> Result<(), String> {
    let Value::Object(p) = patch else {
        return Err("a strategic merge patch must be a JSON object".to_owned());
    };
    let Value::Object(t) = target else {
        *target = clean(patch);
        return Ok(());
    };
    if matches!(kind, "EndpointSlice" | "Endpoints") {
        // Every list of these kinds is atomic upstream (their `ports` must not merge by
        // `port` like a Service's): only metadata merges strategically.
        let mut rest = p.clone();
        let meta = rest.remove("metadata");
        let mut whole = Value::Object(std::mem::take(t));
        json_patch::merge(&mut whole, &clean(&Value::Object(rest)));
        if let Value::Object(merged) = whole {
            *t = merged;
        }
        if let Some(Value::Object(meta_patch)) = meta {
            match t.get_mut("metadata") {
                Some(Value::Object(meta)) => merge_map(meta, &meta_patch),
                _ => {
                    t.insert("metadata".to_owned(), clean(&Value::Object(meta_patch)));
                }
            }
        }
        return Ok(());
    }
    merge_map(t, p);
    Ok(())
}

fn merge_map(target: &mut Map<String, Value>, patch: &Map<String, Value>) {
    if patch.get("$patch").and_then(Value::as_str) == Some("replace") {
        if let Value::Object(m) = clean(&Value::Object(patch.clone())) {
            *target = m;
        }
        return;
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (target.get_mut(field), value)
            {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            target.remove(key);
            continue;
        }
        match (target.get_mut(key), value) {
            (Some(Value::Object(t)), Value::Object(p)) => match directive(value) {
                Some("delete") => {
                    target.remove(key);
                }
                _ => merge_map(t, p),
            },
            (Some(Value::Array(t)), Value::Array(p)) => merge_list(key, t, p),
            _ => {
                if directive(value) != Some("delete") {
                    target.insert(key.clone(), clean(value));
                }
            }
        }
    }
    if let Some(Value::Array(retain)) = patch.get("$retainKeys") {
        target.retain(|k, _| retain.iter().any(|r| r == k));
    }
}

fn merge_list(field: &str, target: &mut Vec<Value>, patch: &[Value]) {
    if patch.iter().any(|i| directive(i) == Some("replace")) {
        *target = patch
            .iter()
            .filter(|i| directive(i) != Some("replace"))
            .map(clean)
            .collect();
        return;
    }
    if let Some(key) = merge_key(field, patch).or_else(|| merge_key(field, target)) {
        for item in patch {
            let Some(id) = item.get(key) else {
                target.push(clean(item));
                continue;
            };
            let at = target.iter().position(|t| t.get(key) == Some(id));
            match (at, directive(item)) {
                (Some(i), Some("delete")) => {
                    target.remove(i);
                }
                (None, Some("delete")) => {}
                (Some(i), _) => {
                    if let (Value::Object(t), Value::Object(p)) = (&mut target[i], item) {
                        merge_map(t, p);
                    }
                }
                (None, _) => target.push(clean(item)),
            }
        }
    } else if is_set_list(field) {
        for item in patch {
            if !target.contains(item) {
                target.push(item.clone());
            }
        }
    } else {
        *target = patch.iter().map(clean).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(target: Value, patch: Value) -> Value {
        let mut t = target;
        apply(&mut t, &patch, "Pod").unwrap();
        t
    }

    #[test]
    fn endpointslice_lists_are_replaced_but_its_finalizers_merge() {
        let mut slice =
            json!({"metadata": {"finalizers": ["a"]}, "ports": [{"port": 80, "name": "http"}]});
        let patch =
            json!({"metadata": {"finalizers": ["b"]}, "ports": [{"port": 81, "name": "alt"}]});
        apply(&mut slice, &patch, "EndpointSlice").unwrap();
        assert_eq!(slice["ports"], json!([{"port": 81, "name": "alt"}]));
        assert_eq!(slice["metadata"]["finalizers"], json!(["a", "b"]));
    }

    #[test]
    fn containers_merge_by_name() {
        let pod = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let out = patched(
            pod,
            json!({"spec": {"containers": [{"name": "b", "image": "z"}], "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}])
        );
    }

    #[test]
    fn conditions_merge_by_type_and_unknown_lists_are_replaced() {
        let pod = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X", "status": "True"}], "podIPs": [{"ip": "1"}]}});
        let out = patched(
            pod,
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}], "podIPs": [{"ip": "2"}]}}),
        );
        assert_eq!(
            out["status"]["conditions"][0],
            json!({"type": "Ready", "status": "True"})
        );
        assert_eq!(out["status"]["conditions"][1]["type"], "X");
        assert_eq!(out["status"]["podIPs"], json!([{"ip": "2"}]));
    }

    #[test]
    fn service_ports_merge_by_port_and_delete_directive_removes_one() {
        let svc = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let out = patched(
            svc,
            json!({"spec": {"ports": [{"port": 443, "$patch": "delete"}, {"port": 8080, "name": "alt"}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http"}, {"port": 8080, "name": "alt"}])
        );
    }

    #[test]
    fn null_removes_a_field_and_finalizers_merge_as_a_set() {
        let obj = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]}});
        let out = patched(
            obj,
            json!({"metadata": {"labels": {"a": null}, "finalizers": ["y", "x"]}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
        let out = patched(
            out,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["y"]));
    }

    #[test]
    fn replace_directive_replaces_a_map() {
        let obj = json!({"spec": {"selector": {"a": "1", "b": "2"}}});
        let out = patched(
            obj,
            json!({"spec": {"selector": {"c": "3", "$patch": "replace"}}}),
        );
        assert_eq!(out["spec"]["selector"], json!({"c": "3"}));
    }
}
