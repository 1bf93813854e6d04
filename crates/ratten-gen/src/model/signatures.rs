//! The Rust signatures of one overload (torchgen's `api/types/signatures.py`): each is a list
//! of [`Binding`]s and a return type, from which emitters render declarations and calls.
//!
//! | signature | Rust | PyTorch |
//! | --- | --- | --- |
//! | [`dispatcher`] | `operators::add_Tensor::call(self_: &Tensor, other: &Tensor, alpha: &Scalar)`, the typed handle's `Args` / `Return` | `DispatcherSignature` (`at::_ops::add_Tensor::call`) |
//! | [`function`] (short) | `functions::add(self_: &Tensor, other: &Tensor)` | `CppSignature` without defaulted arguments |
//! | [`function`] (with) | `functions::add_with(self_, other, alpha: impl Into<Scalar>)` | `CppSignature` |
//! | [`function`] (method) | `Tensor::add(&self, other: &Tensor)` | the `TensorBody.h` method |
//! | [`backend`] | `backends::cpu::add(self_, other, alpha: &Scalar)`; `add_outf(.., out: &'a Tensor) -> &'a Tensor` | `at::cpu::add` (faithful) |
//! | [`backend`] (plain kernel) | `crate::native::add_(self_: &'a Tensor, ..) -> Result<&'a Tensor>` | `NativeSignature` |
//! | [`structured_inputs`] / [`structured_outputs`] | the arguments of a structured `meta` and `impl` | `StructuredImplSignature` |

use super::arguments::{ArgumentInfo, DefaultExpr};
use super::types::{BaseType, Conversion, RustType};
use super::OperatorRecord;

/// One parameter of a signature (torchgen's `Binding`): its Rust name and type, the schema
/// argument it comes from, and the default the short form fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The Rust name; `self` for a method's receiver.
    pub ident: String,
    pub ty: RustType,
    /// The schema argument it binds (`None` for the `ks` of `redispatch`).
    pub argument: Option<usize>,
    pub default: Option<DefaultExpr>,
}

impl Binding {
    fn of(a: &ArgumentInfo, ty: RustType) -> Binding {
        Binding {
            ident: a.ident.clone(),
            ty,
            argument: Some(a.index),
            default: a.default.clone(),
        }
    }

    /// `self_: &Tensor`, or `&self` / `&'a self` for a receiver.
    pub fn decl(&self, aten: &str) -> String {
        if self.ident == "self" {
            return match &self.ty {
                RustType::Ref {
                    lifetime: Some(l), ..
                } => format!("&'{l} self"),
                _ => "&self".to_string(),
            };
        }
        format!("{}: {}", self.ident, self.ty.render(aten))
    }
}

/// A function signature: name, lifetimes, parameters and what its `Result` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    /// Lifetime parameters (`a` for `<'a>`).
    pub lifetimes: Vec<String>,
    pub params: Vec<Binding>,
    /// The `Ok` type.
    pub ret: RustType,
}

impl Signature {
    /// `name<'a>`.
    pub fn name_with_generics(&self) -> String {
        if self.lifetimes.is_empty() {
            self.name.clone()
        } else {
            let ls: Vec<String> = self.lifetimes.iter().map(|l| format!("'{l}")).collect();
            format!("{}<{}>", self.name, ls.join(", "))
        }
    }

    /// The parameter declarations.
    pub fn param_decls(&self, aten: &str) -> Vec<String> {
        self.params.iter().map(|b| b.decl(aten)).collect()
    }

    /// `Result<T>`.
    pub fn result(&self, aten: &str) -> String {
        format!("Result<{}>", self.ret.render(aten))
    }
}

/// The argument the one return of `op` is, when it is a written argument (`Tensor(a!) out) ->
/// Tensor(a!)`: in-place and out= forms). Typed calls then return `Aliased<k>` (Note [Aliased
/// returns] in ratten-dispatch) and kernels a reference to the argument.
pub fn aliased_return(op: &OperatorRecord) -> Option<usize> {
    match op.returns.as_slice() {
        [r] if r.ty == RustType::base(BaseType::Tensor) => r.written_arg(),
        _ => None,
    }
}

/// The typed handle's argument tuple (`(Tensor, Tensor, Arg<Scalar>)`).
pub fn args_tuple(op: &OperatorRecord) -> RustType {
    RustType::Tuple(op.args.iter().map(|a| a.ty.owned.clone()).collect())
}

/// The typed handle's return (`Tensor`, `Aliased<0>`, `(Tensor, Tensor)`, `()`).
pub fn dispatcher_return(op: &OperatorRecord) -> RustType {
    if let Some(k) = aliased_return(op) {
        return RustType::Aliased(k);
    }
    match op.returns.as_slice() {
        [one] => one.ty.clone(),
        rets => RustType::Tuple(rets.iter().map(|r| r.ty.clone()).collect()),
    }
}

/// The dispatcher signature: borrowed forms in schema order (`operators::*::call`).
pub fn dispatcher(op: &OperatorRecord) -> Signature {
    Signature {
        name: "call".to_string(),
        lifetimes: Vec::new(),
        params: op
            .args
            .iter()
            .map(|a| Binding::of(a, a.ty.borrowed.clone()))
            .collect(),
        ret: dispatcher_return(op),
    }
}

/// `(self_, other, alpha)`: the dispatcher signature's arguments as the `Refs` tuple.
pub fn refs_tuple(op: &OperatorRecord) -> String {
    match op.args.as_slice() {
        [one] => format!("({},)", one.ident),
        args => format!(
            "({})",
            args.iter()
                .map(|a| a.ident.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The backend direct function (and plain kernel) signature: schema order, borrowed forms;
/// an aliased return is a reference to its argument, named `'a` (PyTorch's `Tensor&`).
pub fn backend(op: &OperatorRecord) -> Signature {
    let aliased = aliased_return(op);
    Signature {
        name: op.names.backend.clone(),
        lifetimes: aliased.map(|_| vec!["a".to_string()]).unwrap_or_default(),
        params: op
            .args
            .iter()
            .map(|a| {
                let ty = if Some(a.index) == aliased {
                    a.ty.borrowed.with_lifetime("a")
                } else {
                    a.ty.borrowed.clone()
                };
                Binding::of(a, ty)
            })
            .collect(),
        ret: match aliased {
            Some(_) => RustType::base(BaseType::Tensor).reference_with("a"),
            None => dispatcher_return(op),
        },
    }
}

impl RustType {
    /// `&'l self`.
    fn reference_with(self, l: &str) -> RustType {
        RustType::Ref {
            lifetime: Some(l.to_string()),
            to: Box::new(self),
        }
    }
}

/// Which public form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Without the arguments that have defaults (`add`).
    Short,
    /// Every argument (`add_with`).
    With,
}

/// A public function or method and how it calls the dispatcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSignature {
    pub sig: Signature,
    pub form: Form,
    /// The receiver's argument for a method.
    pub receiver: Option<usize>,
    /// Statements before the call (`let alpha: Scalar = alpha.into();`).
    pub prelude: Vec<String>,
    /// The dispatcher call's arguments, in schema order.
    pub call_args: Vec<String>,
    /// The arguments the function returns (its written arguments), when every return is one.
    pub returns_args: Option<Vec<String>>,
}

/// The public function (or, with `method`, the Tensor method) of `op` in `form`.
///
/// Out= forms take `out` first; a method's `self` is the receiver. In-place and out= forms
/// return the tensors they wrote (`&'a Tensor`); other returns are the dispatcher's without
/// `Arg`.
pub fn function(op: &OperatorRecord, form: Form, method: bool) -> FunctionSignature {
    let receiver = if method { op.self_arg } else { None };
    let provided = |a: &ArgumentInfo| form == Form::With || a.default.is_none();
    // Lifetimes for the arguments returns alias: 'a, 'b, ... by return.
    let aliased: Vec<usize> = op.returns.iter().filter_map(|r| r.written_arg()).collect();
    let lifetime = |i: usize| -> Option<String> {
        aliased
            .iter()
            .position(|&a| a == i)
            .map(|k| ((b'a' + k as u8) as char).to_string())
    };
    let mut params = Vec::new();
    let order = op
        .args
        .iter()
        .filter(|a| a.is_out)
        .chain(op.args.iter().filter(|a| !a.is_out));
    for a in order.filter(|a| provided(a)) {
        let ty = match lifetime(a.index) {
            Some(l) => a.ty.api.with_lifetime(&l),
            None => a.ty.api.clone(),
        };
        let mut b = Binding::of(a, ty);
        if Some(a.index) == receiver {
            b.ident = "self".to_string();
            params.insert(0, b);
        } else {
            params.push(b);
        }
    }
    let name_of = |i: usize| -> String {
        if Some(i) == receiver {
            "self".to_string()
        } else {
            op.args[i].ident.clone()
        }
    };
    let mut prelude = Vec::new();
    let mut call_args = Vec::new();
    for a in &op.args {
        let id = name_of(a.index);
        if provided(a) {
            match a.ty.conversion() {
                Conversion::None => call_args.push(id),
                Conversion::IntoScalar => {
                    prelude.push(format!("let {id}: Scalar = {id}.into();"));
                    call_args.push(format!("&{id}"));
                }
                Conversion::AsRef => call_args.push(format!("{id}.as_ref()")),
            }
        } else if let Some(d) = &a.default {
            if d.by_ref {
                prelude.push(format!("let {} = {};", a.ident, d.expr));
                call_args.push(format!("&{}", a.ident));
            } else {
                call_args.push(d.expr.clone());
            }
        }
    }
    let all_written = !aliased.is_empty() && aliased.len() == op.returns.len();
    let (ret, returns_args) = if all_written {
        let tys: Vec<RustType> = aliased
            .iter()
            .map(|&i| {
                RustType::base(BaseType::Tensor).reference_with(&lifetime(i).unwrap_or_default())
            })
            .collect();
        let ret = match tys.as_slice() {
            [one] => one.clone(),
            _ => RustType::Tuple(tys),
        };
        (ret, Some(aliased.iter().map(|&i| name_of(i)).collect()))
    } else {
        (dispatcher_return(op).without_arg(), None)
    };
    let mut lifetimes: Vec<String> = aliased.iter().filter_map(|&i| lifetime(i)).collect();
    lifetimes.dedup();
    let name = match form {
        Form::Short => op.names.short.clone(),
        Form::With => op.names.with.clone(),
    };
    FunctionSignature {
        sig: Signature {
            name,
            lifetimes,
            params,
            ret,
        },
        form,
        receiver,
        prelude,
        call_args,
        returns_args,
    }
}

/// The forms an overload has: the short one and, when an argument has a default, the `_with`
/// one.
pub fn forms(op: &OperatorRecord) -> Vec<Form> {
    if op.has_defaults() {
        vec![Form::Short, Form::With]
    } else {
        vec![Form::Short]
    }
}

/// The inputs of a structured kernel (the non-out= arguments a `meta` and an `impl` take).
pub fn structured_inputs(op: &OperatorRecord) -> Vec<&ArgumentInfo> {
    op.args.iter().filter(|a| !a.is_out).collect()
}

/// The out= arguments of an overload.
pub fn structured_outputs(op: &OperatorRecord) -> Vec<&ArgumentInfo> {
    op.args.iter().filter(|a| a.is_out).collect()
}
