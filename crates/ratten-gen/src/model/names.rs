//! Rust names: identifiers of schema names, the public API's function names per overload,
//! the handle names (torchgen's unambiguous names) and kernel function names.

use std::collections::{BTreeMap, BTreeSet};

use ratten_schema::native::{NativeFunction, NativeFunctions, SchemaKind};

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
];

/// Overload names that add no suffix: the primary overload of an operator (`transpose.int` ->
/// `transpose`, `flatten.using_ints` -> `flatten`, `empty.memory_format` -> `empty`, as C++
/// calls them). `Tensor` and `int` give way to an overload without a name ([`api_names`]).
pub const PRIMARY_OVERLOADS: &[&str] = &[
    "",
    "Tensor",
    "default",
    "self",
    "input",
    "int",
    "using_ints",
    "memory_format",
];

/// Primary overload names that keep their suffix when the operator also has an overload
/// without a name (`clamp` and `clamp.Tensor`, `movedim`... ).
const YIELDING_OVERLOADS: &[&str] = &["Tensor", "int"];

/// A schema name as a Rust identifier (`self` -> `self_`).
pub fn ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A Rust keyword used as a function name (`where`) as a raw identifier (`r#where`).
pub fn raw_ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// `dim_IntList` -> `dim_int_list`, `Scalar` -> `scalar`, `Tensor_out` -> `tensor_out`.
pub fn snake(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = if i > 0 { Some(chars[i - 1]) } else { None };
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if let Some(p) = prev {
                if p != '_' && (p.is_ascii_lowercase() || p.is_ascii_digit() || next_lower) {
                    out.push('_');
                }
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// torchgen's `OperatorName.unambiguous_name()`: `add_Tensor`, `add__Tensor`, `neg`.
pub fn unambiguous_name(f: &NativeFunction) -> String {
    if f.func.name.overload_name.is_empty() {
        f.func.name.name.clone()
    } else {
        format!("{}_{}", f.func.name.name, f.func.name.overload_name)
    }
}

/// Operator names (`clamp`, `clamp_`) whose functional or in-place form has an overload
/// without a name, so that their `Tensor` overloads need the suffix.
pub fn names_with_unnamed_overload(nf: &NativeFunctions) -> BTreeSet<String> {
    nf.functions
        .iter()
        .filter(|f| f.kind() != SchemaKind::Out && f.func.name.overload_name.is_empty())
        .map(|f| f.func.name.name.clone())
        .collect()
}

/// The overload's suffix as the Rust names use it (`Scalar_out` -> `_scalar`, `Tensor` -> ``,
/// or `_tensor` when `tensor_is_primary` is false, as [`api_names`] has it).
fn overload_suffix(f: &NativeFunction, tensor_is_primary: bool) -> String {
    let ov = f.func.name.overload_name.as_str();
    let ov = ov.strip_suffix("_out").unwrap_or(ov);
    let ov = if ov == "out" { "" } else { ov };
    if PRIMARY_OVERLOADS.contains(&ov) && (tensor_is_primary || !YIELDING_OVERLOADS.contains(&ov)) {
        String::new()
    } else {
        format!("_{}", snake(ov))
    }
}

/// The Rust name of a kernel the yaml names for `f`. C++ overloads one kernel name across
/// several overloads (`div` for `div.Scalar` and `div.Scalar_mode`); Rust cannot, so a name
/// shared by several overloads gets each overload's suffix, placed as the API names place it
/// (`fill_` -> `fill_scalar_`, `remainder_out` -> `remainder_scalar_out`). Kernel names are
/// snake case (`eq_Scalar_out` -> `eq_scalar_out`) and keywords raw (`r#where`).
/// `tensor_is_primary` as for [`api_names`]: `clip` and `clip.Tensor`, both kernel `clip`,
/// become `clip` and `clip_tensor`.
pub fn kernel_ident(
    kernel: &str,
    f: &NativeFunction,
    shared: bool,
    tensor_is_primary: bool,
) -> String {
    let k = snake(kernel);
    if !shared {
        return raw_ident(&k);
    }
    let suffix = overload_suffix(f, tensor_is_primary);
    let name = if let Some(stem) = k.strip_suffix("_out") {
        format!("{stem}{suffix}_out")
    } else if let Some(stem) = k.strip_suffix('_').filter(|s| !s.ends_with('_')) {
        format!("{stem}{suffix}_")
    } else {
        format!("{k}{suffix}")
    };
    raw_ident(&name)
}

/// Kernel names (as the yaml spells them) used by more than one overload.
pub fn shared_kernel_names(nf: &NativeFunctions) -> BTreeSet<String> {
    let mut users: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for f in &nf.functions {
        for b in &f.dispatch {
            users
                .entry(b.kernel.as_str())
                .or_default()
                .insert(f.func.name.to_string());
        }
    }
    users
        .into_iter()
        .filter(|(_, fs)| fs.len() > 1)
        .map(|(k, _)| k.to_string())
        .collect()
}

/// The Rust names of one function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiNames {
    /// The short form (`add`, `add_scalar`, `add_`, `add_out`).
    pub short: String,
    /// The form taking every argument (`add_with`, `add_with_`, `add_out_with`), used when
    /// some argument has a default.
    pub with: String,
    /// The backend direct function (`add`, `add_`, `add_outf`), schema order.
    pub backend: String,
}

/// The Rust names of `f`. `tensor_is_primary`: whether the `Tensor` overload may take the
/// bare name (not when the operator also has an overload without a name: `clamp` vs
/// `clamp.Tensor` -> `clamp_tensor`).
pub fn api_names(f: &NativeFunction, tensor_is_primary: bool) -> ApiNames {
    let base = f.func.name.name.clone();
    let (stem, inplace) = match base.strip_suffix('_') {
        Some(s) if !s.ends_with('_') && f.kind() == SchemaKind::Inplace => (s.to_string(), true),
        _ => (base.clone(), false),
    };
    let is_out = f.kind() == SchemaKind::Out;
    // `out`, `Scalar_out`, `values` (max.dim_max's), ...: the `_out` suffix says it.
    let suffix = overload_suffix(f, tensor_is_primary);
    let mut name = format!("{stem}{suffix}");
    if is_out {
        name.push_str("_out");
    }
    let (mut short, mut with) = if inplace {
        (format!("{name}_"), format!("{name}_with_"))
    } else {
        (name.clone(), format!("{name}_with"))
    };
    // torchgen's `manual_cpp_binding`: the public `contiguous` is written by hand and calls
    // the generated `__dispatch_contiguous` when it must.
    if f.manual_cpp_binding {
        short = format!("__dispatch_{short}");
        with = format!("__dispatch_{with}");
    }
    let backend = if is_out {
        format!("{name}f")
    } else {
        short.clone()
    };
    ApiNames {
        short: raw_ident(&short),
        with,
        backend: raw_ident(&backend),
    }
}

/// The shard a generated file holds an operator in: the first letter of its name without
/// leading underscores (`_foreach_add` -> `f`), or, for a letter holding more than
/// [`SHARD_LIMIT`] overloads, its first two (`si`). See Note [Generated file shards].
pub fn shard_keys<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let names: Vec<&str> = names.into_iter().collect();
    let letter = |n: &str| -> String {
        let s = n.trim_start_matches('_');
        s.chars()
            .next()
            .map(|c| c.to_ascii_lowercase().to_string())
            .unwrap_or_else(|| "_".to_string())
    };
    let mut per_letter: BTreeMap<String, usize> = BTreeMap::new();
    for n in &names {
        *per_letter.entry(letter(n)).or_default() += 1;
    }
    names
        .iter()
        .map(|n| {
            let l = letter(n);
            let key = if per_letter[&l] > SHARD_LIMIT {
                let s = n.trim_start_matches('_');
                s.chars()
                    .take(2)
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            c.to_ascii_lowercase()
                        } else {
                            '_'
                        }
                    })
                    .collect()
            } else {
                l
            };
            (n.to_string(), key)
        })
        .collect()
}

/// The most overloads a one-letter shard holds before it is split by two letters.
pub const SHARD_LIMIT: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_of_overload_names() {
        assert_eq!(snake("Scalar"), "scalar");
        assert_eq!(snake("dim_IntList"), "dim_int_list");
        assert_eq!(snake("Tensor_Scalar"), "tensor_scalar");
        assert_eq!(snake("self_int"), "self_int");
        assert_eq!(snake("SymInt"), "sym_int");
    }

    #[test]
    fn keywords_get_an_underscore() {
        assert_eq!(ident("self"), "self_");
        assert_eq!(ident("type"), "type_");
        assert_eq!(ident("other"), "other");
        assert_eq!(raw_ident("where"), "r#where");
    }

    #[test]
    fn shards_are_letters_until_a_letter_is_full() {
        let mut names: Vec<String> = vec!["add".into(), "_foreach_add".into(), "abs".into()];
        names.extend((0..SHARD_LIMIT).map(|i| format!("s{i}x")));
        names.push("sin".into());
        let keys = shard_keys(names.iter().map(String::as_str));
        assert_eq!(keys["add"], "a");
        assert_eq!(keys["abs"], "a");
        assert_eq!(keys["_foreach_add"], "f");
        assert_eq!(keys["sin"], "si");
        assert_eq!(keys["s1x"], "s1");
    }
}
