"""The jax runner of compiled loops: a segment's step function under `jax.lax.scan`,
jitted once per runner (jax caches the compiled scan per input shapes and dtypes)."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from tempo.runtime.backends import jax_index_checks as ixc
from tempo.runtime.backends.common import NP_OF
from tempo.runtime.stores import TrackedStore
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
        self.flag_ops: list[Any] = []  # index ops whose flags the scan returns

        def scan(li: tuple, lc: tuple, lx: tuple) -> Any:
            if self.form == "fori_loop":
                return fori(li, lc)
            body, flags = ixc.scan_body(functools.partial(step, li))
            out = ixc.scan_result(jax.lax.scan(body, lc, (jnp.asarray(cs), *lx),
                                               reverse=down))
            self.flag_ops = flags.ops  # (set while jax traces: the same at every call)
            return out

        def fori(li: tuple, lc: tuple) -> Any:
            first, inc = counters[0], (counters[1] - counters[0] if len(counters) > 1 else 1)
            one = ixc.flagged(step)

            def body(n: Any, carry: tuple) -> tuple:
                (c, _), bad = one(li, carry[0], (first + n * inc,))
                return c, carry[1] if bad is None else carry[1] | jnp.any(bad)

            c, bad = jax.lax.fori_loop(0, len(counters), body, (lc, jnp.zeros((), bool)))
            self.flag_ops = one.ops  # one flag for all of them (no index kernel: none)
            return (c, ()), bad if one.ops else None

        self.fn = jax.jit(scan)
        self.outputs = outputs
        self.rows = len(counters)  # of each stacked output
        self.form = "fori_loop" if not outputs and not reads else "scan"
        self.failed: str | None = None
        self.calls = 0

    def __call__(self, li: tuple, lc: tuple, lx: tuple) -> Any:
        if self.failed is not None:
            return None
        try:
            out, bad = self.fn(li, lc, lx)
        except Exception as exc:  # noqa: BLE001 - any failure: the Python loop runs instead
            why = str(exc).splitlines()[0] if str(exc) else ""
            self.failed = f"{type(exc).__name__}: {why}"
            return None
        ixc.defer(self.flag_ops, bad)  # checked at the end of the run
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


def stacked_store(dim: int, like: Any = None) -> StackedStore:
    """A jax block store along key position `dim` (a point of a block: one jitted index
    per block shape; a range over blocks and points: one concatenation); a tracked one
    if it replaces a tracked run's point store `like`."""
    if type(like) is TrackedStore:
        return TrackedStackedStore(dim, _take, _join, like)
    return StackedStore(dim, _take, _join)


_HELD = itertools.count(-1, -1)
"""Accountant holder keys of blocks (negative: never a storage's key)."""


class TrackedStackedStore(StackedStore):
    """A tracked run's jax block store: a point written alone is charged by its storage
    (as `TrackedStore` charges it); a scan's stacked output is written as one block and
    charged at that write as its live points would have been written one by one (the
    bytes of a row each), then credited row by row as they are freed."""

    def __init__(self, dim: int, take: Any, join: Any, like: TrackedStore) -> None:
        super().__init__(dim, take, join)
        self.tid, self.acct, self.storage = like.tid, like.acct, like.storage
        self.kept: dict[Any, int] = {}
        self.rows: dict[int, tuple[int, int]] = {}  # id(block) -> (holder key, row bytes)

    def __setitem__(self, key: Any, value: Any) -> None:
        if dict.__contains__(self, key):
            self.pop(key)
        k, n = self.storage(value)
        self.acct.hold(self.tid, k, n)
        self.kept[key] = k
        dict.__setitem__(self, key, value)

    def put_block(self, pre: tuple, lo: int, arr: Any, alive: Any) -> None:
        super().put_block(pre, lo, arr, alive)
        b = self.blocks[pre][-1]
        per = self.storage(arr)[1] // max(int(arr.shape[0]), 1)
        key = next(_HELD)
        self.acct.charge(self.tid, per * len(b.alive))  # the cap: relief or an error
        self.acct.held[key] = [per * len(b.alive), 1]
        self.rows[id(b)] = (key, per)

    def pop(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            value = dict.pop(self, key)
            self.acct.drop(self.kept.pop(key))
            return value
        pre, i = self._split(key)
        b = self._find(pre, i)
        if b is not None:
            self._credit(b, 1)
            if len(b.alive) == 1:
                del self.rows[id(b)]
        return super().pop(key, default)

    def _credit(self, b: Any, n: int) -> None:
        hk, per = self.rows[id(b)]
        ref = self.acct.held[hk]
        ref[0] -= per * n
        self.acct.live -= per * n
        if ref[0] <= 0:
            del self.acct.held[hk]

    def clear(self) -> None:
        for k in self.kept.values():
            self.acct.drop(k)
        for bs in self.blocks.values():
            for b in bs:
                self._credit(b, len(b.alive))
        super().clear()
        self.kept.clear()
        self.rows.clear()

    def device_bytes(self) -> int:
        held = self.acct.held
        return sum(held[k][0] for k in set(self.kept.values()) if k in held) + \
            sum(held[k][0] for k, _ in self.rows.values() if k in held)


class _Tape:
    """The step's view of the stores: the op numbers of the dry run, in order, each read
    served from its planned source (this iteration's write, a register, an input)."""

    def __init__(self, plan: Any, fixed: dict[int, Any], moving: dict[int, Any],
                 regs: dict[str, Any]) -> None:
        self.plan, self.fixed, self.moving, self.regs = plan, fixed, moving, regs
        self.vals: dict[int, Any] = {}
        self.p = 0
        self.k = 0  # kernel calls made

    def next(self) -> int:
        self.p += 1
        return self.p - 1

    def read(self) -> Any:
        s = self.plan.reads[self.next()]
        if s.kind == "val":
            v = self.vals[s.q]
        elif s.kind == "reg":
            return self.regs[_rk((s.q, (s.row, s.rows)), s.depth)]
        elif s.kind == "cat":  # points and blocks this iteration made, in order
            assert s.rows is not None
            return jnp.concatenate([self.vals[q][None] if lo is None else self.vals[q][lo:hi]
                                    for q, lo, hi in s.rows])
        else:
            v = (self.moving if s.moving else self.fixed)[s.index]
        return _view(v, (s.row, s.rows))

    def write(self, v: Any) -> None:
        self.vals[self.next()] = v


class _StepStore:
    """A store inside the step: reads and writes go to the tape; frees are no-ops (the
    points the segment frees are never read again, checked by the dry run)."""

    def __init__(self, tape: _Tape) -> None:
        self.tape = tape

    def __getitem__(self, key: Any) -> Any:
        return self.tape.read()

    def __setitem__(self, key: Any, v: Any) -> None:
        self.tape.write(v)

    def put_block(self, pre: Any, lo: Any, arr: Any, alive: Any) -> None:
        self.tape.write(arr)

    def pop(self, key: Any, default: Any = None) -> Any:
        return default


def _rk(reg: tuple, j: int) -> str:
    """A register's name in the carry (a dict: jax sorts its keys)."""
    return f"{reg[0]}/{reg[1]}/{j}"


def _view(v: Any, view: tuple) -> Any:
    row, rows = view
    if row is not None:
        return v[row]
    return v if rows is None else v[rows[0]: rows[1]]


def _subst(v: Any, consts: list[int], at: dict[int, Any]) -> Any:
    """`v` with its Python constants (numbered as the dry run numbered them) replaced by
    the traced values in `at`."""
    if isinstance(v, tuple | list):
        return type(v)(_subst(x, consts, at) for x in v)
    if v is None or isinstance(v, bool | int | float | str):
        consts[0] += 1
        return at.get(consts[0] - 1, v)
    return v


class NestRunner:
    """The scans of a loop nest's planned segments (`loops_nest.py`): `run(k, g, loc)`
    runs segment k with the generated function's globals `g` and locals `loc`, writes
    the stores back and returns True; False (for good: `failed` says why) if the step
    could not be traced or compiled, and the segment runs as the Python loop."""

    def __init__(self, source: str, nest: Any, kernel_ops: dict[int, Any]) -> None:
        self.source = source
        self.nest = nest
        self.kernel_ops = kernel_ops
        self.code = compile(source, "<tempo-nest-step>", "exec")
        self.fns: dict[int, Any] = {}
        self.flag_ops: dict[int, list[Any]] = {}  # index ops whose flags segment k returns
        self.failed: dict[int, str] = {}
        self.calls = 0

    def __call__(self, k: int, g: dict[str, Any], loc: dict[str, Any]) -> bool:
        if k in self.failed:
            return False
        a, b, pl, _ = self.nest.segments[k]
        try:
            fixed, moving, init = self._inputs(pl, g)
            li = (tuple(loc[n] for n in self.nest.args), fixed)
            fn = self.fns.get(k)
            if fn is None:
                fn = self.fns[k] = self._scan(k, g, loc)
            (regs, ys), bad = fn(li, init, (jnp.arange(b - a, dtype=jnp.int32), moving))
        except Exception as exc:  # noqa: BLE001 - any failure: the Python loop runs instead
            why = str(exc).splitlines()[0] if str(exc) else ""
            self.failed[k] = f"{type(exc).__name__}: {why}"
            return False
        ixc.defer(self.flag_ops.get(k, []), bad)  # checked at the end of the run
        self.calls += 1
        self._back(pl, g, regs, ys, b - a)
        return True

    def _inputs(self, pl: Any, g: dict[str, Any]) -> tuple[dict, dict, dict]:
        """The reads of points made before the segment, from the real stores."""
        stack, fixed, moving = g["stack"], {}, {}
        for i, (name, keys, ranged) in enumerate(pl.inputs):
            store = g[name]
            vals = [g["read_slices"](store, kk, stack) if ranged else store[kk]
                    for kk in keys]
            if any(s.kind == "in" and s.moving and s.index == i for s in pl.reads.values()):
                moving[i] = stack(vals)
            else:
                fixed[i] = vals[0]
        init = {_rk(reg, j): fixed[i] for (reg, j), i in pl.init.items()}
        return fixed, moving, init

    def _scan(self, k: int, g: dict[str, Any], loc: dict[str, Any]) -> Any:
        a, _, pl, _ = self.nest.segments[k]
        c0 = self.nest.counters[a]
        names = self.nest.args
        depth = pl.depth
        code = self.code
        kernel_ops = self.kernel_ops
        stores = [n for n in g if re.fullmatch(r"s\d+_\d+", n)]

        def step(li: tuple, regs: dict, x: tuple) -> Any:
            (vals, fixed), (r, moving) = li, x
            tape = _Tape(pl, fixed, moving, regs)
            env = {n: v for n, v in g.items()}
            env.update({n: v for n, v in loc.items() if not n.startswith("_")})
            env.update(zip(names, vals))
            env.update({n: _StepStore(tape) for n in stores})
            env.update(stack=jnp.stack, rows=lambda x, s, c: [x[s + i] for i in range(c)],
                       read_slices=lambda st, parts, _s, _e=None: st.tape.read())
            for n in list(env):
                if re.fullmatch(r"k\d+", n):
                    env[n] = self._kernel(tape, env[n], kernel_ops[int(n[1:])], pl, r)
                elif re.fullmatch(r"_L\d+", n):
                    env[n] = self._inner(tape, env[n])
            exec(code, env)  # noqa: S102 - our generated source
            env["_nbody"](c0)
            new = {}
            for reg, d in depth.items():
                for j in range(d, 1, -1):
                    new[_rk(reg, j)] = _fix(regs[_rk(reg, j - 1)], regs[_rk(reg, j)])
                new[_rk(reg, 1)] = _fix(_view(tape.vals[reg[0]], reg[1]), regs[_rk(reg, 1)])
            return new, tuple(tape.vals[q] for q in pl.stacked)

        def scan(li: tuple, init: dict, xs: tuple) -> Any:
            body, flags = ixc.scan_body(functools.partial(step, li))
            out = ixc.scan_result(jax.lax.scan(body, init, xs))
            self.flag_ops[k] = flags.ops  # (set while jax traces)
            return out

        return jax.jit(scan)

    @staticmethod
    def _kernel(tape: _Tape, fn: Any, op: Any, pl: Any, r: Any) -> Any:
        from tempo.core import ops as core_ops

        def call(*args: Any) -> Any:
            c = tape.k
            tape.k += 1
            tape.next()
            at = {j: a0 + s * r for (cc, j), (a0, s) in pl.affine.items() if cc == c}
            if at and isinstance(op, core_ops.EvalSymbolOp):
                (v,) = _subst(args, [0], at)
                return jnp.asarray(v, dtype=NP_OF[op.dtype.name])
            return fn(*_subst(args, [0], at)) if at else fn(*args)

        return call

    @staticmethod
    def _inner(tape: _Tape, runner: Any) -> Any:
        def call(li: Any, lc: Any, lx: Any) -> Any:
            tape.next()
            out, bad = runner.fn(li, lc, lx)  # (its failure fails the outer step)
            ixc.defer(runner.flag_ops, bad)  # traced: to the outer step's flags
            return out

        return call

    def _back(self, pl: Any, g: dict[str, Any], regs: dict, ys: tuple, n: int) -> None:
        """The stores as the Python loop would have left them."""
        for name, key in pl.pops:
            g[name].pop(key, None)
        got: dict[int, list[Any]] = {}
        for q, r, name, key, alive in pl.backs:
            whole = (q, (None, None))
            if r >= n - pl.depth.get(whole, 0):
                v = regs[_rk(whole, n - r)]
            else:
                if q not in got:
                    got[q] = rows(ys[pl.stacked.index(q)], 0, n)
                v = got[q][r]
            if key[:1] == ("block",):
                _, pre, lo, rows_n = key
                g[name].put_block(pre, lo, v, None if alive is None or len(alive) == rows_n
                                  else alive)
            else:
                g[name][key] = v
