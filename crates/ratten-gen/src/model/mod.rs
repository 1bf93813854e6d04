//! The generator's model of a declaration file (torchgen's `model.py` records seen through its
//! `api/` layer): per overload an [`OperatorRecord`] with its Rust names, typed arguments and
//! returns, kernels per dispatch key, view relation and differentiability, computed once;
//! every emitter reads it.
//!
//! | module | holds | torchgen |
//! | --- | --- | --- |
//! | [`types`] | [`RustType`](types::RustType), the three forms of an argument type, [`Refusal`](types::Refusal) | `api/types/types.py`, `argumenttype_type` |
//! | [`arguments`] | arguments, defaults, returns, alias annotations, [`ViewInfo`](arguments::ViewInfo) | `model.py` `Argument`, `Annotation`, `is_view_op` |
//! | [`signatures`] | [`Binding`](signatures::Binding) and the dispatcher / function / method / backend signatures | `api/types/signatures.py` |
//! | [`kernels`] | [`KernelRef`](kernels::KernelRef) per dispatch key | `BackendIndex`, `BackendMetadata` |
//! | [`autograd`] | [`DifferentiabilityInfo`](autograd::DifferentiabilityInfo) | `api/autograd.py` |
//! | [`names`] | identifiers, API names, file shards | `OperatorName.unambiguous_name`, `cpp.name` |

pub mod arguments;
pub mod autograd;
pub mod kernels;
pub mod names;
pub mod signatures;
pub mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::{NativeFunctions, SchemaKind};

use arguments::{ArgumentInfo, ReturnInfo, ViewInfo};
use autograd::Differentiability;
use kernels::{KernelContext, KernelRef};
use names::{
    api_names, names_with_unnamed_overload, shared_kernel_names, unambiguous_name, ApiNames,
};
use types::Refusal;

/// What the model needs to know about the crate it is generated for.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    /// How generated code names ratten-aten: `crate` inside it, `ratten_aten` elsewhere.
    pub aten: String,
    /// The Rust module holding the kernels the yaml's `dispatch:` names (`crate::native`).
    pub kernel_module: String,
    /// The namespace when the file declares no function (normally taken from `func:`).
    pub namespace: String,
    /// `structured_inherits:` base names -> the Rust state type their meta returns.
    pub inherits: BTreeMap<String, String>,
}

/// The most arguments / returns ratten-dispatch's typed calls take (its `KernelArgs` and
/// `KernelReturn` tuple implementations).
pub const MAX_ARGUMENTS: usize = 24;
pub const MAX_RETURNS: usize = 8;

/// One overload as every emitter sees it.
#[derive(Debug, Clone)]
pub struct OperatorRecord {
    /// Index into `NativeFunctions::functions`.
    pub index: usize,
    pub namespace: String,
    /// `aten::add`.
    pub qualified_name: String,
    /// `Tensor` (may be empty).
    pub overload_name: String,
    /// `add.Tensor` (the name registrations use).
    pub name_with_overload: String,
    /// The operator's root name shared by its variants (`add` of `add_.Tensor`).
    pub root_name: String,
    /// The schema as declared, for `def()`.
    pub schema_source: String,
    /// torchgen's unambiguous name (`add_Tensor`, `add__Tensor`, `add_out`): the handle type.
    pub handle: String,
    /// The public Rust names.
    pub names: ApiNames,
    pub kind: SchemaKind,
    pub args: Vec<ArgumentInfo>,
    pub returns: Vec<ReturnInfo>,
    /// `variants: function` / `variants: method`.
    pub function: bool,
    pub method: bool,
    /// The positional `self` argument (a method's receiver).
    pub self_arg: Option<usize>,
    /// The kernel per dispatch key name (`CPU`, `Meta`, `CompositeExplicitAutograd`, ...).
    pub kernels: BTreeMap<String, KernelRef>,
    /// Its view relation, when it is a view operator.
    pub view: Option<ViewInfo>,
    /// Its derivatives.yaml information, when the model was built with one that covers it.
    pub differentiability: Option<Differentiability>,
    pub tags: BTreeSet<String>,
}

impl OperatorRecord {
    /// The schema with its namespace (`aten::add.Tensor(Tensor self, ...) -> Tensor`).
    pub fn doc(&self) -> String {
        format!("{}::{}", self.namespace, self.schema_source)
    }

    pub fn has_defaults(&self) -> bool {
        self.args.iter().any(|a| a.default.is_some())
    }

    /// The `_with` form's name, when the overload has one.
    pub fn with_name(&self) -> Option<&str> {
        self.has_defaults().then_some(self.names.with.as_str())
    }

    /// The argument its one written return is ([`signatures::aliased_return`]).
    pub fn aliased_return(&self) -> Option<usize> {
        signatures::aliased_return(self)
    }
}

/// Why an overload has no record: the overload, where in it, and the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct OverloadRefusal {
    /// `aten::add.Tensor`.
    pub overload: String,
    /// `argument `x``, `return 0`, or empty for the whole overload.
    pub at: String,
    pub reason: Refusal,
}

impl fmt::Display for OverloadRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            write!(f, "{}: {}", self.overload, self.reason)
        } else {
            write!(f, "{}: {}: {}", self.overload, self.at, self.reason)
        }
    }
}

/// Why a file has no model.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelError {
    Refused(OverloadRefusal),
    /// Two overloads map to one Rust name.
    NameClash {
        name: String,
        first: String,
        second: String,
    },
    /// Functions of one file in several namespaces.
    Namespace {
        overload: String,
        namespace: String,
        expected: String,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Refused(r) => r.fmt(f),
            ModelError::NameClash {
                name,
                first,
                second,
            } => write!(f, "{first} and {second} both map to the Rust name `{name}`"),
            ModelError::Namespace {
                overload,
                namespace,
                expected,
            } => write!(
                f,
                "{overload}: every function of one file must be in one namespace ({namespace} vs {expected})"
            ),
        }
    }
}

/// The model: every overload of the file, in declaration order.
#[derive(Debug, Clone)]
pub struct Model {
    pub namespace: String,
    pub ops: Vec<OperatorRecord>,
}

impl Model {
    /// The record of every overload, or why it has none, in declaration order; `derivatives`
    /// (when given) supplies each record's differentiability.
    pub fn records(
        nf: &NativeFunctions,
        derivatives: Option<&Derivatives>,
        opts: &ModelOptions,
    ) -> Vec<Result<OperatorRecord, OverloadRefusal>> {
        let cx = KernelContext {
            nf,
            opts,
            by_name: nf
                .functions
                .iter()
                .enumerate()
                .map(|(i, f)| (f.func.name.to_string(), i))
                .collect(),
            shared: shared_kernel_names(nf),
            unnamed: names_with_unnamed_overload(nf),
        };
        let unnamed = &cx.unnamed;
        let mut differentiability = derivatives
            .map(|d| autograd::match_differentiability(nf, d))
            .unwrap_or_default();
        differentiability.resize(nf.functions.len(), None);
        // `{name}_copy` twins of views, by the view's name.
        let copies: BTreeMap<String, usize> = nf
            .functions
            .iter()
            .enumerate()
            .filter(|(_, f)| f.tags.contains("view_copy"))
            .map(|(i, f)| (f.func.name.to_string().replacen("_copy", "", 1), i))
            .collect();
        nf.functions
            .iter()
            .enumerate()
            .map(|(index, f)| {
                let refusal = |at: String, reason: Refusal| OverloadRefusal {
                    overload: f.operator_name().to_string(),
                    at,
                    reason,
                };
                let args = arguments::arguments(f, &opts.aten).map_err(|(at, r)| refusal(at, r))?;
                if args.len() > MAX_ARGUMENTS {
                    return Err(refusal(
                        String::new(),
                        Refusal::TooManyArguments {
                            count: args.len(),
                            max: MAX_ARGUMENTS,
                        },
                    ));
                }
                let returns = arguments::returns(f, &args).map_err(|(at, r)| refusal(at, r))?;
                if returns.len() > MAX_RETURNS {
                    return Err(refusal(
                        String::new(),
                        Refusal::TooManyReturns {
                            count: returns.len(),
                            max: MAX_RETURNS,
                        },
                    ));
                }
                let self_arg = f
                    .func
                    .arguments
                    .iter()
                    .position(|a| a.name == "self" && !a.kwarg_only);
                if f.variants_method && self_arg.is_none() {
                    return Err(refusal(String::new(), Refusal::MethodWithoutSelf));
                }
                let kernels = cx.kernels(index).map_err(|r| refusal(String::new(), r))?;
                let view_copy = copies.get(&f.func.name.to_string()).copied();
                let view = arguments::view_info(f, &args, &returns, view_copy);
                Ok(OperatorRecord {
                    index,
                    namespace: f.namespace.clone(),
                    qualified_name: format!("{}::{}", f.namespace, f.func.name.name),
                    overload_name: f.func.name.overload_name.clone(),
                    name_with_overload: f.func.name.to_string(),
                    root_name: f.root_name(),
                    schema_source: f.func.to_source_string(),
                    handle: unambiguous_name(f),
                    names: api_names(f, !unnamed.contains(&f.func.name.name)),
                    kind: f.kind(),
                    args,
                    returns,
                    function: f.variants_function,
                    method: f.variants_method,
                    self_arg,
                    kernels,
                    view,
                    differentiability: differentiability[index].take(),
                    tags: f.tags.clone(),
                })
            })
            .collect()
    }

    /// The model of a whole file: every overload must map, into one namespace, with distinct
    /// Rust names.
    pub fn build(
        nf: &NativeFunctions,
        derivatives: Option<&Derivatives>,
        opts: &ModelOptions,
    ) -> Result<Model, Vec<ModelError>> {
        let namespace = nf
            .functions
            .first()
            .map(|f| f.namespace.clone())
            .unwrap_or_else(|| opts.namespace.clone());
        let mut errors = Vec::new();
        let mut ops = Vec::new();
        for r in Model::records(nf, derivatives, opts) {
            match r {
                Ok(op) if op.namespace != namespace => errors.push(ModelError::Namespace {
                    overload: op.name_with_overload,
                    namespace: op.namespace,
                    expected: namespace.clone(),
                }),
                Ok(op) => ops.push(op),
                Err(e) => errors.push(ModelError::Refused(e)),
            }
        }
        errors.extend(name_clashes(&ops));
        if errors.is_empty() {
            Ok(Model { namespace, ops })
        } else {
            Err(errors)
        }
    }

    /// The record of function `index` of the file.
    pub fn op(&self, index: usize) -> Option<&OperatorRecord> {
        self.ops.iter().find(|o| o.index == index)
    }

    /// Every dispatch key some overload has a kernel for, sorted.
    pub fn dispatch_keys(&self) -> BTreeSet<String> {
        self.ops
            .iter()
            .flat_map(|o| o.kernels.keys().cloned())
            .collect()
    }
}

/// Public names and handle names must be unique in a namespace's generated API.
pub fn name_clashes(ops: &[OperatorRecord]) -> Vec<ModelError> {
    let mut errors = Vec::new();
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    let mut handles: BTreeMap<&str, &str> = BTreeMap::new();
    for op in ops {
        let mut names = vec![op.names.short.clone()];
        names.extend(op.with_name().map(str::to_string));
        for n in names {
            if let Some(prev) = seen.insert(n.clone(), &op.name_with_overload) {
                errors.push(ModelError::NameClash {
                    name: n,
                    first: prev.to_string(),
                    second: op.name_with_overload.clone(),
                });
            }
        }
        if let Some(prev) = handles.insert(&op.handle, &op.name_with_overload) {
            errors.push(ModelError::NameClash {
                name: op.handle.clone(),
                first: prev.to_string(),
                second: op.name_with_overload.clone(),
            });
        }
    }
    errors
}

#[cfg(test)]
mod tests;
