//! The autograd emitters (torchgen's gen_autograd_functions.py, gen_variable_type.py,
//! gen_inplace_or_view_type.py) and the translation of derivatives.yaml's formulas: see each
//! module.

pub mod coverage;
pub mod cxx_parser;
pub mod formula;
pub mod forward;
pub mod functions;
pub mod inplace_or_view;
pub mod manual;
pub mod types;
pub mod variable_type;

use crate::codegen::{GenOptions, Target};

/// The `use` lines of a generated autograd file: ratten-autograd's prelude and the target's
/// operator handles as `ops`. Out of tree, `ops` is the library's own handles (shadowing the
/// prelude's ratten-aten `ops`) and ratten-aten's are `aten`, as the formulas call them.
pub fn imports(opts: &GenOptions) -> String {
    match opts.target {
        Target::OutOfTreeAutograd => format!(
            "use {}::prelude::*;\nuse {} as ops;\nuse {}::operators as aten;",
            opts.autograd_crate, opts.operators, opts.aten
        ),
        _ => format!(
            "use {}::prelude::*;\nuse {} as ops;",
            opts.autograd_crate, opts.operators
        ),
    }
}
