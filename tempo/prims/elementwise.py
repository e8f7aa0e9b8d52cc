"""Elementwise primitives: unary and binary functions (by `fn`), where, cast.

Each backend's function of a `fn` is in one table per backend below, built on first use
(so importing this module imports no backend library).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import Grads, Gs, Xs, scalar_like, unbroadcast
from tempo.compiler.op_rules import per_output_element
from tempo.compiler.passes.vectorize_rules import Batching, lead
from tempo.core import ops
from tempo.core.dtype import dtypes
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.api.recurrent_tensor import RecurrentTensor as RT
    from tempo.runtime.kernel_registry import Kernel


# ---------------------------------------------------------------- gradients
def _binary_parts(fn: str, a: RT, b: RT, y: RT, g: RT) -> tuple[RT | None, RT | None]:
    if fn == "add":
        return g, g
    if fn == "sub":
        return g, -g
    if fn == "mul":
        return g * b, g * a
    if fn == "div":
        return g / b, -g * a / (b * b)
    if fn == "pow":  # torch: 0 where the exponent is 0 / the base is 0 with exponent >= 0
        da = g * (b == 0).where(scalar_like(0.0, y), b * a ** (b - 1))
        zero_base = (a == 0) & (b >= 0)
        db = g * zero_base.where(scalar_like(0.0, y), y * a.ln())
        return da, db
    if fn in ("maximum", "minimum"):  # torch: a tie splits the gradient equally
        win = (a > b) if fn == "maximum" else (a < b)
        half = (a == b).where(scalar_like(0.5, g), scalar_like(0.0, g))
        wa = win.where(scalar_like(1.0, g), half)
        return g * wa, g * (1.0 - wa)
    if fn == "fmod":
        return g, None
    return None, None


def binary_grad(op: ops.BinaryOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    if g is None:
        return [None, None]
    parts = _binary_parts(op.fn, xs[0], xs[1], ys[0], g)
    return [None if p is None else unbroadcast(p, x.shape) for p, x in zip(parts, xs)]


UNARY_GRADS: dict[str, Any] = {
    "neg": lambda x, y, g: -g,
    "exp": lambda x, y, g: g * y,
    "ln": lambda x, y, g: g / x,
    "sqrt": lambda x, y, g: g / (y * 2.0),
    "sin": lambda x, y, g: g * x.cos(),
    "cos": lambda x, y, g: -g * x.sin(),
    "tan": lambda x, y, g: g * (y * y + 1.0),
    "sigmoid": lambda x, y, g: g * y * (1.0 - y),
    "tanh": lambda x, y, g: g * (1.0 - y * y),
    "relu": lambda x, y, g: g * (x > 0).cast(g.dtype),
    "abs": lambda x, y, g: g * ((x > 0).cast(g.dtype) - (x < 0).cast(g.dtype)),
    "erf": lambda x, y, g: g * (-(x * x)).exp() * (2.0 / math.sqrt(math.pi)),
}
"""d/dx of each differentiable unary fn, as (x, y, output grad) → input grad; the rest
(floor, sign, isnan, ...) have zero or no gradient."""


def unary_grad(op: ops.UnaryOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    rule, g = UNARY_GRADS.get(op.fn), gs[0]
    return [None if rule is None or g is None else rule(xs[0], ys[0], g)]


def where_grad(op: ops.WhereOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    c, g = xs[0], gs[0]
    if g is None:
        return [None, None, None]
    z = scalar_like(0.0, g)
    return [None, unbroadcast(c.where(g, z), xs[1].shape), unbroadcast(c.where(z, g), xs[2].shape)]


def cast_grad(op: ops.CastOp, xs: Xs, ys: Xs, gs: Gs) -> Grads:
    g = gs[0]
    return [None if g is None or not dtypes.is_float(xs[0].dtype) else g.cast(xs[0].dtype)]


# ---------------------------------------------------------------- torch
@functools.cache
def _torch_unary() -> dict[str, Kernel]:
    import torch

    return {
        "neg": torch.neg, "exp": torch.exp, "ln": torch.log, "sqrt": torch.sqrt,
        "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh,
        "sigmoid": torch.sigmoid, "erf": torch.erf, "abs": torch.abs, "relu": torch.relu,
        "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
        "sign": torch.sign, "not": torch.logical_not, "isnan": torch.isnan,
        "isinf": torch.isinf,
    }


def _torch_unary_kernel(op: ops.UnaryOp, be: Any) -> Kernel:
    """tanh on a CPU device is `torch_tanh_cpu` (torch's tanh or API.md's 2*sigmoid(2x)-1,
    whichever this machine runs faster); every other fn, and tanh on a GPU (or "fake-gpu",
    which takes the GPU paths: `on_cpu` is False), is torch's own function."""
    if op.fn == "tanh" and getattr(be, "on_cpu", True):
        return torch_tanh_cpu()
    return _torch_unary()[op.fn]


def torch_tanh_cpu(form: str | None = None) -> Kernel:
    """tanh on a CPU device: torch's own, or API.md's `2*sigmoid(2x) - 1` in three calls,
    whichever this machine runs faster (measured once per process, `form` None) or `form`
    (`tempo.runtime.torch_tanh`, whose docstring has the numbers). The gradient rule is
    the same for both: d/dx (2 sigmoid(2x) - 1) = 1 - y^2 exactly, as for tanh."""
    from tempo.runtime.torch_tanh import tanh_kernel

    return tanh_kernel(form)


@functools.cache
def _torch_binary() -> dict[str, Kernel]:
    import torch

    return {
        "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.true_divide,
        "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
        "fmod": torch.fmod, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
        "eq": torch.eq, "ne": torch.ne, "and": torch.logical_and, "or": torch.logical_or,
        "xor": torch.logical_xor,
    }


def _torch_where(op: ops.WhereOp, be: Any) -> Kernel:
    import torch

    return torch.where


def _torch_cast(op: ops.CastOp, be: Any) -> Kernel:
    dt = be.dtype(op.dtype)
    return lambda x: x.to(dt)


# ---------------------------------------------------------------- jax
@functools.cache
def _jax_tables() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(float unary, same-dtype unary, binary) functions of jax."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    float_unary = {
        "exp": jnp.exp, "ln": jnp.log, "sqrt": jnp.sqrt, "sin": jnp.sin, "cos": jnp.cos,
        "tan": jnp.tan, "tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid, "erf": lax.erf,
    }
    same_unary = {
        "abs": jnp.abs, "relu": lambda x: jnp.maximum(x, jnp.zeros((), x.dtype)),
        "sign": jnp.sign, "floor": jnp.floor, "ceil": jnp.ceil, "round": jnp.round,
        "trunc": jnp.trunc, "not": jnp.logical_not, "isnan": jnp.isnan, "isinf": jnp.isinf,
    }
    binary = {
        "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "pow": jnp.power,
        "maximum": jnp.maximum, "minimum": jnp.minimum, "fmod": jnp.fmod,
        "lt": jnp.less, "le": jnp.less_equal, "gt": jnp.greater, "ge": jnp.greater_equal,
        "eq": jnp.equal, "ne": jnp.not_equal, "and": jnp.logical_and, "or": jnp.logical_or,
        "xor": jnp.logical_xor, "div": jnp.true_divide,
    }
    return float_unary, same_unary, binary


def _jax_unary(op: ops.UnaryOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    float_unary, same_unary, _ = _jax_tables()
    fn = op.fn
    if fn in float_unary:
        return jit_shared(op, float_unary[fn])
    if fn == "neg":
        return jit_shared(op, jnp.negative)
    f = same_unary[fn]
    if fn in ("floor", "ceil", "round", "trunc"):
        return jit_shared(op, lambda x: x if np.dtype(x.dtype).kind in "biu" else f(x))
    return jit_shared(op, f)


def _jax_binary(op: ops.BinaryOp, be: Any) -> Kernel:
    from tempo.runtime.backends.jax import jit_shared

    return jit_shared(op, _jax_tables()[2][op.fn])


def _jax_where(op: ops.WhereOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    return jit_shared(op, jnp.where)


def _jax_cast(op: ops.CastOp, be: Any) -> Kernel:
    from tempo.runtime.backends.jax import jit_shared

    dt = be.dtype(op.dtype)
    return jit_shared(op, lambda x: x.astype(dt))


# ---------------------------------------------------------------- numpy
def _erf() -> Any:
    try:
        from scipy.special import erf  # optional: not a dependency
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])
    return erf


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-log(1 + exp(-x))): no overflow warning and full range, dtype preserved
    return np.exp(-np.logaddexp(0, -x))


@functools.cache
def _np_float_unary() -> dict[str, Any]:
    return {"exp": np.exp, "ln": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
            "tan": np.tan, "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf()}


_NP_SAME_UNARY: dict[str, Any] = {
    "abs": np.abs, "relu": lambda x: np.maximum(x, 0), "sign": np.sign,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
}
_NP_BOOL_UNARY: dict[str, Any] = {"not": np.logical_not, "isnan": np.isnan, "isinf": np.isinf}
_NP_BINARY: dict[str, Any] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "fmod": np.fmod,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal, "and": np.logical_and, "or": np.logical_or,
    "xor": np.logical_xor,
    "div": np.true_divide,  # float operands (BinaryOp.input_dtypes)
}


def _np_unary(op: ops.UnaryOp, be: Any) -> Kernel:
    from tempo.runtime.backends.numpy import ufunc

    fn = op.fn
    if fn in _np_float_unary():
        f = _np_float_unary()[fn]

        def float_unary(x: np.ndarray) -> np.ndarray:
            r = f(x)
            return r if r.dtype == x.dtype else np.asarray(r, dtype=x.dtype)  # erf: f16 -> f32

        return float_unary
    if fn == "neg":
        return ufunc(np.negative)
    if fn in ("floor", "ceil", "round", "trunc"):
        g = ufunc(_NP_SAME_UNARY[fn])
        return lambda x: x if x.dtype.kind in "biu" else g(x)  # ints: numpy would go float
    if fn == "relu":
        maximum = ufunc(np.maximum)
        return lambda x: maximum(x, x.dtype.type(0))
    table = _NP_SAME_UNARY if fn in _NP_SAME_UNARY else _NP_BOOL_UNARY
    return ufunc(table[fn])


def _np_binary(op: ops.BinaryOp, be: Any) -> Kernel:
    from tempo.runtime.backends.numpy import ufunc

    return ufunc(_NP_BINARY[op.fn])


def _np_where(op: ops.WhereOp, be: Any) -> Kernel:
    return lambda cond, a, b: np.asarray(np.where(cond, a, b))


def _np_cast(op: ops.CastOp, be: Any) -> Kernel:
    dt = be.dtype(op.dtype)
    return lambda x: x.astype(dt, copy=False)


# ---------------------------------------------------------------- batching
def batch_elementwise(op: ops.Op, batched: list[bool], shapes: list[Any], D: int,
                      d: str) -> Batching | None:
    """Operands broadcast as before once each batched one has the output's rank after D;
    unbatched operands broadcast along D (right-aligned)."""
    rank = max(len(s) for s in shapes)
    return Batching(op, tuple(lead(D, s, rank) if b and len(s) < rank else None
                              for s, b in zip(shapes, batched)))

# ---------------------------------------------------------------- registration
primitive(
    ops.UnaryOp, grad=unary_grad, batching=batch_elementwise, cost=per_output_element(1),
    torch=_torch_unary_kernel, jax=_jax_unary, numpy=_np_unary,
)
primitive(
    ops.BinaryOp, grad=binary_grad, batching=batch_elementwise, cost=per_output_element(1),
    torch=lambda op, be: _torch_binary()[op.fn], jax=_jax_binary, numpy=_np_binary,
)
primitive(
    ops.WhereOp, grad=where_grad, batching=batch_elementwise, cost=per_output_element(1),
    torch=_torch_where, jax=_jax_where, numpy=_np_where,
)
primitive(
    ops.CastOp, grad=cast_grad, batching=batch_elementwise, cost=per_output_element(1),
    torch=_torch_cast, jax=_jax_cast, numpy=_np_cast,
)
