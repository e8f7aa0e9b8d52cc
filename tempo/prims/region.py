"""The fused region's rules (`tempo.core.ops_region.RegionOp`, built by the grouping pass).

It is formed after autodiff and vectorisation, so it has no gradient or batching rule; its
cost is its members' arithmetic with the traffic of one fused kernel (inputs read once,
outputs written once: intermediates never reach memory). Its kernels are the body as one
function (`tempo.runtime.regions`), compiled where the pass asked: `jax.jit` on jax (a
body jax cannot trace — a kernel that needs concrete values — runs eagerly instead),
`torch.compile` on torch once the region's eager calls have paid for it (TUNING.payback_s in
`tempo.core.configs`, used by `tempo.runtime.regions`), never on numpy.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, Arg, Cost, cost, traffic
from tempo.core.ops_region import RegionOp
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel


def region_cost(op: RegionOp, ins: Sequence[Arg], outs: Sequence[Arg]) -> Cost:
    from tempo.core.shape import Shape

    vals: list[list[tuple[Any, Any]]] = []
    in_dts = op.input_types
    flops = 0
    for m, reads in zip(op.body, op.reads):
        got = [(Shape.from_(ins[r.output].shape), in_dts[r.output]) if r.is_input
               else vals[r.member][r.output] for r in reads]
        shapes, dts = [s for s, _ in got], [d for _, d in got]
        flops += cost(m, shapes, dts).flops
        o_shapes, o_dts = m.infer(shapes, dts)
        vals.append(list(zip(o_shapes, o_dts)))
    return Cost(flops, traffic(ins, outs))


def _jit(fn: Kernel) -> Kernel:
    """jax.jit of a region body, returning `(outputs, flags)`: the flags of its index
    members (`jax_index_checks`; None without any)."""
    import jax

    from tempo.runtime.backends.jax_index_checks import flagged

    jitted = jax.jit(flagged(fn))
    state = {"traced": True}

    def run(*args: Any) -> Any:
        if state["traced"]:
            try:
                return jitted(*args)
            except jax.errors.JAXTypeError:  # a member needs concrete values: stay eager
                state["traced"] = False
        return fn(*args), None

    return run


def _torch_compile(fn: Kernel, what: str = "a fused region") -> Kernel:
    """`torch.compile` of a region body. If dynamo or inductor fail on it (a graph this
    torch cannot compile: inductor's C++ codegen has failed on some), the region runs
    eagerly from then on and a warning says why; an error of the computation itself is
    raised again by the eager call, so it still names the failing member."""
    import torch
    from torch._dynamo.exc import TorchDynamoException
    from torch._inductor.exc import InductorError

    compiled = torch.compile(fn, dynamic=False)
    state = {"compiled": True}

    def run(*args: Any) -> Any:
        if state["compiled"]:
            try:
                return compiled(*args)
            except (TorchDynamoException, InductorError) as exc:
                state["compiled"] = False
                why = next((line for line in str(exc).splitlines() if line.strip()),
                           type(exc).__name__)
                warnings.warn(f"torch.compile failed on {what}; it runs eagerly instead "
                              f"({type(exc).__name__}: {why[:300]})", RuntimeWarning,
                              stacklevel=2)
        return fn(*args)

    return run


def _torch(op: RegionOp, be: Any) -> Kernel:
    from tempo.core import naming
    from tempo.runtime.regions import after_payback, region_kernel

    kinds = ", ".join(dict.fromkeys(m.describe() for m in op.body))
    what = f"the fused region of {len(op.body)} ops ({kinds}) made by {naming.at_site(op.site)}"
    return region_kernel(op, be, lambda fn: after_payback(fn, lambda f: _torch_compile(f, what)))


def _jax(op: RegionOp, be: Any) -> Kernel:
    """The region's body (shared with equal regions) whose index flags this region names
    by its own members (`jax_index_checks`): a compiled body returns them, an eager one's
    kernels defer them as they run."""
    from tempo.runtime.backends import jax_index_checks as ixc
    from tempo.runtime.regions import region_kernel

    fn = region_kernel(op, be, _jit)
    own = [m for m in op.body if m.name in ixc.INDEX_OPS]
    if op.compiled:
        def run(*args: Any) -> Any:
            out, bad = fn(*args)
            ixc.defer(own, bad)
            return out

        return run
    if not own:
        return fn

    def eager(*args: Any) -> Any:
        mark = ixc.pending()
        out = fn(*args)
        ixc.renamed(mark, op.body)
        return out

    return eager


def _numpy(op: RegionOp, be: Any) -> Kernel:
    from tempo.runtime.regions import region_kernel

    return region_kernel(op, be, None)


primitive(RegionOp, grad=NOT_DIFFERENTIABLE, batching=NO_BATCHING, cost=region_cost,
          torch=_torch, jax=_jax, numpy=_numpy)
