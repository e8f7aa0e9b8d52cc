"""Ops the statify pass (`tempo.compiler.passes.statify`, ARCHITECTURE §5.4) makes: a read
whose length depends on a loop variable (`k[0:t+1]`, a window near the edge) is consumed
as static blocks of `block` points instead of one tensor of a new shape at every step.

The kernels receive each block-read input as a list of `(block, start, stop)`: a static
`(block, *point_shape)` array and the range of its rows that belong to the read; the
rows outside are padding (whatever the store holds there) that the kernel masks with the
reduction's neutral element. Shapes never depend on the step, so a backend that compiles
per shape (jax) compiles each kernel once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tempo.core.dtype import dtypes
from tempo.core.errors import DTypeError, ShapeError
from tempo.core.op_base import DTypes, Op, Shapes
from tempo.core.shape import Shape


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class TiledAttentionOp(Op):
    """`softmax(scale * (q @ K')) @ V'` over a key range read in blocks (inputs: `q`, the
    key read `K[lo:hi]` and the value read `V[lo:hi]`, range leading), accumulated across
    blocks with an online softmax (running max and running sum), exact to float rounding.

    Per block of U keys: `K' = permute(K_blk, perm_k)` puts the keys last, the scores
    `q @ K'` are laid out as `score_shape + (U,)` for the softmax over the keys, and the
    probabilities as `prob_shape + (U,)` for `p @ permute(V_blk, perm_v)` (the reshapes the
    program made between the two matmuls, with its key length replaced by U)."""

    perm_k: tuple[int, ...]
    perm_v: tuple[int, ...]
    score_shape: tuple[int, ...]
    prob_shape: tuple[int, ...]
    scale: float
    out_shape: tuple[int, ...]
    block: int
    name: ClassVar[str] = "tiled_attention"
    arity: ClassVar[int] = 3
    block_inputs: ClassVar[tuple[int, ...]] = (1, 2)  # read as lists of static blocks

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        if not all(dtypes.is_float(d) for d in dts) or len(set(dts)) != 1:
            raise DTypeError(f"{self.describe()} needs q, keys and values of one float dtype, "
                             f"got {[str(d) for d in dts]}")
        k, v = list(shapes[1]), list(shapes[2])
        if sorted(self.perm_k) != list(range(len(k))) or sorted(self.perm_v) != list(
                range(len(v))) or k[0] != v[0]:
            raise ShapeError(f"{self.describe()}: keys {shapes[1]} and values {shapes[2]} do "
                             f"not fit permutations {self.perm_k}, {self.perm_v}")
        return [Shape.from_(self.out_shape)], [dts[0]]

    def describe(self) -> str:
        return f"tiled_attention(U={self.block})"
