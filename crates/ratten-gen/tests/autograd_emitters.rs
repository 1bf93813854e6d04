//! The autograd emitters' text for representative operators of ratten-aten's declarations
//! (a binary op, a reduction with optional dims, a view, an in-place op, an out= op, a
//! multi-output op, a `not_implemented` entry), and the coverage of the formulas.

use std::path::Path;

use ratten_gen::codegen::autograd::functions::{coverage, Translation};
use ratten_gen::codegen::autograd::variable_type::forward_coverage;
use ratten_gen::codegen::{generate_from_path, GenOptions, GeneratedFile, Model};
use ratten_schema::derivatives::Derivatives;
use ratten_schema::native::NativeFunctions;

fn aten() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ratten-aten")
}

/// The FunctionsManual signatures the formulas are translated against.
fn manual() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/functions_manual.rs")
}

fn files() -> Vec<GeneratedFile> {
    let root = aten();
    generate_from_path(
        &root.join("native_functions.yaml"),
        None,
        Some(&root.join("derivatives.yaml")),
        &GenOptions::autograd(Some(manual())),
    )
    .unwrap_or_else(|e| panic!("ratten-aten's declarations do not generate: {e:?}"))
}

fn file<'a>(files: &'a [GeneratedFile], name: &str) -> &'a str {
    &files
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} is not generated"))
        .contents
}

/// The item of `text` starting at the line containing `start`, up to its closing `}` at
/// column 0.
fn item<'a>(text: &'a str, start: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("`{start}` not found"));
    let begin = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let end = text[at..].find("\n}\n").map_or(text.len(), |p| at + p + 3);
    &text[begin..end]
}

fn has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "`{p}` missing from:\n{text}");
    }
}

#[test]
fn mul_tensor_node_kernel_and_registration() {
    let fs = files();
    let f = file(&fs, "functions/m.rs");
    has(
        item(f, "pub struct MulBackward0 {"),
        &[
            "pub other: SavedVariable,",
            "pub other_scalar_type: ScalarType,",
            "pub self_: SavedVariable,",
            "pub self_scalar_type: ScalarType,",
        ],
    );
    has(
        item(f, "impl Node for MulBackward0 {"),
        &[
            "Cow::Borrowed(\"MulBackward0\")",
            "let self_ix = gen.range(1);\n        let other_ix = gen.range(1);",
            "let any_grad_defined = any_variable_defined(&grads);",
            "let self_ = self.self_.unpack(&this)?;",
            "if self.base.should_compute_output(self_ix) && any_grad_defined {",
            "let grad = defined(&grads[0])?;",
            "let grad_result = mul_tensor_backward(grad, &other, self.self_scalar_type)?;",
            "copy_range(&mut grad_inputs, self_ix, Some(grad_result));",
            "fn release_variables(&self) {\n        self.other.reset_data();\n        self.self_.reset_data();",
        ],
    );
    let k = item(file(&fs, "variable_type/m.rs"), "pub(crate) fn mul_Tensor(");
    has(
        k,
        &[
            "let inputs = [Some(self_), Some(other)];",
            "let requires_grad = compute_requires_grad(&inputs);",
            "Some(new_node!(MulBackward0 {",
            "next_edges: collect_next_edges(&inputs),",
            "self_: SavedVariable::new(self_, false),",
            "other_scalar_type: other.scalar_type(),",
            "let _guard = AutoDispatchBelowADInplaceOrView::new();",
            "ops::mul_Tensor::redispatch(ks & AFTER_AUTOGRAD_KEYSET, self_, other)?",
            "set_history(&[Some(&result)], &node)?;",
        ],
    );
    // Saved inputs are taken before the call.
    assert!(k.find("SavedVariable::new(self_").unwrap() < k.find("redispatch").unwrap());
    has(
        file(&fs, "registration.rs"),
        &[
            "ratten_dispatch::torch_library_impl!(aten, Autograd, |m| {",
            "ops::mul_Tensor::kernel(WithKeySet(variable_type::mul_Tensor))",
            "ratten_dispatch::torch_library_impl!(aten, ADInplaceOrView, |m| {",
            "ops::mul__Tensor::kernel(WithKeySet(inplace_or_view::mul__Tensor))",
            "pub fn ensure_linked() {",
        ],
    );
}

#[test]
fn sum_dim_saves_sizes_and_optional_dims() {
    let fs = files();
    let node = item(file(&fs, "functions/s.rs"), "pub struct SumBackward1 {");
    has(
        node,
        &[
            "pub dim: Option<Vec<i64>>,",
            "pub keepdim: bool,",
            "pub self_sym_sizes: Vec<i64>,",
        ],
    );
    has(
        item(file(&fs, "functions/s.rs"), "impl Node for SumBackward1 {"),
        &["let grad_result = sum_backward(
                grad,
                &self.self_sym_sizes,
                self.dim.as_deref(),
                self.keepdim,
            )?;"],
    );
    has(
        item(
            file(&fs, "variable_type/su.rs"),
            "pub(crate) fn sum_dim_IntList(",
        ),
        &[
            "dim: dim.map(|v| v.to_vec()),",
            "self_sym_sizes: self_.sizes().to_vec(),",
        ],
    );
}

#[test]
fn transpose_is_a_view_with_history() {
    let fs = files();
    let v = item(
        file(&fs, "inplace_or_view/t.rs"),
        "pub(crate) fn transpose_int(",
    );
    has(
        v,
        &[
            "ops::transpose_int::redispatch(ks & AFTER_AD_INPLACE_OR_VIEW_KEYSET, self_, dim0, dim1)?",
            "as_view(self_, &ret, true, true, creation_meta(false))?;",
        ],
    );
    has(
        item(
            file(&fs, "variable_type/t.rs"),
            "pub(crate) fn transpose_int(",
        ),
        &[
            "Some(new_node!(TransposeBackward0 {",
            "dim0,",
            "set_history(&[Some(&result)], &node)?;",
        ],
    );
    // Multi-output views make each output a view of `self`.
    has(
        item(
            file(&fs, "inplace_or_view/s.rs"),
            "pub(crate) fn split_Tensor(",
        ),
        &[
            "for t in &ret {",
            "as_view(self_, t, true, true, creation_meta(true))?;",
        ],
    );
}

#[test]
fn inplace_mul_checks_saves_a_clone_and_rebases() {
    let fs = files();
    let k = item(
        file(&fs, "variable_type/m.rs"),
        "pub(crate) fn mul__Tensor(",
    );
    has(
        k,
        &[
            ") -> Result<Aliased<0>> {",
            "check_inplace(self_, requires_grad)?;",
            "Some(new_node!(MulBackward0 {",
            "self_: SavedVariable::new(&ops::clone::call(self_, None)?, false),",
            "ops::mul__Tensor::redispatch(ks & AFTER_AUTOGRAD_KEYSET, self_, other)?",
            "rebase_history(self_, &node)?;",
            "Ok(ret)",
        ],
    );
    has(
        item(
            file(&fs, "inplace_or_view/m.rs"),
            "pub(crate) fn mul__Tensor(",
        ),
        &[
            "ops::mul__Tensor::redispatch(ks & AFTER_AD_INPLACE_OR_VIEW_KEYSET, self_, other)?",
            "increment_version(self_);",
        ],
    );
}

#[test]
fn out_variants_refuse_grad_and_bump_versions() {
    let fs = files();
    has(
        item(file(&fs, "variable_type/m.rs"), "pub(crate) fn mul_out("),
        &[
            "let inputs = [Some(self_), Some(other), Some(out)];",
            "if compute_requires_grad(&inputs) {",
            "\"mul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.\"",
            "ops::mul_out::redispatch(ks & AFTER_AUTOGRAD_KEYSET, self_, other, out)?",
        ],
    );
    has(
        item(file(&fs, "inplace_or_view/m.rs"), "pub(crate) fn mul_out("),
        &["increment_version(out);"],
    );
    // Two written outputs: both bumped.
    has(
        item(
            file(&fs, "inplace_or_view/m.rs"),
            "pub(crate) fn max_dim_max(",
        ),
        &["increment_version(max);", "increment_version(max_values);"],
    );
}

#[test]
fn max_dim_differentiates_values_only() {
    let fs = files();
    has(
        item(file(&fs, "functions/m.rs"), "pub struct MaxBackward0 {"),
        &[
            "pub indices: SavedVariable,",
            "pub self_sym_sizes: Vec<i64>,",
        ],
    );
    let k = item(file(&fs, "variable_type/m.rs"), "pub(crate) fn max_dim(");
    has(
        k,
        &[
            ") -> Result<(Tensor, Tensor)> {",
            "indices: Default::default(),",
            "let (values, indices) = {",
            "node.indices = SavedVariable::new(&indices, false);",
            "set_history(&[Some(&values)], &node)?;",
            "Ok((values, indices))",
        ],
    );
    // The saved output is recorded after the call, before the history is set.
    assert!(k.find("node.indices").unwrap() > k.find("redispatch").unwrap());
    assert!(k.find("node.indices").unwrap() < k.find("set_history").unwrap());
}

#[test]
fn not_implemented_entries_and_manual_formulas() {
    let fs = files();
    has(
        item(
            file(&fs, "functions/u.rs"),
            "impl Node for UniqueDimBackward0 {",
        ),
        &[
            "if self.base.should_compute_output(self_ix) && any_grad_defined {",
            "return Err(not_implemented(\"unique_dim\"));",
        ],
    );
    // `TensorGeometry(self)` is saved as a TensorGeometry for as_strided_backward.
    has(
        item(
            file(&fs, "functions/a.rs"),
            "impl Node for AsStridedBackward0 {",
        ),
        &["as_strided_backward(", "&self.self_geometry"],
    );
    has(
        file(&fs, "variable_type/as.rs"),
        &["self_geometry: TensorGeometry::new(self_)"],
    );
    // A formula listed in MANUAL_FORMULAS (roll's has a C++ lambda) runs its hand-written
    // replacement.
    has(
        item(file(&fs, "functions/r.rs"), "impl Node for RollBackward0 {"),
        &["roll_backward(grad, &self.shifts, &self.dims)?"],
    );
}

#[test]
fn decompositions_get_no_kernel_and_undifferentiated_ops_refuse() {
    let fs = files();
    let reg = file(&fs, "registration.rs");
    // hstack is CompositeImplicitAutograd without an entry: its decomposition is
    // differentiated. matmul is too, its entry being torch's AutogradNestedTensor kernel.
    assert!(!reg.contains("ops::hstack::kernel"), "hstack got a kernel");
    assert!(!reg.contains("ops::matmul::kernel"), "matmul got a kernel");
    // copy_'s Autograd kernel is written by hand (manual_kernels.rs).
    assert!(
        !reg.contains("variable_type::copy_)"),
        "copy_ got a generated kernel"
    );
    // Every Autograd kernel is registered under its operator's name.
    for f in fs
        .iter()
        .filter(|f| f.name.starts_with("variable_type/") && !f.name.ends_with("mod.rs"))
    {
        for line in f.contents.lines() {
            if let Some(rest) = line.strip_prefix("pub(crate) fn ") {
                let name = rest.split('(').next().unwrap();
                assert!(
                    reg.contains(&format!("variable_type::{name})"))
                        || reg.contains(&format!("variable_type::{name},")),
                    "{name} is not registered"
                );
            }
        }
    }
}

/// How many formulas of ratten's derivatives.yaml entries are translated; every one that is
/// not is listed (and raises a not-implemented error in its node, checked above).
#[test]
fn formula_coverage() {
    let root = aten();
    let nf = NativeFunctions::load(&root.join("native_functions.yaml"), None).unwrap();
    let d = Derivatives::load(&root.join("derivatives.yaml")).unwrap();
    let model = Model::build(&nf, Some(&d), &GenOptions::autograd(None).model()).unwrap();
    let tr = Translation::new(&model, Some(&manual()));
    let (translated, missing) = coverage(&model, &tr);
    eprintln!(
        "formulas: {translated} translated, {} not translated:",
        missing.len()
    );
    for m in &missing {
        eprintln!(
            "  {} ({}): {} -- {}",
            m.node,
            m.vars.join(", "),
            m.formula,
            m.why
        );
    }
    assert!(translated > 0);
    let fs = files();
    for m in &missing {
        let in_some_node = fs
            .iter()
            .filter(|f| f.name.starts_with("functions/"))
            .any(|f| {
                f.contents
                    .contains(&format!("the formula `{}`", m.formula.replace('"', "\\\"")))
            });
        assert!(
            in_some_node,
            "{}'s untranslated formula raises no error",
            m.node
        );
    }
}

/// How many derived kernels propagate tangents from their `result:` formulas; each one that
/// does not is listed with why (it refuses inputs with tangents).
#[test]
fn forward_formula_coverage() {
    let root = aten();
    let nf = NativeFunctions::load(&root.join("native_functions.yaml"), None).unwrap();
    let d = Derivatives::load(&root.join("derivatives.yaml")).unwrap();
    let model = Model::build(&nf, Some(&d), &GenOptions::autograd(None).model()).unwrap();
    let tr = Translation::new(&model, Some(&manual()));
    let all = forward_coverage(&model, &tr);
    let refused: Vec<_> = all.iter().filter(|(_, r)| r.is_err()).collect();
    let no_formula = refused
        .iter()
        .filter(|(_, r)| r.as_ref().err().is_some_and(|e| e == "no forward formula"))
        .count();
    eprintln!(
        "forward AD: {} derived kernels, {} with translated formulas, {} whose entry has none, {} refused:",
        all.len(),
        all.len() - refused.len(),
        no_formula,
        refused.len() - no_formula
    );
    for (op, r) in &refused {
        eprintln!("  {op}: {}", r.as_ref().unwrap_err());
    }
    // Every entry with a `result:` formula gets it translated.
    assert!(
        refused.len() - no_formula <= 12,
        "{} refused",
        refused.len() - no_formula
    );
    assert!(all.len() - refused.len() > 250);
}

/// An out-of-tree library (examples/myops) from its own derivatives.yaml: formulas call
/// ratten-aten's operators (`aten::`) and the library's own (`ops::`), the code uses
/// ratten-autograd's prelude, and the kernels register under the library's namespace.
#[test]
fn out_of_tree_library_autograd() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let myops = workspace.join("examples/myops");
    let mut opts = GenOptions::out_of_tree_autograd(
        "myops",
        workspace.join("crates/ratten-autograd/src/functions_manual.rs"),
        aten().join("native_functions.yaml"),
    );
    opts.inherits.insert(
        "ScaledAddBase".into(),
        "crate::kernels::ScaledAddBase".into(),
    );
    let fs = generate_from_path(
        &myops.join("native_functions.yaml"),
        None,
        Some(&myops.join("derivatives.yaml")),
        &opts,
    )
    .unwrap_or_else(|e| panic!("myops' autograd does not generate: {e:?}"));
    let node = file(&fs, "functions/s.rs");
    has(
        node,
        &[
            "use crate::generated::operators as ops;",
            "use ratten_aten::operators as aten;",
            "use ratten_autograd::prelude::*;",
            "pub struct ScaledAddBackward0 {",
            "pub scale: f64,",
            "aten::mul_Scalar::call(grad, &Scalar::Double(self.scale))?",
        ],
    );
    let kernels = file(&fs, "variable_type/s.rs");
    has(
        item(kernels, "pub(crate) fn scaled_add("),
        &[
            "ops::scaled_add::redispatch(ks & AFTER_AUTOGRAD_KEYSET, self_, other, scale)?",
            // auto_linear: the library's own operator on the tangents.
            "ops::scaled_add::call(&self_t, &other_t, scale)?",
            "set_history(&[Some(&result)], &node)?;",
        ],
    );
    has(
        item(kernels, "pub(crate) fn scaled_add_("),
        &[
            "check_inplace(self_, requires_grad)?;",
            "rebase_history(self_, &node)?;",
        ],
    );
    has(
        item(kernels, "pub(crate) fn scaled_add_out("),
        &["scaled_add(): functions with out=... arguments don't support automatic differentiation"],
    );
    has(
        file(&fs, "registration.rs"),
        &[
            "ratten_dispatch::torch_library_impl!(myops, Autograd, |m| {",
            "ratten_dispatch::torch_library_impl!(myops, ADInplaceOrView, |m| {",
            "pub fn ensure_linked() {",
        ],
    );
    assert!(fs.iter().all(|f| f.contents.starts_with(
        "// @generated by `ratten-gen generate --autograd` from native_functions.yaml and derivatives.yaml (myops)."
    )));
}
