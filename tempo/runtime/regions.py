"""Running fused regions (`tempo.core.ops_region.RegionOp`): the body becomes one Python
function calling the members' kernels in order, its intermediates in locals (no store,
no free, one call in the schedule); the backends compile it where the grouping pass asked
(`compiled`): `jax.jit` on jax, `torch.compile` on torch (the pass chooses by size).

Regions are cached by structure: two regions with the same members (parameters, wiring)
on the same backend and device share one function, so `jax.jit` / `torch.compile`
compile it once per distinct input shape, however many regions or executors use it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from tempo.core.configs import TUNING
from tempo.core.dtype import dtypes
from tempo.core.op_base import Op
from tempo.core.ops_region import FOLD_TAGS, Ref, RegionOp
from tempo.runtime.backends.common import plain_key
from tempo.runtime.kernel_registry import Kernel
from tempo.runtime.region_folds import Folds, fold_kernel, torch_folds
from tempo.runtime.torch_tanh import cpu_tanh_form

Compiler = Callable[[Kernel], Kernel]

_CACHE: dict[tuple, tuple[Kernel, str]] = {}  # structure -> (body, its source file name)
_NOT_PARAMS = frozenset({"op_id", "domain", "site", "tags"})


def region_kernel(op: RegionOp, be: Any, compiler: Compiler | None) -> Kernel:
    """The region's callable on backend `be` (its body shared with equal regions);
    `compiler` compiles the body when the region asks for it."""
    cpu = getattr(be, "on_cpu", True)  # (False on "fake-gpu": the GPU paths)
    key = (be.name, str(getattr(be, "device", "")), cpu, structure_key(op), op.compiled,
           op.generated, dtypes.default_float.name, dtypes.default_int.name,
           _tanh_form(op, be.name, cpu))
    hit = _CACHE.get(key)
    if hit is None:
        name = f"{REGION_FILE}{len(_CACHE)}>"
        folds = torch_folds(op, cpu) if be.name == "torch" and op.generated else {}
        kernels = [fold_kernel(folds[k].kind, op.compiled) if k in folds else be.kernel(m)
                   for k, m in enumerate(op.body)]
        fn = body_function(op, kernels, name, folds) if op.generated \
            else interpreted(op, kernels)
        if op.compiled and compiler is not None:
            fn = compiler(fn)
        hit = _CACHE[key] = (fn, name)
    return hit[0]  # no wrapper: the executor names a failing member (`failing_member`)


def _tanh_form(op: RegionOp, backend: str, cpu: bool) -> str:
    """The form torch lowers a CPU tanh in (`torch_tanh.cpu_tanh_form`, cached; the
    environment or a test can change it within a process): a body built for one form must
    not serve the other. '' when the form plays no part (no tanh member: the first such
    region does not pay the form's measurement)."""
    if backend != "torch" or not cpu or not any(getattr(m, "fn", None) == "tanh"
                                                for m in op.body):
        return ""
    return cpu_tanh_form()


def after_payback(fn: Kernel, compiler: Compiler, payback_s: float | None = None,
                  sample: int = 8) -> Kernel:
    """`fn`, run eagerly until it has spent `payback_s` (TUNING.payback_s, whose docstring
    says why) seconds, then compiled by `compiler`: short runs never pay the compile, long
    runs get it (regions sharing a body share one such function).
    One call in `sample` is timed and stands for all of them (two clock reads cost more
    than a small region's kernels on a loaded machine)."""
    state: list[Any] = [None, 0, 0.0]  # compiled function, calls, estimated seconds spent
    clock = time.perf_counter

    def run(*args: Any) -> Any:
        done = state[0]
        if done is not None:
            return done(*args)
        n = state[1] = state[1] + 1
        if n % sample != 1 % sample:  # calls 1, 1 + sample, ... are timed
            return fn(*args)
        t = clock()
        out = fn(*args)
        state[2] += (clock() - t) * sample
        if state[2] >= (TUNING.payback_s if payback_s is None else payback_s):
            state[0] = compiler(fn)
        return out

    return run


def structure_key(op: RegionOp) -> tuple:
    """Members' kinds, parameters and fold tags, and the wiring: equal keys compute the
    same thing, lowered the same way."""
    members = tuple((type(m).__name__, tuple((f.name, plain_key(getattr(m, f.name)))
                                             for f in dataclasses.fields(m)
                                             if f.name not in _NOT_PARAMS),
                     tuple(sorted(m.tags & FOLD_TAGS)))
                    for m in op.body)
    return members, op.reads, op.outputs


def static_args(m: Op) -> list[int]:
    """A member's trailing kernel args: its runtime expressions, which the grouping pass
    bound to constants (members never vary with a loop variable)."""
    return [e if isinstance(e, int) else int(e.evaluate({})) for e in m.runtime_exprs()]


def _value(r: Ref) -> str:
    return f"a{r.output}" if r.is_input else f"v{r.member}_{r.output}"


def source(op: RegionOp, folds: Folds | None = None) -> str:
    """`def region(a0, a1, ...)`: line k + 2 calls member k, then the values returned."""
    n_in = 1 + max((r.output for rs in op.reads for r in rs if r.is_input), default=-1)
    lines = [f"def region({', '.join(f'a{k}' for k in range(n_in))}):"]
    folds = folds or {}
    gone = {j for f in folds.values() for j in f.absorbed}
    for k, (m, reads) in enumerate(zip(op.body, op.reads)):
        if k in gone:
            lines.append("    pass")
            continue
        if k in folds:
            reads = folds[k].reads
        args = [_value(r) for r in reads] + [str(k) for k in static_args(m)]
        outs = ", ".join(f"v{k}_{j}" for j in range(m.num_outputs))
        lines.append(f"    {outs} = k{k}({', '.join(args)})")
    rets = [_value(r) for r in op.outputs]
    lines.append(f"    return {', '.join(rets)}")
    return "\n".join(lines) + "\n"


def body_function(op: RegionOp, kernels: list[Kernel], filename: str,
                  folds: Folds | None = None) -> Kernel:
    """The generated straight-line body (`enable_codegen_dataflows`); a member that
    `folds` (torch's `region_folds.torch_folds`) names calls its fold's kernel."""
    ns: dict[str, Any] = {f"k{k}": kern for k, kern in enumerate(kernels)}
    exec(compile(source(op, folds), filename, "exec"), ns)  # noqa: S102 - our own source
    fn: Kernel = ns["region"]
    return fn


def interpreted(op: RegionOp, kernels: list[Kernel]) -> Kernel:
    """The body walked per call (codegen of dataflows off): the same calls, slower."""
    plan = [(kern, reads, m.num_outputs, static_args(m))
            for kern, m, reads in zip(kernels, op.body, op.reads)]
    outputs = op.outputs

    def region(*ins: Any) -> Any:
        vals: list[tuple[Any, ...]] = []
        for kern, reads, n, extra in plan:
            args = [ins[r.output] if r.is_input else vals[r.member][r.output] for r in reads]
            out = kern(*args, *extra)
            vals.append(tuple(out) if n > 1 else (out,))
        res = tuple(ins[r.output] if r.is_input else vals[r.member][r.output] for r in outputs)
        return res[0] if len(res) == 1 else res

    return region


REGION_FILE = "<tempo-region-"
"""How the source file of every region body is named (`failing_member` looks for it)."""


def failing_member(op: RegionOp, exc: BaseException) -> Op | None:
    """The member of region `op` that raised `exc` (the line of the region body the
    traceback last passed through: line k + 2 calls member k), or None. Regions do not
    nest, so the innermost region frame is this region's body."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(REGION_FILE):
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None or not 2 <= line < 2 + len(op.body):
        return None
    return op.body[line - 2]
