//! A small indenting writer whose output rustfmt leaves as it is: templates stay readable,
//! and the checked-in files pass `cargo fmt --check` without a formatter in the loop.
//!
//! Note [Generated code is rustfmt-clean]: the layouts below are rustfmt's (default
//! configuration, `max_width` 100) for the few constructs emitters write: a function header
//! whose parameters do not fit goes one parameter per line; a call whose arguments are wider
//! than `fn_call_width` (60) or do not fit goes one argument per line, or packed onto full
//! lines when all are short simple names (rustfmt's mixed tactic); an assignment whose
//! right-hand side does not fit moves it to the next line when it fits there. Emitters write
//! everything else as short lines. `tests/rustfmt_clean.rs` runs rustfmt over the generated
//! trees to keep this true.

/// rustfmt's `max_width`.
pub const MAX_WIDTH: usize = 100;
/// rustfmt's `fn_call_width` (60% of `max_width`): the widest argument list kept on one line.
pub const FN_CALL_WIDTH: usize = 60;

/// Collects lines at the current indentation (4 spaces a level).
#[derive(Default)]
pub struct Writer {
    out: String,
    depth: usize,
}

impl Writer {
    pub fn new() -> Self {
        Writer::default()
    }

    /// The column the next line starts at.
    pub fn indent(&self) -> usize {
        self.depth * 4
    }

    /// Writes each line of `text` at the current depth (empty lines stay empty).
    pub fn line(&mut self, text: impl AsRef<str>) -> &mut Self {
        for l in text.as_ref().split('\n') {
            if !l.is_empty() {
                for _ in 0..self.depth {
                    self.out.push_str("    ");
                }
                self.out.push_str(l);
            }
            self.out.push('\n');
        }
        self
    }

    pub fn blank(&mut self) -> &mut Self {
        self.out.push('\n');
        self
    }

    /// Writes `open` (ending in `{`), runs `f` one level deeper, then `close`.
    pub fn block(
        &mut self,
        open: impl AsRef<str>,
        close: &str,
        f: impl FnOnce(&mut Writer),
    ) -> &mut Self {
        self.line(open);
        self.depth += 1;
        f(self);
        self.depth -= 1;
        self.line(close)
    }

    pub fn finish(self) -> String {
        self.out
    }

    /// Runs `f` one level deeper.
    pub fn indented(&mut self, f: impl FnOnce(&mut Writer)) -> &mut Self {
        self.depth += 1;
        f(self);
        self.depth -= 1;
        self
    }

    /// A function header: `{head}({params}) -> {ret}{end}` (`end` is ` {` or `;`), one
    /// parameter per line when it does not fit.
    pub fn fn_header(&mut self, head: &str, params: &[String], ret: &str, end: &str) -> &mut Self {
        let arrow = if ret.is_empty() {
            String::new()
        } else {
            format!(" -> {ret}")
        };
        let one = format!("{head}({}){arrow}{end}", params.join(", "));
        if self.indent() + one.len() <= MAX_WIDTH || params.is_empty() {
            return self.line(one);
        }
        self.line(format!("{head}("));
        self.indented(|w| {
            for p in params {
                w.line(format!("{p},"));
            }
        });
        self.line(format!("){arrow}{end}"))
    }

    /// A function with `body` (lines) after [`fn_header`](Self::fn_header).
    pub fn function(&mut self, head: &str, params: &[String], ret: &str, body: &[String]) {
        self.fn_header(head, params, ret, " {");
        self.indented(|w| {
            for l in body {
                w.line(l);
            }
        });
        self.line("}");
    }

    /// A statement `{lhs}{expr}{tail}` laid out as rustfmt does (see [`Expr`]); when `lhs`
    /// is an assignment (`let x = `, `const X: T = `, not `type X = `) and the expression
    /// does not fit after it, it goes on the next line if it fits there on one line.
    pub fn stmt(&mut self, lhs: &str, expr: &Expr, tail: &str) -> &mut Self {
        let base = self.indent();
        let flat = expr.flat();
        let text = if base + lhs.len() + flat.len() + tail.len() <= MAX_WIDTH && expr.narrow() {
            format!("{lhs}{flat}{tail}")
        } else if lhs.ends_with("= ")
            && !lhs.starts_with("type ")
            && expr.narrow()
            && base + 4 + flat.len() + tail.len() <= MAX_WIDTH
        {
            format!("{}\n    {flat}{tail}", lhs.trim_end())
        } else {
            let e = expr.layout(base, 0, base + lhs.len(), tail.len());
            let head = e.lines().next().unwrap_or("").len();
            if lhs.ends_with("= ")
                && !lhs.starts_with("type ")
                && !matches!(expr, Expr::Atom(_))
                && base + lhs.len() + head > MAX_WIDTH
            {
                // rustfmt moves a right-hand side whose first line does not fit after the `=`
                // to the next line, one indent deeper, and lays it out there.
                let e = expr.layout(base, 4, base + 4, tail.len());
                format!("{}\n    {e}{tail}", lhs.trim_end())
            } else {
                format!("{lhs}{e}{tail}")
            }
        };
        self.line(text)
    }
}

/// An expression of generated code, laid out as rustfmt lays out calls and tuples: on one
/// line when it fits and its items are at most [`FN_CALL_WIDTH`] wide (a single item need
/// only fit); else, for a call
/// whose one argument is a call or tuple, that argument overflows (`f((` ... `))`); else one
/// item per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Atom(String),
    Call {
        callee: String,
        args: Vec<Expr>,
    },
    Tuple(Vec<Expr>),
    /// `&e` (`prefix` is `&`, `-`, ...): laid out as `e` after the prefix.
    Prefix(String, Box<Expr>),
    /// `e?`: laid out as `e` followed by `?`.
    Try(Box<Expr>),
    /// `name![items]` (`vec![..]`): laid out as a call with brackets.
    Macro {
        name: String,
        items: Vec<Expr>,
    },
}

impl Expr {
    pub fn atom(s: impl Into<String>) -> Expr {
        Expr::Atom(s.into())
    }

    pub fn call(callee: impl Into<String>, args: Vec<Expr>) -> Expr {
        Expr::Call {
            callee: callee.into(),
            args,
        }
    }

    /// A call whose arguments are plain text.
    pub fn call_atoms<S: AsRef<str>>(callee: impl Into<String>, args: &[S]) -> Expr {
        Expr::call(
            callee,
            args.iter().map(|a| Expr::atom(a.as_ref())).collect(),
        )
    }

    pub fn tuple_atoms<S: AsRef<str>>(items: &[S]) -> Expr {
        Expr::Tuple(items.iter().map(|a| Expr::atom(a.as_ref())).collect())
    }

    fn parts(&self) -> (&str, &[Expr]) {
        match self {
            Expr::Atom(a) => (a.as_str(), &[]),
            Expr::Prefix(_, e) | Expr::Try(e) => e.parts(),
            Expr::Call { callee, args } => (callee.as_str(), args.as_slice()),
            Expr::Macro { name, items } => (name.as_str(), items.as_slice()),
            Expr::Tuple(items) => ("", items.as_slice()),
        }
    }

    /// The brackets around its items.
    fn brackets(&self) -> (&'static str, &'static str) {
        match self {
            Expr::Macro { .. } => ("![", "]"),
            _ => ("(", ")"),
        }
    }

    fn items_flat(&self) -> String {
        let (_, items) = self.parts();
        items.iter().map(Expr::flat).collect::<Vec<_>>().join(", ")
    }

    /// The one-line text.
    pub fn flat(&self) -> String {
        match self {
            Expr::Atom(a) => a.clone(),
            Expr::Call { callee, .. } => format!("{callee}({})", self.items_flat()),
            Expr::Macro { name, .. } => format!("{name}![{}]", self.items_flat()),
            Expr::Tuple(items) if items.len() == 1 => format!("({},)", items[0].flat()),
            Expr::Tuple(_) => format!("({})", self.items_flat()),
            Expr::Prefix(p, e) => format!("{p}{}", e.flat()),
            Expr::Try(e) => format!("{}?", e.flat()),
        }
    }

    /// Whether its items (and theirs) fit rustfmt's `fn_call_width`, which rustfmt does not
    /// apply to a single item.
    fn narrow(&self) -> bool {
        let (_, items) = self.parts();
        (items.len() == 1 || self.items_flat().len() <= FN_CALL_WIDTH)
            && items.iter().all(Expr::narrow)
    }

    /// The text starting at column `start`, followed by `tail` characters on its last line;
    /// `base` is the statement's column and `rel` this nesting level's indentation relative
    /// to it (continuation lines carry only their relative indentation).
    fn layout(&self, base: usize, rel: usize, start: usize, tail: usize) -> String {
        match self {
            Expr::Prefix(p, e) => {
                return format!("{p}{}", e.layout(base, rel, start + p.len(), tail))
            }
            Expr::Try(e) => return format!("{}?", e.layout(base, rel, start, tail + 1)),
            _ => {}
        }
        let flat = self.flat();
        let (callee, items) = self.parts();
        if items.is_empty() || (start + flat.len() + tail <= MAX_WIDTH && self.narrow()) {
            return flat;
        }
        if let (Expr::Call { .. }, [only @ (Expr::Call { .. } | Expr::Tuple(_))]) = (self, items) {
            let inner = only.layout(base, rel, start + callee.len() + 1, tail + 1);
            return format!("{callee}({inner})");
        }
        let pad = " ".repeat(rel + 4);
        let (open, close) = self.brackets();
        // rustfmt's mixed layout: arguments that are all simple (names, literals, `&x`) and at
        // most `short_array_element_width_threshold` (10) wide are packed onto full lines.
        if items.len() > 1 && items.iter().all(is_short_simple) {
            let mut s = format!("{callee}{open}\n{pad}");
            let mut col = base + rel + 4;
            for (i, it) in items.iter().enumerate() {
                let t = it.flat();
                if i > 0 {
                    if col + 1 + t.len() + 1 > MAX_WIDTH {
                        s.push_str(&format!("\n{pad}"));
                        col = base + rel + 4;
                    } else {
                        s.push(' ');
                        col += 1;
                    }
                }
                s.push_str(&t);
                s.push(',');
                col += t.len() + 1;
            }
            s.push_str(&format!("\n{}{close}", " ".repeat(rel)));
            return s;
        }
        let mut s = format!("{callee}{open}");
        for it in items {
            let t = it.layout(base, rel + 4, base + rel + 4, 1);
            s.push_str(&format!("\n{pad}{t},"));
        }
        s.push_str(&format!("\n{}{close}", " ".repeat(rel)));
        s
    }
}

/// rustfmt's `is_simple_expr` (a name, a literal, `&x`, `&mut x`, `-x`) no wider than
/// `short_array_element_width_threshold`.
fn is_short_simple(e: &Expr) -> bool {
    let Expr::Atom(a) = e else {
        return false;
    };
    let name = a
        .trim_start_matches("&mut ")
        .trim_start_matches('&')
        .trim_start_matches('-');
    a.len() <= 10 && !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One trailing newline, no trailing spaces, no run of blank lines at the end.
pub fn tidy(text: &str) -> String {
    let mut s: String = text
        .lines()
        .map(|l| l.trim_end().to_string() + "\n")
        .collect();
    while s.ends_with("\n\n") {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_indent() {
        let mut w = Writer::new();
        w.block("fn f() {", "}", |w| {
            w.line("let x = 1;\n\nx");
        });
        assert_eq!(w.finish(), "fn f() {\n    let x = 1;\n\n    x\n}\n");
    }

    #[test]
    fn headers_and_calls_break_as_rustfmt_does() {
        let mut w = Writer::new();
        let params: Vec<String> = (0..8).map(|i| format!("argument_{i}: &Tensor")).collect();
        w.fn_header("pub fn f", &params, "Result<Tensor>", " {");
        let text = w.finish();
        assert!(text.starts_with("pub fn f(\n    argument_0: &Tensor,\n"));
        assert!(text.ends_with("    argument_7: &Tensor,\n) -> Result<Tensor> {\n"));
        let mut w = Writer::new();
        w.stmt("", &Expr::call_atoms("f", &["a", "b"]), "?;");
        let long: Vec<String> = (0..6).map(|i| format!("argument_{i}")).collect();
        w.stmt("let x = ", &Expr::call_atoms("f", &long), "?;");
        w.stmt(
            "",
            &Expr::call("Self::g", vec![Expr::tuple_atoms(&long)]),
            "",
        );
        assert_eq!(
            w.finish(),
            "f(a, b)?;\nlet x = f(\n    argument_0, argument_1, argument_2, argument_3, argument_4, argument_5,\n)?;\nSelf::g((\n    argument_0, argument_1, argument_2, argument_3, argument_4, argument_5,\n))\n"
        );
    }

    #[test]
    fn negative_literals_are_simple_arguments() {
        // rustfmt's `is_simple_expr` takes a unary minus of a literal: the mixed layout.
        let mut w = Writer::new();
        let args = [
            "weight", "indices", "offsets", "false", "0", "false", "None", "false", "-1",
        ];
        w.stmt(
            "",
            &Expr::call_atoms("operators::_embedding_bag_forward_only::call", &args),
            "",
        );
        assert_eq!(
            w.finish(),
            "operators::_embedding_bag_forward_only::call(\n    weight, indices, offsets, false, 0, false, None, false, -1,\n)\n"
        );
    }
}
