"""Compiled loop nests (ARCHITECTURE §7): a static top-level loop whose body holds inner
loops runs as one `jax.lax.scan` whose step is the body's generated code (its inner loops
already lowered to scans, `loops_emit.py`), traced once per segment.

The plan comes from a dry run, not from a second analysis of the schedule: the body's
generated code runs at every iteration of the loop with stub kernels and runners that
return tokens (where a value comes from, relative to its iteration) and stores that record
every read, write and free by key. That is exhaustive and exact for a static loop (its
keys and conditions depend only on counters and bounds):

* iterations whose record (statements, kernels, where each input comes from) is the same
  form a segment; a segment of at least `MIN_STEPS` iterations is scanned;
* a store read gets a value made earlier in the same iteration (a value of the step),
  `d` iterations earlier (a shift register of depth `d` in the carry, its first entries
  read at entry), or before the segment (one input if its key is fixed, else the points
  stacked along the scan);
* a kernel's Python argument that changes with the counter must be affine in it (then
  the step computes it from the iteration number);
* what the stores hold after the Python loop is written back after the scan (the points
  no free of the segment releases: from the stacked outputs, or the last carries), and
  the frees of points made before the segment are replayed.

Anything else (a local carried between iterations, a draw from the backend's key, a UDF,
a read whose source moves, an inner loop too long to trace unrolled) leaves the segment a
Python loop, calling the body once per iteration; `why` says why. A step jax cannot trace
or compile runs as the Python loop too: results never depend on the lowering.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tempo.core import ops
from tempo.runtime.loops import IMPURE, MIN_STEPS, Reject

MAX_DRY_OPS = 200_000
"""Statements the dry run may record over the whole loop (more: the loop stays Python)."""

MAX_STEP_CALLS = 256
"""Kernel calls one iteration may make (inner Python loops are traced unrolled: more and
the step would take longer to compile than it saves)."""

LOCAL = re.compile(r"vs\d+_\d+")


class Tok:
    """A value of the dry run: `o` says where it comes from, relative to its iteration
    (kernel call c, store read p, runner output, a local of `run()`); `n` is its number
    of rows when known (a runner's stacked output)."""

    __slots__ = ("o", "n")

    def __init__(self, o: tuple, n: int | None = None) -> None:
        self.o = o
        self.n = n

    def __bool__(self) -> bool:
        raise Reject("the body tests a value")


def _form(v: Any, consts: list[Any]) -> Any:
    """The shape of an argument: tokens by origin, Python values by position in `consts`
    (their values may change with the counter)."""
    if isinstance(v, Tok):
        return v.o
    if isinstance(v, tuple | list):
        return (type(v).__name__, tuple(_form(x, consts) for x in v))
    if v is None or isinstance(v, bool | int | float | str):
        consts.append(v)
        return ("c", len(consts) - 1)
    raise Reject(f"the body passes a {type(v).__name__}")


@dataclass
class Entry:
    """A point in a dry-run store: made at iteration `n` by write `q` (row `row` of a
    block), or before the loop (`n` None: its key is read from the real store)."""

    n: int | None
    q: int = -1
    row: int | None = None


@dataclass
class Iteration:
    """One iteration's record: its form (compared between iterations), the Python values
    of its kernel calls, the sources of its reads, the keys of its writes, the frees of
    points made before it."""

    form: list[Any] = field(default_factory=list)
    consts: list[list[Any]] = field(default_factory=list)  # per kernel call
    reads: list[tuple[int, str, Any, list[Entry]]] = field(default_factory=list)
    # (op number, store, key or range parts, entries in order)
    writes: dict[int, tuple[str, Any]] = field(default_factory=dict)  # op -> (store, key)
    pops: list[tuple[str, Any]] = field(default_factory=list)  # points made before
    ops: int = 0


class DryStore:
    """A store of the dry run: entries by key, the reads and writes recorded into the
    current iteration (block writes along `dim`, as a jax block store keeps them)."""

    def __init__(self, run: DryRun, name: str, dim: int | None) -> None:
        self.run, self.name, self.dim = run, name, dim
        self.points: dict[Any, Entry] = {}
        self.gone: set[Any] = set()

    def _entry(self, key: Any) -> Entry:
        e = self.points.get(key)
        if e is not None:
            return e
        if key in self.gone:
            raise Reject(f"{self.name}{list(key)} is read after its free")
        return Entry(None)

    def __getitem__(self, key: Any) -> Tok:
        p = self.run.op(("r", self.name))
        self.run.it.reads.append((p, self.name, key, [self._entry(key)]))
        return Tok(("r", p))

    def __setitem__(self, key: Any, v: Any) -> None:
        consts: list[Any] = []
        q = self.run.op(("w", self.name, _form(v, consts), tuple(consts)))
        self.points[key] = Entry(self.run.n, q)
        self.run.it.writes[q] = (self.name, key)

    def put_block(self, pre: tuple, lo: int, arr: Any, alive: Any) -> None:
        if self.dim is None or not isinstance(arr, Tok) or arr.n is None:
            raise Reject(f"{self.name} takes a block it cannot place")
        q = self.run.op(("b", self.name, arr.o, lo, None if alive is None else tuple(alive)))
        d = self.dim
        for j in range(arr.n) if alive is None else alive:
            self.points[pre[:d] + (lo + j,) + pre[d:]] = Entry(self.run.n, q, j)
        self.run.it.writes[q] = (self.name, ("block", pre, lo, arr.n))

    def pop(self, key: Any, default: Any = None) -> Any:
        e = self.points.pop(key, None)
        if e is None or e.n is None or e.n < self.run.start:
            self.run.it.pops.append((self.name, key))
        self.gone.add(key)
        return default

    def read_range(self, parts: tuple) -> Tok:
        p = self.run.op(("s", self.name, tuple(isinstance(x, tuple) for x in parts)))
        keys: list[tuple] = [()]
        for x in parts:
            keys = [k + (i,) for k in keys for i in (range(*x) if isinstance(x, tuple) else (x,))]
        self.run.it.reads.append((p, self.name, parts, [self._entry(k) for k in keys]))
        return Tok(("r", p))


class DryRun:
    """Runs the body at every iteration with stubs and records each (see the module)."""

    def __init__(self, kernel_ops: dict[int, ops.Op], runners: dict[str, Any],
                 dims: dict[str, int | None]) -> None:
        self.kernel_ops = kernel_ops
        self.runners = runners
        self.stores = {name: DryStore(self, name, d) for name, d in dims.items()}
        self.it = Iteration()
        self.its: list[Iteration] = []
        self.n = 0
        self.start = 0
        self.total = 0
        self.calls = 0

    def op(self, form: tuple) -> int:
        self.it.form.append(form)
        self.it.ops += 1
        self.total += 1
        if self.total > MAX_DRY_OPS:
            raise Reject(f"the loop runs more than {MAX_DRY_OPS} statements")
        return len(self.it.form) - 1

    def kernel(self, op_id: int) -> Callable[..., Any]:
        op = self.kernel_ops[op_id]
        members = op.body if isinstance(op, ops.RegionOp) else (op,)
        bad = [m for m in members if m.name in IMPURE or getattr(m, "with_ts", False)
               or getattr(m, "block_inputs", ()) or isinstance(m, ops.RandOp)]

        def call(*args: Any) -> Any:
            if bad:
                raise Reject(f"{bad[0]!r} calls Python, draws random numbers or reads blocks")
            consts: list[Any] = []
            c = self.op(("k", op_id, _form(args, consts)))
            self.it.consts.append(consts)
            self.calls += 1
            if self.calls > MAX_STEP_CALLS:
                raise Reject(f"an iteration makes more than {MAX_STEP_CALLS} kernel calls")
            if op.num_outputs == 1:
                return Tok(("k", c))
            return tuple(Tok(("k", c, j)) for j in range(op.num_outputs))

        return call

    def runner(self, name: str) -> Callable[..., Any]:
        r = self.runners[name]

        def call(li: Any, lc: Any, lx: Any) -> Any:
            consts: list[Any] = []
            c = self.op(("L", name, _form((li, lc, lx), consts), tuple(consts)))
            return (tuple(Tok(("L", c, "f", j)) for j in range(len(lc))),
                    tuple(Tok(("L", c, "y", j), r.rows) for j in range(r.outputs)))

        return call

    def iteration(self, n: int, body: Callable[[], dict[str, Any]]) -> Iteration:
        self.n, self.it, self.calls = n, Iteration(), 0
        self.its.append(self.it)
        try:
            left = body()
        except Reject:
            raise
        except UnboundLocalError as exc:
            raise Reject(f"a local is carried between iterations ({exc})") from None
        except (NameError, AttributeError, TypeError, KeyError, IndexError) as exc:
            raise Reject(f"the body does what a step cannot ({type(exc).__name__}: "
                         f"{exc})") from None
        alive = [k for k, v in left.items() if LOCAL.fullmatch(k) and v is not None]
        if alive:
            raise Reject(f"the local {alive[0]} outlives its iteration")
        return self.it


def stack_stub(xs: list[Any]) -> Tok:
    consts: list[Any] = []
    return Tok(("stack", _form(list(xs), consts), tuple(consts)), len(xs))


def rows_stub(x: Any, start: int, count: int) -> list[Tok]:
    if not isinstance(x, Tok):
        raise Reject("rows of a value the loop does not make")
    return [Tok(("row", x.o, start + i)) for i in range(count)]


# ---------------------------------------------------------------- the plan of a segment
@dataclass
class Source:
    """Where a read of the step gets its value: 'val' (write `q` of this iteration),
    'reg' (write `q`, `depth` iterations ago), 'in' (input `index`); then row `row` or
    rows `rows` of it."""

    kind: str
    q: int = -1
    depth: int = 0
    index: int = 0
    row: int | None = None
    rows: tuple[int, int] | None = None
    moving: bool = False  # an input read at every iteration: stacked along the scan
    # 'cat': `rows` holds (write op, first row, end row) pieces, (q, None, None) a point


@dataclass
class Plan:
    """A scanned segment: iterations `start..stop-1` (positions), the step's read sources
    by op number, its inputs (point reads or range reads of the real stores: one per
    input, or one per iteration, stacked), its registers, the kernel arguments it computes
    from the iteration number, and what to do with the stores after the scan."""

    start: int
    stop: int
    reads: dict[int, Source] = field(default_factory=dict)
    inputs: list[tuple[str, list[Any], bool]] = field(default_factory=list)
    # (store, keys (one: fixed; else one per iteration), range read)
    depth: dict[tuple[int, tuple], int] = field(default_factory=dict)
    # registers: (write op, (row, rows) kept of it) -> depth
    init: dict[tuple[tuple[int, tuple], int], int] = field(default_factory=dict)
    # (register, j iterations before the segment) -> the input holding it
    affine: dict[tuple[int, int], tuple[Any, Any]] = field(default_factory=dict)
    # (kernel call number, const number) -> (value at the first iteration, step)
    stacked: list[int] = field(default_factory=list)  # write ops output per iteration
    backs: list[tuple[int, int, str, Any, list[int] | None]] = field(default_factory=list)
    # (write op, iteration position, store, key (or block (pre, lo, n)), alive rows)
    pops: list[tuple[str, Any]] = field(default_factory=list)
    calls: dict[int, int] = field(default_factory=dict)  # kernel call -> op number


def plan(its: list[Iteration], start: int, stop: int, survivors: dict[tuple[int, int],
         tuple[str, Any, list[int] | None]]) -> Plan:
    """The scan of iterations `start..stop-1` (same form), or `Reject`."""
    pl = Plan(start, stop)
    first = its[start]
    k = 0
    for p, f in enumerate(first.form):
        if f[0] == "k":
            pl.calls[k] = p
            k += 1
    inputs: dict[tuple[str, tuple, bool], int] = {}

    def input_of(name: str, keys: list[Any], ranged: bool) -> int:
        sig = (name, tuple(map(repr, keys)), ranged)
        if sig not in inputs:
            inputs[sig] = len(pl.inputs)
            pl.inputs.append((name, keys, ranged))
        return inputs[sig]

    for j, (p, name, _key, _) in enumerate(first.reads):
        ranged = first.form[p][0] == "s"
        srcs = [_source(its[n].reads[j][3], n, start, ranged) for n in range(start, stop)]
        keys = [its[n].reads[j][2] for n in range(start, stop)]
        outside = [s is None for s in srcs]
        if all(outside):
            fixed = all(kk == keys[0] for kk in keys)
            pl.reads[p] = Source("in", index=input_of(name, keys[:1] if fixed else keys,
                                                      ranged), moving=not fixed)
            continue
        made = [s for s in srcs if s is not None]
        if any(s != made[0] for s in made):
            raise Reject(f"a read of {name} takes values from places that move")
        src = made[0]
        src_r = Source(src[0], src[1], src[2], row=src[3], rows=src[4])
        if src_r.kind == "val" and any(outside):
            raise Reject(f"a read of {name} takes values from places that move")
        if src_r.kind == "reg":
            d = src_r.depth
            if any(outside[d:]) or not all(outside[:d]):
                raise Reject(f"a read of {name} takes values from places that move")
            if d > stop - start:
                raise Reject(f"a run of {stop - start} iterations reads {d} back")
            reg = (src_r.q, (src_r.row, src_r.rows))  # (a register keeps the rows read)
            pl.depth[reg] = max(pl.depth.get(reg, 0), d)
            for r in range(d):  # before the segment: read at entry
                idx = input_of(name, [keys[r]], ranged)
                if pl.init.setdefault((reg, d - r), idx) != idx:
                    raise Reject(f"{name} starts a carry from two points")
        pl.reads[p] = src_r
    for reg, d in pl.depth.items():
        if any((reg, j) not in pl.init for j in range(1, d + 1)):
            raise Reject(f"a carry of write {reg[0]} has no value at entry")
    _affine(pl, its, start, stop)
    _backs(pl, its, survivors, start, stop)
    pl.pops = [pp for n in range(start, stop) for pp in its[n].pops]
    return pl


def _source(entries: list[Entry], n: int, start: int, ranged: bool) -> tuple | None:
    """(kind, write op, depth, row, rows) of a read at iteration `n`; None if its value
    was made before the segment."""
    if all(e.n is None or e.n < start for e in entries):
        return None
    e0 = entries[0]
    if any(e.n is None or e.n < start for e in entries):
        raise Reject("a read gathers points made before the loop and in it")
    if any((e.n, e.q) != (e0.n, e0.q) for e in entries):
        return _pieces(entries, n)
    assert e0.n is not None
    kind = "val" if e0.n == n else "reg"
    if len(entries) == 1 and e0.row is None and not ranged:
        return (kind, e0.q, n - e0.n, None, None)
    rows = [e.row for e in entries]
    if any(r is None for r in rows):
        raise Reject("a read gathers a block and points")
    lo = int(rows[0])  # type: ignore[arg-type]  # no row is None: checked just above
    if rows != list(range(lo, lo + len(rows))):
        raise Reject("a read gathers rows out of order")
    if not ranged:
        return (kind, e0.q, n - e0.n, lo, None)
    return (kind, e0.q, n - e0.n, None, (lo, lo + len(rows)))


def _pieces(entries: list[Entry], n: int) -> tuple:
    """A range read of points this iteration made in several writes (a point, then a
    block): ('cat', write ops and the rows of each, in order)."""
    parts: list[tuple[int, int | None, int | None]] = []
    for e in entries:
        if e.n != n:
            raise Reject("a range read gathers points of several iterations")
        last = parts[-1] if parts else None
        if last is not None and last[0] == e.q and e.row is not None and last[2] == e.row:
            parts[-1] = (e.q, last[1], e.row + 1)
        elif e.row is None:
            parts.append((e.q, None, None))
        else:
            parts.append((e.q, e.row, e.row + 1))
    return ("cat", -1, 0, None, tuple(parts))


def _affine(pl: Plan, its: list[Iteration], start: int, stop: int) -> None:
    """Kernel arguments that change with the iteration: affine in it, or `Reject`."""
    first = its[start]
    for c, consts in enumerate(first.consts):
        for j, v in enumerate(consts):
            vals = [its[n].consts[c][j] for n in range(start, stop)]
            if all(x == v and type(x) is type(v) for x in vals):
                continue
            if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vals):
                raise Reject("a kernel takes a Python value that changes with the counter")
            step = vals[1] - vals[0]
            if any(x != vals[0] + step * r for r, x in enumerate(vals)):
                raise Reject("a kernel takes a value that is not affine in the counter")
            pl.affine[(c, j)] = (vals[0], step)


def _backs(pl: Plan, its: list[Iteration], survivors: dict[tuple[int, int], tuple],
           start: int, stop: int) -> None:
    """The writes after the scan: what survives of each write op (from the last carries
    if it is one of them, else from the op's stacked output)."""
    for (n, q), (name, key, alive) in sorted(survivors.items()):
        if not start <= n < stop:
            continue
        if n >= stop - pl.depth.get((q, (None, None)), 0):  # in the last carries
            pl.backs.append((q, n - start, name, key, alive))
            continue
        if q not in pl.stacked:
            pl.stacked.append(q)
        pl.backs.append((q, n - start, name, key, alive))


def survivors_of(run: DryRun, start: int, stop: int) -> dict[tuple[int, int], tuple]:
    """(iteration, write op) -> (store, key, alive rows) of the points made in
    `start..stop-1` that the dry-run stores hold now (after iteration `stop - 1`)."""
    out: dict[tuple[int, int], tuple] = {}
    for st in run.stores.values():
        for e in st.points.values():
            if e.n is None or not start <= e.n < stop:
                continue
            name, key = run.its[e.n].writes[e.q]
            if e.row is None:
                out[(e.n, e.q)] = (name, key, None)
            else:
                rec = out.get((e.n, e.q))
                out[(e.n, e.q)] = (name, key, sorted([*(rec[2] if rec else []), e.row]))
    return out


@dataclass
class NestPlan:
    """A loop nest's segments: (first, stop) positions in its counters, and the plan of
    the scanned ones (None, with why, for those left Python)."""

    counters: list[int]
    segments: list[tuple[int, int, Plan | None, str]]
    args: list[str]  # locals of run() the body reads as values (the step's inputs)


def analyse(source: str, counter: str, counters: list[int], env: dict[str, Any],
            kernel_ops: dict[int, ops.Op], runners: dict[str, Any],
            dims: dict[str, int | None]) -> NestPlan:
    """Dry-run the body `source` (a function `_nbody(counter)` returning its locals) at
    every counter and plan its segments. `env`: the names it may read (bounds, helpers);
    other names of `run()`'s locals (`vs..`, `_h..`) are values of the step."""
    code = compile(source, "<tempo-nest-dry>", "exec")
    body_code = next(c for c in code.co_consts if hasattr(c, "co_names"))
    args = sorted(n for n in body_code.co_names if n not in env and n not in dims and
                  (LOCAL.fullmatch(n) or re.fullmatch(r"_h\d+", n)))
    forms: list[Any] = []
    starts: set[int] = set()
    for rnd in range(2):  # first the forms (segments), then each segment's record
        run = DryRun(kernel_ops, runners, dims)
        g: dict[str, Any] = dict(env)
        g.update({n: Tok(("a", n)) for n in args})
        g.update(run.stores)
        g.update({"E" + n: None for n in dims})  # (a dry range read is never empty)
        g.update({f"k{i}": run.kernel(i) for i in kernel_ops})
        g.update({n: run.runner(n) for n in runners})
        g.update(stack=stack_stub, rows=rows_stub,
                 read_slices=lambda store, parts, _stack, _e=None: store.read_range(parts))
        exec(code, g)  # noqa: S102 - our generated source
        body = g["_nbody"]
        bounds = sorted(starts) + [len(counters)]
        kept: dict[int, dict] = {}  # segment start -> its survivors when it ends
        for n, c in enumerate(counters):
            if rnd and n in starts:
                run.start = n
            it = run.iteration(n, functools.partial(body, c))
            if not rnd:
                forms.append((it.form, [len(x) for x in it.consts]))
                if n == 0 or forms[n] != forms[n - 1]:
                    starts.add(n)
            elif n + 1 in bounds:
                a = max(x for x in starts if x <= n)
                kept[a] = survivors_of(run, a, n + 1)
        if not rnd:
            continue
        segs: list[tuple[int, int, Plan | None, str]] = []
        for a, b in zip(bounds, bounds[1:]):
            if b - a < MIN_STEPS:
                segs.append((a, b, None, f"a run of {b - a} iteration(s)"))
                continue
            try:
                segs.append((a, b, plan(run.its, a, b, kept[a]), ""))
            except Reject as r:
                segs.append((a, b, None, str(r)))
        return NestPlan(counters, segs, args)
    raise AssertionError("unreachable")
