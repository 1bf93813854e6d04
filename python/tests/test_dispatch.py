"""torch's test/test_dispatch.py (TestDispatch), run against ratten._C in place of torch._C.

Expected texts are torch 2.15's: a single unnamed return prints without parentheses
(`-> Tensor`, `(Tensor _0) -> Tensor _0`), where older copies of the test file show `-> (Tensor)`,
and the Autograd<Backend> backend fallback is torch 2.15's VariableFallbackKernel.cpp kernel (not a
fallthrough), so its row reads `registered in pytorch framework [backend fallback]`.
The harness (run_ops / commute: every permutation of registrations and deregistrations,
checking that the dispatcher's state is path independent and invertible) and the expected
texts are torch's; only the import and assertExpectedInline (-> assertEqual) differ.
"""

import io
import itertools
import re
import unittest
from collections import namedtuple
from contextlib import redirect_stdout

import ratten
import ratten._C as C

Result = namedtuple("Result", "state table provenance")

dispatch_keys_to_check = (
    "Undefined",
    "CPU",
    "CUDA",
    "XLA",
    "AutogradOther",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradXLA",
)


def extract_dispatch_table_with_keys(table, dispatch_keys):
    extracted = ""
    table_entries = table.split("\n")
    regex = re.compile(r"registered at .*FallbackKernel\.cpp.*(\[)")
    for k in dispatch_keys:
        for t in table_entries:
            if t.startswith(k):
                # mask out file:line info for in-tree backend fallback
                entry = regex.sub("registered in pytorch framework [", t)
                extracted += entry + "\n"
    return extracted


class TestDispatch(unittest.TestCase):
    namespace_index = 0
    maxDiff = None

    def assertExpectedInline(self, actual, expected):
        self.assertEqual(expected, actual)

    def test_all_invariants(self):
        C._dispatch_check_all_invariants()

    def run_ops(self, name, ops, ctor_order=None, dtor_order=None, results=None, expect_raises=False):
        self.__class__.namespace_index += 1
        if results is None:
            results = {}
        if ctor_order is None:
            ctor_order = list(range(len(ops)))
        if dtor_order is None:
            dtor_order = list(reversed(ctor_order))
        refs = [None] * len(ops)
        active_ops = set()
        test_namespace = "__test{}__".format(self.namespace_index)

        def check_invariants(actual_provenance):
            C._dispatch_check_invariants(name)
            actual_state = C._dispatch_dump("{}::{}".format(test_namespace, name)).replace(
                test_namespace, "test"
            )
            actual_table = C._dispatch_dump_table("{}::{}".format(test_namespace, name)).replace(
                test_namespace, "test"
            )
            expected_state, expected_table, expected_provenance = results.setdefault(
                frozenset(active_ops), Result(actual_state, actual_table, actual_provenance)
            )
            self.assertMultiLineEqual(
                expected_state,
                actual_state,
                "expected from {}; actual from {}".format(expected_provenance, actual_provenance),
            )
            self.assertMultiLineEqual(
                expected_table,
                actual_table,
                "expected from {}; actual from {}".format(expected_provenance, actual_provenance),
            )

        results.setdefault(frozenset(), Result("", "", "hardcoded initial state"))
        check_invariants("initial state")
        set_to_report = frozenset(range(len(ops)))
        for i, op_ix in enumerate(ctor_order):
            refs[op_ix] = C._dispatch_library("FRAGMENT", test_namespace, "")
            active_ops.add(op_ix)
            try:
                ops[op_ix](refs[op_ix])
                check_invariants("running ctors {}".format(ctor_order[: i + 1]))
            except RuntimeError as e:
                if not expect_raises:
                    raise
                actual = str(e).replace(test_namespace, "test")
                actual = actual.split("\nException raised from ")[0]
                expected, _, expected_provenance = results.setdefault(
                    frozenset(active_ops),
                    Result(actual, "", "error after running ctors {}".format(ctor_order[: i + 1])),
                )
                self.assertMultiLineEqual(expected, actual, expected_provenance)
                set_to_report = frozenset(active_ops)
                active_ops.remove(op_ix)
                check_invariants(
                    "running ctors {} and then failing to run ctor {} "
                    "(did this failure leave the dispatcher in a wedged state? "
                    "it shouldn't!)".format(ctor_order[:i], op_ix)
                )
                break
        last_ctor = i
        if expect_raises and len(active_ops) == len(ops):
            refs = None
            self.assertTrue(
                False,
                "expected exception to be raised, but nothing was raised "
                "(after running ctors {})".format(ctor_order),
            )
        for i, op_ix in enumerate(dtor_order):
            refs[op_ix] = None
            if expect_raises:
                active_ops.discard(op_ix)
            else:
                active_ops.remove(op_ix)
            check_invariants(
                "running ctors {}, then running dtors {}".format(
                    ctor_order[: last_ctor + 1], dtor_order[: i + 1]
                )
            )
        return results[set_to_report][0]

    def commute(self, name, ops, ctor_order=None, expect_raises=False):
        results = {}

        def go(ctor_order):
            for dtor_order in itertools.permutations(range(len(ops))):
                self.run_ops(name, ops, ctor_order, dtor_order, results=results, expect_raises=expect_raises)

        if ctor_order is not None:
            go(ctor_order)
        else:
            for ctor_order in itertools.permutations(range(len(ops))):
                go(ctor_order)
        return results[frozenset(range(len(ops)))]

    def test_def(self):
        state = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo"),
                lambda m: m.impl_t_t("foo", dispatch="CPU"),
                lambda m: m.impl_t_t("foo", dispatch="Autograd"),
                lambda m: m.impl_t_t("foo", dispatch="AutogradCPU"),
            ],
        ).state
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )

    def test_def_impl_schema_mismatch(self):
        state = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x, Tensor y) -> Tensor"),
                lambda m: m.impl_t_t("foo"),
            ],
            expect_raises=True,
        ).state
        self.assertExpectedInline(
            state,
            """\
Inferred operator schema for a C++ kernel function doesn't match the expected function schema.
  operator: test::foo
  expected schema: test::foo(Tensor x, Tensor y) -> Tensor
    registered at /dev/null:0
  inferred schema: (Tensor _0) -> Tensor _0
    impl_t_t
  reason: The number of arguments is different. 2 vs 1.""",
        )

    def test_def_with_inference(self):
        state = self.commute(
            "foo",
            [
                lambda m: m.def_name_t_t("foo"),
                lambda m: m.impl_t_t("foo", "CPU"),
                lambda m: m.impl_t_t("foo", "Autograd"),
                lambda m: m.impl_t_t("foo", "AutogradCPU"),
            ],
        ).state
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor _0) -> Tensor _0
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )

    def test_def_only(self):
        state = self.commute("foo", [lambda m: m.def_("foo(Tensor x, Tensor y) -> Tensor")]).state
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x, Tensor y) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
""",
        )

    def test_impl_only(self):
        state = self.commute(
            "foo",
            [
                lambda m: m.impl_t_t("foo"),
                lambda m: m.impl_t_t("foo", "CPU"),
                lambda m: m.impl_t_t("foo", "Autograd"),
                lambda m: m.impl_t_t("foo", "AutogradCPU"),
            ],
        ).state
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: (none)
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )

    def test_computed_table(self):
        result = self.commute(
            "foo",
            [
                lambda m: m.def_name_t_t("foo"),
                lambda m: m.impl_t_t("foo", "CPU", debug="fn_cpu"),
                lambda m: m.impl_t_t("foo", "XLA", debug="fn_xla"),
                lambda m: m.impl_t_t("foo", "Autograd", debug="fn_autograd"),
                lambda m: m.impl_t_t("foo", "AutogradCPU", debug="fn_autogradcpu"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor _0) -> Tensor _0
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
XLA: fn_xla :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
AutogradCPU: fn_autogradcpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: default_def_name_t_t [math kernel]
CPU: fn_cpu [kernel]
CUDA: default_def_name_t_t [math kernel]
XLA: fn_xla [kernel]
AutogradOther: default_def_name_t_t [math kernel]
AutogradCPU: fn_autogradcpu [kernel]
AutogradCUDA: default_def_name_t_t [math kernel]
AutogradXLA: fn_autograd [autograd kernel]
""",
        )

    def test_computed_table_with_cpu_math_autogradcpu_fallthrough(self):
        global_m = C._dispatch_library("IMPL", "_", "AutogradCPU")  # noqa: F841
        result = self.commute(
            "foo",
            [
                lambda m: m.def_name_t_t("foo"),
                lambda m: m.impl_t_t("foo", "CPU"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor _0) -> Tensor _0
debug: registered at /dev/null:0
alias analysis kind: CONSERVATIVE
CPU: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: default_def_name_t_t [math kernel]
CPU: impl_t_t [kernel]
CUDA: default_def_name_t_t [math kernel]
XLA: default_def_name_t_t [math kernel]
AutogradOther: default_def_name_t_t [math kernel]
AutogradCPU: registered in pytorch framework [backend fallback]
AutogradCUDA: default_def_name_t_t [math kernel]
AutogradXLA: default_def_name_t_t [math kernel]
""",
        )

    def test_computed_table_with_math(self):
        global_m = C._dispatch_library("IMPL", "_", "AutogradCPU")  # noqa: F841
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CompositeImplicitAutograd"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: impl_t_t [math kernel]
CPU: impl_t_t [math kernel]
CUDA: impl_t_t [math kernel]
XLA: impl_t_t [math kernel]
AutogradOther: impl_t_t [math kernel]
AutogradCPU: impl_t_t [math kernel]
AutogradCUDA: impl_t_t [math kernel]
AutogradXLA: impl_t_t [math kernel]
""",
        )

    def test_computed_table_with_cpu_math(self):
        global_m = C._dispatch_library("IMPL", "_", "AutogradCPU")  # noqa: F841
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CPU", debug="fn_cpu"),
                lambda m: m.impl_t_t("foo", "CompositeImplicitAutograd", debug="fn_math"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: fn_math [math kernel]
CPU: fn_cpu [kernel]
CUDA: fn_math [math kernel]
XLA: fn_math [math kernel]
AutogradOther: fn_math [math kernel]
AutogradCPU: registered in pytorch framework [backend fallback]
AutogradCUDA: fn_math [math kernel]
AutogradXLA: fn_math [math kernel]
""",
        )

    def test_computed_table_with_autograd(self):
        global_m = C._dispatch_library("IMPL", "_", "AutogradCPU")  # noqa: F841
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "Autograd"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
Autograd[alias]: impl_t_t :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
AutogradOther: impl_t_t [autograd kernel]
AutogradCPU: impl_t_t [autograd kernel]
AutogradCUDA: impl_t_t [autograd kernel]
AutogradXLA: impl_t_t [autograd kernel]
""",
        )

    def test_computed_table_with_cpu_autograd_math(self):
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CPU", debug="fn_cpu"),
                lambda m: m.impl_t_t("foo", "Autograd", debug="fn_autograd"),
                lambda m: m.impl_t_t("foo", "CompositeImplicitAutograd", debug="fn_math"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: fn_math [math kernel]
CPU: fn_cpu [kernel]
CUDA: fn_math [math kernel]
XLA: fn_math [math kernel]
AutogradOther: fn_math [math kernel]
AutogradCPU: fn_autograd [autograd kernel]
AutogradCUDA: fn_math [math kernel]
AutogradXLA: fn_math [math kernel]
""",
        )

    def test_computed_table_with_ambiguous_autogradother(self):
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CompositeImplicitAutograd", debug="fn_math"),
                lambda m: m.impl_t_t("foo", "QuantizedCPU", debug="fn_quantizedcpu"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
QuantizedCPU: fn_quantizedcpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check + ("QuantizedCPU",))
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: fn_math [math kernel]
CPU: fn_math [math kernel]
CUDA: fn_math [math kernel]
XLA: fn_math [math kernel]
AutogradOther: ambiguous_autogradother [ambiguous autogradother]
AutogradCPU: fn_math [math kernel]
AutogradCUDA: fn_math [math kernel]
AutogradXLA: fn_math [math kernel]
QuantizedCPU: fn_quantizedcpu [kernel]
""",
        )

    def test_computed_table_with_cpu_defaultbackend(self):
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CPU", debug="fn_cpu"),
                lambda m: m.impl_t_t("foo", "CompositeExplicitAutograd", debug="fn_defaultbackend"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutograd[alias]: fn_defaultbackend :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: fn_defaultbackend [default backend kernel]
CPU: fn_cpu [kernel]
CUDA: fn_defaultbackend [default backend kernel]
XLA: fn_defaultbackend [default backend kernel]
AutogradOther: registered in pytorch framework [backend fallback]
AutogradCPU: registered in pytorch framework [backend fallback]
AutogradCUDA: registered in pytorch framework [backend fallback]
AutogradXLA: registered in pytorch framework [backend fallback]
""",
        )

    def test_computed_table_with_cpu_autograd_defaultbackend(self):
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CPU", debug="fn_cpu"),
                lambda m: m.impl_t_t("foo", "Autograd", debug="fn_autograd"),
                lambda m: m.impl_t_t("foo", "CompositeExplicitAutograd", debug="fn_defaultbackend"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutograd[alias]: fn_defaultbackend :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check + ("QuantizedCPU",))
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: fn_defaultbackend [default backend kernel]
CPU: fn_cpu [kernel]
CUDA: fn_defaultbackend [default backend kernel]
XLA: fn_defaultbackend [default backend kernel]
AutogradOther: fn_autograd [autograd kernel]
AutogradCPU: fn_autograd [autograd kernel]
AutogradCUDA: fn_autograd [autograd kernel]
AutogradXLA: fn_autograd [autograd kernel]
QuantizedCPU: fn_defaultbackend [default backend kernel]
""",
        )

    def test_computed_table_with_cpu_autograd_math_defaultbackend(self):
        result = self.commute(
            "foo",
            [
                lambda m: m.def_("foo(Tensor x) -> Tensor"),
                lambda m: m.impl_t_t("foo", "CPU", debug="fn_cpu"),
                lambda m: m.impl_t_t("foo", "Autograd", debug="fn_autograd"),
                lambda m: m.impl_t_t("foo", "CompositeImplicitAutograd", debug="fn_math"),
                lambda m: m.impl_t_t("foo", "CompositeExplicitAutograd", debug="fn_defaultbackend"),
            ],
        )
        state, table = result.state, result.table
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: FROM_SCHEMA
CPU: fn_cpu :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Autograd[alias]: fn_autograd :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias]: fn_math :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeExplicitAutograd[alias]: fn_defaultbackend :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )
        extracted_table = extract_dispatch_table_with_keys(table, dispatch_keys_to_check)
        self.assertExpectedInline(
            extracted_table,
            """\
Undefined: fn_defaultbackend [default backend kernel]
CPU: fn_cpu [kernel]
CUDA: fn_defaultbackend [default backend kernel]
XLA: fn_defaultbackend [default backend kernel]
AutogradOther: fn_autograd [autograd kernel]
AutogradCPU: fn_autograd [autograd kernel]
AutogradCUDA: fn_autograd [autograd kernel]
AutogradXLA: fn_autograd [autograd kernel]
""",
        )

    DUPLICATE_DEF = (
        "Tried to register an operator (test::foo(Tensor x{y}) -> Tensor) with the same name and overload "
        "name multiple times. Each overload's schema should only be registered with a single call to def(). "
        "Duplicate registration: registered at /dev/null:0. Original registration: registered at /dev/null:0"
    )

    def test_multiple_def_error(self):
        ops = [
            lambda m: m.def_("foo(Tensor x, Tensor y) -> Tensor"),
            lambda m: m.def_("foo(Tensor x, Tensor y) -> Tensor"),
        ]
        self.assertExpectedInline(
            self.commute("foo", ops, expect_raises=True).state, self.DUPLICATE_DEF.format(y=", Tensor y")
        )

    def test_def_with_explicit_alias(self):
        state = self.commute(
            "foo", [lambda m: m.def_("foo(Tensor x, Tensor y) -> Tensor", alias="PURE_FUNCTION")]
        ).state
        self.assertExpectedInline(
            state,
            """\
name: test::foo
schema: test::foo(Tensor x, Tensor y) -> Tensor
debug: registered at /dev/null:0
alias analysis kind: PURE_FUNCTION
""",
        )

    def test_multiple_def_alias_defaulting(self):
        ops = [
            lambda m: m.def_("foo(Tensor x) -> Tensor", alias="PURE_FUNCTION"),
            lambda m: m.def_legacy("foo(Tensor x) -> Tensor"),
        ]
        self.assertExpectedInline(
            self.commute("foo", ops, expect_raises=True).state, self.DUPLICATE_DEF.format(y="")
        )

    def test_multiple_def_alias_mismatch(self):
        ops = [
            lambda m: m.def_("foo(Tensor x) -> Tensor", alias="PURE_FUNCTION"),
            lambda m: m.def_("foo(Tensor x) -> Tensor", alias="CONSERVATIVE"),
        ]
        self.assertExpectedInline(
            self.commute("foo", ops, expect_raises=True).state, self.DUPLICATE_DEF.format(y="")
        )

    def test_multiple_fallback(self):
        global_m = C._dispatch_library("IMPL", "_", "XLA")
        global_m.fallback_fallthrough()
        try:
            global_m.fallback_fallthrough()
        except RuntimeError as e:
            self.assertExpectedInline(
                str(e),
                "Tried to register multiple backend fallbacks for the same dispatch key XLA; previous registration "
                "registered at /dev/null:0, new registration registered at /dev/null:0",
            )
        else:
            self.assertTrue(False)

    def test_overwrite_math(self):
        ops = [
            lambda m: m.impl_t_t("foo", debug="fn1"),
            lambda m: m.impl_t_t("foo", debug="fn2"),
        ]
        self.assertExpectedInline(
            self.commute("foo", ops, ctor_order=(0, 1)).state,
            """\
name: test::foo
schema: (none)
CompositeImplicitAutograd[alias]: fn2 :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
CompositeImplicitAutograd[alias] (inactive): fn1 :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
""",
        )

    def test_find_dangling_impls(self):
        dangling_impls = C._dispatch_find_dangling_impls()
        self.assertEqual(0, len(dangling_impls), msg=f"Expect zero dangling impls, but found: {dangling_impls}")

    def test_dispatch_print_registrations_for_dispatch_key(self):
        with self.assertRaisesRegex(RuntimeError, "could not parse dispatch key: invalid_key"):
            C._dispatch_print_registrations_for_dispatch_key("invalid_key")
        # ratten's build may register no CPU kernels of its own yet: make one, as a user would.
        lib = C._dispatch_library("FRAGMENT", "__print_test__", "")
        lib.def_("foo(Tensor x) -> Tensor")
        lib.impl_t_t("foo", "CPU")
        lib.def_("bar(Tensor x) -> Tensor")
        all_out, cpu_out = io.StringIO(), io.StringIO()
        with redirect_stdout(all_out):
            C._dispatch_print_registrations_for_dispatch_key()
        with redirect_stdout(cpu_out):
            C._dispatch_print_registrations_for_dispatch_key("CPU")
        all_ops = set(all_out.getvalue().split())
        cpu_ops = set(cpu_out.getvalue().split())
        self.assertTrue(len(all_ops) > 0)
        self.assertTrue(len(cpu_ops) > 0)
        self.assertTrue(cpu_ops.issubset(all_ops))
        self.assertFalse(all_ops.issubset(cpu_ops))
        self.assertIn("__print_test__::foo", cpu_ops)
        del lib
        self.assertNotIn("__print_test__::foo", C._dispatch_get_registrations_for_dispatch_key("CPU"))


class TestPythonKernels(unittest.TestCase):
    """Registering a Python callable as a kernel (torch.library.Library.impl's mechanism)."""

    def test_python_kernel_runs_and_deregisters(self):
        calls = []

        def kernel(x, y):
            calls.append((x.shape, y))
            return x

        lib = C._dispatch_library("FRAGMENT", "pykernel_a", "")
        lib.def_("scale(Tensor x, float y) -> Tensor")
        lib.impl("scale", "CPU", kernel)
        state = C._dispatch_dump("pykernel_a::scale")
        self.assertIn("CPU: registered by Python", state)
        t = ratten.ones(2, 3)
        r = ratten.ops.pykernel_a.scale(t, 2.5)
        self.assertIs(type(r), ratten.Tensor)
        self.assertEqual(r.tolist(), t.tolist())
        self.assertEqual(calls, [((2, 3), 2.5)])
        # keyword argument through the parser
        ratten.ops.pykernel_a.scale(t, y=1.0)
        self.assertEqual(calls[-1], ((2, 3), 1.0))
        with self.assertRaisesRegex(TypeError, r"scale\(\): argument 'y' \(position 2\) must be float, not str"):
            ratten.ops.pykernel_a.scale(t, "a")
        del lib
        self.assertEqual(C._dispatch_dump("pykernel_a::scale"), "")
        with self.assertRaises(AttributeError):
            ratten.ops.pykernel_a.scale

    def test_python_kernel_errors_propagate(self):
        def kernel(x):
            raise ValueError("boom")

        lib = C._dispatch_library("FRAGMENT", "pykernel_b", "")
        lib.def_("f(Tensor x) -> Tensor")
        lib.impl("f", "CPU", kernel)
        with self.assertRaisesRegex(RuntimeError, "boom"):
            ratten.ops.pykernel_b.f(ratten.zeros(1))
        del lib

    def test_missing_kernel_error(self):
        lib = C._dispatch_library("FRAGMENT", "pykernel_c", "")
        lib.def_("g(Tensor x) -> Tensor")
        with self.assertRaisesRegex(RuntimeError, "Could not run 'pykernel_c::g' with arguments from the 'CPU' backend"):
            ratten.ops.pykernel_c.g(ratten.zeros(1))
        del lib
