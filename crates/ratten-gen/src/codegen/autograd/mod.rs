//! The autograd emitters (torchgen's gen_autograd_functions.py, gen_variable_type.py,
//! gen_inplace_or_view_type.py): see each module.

pub mod formula_stub;
pub mod functions;
pub mod inplace_or_view;
pub mod variable_type;
