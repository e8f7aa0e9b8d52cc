"""Compiled loops keep a scan's stacked outputs as blocks (runtime/stores_stacked.py): a
range read after the scan is the block the scan made, a point is indexed from it, frees
mark points dead. Also: a recurrence's first point joins the scan (its branch starts the
carry), loops that count down scan in reverse, loops nested in a Python loop scan per
outer iteration, and a loop with nothing stacked runs as a fori_loop. Every program is
checked against NumPy and against the same program with compiled loops off."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_compiled_loops import XS, W, _both, _close, _scanned, _x  # noqa: E402

from tempo.api import RecurrentTensor as RT  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402
from tempo.runtime.loops_jax import ScanRunner, stacked_store  # noqa: E402
from tempo.runtime.stores_stacked import StackedStore  # noqa: E402

RNG = np.random.default_rng(11)


def _blocks(exe: Any) -> list[StackedStore]:
    return [s for s in exe.stores.values() if isinstance(s, StackedStore) and s.blocks]


def _runners(exe: Any) -> list[Any]:
    return [r for rep in exe.compiled_loops() for _, _, r, _ in rep.segments if r is not None]


# ---------------------------------------------------------------- the store itself
def test_stacked_store_reads_blocks_points_and_mixes_against_numpy() -> None:
    arr = RNG.standard_normal((6, 2, 3)).astype(np.float32)  # points 2..7 of prefix (1,)
    s = stacked_store(1)
    s.put_block((1,), 2, jnp.asarray(arr), None)
    s[(1, 0)] = jnp.asarray(arr[0] * 0 + 5)  # points written alone, before and after
    s[(1, 1)] = jnp.asarray(arr[0] * 0 + 6)
    s[(1, 8)] = jnp.asarray(arr[0] * 0 + 7)
    stack = lambda xs: jnp.stack(xs)  # noqa: E731
    assert s.read_range((1, (2, 8)), stack) is s.blocks[(1,)][0].arr  # the block itself
    np.testing.assert_array_equal(s.read_range((1, (3, 6)), stack), arr[1:4])
    want = np.concatenate([np.full((2, 2, 3), 5.0), arr, np.full((1, 2, 3), 7.0)])
    want[1] = 6.0
    np.testing.assert_array_equal(s.read_range((1, (0, 9)), stack), want)
    np.testing.assert_array_equal(s[(1, 4)], arr[2])  # a point, indexed from the block
    assert (1, 4) in s and (1, 9) not in s and (0, 4) not in s and len(s) == 9
    s.pop((1, 4), None)  # a freed point inside: reads around it still work
    assert (1, 4) not in s
    with pytest.raises(KeyError):
        s[(1, 4)]
    np.testing.assert_array_equal(s.read_range((1, (5, 8)), stack), arr[3:6])
    with pytest.raises(KeyError):
        s.read_range((1, (3, 6)), stack)
    assert s.read_range((1, 3), stack) is None  # not a range read: the caller gathers
    for i in (2, 3, 5, 6, 7):
        s.pop((1, i), None)
    assert not s.blocks and len(s) == 3  # the last point took the block with it
    s.put_block((2,), 0, jnp.asarray(arr), [0, 5])  # only rows 0 and 5 alive
    assert (2, 0) in s and (2, 5) in s and (2, 3) not in s
    s.clear()
    assert len(s) == 0 and not s.blocks


# ---------------------------------------------------------------- programs
def test_a_recurrence_read_whole_after_its_loop_is_one_block(tmp_path: Any) -> None:
    n = 12

    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        h = RT.placeholder((3,), dtypes.float32, domain=(t,))
        h[0] = RT.const(np.ones(3, np.float32))
        h[t + 1] = (RT.const(W) @ h + _x(t)).tanh()
        return {"h": h, "total": h[0:T].sum(0) * 1.0}

    on, off, exe = _both(tmp_path, build, {0: n})
    hs = [np.ones(3, np.float32)]
    for k in range(n - 1):
        hs.append(np.tanh(W @ hs[-1] + XS[k]))
    _close(on["h"], np.stack(hs))
    _close(on["total"], np.stack(hs).sum(0))
    for name in on:
        _close(on[name], off[name].numpy(), 1e-6)
    # h[0] = 1 joined the scan: its branch is the carry's first value
    assert any(a == 0 for a, _ in _scanned(exe))
    assert _blocks(exe)
    whole = [(tid, b) for tid, st in exe.stores.items() if isinstance(st, StackedStore)
             for b in st.blocks.get((), ()) if len(b.alive) == b.hi - b.lo]
    assert whole  # the executor reads a whole block as the array the scan made
    for tid, b in whole:
        assert exe.get_spatial_tensor(tid, (slice(b.lo, b.hi),)) is b.arr



def test_a_loop_counting_down_scans_in_reverse_into_blocks_in_order(tmp_path: Any) -> None:
    n, envs = 16, 4
    rs = RNG.standard_normal((n, envs)).astype(np.float32)

    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        r = RT.const(rs).index_select(0, RT.from_symbol(t))
        g = RT.placeholder((envs,), dtypes.float32, domain=(t,))
        g[T - 1] = r[T - 1]
        g[True] = r + 0.9 * g[t + 1]
        return {"g": g, "mean": g[0:T].mean(0) * 1.0}

    on, off, exe = _both(tmp_path, build, {0: n})
    g = [rs[-1]]
    for k in range(n - 2, -1, -1):
        g.insert(0, rs[k] + 0.9 * g[0])
    _close(on["g"], np.stack(g))
    _close(on["mean"], np.stack(g).mean(0))
    for name in on:
        _close(on[name], off[name].numpy(), 1e-6)
    assert (n - 2, 0) in _scanned(exe) or (n - 1, 0) in _scanned(exe)
    assert _blocks(exe)


def test_inner_loops_of_a_nest_scan_per_outer_iteration(tmp_path: Any) -> None:
    """An acting loop over t inside iterations i (E5's shape): each i's rollout starts
    from the last state of the one before (so i is a loop, not a batch dim), is one scan
    into blocks keyed by i, and a reader of each whole rollout takes the block. The i
    loop is a nest (loops_nest.py): its first iteration (s[0, 0] = s0, another branch)
    runs one inner scan from Python, the others are one outer scan holding the inner."""
    iters, n = 3, 10
    s0 = RNG.standard_normal(4).astype(np.float32)

    def build(iI: Any, tT: Any) -> dict[str, RT]:
        (i, _), (t, T) = iI, tT
        s = RT.placeholder((4,), dtypes.float32, domain=(i, t))
        s[0, 0] = RT.const(s0)
        s[i, 0] = s[i - 1, T - 1] * 0.5
        s[i, t + 1] = (s * 0.8 + RT.from_symbol(t).cast(dtypes.float32) * 0.1).sin()
        per_i = s[i, 0:T].sum(0) * 1.0
        return {"s": s, "per_i": per_i}

    on, off, exe = _both(tmp_path, build, {0: iters, 1: n}, num_dims=2)
    want = np.zeros((iters, n, 4), np.float32)
    for a in range(iters):
        want[a, 0] = s0 if a == 0 else want[a - 1, -1] * 0.5
        for k in range(n - 1):
            want[a, k + 1] = np.sin(want[a, k] * 0.8 + k * 0.1)
    _close(on["s"], want)
    _close(on["per_i"], want.sum(1))
    for name in on:
        _close(on[name], off[name].numpy(), 1e-6)
    assert _scanned(exe)
    calls = {rep.loop.split()[1]: [r.calls for _, _, r, _ in rep.segments if r is not None]
             for rep in exe.compiled_loops()}
    assert calls["d0"] == [1] and 1 in calls["d1"]  # Python calls do not grow with iters
    assert _blocks(exe)


def test_a_loop_with_nothing_stacked_runs_as_a_fori_loop(tmp_path: Any) -> None:
    """Only the last step of the recurrence is read after the loop (gc frees the others
    as the loop goes): no stacked outputs and no stacked reads, only the carry."""
    n = 20

    def build(tT: Any) -> dict[str, RT]:
        t, T = tT
        w = RT.placeholder((2,), dtypes.float32, domain=(t,))
        w[0] = RT.const(np.array([1.0, -2.0], np.float32))
        y = (w * 0.9 + 0.01).cos()
        w[t + 1] = y
        return {"last": y[T - 1] * 1.0}

    on, off, exe = _both(tmp_path, build, {0: n})
    w = np.array([1.0, -2.0], np.float32)
    for _ in range(n):
        w = np.cos(w * 0.9 + 0.01)
    _close(on["last"], w)
    _close(on["last"], off["last"].numpy(), 1e-6)
    forms = {r.form for r in _runners(exe) if r.failed is None}
    assert "fori_loop" in forms


def test_step_by_step_runs_reuse_the_compiled_scans(tmp_path: Any) -> None:
    """`tick()` runs a second generated function (a generator yielding per outer step);
    its inner loops are the same scans as run()'s, compiled once, with the same results."""
    iters, n = 3, 8

    def build(iI: Any, tT: Any) -> dict[str, RT]:
        (i, _), (t, T) = iI, tT
        s = RT.placeholder((3,), dtypes.float32, domain=(i, t))
        s[0, 0] = RT.const(np.ones(3, np.float32))
        s[i, 0] = s[i - 1, T - 1] * 0.5
        s[i, t + 1] = (RT.const(W) @ s).tanh()
        return {"s": s, "per_i": s[i, 0:T].sum(0) * 1.0}

    on, off, exe = _both(tmp_path, build, {0: iters, 1: n}, num_dims=2)
    _close(on["s"], off["s"].numpy(), 1e-6)
    tid = next(t for t, st in exe.stores.items() if isinstance(st, StackedStore) and st.blocks)
    whole = np.asarray(exe.get_spatial_tensor(tid, (iters - 1, slice(0, n))))
    exe.reset()
    while exe.tick():
        pass
    np.testing.assert_array_equal(
        np.asarray(exe.get_spatial_tensor(tid, (iters - 1, slice(0, n)))), whole)
    first, again = exe._lowerings[0], exe._lowerings[-1]
    assert again is not first
    ids = [{id(r) for rep in low.reports for _, _, r, _ in rep.segments
            if isinstance(r, ScanRunner)} for low in (first, again)]  # (run()'s i loop is
    assert ids[0] and ids[0] == ids[1]  # also a nest: tick() keeps its outer steps)
