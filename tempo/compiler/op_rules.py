"""The compiler's rules of each primitive: its batching (vectorisation) rule and its cost.

Registered by the primitive modules (`tempo.prims`) next to the op's other rules; passes
look them up here (the compiler never imports `tempo.prims`, which sits above it).

- **Batching**: how an op runs over a new leading batch dim (ARCHITECTURE §5.3). The rule's
  signature is the vectorisation pass's business; an op that cannot be batched is
  registered with `NO_BATCHING` ("stays a loop"), so a missing rule is never silent.
- **Cost**: a FLOP and memory-traffic estimate from static shapes (`cost(op, shapes, dts)`;
  `op_cost(sdg, op_id, values)` for an op of a graph), for fusion and placement decisions.
  Traffic is what an unfused kernel reads and writes; views (reshape, permute, expand)
  move nothing. Dtypes are an argument because bytes depend on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tempo.core.dtype import DataType
from tempo.core.op_base import Op
from tempo.core.sdg import SDG
from tempo.core.shape import Shape


class NoBatching:
    """The marker of an op with no batching rule: over a vectorised dim it stays a loop."""

    def __repr__(self) -> str:
        return "NO_BATCHING"


NO_BATCHING = NoBatching()
BatchRule = Callable[..., Any]

_BATCHING: dict[type[Op], BatchRule | NoBatching] = {}


def register_batching(op_cls: type[Op], rule: BatchRule | NoBatching) -> None:
    if op_cls in _BATCHING:
        raise ValueError(f"{op_cls.__name__} already has a batching rule")
    _BATCHING[op_cls] = rule


def batching_rule(op_cls: type[Op]) -> BatchRule | None:
    """`op_cls`'s batching rule; None if it has none (`NO_BATCHING`) or is unregistered."""
    rule = _BATCHING.get(op_cls)
    return None if rule is None or isinstance(rule, NoBatching) else rule


def has_batching_entry(op_cls: type[Op]) -> bool:
    """Whether `op_cls` has a batching rule or the explicit `NO_BATCHING` marker."""
    return op_cls in _BATCHING


# ---------------------------------------------------------------- cost
@dataclass(frozen=True)
class Cost:
    """Arithmetic operations and bytes moved by one call of an op's kernel."""

    flops: int
    bytes: int

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes)


@dataclass(frozen=True)
class Arg:
    """One input or output of a call: its static shape and element size."""

    shape: tuple[int, ...]
    itemsize: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


CostRule = Callable[[Any, Sequence[Arg], Sequence[Arg]], Cost]
"""(op, inputs, outputs) → the cost of one call."""

_COST: dict[type[Op], CostRule] = {}


def register_cost(op_cls: type[Op], rule: CostRule) -> None:
    if op_cls in _COST:
        raise ValueError(f"{op_cls.__name__} already has a cost rule")
    _COST[op_cls] = rule


def has_cost_rule(op_cls: type[Op]) -> bool:
    return op_cls in _COST


def cost(op: Op, shapes: Sequence[Shape | Sequence[int]], dts: Sequence[DataType]) -> Cost:
    """The cost of one call of `op` on inputs of static `shapes` and dtypes `dts` (the
    outputs come from the op's shape rule). Symbolic dims must be resolved first."""
    rule = _COST.get(type(op))
    if rule is None:
        raise KeyError(f"no cost rule for {type(op).__name__} (is tempo.prims loaded?)")
    in_shapes = [Shape.from_(tuple(s)) for s in shapes]
    out_shapes, out_dts = op.infer(in_shapes, list(dts))
    ins = [Arg(_static(s, op), dt.repr_bytes) for s, dt in zip(in_shapes, dts)]
    outs = [Arg(_static(s, op), dt.repr_bytes) for s, dt in zip(out_shapes, out_dts)]
    return rule(op, ins, outs)


def op_cost(sdg: SDG, op_id: int, values: Mapping[Any, int]) -> Cost:
    """The cost of one call of the SDG's op `op_id`, its read shapes evaluated at `values`
    (bounds, and loop variables for shapes that grow with them, e.g. `x[0:t+1]`)."""
    edges = sorted(sdg.in_edges[op_id], key=lambda e: e.sink_in)
    shapes = [sdg.read_shape(e).evaluate(values) for e in edges]
    return cost(sdg.ops[op_id], shapes, [sdg.tensors[e.src].dtype for e in edges])


def _static(shape: Shape, op: Op) -> tuple[int, ...]:
    dims = tuple(shape)
    if not all(isinstance(d, int) for d in dims):
        raise ValueError(f"cost of {op!r} needs static shapes, got {shape}")
    return tuple(int(d) for d in dims)


# ---------------------------------------------------------------- rules shared by families
def traffic(ins: Sequence[Arg], outs: Sequence[Arg]) -> int:
    """Bytes an unfused kernel reads and writes."""
    return sum(a.nbytes for a in ins) + sum(a.nbytes for a in outs)


def per_output_element(flops: int) -> CostRule:
    """`flops` per output element, reading every input once (elementwise, casts, copies)."""
    return lambda op, ins, outs: Cost(flops * sum(a.numel for a in outs), traffic(ins, outs))


def per_input_element(flops: int) -> CostRule:
    """`flops` per element of the first input (reductions, scans)."""
    return lambda op, ins, outs: Cost(flops * ins[0].numel, traffic(ins, outs))


def copies(op: Any, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """Data movement only (pad, cat, gather, UDF calls): reads the inputs, writes the outputs."""
    return Cost(0, traffic(ins, outs))


def free(op: Any, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """Views and markers: no arithmetic and no bytes moved."""
    return Cost(0, 0)


def writes_outputs(op: Any, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    """Sources: no arithmetic; the outputs are written once."""
    return Cost(0, sum(a.nbytes for a in outs))
