use super::*;

use kernels::KernelPath;

fn nf(yaml: &str) -> NativeFunctions {
    NativeFunctions::parse(yaml, std::path::Path::new("test.yaml"), None).unwrap()
}

fn aten() -> ModelOptions {
    crate::codegen::GenOptions::aten().model()
}

fn model(yaml: &str) -> Model {
    Model::build(&nf(yaml), None, &aten()).unwrap()
}

fn op<'m>(m: &'m Model, name: &str) -> &'m OperatorRecord {
    m.ops
        .iter()
        .find(|o| o.name_with_overload == name)
        .unwrap_or_else(|| panic!("{name} not in the model"))
}

fn plain(op: &OperatorRecord, key: &str) -> String {
    match op.kernels.get(key) {
        Some(KernelRef::Plain(p)) => p.path(),
        other => panic!("{}: {key} is {other:?}", op.name_with_overload),
    }
}

/// The implicit CompositeImplicitAutograd kernel is named after the operator, so `clip` and
/// `clip.Tensor` share it; the `Tensor` overload takes the suffix, as its API name does, when
/// the operator has an overload without a name.
#[test]
fn implicit_kernels_of_an_unnamed_and_a_tensor_overload_differ() {
    let m = model(
        "- func: clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor\n\n\
         - func: clip.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor\n\n\
         - func: clip.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)\n\n\
         - func: clip.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)\n",
    );
    let key = "CompositeImplicitAutograd";
    assert_eq!(plain(op(&m, "clip"), key), "crate::native::clip");
    assert_eq!(
        plain(op(&m, "clip.Tensor"), key),
        "crate::native::clip_tensor"
    );
    assert_eq!(plain(op(&m, "clip.out"), key), "crate::native::clip_out");
    assert_eq!(
        plain(op(&m, "clip.Tensor_out"), key),
        "crate::native::clip_tensor_out"
    );
}

#[test]
fn kernel_names_shared_by_overloads_get_the_overload_suffix() {
    let m = model(
        "- func: div.Scalar(Tensor self, Scalar other) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: div\n\n\
         - func: div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: div\n\n\
         - func: fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)\n  dispatch:\n    CPU: fill_\n\n\
         - func: fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)\n  dispatch:\n    CPU: fill_\n\n\
         - func: eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU: eq_Scalar_out\n",
    );
    assert_eq!(
        plain(op(&m, "div.Scalar"), "CompositeExplicitAutograd"),
        "crate::native::div_scalar"
    );
    assert_eq!(
        plain(op(&m, "div.Scalar_mode"), "CompositeExplicitAutograd"),
        "crate::native::div_scalar_mode"
    );
    assert_eq!(
        plain(op(&m, "fill_.Scalar"), "CPU"),
        "crate::native::fill_scalar_"
    );
    assert_eq!(plain(op(&m, "fill_.Tensor"), "CPU"), "crate::native::fill_");
    // A unique name is kept, snake-cased.
    assert_eq!(
        plain(op(&m, "eq.Scalar_out"), "CPU"),
        "crate::native::eq_scalar_out"
    );
    // `str?` is `Option<&str>` for kernels.
    let mode = &op(&m, "div.Scalar_mode").args[2];
    assert_eq!(mode.ty.borrowed.render("crate"), "Option<&str>");
    assert_eq!(mode.ty.owned.render("crate"), "Arg<Option<String>>");
}

#[test]
fn keyword_names_are_raw_and_unnamed_overloads_take_the_bare_name() {
    let m = model(
        "- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor\n  variants: function, method\n  dispatch:\n    CPU: where\n\n\
         - func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor\n  dispatch:\n    CPU: clamp\n\n\
         - func: clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor\n  dispatch:\n    CPU: clamp_tensor\n",
    );
    let w = op(&m, "where.self");
    assert_eq!(w.names.short, "r#where");
    assert_eq!(w.names.backend, "r#where");
    assert_eq!(plain(w, "CPU"), "crate::native::r#where");
    assert_eq!(op(&m, "clamp").names.short, "clamp");
    assert_eq!(op(&m, "clamp.Tensor").names.short, "clamp_tensor");
}

const ADD: &str = "
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  structured_delegate: add.out
  variants: function, method
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  structured_delegate: add.out
  variants: method
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU: add_out
- func: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: transpose
- func: transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
  variants: method
  tags: inplace_view
  dispatch:
    CompositeExplicitAutograd: transpose_
- func: transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor
  variants: function
  tags: view_copy
  dispatch:
    CompositeExplicitAutogradNonFunctional: transpose_copy
- func: chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]
  variants: function, method
";

#[test]
fn returns_carry_write_and_view_aliases() {
    let m = model(ADD);
    let add_ = op(&m, "add_.Tensor");
    assert_eq!(
        add_.returns[0].alias,
        Some(arguments::ReturnAlias::Write { arg: 0 })
    );
    assert_eq!(add_.aliased_return(), Some(0));
    let out = op(&m, "add.out");
    assert_eq!(
        out.returns[0].alias,
        Some(arguments::ReturnAlias::Write { arg: 3 })
    );
    assert!(out.view.is_none());
    let t = op(&m, "transpose.int");
    assert_eq!(
        t.returns[0].alias,
        Some(arguments::ReturnAlias::View { arg: 0 })
    );
    assert_eq!(t.aliased_return(), None);
    let v = t.view.as_ref().unwrap();
    assert_eq!(v.kind, arguments::ViewKind::View);
    assert_eq!(v.base, Some(0));
    assert_eq!(
        v.view_copy
            .map(|i| m.op(i).unwrap().name_with_overload.clone())
            .as_deref(),
        Some("transpose_copy.int")
    );
    let ti = op(&m, "transpose_").view.as_ref().unwrap();
    assert_eq!(
        (ti.kind, ti.base),
        (arguments::ViewKind::InplaceView, Some(0))
    );
    let c = op(&m, "chunk");
    assert!(c.args[0].alias.as_ref().unwrap().wildcard_after);
    assert_eq!(
        c.returns[0].alias,
        Some(arguments::ReturnAlias::View { arg: 0 })
    );
    assert_eq!(c.view.as_ref().unwrap().kind, arguments::ViewKind::View);
    assert!(op(&m, "transpose_copy.int").view.is_none());
}

#[test]
fn structured_kernels_are_typed_references() {
    let m = model(ADD);
    let KernelRef::Structured {
        meta,
        implementation,
        state_type,
        out_fn,
    } = &op(&m, "add.Tensor").kernels["CPU"]
    else {
        panic!("add.Tensor's CPU kernel is not structured");
    };
    assert_eq!(
        meta,
        &KernelPath {
            module: "crate::native".into(),
            function: "add_tensor_meta".into()
        }
    );
    assert_eq!(
        implementation.as_ref().unwrap().path(),
        "crate::native::add_out"
    );
    assert_eq!(
        state_type.as_deref(),
        Some("crate::tensor_iterator::TensorIteratorBase")
    );
    assert_eq!(m.ops[*out_fn].name_with_overload, "add.out");
    assert!(matches!(
        &op(&m, "add.Tensor").kernels["Meta"],
        KernelRef::Structured {
            implementation: None,
            ..
        }
    ));
}

#[test]
fn the_signatures_of_one_overload() {
    use signatures::{backend, dispatcher, function, Form};
    let m = model(ADD);
    let add = op(&m, "add.Tensor");
    let d = dispatcher(add);
    assert_eq!(
        d.param_decls("crate"),
        ["self_: &Tensor", "other: &Tensor", "alpha: &Scalar"]
    );
    assert_eq!(
        signatures::args_tuple(add).render("crate"),
        "(Tensor, Tensor, Arg<Scalar>)"
    );
    let short = function(add, Form::Short, false);
    assert_eq!(
        short.sig.param_decls("crate"),
        ["self_: &Tensor", "other: &Tensor"]
    );
    assert_eq!(short.prelude, ["let alpha = Scalar::Int(1);"]);
    assert_eq!(short.call_args, ["self_", "other", "&alpha"]);
    let with = function(add, Form::With, true);
    assert_eq!(with.sig.name, "add_with");
    assert_eq!(
        with.sig.param_decls("crate"),
        ["&self", "other: &Tensor", "alpha: impl Into<Scalar>"]
    );
    assert_eq!(with.call_args, ["self", "other", "&alpha"]);
    let out = op(&m, "add.out");
    let b = backend(out);
    assert_eq!(b.name_with_generics(), "add_outf<'a>");
    assert_eq!(b.param_decls("crate")[3], "out: &'a Tensor");
    assert_eq!(b.result("crate"), "Result<&'a Tensor>");
    assert_eq!(dispatcher(out).result("crate"), "Result<Aliased<3>>");
    let f = function(out, Form::Short, false);
    assert_eq!(f.sig.param_decls("crate")[0], "out: &'a Tensor");
    assert_eq!(f.returns_args, Some(vec!["out".to_string()]));
}

#[test]
fn refusals_name_the_overload_and_the_type() {
    let n = nf("- func: f(Tensor self, Stream s) -> Tensor\n  dispatch:\n    CPU: f\n\n\
                - func: g(Tensor self) -> QScheme\n  dispatch:\n    CPU: g\n\n\
                - func: h(Tensor self, MemoryFormat m=contiguous_format, ScalarType t=long) -> Tensor\n  dispatch:\n    CPU: h\n");
    let r = Model::records(&n, None, &aten());
    let e = r[0].as_ref().unwrap_err();
    assert_eq!(
        e.to_string(),
        "aten::f: argument `s`: ratten has no Rust type for `Stream` (ratten has no streams: it runs on the CPU)"
    );
    assert_eq!(r[1].as_ref().unwrap_err().at, "return 0");
    let h = r[2].as_ref().unwrap();
    assert_eq!(
        h.args[1].default.as_ref().unwrap().expr,
        "crate::native::MemoryFormat::Contiguous"
    );
    assert_eq!(h.args[2].default.as_ref().unwrap().expr, "ScalarType::Long");
    assert!(Model::build(&n, None, &aten()).is_err());
}

#[test]
fn string_defaults_are_str_literals() {
    let n = nf("- func: pad(Tensor self, SymInt[] pad, str mode=\"constant\", str? side='right') -> Tensor\n  dispatch:\n    CPU: pad\n");
    let m = Model::build(&n, None, &aten()).unwrap();
    let p = op(&m, "pad");
    assert_eq!(p.args[2].default.as_ref().unwrap().expr, "\"constant\"");
    assert_eq!(p.args[3].default.as_ref().unwrap().expr, "Some(\"right\")");
}

#[test]
fn differentiability_comes_from_the_functional_entry() {
    let d = ratten_schema::derivatives::Derivatives::parse(
        "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self: handle_r_to_c(self.scalar_type(), grad)\n  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))\n  result: self_t + maybe_multiply(other_t, alpha)\n\n\
         - name: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)\n  self: grad.transpose(dim0, dim1)\n  result: auto_linear\n",
        std::path::Path::new("derivatives.yaml"),
    )
    .unwrap();
    let m = Model::build(&nf(ADD), Some(&d), &aten()).unwrap();
    let add = op(&m, "add.Tensor").differentiability.as_ref().unwrap();
    assert!(add.exact);
    let info = &add.infos[0];
    assert_eq!(info.op.as_deref(), Some("AddBackward0"));
    assert_eq!(info.dispatch_key, "Default");
    assert_eq!(info.args_with_derivatives, ["self", "other"]);
    assert_eq!(info.forward_derivatives.len(), 1);
    // Formulas in torchgen's order (sorted by their key), saved values in first-use order.
    assert_eq!(
        info.all_saved_inputs
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>(),
        ["other_scalar_type", "alpha", "self_scalar_type"]
    );
    // The in-place and out= variants use the functional entry.
    let inplace = op(&m, "add_.Tensor").differentiability.as_ref().unwrap();
    assert!(!inplace.exact);
    assert_eq!(inplace.infos[0].op.as_deref(), Some("AddBackward0"));
    assert!(op(&m, "add.out").differentiability.is_some());
    assert_eq!(
        op(&m, "transpose.int")
            .differentiability
            .as_ref()
            .unwrap()
            .infos[0]
            .op
            .as_deref(),
        Some("TransposeBackward0")
    );
    assert!(op(&m, "chunk").differentiability.is_none());
}
