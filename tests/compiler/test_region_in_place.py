"""torch regions write an elementwise member's value over its operand when the operand is
a fresh value of the region read by that member alone (`region_folds_in_place`, tagged by
`grouping_folds.in_place_tag`): a clip, scale and add chain runs as clamp, mul_, add_,
clamp_ (the aten calls counted), bit for bit the values of the same chain in torch eager
and within float32 rounding of numpy. The near misses keep their allocating calls, and
the values that must not be overwritten keep theirs: a value also read outside the region
(a sink), an input of the region, a value two members read, a view of a shared value, a
scalar broadcast to a vector and an integer promoted to float. The same programs on jax
and numpy give the same values (the lowering is torch's alone)."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from programs import all_passes
from torch.utils._python_dispatch import TorchDispatchMode

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.ops_region import RegionOp
from tempo.runtime import region_folds
from tempo.runtime.region_folds import IN_PLACE_KIND

T_, N = 4, 33
DATA = (np.random.default_rng(7).standard_normal((T_, N)) * 2).astype(np.float32)
STATE = np.random.default_rng(8).standard_normal(N).astype(np.float32)


class _AtenCalls(TorchDispatchMode):
    """Counts the aten ops a run dispatches, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        self.calls[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _context(backend: str, tmp_path: Any) -> TempoContext:
    cfg = dataclasses.replace(
        all_passes(dataclasses.replace(ExecutionConfig.test_cfg(), path=str(tmp_path) + "/")),
        backend=backend)
    return TempoContext(cfg, num_dims=1)


def _regions(exe: Any) -> list[RegionOp]:
    return [op for op in exe.sdg.ops.values() if isinstance(op, RegionOp)]


def _in_place_kinds(exe: Any) -> list[str]:
    return sorted(f.kind.removeprefix(IN_PLACE_KIND) for r in _regions(exe)
                  for f in region_folds.torch_folds(r).values()
                  if f.kind.startswith(IN_PLACE_KIND))


def _env_step(backend: str, tmp_path: Any) -> tuple[list[np.ndarray], Any, Any]:
    """A PPO env step's shape: s' = clip(s + clip(a) * 0.05), a = x * 1.5, per t."""
    ctx = _context(backend, tmp_path)
    ((t, T),) = ctx.variables_and_bounds
    got: list[np.ndarray] = []
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: DATA[ts[t]], (N,), dtypes.float32, domain=(t,))
        s = RT.const(STATE)
        y = (s + (x * 1.5).clip(-1.0, 1.0) * 0.05).clip(-0.9, 0.9)
        y.sink_udf(lambda v: got.append(np.asarray(v).copy()))
    exe = ctx.compile({T: T_})
    with _AtenCalls() as mode:
        exe.execute()
    return got, exe, mode.calls


def _env_step_eager() -> np.ndarray:
    x, s = torch.from_numpy(DATA), torch.from_numpy(STATE)
    return torch.clamp(s + torch.clamp(x * 1.5, -1.0, 1.0) * 0.05, -0.9, 0.9).numpy()


def test_a_clip_scale_add_chain_runs_in_place(tmp_path: Any) -> None:
    got, exe, calls = _env_step("torch", tmp_path)
    # x * 1.5 (fresh) clamped in place, scaled in place, s added in place, clipped in place
    assert _in_place_kinds(exe) == ["add_", "clamp_", "clamp_", "mul_"], _in_place_kinds(exe)
    assert calls["clamp_"] >= 2 and calls["mul_"] >= 1 and calls["add_"] >= 1, calls
    assert calls["clamp"] == 0 and calls["add"] == 0 and calls["mul"] >= 1, calls  # x * 1.5
    np.testing.assert_array_equal(np.stack(got), _env_step_eager())  # torch eager, bit for bit
    x = DATA.astype(np.float64)
    want = np.clip(STATE + np.clip(x * 1.5, -1.0, 1.0) * 0.05, -0.9, 0.9)
    np.testing.assert_allclose(np.stack(got), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", ["jax", "numpy"])
def test_other_backends_agree_on_the_chain(backend: str, tmp_path: Any) -> None:
    got, _, _ = _env_step(backend, tmp_path)
    np.testing.assert_allclose(np.stack(got), _env_step_eager(), rtol=1e-6, atol=1e-7)


def _near_misses(backend: str, tmp_path: Any) -> tuple[dict[str, list[np.ndarray]], Any]:
    """Members whose operand must keep its value (or cannot take the result)."""
    ctx = _context(backend, tmp_path)
    ((t, T),) = ctx.variables_and_bounds
    got: dict[str, list[np.ndarray]] = collections.defaultdict(list)

    def keep(name: str) -> Any:
        return lambda v: got[name].append(np.asarray(v).copy())

    ints = (DATA * 3).astype(np.int64)
    with ctx:
        x = RT.source_with_ts_udf(lambda ts: DATA[ts[t]], (N,), dtypes.float32, domain=(t,))
        k = RT.source_with_ts_udf(lambda ts: ints[ts[t]], (N,), dtypes.int64, domain=(t,))
        a = x * 2.0                      # read outside the region too (a sink)
        a.sink_udf(keep("a"))
        (a + 1.0).sink_udf(keep("a1"))
        (x + 3.0).sink_udf(keep("x3"))   # x: a region input, read again below
        x.sink_udf(keep("x"))
        b = x * 4.0                      # read by two members
        (b - 1.0).sink_udf(keep("b1"))
        (b * b).sink_udf(keep("bb"))
        c = x * 5.0                      # a view of c taken by one member, c read by another
        cv = c.reshape((3, 11))
        (cv + 2.0).sink_udf(keep("cv2"))
        (c * 0.5).sink_udf(keep("c"))
        m = x.sum() * 2.0                # a scalar broadcast against a vector
        (m + x).sink_udf(keep("mx"))
        ki = k * 2                       # an integer promoted to float
        (ki + 0.5).sink_udf(keep("ki"))
    exe = ctx.compile({T: T_})
    exe.execute()
    return got, exe


def _near_misses_want() -> dict[str, np.ndarray]:
    x = DATA.astype(np.float64)
    k = (DATA * 3).astype(np.int64)
    return {"a": x * 2.0, "a1": x * 2.0 + 1.0, "x3": x + 3.0, "x": x, "b1": x * 4.0 - 1.0,
            "bb": (x * 4.0) ** 2, "cv2": (x * 5.0).reshape(T_, 3, 11) + 2.0,
            "c": x * 5.0 * 0.5, "mx": x.sum(1, keepdims=True) * 2.0 + x,
            "ki": k * 2 + 0.5}


@pytest.mark.parametrize("backend", ["torch", "jax", "numpy"])
def test_values_others_read_are_not_overwritten(backend: str, tmp_path: Any) -> None:
    got, exe = _near_misses(backend, tmp_path)
    for name, want in _near_misses_want().items():
        np.testing.assert_allclose(np.stack(got[name]), want, rtol=1e-5, atol=1e-4,
                                   err_msg=name)
    if backend == "torch":  # none of these operands is the region's own, read once
        assert _in_place_kinds(exe) == [], _in_place_kinds(exe)


def test_a_chain_over_a_fresh_value_reuses_one_buffer() -> None:
    """The lowering on a hand-built region: exp(x * 2) - y, its mul fresh, then in place:
    the exp and the sub write over the mul's buffer (one allocation for the three)."""
    from tempo.core import ops
    from tempo.core.ops_region import IN_PLACE, Ref
    from tempo.runtime import regions

    def op(cls: type, tag: str, **kw: Any) -> Any:
        return cls(op_id=0, domain=None, site="", tags=frozenset({IN_PLACE + tag}), **kw)

    body = (op(ops.BinaryOp, "0", fn="mul"), op(ops.UnaryOp, "0", fn="exp"),
            op(ops.BinaryOp, "0", fn="sub"))
    reads = ((Ref(-1, 0), Ref(-1, 1)), (Ref(0, 0),), (Ref(1, 0), Ref(-1, 2)))
    region = RegionOp(op_id=1, domain=None, site="", body=body, reads=reads,
                      outputs=(Ref(2, 0),))
    folds = region_folds.torch_folds(region)
    assert [folds[k].kind for k in sorted(folds)] == ["in_place:exp_", "in_place:sub_"]
    kernels = [region_folds.fold_kernel(folds[k].kind) if k in folds else
               {0: torch.mul}[k] for k in range(3)]
    fn = regions.body_function(region, kernels, "<test>", folds)
    x, two, y = torch.randn(50), torch.tensor(2.0), torch.randn(50)
    x0 = x.clone()
    with _AtenCalls() as mode:
        out = fn(x, two, y)
    assert torch.equal(out, torch.exp(x0 * 2.0) - y) and torch.equal(x, x0)
    assert mode.calls["exp_"] == 1 and mode.calls["sub_"] == 1 and mode.calls["exp"] == 0
