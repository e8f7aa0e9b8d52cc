"""The executor: runs the generated program and exposes its results and statistics."""

from __future__ import annotations

import abc
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from tempo.core import naming, ops
from tempo.core.configs import TUNING, ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import BackendError, ShapeError, TempoError, in_user_names, user_site
from tempo.core.op_sources import BarrierOp
from tempo.core.ops_region import RegionOp
from tempo.core.sdg import SDG, TensorId
from tempo.runtime.backend_registry import DLBackend
from tempo.runtime.backends.protocol import Backend, Kernel
from tempo.runtime.block_reads import PointBlocks
from tempo.runtime.codegen import Generated, UndefinedPointError, generate
from tempo.runtime.codegen_charges import SHARING_BACKENDS
from tempo.runtime.codegen_endings import Ending
from tempo.runtime.missing import (
    bad_index_error,
    no_value_error,
    out_of_range_error,
    removed_error,
)
from tempo.runtime.regions import failing_member
from tempo.runtime.static_args import bind_bounds
from tempo.runtime.store_arrays import array_ops, slot_put, storage_of
from tempo.runtime.store_choice import StoreKind, block_rows, choose, compaction_slack
from tempo.runtime.stores import (
    BlockStore,
    CircularStore,
    Layout,
    MemoryAccountant,
    TrackedStore,
)
from tempo.runtime.stores_deferred import DeferredBlockStore, stack_along
from tempo.runtime.stores_joined import JoinedBlockStore, JoinedDeferredBlockStore
from tempo.runtime.stores_ring import RingStore
from tempo.runtime.stores_stacked import StackedStore
from tempo.runtime.swap import Swapper, SwapStore
from tempo.runtime.swap_blocks import SwapBlockStore
from tempo.runtime.udf_check import check_udf_signatures, guard_udf
from tempo.schedule import tree as st
from tempo.schedule.scheduler import Schedule
from tempo.schedule.swaps import place_swaps

_R = TypeVar("_R")


class Executor(abc.ABC):
    """What `ctx.compile()` returns (API.md §4.1)."""

    backend: Backend

    @abc.abstractmethod
    def execute(self) -> None: ...

    @abc.abstractmethod
    def reset(self) -> None: ...

    @abc.abstractmethod
    def get_spatial_tensor(self, tensor_id: TensorId, index: tuple = ()) -> Any: ...

    def get_spatial_tensor_torch(self, tensor_id: TensorId, index: tuple = ()) -> torch.Tensor:
        """The stored value as a torch tensor (through DLPack for jax and numpy)."""
        x = self.get_spatial_tensor(tensor_id, index)
        return x if isinstance(x, torch.Tensor) else self.backend.to_torch(x)

    def shutdown(self) -> None:
        """Release stored tensors."""
        self.reset()


class PythonExecutor(Executor):
    """Runs one generated Python function over per-point stores."""

    recorded: SDG | None = None  # the program as the user recorded it (names removed tensors)
    _executed = False
    _at_barrier = False  # the current stepping run stopped at a barrier: execute() ends it

    def __init__(
        self,
        sdg: SDG,
        schedule: Schedule,
        cfg: ExecutionConfig,
        bounds: dict[str, int],
        timings_ms: dict[str, float],
        endings: tuple[Ending, ...] = (),
        backend: Backend | None = None,
    ) -> None:
        check_udf_signatures(sdg)
        self.sdg = sdg
        self.endings = endings
        # dimension -> its extent in the last run (boolean bounds end it early)
        self.ends: dict[str, int] = {e.var: e.maximum for e in endings}
        self.schedule = schedule
        self.cfg = cfg
        self.bounds = bounds
        self.backend = (backend if backend is not None
                        else DLBackend.get_backend(cfg.backend).from_config(cfg))
        self.accountant = MemoryAccountant(cfg.device_memory_cap_bytes, self._describe)
        # swapping works on tracked stores: it moves what the accountant counts
        tracked = (cfg.device_memory_cap_bytes is not None or cfg.executor_debug_mode
                   or cfg.enable_swap)
        self.tracked = tracked
        self.stores: dict[TensorId, Any] = {}
        self.block_readers: list[PointBlocks] = []  # tiled reads of point stores
        kinds = self._store_kinds()
        swapper = self._swapper() if cfg.enable_swap else None
        self.swapped_tensors = 0  # tensors the schedule offloads and fetches
        if swapper is not None:
            points, blocks = self._swap_candidates(kinds)
            self.swapped_tensors = place_swaps(
                schedule.tree, sdg, points, bounds, cfg.runtime_tensor_prefetch_amount_point
            ) + place_swaps(schedule.tree, sdg, blocks, bounds,
                            cfg.runtime_tensor_prefetch_amount_block)
        for tid in sdg.tensors:
            kind = kinds.get(tid)
            if kind is not None:
                self.stores[tid] = self._ranged_store(tid, kind, swapper)
            elif tracked:
                self.stores[tid] = (
                    TrackedStore(tid, self.accountant, self._storage_of(tid)) if swapper is None
                    else SwapStore(tid, self.accountant, self._storage_of(tid), swapper))
            else:
                self.stores[tid] = {}
        t0 = time.perf_counter()
        # bounds are constants of the program, except those a boolean bound ends at run time
        ended = {e.bound for e in endings}
        fixed = {b: v for b, v in self._bound_values().items() if b.name not in ended}
        kernel_ops = {op.op_id: bind_bounds(op, fixed) for op in sdg.topological()}
        kernels = {i: self._kernel(op) for i, op in kernel_ops.items()}
        args = (sdg, schedule.tree, kernels, self.stores, bounds, self.backend.stack,
                self._undefined)
        gen = functools.partial(generate, *args, endings=endings, ends=self.ends,
                                kernel_ops=kernel_ops,
                                use_locals=cfg.enable_custom_thunk_launchers,
                                tick=self.accountant.tick if tracked else None,
                                accountant=self.accountant if tracked else None,
                                views_share=self.backend.name in SHARING_BACKENDS,
                                block_reader=self._block_reader, loops=self._loop_lowering(),
                                empty=self._empty_points)
        self.generated: Generated = gen()
        self._make_steps = lambda: gen(steps=True)
        self._steps: Iterator[str | None] | None = None
        self._stepping: Generated = self.generated  # the stepping code of the current run
        timings_ms["codegen"] = (time.perf_counter() - t0) * 1e3
        self._timings = timings_ms

    def _loop_lowering(self) -> Any:
        """On jax with enable_compiled_loops: the factory of the codegen's loop lowering
        (each lowering kept, for `compiled_loops()`); else None (Python loops)."""
        if not (self.cfg.enable_compiled_loops and self.backend.name == "jax"):
            return None
        from tempo.runtime.loops_emit import LoopLowering
        from tempo.runtime.loops_jax import NestRunner, rows, shared_runners, stacked_store

        self._lowerings: list[Any] = []
        runners = shared_runners()  # run() and tick()'s twin share compiled scans

        def make(gen: Any) -> Any:
            low = LoopLowering(gen, self.schedule.tree, self.bounds, runners, rows,
                               self.backend, self.stores, stacked_store, NestRunner)
            self._lowerings.append(low)
            return low

        return make

    def compiled_loops(self) -> list[Any]:
        """Per candidate loop of the generated `run()`: its header and segments (first and
        last counter, the runner or None, why a segment stayed a Python loop); see
        `tempo.runtime.loops_emit.LoopReport`."""
        lows = getattr(self, "_lowerings", [])
        return list(lows[0].reports) if lows else []

    def _swapper(self) -> Swapper:
        """Moves points to a host pool (a pinned copy on a GPU unless
        torch_pinned_memory_enabled is off, copied asynchronously both ways; on the CPU a
        separate copy, counted in the host pool rather than on the device)."""
        be = self.backend
        back: Any = be.to_device
        if be.name == "torch":
            pin = self.cfg.torch_pinned_memory_enabled
            dev = getattr(be, "device")  # noqa: B009 (the torch backend's device)

            def to_host(x: Any) -> Any:
                if x.device.type == "cpu":
                    return x.clone()
                host = torch.empty(x.shape, dtype=x.dtype, device="cpu", pin_memory=pin)
                return host.copy_(x, non_blocking=pin)

            def back(h: Any) -> Any:
                return h.to(dev, non_blocking=h.is_pinned())
        else:
            def to_host(x: Any) -> Any:
                return np.array(be.to_numpy(x), copy=True)
        return Swapper(self.accountant, to_host, back, self.cfg.swap_bytes_min)

    def _swap_candidates(self, kinds: dict[TensorId, StoreKind]
                         ) -> tuple[list[TensorId], list[TensorId]]:
        """Tensors in point stores whose points hold at least swap_bytes_min bytes, and
        tensors in block stores whose blocks do."""
        points: list[TensorId] = []
        blocks: list[TensorId] = []
        for tid, info in self.sdg.tensors.items():
            kind = kinds.get(tid)
            if (kind is not None and kind.kind != "block") or not info.shape.is_static():
                continue
            n = info.dtype.repr_bytes * (kind.size if kind is not None else 1)
            for d in info.shape.as_static():
                n *= int(d)
            if n >= self.cfg.swap_bytes_min:
                (points if kind is None else blocks).append(tid)
        return points, blocks

    def _store_kinds(self) -> dict[TensorId, StoreKind]:
        """Block or window stores where the storage pass found slice reads and the
        backend writes in place; blocks hold `inc_statify_block_size` points. Window
        stores need frees (with enable_gc off every point stays readable);
        enable_point_store_fallback=False puts one wherever it is legal. jax writes
        nothing in place: its point stores, freed after each point's last read, hold the
        same window of points a window store would (tests/runtime/test_store_forcing.py
        checks its peak is flat in T), so the flag asks for nothing more there."""
        if not self.backend.block_stores:
            return {}
        cfg = self.cfg
        cap = cfg.device_memory_cap_bytes if cfg.enable_swap else None
        return choose(self.sdg, self.schedule.tree, self._bound_values(),
                      cfg.inc_statify_block_size, circular=cfg.enable_gc,
                      block_bytes=None if cap is None else max(cap // TUNING.swap_block_share, 1),
                      force=not cfg.enable_point_store_fallback)

    def _empty_points(self, tid: TensorId, lengths: tuple[int, ...]) -> Any:
        """A read of no points of `tid` (`x[t + 1:T]` at t = T - 1): zero rows of its point
        shape, so the op reading it sees an empty dim as in numpy, not a failed stack."""
        info = self.sdg.tensors[tid]
        shape = info.shape.try_resolve(self._bound_values())
        if not shape.is_static():
            raise BackendError(f"a read of no points of a tensor of symbolic shape {shape}",
                               site=self.sdg.ops[tid.op_id].site)
        full = (*lengths, *shape.as_static())
        return self.backend.from_numpy(np.zeros(full, dtypes.to_np(info.dtype)), info.dtype)

    def _ranged_store(self, tid: TensorId, kind: StoreKind,
                      swapper: Swapper | None) -> BlockStore | CircularStore | RingStore:
        be = self.backend
        info = self.sdg.tensors[tid]
        shape, dt = tuple(info.shape.as_static()), info.dtype
        select, put, cat = array_ops(be.name)
        lay = Layout(tid, kind.dim, shape,
                     lambda s: be.alloc_block(0, s, dt, at_front=False), storage_of(be.name),
                     be.move_to_front, cat, select, put, self.accountant, slot_put(be.name))
        if kind.kind == "ring":  # (torch's tiled kernels take a run of any length)
            return RingStore(lay, kind.size, self.cfg.inc_statify_block_size, kind.rotated,
                             whole=be.name == "torch")
        if kind.kind == "circular":
            return CircularStore(lay, kind.size, self.cfg.inc_statify_block_size,
                                 compaction_slack(kind.size))
        if swapper is not None:  # tracked; complete blocks may go to the host pool
            return SwapBlockStore(lay, kind.size, swapper, kind.extent)
        # prefix-read blocks end to end in one buffer (torch's tiled kernels read views of
        # the valid rows; on the host its pages are backed as blocks are first written)
        joined = kind.prefix and be.name == "torch" and be.on_cpu
        if self.tracked:  # every byte counted: points are copied in as they are written
            return JoinedBlockStore(lay, kind.size, kind.extent) if joined else \
                BlockStore(lay, kind.size)
        if joined:
            return JoinedDeferredBlockStore(lay, kind.size, stack_along(be.name), kind.extent)
        return DeferredBlockStore(lay, kind.size, stack_along(be.name))

    def _block_reader(self, tid: TensorId, dim: int, block: int) -> PointBlocks:
        acct = self.accountant if self.tracked else None
        be, dt = self.backend, self.sdg.tensors[tid].dtype
        block = block_rows(self.sdg, tid, dim, block, self._bound_values())
        r = PointBlocks(self.stores[tid], dim, block, be.to_numpy,
                        lambda a: be.from_numpy(a, dt), tid, acct, self._storage_of(tid),
                        stack=None if be.on_cpu else be.stack)
        self.block_readers.append(r)
        return r

    def _describe(self, tid: TensorId) -> str:
        return naming.tensor_label(self.sdg, tid)

    def _storage_of(self, tid: TensorId) -> Any:
        return storage_of(self.backend.name)  # a recurrence shares its branch's storage

    def _kernel(self, op: ops.Op) -> Kernel:
        k = self.backend.kernel(guard_udf(op, self._bound_values(), self.sdg.names))
        if self.cfg.executor_debug_mode and op.num_outputs > 0:
            return _checked(op, k, self.sdg, self.backend, self.bounds)
        return k

    def _undefined(self, op_id: int, point: tuple) -> None:
        op = self.sdg.ops[op_id]
        at = naming.point_word({v.name: p for v, p in zip(op.domain.variables, point)})
        defs = "; ".join(naming.at_site(e.site) for e in self.sdg.in_edges[op_id] if e.site)
        fix = "Add a definition that covers that point (e.g. a last `x[True] = ...`)"
        if naming.PARAM_TAG in op.tags:
            fix = ("It is a module's parameter, defined at the start of the module's update "
                   "domain only: later points come from an optimizer (`opt.step()` after "
                   "`loss.backward()`), or call `module.fixed()` to hold it constant")
        raise UndefinedPointError(
            f"{naming.op_label(op, self.sdg.names)} is read at {at or 'its only point'}, where "
            f"none of its definitions holds ({defs or 'it has none'}). {fix}", site=op.site)

    # ---------------------------------------------------------------- API
    def execute(self) -> None:
        """Run the program to its end: the rest of a run `execute_until_barrier` stopped
        (the sinks before the barrier fired there and do not fire again), else a whole run
        (which supersedes a run `tick()` left part-way)."""
        if self._steps is not None and self._at_barrier:
            while self._next_marker()[0]:
                pass
            return
        self._executed = True
        self._steps = None
        self.accountant.reset_run()
        self._wrapped(self.generated, self.generated.fn)

    def _wrapped(self, gen: Generated, run: Callable[[], _R]) -> _R:
        """`run()` (a step of `gen`'s code) with backend failures raised as BackendError
        naming the op and the user's line; TempoErrors and the user's own UDF errors
        pass as they are. Every entry point (execute, tick, execute_until_barrier) runs
        generated code through here, so they fail alike."""
        try:
            with self.backend.running():  # torch: below its autograd keys (no use for them)
                return run()
        except (TempoError, StopIteration):
            raise
        except Exception as exc:  # a backend failure: name the op and the user's line
            op = self._failing_op(gen, exc)
            if isinstance(op, RegionOp):  # name the member that failed, not the region
                op = failing_member(op, exc)
            if op is None or op.name in ("udf_source", "sink_udf", "map_udf"):
                raise
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise BackendError(f"the {self.cfg.backend} backend failed running "
                               f"{naming.op_label(op, self.sdg.names)}: {why}",
                               site=op.site) from exc

    def _failing_op(self, gen: Generated, exc: BaseException) -> ops.Op | None:
        """The op of the last line of `gen`'s code the traceback passed through."""
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == gen.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        op_id = gen.line_ops.get(line) if line is not None else None
        return self.sdg.ops.get(op_id) if op_id is not None else None

    def reset(self) -> None:
        for s in self.stores.values():
            s.clear()
        for r in self.block_readers:
            r.clear()
        self._steps = None
        # a run stopped part-way left its locals' charges: live is what the stores hold
        a = self.accountant
        a.live = sum(ref[0] for ref in a.held.values())

    def _step_gen(self) -> Iterator[str | None]:
        """The stepping generator of the current run (a fresh run after the last ended)."""
        if self._steps is None:
            self._executed, self._at_barrier = True, False
            self.accountant.reset_run()
            self._stepping = self._make_steps()
            steps = self._stepping.fn()
            assert steps is not None  # generate(steps=True) makes a generator
            self._steps = steps
        return self._steps

    def _next_marker(self) -> tuple[bool, str | None]:
        """(True, the marker) after one more step of the run; (False, None) at its end.
        A failed step ends the run (the generator is dead): the next starts afresh."""
        steps = self._step_gen()
        try:
            return True, self._wrapped(self._stepping, lambda: next(steps))
        except StopIteration:
            self._steps = None
            return False, None
        except BaseException:
            self._steps = None
            raise

    def tick(self) -> bool:
        """Run one iteration of the outermost loop; False once the program has finished.
        A barrier passed on the way is no step of its own (execute_until_barrier stops
        there)."""
        while True:
            more, marker = self._next_marker()
            if not more or marker is None:
                return more

    def execute_until_barrier(self, name: str) -> None:
        """Run until the barrier called `name` next executes: in the current run if it is
        still ahead, else the current run ends and the next one stops there. Every call
        returns just past the barrier, with the sinks recorded before it fired once."""
        labels = sorted({op.label for op in (self.recorded or self.sdg).ops.values()
                         if isinstance(op, BarrierOp)})
        if name not in labels:
            raise TempoError(f"execute_until_barrier({name!r}): the program has no barrier of "
                             f"that name (its barriers: {', '.join(map(repr, labels)) or 'none'}"
                             "; make one with RecurrentTensor.barrier(name))", site=user_site())
        fresh = self._steps is None
        while True:
            more, marker = self._next_marker()
            if marker == name:
                self._at_barrier = True
                return
            if not more:
                if fresh:  # a whole run passed without it (every run passes each barrier)
                    return
                fresh = True

    def get_spatial_tensor(self, tensor_id: TensorId, index: tuple = ()) -> Any:
        if tensor_id not in self.stores:
            raise removed_error(self.recorded, self.cfg, tensor_id)
        store = self.stores[tensor_id]
        op = self.sdg.ops[tensor_id.op_id]
        if not isinstance(index, tuple):
            index = (index,)
        full = op
        if len(index) != len(op.domain):
            full = self.recorded.ops.get(tensor_id.op_id, op) if self.recorded else op
            if len(index) != len(full.domain):
                raise bad_index_error(self.sdg, tensor_id, index)
        # `full` is the op as recorded: domain reduction may have dropped dims its value
        # does not vary along; reads index them as recorded, and repeat along them.
        kept = {v.name for v in op.domain.variables}
        parts: list[Any] = []
        for v, i in zip(full.domain.variables, index):
            if isinstance(i, slice):
                lo, hi, step = i.indices(self._bound(full, v))
                points = list(range(lo, hi, step))
                parts.append(points if v.name in kept else _Repeat(len(points)))
            else:  # a negative int counts from the end, as in Python and x[-1] (§3.4)
                n = self._bound(full, v)
                k = int(i) + (n if int(i) < 0 else 0)
                if not 0 <= k < n:
                    raise out_of_range_error(self.sdg, tensor_id, v.name, int(i), n, user_site())
                parts.append(k if v.name in kept else None)
        if isinstance(store, StackedStore):  # a compiled loop's block: the range as it is
            got = _block_range(store, parts, self.backend.stack)
            if got is not None:
                return got
        return self._gather(store, tensor_id, parts, ())

    def _bound(self, op: ops.Op, v: Any) -> int:
        return int(op.domain.bound_of(v).evaluate(self._bound_values()))

    def _bound_values(self) -> dict:
        """Bound values; a dimension ended by a boolean bound has the extent it ran to."""
        ended = {e.bound: min(self.ends[e.var], e.maximum) for e in self.endings}
        return {b: ended.get(b.name, self.bounds[b.name]) for b in _bound_symbols(self.sdg)}

    def dimension_extents(self) -> dict[str, int]:
        """Per boolean-bounded dimension, how many points the last run computed."""
        return {e.var: min(self.ends[e.var], e.maximum) for e in self.endings}

    def _gather(self, store: dict, tid: TensorId, parts: list, prefix: tuple) -> Any:
        k = len(prefix)
        if k == len(parts):
            if prefix not in store:
                raise no_value_error(self.sdg, self.cfg, tid, prefix, self._executed)
            return store[prefix]
        p, rest = parts[k], parts[:k] + parts[k + 1:]
        if p is None:  # a dim the compiler dropped, read at a point: not in the key
            return self._gather(store, tid, rest, prefix)
        if isinstance(p, _Repeat):  # ... read by a slice: the same value, repeated
            return self.backend.stack([self._gather(store, tid, rest, prefix)] * p.n)
        if isinstance(p, list):
            return self.backend.stack([self._gather(store, tid, parts, prefix + (i,)) for i in p])
        return self._gather(store, tid, parts, prefix + (p,))

    def schedule_text(self) -> str:
        """The schedule as readable pseudo-Python, followed by the generated source; dims
        still named `d<k>`/`D<k>` are printed by the names the caller's code binds them to,
        as errors are (`in_user_names`; dim_names= and the parsed `(b, B), (t, T) =
        ctx.variables_and_bounds` already named the symbols themselves)."""
        names = {op.op_id: f"{op!r}" for op in self.sdg.topological()}
        dims = {op.op_id: tuple(v.name for v in op.domain.variables)
                for op in self.sdg.topological()}
        text = st.render(self.schedule.tree, names, dims=dims)
        return in_user_names(text + "\n# generated:\n" + self.generated.source, plain=True)

    def get_compilation_time_breakdown(self) -> dict[str, float]:
        return dict(self._timings)

    def compile_profile(self) -> dict[str, float]:
        return self.get_compilation_time_breakdown()

    def memory_stats(self) -> dict[str, int | None]:
        """Device bytes the stores hold now (live), the most they held (peak: all stores
        are counted when tracking is on — a cap is set or debug mode is on; else block and
        window stores only, and `peak_bytes` is None), the host pool and bytes swapped;
        of the fetched bytes, `prefetched_bytes` came back by the schedule's prefetches,
        iterations before their read, and `demand_fetched_bytes` at a read that found its
        point on the host (the plan was late, or the cap forced the point out)."""
        a = self.accountant
        live = a.live if self.tracked else self._untracked_live()
        return {"live_bytes": live, "peak_bytes": a.peak if self.tracked else None,
                "cap_bytes": a.cap, "host_live_bytes": a.host_live,
                "host_peak_bytes": a.host_peak, "swapped_bytes": a.swapped,
                "fetched_bytes": a.fetched, "prefetched_bytes": a.prefetched,
                "demand_fetched_bytes": a.demand_fetched}

    def memory_timeline(self) -> list[tuple[int, int]]:
        """(device live, host live) bytes after each step of the outermost loop of the
        last run (recorded when tracking is on)."""
        return list(self.accountant.timeline)

    def _untracked_live(self) -> int:
        """Bytes of the distinct storages the stores hold (views counted once)."""
        storage = storage_of(self.backend.name)
        seen: dict[int, int] = {}
        for store in self.stores.values():
            for x in store.values():
                k, n = storage(x)
                seen[k] = n
        return sum(seen.values())


def _block_range(store: StackedStore, parts: list, stack: Any) -> Any:
    """A read of consecutive points along a jax block store's dim (ints elsewhere) as one
    range read; None for any other read (gathered point by point)."""
    rng = [p for p in parts if isinstance(p, list)]
    if len(rng) != 1 or not all(isinstance(p, int | list) for p in parts):
        return None
    pts = rng[0]
    if not pts or pts != list(range(pts[0], pts[-1] + 1)):
        return None
    key = tuple((pts[0], pts[-1] + 1) if isinstance(p, list) else p for p in parts)
    try:
        return store.read_range(key, stack)
    except KeyError:  # a point not stored: the gather names it
        return None


@dataclass(frozen=True)
class _Repeat:
    """A slice of `n` points along a dim the compiler dropped from a tensor's domain."""

    n: int


def _bound_symbols(sdg: SDG) -> list[Any]:
    return [v.as_bound() for v in sdg.universe.variables]


def _checked(op: ops.Op, kernel: Kernel, sdg: SDG, be: Backend,
             bounds: dict[str, int]) -> Kernel:
    """Debug mode: check every kernel result against the inferred shape and dtype."""
    infos = [sdg.tensors[TensorId(op.op_id, k)] for k in range(op.num_outputs)]
    names = [v.name for v in op.domain.variables]

    def run(*args: Any) -> Any:
        out = kernel(*args)
        outs = out if op.num_outputs > 1 else (out,)
        for k, (x, info) in enumerate(zip(outs, infos)):
            got = be.shape_of(x)
            if info.shape.is_static():
                want = tuple(info.shape.as_static())
                if got != want:
                    raise ShapeError(
                        f"{naming.op_label(op, sdg.names)} computed output {k} of shape "
                        f"{got}, but its shape was inferred as {want} (dims {names})",
                        site=op.site,
                    )
            if be.dtype_name(x) != info.dtype.name:
                raise ShapeError(
                    f"{naming.op_label(op, sdg.names)} computed output {k} of dtype "
                    f"{naming.dtype_word(be.dtype_name(x))}, but its dtype was inferred as "
                    f"{naming.dtype_word(info.dtype)}",
                    site=op.site,
                )
        return out

    return run


__all__ = ["Executor", "PythonExecutor", "UndefinedPointError"]
