//! tags.yaml: the tags an operator may carry.

use std::path::Path;

use crate::error::{DeclError, DeclErrors, Location};
use crate::yaml::{self, Node};

/// One tag of tags.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub desc: String,
    pub loc: Location,
}

/// The tags of tags.yaml, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags {
    pub tags: Vec<Tag>,
}

impl Tags {
    pub fn contains(&self, name: &str) -> bool {
        self.tags.iter().any(|t| t.name == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().map(|t| t.name.as_str())
    }

    /// Reads tags.yaml.
    pub fn load(path: &Path) -> Result<Tags, DeclErrors> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            DeclError::new(
                Location {
                    file: path.to_path_buf(),
                    line: 0,
                    column: 0,
                },
                format!("cannot read file: {e}"),
            )
        })?;
        Tags::parse(&text, path)
    }

    /// Parses the text of a tags.yaml; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Tags, DeclErrors> {
        let root = yaml::parse(text, file)?;
        let loc = |n: &Node| {
            let m = n.mark();
            Location {
                file: file.to_path_buf(),
                line: m.line,
                column: m.column,
            }
        };
        let Node::Seq(items, _) = &root else {
            return Err(DeclError::new(
                loc(&root),
                format!("expected a list of tags, found {}", root.kind_name()),
            )
            .into());
        };
        let mut errors = Vec::new();
        let mut tags: Vec<Tag> = Vec::new();
        for item in items {
            let Node::Map(entries, _) = item else {
                errors.push(DeclError::new(
                    loc(item),
                    format!(
                        "expected a mapping with 'tag' and 'desc', found {}",
                        item.kind_name()
                    ),
                ));
                continue;
            };
            let mut name = None;
            let mut desc = None;
            for (k, v) in entries {
                match k.as_str() {
                    Some("tag") => match v.as_str() {
                        Some(s) if !s.is_empty() => name = Some(s.to_string()),
                        _ => errors.push(DeclError::new(
                            loc(v),
                            format!("'tag' must be a non-empty string, found {}", v.kind_name()),
                        )),
                    },
                    Some("desc") => match v.as_str() {
                        Some(s) => desc = Some(s.to_string()),
                        None => errors.push(DeclError::new(
                            loc(v),
                            format!("'desc' must be a string, found {}", v.kind_name()),
                        )),
                    },
                    Some(other) => errors.push(DeclError::new(
                        loc(k),
                        format!("unknown key '{other}' in a tag (expected 'tag' or 'desc')"),
                    )),
                    None => errors.push(DeclError::new(loc(k), "expected a string key")),
                }
            }
            match (name, desc) {
                (Some(name), Some(desc)) => {
                    if tags.iter().any(|t| t.name == name) {
                        errors.push(DeclError::new(loc(item), format!("duplicate tag '{name}'")));
                    }
                    tags.push(Tag {
                        name,
                        desc,
                        loc: loc(item),
                    });
                }
                (None, _) => errors.push(DeclError::new(loc(item), "missing key 'tag'")),
                (_, None) => errors.push(DeclError::new(loc(item), "missing key 'desc'")),
            }
        }
        if errors.is_empty() {
            Ok(Tags { tags })
        } else {
            Err(DeclErrors(errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let t = Tags::parse(
            "- tag: core\n  desc: |\n    x\n- tag: pointwise\n  desc: y\n",
            Path::new("t.yaml"),
        )
        .unwrap();
        assert_eq!(t.names().collect::<Vec<_>>(), ["core", "pointwise"]);
        assert!(t.contains("core") && !t.contains("nope"));
        let e =
            Tags::parse("- tag: a\n  desc: b\n  color: red\n", Path::new("t.yaml")).unwrap_err();
        assert!(e.0[0].message.contains("unknown key 'color'"));
        assert_eq!((e.0[0].location.line, e.0[0].location.column), (3, 3));
        let e = Tags::parse("- desc: b\n", Path::new("t.yaml")).unwrap_err();
        assert!(e.0[0].message.contains("missing key 'tag'"));
        let e = Tags::parse(
            "- tag: a\n  desc: b\n- tag: a\n  desc: c\n",
            Path::new("t.yaml"),
        )
        .unwrap_err();
        assert!(e.0[0].message.contains("duplicate tag 'a'"));
        assert!(Tags::parse("tag: a\n", Path::new("t.yaml")).is_err());
    }
}
