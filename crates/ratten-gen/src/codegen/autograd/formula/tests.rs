use super::*;
use crate::codegen::GenOptions;
use ratten_schema::native::NativeFunctions;

const YAML: &str = r#"
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  variants: method
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: div.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
- func: full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: full_like
- func: neg(Tensor self) -> Tensor
  variants: function, method
- func: eq.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  variants: function, method
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  variants: function, method
- func: expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
  variants: method
- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: zeros
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor
- func: _unique(Tensor self, bool sorted=True, bool return_inverse=False) -> (Tensor, Tensor)
"#;

const MANUAL: &str = r#"
pub fn handle_r_to_c(self_st: ScalarType, gradient_result: &Tensor) -> Result<Tensor> {
    body()
}

pub fn maybe_multiply(t: &Tensor, s: &Scalar) -> Result<Tensor> {
    body()
}

pub fn sum_backward(grad: &Tensor, sizes: &[i64], dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    body()
}

pub fn div_backward(grad: &Tensor, other: &Tensor, mode: Option<&str>) -> Result<Tensor> {
    body()
}

/// C++ overload of `div_backward`.
pub fn div_backward_scalar(grad: &Tensor, other: &Scalar, mode: Option<&str>) -> Result<Tensor> {
    body()
}

pub fn linear_backward(
    input: &Tensor,
    grad: &Tensor,
    weight: &Tensor,
    grad_input_mask: &[bool],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    body()
}

pub fn pair(a: Option<&Tensor>, b: Option<&Tensor>) -> Result<Tensor> {
    body()
}
"#;

fn with_env(f: impl FnOnce(&mut Env)) {
    let nf = NativeFunctions::parse(YAML, std::path::Path::new("test.yaml"), None).unwrap();
    let model = Model::build(&nf, None, &GenOptions::aten().model()).unwrap();
    let ops = OpIndex::new(&model);
    let manual = ManualSignatures::parse(MANUAL);
    let mut env = Env::new(&ops, &manual);
    env.bind("grad", Binding::borrowed("grad", CxxType::Tensor))
        .bind("self", Binding::place("self_", CxxType::Tensor))
        .bind("other", Binding::place("other", CxxType::Tensor))
        .bind("s", Binding::place("self.s", CxxType::Scalar))
        .bind("alpha", Binding::place("self.alpha", CxxType::Scalar))
        .bind("dim", Binding::place("self.dim", CxxType::OptIntList))
        .bind("d", Binding::place("self.d", CxxType::Int))
        .bind("keepdim", Binding::place("self.keepdim", CxxType::Bool))
        .bind("bias", Binding::place("bias", CxxType::OptTensor))
        .bind("grads", Binding::place("grads", CxxType::OptTensorList))
        .bind(
            "grad_input_mask",
            Binding::place("grad_input_mask", CxxType::BoolList),
        )
        .bind(
            "self_sym_sizes",
            Binding::place("self.self_sym_sizes", CxxType::IntList),
        )
        .bind(
            "self_scalar_type",
            Binding::place("self.self_scalar_type", CxxType::ScalarType),
        );
    env.bind_saved("self.sym_sizes()", "self_sym_sizes")
        .unwrap();
    env.bind_saved("self.scalar_type()", "self_scalar_type")
        .unwrap();
    f(&mut env);
}

fn ok(env: &Env, formula: &str) -> (String, CxxType) {
    let t = translate(formula, env).unwrap_or_else(|e| panic!("{formula}: {e}"));
    (t.rust, t.ty)
}

fn rust(env: &Env, formula: &str) -> String {
    ok(env, formula).0
}

#[test]
fn operators_resolve_by_cpp_overload_rules() {
    with_env(|env| {
        // Tensor operators, with the schema's defaults filled in.
        assert_eq!(
            rust(env, "grad + other"),
            "ops::add_Tensor::call(grad, &other, &Scalar::Int(1))?"
        );
        assert_eq!(
            rust(env, "grad * 2"),
            "ops::mul_Scalar::call(grad, &Scalar::Int(2))?"
        );
        assert_eq!(
            rust(env, "-0.5 * grad"),
            "ops::mul_Scalar::call(grad, &Scalar::Double(-0.5))?"
        );
        assert_eq!(
            rust(env, "1 - grad"),
            "ops::rsub_Scalar::call(grad, &Scalar::Int(1), &Scalar::Int(1))?"
        );
        assert_eq!(
            rust(env, "2 / self"),
            "ops::div_Tensor::call(&ops::full_like::call(&self_, &Scalar::Int(2), None, None, None, None, None)?, &self_)?"
        );
        assert_eq!(
            rust(env, "-grad * (self == other)"),
            "ops::mul_Tensor::call(&ops::neg::call(grad)?, &ops::eq_Tensor::call(&self_, &other)?)?"
        );
        // Methods, `_symint` stripped, a saved value read in place of its expression.
        assert_eq!(
            rust(env, "grad.expand_symint(self.sym_sizes())"),
            "ops::expand::call(grad, &self.self_sym_sizes, false)?"
        );
        assert_eq!(rust(env, "grad.sum()"), "ops::sum::call(grad, None)?");
        assert_eq!(
            rust(env, "grad.sum(0, true)"),
            "ops::sum_dim_IntList::call(grad, Some(&[0]), true, None)?"
        );
        assert_eq!(
            rust(env, "at::where(self == other, grad, 0)"),
            "ops::where_ScalarOther::call(&ops::eq_Tensor::call(&self_, &other)?, grad, &Scalar::Int(0))?"
        );
        // TensorOptions collapse dtype, layout, device and pin_memory.
        assert_eq!(
            rust(env, "at::zeros_symint({2, d}, grad.options())"),
            "ops::zeros::call(&[2, self.d], Some(grad.scalar_type()), None, Some(grad.device()), None)?"
        );
        // Tuples and std::get.
        assert_eq!(
            ok(env, "std::get<0>(at::_unique(self, /*sorted=*/false))"),
            (
                "ops::_unique::call(&self_, false, false)?.0".to_string(),
                CxxType::Tensor
            )
        );
    });
}

#[test]
fn helpers_ternaries_and_optionals() {
    with_env(|env| {
        assert_eq!(
            rust(
                env,
                "handle_r_to_c(self.scalar_type(), maybe_multiply(grad, alpha.conj()))"
            ),
            "handle_r_to_c(self.self_scalar_type, &maybe_multiply(grad, &self.alpha.conj())?)?"
        );
        assert_eq!(
            rust(
                env,
                "sum_backward_symint(grad, self.sym_sizes(), dim, keepdim)"
            ),
            "sum_backward(grad, &self.self_sym_sizes, self.dim.as_deref(), self.keepdim)?"
        );
        // A trailing optional parameter left out; overloads by parameter type.
        assert_eq!(
            rust(env, "div_backward(grad, other)"),
            "div_backward(grad, &other, None)?"
        );
        assert_eq!(
            rust(env, r#"div_backward(grad, s, "floor")"#),
            r#"div_backward_scalar(grad, &self.s, Some("floor"))?"#
        );
        assert_eq!(
            rust(env, "keepdim ? grad : -grad"),
            "if self.keepdim { grad.clone() } else { ops::neg::call(grad)? }"
        );
        assert_eq!(
            ok(
                env,
                "bias.defined() ? linear_backward(self, grad, other, grad_input_mask) : std::tuple<Tensor, Tensor, Tensor>()"
            ),
            (
                "if bias.is_some() { linear_backward(&self_, grad, &other, &grad_input_mask)? } else { (None, None, None) }".to_string(),
                CxxType::Tuple(vec![CxxType::OptTensor; 3])
            )
        );
        // Undefined-able gradients: passed as options, or checked where a tensor is needed.
        assert_eq!(
            rust(env, "pair(grads[0], grad)"),
            "pair(grads[0].as_ref(), Some(grad))?"
        );
        assert_eq!(
            rust(env, "grads[1] * 2"),
            "ops::mul_Scalar::call(defined(&grads[1])?, &Scalar::Int(2))?"
        );
        assert_eq!(rust(env, "grad"), "grad.clone()");
        assert_eq!(rust(env, "bias"), "bias.clone()");
        // Integer arithmetic keeps Rust's precedence without redundant parentheses.
        assert_eq!(
            ok(env, "(d + 1) * 2 - grad.dim()"),
            (
                "(self.d + 1) * 2 - grad.dim() as i64".to_string(),
                CxxType::Int
            )
        );
        assert_eq!(
            ok(env, "d > 0 && !keepdim"),
            ("self.d > 0 && !self.keepdim".to_string(), CxxType::Bool)
        );
        assert_eq!(
            ok(env, "s.toDouble() * 0.5"),
            ("self.s.to_double()? * 0.5".to_string(), CxxType::Float)
        );
        assert_eq!(
            rust(env, r#"not_implemented("foo")"#),
            r#"Err::<Tensor, _>(not_implemented("foo"))?"#
        );
        assert_eq!(
            rust(env, "at::kFloat == self.scalar_type()"),
            "ScalarType::Float == self.self_scalar_type"
        );
    });
}

#[test]
fn refusals_say_why() {
    with_env(|env| {
        let why = |f: &str| translate(f, env).unwrap_err();
        assert_eq!(
            why("unknown_helper(grad)"),
            Refusal::MissingHelper("unknown_helper".into())
        );
        assert_eq!(
            why("grad.conj()"),
            Refusal::UndeclaredOperator("conj".into())
        );
        assert_eq!(
            why("at::sgn(grad)"),
            Refusal::UndeclaredOperator("sgn".into())
        );
        assert_eq!(why("nobody + 1"), Refusal::UnknownName("nobody".into()));
        assert!(matches!(
            why("grad.expand(true)"),
            Refusal::NoMatchingOverload { .. }
        ));
        assert!(matches!(
            why("maybe_multiply(grad)"),
            Refusal::NoMatchingOverload { .. }
        ));
        assert!(matches!(
            why("fmap(x, [](int i){return -i;})"),
            Refusal::Parse(_)
        ));
        assert!(matches!(
            why("keepdim ? grad : d"),
            Refusal::TypeMismatch(_)
        ));
        assert!(matches!(why("grad.sizes()[0]"), Refusal::Unsupported(_)));
        assert_eq!(
            why("grad.conj()").to_string(),
            "operator `conj` is not declared by ratten"
        );
        // In-place overloads are never candidates.
        assert!(matches!(
            why("grad.add_(other)"),
            Refusal::UndeclaredOperator(_)
        ));
        let deep = format!("{}grad{}", "-(".repeat(10_000), ")".repeat(10_000));
        assert!(matches!(why(&deep), Refusal::Parse(_)));
    });
}
