//! Ports of PyTorch's test/test_dispatch.py (class TestDispatch): every permutation of
//! registration and deregistration order must give the same canonical state and computed
//! table for the same set of live registrations, and the texts are PyTorch 2.15's.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use ratten_dispatch::{Dispatcher, Library, Result};
use ratten_schema::OperatorName;

/// Tests share the process-wide dispatcher; global fallbacks must not leak between them.
static SERIAL: Mutex<()> = Mutex::new(());
static NAMESPACE_INDEX: AtomicUsize = AtomicUsize::new(0);

type Op = fn(&mut Library) -> Result<()>;

#[derive(Clone, Debug)]
struct Outcome {
    state: String,
    table: String,
    provenance: String,
}

const DISPATCH_KEYS_TO_CHECK: &[&str] = &[
    "Undefined",
    "CPU",
    "CUDA",
    "XLA",
    "AutogradOther",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradXLA",
];

/// `extract_dispatch_table_with_keys`, with its regex
/// `registered at .*FallbackKernel\.cpp.*(\[)` -> `registered in pytorch framework [`.
fn extract(table: &str, keys: &[&str]) -> String {
    let mut out = String::new();
    for k in keys {
        for t in table.split('\n') {
            if t.starts_with(k) {
                let mut entry = t.to_string();
                if let Some(a) = entry.find("registered at ") {
                    if let Some(fk) = entry[a..].find("FallbackKernel.cpp") {
                        if let Some(b) = entry.rfind('[') {
                            if b > a + fk {
                                entry = format!(
                                    "{}registered in pytorch framework [{}",
                                    &entry[..a],
                                    &entry[b + 1..]
                                );
                            }
                        }
                    }
                }
                out.push_str(&entry);
                out.push('\n');
            }
        }
    }
    out
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out.sort();
    out
}

fn run_ops(
    name: &str,
    ops: &[Op],
    ctor_order: &[usize],
    dtor_order: &[usize],
    results: &mut HashMap<BTreeSet<usize>, Outcome>,
    expect_raises: bool,
) -> BTreeSet<usize> {
    let ns = format!(
        "__test{}__",
        NAMESPACE_INDEX.fetch_add(1, Ordering::Relaxed) + 1
    );
    let mut refs: Vec<Option<Library>> = (0..ops.len()).map(|_| None).collect();
    let mut active: BTreeSet<usize> = BTreeSet::new();
    let qualified = format!("{ns}::{name}");

    let check = |active: &BTreeSet<usize>,
                 provenance: String,
                 results: &mut HashMap<BTreeSet<usize>, Outcome>| {
        let opname = OperatorName::new(qualified.clone(), "");
        let (state, table) = match Dispatcher::singleton().find_op(&opname) {
            Some(h) => {
                h.check_invariants().expect("invariants");
                (
                    h.dump_state().replace(&ns, "test"),
                    h.dump_computed_table().replace(&ns, "test"),
                )
            }
            None => (String::new(), String::new()),
        };
        let expected = results
            .entry(active.clone())
            .or_insert_with(|| Outcome {
                state: state.clone(),
                table: table.clone(),
                provenance: provenance.clone(),
            })
            .clone();
        assert_eq!(
            expected.state, state,
            "expected from {}; actual from {}",
            expected.provenance, provenance
        );
        assert_eq!(
            expected.table, table,
            "expected from {}; actual from {}",
            expected.provenance, provenance
        );
    };

    results.entry(BTreeSet::new()).or_insert(Outcome {
        state: String::new(),
        table: String::new(),
        provenance: "hardcoded initial state".into(),
    });
    check(&active, "initial state".into(), results);
    let mut set_to_report: BTreeSet<usize> = (0..ops.len()).collect();
    let mut last_ctor = 0;
    for (i, &ix) in ctor_order.iter().enumerate() {
        last_ctor = i;
        let mut lib = Library::from_strings("FRAGMENT", &ns, "").expect("library");
        active.insert(ix);
        match ops[ix](&mut lib) {
            Ok(()) => {
                refs[ix] = Some(lib);
                check(
                    &active,
                    format!("running ctors {:?}", &ctor_order[..=i]),
                    results,
                );
            }
            Err(e) => {
                assert!(expect_raises, "unexpected error: {e}");
                refs[ix] = Some(lib);
                let actual = e.to_string().replace(&ns, "test");
                let expected = results
                    .entry(active.clone())
                    .or_insert_with(|| Outcome {
                        state: actual.clone(),
                        table: String::new(),
                        provenance: format!("error after running ctors {:?}", &ctor_order[..=i]),
                    })
                    .clone();
                assert_eq!(expected.state, actual, "{}", expected.provenance);
                set_to_report = active.clone();
                active.remove(&ix);
                check(
                    &active,
                    format!("failing ctor {ix} after {:?}", &ctor_order[..i]),
                    results,
                );
                break;
            }
        }
    }
    assert!(
        !(expect_raises && active.len() == ops.len()),
        "expected exception to be raised, but nothing was raised (after running ctors {ctor_order:?})"
    );
    for (i, &ix) in dtor_order.iter().enumerate() {
        refs[ix] = None;
        active.remove(&ix);
        check(
            &active,
            format!(
                "running ctors {:?}, then running dtors {:?}",
                &ctor_order[..=last_ctor],
                &dtor_order[..=i]
            ),
            results,
        );
    }
    set_to_report
}

/// `commute`: every constructor order and every destructor order.
fn commute_with(
    name: &str,
    ops: &[Op],
    ctor_order: Option<&[usize]>,
    expect_raises: bool,
) -> Outcome {
    let _serial = SERIAL.lock();
    let mut results = HashMap::new();
    let ctor_orders = match ctor_order {
        Some(o) => vec![o.to_vec()],
        None => permutations(ops.len()),
    };
    let mut reported = BTreeSet::new();
    let all = permutations(ops.len());
    for c in &ctor_orders {
        // Every destructor order up to three registrations (as test_dispatch.py); beyond
        // that (24 to 120 orders each) the reverse, the same and two rotations of the
        // constructor order, to keep debug-build test time reasonable.
        let dtor_orders: Vec<Vec<usize>> = if ops.len() <= 3 {
            all.clone()
        } else {
            let rev: Vec<usize> = c.iter().rev().copied().collect();
            let mut rot = c.clone();
            rot.rotate_left(1);
            let mut rot2 = rev.clone();
            rot2.rotate_left(2);
            vec![rev, c.clone(), rot, rot2]
        };
        for d in &dtor_orders {
            reported = run_ops(name, ops, c, d, &mut results, expect_raises);
        }
    }
    let key = if expect_raises {
        reported
    } else {
        (0..ops.len()).collect()
    };
    results
        .get(&key)
        .cloned()
        .expect("no ordering reached the end")
}

fn commute(name: &str, ops: &[Op]) -> Outcome {
    commute_with(name, ops, None, false)
}

fn ok(_: &mut Library) -> Result<()> {
    Ok(())
}

#[test]
fn test_all_invariants() {
    Dispatcher::singleton().check_all_invariants().unwrap();
}

#[test]
fn test_def() {
    let state = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "CPU", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "AutogradCPU", "impl_t_t").map(drop),
        ],
    )
    .state;
    assert_eq!(
        state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
}

#[test]
fn test_def_impl_schema_mismatch() {
    let state = commute_with(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x, Tensor y) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "", "impl_t_t").map(drop),
        ],
        None,
        true,
    )
    .state;
    assert_eq!(
        state,
        "Inferred operator schema for a C++ kernel function doesn't match the expected function schema.
  operator: test::foo
  expected schema: test::foo(Tensor x, Tensor y) -> Tensor
    registered at /dev/null:0
  inferred schema: (Tensor _0) -> Tensor _0
    impl_t_t
  reason: The number of arguments is different. 2 vs 1."
    );
}

#[test]
fn test_def_with_inference() {
    let state = commute(
        "foo",
        &[
            |m| m.def_name_t_t("foo", "", "default_def_name_t_t").map(drop),
            |m| m.impl_t_t("foo", "CPU", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "AutogradCPU", "impl_t_t").map(drop),
        ],
    )
    .state;
    assert_eq!(
        state,
        "name: test::foo
schema: test::foo(Tensor _0) -> Tensor _0
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
}

#[test]
fn test_def_only() {
    let state = commute(
        "foo",
        &[|m| m.def_py("foo(Tensor x, Tensor y) -> Tensor", "").map(drop)],
    )
    .state;
    assert_eq!(
        state,
        "name: test::foo
schema: test::foo(Tensor x, Tensor y) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
"
    );
}

#[test]
fn test_impl_only() {
    let state = commute(
        "foo",
        &[
            |m| m.impl_t_t("foo", "", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "CPU", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "impl_t_t").map(drop),
            |m| m.impl_t_t("foo", "AutogradCPU", "impl_t_t").map(drop),
        ],
    )
    .state;
    assert_eq!(
        state,
        "name: test::foo
schema: (none)
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
}

#[test]
fn test_computed_table() {
    let r = commute(
        "foo",
        &[
            |m| m.def_name_t_t("foo", "", "default_def_name_t_t").map(drop),
            |m| m.impl_t_t("foo", "CPU", "fn_cpu").map(drop),
            |m| m.impl_t_t("foo", "XLA", "fn_xla").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "fn_autograd").map(drop),
            |m| m.impl_t_t("foo", "AutogradCPU", "fn_autogradcpu").map(drop),
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor _0) -> Tensor _0
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
XLA: fn_xla :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: fn_autogradcpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: default_def_name_t_t [math kernel]
CPU: fn_cpu [kernel]
CUDA: default_def_name_t_t [math kernel]
XLA: fn_xla [kernel]
AutogradOther: default_def_name_t_t [math kernel]
AutogradCPU: fn_autogradcpu [kernel]
AutogradCUDA: default_def_name_t_t [math kernel]
AutogradXLA: fn_autograd [autograd kernel]
"
    );
}

#[test]
fn test_computed_table_with_cpu_math_autogradcpu_fallthrough() {
    let _global_m = Library::from_strings("IMPL", "_", "AutogradCPU").unwrap();
    let r = commute(
        "foo",
        &[
            |m| m.def_name_t_t("foo", "", "default_def_name_t_t").map(drop),
            |m| m.impl_t_t("foo", "CPU", "impl_t_t").map(drop),
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor _0) -> Tensor _0
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: default_def_name_t_t [math kernel]
CPU: impl_t_t [kernel]
CUDA: default_def_name_t_t [math kernel]
XLA: default_def_name_t_t [math kernel]
AutogradOther: default_def_name_t_t [math kernel]
AutogradCPU: registered in pytorch framework [backend fallback]
AutogradCUDA: default_def_name_t_t [math kernel]
AutogradXLA: default_def_name_t_t [math kernel]
"
    );
}

#[test]
fn test_computed_table_with_math() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeImplicitAutograd", "impl_t_t")
                    .map(drop)
            },
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: impl_t_t [math kernel]
CPU: impl_t_t [math kernel]
CUDA: impl_t_t [math kernel]
XLA: impl_t_t [math kernel]
AutogradOther: impl_t_t [math kernel]
AutogradCPU: impl_t_t [math kernel]
AutogradCUDA: impl_t_t [math kernel]
AutogradXLA: impl_t_t [math kernel]
"
    );
}

#[test]
fn test_computed_table_with_cpu_math() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "CPU", "fn_cpu").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeImplicitAutograd", "fn_math")
                    .map(drop)
            },
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: fn_math [math kernel]
CPU: fn_cpu [kernel]
CUDA: fn_math [math kernel]
XLA: fn_math [math kernel]
AutogradOther: fn_math [math kernel]
AutogradCPU: registered in pytorch framework [backend fallback]
AutogradCUDA: fn_math [math kernel]
AutogradXLA: fn_math [math kernel]
"
    );
}

#[test]
fn test_computed_table_with_autograd() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "impl_t_t").map(drop),
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "AutogradOther: impl_t_t [autograd kernel]
AutogradCPU: impl_t_t [autograd kernel]
AutogradCUDA: impl_t_t [autograd kernel]
AutogradXLA: impl_t_t [autograd kernel]
"
    );
}

#[test]
fn test_computed_table_with_cpu_autograd_math() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "CPU", "fn_cpu").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "fn_autograd").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeImplicitAutograd", "fn_math")
                    .map(drop)
            },
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: fn_math [math kernel]
CPU: fn_cpu [kernel]
CUDA: fn_math [math kernel]
XLA: fn_math [math kernel]
AutogradOther: fn_math [math kernel]
AutogradCPU: fn_autograd [autograd kernel]
AutogradCUDA: fn_math [math kernel]
AutogradXLA: fn_math [math kernel]
"
    );
}

#[test]
fn test_computed_table_with_ambiguous_autogradother() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeImplicitAutograd", "fn_math")
                    .map(drop)
            },
            |m| {
                m.impl_t_t("foo", "QuantizedCPU", "fn_quantizedcpu")
                    .map(drop)
            },
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
QuantizedCPU: fn_quantizedcpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    let mut keys = DISPATCH_KEYS_TO_CHECK.to_vec();
    keys.push("QuantizedCPU");
    assert_eq!(
        extract(&r.table, &keys),
        "Undefined: fn_math [math kernel]
CPU: fn_math [math kernel]
CUDA: fn_math [math kernel]
XLA: fn_math [math kernel]
AutogradOther: ambiguous_autogradother [ambiguous autogradother]
AutogradCPU: fn_math [math kernel]
AutogradCUDA: fn_math [math kernel]
AutogradXLA: fn_math [math kernel]
QuantizedCPU: fn_quantizedcpu [kernel]
"
    );
}

#[test]
fn test_computed_table_with_cpu_defaultbackend() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "CPU", "fn_cpu").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeExplicitAutograd", "fn_defaultbackend")
                    .map(drop)
            },
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutograd[alias]: fn_defaultbackend :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: fn_defaultbackend [default backend kernel]
CPU: fn_cpu [kernel]
CUDA: fn_defaultbackend [default backend kernel]
XLA: fn_defaultbackend [default backend kernel]
AutogradOther: registered in pytorch framework [backend fallback]
AutogradCPU: registered in pytorch framework [backend fallback]
AutogradCUDA: registered in pytorch framework [backend fallback]
AutogradXLA: registered in pytorch framework [backend fallback]
"
    );
}

#[test]
fn test_computed_table_with_cpu_autograd_defaultbackend() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "CPU", "fn_cpu").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "fn_autograd").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeExplicitAutograd", "fn_defaultbackend")
                    .map(drop)
            },
        ],
    );
    let mut keys = DISPATCH_KEYS_TO_CHECK.to_vec();
    keys.push("QuantizedCPU");
    assert_eq!(
        extract(&r.table, &keys),
        "Undefined: fn_defaultbackend [default backend kernel]
CPU: fn_cpu [kernel]
CUDA: fn_defaultbackend [default backend kernel]
XLA: fn_defaultbackend [default backend kernel]
AutogradOther: fn_autograd [autograd kernel]
AutogradCPU: fn_autograd [autograd kernel]
AutogradCUDA: fn_autograd [autograd kernel]
AutogradXLA: fn_autograd [autograd kernel]
QuantizedCPU: fn_defaultbackend [default backend kernel]
"
    );
}

#[test]
fn test_computed_table_with_cpu_autograd_math_defaultbackend() {
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| m.impl_t_t("foo", "CPU", "fn_cpu").map(drop),
            |m| m.impl_t_t("foo", "Autograd", "fn_autograd").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeImplicitAutograd", "fn_math")
                    .map(drop)
            },
            |m| {
                m.impl_t_t("foo", "CompositeExplicitAutograd", "fn_defaultbackend")
                    .map(drop)
            },
        ],
    );
    assert_eq!(
        r.state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutograd[alias]: fn_defaultbackend :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
    assert_eq!(
        extract(&r.table, DISPATCH_KEYS_TO_CHECK),
        "Undefined: fn_defaultbackend [default backend kernel]
CPU: fn_cpu [kernel]
CUDA: fn_defaultbackend [default backend kernel]
XLA: fn_defaultbackend [default backend kernel]
AutogradOther: fn_autograd [autograd kernel]
AutogradCPU: fn_autograd [autograd kernel]
AutogradCUDA: fn_autograd [autograd kernel]
AutogradXLA: fn_autograd [autograd kernel]
"
    );
}

const DUP_DEF: &str = "Tried to register an operator (test::foo(Tensor x, Tensor y) -> Tensor) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def(). Duplicate registration: registered at /dev/null:0. Original registration: registered at /dev/null:0";

#[test]
fn test_multiple_def_error() {
    let ops: [Op; 2] = [
        |m| m.def_py("foo(Tensor x, Tensor y) -> Tensor", "").map(drop),
        |m| m.def_py("foo(Tensor x, Tensor y) -> Tensor", "").map(drop),
    ];
    assert_eq!(commute_with("foo", &ops, None, true).state, DUP_DEF);
}

#[test]
fn test_def_with_explicit_alias() {
    let state = commute(
        "foo",
        &[|m| {
            m.def_py("foo(Tensor x, Tensor y) -> Tensor", "PURE_FUNCTION")
                .map(drop)
        }],
    )
    .state;
    assert_eq!(
        state,
        "name: test::foo
schema: test::foo(Tensor x, Tensor y) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: PURE_FUNCTION
"
    );
}

#[test]
fn test_def_legacy_default_alias() {
    let state = commute(
        "foo",
        &[|m| m.def_legacy("foo(Tensor x) -> Tensor").map(drop)],
    )
    .state;
    assert_eq!(
        state,
        "name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE (default)
"
    );
}

#[test]
fn test_multiple_def_alias_defaulting() {
    let ops: [Op; 2] = [
        |m| {
            m.def_py("foo(Tensor x) -> Tensor", "PURE_FUNCTION")
                .map(drop)
        },
        |m| m.def_legacy("foo(Tensor x) -> Tensor").map(drop),
    ];
    assert_eq!(
        commute_with("foo", &ops, None, true).state,
        DUP_DEF.replace("(Tensor x, Tensor y)", "(Tensor x)")
    );
}

#[test]
fn test_multiple_def_alias_mismatch() {
    let ops: [Op; 2] = [
        |m| {
            m.def_py("foo(Tensor x) -> Tensor", "PURE_FUNCTION")
                .map(drop)
        },
        |m| {
            m.def_py("foo(Tensor x) -> Tensor", "CONSERVATIVE")
                .map(drop)
        },
    ];
    assert_eq!(
        commute_with("foo", &ops, None, true).state,
        DUP_DEF.replace("(Tensor x, Tensor y)", "(Tensor x)")
    );
}

#[test]
fn test_multiple_fallback() {
    let _serial = SERIAL.lock();
    let mut global_m = Library::from_strings("IMPL", "_", "XLA").unwrap();
    global_m.fallback_fallthrough("").unwrap();
    let e = global_m.fallback_fallthrough("").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Tried to register multiple backend fallbacks for the same dispatch key XLA; previous registration registered at /dev/null:0, new registration registered at /dev/null:0"
    );
}

#[test]
fn test_overwrite_math() {
    let ops: [Op; 2] = [
        |m| m.impl_t_t("foo", "", "fn1").map(drop),
        |m| m.impl_t_t("foo", "", "fn2").map(drop),
    ];
    assert_eq!(
        commute_with("foo", &ops, Some(&[0, 1]), false).state,
        "name: test::foo
schema: (none)
CompositeImplicitAutograd[alias]: fn2 :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias] (inactive): fn1 :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
}

#[test]
fn test_explicit_and_nonfunctional_aliases() {
    // Observed with torch 2.15.0 (dispatch_dump_format.md): with both aliases, CPU/Meta and
    // Undefined take the NonFunctional kernel; XLA, Lazy, SparseCPU, QuantizedXLA the other.
    let r = commute(
        "foo",
        &[
            |m| m.def_py("foo(Tensor x) -> Tensor", "").map(drop),
            |m| {
                m.impl_t_t("foo", "CompositeExplicitAutograd", "fn_cea")
                    .map(drop)
            },
            |m| {
                m.impl_t_t(
                    "foo",
                    "CompositeExplicitAutogradNonFunctional",
                    "fn_nonfunc",
                )
                .map(drop)
            },
        ],
    );
    assert_eq!(
        extract(
            &r.table,
            &[
                "Undefined",
                "CPU",
                "Meta",
                "XLA",
                "Lazy",
                "SparseCPU",
                "QuantizedXLA",
                "NestedTensorCPU"
            ]
        ),
        "Undefined: fn_nonfunc [default backend kernel]
CPU: fn_nonfunc [default backend kernel]
Meta: fn_nonfunc [default backend kernel]
Metal: fn_nonfunc [default backend kernel]
XLA: fn_cea [default backend kernel]
Lazy: fn_cea [default backend kernel]
SparseCPU: fn_cea [default backend kernel]
QuantizedXLA: fn_cea [default backend kernel]
"
    );
}

#[test]
fn test_dump_state_orders_alias_keys_by_enum_value() {
    let state = commute(
        "baz",
        &[
            |m| m.def_py("baz(Tensor x) -> Tensor", "").map(drop),
            |m| {
                m.impl_t_t(
                    "baz",
                    "CompositeExplicitAutogradNonFunctional",
                    "fn_nonfunc",
                )
                .map(drop)
            },
            |m| {
                m.impl_t_t("baz", "CompositeExplicitAutograd", "fn_cea")
                    .map(drop)
            },
            |m| {
                m.impl_t_t("baz", "CompositeImplicitAutogradNestedTensor", "fn_nested")
                    .map(drop)
            },
            |m| {
                m.impl_t_t("baz", "FuncTorchBatchedDecomposition", "fn_batched")
                    .map(drop)
            },
        ],
    )
    .state;
    assert_eq!(
        state,
        "name: test::baz
schema: test::baz(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
FuncTorchBatchedDecomposition[alias]: fn_batched :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutogradNestedTensor[alias]: fn_nested :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutograd[alias]: fn_cea :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutogradNonFunctional[alias]: fn_nonfunc :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
"
    );
}

#[test]
fn test_find_dangling_impls() {
    let _serial = SERIAL.lock();
    // Nothing registered statically is dangling.
    assert!(Dispatcher::singleton().find_dangling_impls().is_empty());
    let mut m = Library::from_strings("FRAGMENT", "__dangling__", "").unwrap();
    m.impl_t_t("foo", "CPU", "impl_t_t").unwrap();
    let d = Dispatcher::singleton().find_dangling_impls();
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].dump_state(),
        "name: __dangling__::foo\nschema: (none)\nCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]\n"
    );
    drop(m);
    assert!(Dispatcher::singleton().find_dangling_impls().is_empty());
    let _ = ok;
}

#[test]
fn test_dispatch_print_registrations_for_dispatch_key() {
    let _serial = SERIAL.lock();
    let e = ratten_dispatch::DispatchKey::parse("invalid_key").unwrap_err();
    assert_eq!(e.to_string(), "could not parse dispatch key: invalid_key");
    let mut m = Library::from_strings("FRAGMENT", "__regs__", "").unwrap();
    m.def_py("a(Tensor x) -> Tensor", "").unwrap();
    m.impl_t_t("a", "CPU", "impl_t_t").unwrap();
    m.def_py("b(Tensor x) -> Tensor", "").unwrap();
    let all = Dispatcher::singleton().get_registrations_for_dispatch_key(None);
    let cpu = Dispatcher::singleton()
        .get_registrations_for_dispatch_key(Some(ratten_dispatch::DispatchKey::CPU));
    assert!(all.contains(&"__regs__::a".to_string()) && all.contains(&"__regs__::b".to_string()));
    assert!(cpu.contains(&"__regs__::a".to_string()) && !cpu.contains(&"__regs__::b".to_string()));
    assert!(cpu.iter().all(|c| all.contains(c)));
    let names = Dispatcher::singleton().get_all_op_names();
    assert!(names.contains(&OperatorName::new("__regs__::a", "")));
    drop(m);
    assert!(!Dispatcher::singleton()
        .get_all_op_names()
        .contains(&OperatorName::new("__regs__::a", "")));
}
