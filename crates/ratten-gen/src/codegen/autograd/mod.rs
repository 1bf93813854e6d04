pub mod coverage;
pub mod cxx_parser;
pub mod formula;
pub mod manual;
pub mod types;
