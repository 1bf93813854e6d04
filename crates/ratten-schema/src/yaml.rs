//! A YAML document as a tree whose every node knows its line and column, built from
//! yaml-rust2's event stream (its own tree forgets positions).

use std::path::Path;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::{DeclError, Location};

/// 1-based line and column of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mark {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone)]
pub enum Node {
    Scalar {
        value: String,
        /// Quoted scalars are always strings; plain ones may be booleans, numbers, null.
        quoted: bool,
        mark: Mark,
    },
    Seq(Vec<Node>, Mark),
    Map(Vec<(Node, Node)>, Mark),
}

impl Node {
    pub fn mark(&self) -> Mark {
        match self {
            // yaml-rust2 marks a block mapping at its first ':'; its first key is where a
            // reader sees it start.
            Node::Map(entries, mark) => entries.first().map_or(*mark, |(k, _)| k.mark()),
            Node::Scalar { mark, .. } | Node::Seq(_, mark) => *mark,
        }
    }

    /// A plain or quoted scalar's text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }

    /// YAML 1.1 booleans as PyYAML reads them (`True`, `true`, `False`, ...).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Scalar {
                value,
                quoted: false,
                ..
            } => match value.as_str() {
                "True" | "true" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
                "False" | "false" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
                    Some(false)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether this is YAML null (`~`, `null`, empty).
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Scalar { value, quoted: false, .. }
            if matches!(value.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// What kind of node it is, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Node::Scalar { .. } if self.as_bool().is_some() => "a boolean",
            Node::Scalar { .. } if self.is_null() => "null",
            Node::Scalar { .. } => "a string",
            Node::Seq(..) => "a list",
            Node::Map(..) => "a mapping",
        }
    }
}

enum Frame {
    Seq(Vec<Node>, Mark),
    Map(Vec<(Node, Node)>, Option<Node>, Mark),
}

struct Builder {
    stack: Vec<Frame>,
    docs: Vec<Node>,
    error: Option<(Mark, String)>,
}

fn mark_of(m: &Marker) -> Mark {
    // yaml-rust2 counts lines from 1 and columns from 0.
    Mark {
        line: m.line(),
        column: m.col() + 1,
    }
}

impl Builder {
    fn push(&mut self, node: Node) {
        match self.stack.last_mut() {
            Some(Frame::Seq(items, _)) => items.push(node),
            Some(Frame::Map(entries, key, _)) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => *key = Some(node),
            },
            None => self.docs.push(node),
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, m: Marker) {
        let mark = mark_of(&m);
        match ev {
            Event::Scalar(value, style, _, _) => self.push(Node::Scalar {
                value,
                quoted: style != TScalarStyle::Plain,
                mark,
            }),
            Event::SequenceStart(..) => self.stack.push(Frame::Seq(Vec::new(), mark)),
            Event::MappingStart(..) => self.stack.push(Frame::Map(Vec::new(), None, mark)),
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq(items, mk)) => self.push(Node::Seq(items, mk)),
                Some(Frame::Map(entries, _, mk)) => self.push(Node::Map(entries, mk)),
                None => {}
            },
            Event::Alias(_) => {
                if self.error.is_none() {
                    self.error = Some((mark, "YAML aliases are not supported here".into()));
                }
                self.push(Node::Scalar {
                    value: String::new(),
                    quoted: false,
                    mark,
                });
            }
            _ => {}
        }
    }
}

/// Parses YAML text into its first document (null for an empty file).
pub fn parse(text: &str, file: &Path) -> Result<Node, DeclError> {
    let mut b = Builder {
        stack: Vec::new(),
        docs: Vec::new(),
        error: None,
    };
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut b, false) {
        let m = mark_of(e.marker());
        return Err(DeclError::new(
            Location {
                file: file.to_path_buf(),
                line: m.line,
                column: m.column,
            },
            format!("invalid YAML: {}", e.info()),
        ));
    }
    if let Some((m, msg)) = b.error {
        return Err(DeclError::new(
            Location {
                file: file.to_path_buf(),
                line: m.line,
                column: m.column,
            },
            msg,
        ));
    }
    Ok(b.docs.into_iter().next().unwrap_or(Node::Scalar {
        value: String::new(),
        quoted: false,
        mark: Mark { line: 1, column: 1 },
    }))
}

/// Adds `lines` to every mark of a tree parsed from a later part of a file.
fn shift_lines(n: &mut Node, lines: usize) {
    match n {
        Node::Scalar { mark, .. } => mark.line += lines,
        Node::Seq(items, mark) => {
            mark.line += lines;
            items.iter_mut().for_each(|i| shift_lines(i, lines));
        }
        Node::Map(entries, mark) => {
            mark.line += lines;
            for (k, v) in entries {
                shift_lines(k, lines);
                shift_lines(v, lines);
            }
        }
    }
}

/// Byte offsets where a top-level sequence may be cut into pieces that are YAML
/// documents of their own: lines starting with `- ` at column 0 when the document is a
/// top-level block sequence (block scalars and continuation lines inside an item are
/// indented, so such a line always starts a new item).
fn item_starts(text: &str) -> Option<Vec<usize>> {
    let first = text
        .lines()
        .map(str::trim_end)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    if !(first == "-" || first.starts_with("- ")) || text.contains("\n---") || text.contains('\t') {
        return None;
    }
    let mut starts = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("- ") || line.trim_end() == "-" {
            starts.push(at);
        }
        at += line.len();
    }
    Some(starts)
}

/// Parses a YAML document like [`parse`], using up to `threads` threads for a large
/// top-level sequence (cut between items). Any error is reported by a whole-file parse,
/// so messages and marks are the same as [`parse`]'s.
pub fn parse_parallel(text: &str, file: &Path, threads: usize) -> Result<Node, DeclError> {
    let starts = match item_starts(text) {
        Some(s) if threads > 1 && text.len() > 64 * 1024 && s.len() >= threads * 8 => s,
        _ => return parse(text, file),
    };
    // Cut points: the item starts nearest to equal shares of the text.
    let mut cuts = vec![0];
    for k in 1..threads {
        let target = text.len() * k / threads;
        let i = starts.partition_point(|&s| s < target);
        if let Some(&c) = starts.get(i) {
            if c > *cuts.last().unwrap_or(&0) {
                cuts.push(c);
            }
        }
    }
    cuts.push(text.len());
    let pieces: Vec<(usize, &str)> = cuts
        .windows(2)
        .map(|w| (text[..w[0]].matches('\n').count(), &text[w[0]..w[1]]))
        .collect();
    let results: Vec<Result<Node, DeclError>> = std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .iter()
            .map(|&(line0, piece)| {
                s.spawn(move || {
                    let mut n = parse(piece, file)?;
                    shift_lines(&mut n, line0);
                    Ok(n)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(DeclError::new(
                        Location::default(),
                        "YAML parser thread panicked",
                    ))
                })
            })
            .collect()
    });
    let mut items = Vec::new();
    let mut mark = None;
    for r in results {
        match r {
            Ok(Node::Seq(mut xs, m)) => {
                mark.get_or_insert(m);
                items.append(&mut xs);
            }
            // A piece that is not a sequence, or any error: let the whole-file parse
            // decide and report.
            _ => return parse(text, file),
        }
    }
    Ok(Node::Seq(
        items,
        mark.unwrap_or(Mark { line: 1, column: 1 }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_one_based() {
        let n = parse("- func: a\n  structured: True\n", Path::new("x.yaml")).unwrap();
        let Node::Seq(items, m) = n else {
            panic!("expected a list")
        };
        assert_eq!(m, Mark { line: 1, column: 1 });
        assert_eq!(items[0].mark(), Mark { line: 1, column: 3 });
        let Node::Map(entries, _) = &items[0] else {
            panic!("expected a mapping")
        };
        assert_eq!(entries[0].0.as_str(), Some("func"));
        assert_eq!(entries[0].1.mark(), Mark { line: 1, column: 9 });
        assert_eq!(entries[1].1.as_bool(), Some(true));
        assert_eq!(entries[1].0.mark(), Mark { line: 2, column: 3 });
    }

    #[test]
    fn bad_yaml_names_the_place() {
        let e = parse("- a: [1, 2\n", Path::new("bad.yaml")).unwrap_err();
        assert!(e.location.line >= 1);
        assert!(e.message.contains("invalid YAML"), "{e}");
        let e = parse("- &x a\n- *x\n", Path::new("alias.yaml")).unwrap_err();
        assert!(e.message.contains("aliases"));
        assert_eq!(e.location.line, 2);
    }

    #[test]
    fn parallel_parse_matches_whole_parse() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/pytorch/native_functions.yaml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let a = parse(&text, Path::new("n")).unwrap();
        let b = parse_parallel(&text, Path::new("n"), 4).unwrap();
        let (Node::Seq(xa, _), Node::Seq(xb, _)) = (&a, &b) else {
            panic!("expected sequences")
        };
        assert_eq!(xa.len(), xb.len());
        for (x, y) in xa.iter().zip(xb) {
            assert_eq!(x.mark(), y.mark());
            assert_eq!(format!("{x:?}"), format!("{y:?}"));
        }
        // Errors come from the whole-file parse.
        let bad = format!("{text}\n- func: [unclosed\n");
        let e1 = parse(&bad, Path::new("n")).unwrap_err();
        let e2 = parse_parallel(&bad, Path::new("n"), 4).unwrap_err();
        assert_eq!(e1, e2);
    }

    #[test]
    fn quoted_scalars_are_strings() {
        let n = parse("a: 'True'\nb: ~\n", Path::new("q.yaml")).unwrap();
        let Node::Map(entries, _) = n else {
            panic!("expected a mapping")
        };
        assert_eq!(entries[0].1.as_bool(), None);
        assert!(entries[1].1.is_null());
        assert_eq!(entries[0].1.kind_name(), "a string");
    }
}
