//! A small indenting writer: templates stay readable and the output needs no formatter.

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
}
