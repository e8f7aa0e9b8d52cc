"""Ops the statify pass (`tempo.compiler.passes.statify`, ARCHITECTURE §5.4) makes: a read
whose length depends on a loop variable (`k[0:t+1]`, a window near the edge) is consumed
as static blocks of `block` points instead of one tensor of a new shape at every step.

The kernels receive each block-read input as a list of `(block, start, stop)`: a static
`(block, *point_shape)` array and the range of its rows that belong to the read; the
rows outside are padding (whatever the store holds there) that the kernel masks with the
reduction's neutral element. Shapes never depend on the step, so a backend that compiles
per shape (jax) compiles each kernel once. On torch a store may hand over a longer static
array in one piece (a ring's run, the buffer of a joined block store: runtime/stores_ring.py,
stores_joined.py), since torch's kernels take views of the valid rows, whatever the length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tempo.core.dtype import DataType, dtypes
from tempo.core.errors import DTypeError, ShapeError
from tempo.core.op_base import DTypes, Op, Shapes
from tempo.core.ops_region import Ref
from tempo.core.shape import Shape


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class TiledAttentionOp(Op):
    """`softmax(scale * (q @ K')) @ V'` over a key range read in blocks (inputs: `q`, the
    key read `K[lo:hi]` and the value read `V[lo:hi]`, range leading), accumulated across
    blocks with an online softmax (running max and running sum), exact to float rounding.

    Per block of U keys: `K' = permute(K_blk, perm_k)` puts the keys last, the scores
    `q @ K'` are laid out as `score_shape + (U,)` for the softmax over the keys, and the
    probabilities as `prob_shape + (U,)` for `p @ permute(V_blk, perm_v)` (the reshapes the
    program made between the two matmuls, with its key length replaced by U).

    With `mask` a fourth input, a read of the same range: per block `permute(M_blk,
    perm_m)` reshaped to `mask_shape + (U,)` meets the scores laid out as `mask_at + (U,)`:
    "add" adds it (times `mask_scale`, the scale applied after it), "keep" attends where it
    is True, "drop" where it is False."""

    perm_k: tuple[int, ...]
    perm_v: tuple[int, ...]
    score_shape: tuple[int, ...]
    prob_shape: tuple[int, ...]
    scale: float
    out_shape: tuple[int, ...]
    block: int
    mask: str = ""
    perm_m: tuple[int, ...] = ()
    mask_shape: tuple[int, ...] = ()
    mask_at: tuple[int, ...] = ()
    mask_scale: float = 1.0
    name: ClassVar[str] = "tiled_attention"
    variadic: ClassVar[bool] = True

    @property
    def block_inputs(self) -> tuple[int, ...]:
        """The inputs read as lists of static blocks."""
        return (1, 2, 3) if self.mask else (1, 2)

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        if self.mask not in ("", "add", "keep", "drop") or len(shapes) != 3 + bool(self.mask):
            raise ShapeError(f"{self.describe()} takes 3 inputs and a mask, got {len(shapes)} "
                             f"inputs and mask kind {self.mask!r}")
        if self.mask:
            shapes, dts = shapes[:3], dts[:3]
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
        return f"tiled_attention(U={self.block}{', masked' if self.mask else ''})"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class TiledReduceOp(Op):
    """A sum or a max over the read's range, read in blocks: inputs `0..n_blocked-1` are
    reads of one range (range leading), the rest static operands at the op's point. Per
    block, `body` (elementwise members, index selects off the range dim, casts; wired as a
    region's, `Ref.output` of a region input naming this op's input) maps the blocks to
    the value `result`, whose dim 0 is the range; the padding rows are set to the
    reduction's neutral element (0 for a sum, the dtype's minimum for a max) and the block
    is reduced and accumulated across blocks, so the result equals the reduction of the
    whole read.

    `kind` "sum" reduces `dims` (0 among them) with `keepdim`; "max" reduces dim 0 (or,
    `flat`, the value flattened) and also returns the index of the first maximum within
    the read (torch's order), as `MaxOp` does."""

    kind: str
    body: tuple[Op, ...]
    reads: tuple[tuple[Ref, ...], ...]
    result: Ref
    n_blocked: int
    dims: tuple[int, ...]
    keepdim: bool
    flat: bool
    out_shape: tuple[int, ...]
    out_dtype: DataType
    block: int
    name: ClassVar[str] = "tiled_reduce"
    variadic: ClassVar[bool] = True

    @property
    def block_inputs(self) -> tuple[int, ...]:
        return tuple(range(self.n_blocked))

    @property
    def num_outputs(self) -> int:
        return 2 if self.kind == "max" else 1

    def infer(self, shapes: Shapes, dts: DTypes) -> tuple[Shapes, DTypes]:
        if self.kind not in ("sum", "max") or not 0 < self.n_blocked <= len(shapes):
            raise ShapeError(f"{self.describe()}: a sum or max over 1..{len(shapes)} block "
                             f"inputs, got {self.kind!r} over {self.n_blocked}")
        out = Shape.from_(self.out_shape)
        if self.kind == "max":
            return [out, out], [self.out_dtype, dtypes.int64]
        return [out], [self.out_dtype]

    def describe(self) -> str:
        return f"tiled_{self.kind}(U={self.block})"
