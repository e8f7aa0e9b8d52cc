"""Lowering hand-written composites to the fused primitives (issue 10): a program that
writes softmax, log-softmax, layer / RMS norm or attention out of elementwise ops,
reductions and matmuls gets the op the API records for `softmax()`, `LayerNorm`,
`scaled_dot_product_attention` (`tempo.core.ops_fused`): one backend kernel instead of
five to ten, and — because the lowering runs on the forward graph before autodiff
(`lower_before_autodiff`, called by `backward()`) — the fused op's closed-form gradient,
which keeps none of the composite's intermediates alive.

Recognised exactly (dims, keepdim, eps, scale and mask semantics checked; see
`lower_fused_match` for which reads may be absorbed):
- softmax   `e = (x - x.max(d, keepdim=True)[0]).exp();  e / e.sum(d, keepdim=True)`
- log-softmax `z - z.exp().sum(d, keepdim=True).log()` with z as above, and
  `x - x.logsumexp(d, keepdim=True)` (the API's guarded shift)
- layer norm `xc / (mean(xc * xc) + eps).sqrt()` (or `* 1/sqrt`, `* (..)**-0.5`) with
  `xc = x - x.mean(dims, keepdim=True)` over the trailing dims; `xc**2` and
  `xc.square()` too; the affine `* w + b` stays as it is
- RMS norm  `x * (mean(x * x) + eps)` to the power -1/2, in the same spellings
- attention: see `lower_fused_attention` (matmul form) and `lower_fused_contract`
  (broadcast products and sums, as `MultiHeadAttention` records it).
Not lowered: the unshifted softmax (`x.exp() / x.exp().sum()`, which overflows where the
fused op does not: not the same function), and variance through `var()` (which the API
computes as a square of `std()`, not exactly the biased variance).

The fused kernels round differently from the composite (within float tolerance, not bit
for bit). The rules are algebraic rules (registered in `algebraic_rules.RULES`, so
`algebraic_optims_to_disable` switches each off by name): the clean-up pass applies them
to graphs `backward()` did not see (inference programs), and `backward()` applies the
ones the context's config enables — it records the gradient before any compile config
exists; compiling under a config that disables a rule `backward()` applied raises
(`api/autodiff/backward.check_lowering_config` says why). The intermediates of a
composite `backward()` lowered still get their `.grad` (API §3.7):
`api/autodiff/composite_grads.py` derives it from the fused op's upstream gradient by the
composite's own reverse rules, as ops the dead-code pass removes unless the user reads
that `.grad`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from tempo.compiler.passes.lower_fused_match import Lowered, Match, Walk
from tempo.core import ops
from tempo.core.configs import ExecutionConfig
from tempo.core.sdg import SDG, Edge, TensorId


class LowerFn(Protocol):
    """A lowering rule: rewrite the composite ending at `op` if it matches; whether it did."""

    def __call__(self, sdg: SDG, op: Any, walk: Walk | None = None) -> bool: ...


def _redefine(m: Match, new: ops.Op, reads: list[Edge]) -> bool:
    """Turn the final op into `new` (same id: the user's handle and readers stay)."""
    m.sdg.redefine(new, m.inputs(*reads))
    m.done()
    return True


# ---------------------------------------------------------------- softmax
def _shifted(m: Match, e: Edge) -> tuple[Edge, int] | None:
    """`x - shift(x)` along one dim that `e` reads: (the read of x, dim)."""
    z = m.inner(e, ops.BinaryOp, "sub")
    if z is None:
        return None
    x, sh = m.outer(m.arg(z, 0)), m.arg(z, 1)
    got = m.shift(sh)
    if x is None or got is None or len(got[1]) != 1:
        return None
    mx, (d,) = got
    return (x, d) if m.same_read(m.arg(mx, 0), x) else None


def _sum_exp(m: Match, e: Edge, of: Edge, d: int) -> bool:
    """`e` reads `exp(of).sum(d, keepdim=True)` (exp read at `of`'s point)."""
    got = m.kept_reduce(e, ops.SumOp)
    if got is None or got[1] != (d,):
        return False
    ex = m.inner(m.arg(got[0], 0), ops.UnaryOp, "exp")
    return ex is not None and m.same_read(m.arg(ex, 0), of)


def lower_softmax(sdg: SDG, op: ops.Op, walk: Walk | None = None) -> bool:
    if not (isinstance(op, ops.BinaryOp) and op.fn == "div"):
        return False
    m = Match(sdg, op, walk)
    ex = m.inner(m.arg(op, 0), ops.UnaryOp, "exp")
    if ex is None:
        return False
    got = _shifted(m, m.arg(ex, 0))
    if got is None:
        return False
    x, d = got
    s = m.kept_reduce(m.arg(op, 1), ops.SumOp)
    if s is None or s[1] != (d,) or m.sdg.ops[m.arg(s[0], 0).src.op_id] is not ex:
        return False
    if m.arg(s[0], 0).src != TensorId(ex.op_id, 0) or not _closes(m, x):
        return False
    return _redefine(m, ops.SoftmaxOp(op_id=op.op_id, domain=op.domain, site=op.site,
                                      tags=op.tags, dim=d), [x])


def lower_log_softmax(sdg: SDG, op: ops.Op, walk: Walk | None = None) -> bool:
    if not (isinstance(op, ops.BinaryOp) and op.fn == "sub"):
        return False
    m = Match(sdg, op, walk)
    a, b = m.arg(op, 0), m.arg(op, 1)
    got = _shifted(m, a)  # (x - max) - log(sum(exp(x - max)))
    if got is not None:
        x, d = got
        lg = m.inner(b, ops.UnaryOp, "ln")
        if lg is None or not _sum_exp(m, m.arg(lg, 0), a, d):
            return False
    else:  # x - (log(sum(exp(x - shift))) + shift): logsumexp
        m = Match(sdg, op, walk)
        x_read = m.outer(a)
        add = m.inner(b, ops.BinaryOp, "add")
        if x_read is None or add is None:
            return False
        lg = m.inner(m.arg(add, 0), ops.UnaryOp, "ln")
        if lg is None:
            return False
        sm = m.kept_reduce(m.arg(lg, 0), ops.SumOp)
        ex = None if sm is None else m.inner(m.arg(sm[0], 0), ops.UnaryOp, "exp")
        inner = None if ex is None else _shifted(m, m.arg(ex, 0))
        sh = m.arg(add, 1)
        if sm is None or inner is None or sm[1] != (inner[1],):
            return False
        z = m.sdg.ops[m.arg(ex, 0).src.op_id] if ex is not None else None
        if z is None or not (m.same_read(inner[0], x_read) and m.same_read(sh, m.arg(z, 1))):
            return False
        m.shift_uses.append(sh)
        m.allow_cut.append(sh)
        x, d = x_read, inner[1]
    if not _closes(m, x):
        return False
    return _redefine(m, ops.SoftmaxOp(op_id=op.op_id, domain=op.domain, site=op.site,
                                      tags=op.tags, dim=d, log=True), [x])


def _closes(m: Match, x: Edge) -> bool:
    """The common end checks: x fits the output, the shift's reads agree, no member is
    read from outside, the max's indices are unread."""
    if not (m.is_float_like_final(x) and m.shift_ok()):
        return False
    maxes = [i for i in m.members if isinstance(m.sdg.ops[i], ops.MaxOp)]
    return m.closed([TensorId(i, 1) for i in maxes])


# ---------------------------------------------------------------- norms
def _square_of(m: Match, e: Edge) -> Edge | None:
    """`v * v`, `v ** 2`: the read of v."""
    op = m.inner(e, ops.BinaryOp, ("mul", "pow"))
    if op is None:
        return None
    a, b = m.arg(op, 0), m.arg(op, 1)
    if op.fn == "mul":
        return a if m.same_read(a, b) else None
    return a if m.scalar(b) == 2.0 and m.scalar(a) is None else None


def _eps_plus(m: Match, e: Edge) -> tuple[Edge, float] | None:
    """`v + eps` (either order) with eps a non-negative one-element constant."""
    op = m.inner(e, ops.BinaryOp, "add")
    side = None if op is None else m.scalar_side(op)
    if side is None or not side[0] >= 0.0:
        return None
    return side[1], side[0]


def _inv_sqrt(m: Match, e: Edge) -> Edge | None:
    """`1 / sqrt(v)` or `v ** -0.5`: the read of v."""
    op = m.inner(e, ops.BinaryOp, ("div", "pow"))
    if op is None:
        return None
    a, b = m.arg(op, 0), m.arg(op, 1)
    if op.fn == "pow":
        return a if m.scalar(b) == -0.5 and m.scalar(a) is None else None
    sq = m.inner(b, ops.UnaryOp, "sqrt") if m.scalar(a) == 1.0 else None
    return None if sq is None else m.arg(sq, 0)


def lower_norm(sdg: SDG, op: ops.Op, walk: Walk | None = None) -> bool:
    """Layer norm (centred) or RMS norm over the trailing dims, without the affine part."""
    if not (isinstance(op, ops.BinaryOp) and op.fn in ("div", "mul")):
        return False
    for k in ((0,) if op.fn == "div" else (0, 1)):
        for center in (True, False):
            if _try_norm(Match(sdg, op, walk), op, k, center):
                return True
    return False


def _try_norm(m: Match, op: ops.BinaryOp, k: int, center: bool) -> bool:
    """The final op's input `k` is the numerator, the other the normaliser."""
    num, den = m.arg(op, k), m.arg(op, 1 - k)
    if op.fn == "div":
        sq = m.inner(den, ops.UnaryOp, "sqrt")
        var_eps = None if sq is None else m.arg(sq, 0)
    else:
        var_eps = _inv_sqrt(m, den)
    got = None if var_eps is None else _eps_plus(m, var_eps)
    mean = None if got is None else m.mean(got[0])
    sq_of = None if mean is None else _square_of(m, mean[0])
    if got is None or mean is None or sq_of is None or not m.same_read(sq_of, num):
        return False
    dims, eps = mean[1], got[1]
    n = len(m.sdg.read_shape(num))
    if dims != tuple(range(n - len(dims), n)):
        return False
    x = m.outer(num)
    if center:  # layer norm: num = x - mean(x) over the same dims
        sub = m.inner(num, ops.BinaryOp, "sub")
        if sub is None:
            return False
        mu = m.mean(m.arg(sub, 1))
        x = m.outer(m.arg(sub, 0))
        if mu is None or x is None or mu[1] != dims or not m.same_read(mu[0], x):
            return False
    if x is None or not m.is_float_like_final(x) or not m.closed():
        return False
    return _redefine(m, ops.NormOp(op_id=op.op_id, domain=op.domain, site=op.site,
                                   tags=op.tags, n_dims=len(dims), eps=eps, center=center),
                     [x])


# ---------------------------------------------------------------- driving
def rules() -> dict[str, tuple[tuple[type[ops.Op], ...], LowerFn]]:
    """The lowering rules by name (their `algebraic_optims_to_disable` names), in the
    order they are tried on one op: softmax before the attention that reads it."""
    from tempo.compiler.passes.lower_fused_attention import lower_attention

    return {
        "lower_softmax": ((ops.BinaryOp,), lower_softmax),
        "lower_log_softmax": ((ops.BinaryOp,), lower_log_softmax),
        "lower_norm": ((ops.BinaryOp,), lower_norm),
        "lower_attention": ((ops.MatMulOp, ops.SumOp), lower_attention),
    }


def enabled_rules(cfg: ExecutionConfig) -> frozenset[str]:
    """The names of the lowering rules `cfg` applies."""
    if not cfg.enable_algebraic_optimizer:
        return frozenset()
    return frozenset(rules()) - set(cfg.algebraic_optims_to_disable)


def lower_before_autodiff(sdg: SDG, cfg: ExecutionConfig,
                          stopped: frozenset[tuple[int, int]],
                          lowered: list[Lowered] | None = None) -> int:
    """Apply the lowering rules `cfg` enables to the recorded graph (in place), respecting
    the edges autodiff will not differentiate (`stopped`); the number of composites
    lowered, each also appended to `lowered`. Called by `backward()` so the gradient uses
    the fused ops' rules (and gives the composites' intermediates their `.grad`)."""
    on = enabled_rules(cfg)
    if not on:
        return 0
    table = [(name, kinds, fn) for name, (kinds, fn) in rules().items() if name in on]
    done, walk = 0, Walk(stopped)
    for op in list(sdg.topological()):
        for name, kinds, fn in table:
            current = sdg.ops.get(op.op_id)
            if current is None or not isinstance(current, kinds):
                continue
            if fn(sdg, current, walk):
                walk.lowered[-1] = replace(walk.lowered[-1], rule=name)
                done += 1
                break
    if lowered is not None:
        lowered.extend(walk.lowered)
    return done
