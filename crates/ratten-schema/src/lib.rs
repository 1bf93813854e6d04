//! ratten-schema: the model of PyTorch operator declarations (no tensors here).
//!
//! - [`FunctionSchema`]: PyTorch's function schema language, parsed
//!   ([`FunctionSchema::parse`]) and printed exactly as c10 prints it (`Display`), or in
//!   the declaration's own spelling ([`FunctionSchema::to_source_string`]).
//! - [`native`]: native_functions.yaml entries with torchgen's checks, `autogen:`
//!   expansion and functional / in-place / out= / mutable grouping.
//! - [`tags`]: tags.yaml. [`derivatives`]: derivatives.yaml and its match to functions.
//! - [`load_declarations`]: all files at once. Errors carry file:line:column.

pub mod derivatives;
mod error;
mod load;
pub mod native;
mod parser;
mod schema;
pub mod tags;
pub mod yaml;

pub use error::{DeclError, DeclErrors, Location, SchemaError};
pub use load::{load_declarations, Declarations};
pub use parser::{parse_schema_or_name, SchemaOrName};
pub use schema::{
    format_double, quote_string, AliasInfo, Argument, DefaultValue, FunctionSchema, OperatorName,
    Return, Type, WILDCARD_SET,
};
