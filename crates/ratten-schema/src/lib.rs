//! ratten-schema: the model of PyTorch operator declarations (no tensors here).
//!
//! - [`FunctionSchema`]: PyTorch's function schema language, parsed and printed exactly
//!   as c10 prints it.

pub mod derivatives;
mod error;
pub mod native;
mod parser;
mod schema;
pub mod tags;
pub mod yaml;

pub use error::{DeclError, DeclErrors, Location, SchemaError};
pub use parser::{parse_schema_or_name, SchemaOrName};
pub use schema::{
    format_double, quote_string, AliasInfo, Argument, DefaultValue, FunctionSchema, OperatorName,
    Return, Type, WILDCARD_SET,
};
