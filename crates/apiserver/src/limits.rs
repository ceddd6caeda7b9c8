//! Bounds on what the server, and the manifest loader built on it, agree to read.
//!
//! Parsers spend time and memory in proportion to nesting as well as size: a YAML document
//! nested 40,000 levels deep kept `plan` busy for six seconds (the time grows with the square
//! of the depth) before the parser's own recursion limit refused it. [`check_nesting`] walks
//! the text once, linearly, and stops at the first line that nests deeper than the limit, so
//! hostile input is turned away before any parser sees it. Request bodies are also capped at
//! [`MAX_BODY_BYTES`], kube-apiserver's limit.

/// The largest request body the server reads: 3 MiB, kube-apiserver's default
/// (`--max-request-body-bytes`). Larger bodies get a 413 `RequestEntityTooLarge`.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The deepest nesting of collections accepted in a request body or manifest: 128, the
/// recursion limit `serde_json` enforces anyway. Real objects stay far below it (a pod with
/// env references is about ten levels deep; large CRD schemas a few dozen).
pub const MAX_NESTING: usize = 128;

/// Text nested deeper than the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nested deeper than {limit} levels (at line {line})")]
pub struct TooDeep {
    /// The limit that was passed.
    pub limit: usize,
    /// The 1-based line where the limit was passed.
    pub line: usize,
}

/// Checks that YAML or JSON `text` nests no deeper than `limit` collections, in one pass.
///
/// The count is an estimate that errs on the high side, made without parsing: every flow
/// collection (`[`, `{`) counts, and so does every deeper indentation of a block collection,
/// including compact nested sequences (`- - - x`). Quoted scalars, comments and block scalars
/// (`|`, `>`) are skipped, so brackets in text do not count.
pub fn check_nesting(text: &[u8], limit: usize) -> Result<(), TooDeep> {
    let mut scanner = Scanner::default();
    for (index, line) in text.split(|b| *b == b'\n').enumerate() {
        if scanner.line(line, limit) > limit {
            return Err(TooDeep {
                limit,
                line: index + 1,
            });
        }
    }
    Ok(())
}

/// The state carried from one line to the next.
#[derive(Debug, Default)]
struct Scanner {
    /// Columns of the open block collections, innermost last.
    blocks: Vec<usize>,
    /// How many flow collections are open.
    flow: usize,
    /// The quote of a quoted scalar that continues on the next line.
    quote: Option<u8>,
    /// The indentation of the line that opened a block scalar: deeper lines are its text.
    block_scalar: Option<usize>,
}

/// Whether a quote or bracket after `prev` starts a new token (rather than sitting inside a
/// plain scalar such as `don't` or `app[1]`).
fn starts_token(prev: u8) -> bool {
    matches!(prev, b' ' | b'\t' | b'[' | b'{' | b',' | b':' | b'-' | b'?')
}

impl Scanner {
    fn depth(&self) -> usize {
        self.blocks.len() + self.flow
    }

    /// Enters the block collection at `column`, leaving the deeper ones.
    fn open_block(&mut self, column: usize) {
        while self.blocks.last().is_some_and(|c| *c > column) {
            self.blocks.pop();
        }
        if self.blocks.last() != Some(&column) {
            self.blocks.push(column);
        }
    }

    /// Reads one line and returns the deepest nesting on it. Stops reading the line once it
    /// passes `limit`, so one enormous line costs no more than its length.
    fn line(&mut self, line: &[u8], limit: usize) -> usize {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let indent = line.iter().take_while(|b| **b == b' ').count();
        let blank = line[indent..].iter().all(u8::is_ascii_whitespace);
        if let Some(parent) = self.block_scalar {
            if blank || indent > parent {
                return self.depth();
            }
            self.block_scalar = None;
        }
        if blank {
            return self.depth();
        }
        let mut column = indent;
        if self.quote.is_none() && self.flow == 0 {
            match &line[indent..] {
                [b'#', ..] => return self.depth(),
                [b'-', b'-', b'-', ..] | [b'.', b'.', b'.', ..] if indent == 0 => {
                    self.blocks.clear();
                    return 0;
                }
                _ => {}
            }
            self.open_block(column);
            // Compact nested sequences: each "- " opens a collection one step to the right.
            while line.get(column) == Some(&b'-') && line.get(column + 1).is_none_or(|b| *b == b' ')
            {
                column += 1;
                while line.get(column) == Some(&b' ') {
                    column += 1;
                }
                if column < line.len() && line[column] != b'#' {
                    self.open_block(column);
                }
                if self.depth() > limit {
                    return self.depth();
                }
            }
        }
        let mut deepest = self.depth();
        let mut prev = b' ';
        let mut content_end = line.len();
        let mut i = column;
        while i < line.len() {
            let c = line[i];
            match self.quote {
                Some(b'"') if c == b'\\' => i += 1,
                Some(q) if c == q => {
                    if q == b'\'' && line.get(i + 1) == Some(&b'\'') {
                        i += 1; // '' is an escaped quote
                    } else {
                        self.quote = None;
                    }
                }
                Some(_) => {}
                None => match c {
                    b'#' if prev == b' ' || prev == b'\t' => {
                        content_end = i;
                        break;
                    }
                    b'"' | b'\'' if starts_token(prev) => self.quote = Some(c),
                    b'[' | b'{' if self.flow > 0 || starts_token(prev) => {
                        self.flow += 1;
                        deepest = deepest.max(self.depth());
                        if deepest > limit {
                            return deepest;
                        }
                    }
                    b']' | b'}' if self.flow > 0 => self.flow -= 1,
                    _ => {}
                },
            }
            prev = c;
            i += 1;
        }
        if self.quote.is_none() && self.flow == 0 && opens_block_scalar(&line[..content_end]) {
            self.block_scalar = Some(indent);
        }
        deepest
    }
}

/// Whether a line ends with a block scalar indicator (`|`, `>-`, `|+2`, ...).
fn opens_block_scalar(content: &[u8]) -> bool {
    let trimmed = content.trim_ascii_end();
    let indicator = trimmed
        .iter()
        .rposition(|b| matches!(b, b'|' | b'>'))
        .filter(|at| {
            trimmed[at + 1..]
                .iter()
                .all(|b| matches!(b, b'+' | b'-' | b'1'..=b'9'))
        });
    indicator.is_some_and(|at| at == 0 || starts_token(trimmed[at - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str, limit: usize) -> bool {
        check_nesting(text.as_bytes(), limit).is_ok()
    }

    #[test]
    fn ordinary_manifests_are_far_below_the_limit() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  containers:\n  - name: c\n    ports:\n    - containerPort: 80\n      name: http\n";
        assert!(depth_ok(pod, 6));
        assert!(!depth_ok(pod, 3));
        let json =
            r#"{"kind": "Pod", "spec": {"containers": [{"ports": [{"containerPort": 80}]}]}}"#;
        // Six brackets, plus the top level every document has.
        assert!(depth_ok(json, 7));
        assert!(!depth_ok(json, 6));
    }

    #[test]
    fn flow_and_compact_sequences_count_as_levels() {
        assert_eq!(
            check_nesting(b"a: [[[[1]]]]", 4),
            Err(TooDeep { limit: 4, line: 1 })
        );
        assert!(depth_ok("a: [[[1]]]", 4));
        assert!(!depth_ok("- - - - - x", 4));
        assert!(depth_ok("- - - x", 4));
    }

    #[test]
    fn brackets_in_text_do_not_count() {
        let text =
            "a: \"[[[[[[\"\nb: '{{{{{{'\nc: app[1]\nd: |\n  [[[[[[[[\n  {{{{{{{\ne: x # [[[[[[[\n";
        assert!(depth_ok(text, 2));
    }

    #[test]
    fn the_failing_line_is_reported() {
        let text = "a: 1\nb:\n  c:\n    d: [[[[[[1]]]]]]\n";
        assert_eq!(
            check_nesting(text.as_bytes(), 5),
            Err(TooDeep { limit: 5, line: 4 })
        );
    }
}
