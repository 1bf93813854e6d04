"""Higher-level autograd on functions (torch/autograd/functional.py): ``vjp``, ``jvp``,
``jacobian``, ``hessian``, ``hvp``, ``vhp``, with torch's signatures, results and errors.

Everything is built from reverse mode (``autograd.grad``): ``jvp`` and ``hvp`` use the
double-backward trick (differentiate the vector-Jacobian product with respect to its
``grad_outputs``), as torch does. ``jacobian(strategy="forward-mode")`` and ``hessian``'s
forward-over-reverse use forward-mode AD. ``vectorize=True`` (torch's vmap over the basis
vectors) gives the same results, computed one basis vector at a time.
"""

from .. import _C
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _ratten():
    import ratten

    return ratten


def _grad(*args, **kwargs):
    return _ratten().autograd.grad(*args, **kwargs)


def _as_tuple(inp, arg_name, fn_name):
    """``(was_tuple, tuple_of_tensors)``, refusing non-Tensor entries with torch's text."""
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, _C.Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the {where} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    # to_unpack: one flag (was the argument a tuple) or two (outputs, inputs) for nested
    # results such as jacobians.
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _detach(t):
    """``t.detach()``: an alias with no history. ratten's Autograd kernel for ``detach``
    records a NotImplemented node when ``t`` requires grad (torch writes detach's by hand,
    VariableTypeManual); a view made in no_grad mode is a leaf instead."""
    d = t.detach()
    if d.requires_grad:
        with no_grad():
            d = t.view_as(t)
        d.requires_grad_(False)
    return d


def _grad_preprocess(inputs, create_graph, need_graph):
    # With create_graph the result must stay differentiable with respect to the caller's
    # tensors (a view keeps the link); otherwise fresh leaves, so that nothing is recorded
    # into the caller's graph.
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(_detach(inp).requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], _C.Tensor):
        return inputs if create_graph else tuple(_detach(inp) for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.size()) != tuple(el_other.size()):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got "
                f"{el_v.size()}."
            )


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}."
                " This is not allowed in strict mode."
            )
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i}"
                " is independent of the input. This is not allowed in strict mode."
                " You should ensure that your function is thrice differentiable and that"
                " the hessian depends on the inputs."
            )
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided"
                f" function with respect to input {i} is independent of the input. This is not"
                " allowed in strict mode. You should ensure that your function is twice"
                " differentiable and that the jacobian depends on the inputs (this would be"
                " violated by a linear function for example)."
            )
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the"
                " user-provided function. This is not allowed in strict mode."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients."
            " The outputs must be computed in a differentiable manner from the input"
            " when running in strict mode."
        )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    # autograd.grad over the outputs that require grad only; all None when none does.
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs = []
    new_grad_outputs = []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    return _grad(new_outputs, list(inputs), new_grad_outputs, allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph)


_FILL_ERRORS = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    zeros_like = _ratten().zeros_like
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_ERRORS[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _inputs_and_v(inputs, v, create_graph, fn_name):
    """The inputs as fresh graph roots and ``v`` checked against their shapes (``jvp``,
    ``hvp``, ``vhp``): ``(is_inputs_tuple, inputs, v)``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    else:
        _single_element_v_required(inputs, "input to the user-provided function")
    return is_inputs_tuple, inputs, v


def _last_grad(outputs, inputs, v, refs, stage, create_graph, strict):
    """The final product: graph recorded only with create_graph (or when grad mode is on
    anyway), missing gradients as zeros shaped like ``refs``."""
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        return _fill_in_zeros(grad_res, refs, strict, create_graph, stage)


def _finish(outputs, result, create_graph, is_outputs_tuple, is_result_tuple):
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_result_tuple))


def _single_element_v_required(inputs, what):
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(
            f"The vector v can only be None if the {what} "
            "is a single Tensor with a single element."
        )


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Vector-Jacobian product of ``func`` at ``inputs`` (``torch.autograd.functional.vjp``).

    Returns ``(func_output, vjp)``; ``v`` has the outputs' shapes (may be None for a single
    one-element output). ``create_graph`` makes the results differentiable; ``strict`` raises
    when an output does not depend on an input instead of returning zeros.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a "
                "single Tensor with a single element."
            )
    result = _last_grad(outputs, inputs, v, inputs, "back", create_graph, strict)
    return _finish(outputs, result, create_graph, is_outputs_tuple, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Jacobian-vector product of ``func`` at ``inputs`` (``torch.autograd.functional.jvp``),
    by the double-backward trick.

    Returns ``(func_output, jvp)``; ``v`` has the inputs' shapes (may be None for a single
    one-element input).
    """
    zeros_like = _ratten().zeros_like
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "jvp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        # The vjp as a function of its grad_outputs is linear with matrix J^T: its own vjp
        # with v is J v.
        grad_outputs = tuple(zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    result = _last_grad(grad_inputs, grad_outputs, v, outputs, "back_trick", create_graph,
                        strict)
    return _finish(outputs, result, create_graph, is_outputs_tuple, is_outputs_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (``torch.autograd.functional.jacobian``).

    For one input and one output a Tensor of shape ``output.shape + input.shape``; for tuples,
    ``result[i][j]`` is the Jacobian of output ``i`` with respect to input ``j``. Computed
    with one backward per output element, or with ``strategy="forward-mode"`` (which needs
    ``vectorize=True``, as torch) one forward-mode evaluation per input element.
    ``vectorize=True`` computes the same rows one by one (ratten has no vmap).
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more '
            'performant. Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `create_graph=False` or "
                '`strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `strict=False` or "
                '`strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                "only implemented for `vectorize=True`."
            )
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        is_outputs_tuple, jac = _jacfwd(func, inputs)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))
    r = _ratten()
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` "
                    "and `vectorized=True` are not supported together. "
                    "Please either set `strict=False` or "
                    "`vectorize=False`."
                )
            # Without vmap the rows are computed one by one, as vectorize=False does: the
            # same Jacobian, without torch's batching.
        jacobian = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for el_idx, (row, vj_el, inp_el) in enumerate(zip(rows, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is "
                                f"independent of input {i}. This is not allowed in "
                                "strict mode when create_graph=True."
                            )
                        row.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is "
                                f"independent of input {el_idx}. This is not allowed in "
                                "strict mode."
                            )
                        row.append(r.zeros_like(inp_el))
            jacobian.append(tuple(
                _stack_rows(row, out, inputs[el_idx]) for el_idx, row in enumerate(rows)
            ))
        jacobian = _grad_postprocess(tuple(jacobian), create_graph)
        return _tuple_postprocess(jacobian, (is_outputs_tuple, is_inputs_tuple))


def _jacfwd(func, inputs):
    """The Jacobian by forward-mode AD (torch's ``_jacfwd``, one column at a time instead
    of vmapped): each input element's one-hot tangent through ``func``."""
    from . import forward_ad as fwAD

    r = _ratten()
    columns = None
    with fwAD.dual_level():
        for j, inp in enumerate(inputs):
            for k in range(inp.numel()):
                duals = []
                for jj, other in enumerate(inputs):
                    tangent = r.zeros_like(other)
                    if jj == j:
                        tangent.view(-1)[k] = 1.0
                    duals.append(fwAD.make_dual(other, tangent))
                is_outputs_tuple, outs = _as_tuple(
                    func(*duals), "outputs of the user-provided function", "jacobian")
                if columns is None:
                    columns = [[[] for _ in inputs] for _ in outs]
                for i, o in enumerate(outs):
                    t = fwAD.unpack_dual(o).tangent
                    columns[i][j].append(r.zeros_like(o) if t is None else t)
    outs_shapes = [tuple(c[0][0].shape) if c[0] else () for c in columns]
    jac = tuple(
        tuple(
            r.stack(col, dim=-1).reshape(outs_shapes[i] + tuple(inputs[j].shape))
            if col else r.zeros(outs_shapes[i] + tuple(inputs[j].shape),
                                dtype=inputs[j].dtype)
            for j, col in enumerate(columns[i])
        )
        for i in range(len(columns))
    )
    return is_outputs_tuple, jac


def _stack_rows(rows, out, inp):
    r = _ratten()
    shape = tuple(out.size()) + tuple(inp.size())
    if not rows:
        # A zero-element output: an empty Jacobian of the right shape.
        return r.zeros(shape, dtype=inp.dtype)
    return r.stack(rows, dim=0).view(shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``
    (``torch.autograd.functional.hessian``): the Jacobian of its gradient.

    For one input a Tensor of shape ``input.shape + input.shape``; for tuples,
    ``result[i][j]`` is the block for inputs ``i`` and ``j``. ``func`` must return a
    single one-element Tensor.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, _C.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a "
                "single element"
            )
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_outputs(func, inputs, fn_name, strict):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], _C.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Vector-Hessian product ``v^T H`` of the scalar function ``func`` at ``inputs``
    (``torch.autograd.functional.vhp``). Returns ``(func_output, vhp)``."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "vhp")
        is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    result = _last_grad(jac, inputs, v, inputs, "double_back", create_graph, strict)
    return _finish(outputs, result, create_graph, is_outputs_tuple, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Hessian-vector product ``H v`` of the scalar function ``func`` at ``inputs``
    (``torch.autograd.functional.hvp``), by the double-backward trick. Returns
    ``(func_output, hvp)``."""
    zeros_like = _ratten().zeros_like
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "hvp")
        is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    result = _last_grad(double_back, grad_jac, v, inputs, "double_back_trick", create_graph,
                        strict)
    return _finish(outputs, result, create_graph, is_outputs_tuple, is_inputs_tuple)
