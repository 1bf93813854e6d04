//! torch::Library (torch/library.h): TORCH_LIBRARY / TORCH_LIBRARY_IMPL /
//! TORCH_LIBRARY_FRAGMENT blocks, registered statically (run before the first dispatch) or at
//! run time (a `Library` value; dropping it undoes its registrations).

use std::fmt;

use ratten_core::{DispatchKey, DispatchKeySet, Error, Result};
use ratten_schema::{parse_schema_or_name, FunctionSchema, OperatorName, SchemaOrName};

use crate::dispatcher::{
    debug_string, AliasAnalysisKind, Dispatcher, OperatorHandle, RegistrationHandle,
};
use crate::ivalue::{KernelArgs, KernelReturn, Stack};
use crate::kernel_function::{infer_function_schema, KernelFunction, TypedKernel, WithKeySet};
use ratten_core::dispatch_key_set::get_runtime_dispatch_key_set;

/// `Library::Kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LibraryKind {
    /// TORCH_LIBRARY: the one block that defines a namespace's operators.
    Def,
    /// TORCH_LIBRARY_IMPL: kernels (and fallbacks) for one dispatch key.
    Impl,
    /// TORCH_LIBRARY_FRAGMENT: more definitions for a namespace.
    Fragment,
}

impl LibraryKind {
    /// The Python binding's kind strings: "DEF", "IMPL", "FRAGMENT".
    pub fn parse(s: &str) -> Result<LibraryKind> {
        match s {
            "DEF" => Ok(LibraryKind::Def),
            "IMPL" => Ok(LibraryKind::Impl),
            "FRAGMENT" => Ok(LibraryKind::Fragment),
            _ => Err(Error::runtime(format!(
                "Unknown library kind '{s}'; expected DEF, IMPL or FRAGMENT"
            ))),
        }
    }
}

impl fmt::Display for LibraryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LibraryKind::Def => "TORCH_LIBRARY",
            LibraryKind::Impl => "TORCH_LIBRARY_IMPL",
            LibraryKind::Fragment => "TORCH_LIBRARY_FRAGMENT",
        })
    }
}

/// torch::CppFunction: a kernel plus what registration needs to know about it.
pub struct CppFunction {
    kernel: KernelFunction,
    schema: Option<FunctionSchema>,
    debug: String,
    dispatch_key: Option<DispatchKey>,
}

impl CppFunction {
    /// A typed kernel; its schema is inferred from `(A, R)`.
    /// `CppFunction::typed::<(TensorBase,), TensorBase, _>(|x: &TensorBase| Ok(x.clone()))`.
    pub fn typed<A: KernelArgs, R: KernelReturn, F: TypedKernel<A, R>>(f: F) -> Self {
        CppFunction {
            kernel: KernelFunction::from_typed::<A, R, F>(f),
            schema: Some(infer_function_schema::<A, R>()),
            debug: String::new(),
            dispatch_key: None,
        }
    }

    /// A typed kernel taking the call's `DispatchKeySet` first (to redispatch).
    pub fn typed_with_keyset<A, R, F>(f: F) -> Self
    where
        A: KernelArgs,
        R: KernelReturn,
        WithKeySet<F>: TypedKernel<A, R>,
    {
        CppFunction {
            kernel: KernelFunction::from_typed::<A, R, WithKeySet<F>>(WithKeySet(f)),
            schema: Some(infer_function_schema::<A, R>()),
            debug: String::new(),
            dispatch_key: None,
        }
    }

    /// A boxed kernel (`makeFromBoxedFunction`); no inferred schema unless given.
    pub fn boxed(
        f: impl Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        CppFunction {
            kernel: KernelFunction::from_boxed(f),
            schema: None,
            debug: String::new(),
            dispatch_key: None,
        }
    }

    /// `makeFallthrough()`.
    pub fn fallthrough() -> Self {
        CppFunction {
            kernel: KernelFunction::fallthrough(),
            schema: None,
            debug: String::new(),
            dispatch_key: None,
        }
    }

    /// The debug string shown in dumps (default: `registered at file:line`).
    pub fn debug(mut self, d: impl Into<String>) -> Self {
        self.debug = d.into();
        self
    }

    /// An explicit inferred schema (for kernels made elsewhere, e.g. in Python).
    pub fn with_schema(mut self, s: FunctionSchema) -> Self {
        self.schema = Some(s);
        self
    }

    /// `torch::dispatch(k, f)`: the key this kernel is for, overriding the block's.
    pub fn dispatch_key(mut self, k: Option<DispatchKey>) -> Self {
        self.dispatch_key = k;
        self
    }
}

/// torch::Library. Dropping it undoes everything it registered.
pub struct Library {
    dispatcher: &'static Dispatcher,
    kind: LibraryKind,
    ns: Option<String>,
    dispatch_key: Option<DispatchKey>,
    file: String,
    line: u32,
    registrars: Vec<RegistrationHandle>,
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Library({} {:?} {:?} at {}:{})",
            self.kind, self.ns, self.dispatch_key, self.file, self.line
        )
    }
}

/// A static registration block, collected by `inventory` and run by
/// `Dispatcher::singleton()` before it first returns. Made by the `torch_library!` macros.
pub struct StaticLibraryInit {
    pub kind: LibraryKind,
    /// The namespace; `_` for all namespaces (fallbacks).
    pub ns: &'static str,
    pub dispatch_key: Option<DispatchKey>,
    pub file: &'static str,
    pub line: u32,
    pub init: fn(&mut Library) -> Result<()>,
}

inventory::collect!(StaticLibraryInit);

impl Library {
    /// `Library(kind, ns, k, file, line)`; `ns` "_" means every namespace (IMPL only).
    /// The Python layer passes file "/dev/null" and line 0.
    pub fn new(
        kind: LibraryKind,
        ns: &str,
        dispatch_key: Option<DispatchKey>,
        file: &str,
        line: u32,
    ) -> Result<Library> {
        Library::new_in(Dispatcher::singleton(), kind, ns, dispatch_key, file, line)
    }

    pub(crate) fn new_in(
        dispatcher: &'static Dispatcher,
        kind: LibraryKind,
        ns: &str,
        dispatch_key: Option<DispatchKey>,
        file: &str,
        line: u32,
    ) -> Result<Library> {
        let mut lib = Library {
            dispatcher,
            kind,
            ns: (ns != "_").then(|| ns.to_string()),
            // Undefined means "no key" (the Python binding passes "").
            dispatch_key: dispatch_key.filter(|k| *k != DispatchKey::Undefined),
            file: file.to_string(),
            line,
            registrars: Vec::new(),
        };
        match kind {
            LibraryKind::Def => {
                let Some(ns) = lib.ns.clone() else {
                    return Err(Error::runtime(format!(
                        "TORCH_LIBRARY must name a namespace, not _.  {}",
                        lib.error_context()
                    )));
                };
                let h = dispatcher.register_library(&ns, debug_string("", file, line))?;
                lib.registrars.push(h);
            }
            LibraryKind::Fragment => {
                if lib.ns.is_none() {
                    return Err(Error::runtime(format!(
                        "TORCH_LIBRARY_FRAGMENT must name a namespace, not _.  {}",
                        lib.error_context()
                    )));
                }
            }
            LibraryKind::Impl => {}
        }
        Ok(lib)
    }

    /// The Python binding `_dispatch_library(kind, ns, key)`: kind "DEF"/"IMPL"/"FRAGMENT",
    /// key "" for none; file "/dev/null", line 0.
    pub fn from_strings(kind: &str, ns: &str, key: &str) -> Result<Library> {
        let k = if key.is_empty() {
            None
        } else {
            Some(DispatchKey::parse(key)?)
        };
        Library::new(LibraryKind::parse(kind)?, ns, k, "/dev/null", 0)
    }

    fn error_context(&self) -> String {
        format!(
            "(Error occurred while processing {} block at {}:{})",
            self.kind, self.file, self.line
        )
    }

    /// `m.def("schema")`: alias analysis FROM_SCHEMA.
    pub fn def(&mut self, schema: &str) -> Result<&mut Self> {
        self.def_with_alias(schema, Some(AliasAnalysisKind::FromSchema))
    }

    /// `m.def(torch::schema("schema", alias))`; `None` leaves the kind unset
    /// (`CONSERVATIVE (default)`, the legacy RegisterOperators path).
    pub fn def_with_alias(
        &mut self,
        schema: &str,
        alias: Option<AliasAnalysisKind>,
    ) -> Result<&mut Self> {
        let s = FunctionSchema::parse(schema).map_err(|e| {
            Error::runtime(format!(
                "def(\"{schema}\"): could not parse the schema: {e}"
            ))
        })?;
        self.def_schema(s, alias)?;
        Ok(self)
    }

    /// Defines an already parsed schema; returns the namespaced operator name.
    pub fn def_schema(
        &mut self,
        mut schema: FunctionSchema,
        alias: Option<AliasAnalysisKind>,
    ) -> Result<OperatorName> {
        if !matches!(self.kind, LibraryKind::Def | LibraryKind::Fragment) {
            return Err(Error::runtime(format!(
                "def(\"{}\"): Cannot define an operator inside of a {} block.  All def()s should be placed in the (unique) TORCH_LIBRARY block for their namespace.  {}",
                schema.name, self.kind, self.error_context()
            )));
        }
        let ns = self.ns.clone().unwrap_or_default();
        match schema.name.namespace() {
            Some(n) if n != ns => {
                return Err(Error::runtime(format!(
                    "def(\"{}\"): Explicitly provided namespace ({n}) in schema string does not match namespace of enclosing {} block ({ns}).  Move this definition to the (unique) TORCH_LIBRARY block corresponding to this namespace (and consider deleting the namespace from your schema string.)  {}",
                    schema.name, self.kind, self.error_context()
                )));
            }
            Some(_) => {}
            None => {
                schema.name.set_namespace_if_not_set(&ns);
            }
        }
        let name = schema.name.clone();
        let h =
            self.dispatcher
                .register_def(schema, debug_string("", &self.file, self.line), alias)?;
        self.registrars.push(h);
        Ok(name)
    }

    /// `m.def("name_or_schema", f)`: defines the operator (from the schema, or from `f`'s
    /// inferred schema with alias analysis CONSERVATIVE) and registers `f` for it (catch-all
    /// unless `f` names a key).
    pub fn def_fn(&mut self, name_or_schema: &str, f: CppFunction) -> Result<&mut Self> {
        let parsed = parse_schema_or_name(name_or_schema).map_err(|e| {
            Error::runtime(format!("def(\"{name_or_schema}\"): could not parse: {e}"))
        })?;
        let name = match parsed {
            SchemaOrName::Schema(s) => self.def_schema(s, Some(AliasAnalysisKind::FromSchema))?,
            SchemaOrName::Name(n) => {
                let Some(inferred) = &f.schema else {
                    return Err(Error::runtime(format!(
                        "def(\"{n}\"): Cannot infer operator schema in this context; please explicitly provide a schema string."
                    )));
                };
                let mut s = inferred.clone();
                s.name = n;
                self.def_schema(s, Some(AliasAnalysisKind::Conservative))?
            }
        };
        let key = f.dispatch_key.or(self.dispatch_key);
        let debug = debug_string(&f.debug, &self.file, self.line);
        let h = self
            .dispatcher
            .register_impl(name, key, f.kernel, f.schema, debug)?;
        self.registrars.push(h);
        Ok(self)
    }

    fn parse_name_for_lib(&self, name: &str) -> Result<OperatorName> {
        let mut n = OperatorName::parse(name).map_err(|e| {
            Error::runtime(format!(
                "impl(\"{name}\"): could not parse the operator name: {e}"
            ))
        })?;
        match (&self.ns, n.namespace()) {
            (Some(ns), Some(actual)) if actual != ns => Err(Error::runtime(format!(
                "Explicitly provided namespace ({actual}) in operator name does not match namespace of enclosing {} block ({ns}).  Move this definition to the {} block corresponding to this namespace (and consider deleting the namespace from your schema string.)  {}",
                self.kind, self.kind, self.error_context()
            ))),
            (Some(ns), None) => {
                n.set_namespace_if_not_set(ns);
                Ok(n)
            }
            (None, None) => Err(Error::runtime(format!(
                "impl(\"{name}\"): the operator name needs a namespace in a block for all namespaces (_).  {}",
                self.error_context()
            ))),
            _ => Ok(n),
        }
    }

    /// `m.impl("name[.overload]", f)`: registers `f` for the block's dispatch key (or `f`'s,
    /// or catch-all).
    pub fn impl_(&mut self, name: &str, f: CppFunction) -> Result<&mut Self> {
        let op = self.parse_name_for_lib(name)?;
        if let (Some(fk), Some(bk)) = (f.dispatch_key, self.dispatch_key) {
            if fk != bk {
                return Err(Error::runtime(format!(
                    "impl(\"{op}\", ...): Explicitly provided dispatch key ({fk}) is inconsistent with the dispatch key of the enclosing {} block ({bk}).  Please declare a separate {} block for this dispatch key and move your impl() there.  {}",
                    self.kind, self.kind, self.error_context()
                )));
            }
        }
        let key = f.dispatch_key.or(self.dispatch_key);
        let debug = debug_string(&f.debug, &self.file, self.line);
        let h = self
            .dispatcher
            .register_impl(op, key, f.kernel, f.schema, debug)?;
        self.registrars.push(h);
        Ok(self)
    }

    /// `m.fallback(f)`: `f` for every operator at the block's key (an alias key registers
    /// each of its runtime keys).
    pub fn fallback(&mut self, f: CppFunction) -> Result<&mut Self> {
        if self.kind != LibraryKind::Impl {
            return Err(Error::runtime(format!(
                "fallback(...): Cannot define an operator inside of a {} block.  All fallback()s should be placed inside of a TORCH_LIBRARY_IMPL block.  {}",
                self.kind, self.error_context()
            )));
        }
        let Some(key) = f.dispatch_key.or(self.dispatch_key) else {
            return Err(Error::runtime(format!(
                "fallback(...): a fallback needs a dispatch key.  {}",
                self.error_context()
            )));
        };
        if let Some(ns) = &self.ns {
            return Err(Error::runtime(format!(
                "fallback(...): Fallback functions which apply to only a single namespace (you specified {ns}) are not supported.  If you intended to apply this fallback function globally, please define a separate block:\n\n    TORCH_LIBRARY_IMPL(_, {key}, m) {{ m.fallback(...); }}\n\n{}",
                self.error_context()
            )));
        }
        let debug = debug_string(&f.debug, &self.file, self.line);
        for k in get_runtime_dispatch_key_set(key) {
            let h = self
                .dispatcher
                .register_fallback(k, f.kernel.clone(), debug.clone())?;
            self.registrars.push(h);
        }
        Ok(self)
    }

    // The Python test binding's helpers (torch/csrc/utils/python_dispatch.cpp), so the
    // Python layer is a thin wrapper.

    /// `m.def_(schema, alias="")`.
    pub fn def_py(&mut self, schema: &str, alias: &str) -> Result<&mut Self> {
        let a = AliasAnalysisKind::parse(alias)?;
        self.def_with_alias(schema, Some(a))
    }

    /// `m.def_legacy(schema)`: the RegisterOperators path, alias kind left unset.
    pub fn def_legacy(&mut self, schema: &str) -> Result<&mut Self> {
        self.def_with_alias(schema, None)
    }

    /// `m.def_name_t_t(name, dispatch="", debug="default_def_name_t_t")`.
    pub fn def_name_t_t(&mut self, name: &str, dispatch: &str, debug: &str) -> Result<&mut Self> {
        let f = identity_kernel()
            .debug(debug)
            .dispatch_key(parse_optional_key(dispatch)?);
        self.def_fn(name, f)
    }

    /// `m.impl_t_t(name, dispatch="", debug="impl_t_t")`.
    pub fn impl_t_t(&mut self, name: &str, dispatch: &str, debug: &str) -> Result<&mut Self> {
        let f = identity_kernel()
            .debug(debug)
            .dispatch_key(parse_optional_key(dispatch)?);
        self.impl_(name, f)
    }

    /// `m.fallback_fallthrough(dispatch="")`.
    pub fn fallback_fallthrough(&mut self, dispatch: &str) -> Result<&mut Self> {
        let f = CppFunction::fallthrough().dispatch_key(parse_optional_key(dispatch)?);
        self.fallback(f)
    }
}

fn parse_optional_key(s: &str) -> Result<Option<DispatchKey>> {
    if s.is_empty() {
        Ok(None)
    } else {
        DispatchKey::parse(s).map(Some)
    }
}

/// `[](const Tensor& a) { return a; }` of the Python test binding.
fn identity_kernel() -> CppFunction {
    CppFunction::typed::<(ratten_core::TensorBase,), ratten_core::TensorBase, _>(
        |a: &ratten_core::TensorBase| Ok(a.clone()),
    )
}

/// `TORCH_LIBRARY(ns, m) { ... }`: `torch_library!(myops, |m| { m.def("foo(Tensor x) -> Tensor")?; });`
/// Runs before the dispatcher is first used.
#[macro_export]
macro_rules! torch_library {
    ($ns:ident, |$m:ident| $body:block) => {
        const _: () = {
            fn __ratten_library_init($m: &mut $crate::Library) -> $crate::Result<()> {
                $body
                Ok(())
            }
            $crate::inventory::submit! {
                $crate::StaticLibraryInit {
                    kind: $crate::LibraryKind::Def,
                    ns: stringify!($ns),
                    dispatch_key: None,
                    file: file!(),
                    line: line!(),
                    init: __ratten_library_init,
                }
            }
        };
    };
}

/// `TORCH_LIBRARY_FRAGMENT(ns, m) { ... }`.
#[macro_export]
macro_rules! torch_library_fragment {
    ($ns:ident, |$m:ident| $body:block) => {
        const _: () = {
            fn __ratten_library_init($m: &mut $crate::Library) -> $crate::Result<()> {
                $body
                Ok(())
            }
            $crate::inventory::submit! {
                $crate::StaticLibraryInit {
                    kind: $crate::LibraryKind::Fragment,
                    ns: stringify!($ns),
                    dispatch_key: None,
                    file: file!(),
                    line: line!(),
                    init: __ratten_library_init,
                }
            }
        };
    };
}

/// `TORCH_LIBRARY_IMPL(ns, Key, m) { ... }`; `ns` may be `_` (all namespaces, for fallbacks).
#[macro_export]
macro_rules! torch_library_impl {
    ($ns:tt, $key:ident, |$m:ident| $body:block) => {
        const _: () = {
            fn __ratten_library_init($m: &mut $crate::Library) -> $crate::Result<()> {
                $body
                Ok(())
            }
            $crate::inventory::submit! {
                $crate::StaticLibraryInit {
                    kind: $crate::LibraryKind::Impl,
                    ns: stringify!($ns),
                    dispatch_key: Some($crate::DispatchKey::$key),
                    file: file!(),
                    line: line!(),
                    init: __ratten_library_init,
                }
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print_as_pytorch() {
        assert_eq!(
            LibraryKind::parse("DEF").unwrap().to_string(),
            "TORCH_LIBRARY"
        );
        assert_eq!(
            LibraryKind::parse("IMPL").unwrap().to_string(),
            "TORCH_LIBRARY_IMPL"
        );
        assert_eq!(
            LibraryKind::parse("FRAGMENT").unwrap().to_string(),
            "TORCH_LIBRARY_FRAGMENT"
        );
        assert!(LibraryKind::parse("def").is_err());
        assert_eq!(parse_optional_key("").unwrap(), None);
        assert_eq!(
            parse_optional_key("AutogradCPU").unwrap(),
            Some(DispatchKey::AutogradCPU)
        );
        assert_eq!(
            parse_optional_key("bogus").unwrap_err().to_string(),
            "could not parse dispatch key: bogus"
        );
    }

    #[test]
    fn fallbacks_need_a_global_impl_block() {
        let mut frag =
            Library::new(LibraryKind::Fragment, "__lib_unit__", None, "/dev/null", 0).unwrap();
        let e = frag.fallback(CppFunction::fallthrough()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fallback(...): Cannot define an operator inside of a TORCH_LIBRARY_FRAGMENT block.  All fallback()s should be placed inside of a TORCH_LIBRARY_IMPL block.  (Error occurred while processing TORCH_LIBRARY_FRAGMENT block at /dev/null:0)"
        );
        let e = frag.def("bad(").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("def(\"bad(\"): could not parse the schema"),
            "{e}"
        );
        let e = frag
            .def_fn("noschema", CppFunction::fallthrough())
            .unwrap_err();
        assert!(
            e.to_string().contains("Cannot infer operator schema"),
            "{e}"
        );
        let e = frag.def("other::x(Tensor a) -> Tensor").unwrap_err();
        assert!(e.to_string().contains("Explicitly provided namespace (other) in schema string does not match namespace of enclosing TORCH_LIBRARY_FRAGMENT block (__lib_unit__)"), "{e}");
    }
}
