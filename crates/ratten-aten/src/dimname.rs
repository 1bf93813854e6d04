//! `Dimname` (ATen/core/Dimname.h): the name of a dimension, the Rust type of the schema type
//! `Dimname` (a `str` to the dispatcher, as in c10).

use std::fmt;
use std::sync::Arc;

use ratten_core::{Error, Result};
use ratten_dispatch::{IValue, KernelValue};
use ratten_schema::Type;

/// Whether a name is a plain identifier or the wildcard `*` (c10's `NameType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameType {
    Basic,
    Wildcard,
}

/// A dimension name: an identifier, or the wildcard `*` that matches any name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dimname {
    name: Arc<str>,
    kind: NameType,
}

impl Dimname {
    /// `Dimname::fromSymbol`: `*` is the wildcard; any other name must be an identifier
    /// (digits, letters and underscores, not starting with a digit).
    pub fn new(name: &str) -> Result<Dimname> {
        if name == "*" {
            return Ok(Dimname::wildcard());
        }
        if !Dimname::is_valid_name(name) {
            return Err(Error::runtime(format!(
                "Invalid name: a valid identifier contains only digits, alphabetical characters and/or underscore and starts with a non-digit. got: '{name}'."
            )));
        }
        Ok(Dimname {
            name: Arc::from(name),
            kind: NameType::Basic,
        })
    }

    /// `Dimname::wildcard()`.
    pub fn wildcard() -> Dimname {
        Dimname {
            name: Arc::from("*"),
            kind: NameType::Wildcard,
        }
    }

    /// `Dimname::isValidName`.
    pub fn is_valid_name(name: &str) -> bool {
        let mut chars = name.chars();
        match chars.next() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
            _ => false,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> NameType {
        self.kind
    }

    pub fn is_wildcard(&self) -> bool {
        self.kind == NameType::Wildcard
    }
}

impl fmt::Display for Dimname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A `Dimname` argument travels as a string, as c10 stores it.
impl KernelValue for Dimname {
    type Ref<'a> = &'a Dimname;
    fn schema_type() -> Type {
        Type::Dimname
    }
    fn ref_to_ivalue(r: &&Dimname) -> IValue {
        IValue::String(r.name.clone())
    }
    fn into_ivalue(self) -> IValue {
        IValue::String(self.name)
    }
    fn from_ivalue(v: IValue) -> Result<Dimname> {
        match v {
            IValue::String(s) => Dimname::new(&s),
            other => Err(Error::runtime(format!(
                "Expected String but got {}",
                other.tag_kind()
            ))),
        }
    }
    fn borrow(&self) -> &Dimname {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_identifiers_or_the_wildcard() {
        assert_eq!(Dimname::new("batch").unwrap().name(), "batch");
        assert!(Dimname::new("*").unwrap().is_wildcard());
        assert!(!Dimname::new("_c1").unwrap().is_wildcard());
        let e = Dimname::new("1x").unwrap_err().to_string();
        assert!(e.contains("got: '1x'"), "{e}");
        assert!(Dimname::new("a-b").is_err());
        assert!(Dimname::new("").is_err());
    }

    #[test]
    fn dimnames_box_as_strings() {
        let d = Dimname::new("N").unwrap();
        let v = <Dimname as KernelValue>::ref_to_ivalue(&&d);
        assert!(matches!(&v, IValue::String(s) if &**s == "N"));
        assert_eq!(Dimname::from_ivalue(v).unwrap(), d);
        assert!(Dimname::from_ivalue(IValue::Int(1)).is_err());
    }
}
