"""Member pairs of a generated torch region that torch runs as one call (`regions.source`
calls the fold's kernel on the line of the pair's second member; the first's is `pass`).
The SDG and its gradient rules are untouched: a fold is how the region is lowered.

- `minimum(maximum(x, lo), hi)` (what `clip` records) is `torch.clamp(x, lo, hi)`, which is
  defined as exactly that composition (bit for bit): one call instead of two (12 vs 7 us at
  64 elements, one thread; the E5 step clips twice).
- `matmul(x, w) + b` with a bias row `b` (one value per output column; the grouping pass
  tags such adds, `tempo.compiler.passes.grouping_folds`) is `torch.addmm` for a matrix
  `x`: one BLAS call that starts from the bias (the same sum, added in the same place:
  equal bits in the tests), instead of a matmul and an add; for a batch of rows, the
  matmul then the bias added in place (`batch_matmul_add`: cheaper than F.linear).
- `mul(x, sigmoid(x))` (what `swish`/`silu` records) is `F.silu(x)`: one call instead of
  two (one of the ~12 a GPT-2-core layer's MLP region makes per step); silu rounds once
  where the pair rounds twice, so results differ by at most an ulp or so.
- `tanh(matmul(x, w) + b)` on a CPU device runs in the CPU tanh's form (measured per
  machine, `tempo.runtime.torch_tanh`): `addmm` + `tanh_` in place (native), or, for
  API.md's `2*sigmoid(2x) - 1`, `addmm(b, x, w, beta=2, alpha=2)`, which is 2(xw + b)
  bit for bit (scaling by 2 is exact), + in-place sigmoid + 2s - 1. Either way the fold
  equals its unfolded calls bit for bit, one call and one allocation fewer per layer and
  env step of PPO's rollout.

A fold applies where the first member's value is read only by the second (else both
calls are needed anyway).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tempo.core import ops
from tempo.core.ops_region import (
    LINEAR_BATCH,
    LINEAR_ROWS,
    OUTER_SUM,
    OUTER_SUM_TAGS,
    TANH_GRAD,
    Ref,
    RegionOp,
)
from tempo.runtime.torch_tanh import NATIVE, cpu_tanh_form

LINEAR_TAGS = frozenset({LINEAR_ROWS, LINEAR_BATCH})
IN_PLACE_KIND = "in_place:"
"""Prefix of an in-place fold's kind (`region_folds_in_place`); the rest names the
`torch.Tensor` method."""

Kernel = Callable[..., Any]


@dataclass(frozen=True)
class Fold:
    """A member absorbs the members `absorbed`: its line calls `fold_kernel(kind)` on
    `reads`."""

    absorbed: tuple[int, ...]
    reads: tuple[Ref, ...]
    kind: str


Folds = dict[int, Fold]
"""member k -> its fold (k's kernel is `fold_kernel(fold.kind)`)."""


def _uses(op: RegionOp) -> list[int]:
    """Reads of each member's output 0 inside the region (an output counts as 2: kept)."""
    uses = [0] * len(op.body)
    for reads in op.reads:
        for r in reads:
            if not r.is_input:
                uses[r.member] += 1
    for r in op.outputs:
        if not r.is_input:
            uses[r.member] += 2
    return uses


def _sole_producer(op: RegionOp, r: Ref, uses: list[int], taken: set[int],
                   cls: type, fn: str | None = None) -> int | None:
    """The member `r` reads when it is a `cls` (with `fn`, for a BinaryOp) whose output 0
    only this read uses and that no other fold has taken; else None."""
    if r.is_input or r.output != 0 or uses[r.member] != 1 or r.member in taken:
        return None
    m = op.body[r.member]
    if not isinstance(m, cls) or (fn is not None and getattr(m, "fn", None) != fn):
        return None
    return r.member


TANH = ":tanh"
"""Suffix of a linear fold's kind that a tanh absorbed (`linear_kernel(tanh=True)`)."""


def torch_folds(op: RegionOp, cpu: bool = True) -> Folds:
    """Every fold of `op`'s members that torch runs as one call (module docstring): a
    clip's pair and a silu's always, a matmul and its add where the grouping pass tagged
    the add, and on a CPU device (`cpu`) a tanh of such a pair."""
    uses, folds = _uses(op), {}
    taken: set[int] = set()
    for k, (m, reads) in enumerate(zip(op.body, op.reads)):
        if not isinstance(m, ops.BinaryOp):
            continue
        if m.fn == "minimum":
            inner: tuple[type, str | None] = (ops.BinaryOp, "maximum")
            kind = "clamp"
        elif m.fn == "add" and m.tags & OUTER_SUM_TAGS and (
                fold := _outer_sum_fold(op, m, reads, uses, taken)) is not None:
            folds[k] = fold
            taken |= {*fold.absorbed, k}
            continue
        elif m.fn == "add" and m.tags & LINEAR_TAGS:
            inner, kind = (ops.MatMulOp, None), next(iter(m.tags & LINEAR_TAGS))
        elif m.fn == "mul" and TANH_GRAD in m.tags and (
                fold := _tanh_grad_fold(op, reads, uses, taken)) is not None:
            folds[k] = fold
            taken |= {*fold.absorbed, k}
            continue
        elif m.fn == "mul":
            inner, kind = (ops.UnaryOp, "sigmoid"), "silu"
        else:
            continue
        for side in (0, 1):
            j = _sole_producer(op, reads[side], uses, taken, *inner)
            if j is None:
                continue
            if kind == "silu":  # x * sigmoid(y) is a silu only when y is x
                if op.reads[j][0] != reads[1 - side]:
                    continue
                folds[k] = Fold((j,), (reads[1 - side],), kind)
                taken |= {j, k}
                break
            folds[k] = Fold((j,), (*op.reads[j], reads[1 - side]), kind)
            taken |= {j, k}
            break
    from tempo.runtime.region_folds_in_place import in_place_folds  # (it imports Fold)

    folds = _tanh_folds(op, folds, uses) if cpu else folds
    return in_place_folds(op, folds, uses, lambda: not cpu or cpu_tanh_form() == NATIVE)


def _outer_sum_fold(op: RegionOp, m: Any, reads: tuple[Ref, ...], uses: list[int],
                    taken: set[int]) -> Fold | None:
    """The fold of an OUTER_SUM add `a * u + b * v` (columns a, b; rows u, v; the tag's
    digits say which factor of each mul is the column): both muls are absorbed."""
    sides = next(iter(m.tags & OUTER_SUM_TAGS)).removeprefix(OUTER_SUM)
    found = [_sole_producer(op, r, uses, taken, ops.BinaryOp, "mul") for r in reads]
    muls = [j for j in found if j is not None]
    if len(muls) != 2 or muls[0] == muls[1]:
        return None
    cols = [op.reads[j][int(s)] for j, s in zip(muls, sides)]
    rows = [op.reads[j][1 - int(s)] for j, s in zip(muls, sides)]
    return Fold(tuple(muls), (*cols, *rows), OUTER_SUM)


def _tanh_grad_fold(op: RegionOp, reads: tuple[Ref, ...], uses: list[int],
                    taken: set[int]) -> Fold | None:
    """The fold of a TANH_GRAD mul `g * (1 - p*q)` (the grouping pass checked that p and q
    are the same value and the 1 a constant one): the sub and the square are absorbed, and
    q's own member where it is a separate copy of p read by the square alone."""
    for side in (0, 1):
        s = _sole_producer(op, reads[side], uses, taken, ops.BinaryOp, "sub")
        if s is None:
            continue
        sq = _sole_producer(op, op.reads[s][1], uses, taken, ops.BinaryOp, "mul")
        if sq is None:
            continue
        p, q = op.reads[sq]
        twin = q != p and not q.is_input and q.output == 0 and uses[q.member] == 1 \
            and q.member not in taken
        return Fold((q.member, sq, s) if twin else (sq, s), (reads[1 - side], p), TANH_GRAD)
    return None


def _tanh_folds(op: RegionOp, folds: Folds, uses: list[int]) -> Folds:
    """`folds` where each tanh member whose input is a linear fold's value (read by it
    alone) absorbs that fold: `linear_kernel(tanh=True)` runs the three."""
    for k, (m, reads) in enumerate(zip(op.body, op.reads)):
        if not (isinstance(m, ops.UnaryOp) and m.fn == "tanh"):
            continue
        r = reads[0]
        inner = None if r.is_input or r.output != 0 or uses[r.member] != 1 \
            else folds.get(r.member)
        if inner is None or inner.kind not in LINEAR_TAGS:
            continue
        del folds[r.member]
        folds[k] = Fold((*inner.absorbed, r.member), inner.reads, inner.kind + TANH)
    return folds


def fold_kernel(kind: str, compiled: bool = False) -> Kernel:
    """The kernel of a fold of `kind`: a leaf kernel like any member's (the call-overhead
    bench counts and stubs it as one); `compiled`: for a body torch.compile may trace."""
    import torch

    if kind == "clamp":
        return torch.clamp
    if kind == "silu":
        return silu_kernel()
    if kind == TANH_GRAD:
        return torch.ops.aten.tanh_backward.default
    if kind == OUTER_SUM:
        return outer_sum_kernel()
    if kind.startswith(IN_PLACE_KIND):  # `region_folds_in_place`
        return getattr(torch.Tensor, kind.removeprefix(IN_PLACE_KIND))
    base = kind.removesuffix(TANH)
    if base in (LINEAR_ROWS, LINEAR_BATCH):
        return linear_kernel(base == LINEAR_ROWS, compiled, tanh=base != kind)
    raise ValueError(f"no fold kind {kind!r}")


def silu_kernel() -> Kernel:
    """`x * sigmoid(x)` as one `F.silu` call for a floating `x` (an integer `x` keeps the
    two calls: silu takes floats only, and the pair promotes as the unfolded members do)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    silu, sigmoid = F.silu, torch.sigmoid

    def swish(x: Any) -> Any:
        return silu(x) if x.is_floating_point() else x * sigmoid(x)

    return swish


def outer_sum_kernel() -> Kernel:
    """`a * u + b * v` for columns a, b (..., M, 1) and rows u, v (1, N) or (N,) as one matmul
    `[a b] @ [u; v]` (K = 2): one pass writing the (..., M, N) result where the members
    make three (two products and their sum: 180 vs 67 us at (64, 64, 1, 1) x (1, 64), one
    thread). The matmul may fuse the two products' sum (an FMA): equal up to an ulp."""
    import torch

    cat, matmul, stack = torch.cat, torch.matmul, torch.stack

    def outer_sum(a: Any, b: Any, u: Any, v: Any) -> Any:  # rows (1, N) or (N,)
        return matmul(cat((a, b), -1), cat((u, v), 0) if u.dim() == 2 else stack((u, v)))

    return outer_sum


def linear_kernel(rows: bool, compiled: bool = False, tanh: bool = False) -> Kernel:
    """`matmul(x, w) + b`, b a bias row of `x @ w` (the grouping pass checked the shapes
    and dtypes: `grouping_folds`): `addmm` for a matrix `x` (`rows`, one call); for a
    contiguous batch of rows, the members' own matmul then the bias added in place
    (`batch_matmul_add`); a strided batch (e.g. a broadcast observation) is reshaped into
    rows first, as the matmul kernel does. The weight is prepared once per weight
    (`Prepared`), except in a body torch.compile traces (`compiled`: it lays out its own
    operands). `tanh`: the fold's value goes through tanh (`linear_tanh_kernel`)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    if tanh:
        return linear_tanh_kernel(rows, compiled)
    addmm, linear = torch.addmm, F.linear
    if compiled:
        if rows:
            return lambda x, w, b: addmm(b, x, w)  # (the fold's reads are x, w, b)
        return lambda x, w, b: linear(x, w.mT, b)
    memo = Prepared(lambda wc: wc)
    if rows:
        def addmm_rows(x: Any, w: Any, b: Any) -> Any:
            ref = memo.ref  # the hit path inlined: a Python call costs ~1 us here
            if ref is not None and ref() is w and w._version == memo.version and memo.wp \
                    is not None:
                return addmm(b, x, memo.wp)
            return addmm(b, x, memo(w))

        return addmm_rows
    return batch_matmul_add(memo, tanh=False)


def batch_matmul_add(memo: Prepared, tanh: bool) -> Kernel:
    """`x @ w + b` (then tanh in place, `tanh`) for a batch of rows `x` (..., M, K): torch's
    matmul (it folds a contiguous batch into the rows of one mm in C++), the bias added in
    place over its fresh result: the members' own calls, so the same values bit for bit,
    and cheaper than F.linear, whose C++ flattens, transposes the weight and views the
    result around its addmm (at (64, 1, 64) @ (64, 64) + tanh, one thread: 10.3 vs 10.8 us
    per call; 9.5 vs 10.2 at K = 48; 354 vs 365 at 4096 rows; PPO's rollout makes three
    per env step). A strided batch is copied into rows for one addmm (as the matmul
    kernel does: torch would run a bmm of one-row products)."""
    import torch

    addmm, matmul = torch.addmm, torch.matmul

    def batch_linear(x: Any, w: Any, b: Any) -> Any:
        ref = memo.ref  # the hit path inlined (linear_kernel's)
        if ref is not None and ref() is w and w._version == memo.version and memo.wp \
                is not None:
            wp = memo.wp
        else:
            wp = memo(w)
        if x.is_contiguous():
            y = matmul(x, wp).add_(b)
        else:
            y = addmm(b, x.reshape(-1, x.shape[-1]), wp).view(*x.shape[:-1], w.shape[1])
        return y.tanh_() if tanh else y

    return batch_linear


def linear_tanh_kernel(rows: bool, compiled: bool = False, form: str | None = None) -> Kernel:
    """`tanh(matmul(x, w) + b)` in the CPU tanh's `form` (None: the one measured faster on
    this machine, `torch_tanh.cpu_tanh_form`): `addmm` then `tanh_` in place (native), or
    `2*sigmoid(2(xw + b)) - 1` as addmm scaled by 2, sigmoid in place, one add (module
    docstring); a batch of rows (`rows` False) is viewed as rows (a strided one is copied
    into rows, as the matmul kernel does)."""
    import torch

    from tempo.runtime.torch_tanh import NATIVE, cpu_tanh_form, tanh_in_place, tanh_of_doubled

    addmm = torch.addmm
    native = (form or cpu_tanh_form()) == NATIVE
    if native and not rows and not compiled:
        return batch_matmul_add(Prepared(lambda wc: wc), tanh=True)
    finish = tanh_in_place if native else tanh_of_doubled()
    memo = Prepared(lambda wc: wc)

    def linear_tanh(x: Any, w: Any, b: Any) -> Any:
        if compiled:
            wp = w
        else:
            ref = memo.ref  # the hit path inlined (linear_kernel's)
            if ref is not None and ref() is w and w._version == memo.version and memo.wp \
                    is not None:
                wp = memo.wp
            else:
                wp = memo(w)
        x2 = x if rows else x.reshape(-1, x.shape[-1])
        s = addmm(b, x2, wp) if native else addmm(b, x2, wp, beta=2.0, alpha=2.0)
        return finish(s if rows else s.view(*x.shape[:-1], w.shape[1]))

    return linear_tanh


CONTIGUOUS_ONCE_BYTES = 1 << 20
"""The largest matrix `ContiguousOnce` copies. Measured (one thread, MKL, 2026-11-23): a
transposed (N, K) weight costs 12-14 us more per addmm than its contiguous (K, N) copy at
(64, 48..64) @ (.., 64), 80 us at 4096 rows, 200 us at (8 or 64, 768) @ (768, 768); the
copy costs about one such call (22 us for 64x64, 0.7 ms for 768x768). The cap bounds the
bytes a copy keeps outside the memory accountant's view (one matrix per kernel)."""


class Prepared:
    """The prepared form `prepare(contiguous w)` of a matrix operand `w`: a non-contiguous
    `w` (a weight's transposed view, `x @ W.T`) is made contiguous once for as long as the
    same tensor comes back unchanged (same object, same `_version`), so a loop-invariant
    weight read inside a loop is copied at its second call and reused by the rest,
    instead of costing the transposed BLAS path at every call. A tensor seen once is used
    as it is (a copy that cannot pay is not made), one larger than CONTIGUOUS_ONCE_BYTES
    is never copied, nor an inference tensor (it has no version), and the tensor itself
    is held only weakly. Callers inline the hit
    test (`ref() is w`, same version, `wp` set) and call this on a miss."""

    __slots__ = ("prepare", "ref", "version", "wp")

    def __init__(self, prepare: Callable[[Any], Any]) -> None:
        self.prepare = prepare
        self.ref: Any = None
        self.version = -1
        self.wp: Any = None

    def __call__(self, w: Any) -> Any:
        ref = self.ref
        if ref is not None and ref() is w and w._version == self.version:  # its second call
            small = w.numel() * w.element_size() <= CONTIGUOUS_ONCE_BYTES
            self.wp = self.prepare(w.contiguous() if small else w)
            return self.wp
        if w.is_inference():  # (a run under torch.inference_mode: no version to check)
            self.ref, self.wp = None, None
            return self.prepare(w)
        self.ref, self.version = weakref.ref(w), w._version
        self.wp = self.prepare(w) if w.is_contiguous() else None
        return self.prepare(w) if self.wp is None else self.wp
