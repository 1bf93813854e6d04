//! Dispatch overhead: a typed call with two tensor arguments to a trivial kernel through one
//! key, through a chain of three keys each redispatching, a boxed call, and a plain indirect
//! function call beside them.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
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
    Ok(black_box(a).key_set().raw_repr() as i64 ^ black_box(b).key_set().raw_repr() as i64)
}

fn setup() -> Vec<Library> {
    let mut libs = Vec::new();
    let mut d = Library::new(LibraryKind::Def, "bench", None, file!(), line!()).unwrap();
    d.def("one(Tensor a, Tensor b) -> int").unwrap();
    d.def("chain(Tensor a, Tensor b) -> int").unwrap();
    libs.push(d);
    let mut cpu = Library::new(
        LibraryKind::Impl,
        "bench",
        Some(DispatchKey::CPU),
        file!(),
        line!(),
    )
    .unwrap();
    cpu.impl_("one", CppFunction::typed::<T2, i64, _>(trivial))
        .unwrap();
    cpu.impl_("chain", CppFunction::typed::<T2, i64, _>(trivial))
        .unwrap();
    libs.push(cpu);
    let chain = TypedOperatorHandle::<T2, i64>::find("bench::chain", "").unwrap();
    let mut ag = Library::new(
        LibraryKind::Impl,
        "bench",
        Some(DispatchKey::AutogradCPU),
        file!(),
        line!(),
    )
    .unwrap();
    ag.impl_(
        "chain",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            move |ks: DispatchKeySet, a: &TensorBase, b: &TensorBase| {
                chain.redispatch(ks & AFTER_AUTOGRAD_KEYSET, (a, b))
            },
        ),
    )
    .unwrap();
    libs.push(ag);
    let mut adv = Library::new(
        LibraryKind::Impl,
        "bench",
        Some(DispatchKey::ADInplaceOrView),
        file!(),
        line!(),
    )
    .unwrap();
    adv.impl_(
        "chain",
        CppFunction::typed_with_keyset::<T2, i64, _>(
            move |ks: DispatchKeySet, a: &TensorBase, b: &TensorBase| {
                chain.redispatch(
                    ks & DispatchKeySet::full_after(DispatchKey::ADInplaceOrView),
                    (a, b),
                )
            },
        ),
    )
    .unwrap();
    libs.push(adv);
    libs
}

fn bench(c: &mut Criterion) {
    let _libs = setup();
    let a = TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
    let b = TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap();
    let one = TypedOperatorHandle::<T2, i64>::find("bench::one", "").unwrap();
    let chain = TypedOperatorHandle::<T2, i64>::find("bench::chain", "").unwrap();

    let f: fn(&TensorBase, &TensorBase) -> Result<i64> = black_box(trivial);
    c.bench_function("indirect call", |bn| {
        bn.iter(|| black_box(f)(black_box(&a), black_box(&b)).unwrap())
    });

    c.bench_function(
        "chain of 3 keys (AutogradCPU -> ADInplaceOrView -> CPU)",
        |bn| bn.iter(|| chain.call((black_box(&a), black_box(&b))).unwrap()),
    );

    // One key: below autograd (like InferenceMode), so the CPU kernel is the only hop.
    let _below_autograd = ExcludeDispatchKeyGuard::new(DispatchKey::AutogradFunctionality);
    c.bench_function("typed call, one key (CPU)", |bn| {
        bn.iter(|| one.call((black_box(&a), black_box(&b))).unwrap())
    });
    c.bench_function("boxed call, one key (CPU)", |bn| {
        let mut stack: Stack = Vec::with_capacity(2);
        bn.iter(|| {
            stack.clear();
            stack.push(IValue::Tensor(a.clone()));
            stack.push(IValue::Tensor(b.clone()));
            one.handle().call_boxed(&mut stack).unwrap();
            black_box(&stack);
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
