"""A fused region (ARCHITECTURE §5.6): connected ops over one domain that read each other at
the same point, run as one op. The grouping pass (`tempo.compiler.passes.grouping`) builds
it after autodiff and vectorisation; the backend compiles its body as one function
(`tempo.runtime.regions`: `jax.jit` on jax, one Python function of eager calls — or
`torch.compile` for large regions — on torch).

Values made and consumed inside the region never reach a store, a free or the schedule:
the region reads its inputs once per point and writes only the values read outside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from tempo.core.dtype import DataType
from tempo.core.op_base import DTypes, Op, Shapes
from tempo.core.shape import Shape

REGION_INPUT = -1
"""`Ref.member` of a value that is one of the region's inputs (`Ref.output` is its index)."""

LINEAR_ROWS = "fold:linear_rows"
"""Tag of a region member `matmul(x, w) + b` add whose static shapes the grouping pass
checked (`tempo.compiler.passes.grouping_folds`): `w` a matrix (K, N), `b` a bias row (N,)
or a matrix (M, N), and `x` a matrix (M, K), all of one float dtype; a backend may run the
pair as one call (torch's addmm: `tempo.runtime.region_folds`)."""
LINEAR_BATCH = "fold:linear_batch"
"""As LINEAR_ROWS with `x` a batch of rows (..., M, K) and `b` a bias row (torch's
F.linear)."""
TANH_GRAD = "fold:tanh_grad"
"""Tag of a region member `g * (1 - y*y)`'s outer mul (tanh's gradient rule, `y` its
value, both multiplicands reading the same value) whose shapes the grouping pass checked
equal (`g`, `y` of one static shape and float dtype, the 1 a scalar constant): torch runs
the three members as one `tanh_backward(g, y)` (`tempo.runtime.region_folds`)."""
OUTER_SUM = "fold:outer_sum:"
"""Prefix of the tag of a region member `a * u + b * v` add (the two muls members of the
region) where in each mul one factor is a column `(..., M, 1)` and the other a row
`(1, N)` or `(N,)` of one static shape (the gradient into a trunk of two scalar heads: PPO's
`g_v * w_v + g_pi * w_pi`), all of one float dtype. The tag ends with the side (0/1) of
the column in each mul, in the add's input order (`outer_sum_tag`): torch runs the three
members as one (..., M, 2) @ (2, N) matmul (`tempo.runtime.region_folds`)."""
OUTER_SUM_TAGS = frozenset(f"{OUTER_SUM}{i}{j}" for i in (0, 1) for j in (0, 1))
IN_PLACE = "fold:in_place:"
"""Prefix of the tag of an elementwise region member (a unary, or a binary of
`IN_PLACE_BINARY`) whose value has the static shape and dtype of its operand(s) named by
the tag's end (`in_place_tag`: "0", "1" or "01"): where that operand is a fresh value of
the region that this member alone reads, torch may write the result over it (`x.mul_(c)`
for `x * c`: the same values, one allocation and free fewer; `tempo.runtime.region_folds`)."""
IN_PLACE_TAGS = frozenset(f"{IN_PLACE}{s}" for s in ("0", "1", "01"))
IN_PLACE_BINARY = frozenset({"add", "sub", "mul", "div", "maximum", "minimum"})
"""Binary fns an IN_PLACE tag may sit on (maximum/minimum: for a clip's `clamp_`)."""
FOLD_TAGS = frozenset({LINEAR_ROWS, LINEAR_BATCH, TANH_GRAD}) | OUTER_SUM_TAGS | IN_PLACE_TAGS
"""Tags that change how a region body is lowered: part of its structure (cache) key."""


@dataclass(frozen=True)
class Ref:
    """Where a member reads one input: output `output` of member `member` (a position in
    `RegionOp.body`), or region input `output` when `member` is REGION_INPUT."""

    member: int
    output: int

    @property
    def is_input(self) -> bool:
        return self.member == REGION_INPUT


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class RegionOp(Op):
    """Runs `body` (ops with every bound substituted, in dependence order) at each point of
    its domain. Member k reads `reads[k]`; the region returns the member outputs listed in
    `outputs`, in order (its tensors k = 0, 1, ...)."""

    body: tuple[Op, ...]
    reads: tuple[tuple[Ref, ...], ...]
    outputs: tuple[Ref, ...]
    compiled: bool = False
    """Compile the body with the backend's compiler (jax.jit, torch.compile); else one
    Python function calling the members' kernels (intermediates stay in its locals)."""
    generated: bool = True
    """The body is generated straight-line Python (else a loop walks `reads`)."""
    elements: int = 0
    """Elements of the largest value the region reads or makes per point (0: unknown)."""
    input_types: tuple[DataType, ...] = ()
    """The inputs' dtypes (its cost rule sees only shapes and element sizes)."""
    scratch_bytes: int = 0
    """The most bytes of member values (intermediates and outputs) alive at once during a
    call, from their static shapes and last uses in `body`: a tracked run charges it
    around the call, so the memory accountant stays an upper bound of what the region
    holds although its intermediates never reach a store."""
    name: ClassVar[str] = "region"
    variadic: ClassVar[bool] = True

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        """The members' rules applied in order (so validation checks the whole body)."""
        vals: list[tuple[Shapes, DTypes]] = []

        def get(r: Ref) -> tuple[Shape, DataType]:
            if r.is_input:
                return shapes[r.output], dts[r.output]
            return vals[r.member][0][r.output], vals[r.member][1][r.output]

        for op, reads in zip(self.body, self.reads):
            got = [get(r) for r in reads]
            vals.append(op.infer([s for s, _ in got], [d for _, d in got]))
        outs = [get(r) for r in self.outputs]
        return [s for s, _ in outs], [d for _, d in outs]

    def describe(self) -> str:
        names = [op.describe() for op in self.body]
        more = f" +{len(names) - 6}" if len(names) > 6 else ""
        return "region(" + " ".join(names[:6]) + more + ")"


def flat_ops(op_list: Iterable[Op]) -> list[Op]:
    """`op_list` with every region replaced by its members (they run at the region's
    points): what ran, for tests and reports that look for an op kind."""
    return [m for op in op_list for m in (op.body if isinstance(op, RegionOp) else (op,))]
