"""The same Tempo programs on torch, jax and numpy give the same results, equal to an
eager PyTorch computation; and every program test of tests/core also passes on numpy and
jax."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes

BACKENDS = ["torch", "jax", "numpy"]
T_ = 6
RNG = np.random.default_rng(1)
XS = RNG.standard_normal((T_, 3)).astype(np.float32)
W = RNG.standard_normal((3, 3)).astype(np.float32) * 0.5
A = RNG.standard_normal((4, 5)).astype(np.float32)
IMG = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
K = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)


def make_cfg(backend: str, tmp: Path) -> ExecutionConfig:
    base = ExecutionConfig.test_cfg()
    return dataclasses.replace(base, backend=backend, dev="cpu", path=str(tmp) + "/")


def run(cfg: ExecutionConfig, num_dims: int, build: Callable[..., dict[str, Any]],
        bounds: list[int]) -> dict[str, torch.Tensor]:
    """Execute and read every named result back as a torch tensor (DLPack for jax/numpy);
    a name mapped to a list is a sink's collection, returned stacked as given."""
    ctx = TempoContext(cfg, num_dims=num_dims)
    pairs = ctx.variables_and_bounds
    with ctx:
        outs = build(*pairs)
    exe = ctx.compile({pairs[k][1]: v for k, v in enumerate(bounds)})
    exe.execute()
    res = {}
    for name, rt in outs.items():
        if isinstance(rt, list):
            res[name] = torch.stack([torch.from_numpy(np.array(v)) for v in rt])
            continue
        dom = rt.unindexed_domain
        idx = tuple(slice(0, bounds[ctx.variables.index(v)]) for v in dom.variables)
        res[name] = exe.get_spatial_tensor_torch(rt.tensor_id, idx)
    return res


def source(t: Any, data: np.ndarray) -> RT:
    """A temporal input from numpy (every backend converts a UDF's numpy result)."""
    return RT.source_with_ts_udf(lambda ts: data[ts[t]], data.shape[1:], dtypes.float32,
                                 domain=(t,))


def be_np(v: Any) -> np.ndarray:
    """A sink's backend-native tensor as numpy (torch, jax and numpy all export DLPack)."""
    return np.from_dlpack(v.detach() if isinstance(v, torch.Tensor) else v)


# ---------------------------------------------------------------- programs
def static_ops() -> tuple[Callable[..., dict[str, Any]], list[int], dict[str, torch.Tensor]]:
    def build() -> dict[str, Any]:
        a, w = RT.const(A), RT.const(W)
        h = (a[:, :3] @ w).relu()
        vals, idx = a.max(1)
        svals, sidx = a.sort(0, descending=True)
        return {"h": h, "soft": a.softmax(-1), "mean": a.mean(0), "vals": vals, "idx": idx,
                "cum": a.cumsum(1), "sv": svals, "si": sidx, "flip": a.flip(1).exp(),
                "conv": RT.const(IMG).conv2d(RT.const(K), padding=1, stride=(1, 2)),
                "cast": (a * 3).cast(dtypes.int32) // 2, "pad": a.pad(((1, 2),), "reflect")}

    ta, tw = torch.from_numpy(A), torch.from_numpy(W)
    sv, si = torch.sort(ta, dim=0, descending=True, stable=True)
    want = {"h": torch.relu(ta[:, :3] @ tw), "soft": torch.softmax(ta, -1),
            "mean": ta.mean(0), "vals": ta.max(1).values, "idx": ta.max(1).indices,
            "cum": ta.cumsum(1), "sv": sv, "si": si, "flip": ta.flip(1).exp(),
            "conv": torch.nn.functional.conv2d(torch.from_numpy(IMG), torch.from_numpy(K),
                                               padding=1, stride=(1, 2)),
            "cast": torch.div((ta * 3).int(), 2, rounding_mode="floor"),
            "pad": torch.nn.functional.pad(ta[None], (0, 0, 1, 2), mode="reflect")[0]}
    return lambda: build(), [], want


def rnn_and_windows() -> tuple[Callable[..., dict[str, Any]], list[int], dict[str, torch.Tensor]]:
    """A tanh RNN recurrence, a growing prefix `0:t+1`, a future read `t:T`, a discounted
    return computed backwards in time, several outputs and a sink with symbol values."""
    sunk: list[Any] = []

    def build(tT: Any) -> dict[str, Any]:
        t, T = tT
        x = source(t, XS)
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = x.tanh()
        h[True] = (h[t - 1] @ RT.const(W) + x).tanh()
        g = RT.placeholder((3,), dtypes.float32, domain=(t,))
        g[T - 1] = x
        g[True] = x + g[t + 1] * 0.9
        prefix = x[0:t + 1].sum(0)
        ahead = x[t:T].max(0)[0]
        h.sink_with_ts_udf(lambda v, ts: sunk.append(np.asarray(be_np(v)) * ts[t]))
        return {"h": h, "g": g, "prefix": prefix, "ahead": ahead, "sunk": sunk}

    xt, wt = torch.from_numpy(XS), torch.from_numpy(W)
    hs, hh = [], None
    for k in range(T_):
        hh = torch.tanh(xt[0]) if k == 0 else torch.tanh(hh @ wt + xt[k])
        hs.append(hh)
    gs: list[torch.Tensor] = [xt[-1]]
    for k in range(T_ - 2, -1, -1):
        gs.insert(0, xt[k] + gs[0] * 0.9)
    h = torch.stack(hs)
    want = {"h": h, "g": torch.stack(gs), "prefix": torch.cumsum(xt, 0),
            "ahead": torch.stack([xt[k:].max(0).values for k in range(T_)]),
            "sunk": h * torch.arange(T_, dtype=torch.float32)[:, None]}
    return build, [T_], want


def two_dims_batch() -> tuple[Callable[..., dict[str, Any]], list[int], dict[str, torch.Tensor]]:
    """(b, t) domain: per-batch running mean and an index-select by the batch symbol."""
    data = RNG.standard_normal((2, 4, 3)).astype(np.float32)

    def build(bB: Any, tT: Any) -> dict[str, Any]:
        (b, _), (t, _) = bB, tT
        x = RT.source_with_ts_udf(lambda ts: data[ts[b], ts[t]], (3,), dtypes.float32,
                                  domain=(b, t))
        s = RT.placeholder((3,), dtypes.float32, domain=(b, t))
        s[b, 0] = x[b, 0]
        s[b, t + 1] = s + x[b, t + 1]
        pick = RT.const(np.arange(6, dtype=np.float32).reshape(2, 3)).index_select(0, b)
        return {"mean": s / (RT.from_symbol(t).cast(dtypes.float32) + 1.0), "pick": pick}

    dt = torch.from_numpy(data)
    want = {"mean": dt.cumsum(1) / torch.arange(1, 5, dtype=torch.float32)[None, :, None],
            "pick": torch.arange(6, dtype=torch.float32).reshape(2, 3)}
    return build, [2, 4], want


PROGRAMS = {"static_ops": static_ops, "rnn_and_windows": rnn_and_windows,
            "two_dims_batch": two_dims_batch}


def _same(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Equal shapes and dtypes; floats to 1e-5, ints and bools exactly."""
    assert tuple(got.shape) == tuple(want.shape), (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, msg=what)
    else:
        assert torch.equal(got, want), (what, got, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_program_agrees_with_eager_torch(program: str, backend: str, tmp_path: Path) -> None:
    build, bounds, want = PROGRAMS[program]()
    got = run(make_cfg(backend, tmp_path), len(bounds), build, bounds)
    for name, w in want.items():
        _same(got[name], w, f"{program}/{name} on {backend}")


# ---------------------------------------------------------------- the lead's program tests
_CORE = Path(__file__).resolve().parents[1] / "core"
# every program of the core suites runs on numpy and jax (jax compiles per shape: ~40 s)


def _core_tests() -> list[tuple[str, Any]]:
    if str(_CORE) not in sys.path:
        sys.path.insert(0, str(_CORE))
    found = []
    for mod_name in ("test_programs_temporal", "test_programs_spatial"):
        if not (_CORE / f"{mod_name}.py").exists():
            continue
        mod = importlib.import_module(mod_name)
        for name, fn in sorted(inspect.getmembers(mod, inspect.isfunction)):
            if name.startswith("test_") and list(inspect.signature(fn).parameters) == ["cfg"]:
                found.append((name, mod))
    return found


def _as_torch(x: Any) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)


def _close_default_int(a: Any, b: Any, atol: float = 1e-5) -> None:
    """The lead's `close` (equal dtypes; values to 1e-5, ints exactly), on jax/numpy with one
    documented difference: torch's default int is int64, jax's and numpy's int32 (API §4.2),
    so where eager torch gives int64 the program may give the config's `default_int`. Every
    other dtype must match, and the executor's debug mode (on in test_cfg) already checks
    each kernel result against the dtype its op inferred."""
    a, b = _as_torch(a), _as_torch(b)
    if b.dtype == torch.int64 and dtypes.default_int == dtypes.int32:
        assert a.dtype in (torch.int64, torch.int32), (a.dtype, b.dtype)
        b = b.to(a.dtype)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    torch.testing.assert_close(a, b, atol=atol, rtol=1e-5)


_CASES = [(b, n, m) for n, m in _core_tests() for b in ("numpy", "jax")]


@pytest.mark.parametrize(("backend", "name", "mod"), _CASES,
                         ids=[f"{b}-{n}" for b, n, _ in _CASES])
def test_core_program_on_other_backend(backend: str, name: str, mod: Any, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(mod, "close"):
        monkeypatch.setattr(mod, "close", _close_default_int)
    getattr(mod, name)(make_cfg(backend, tmp_path))
