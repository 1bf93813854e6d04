//! The kernels of one overload per dispatch key (torchgen's `BackendIndex` /
//! `BackendMetadata`): typed references to the functions the yaml names, structured meta /
//! impl pairs, and the composite kernels the generator writes itself.

use std::collections::{BTreeMap, BTreeSet};

use ratten_schema::native::{NativeFunction, NativeFunctions, SchemaKind};

use super::names::{kernel_ident, snake, unambiguous_name};
use super::types::Refusal;
use super::ModelOptions;

/// A function in the kernel module (`crate::native::add_out`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPath {
    /// The module (`crate::native`, `crate::kernels`).
    pub module: String,
    /// The function (`add_out`, `r#where`).
    pub function: String,
}

impl KernelPath {
    /// `module::function`.
    pub fn path(&self) -> String {
        format!("{}::{}", self.module, self.function)
    }
}

/// The kernel of one overload for one dispatch key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelRef {
    /// A kernel function the yaml names (`dispatch: CPU: add`), taking the borrowed arguments
    /// in schema order (torchgen's native signature).
    Plain(KernelPath),
    /// A structured kernel: `meta` (shape checks and output allocation, returning the
    /// state) then, unless this is the Meta key, `impl` (the computation on the out=
    /// overload's arguments).
    Structured {
        meta: KernelPath,
        /// `None` for the Meta key.
        implementation: Option<KernelPath>,
        /// The Rust state type `structured_inherits` names, if any.
        state_type: Option<String>,
        /// The out= overload (index into `NativeFunctions::functions`) whose arguments the
        /// impl takes.
        out_fn: usize,
    },
    /// torchgen's composite kernel for an `autogen:` out= overload: the functional overload
    /// `functional`, its result copied into `out`.
    GeneratedOut { functional: usize },
    /// A generated functional overload: `self` copied, then the in-place overload `inplace`.
    GeneratedFunctional { inplace: usize },
}

/// What building the kernel references needs besides the function itself.
pub(crate) struct KernelContext<'a> {
    pub nf: &'a NativeFunctions,
    pub opts: &'a ModelOptions,
    /// The index of each function by `name.overload`.
    pub by_name: BTreeMap<String, usize>,
    /// Kernel names the yaml gives more than one overload.
    pub shared: BTreeSet<String>,
    /// Operator names with an overload without a name (`names_with_unnamed_overload`).
    pub unnamed: BTreeSet<String>,
}

impl KernelContext<'_> {
    fn path(&self, kernel: &str, f: &NativeFunction) -> KernelPath {
        KernelPath {
            module: self.opts.kernel_module.clone(),
            function: kernel_ident(
                kernel,
                f,
                self.shared.contains(kernel),
                !self.unnamed.contains(&f.func.name.name),
            ),
        }
    }

    /// The structured kernels of the group whose out= overload is `out_index`, for every key
    /// the out= overload has a structured kernel for, plus Meta.
    fn structured(&self, out_index: usize) -> Result<BTreeMap<String, KernelRef>, Refusal> {
        let out = &self.nf.functions[out_index];
        let state_type = match &out.structured_inherits {
            None => None,
            Some(base) => Some(
                self.opts
                    .inherits
                    .get(base)
                    .cloned()
                    .ok_or_else(|| Refusal::UnknownInheritedBase { base: base.clone() })?,
            ),
        };
        // The meta function belongs to the group, named after its functional overload
        // (torchgen's meta class), or the out= function's own name without one.
        let functional = self
            .nf
            .groups()
            .find(|g| g.out == out_index)
            .map(|g| &self.nf.functions[g.functional])
            .unwrap_or(out);
        let meta = KernelPath {
            module: self.opts.kernel_module.clone(),
            function: format!("{}_meta", snake(&unambiguous_name(functional))),
        };
        let mut kernels = BTreeMap::new();
        for b in out.dispatch.iter().filter(|b| b.structured) {
            kernels.insert(
                b.dispatch_key.clone(),
                KernelRef::Structured {
                    meta: meta.clone(),
                    implementation: Some(self.path(&b.kernel, out)),
                    state_type: state_type.clone(),
                    out_fn: out_index,
                },
            );
        }
        kernels.insert(
            "Meta".to_string(),
            KernelRef::Structured {
                meta,
                implementation: None,
                state_type,
                out_fn: out_index,
            },
        );
        Ok(kernels)
    }

    /// The kernels of function `index` per dispatch key name.
    pub fn kernels(&self, index: usize) -> Result<BTreeMap<String, KernelRef>, Refusal> {
        let f = &self.nf.functions[index];
        let mut kernels = BTreeMap::new();
        if f.structured {
            kernels = self.structured(index)?;
        } else if let Some(d) = &f.structured_delegate {
            let out_index =
                *self
                    .by_name
                    .get(&d.to_string())
                    .ok_or_else(|| Refusal::UnknownDelegate {
                        name: d.to_string(),
                    })?;
            kernels = self.structured(out_index)?;
        }
        for b in &f.dispatch {
            if f.structured && b.structured {
                continue;
            }
            let k = if f.is_generated() && f.kind() == SchemaKind::Out {
                let functional = self
                    .nf
                    .groups()
                    .find(|g| g.out == index)
                    .map(|g| g.functional)
                    .ok_or(Refusal::GeneratedWithoutSibling { kind: "out=" })?;
                KernelRef::GeneratedOut { functional }
            } else if f.is_generated() && f.kind() == SchemaKind::Functional {
                let inplace = self
                    .nf
                    .groups()
                    .find(|g| g.functional == index)
                    .and_then(|g| g.inplace)
                    .ok_or(Refusal::GeneratedWithoutSibling { kind: "functional" })?;
                KernelRef::GeneratedFunctional { inplace }
            } else {
                KernelRef::Plain(self.path(&b.kernel, f))
            };
            kernels.insert(b.dispatch_key.clone(), k);
        }
        Ok(kernels)
    }
}
