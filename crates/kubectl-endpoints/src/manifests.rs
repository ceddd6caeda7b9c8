//! Reading Kubernetes objects from YAML or JSON files and directories.

use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A manifest problem, naming the file and the document.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file or directory could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text nests deeper than any object needs; refused before parsing, whose time
    /// grows with the square of the depth.
    #[error("{path}: {source}")]
    TooDeep {
        /// The file.
        path: PathBuf,
        /// The limit and the line that passed it.
        source: apiserver::limits::TooDeep,
    },
    /// The file is larger than any manifest this tool reads in one piece.
    #[error(
        "{path}: {size} bytes is more than the {limit} bytes a manifest file may hold; split it into several files"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size, or at least how much of it was read before giving up.
        size: u64,
        /// [`MAX_FILE_BYTES`].
        limit: u64,
    },
    /// A document is not valid YAML/JSON or not a valid object of its kind.
    #[error("{path}: document {index}: {message}")]
    Document {
        /// The file.
        path: PathBuf,
        /// 1-based document number in the file.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

/// One object of a kind the controllers read.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "objects are read once and handed on; boxing buys nothing"
)]
pub enum Object {
    /// A Namespace.
    Namespace(Namespace),
    /// A Node.
    Node(Node),
    /// A Service.
    Service(Service),
    /// A Pod.
    Pod(Pod),
    /// A v1 Endpoints.
    Endpoints(Endpoints),
    /// A discovery.k8s.io/v1 EndpointSlice.
    EndpointSlice(EndpointSlice),
}

impl Object {
    /// The object as JSON with its apiVersion and kind, as the API server loads it.
    pub fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        match self {
            Object::Namespace(x) => serde_json::to_value(x),
            Object::Node(x) => serde_json::to_value(x),
            Object::Service(x) => serde_json::to_value(x),
            Object::Pod(x) => serde_json::to_value(x),
            Object::Endpoints(x) => serde_json::to_value(x),
            Object::EndpointSlice(x) => serde_json::to_value(x),
        }
    }
}

/// The objects as JSON, in order, as the API server loads them, each typed object dropped
/// as soon as it is converted (a large cluster state is not held twice).
pub fn into_values(objects: Vec<Object>) -> serde_json::Result<Vec<serde_json::Value>> {
    objects.into_iter().map(|o| o.to_value()).collect()
}

/// The objects as JSON, in order, as the API server loads them.
pub fn to_values(objects: &[Object]) -> serde_json::Result<Vec<serde_json::Value>> {
    objects.iter().map(Object::to_value).collect()
}

/// What was read, with notes about skipped documents.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Objects in file order.
    pub objects: Vec<Object>,
    /// Skipped documents (other kinds), as `file: document N: kind X skipped`.
    pub notes: Vec<String>,
}

/// The largest manifest file read: a dump of 200,000 pods is about 60 MB of JSON, and each
/// megabyte read costs several more as parsed objects.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Reads every file given (directories recursively, `.yaml`, `.yml` and `.json` files in
/// name order).
pub fn load_paths(paths: &[PathBuf]) -> Result<Loaded, ManifestError> {
    load_paths_within(paths, MAX_FILE_BYTES)
}

fn load_paths_within(paths: &[PathBuf], limit: u64) -> Result<Loaded, ManifestError> {
    let mut loaded = Loaded::default();
    for path in paths {
        for file in files_under(path)? {
            let text = read_within(&file, limit)?;
            load_text(&file, &text, &mut loaded)?;
        }
    }
    Ok(loaded)
}

/// The file's text, refused past `limit` bytes. The size is checked before reading, and the
/// read itself stops one byte past the limit, for files whose size the metadata does not tell
/// (pipes, `/dev/stdin`).
fn read_within(file: &Path, limit: u64) -> Result<String, ManifestError> {
    use std::io::Read;
    let read_error = |source| ManifestError::Read {
        path: file.to_owned(),
        source,
    };
    let too_large = |size| ManifestError::TooLarge {
        path: file.to_owned(),
        size,
        limit,
    };
    let handle = std::fs::File::open(file).map_err(read_error)?;
    let size = handle.metadata().map_err(read_error)?.len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut text = String::new();
    handle
        .take(limit + 1)
        .read_to_string(&mut text)
        .map_err(read_error)?;
    if text.len() as u64 > limit {
        return Err(too_large(text.len() as u64));
    }
    Ok(text)
}

fn files_under(path: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let meta = std::fs::metadata(path).map_err(|source| ManifestError::Read {
        path: path.to_owned(),
        source,
    })?;
    if meta.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|source| ManifestError::Read {
            path: path.to_owned(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let mut files = Vec::new();
    for entry in entries {
        if entry.is_dir() {
            files.extend(files_under(&entry)?);
        } else if matches!(
            entry.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            files.push(entry);
        }
    }
    Ok(files)
}

/// Parses the documents of one file's text into `loaded`.
pub fn load_text(path: &Path, text: &str, loaded: &mut Loaded) -> Result<(), ManifestError> {
    use apiserver::limits::{check_nesting, MAX_NESTING};
    check_nesting(text.as_bytes(), MAX_NESTING).map_err(|source| ManifestError::TooDeep {
        path: path.to_owned(),
        source,
    })?;
    let is_json = path.extension().and_then(|e| e.to_str()) == Some("json")
        || text.trim_start().starts_with('{');
    // Each document is typed and dropped before the next is parsed, so a large file is
    // never held as parsed values all at once.
    let mut add = |i: usize, value: Result<serde_json::Value, String>| {
        let index = i + 1;
        let value = value.map_err(|message| ManifestError::Document {
            path: path.to_owned(),
            index,
            message,
        })?;
        if value.is_null() {
            return Ok(()); // an empty document, e.g. a trailing `---`
        }
        add_value(path, index, value, loaded)
    };
    if is_json {
        let stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
        for (i, value) in stream.enumerate() {
            add(i, value.map_err(|e| e.to_string()))?;
        }
    } else {
        // After a syntax error the document iterator may keep yielding the same error, so
        // the first one ends the file.
        for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
            add(
                i,
                serde_json::Value::deserialize(doc).map_err(|e| e.to_string()),
            )?;
        }
    }
    Ok(())
}

fn add_value(
    path: &Path,
    index: usize,
    value: serde_json::Value,
    loaded: &mut Loaded,
) -> Result<(), ManifestError> {
    let err = |message: String| ManifestError::Document {
        path: path.to_owned(),
        index,
        message,
    };
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| err("missing kind".into()))?
        .to_owned();
    if kind == "List" || kind.ends_with("List") {
        // Moved out, not copied: a cluster dump is one List, and each item is dropped as soon
        // as its typed object is made.
        let mut value = value;
        let items = match value.get_mut("items") {
            Some(serde_json::Value::Array(items)) => std::mem::take(items),
            _ => Vec::new(),
        };
        drop(value);
        for item in items {
            add_value(path, index, item, loaded)?;
        }
        return Ok(());
    }
    let known = matches!(
        kind.as_str(),
        "Namespace" | "Node" | "Service" | "Pod" | "Endpoints" | "EndpointSlice"
    );
    if !known {
        loaded.notes.push(format!(
            "{}: document {index}: kind {kind} skipped",
            path.display()
        ));
        return Ok(());
    }
    let has_name = value
        .pointer("/metadata/name")
        .and_then(|n| n.as_str())
        .is_some_and(|n| !n.is_empty());
    if !has_name {
        return Err(err(format!("{kind} without metadata.name")));
    }
    fn typed<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }
    let object = match kind.as_str() {
        "Namespace" => Object::Namespace(typed(value).map_err(err)?),
        "Node" => Object::Node(typed(value).map_err(err)?),
        "Service" => Object::Service(typed(value).map_err(err)?),
        "Pod" => Object::Pod(typed(value).map_err(err)?),
        "Endpoints" => Object::Endpoints(typed(value).map_err(err)?),
        _ => Object::EndpointSlice(typed(value).map_err(err)?),
    };
    loaded.objects.push(object);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_size_limit_is_refused_naming_it_before_it_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big.yaml");
        std::fs::write(
            &file,
            "kind: Namespace\napiVersion: v1\nmetadata: {name: a}\n",
        )
        .unwrap();
        let err = load_paths_within(std::slice::from_ref(&file), 10).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ManifestError::TooLarge { limit: 10, .. }),
            "{text}"
        );
        assert!(
            text.contains("big.yaml") && text.contains("split it"),
            "{text}"
        );
        let loaded = load_paths_within(&[file], 1024).unwrap();
        assert_eq!(loaded.objects.len(), 1);
    }

    #[test]
    fn multi_document_yaml_and_lists_are_read_and_other_kinds_noted() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}\n";
        let mut loaded = Loaded::default();
        load_text(Path::new("x.yaml"), text, &mut loaded).unwrap();
        assert_eq!(loaded.objects.len(), 2);
        assert_eq!(
            loaded.notes,
            vec!["x.yaml: document 3: kind Deployment skipped"]
        );
    }

    #[test]
    fn errors_name_the_file_and_document() {
        let text = "kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {}\n";
        let err = load_text(Path::new("m.yaml"), text, &mut Loaded::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.yaml: document 2: Pod without metadata.name"
        );
        let err = load_text(Path::new("m.yaml"), "a: [", &mut Loaded::default()).unwrap_err();
        assert!(err.to_string().starts_with("m.yaml: document 1: "));
        let err = load_text(
            Path::new("m.yaml"),
            "metadata: {name: a}",
            &mut Loaded::default(),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "m.yaml: document 1: missing kind");
    }

    #[test]
    fn text_nested_past_the_limit_is_refused_naming_the_file_and_line() {
        let depth = 200_000;
        let text = format!(
            "kind: Pod\nmetadata: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let started = std::time::Instant::now();
        let err = load_text(Path::new("deep.yaml"), &text, &mut Loaded::default()).unwrap_err();
        println!("depth {depth} refused in {:?}", started.elapsed());
        assert_eq!(
            err.to_string(),
            "deep.yaml: nested deeper than 128 levels (at line 2)"
        );
    }

    #[test]
    fn json_files_are_read() {
        let text =
            r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"a"}}"#;
        let mut loaded = Loaded::default();
        load_text(Path::new("s.json"), text, &mut loaded).unwrap();
        assert!(matches!(loaded.objects[0], Object::Service(_)));
    }
}
