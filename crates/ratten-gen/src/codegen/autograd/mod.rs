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
