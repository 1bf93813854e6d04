"""``gradcheck`` and ``gradgradcheck`` (torch/autograd/gradcheck.py): analytical gradients
from the engine against central finite differences, in float64, with torch's tolerances and
failure reports.

The numerical Jacobian perturbs the inputs in place through ``tensor.detach().numpy()``,
which shares the tensor's memory but not its version counter (torch perturbs ``.data`` for
the same reason): graphs recorded before the perturbation keep passing SavedVariable's
version check, and the value is restored bit for bit after each column.

Jacobians have torch's layout: ``(input.numel(), output.numel())``, column ``j`` of the
analytical one is the gradient for the one-hot grad_output ``e_j``.

Complex inputs and outputs are checked as torch does: a complex output is checked as two
real functions (its real part, then its imaginary part); a complex input's numerical column
is ``ds/dx + 1j * ds/dy`` (the real and the imaginary part perturbed in turn), which is
what backward gives for a real output (PyTorch's convention, the conjugate Wirtinger
derivative times two).

Limits (documented rather than approximated):
  * ``check_forward_ad`` with complex inputs or outputs raises NotImplementedError;
  * ``fast_mode=True`` runs the slow (full Jacobian) check: the result is the same, only
    slower;
  * ``check_forward_ad`` compares the Jacobian forward-mode AD gives (one dual evaluation per
    input element, torch's slow mode) with the numerical one;
  * ``check_batched_grad`` and ``check_batched_forward_grad`` need vmap and raise
    NotImplementedError when set;
  * ``masked`` concerns sparse inputs, which ratten does not have: accepted and ignored.
"""

import itertools
import warnings

import numpy as np

from .. import _C

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Error raised by ``gradcheck`` and ``gradgradcheck``."""


def _ratten():
    # Imported lazily: ratten/__init__.py imports this package.
    import ratten

    return ratten


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if _is_tensor(o) and o.requires_grad)


def _diff_inputs(inputs):
    return [t for t in inputs if _is_tensor(t) and t.requires_grad]


def _is_double(dtype):
    r = _ratten()
    return dtype == r.float64 or dtype == r.complex128


def _check_inputs(tupled_inputs):
    any_requires_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if not _is_double(inp.dtype):
                warnings.warn(
                    f"Input #{idx} requires gradient and "
                    "is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are "
                    "not of double precision floating point or complex. ",
                    stacklevel=3,
                )
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only "
                    "supports inputs that are non-overlapping to be able to "
                    "compute the numerical gradients correctly. You should call "
                    ".contiguous on the input before passing it to gradcheck."
                )
            any_requires_grad = True
    if not any_requires_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )


def _refuse_complex_forward_ad(inputs, outputs):
    if any(_is_tensor(t) and t.is_complex() for t in tuple(inputs) + tuple(outputs)):
        raise NotImplementedError(
            "gradcheck(check_forward_ad=True) with complex inputs or outputs is not "
            "supported by ratten"
        )


def _real_and_imag_output(fn):
    """``fn`` with its complex outputs replaced by their real, then imaginary, parts
    (torch's ``_real_and_imag_output``)."""
    def apply(part):
        def wrapped(*inputs):
            return tuple(part(o) if _is_tensor(o) and o.is_complex() else o
                         for o in _as_tuple(fn(*inputs)))
        return wrapped

    r = _ratten()
    return apply(r.real), apply(r.imag)


def _as_numpy(t):
    """A float64 (complex128) copy of ``t``'s values (detached), for comparisons and
    messages."""
    dtype = np.complex128 if t.is_complex() else np.float64
    return np.array(t.detach().numpy(), dtype=dtype, copy=True)


def _to_tensor(a):
    a = np.asarray(a)
    dtype = np.complex128 if np.iscomplexobj(a) else np.float64
    return _ratten().from_numpy(np.ascontiguousarray(a, dtype=dtype))


def _snapshot(out):
    """``(tensor, values)`` per output, the values copied at once: an output may be a view
    of the input being perturbed (torch clones them for the same reason)."""
    return [(o, _as_numpy(o)) for o in _as_tuple(out)]


def _numerical_jacobian(fn, inputs, outputs, eps):
    """``jac[i][j]``: the Jacobian of output ``i`` with respect to the ``j``-th input that
    requires grad, shape ``(input.numel(), output.numel())``, by central differences."""
    diff_idx = [k for k, t in enumerate(inputs) if _is_tensor(t) and t.requires_grad]
    out_shapes = [o.shape for o in outputs]
    out_dtypes = [o.dtype for o in outputs]
    jac = [[None] * len(diff_idx) for _ in outputs]
    for j, k in enumerate(diff_idx):
        inp = inputs[k]
        # Shares the memory, not the version counter (see the module's docstring).
        data = inp.detach().numpy()
        is_complex = inp.is_complex()
        cols = [np.zeros((inp.numel(), int(np.prod(s, dtype=np.int64))),
                         dtype=np.complex128 if is_complex else np.float64)
                for s in out_shapes]
        # A complex input is perturbed along its real, then its imaginary, axis.
        steps = (eps, eps * 1j) if is_complex else (eps,)
        for d_idx, idx in enumerate(itertools.product(*[range(n) for n in inp.shape])):
            orig = data[idx].copy()
            for axis, step in enumerate(steps):
                data[idx] = orig - step
                outa = _snapshot(fn(*inputs))
                data[idx] = orig + step
                outb = _snapshot(fn(*inputs))
                data[idx] = orig
                for i, ((a, va), (b, vb)) in enumerate(zip(outa, outb)):
                    if i >= len(outputs):
                        break
                    _check_same_dtype_and_shape(a, b, eps, idx)
                    if tuple(a.shape) != tuple(out_shapes[i]) or a.dtype != out_dtypes[i]:
                        _check_same_dtype_and_shape(a, outputs[i], eps, idx)
                    # Integer outputs (indices) too: with no differentiable output their
                    # differences must be zero.
                    d = ((vb - va) / (2 * eps)).reshape(-1)
                    # ds/dx + 1j ds/dy (the conjugate Wirtinger derivative, times two).
                    cols[i][d_idx] += d if axis == 0 else 1j * d
        for i in range(len(outputs)):
            jac[i][j] = cols[i]
    return jac


def _check_same_dtype_and_shape(output1, output2, eps, idx):
    on_index = f"on index {idx} " if idx is not None else ""
    if tuple(output1.shape) != tuple(output2.shape):
        raise AssertionError(
            f"Expected `func` to return outputs with the same shape"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" shapes {output1.shape} and {output2.shape}."
        )
    if output1.dtype != output2.dtype:
        raise AssertionError(
            f"Expected `func` to return outputs with the same dtype"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" dtypes {output1.dtype} and {output2.dtype}."
        )


def _analytical_rows(output, diff_inputs):
    """The analytical Jacobian of ``output``: one backward per element of it. Returns per
    input an array ``(input.numel(), output.numel())`` and whether the gradients had the
    inputs' dtypes and sizes."""
    r = _ratten()
    n_out = output.numel()
    jac = [np.zeros((t.numel(), n_out), dtype=np.complex128 if t.is_complex() else np.float64)
           for t in diff_inputs]
    types_ok = True
    sizes_ok = True
    for j in range(n_out):
        grad_out = r.zeros(tuple(output.shape), dtype=output.dtype)
        grad_out.view(-1)[j] = 1.0
        grads = r.autograd.grad(
            output, diff_inputs, grad_out, retain_graph=True, allow_unused=True
        )
        for k, (g, t) in enumerate(zip(grads, diff_inputs)):
            if g is None:
                continue
            if g.dtype != t.dtype:
                types_ok = False
            if g.numel() != t.numel():
                sizes_ok = False
                continue
            jac[k][:, j] = _as_numpy(g).reshape(-1)
    return jac, types_ok, sizes_ok


def _check_analytical_jacobian_attributes(inputs, output, nondet_tol, check_grad_dtypes):
    diff_inputs = _diff_inputs(inputs)
    # Computed twice: a backward that gives different values for the same grad_output is
    # not reentrant (torch's nondeterminism check).
    jac1, types_ok, sizes_ok = _analytical_rows(output, diff_inputs)
    jac2, _, _ = _analytical_rows(output, diff_inputs)
    reentrant = all(
        a.shape == b.shape and (np.abs(a - b) <= nondet_tol).all() for a, b in zip(jac1, jac2)
    )
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with "
            "same input and grad_output multiple times gives different values, "
            "although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}."
            "\n\nNOTE: If your op relies on non-deterministic operations i.e., it is listed "
            "here:\nhttps://pytorch.org/docs/stable/generated/torch.use_deterministic_"
            "algorithms.html\nthis failure might be expected.\n\nIf you are adding a new "
            "operator, please file an issue and then use one of the\nworkarounds. The "
            "workaround depends on how your test invokes gradcheck/gradgradcheck.\nIf the "
            "test\n- manually invokes gradcheck/gradgradcheck, then call gradcheck/"
            "gradgradcheck\n  with `nondet_tol=<tol>` as a keyword argument.\n- is OpInfo-"
            "based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test\n  "
            "to have `gradcheck_nondet_tol=<tol>`.\n- is a Module test (e.g., in "
            "common_nn.py), then modify the corresponding\n  module_test entry to have "
            "`gradcheck_nondet_tol=<tol>`\n"
        )
    return jac1


def _notallclose_msg(analytical, numerical, output_idx, input_idx, complex_indices=(),
                     test_imag=False):
    prefix = ""
    if output_idx in complex_indices:
        part = "imaginary" if test_imag else "real"
        prefix = f"While considering the {part} part of complex outputs only, "
    return (
        prefix
        + f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{_to_tensor(numerical)}\nanalytical:{_to_tensor(analytical)}\n"
    )


def _allclose(a, n, rtol, atol):
    # torch.allclose(a, n): |a - n| <= atol + rtol * |n|, NaN never close.
    return a.shape == n.shape and bool(np.allclose(a, n, rtol=rtol, atol=atol))


def _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol,
                    check_grad_dtypes, nondet_tol, complex_indices=(), test_imag=False):
    func_out = _as_tuple(func_out)
    if not outputs:
        for per_out in _numerical_jacobian(func, tupled_inputs, func_out, eps):
            for jac in per_out:
                if (jac != 0).any():
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    numerical_all = _numerical_jacobian(func, tupled_inputs, func_out, eps)
    numerical = [nj for o, nj in zip(func_out, numerical_all) if _is_tensor(o) and o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _check_analytical_jacobian_attributes(
            tupled_inputs, o, nondet_tol, check_grad_dtypes
        )
        for j, (a, n) in enumerate(zip(analytical, numerical[i])):
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j, complex_indices, test_imag))
    return True


def _test_backward_mul_by_grad_output(outputs, inputs):
    r = _ratten()
    diff_inputs = _diff_inputs(inputs)
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    grads = r.autograd.grad(
        outputs, diff_inputs, [r.zeros_like(o) for o in outputs], allow_unused=True
    )
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if not bool(gi.eq(0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if tuple(gi.shape) != tuple(di.shape):
            raise GradcheckError("grad is incorrect size")
    return True


def _undefined_grad():
    """``torch._C._functions.UndefinedGrad()``: the identity whose backward hands its input
    an undefined gradient, so the nodes before it run with undefined grads."""
    from .function import Function

    class UndefinedGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return None

    return UndefinedGrad.apply


def _test_undefined_backward_mode(func, outputs, inputs):
    r = _ratten()
    diff_inputs = _diff_inputs(inputs)
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    undefined = _undefined_grad()

    def warn_bc_breaking():
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking "
            "feature is enabled by default, but it may break existing callers "
            "of this function. If this is true for you, you can call this "
            'function with "check_undefined_grad=False" to disable the feature',
            stacklevel=4,
        )

    def check(outs):
        try:
            grads = r.autograd.grad(
                outs, diff_inputs, [r.zeros_like(o) for o in outs], allow_unused=True
            )
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. "
                'Please look at "Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"'
            ) from e
        for gi in grads:
            if gi is not None and not bool(gi.eq(0).all()):
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads "
                    'are undefined or zero. Please look at "Notes about undefined output '
                    'gradients" in "tools/autograd/derivatives.yaml"'
                )
        return True

    # Every output undefined at once, then (several outputs) one at a time.
    to_check = [[undefined(o) for o in _differentiable_outputs(func(*inputs))]]
    if len(to_check[0]) > 1:
        for k in range(len(outputs)):
            outs = _differentiable_outputs(func(*inputs))
            to_check.append([undefined(o) if i == k else o for i, o in enumerate(outs)])
    return all(check(outs) for outs in to_check)


def _forward_ad_jacobian(func, inputs, outputs, check_grad_dtypes):
    """``jac[i][j]`` as the numerical one, from forward-mode AD: the inputs that require grad
    become dual tensors (detached) whose tangent is each one-hot vector in turn
    (torch's ``_get_analytical_jacobian_forward_ad``)."""
    from . import forward_ad as fwAD

    r = _ratten()
    diff_idx = [k for k, t in enumerate(inputs) if _is_tensor(t) and t.requires_grad]
    jac = [[np.zeros((inputs[k].numel(), o.numel()), dtype=np.float64) for k in diff_idx]
           for o in outputs]
    with fwAD.dual_level():
        tangents = []
        dual_inputs = list(inputs)
        for k in diff_idx:
            tangent = r.zeros_like(inputs[k].detach())
            dual_inputs[k] = fwAD.make_dual(inputs[k].detach(), tangent)
            tangents.append(tangent)
        for j, tangent in enumerate(tangents):
            # The tangent's memory, written without a version bump (see the docstring).
            data = tangent.numpy()
            for lin, idx in enumerate(itertools.product(*[range(n) for n in tangent.shape])):
                data[idx] = 1.0
                raw = [o for o in _as_tuple(func(*dual_inputs))
                       if _is_tensor(o) and (o.is_floating_point() or o.is_complex())]
                for i, o in enumerate(raw[:len(outputs)]):
                    val, res = fwAD.unpack_dual(o)
                    if res is None:
                        continue
                    if check_grad_dtypes and val.dtype != res.dtype:
                        raise GradcheckError("Forward AD gradient has dtype mismatch.")
                    jac[i][j][lin] = _as_numpy(res).reshape(-1)
                data[idx] = 0.0
    return jac


def _forward_ad_check(func, func_out, tupled_inputs, eps, rtol, atol, check_grad_dtypes):
    """The forward-mode Jacobian of every float output against the numerical one."""
    outs = [o for o in _as_tuple(func_out)
            if _is_tensor(o) and (o.is_floating_point() or o.is_complex())]
    numerical = _numerical_jacobian(func, tupled_inputs, outs, eps)
    forward = _forward_ad_jacobian(func, tupled_inputs, outs, check_grad_dtypes)
    for i in range(len(outs)):
        for j, (a, n) in enumerate(zip(forward[i], numerical[i])):
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {i} with "
                    f"respect to input {j},\nnumerical:{_to_tensor(n)}\n"
                    f"analytical:{_to_tensor(a)}\n"
                )


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, check_backward_ad, check_forward_ad=False):
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)
    func_out = func(*tupled_inputs)
    outputs = _differentiable_outputs(func_out)
    if check_forward_ad:
        _refuse_complex_forward_ad(tupled_inputs, _as_tuple(func_out))
        _forward_ad_check(func, func_out, tupled_inputs, eps, rtol, atol, check_grad_dtypes)
    if not check_backward_ad:
        return True
    complex_indices = [i for i, o in enumerate(outputs) if o.is_complex()]
    if any(_is_tensor(o) and o.is_complex() for o in _as_tuple(func_out)):
        # torch's `_gradcheck_real_imag`: the imaginary parts, then the real parts.
        real_fn, imag_fn = _real_and_imag_output(func)
        for part_fn, test_imag in ((imag_fn, True), (real_fn, False)):
            part_out = part_fn(*tupled_inputs)
            _slow_gradcheck(part_fn, part_out, tupled_inputs,
                            _differentiable_outputs(part_out), eps, rtol, atol,
                            check_grad_dtypes, nondet_tol, complex_indices, test_imag)
    else:
        _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol,
                        check_grad_dtypes, nondet_tol)
    if outputs:
        _test_backward_mul_by_grad_output(outputs, tupled_inputs)
        if check_undefined_grad:
            _test_undefined_backward_mode(func, outputs, tupled_inputs)
    return True


def _refuse_unsupported(**flags):
    for name, value in flags.items():
        if value:
            raise NotImplementedError(
                f"{name}=True is not supported by ratten's gradcheck: it needs vmap"
            )


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Checks the gradients ``func`` computes with autograd against central finite
    differences (``torch.autograd.gradcheck``).

    ``func`` takes ``inputs`` (a Tensor or a tuple of them and other values) and returns a
    Tensor or a tuple of Tensors. For every output that requires grad and every input that
    requires grad, the analytical Jacobian (one backward per output element) must be
    ``allclose`` (``|a - n| <= atol + rtol * |n|``) to the numerical one. Also checked, as
    torch does: backward is reentrant up to ``nondet_tol``, the gradients have the inputs'
    sizes (and dtypes with ``check_grad_dtypes``), a zero grad_output gives zero gradients,
    and (``check_undefined_grad``) backward accepts undefined output gradients.

    Returns ``True``; on failure raises ``GradcheckError`` (a RuntimeError) with torch's
    report ("Jacobian mismatch for output i with respect to input j, numerical:...
    analytical:..."), or returns ``False`` when ``raise_exception=False``.

    With ``check_forward_ad`` the Jacobian forward-mode AD gives is checked the same way.
    Inputs should be float64: other dtypes warn, as torch. ``fast_mode`` runs the full
    (slow) check. Complex inputs and outputs are checked as torch does (see the module's
    docstring). ``check_batched_grad`` and ``check_batched_forward_grad`` raise
    NotImplementedError;
    ``masked`` applies to sparse tensors only and is ignored.
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    _refuse_unsupported(check_batched_grad=check_batched_grad,
                        check_batched_forward_grad=check_batched_forward_grad)
    del fast_mode, masked  # fast_mode: the slow check decides the same; masked: sparse only.
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol,
                                 check_undefined_grad, check_grad_dtypes, check_backward_ad,
                                 check_forward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _make_grad_output(x, noncontiguous):
    """torch.testing.make_tensor(x.shape, low=-1, high=1, requires_grad=True): uniform in
    [-1, 1), made non-contiguous (every other element of a twice-as-long last dimension)
    when asked and possible."""
    r = _ratten()
    dtype = x.dtype if x.dtype.is_floating_point else r.float64
    shape = tuple(x.shape)
    if noncontiguous and len(shape) > 0 and x.numel() > 1:
        wide = r.rand(shape[:-1] + (2 * shape[-1],), dtype=dtype) * 2 - 1
        t = wide[..., ::2]
    else:
        t = r.rand(shape, dtype=dtype) * 2 - 1
    return t.detach().requires_grad_(True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """Checks second-order gradients (``torch.autograd.gradgradcheck``): ``gradcheck`` of the
    function ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)``, so backward's own backward is compared with finite differences of
    backward, with respect to the inputs and to the grad_outputs.

    ``grad_outputs`` default to random tensors uniform in [-1, 1) that require grad
    (non-contiguous with ``gen_non_contig_grad_outputs``). Other arguments and limits as
    ``gradcheck``; ``check_fwd_over_rev`` checks forward-mode AD over the backward.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    r = _ratten()
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            _make_grad_output(x, gen_non_contig_grad_outputs) for x in outputs
        )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_idx = {
        i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad
    }
    diff_grad_output_idx = {
        i for i, x in enumerate(tupled_grad_outputs) if _is_tensor(x) and x.requires_grad
    }

    def new_func(*args):
        input_args = tuple(
            x.requires_grad_() if i in diff_input_idx else x
            for i, x in enumerate(args[:-num_outputs])
        )
        outputs = _differentiable_outputs(func(*input_args))
        grad_outs = tuple(
            x.requires_grad_() if i in diff_grad_output_idx else x
            for i, x in enumerate(args[-num_outputs:])
        )
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_idx)
        grad_inputs = r.autograd.grad(
            outputs, diff_input_args, grad_outs, create_graph=True, allow_unused=True
        )
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )
