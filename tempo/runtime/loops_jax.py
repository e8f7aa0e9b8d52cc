"""The jax runner of compiled loops: a segment's step function under `jax.lax.scan`,
jitted once per runner (jax caches the compiled scan per input shapes and dtypes)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from tempo.runtime.stores_stacked import StackedStore


def _sym(value: Any, dtype: str) -> Any:
    """An `eval_symbol` inside the step: the traced counter expression as a scalar."""
    return jnp.asarray(value, dtype=dtype)


def _rand(key: Any, shape: tuple[int, ...], dtype: str) -> tuple[Any, Any]:
    """A `rand` inside the step: the jax kernel's draw (prims/sources.py), from the key the
    scan carries, so the draws are those the Python loop would have made."""
    key, sub = jax.random.split(key)
    return key, jax.random.uniform(sub, shape, dtype=dtype)


def _fix(new: Any, old: Any) -> Any:
    """A carry keeps its entry dtype (a value computed with Python scalars may come back
    weakly typed, which scan rejects)."""
    return jnp.asarray(new, dtype=old.dtype)


class ScanRunner:
    """One segment: `(invariants, first carries, stacked reads) -> (last carries,
    stacked outputs)`, or None (for good) once tracing or compiling failed; `failed` says
    why, `calls` counts the scans run. A loop whose counter goes down runs as a reverse
    scan over its counters in ascending order, so stacked reads and outputs are in the
    order of their points (a block store keeps them as they come). A step with neither
    stacked reads nor outputs runs as a `fori_loop`: the counter is the loop index."""

    def __init__(self, source: str, ns: dict[str, Any], counters: list[int],
                 outputs: int = 1, reads: int = 1) -> None:
        ns = dict(ns, _sym=_sym, _fix=_fix, _rand=_rand)
        exec(compile(source, "<tempo-loop-step>", "exec"), ns)  # noqa: S102 - our source
        step = ns["step"]
        self.source = source
        down = len(counters) > 1 and counters[1] < counters[0]
        cs = np.asarray(counters[::-1] if down else counters)

        def scan(li: tuple, lc: tuple, lx: tuple) -> Any:
            if self.form == "fori_loop":
                return fori(li, lc), ()
            return jax.lax.scan(functools.partial(step, li), lc, (jnp.asarray(cs), *lx),
                                reverse=down)

        def fori(li: tuple, lc: tuple) -> Any:
            first, inc = counters[0], (counters[1] - counters[0] if len(counters) > 1 else 1)

            def body(n: Any, carry: tuple) -> tuple:
                return step(li, carry, (first + n * inc,))[0]

            return jax.lax.fori_loop(0, len(counters), body, lc)

        self.fn = jax.jit(scan)
        self.form = "fori_loop" if not outputs and not reads else "scan"
        self.failed: str | None = None
        self.calls = 0

    def __call__(self, li: tuple, lc: tuple, lx: tuple) -> Any:
        if self.failed is not None:
            return None
        try:
            out = self.fn(li, lc, lx)
        except Exception as exc:  # noqa: BLE001 - any failure: the Python loop runs instead
            why = str(exc).splitlines()[0] if str(exc) else ""
            self.failed = f"{type(exc).__name__}: {why}"
            return None
        self.calls += 1
        return out


def shared_runners() -> Any:
    """A runner factory that makes one `ScanRunner` per distinct step (source, counters,
    outputs, reads): the executor's run() and its step-by-step twin (`tick()`) are two
    generated functions with the same loops, and a segment compiled for one is the
    other's (one executor's kernels: the same names are the same kernels)."""
    made: dict[tuple, ScanRunner] = {}

    def runner(source: str, ns: dict[str, Any], counters: list[int], outputs: int = 1,
               reads: int = 1) -> ScanRunner:
        key = (source, tuple(counters), outputs, reads)
        r = made.get(key)
        if r is None:
            r = made[key] = ScanRunner(source, ns, counters, outputs, reads)
        return r

    return runner


CHUNK = 16
"""Rows taken per dispatch when a stacked output is written back to point stores."""

_CHUNK = jax.jit(lambda x, i: tuple(jax.lax.dynamic_index_in_dim(x, i + k, keepdims=False)
                                    for k in range(CHUNK)))


def rows(x: Any, start: int, count: int) -> list[Any]:
    """Rows `start..start+count-1` of a scan's stacked output, `CHUNK` per dispatch through
    one jitted function per shape (`jnp.unstack` compiles one output per row: 12 CPU-s at
    256 rows; a dispatch per row cost more than the kernels the scan saved, under load)."""
    out: list[Any] = []
    for i in range(start, start + count, CHUNK):  # indices past the end clamp: dropped
        out.extend(_CHUNK(x, i))
    return out[:count]


@jax.jit
def _take(x: Any, j: Any) -> Any:
    return jax.lax.dynamic_index_in_dim(x, j, keepdims=False)


def _join(pieces: list[Any]) -> Any:
    return jnp.concatenate(pieces, axis=0)


def stacked_store(dim: int) -> StackedStore:
    """A jax block store along key position `dim` (a point of a block: one jitted index
    per block shape; a range over blocks and points: one concatenation)."""
    return StackedStore(dim, _take, _join)
