//! Per-call cost of the dispatch paths, for instruction counting under a profiler
//! (`valgrind --tool=callgrind` or `perf stat`): `dispatch_cost <indirect|typed|chain|boxed> [n]`.

use std::hint::black_box;

use ratten_core::dispatch_key_set::AFTER_AUTOGRAD_KEYSET;
use ratten_core::local_dispatch_key_set::ExcludeDispatchKeyGuard;
use ratten_core::{Device, ScalarType, TensorBase};
use ratten_dispatch::{
    CppFunction, DispatchKey, DispatchKeySet, IValue, Library, LibraryKind, Result, Stack,
    TypedOperatorHandle,
};

type T2 = (TensorBase, TensorBase);

#[inline(never)]
fn trivial(a: &TensorBase, b: &TensorBase) -> Result<i64> {
    Ok(a.key_set().raw_repr() as i64 ^ b.key_set().raw_repr() as i64)
}

fn main() -> Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "typed".into());
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut d = Library::new(LibraryKind::Def, "cost", None, file!(), line!())?;
    d.def("one(Tensor a, Tensor b) -> int")?;
    let mut cpu = Library::new(
        LibraryKind::Impl,
        "cost",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )?;
    cpu.impl_("one", CppFunction::typed::<T2, i64, _>(trivial))?;
    let one = TypedOperatorHandle::<T2, i64>::find("cost::one", "")?;
    let mut ag = Library::new(
        LibraryKind::Impl,
        "cost",
        Some(DispatchKey::AutogradCPU),
        file!(),
        line!(),
    )?;
    ag.impl_(
        "one",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            move |ks: DispatchKeySet, a: &TensorBase, b: &TensorBase| {
                one.redispatch(ks & AFTER_AUTOGRAD_KEYSET, (a, b))
            },
        ),
    )?;
    let a = TensorBase::empty(&[2], ScalarType::Float, Device::CPU)?;
    let b = TensorBase::empty(&[2], ScalarType::Float, Device::CPU)?;
    let f: fn(&TensorBase, &TensorBase) -> Result<i64> = black_box(trivial);
    let mut acc = 0i64;
    match mode.as_str() {
        "indirect" => {
            for _ in 0..n {
                acc ^= black_box(f)(black_box(&a), black_box(&b))?;
            }
        }
        "chain" => {
            for _ in 0..n {
                acc ^= one.call((black_box(&a), black_box(&b)))?;
            }
        }
        "typed" | "boxed" => {
            let _g = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
            if mode == "typed" {
                for _ in 0..n {
                    acc ^= one.call((black_box(&a), black_box(&b)))?;
                }
            } else {
                let mut stack: Stack = Vec::with_capacity(2);
                for _ in 0..n {
                    stack.clear();
                    stack.push(IValue::Tensor(a.clone()));
                    stack.push(IValue::Tensor(b.clone()));
                    one.handle().call_boxed(&mut stack)?;
                }
            }
        }
        other => {
            return Err(ratten_core::Error::value(format!(
                "unknown mode '{other}'; expected indirect, typed, chain or boxed"
            )))
        }
    }
    println!("{mode}: {n} calls, acc {acc}");
    Ok(())
}
