//! Hostile manifests: whatever the text, loading it ends in objects or in an error that names
//! the file, never in a panic; and text nested far too deep is refused at once.

use crate::cli;
use kubectl_endpoints::manifests::{into_values, load_text, Loaded};
use proptest::prelude::*;
use std::path::Path;
use testkit::process::run;

/// The example manifests shipped with the repository, as seeds for mutation.
fn seeds() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut seeds: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    seeds.push(
        r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"a"},"spec":{"ports":[{"port":80}]}}]}"#
            .to_owned(),
    );
    seeds
}

/// Fragments that mean something to a YAML or JSON parser, and values the typed decoding
/// trips over.
const TOKENS: &[&str] = &[
    "\n",
    "- ",
    ": ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    "\"",
    "#",
    "|",
    ">-",
    "&a ",
    "*a",
    "!!str ",
    "\t",
    "---\n",
    "...\n",
    "? ",
    "kind: List\n",
    "items:\n",
    "null",
    "~",
    "-1",
    "1e400",
    "99999999999999999999",
    "0x1F",
    ".nan",
    "\u{feff}",
    "\\u0000",
    "é",
    "<<: *a\n",
];

/// One edit of the text, at positions taken modulo its length so that any number fits.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Deep(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), prop::sample::select(TOKENS))
            .prop_map(|(at, t)| Edit::Insert(at, t.to_owned())),
        (any::<usize>(), "[ -~]{1,12}").prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), 1usize..256).prop_map(|(at, n)| Edit::Duplicate(at, n)),
        (any::<usize>(), 100usize..300).prop_map(|(at, n)| Edit::Deep(at, n)),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(text: &str, at: usize) -> usize {
    let mut at = at % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &mut String, edit: &Edit) {
    match edit {
        Edit::Insert(at, s) => {
            let at = boundary(text, *at);
            text.insert_str(at, s);
        }
        Edit::Delete(at, n) => {
            let start = boundary(text, *at);
            let end = boundary(text, start + n);
            if end >= start {
                text.replace_range(start..end, "");
            }
        }
        Edit::Duplicate(at, n) => {
            let start = boundary(text, *at);
            let end = boundary(text, start + n).max(start);
            let copy = text[start..end].to_owned();
            text.insert_str(end, &copy);
        }
        Edit::Deep(at, n) => {
            let at = boundary(text, *at);
            text.insert_str(at, &format!("{}{}", "[".repeat(*n), "]".repeat(*n)));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn mutated_manifests_load_or_fail_naming_the_file(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 1..8),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed.index(seeds.len())].clone();
        for e in &edits {
            apply(&mut text, e);
        }
        // Bounded input: the seeds are under 6 KiB and each edit adds at most 600 bytes.
        prop_assert!(text.len() < 16 * 1024);
        let path = Path::new("mutated.yaml");
        let mut loaded = Loaded::default();
        match load_text(path, &text, &mut loaded) {
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.starts_with("mutated.yaml: "), "{message}");
                prop_assert!(message.len() > "mutated.yaml: ".len(), "{message}");
            }
            // What loads is what `dev` and `apiserver -f` hand the embedded server next; it
            // may refuse an object, but must not fall over.
            Ok(()) => {
                let server = apiserver::ApiServer::new(apiserver::Config::default());
                if let Err(e) = server.apply_objects(into_values(loaded.objects).unwrap()) {
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }
}

#[test]
fn plan_refuses_a_manifest_nested_200000_deep_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.yaml");
    let depth = 200_000;
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = run(cli().args(["plan", "-f"]).arg(&path));
    println!("plan refused depth {depth} in {:?}", started.elapsed());
    let refusal = format!(
        "{}: nested deeper than 128 levels (at line 3)",
        path.display()
    );
    out.assert_exit(1, &[&refusal]);
    assert!(out.stdout.is_empty());
}
