"""Elementwise members of a generated torch region that write their value over an operand
(`x.mul_(c)` for `x * c`, `x.clamp_(lo, hi)` for a clip): where the operand is a value the
region itself allocated and that this member alone reads, nothing else can see it
overwritten, and the in-place call computes the same values (the same kernel, in the same
dtype) without allocating and later freeing a result. A PPO env step clips, scales and
adds a few (64,)-element vectors: each call is dispatch-bound (~1.2 vs ~1.8 us in place,
one thread), and a learner region's long elementwise chains do the same over larger
tensors.

What the lowering cannot see, the grouping pass tagged (`ops_region.IN_PLACE`: the
operand's static shape and dtype are the result's, so no broadcast or promotion writes
elsewhere); what the tag cannot see, this module checks on the region's wiring: the
operand is member output 0, read once (not a region output), made by a member whose
kernel returns a new tensor (`_allocates`: elementwise ops, matmuls, every fold, and
in-place members over such values), never by a view (reshape, select, slice, permute,
expand) or a cast (`x.to(dtype)` returns `x` itself when the dtype is already `dtype`).
"""

from __future__ import annotations

from collections.abc import Callable

from tempo.core import ops
from tempo.core.ops_region import IN_PLACE, IN_PLACE_TAGS, Ref, RegionOp
from tempo.runtime.region_folds import IN_PLACE_KIND, Fold, Folds

UNARY_METHODS = {
    "neg": "neg_", "exp": "exp_", "ln": "log_", "sqrt": "sqrt_", "sin": "sin_",
    "cos": "cos_", "tan": "tan_", "tanh": "tanh_", "sigmoid": "sigmoid_", "erf": "erf_",
    "abs": "abs_", "relu": "relu_", "floor": "floor_", "ceil": "ceil_", "round": "round_",
    "trunc": "trunc_", "sign": "sign_", "not": "logical_not_",
}
"""Unary fns (`elementwise._torch_unary`) -> the in-place method of the same function."""

BINARY_METHODS = {"add": ("add_", True), "mul": ("mul_", True), "sub": ("sub_", False),
                  "div": ("true_divide_", False)}
"""Binary fns -> (in-place method, commutative: may the second operand take the value)."""


def _sides(m: ops.Op) -> str:
    """The operand sides the member's IN_PLACE tag allows ("" without one)."""
    tag = next(iter(m.tags & IN_PLACE_TAGS), None)
    return "" if tag is None else tag.removeprefix(IN_PLACE)


def _allocates(m: ops.Op) -> bool:
    """The member's own kernel returns a new tensor (torch's elementwise functions and
    matmul always do; the tanh kernel's sigmoid form too)."""
    return isinstance(m, (ops.UnaryOp, ops.BinaryOp, ops.MatMulOp))


def in_place_folds(op: RegionOp, folds: Folds, uses: list[int],
                   native_tanh: Callable[[], bool]) -> Folds:
    """`folds` plus an in-place fold (kind IN_PLACE_KIND + method) for each member that may
    write over its operand (module docstring), in body order (an in-place member's value
    is fresh in turn: a chain reuses one buffer). A clamp fold becomes `clamp_` when its
    maximum's tag allows side 0 and its minimum's the maximum's side. `native_tanh()`:
    the unfolded tanh member runs torch.tanh (else its tanh_ would be another function)."""
    gone = {j for f in folds.values() for j in f.absorbed}
    fresh: set[int] = set()

    def owned(r: Ref) -> bool:
        return not r.is_input and r.output == 0 and uses[r.member] == 1 and r.member in fresh

    for k, (m, reads) in enumerate(zip(op.body, op.reads)):
        if k in gone:
            continue
        fold = folds.get(k)
        if fold is not None:
            fresh.add(k)  # every fold kernel returns a new tensor
            if fold.kind == "clamp" and owned(fold.reads[0]) and _clamp_in_place(op, k, fold):
                folds[k] = Fold(fold.absorbed, fold.reads, IN_PLACE_KIND + "clamp_")
            continue
        if not _allocates(m):
            continue
        fresh.add(k)
        sides = _sides(m)
        if isinstance(m, ops.UnaryOp):
            method = UNARY_METHODS.get(m.fn)
            if (method is not None and "0" in sides and owned(reads[0])
                    and (m.fn != "tanh" or native_tanh())):
                folds[k] = Fold((), reads, IN_PLACE_KIND + method)
        elif isinstance(m, ops.BinaryOp) and m.fn in BINARY_METHODS:
            method, commutes = BINARY_METHODS[m.fn]
            for s in (0, 1) if commutes else (0,):
                if str(s) in sides and owned(reads[s]):
                    folds[k] = Fold((), (reads[s], reads[1 - s]), IN_PLACE_KIND + method)
                    break
    return folds


def _clamp_in_place(op: RegionOp, k: int, fold: Fold) -> bool:
    """The clamp fold at minimum `k` (absorbing one maximum) may write over the maximum's
    first operand: the maximum's value has that operand's shape and dtype, and the
    minimum's has the maximum's."""
    (j,) = fold.absorbed
    side = next((s for s, r in enumerate(op.reads[k]) if r == Ref(j, 0)), None)
    return side is not None and "0" in _sides(op.body[j]) and str(side) in _sides(op.body[k])
