"""`ExecutionConfig`: every compiler/runtime switch of a compilation (API §4.2).
A plain dataclass so programs can copy it with `dataclasses.replace` and edit fields.
Which fields this Tempo implements, accepts as hints, or rejects at compile time:
`tempo.core.config_support.FIELDS`."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tempo.core.device import device
from tempo.core.dl_backend import DLBackendName
from tempo.core.dtype import dtypes
from tempo.core.errors import ConfigError
from tempo.core.errors import user_site as _tempo_site

KiB, MiB, GiB = 2**10, 2**20, 2**30

_DEFAULT_PATH = f"./runs/{datetime.datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}/"


def user_site() -> str:
    """The user's line, skipping dataclass-generated `__init__` code (file "<string>")."""
    import traceback

    for frame in reversed(traceback.extract_stack()[:-1]):
        if frame.filename == "<string>" and frame.name == "__init__":
            continue
        if "/tempo/core/" in frame.filename or "dataclasses.py" in frame.filename:
            continue
        return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return _tempo_site()


def get_default_path() -> str:
    """Run directory fixed at import, so every default config of a process shares it."""
    return _DEFAULT_PATH


# Flags test_cfg() turns off so every tensor stays stored and readable after execute().
_TEST_OFF = (
    "enable_dead_code_elim", "enable_broadcast_elim", "enable_constant_folding",
    "enable_duplicate_code_elim", "enable_algebraic_optimizer", "enable_domain_reduction",
    "enable_inplace_write", "enable_lazy_slice", "enable_vectorization",
    "enable_non_trivial_vectorization", "enable_incrementalization",
    "enable_statifying_incrementalization", "enable_fold_pads_into_storage",
    "enable_pad_mask_removal", "enable_dataflow_grouping", "enable_group_fusions",
    "enable_group_fissions", "enable_codegen_dataflows", "enable_codegen_dynamic_dataflows",
    "enable_codegen_thunk_warmup", "enable_device_assignment", "enable_donation_analysis",
    "enable_ast_promo", "enable_isolate_loop_conditions", "enable_custom_thunk_launchers",
    "enable_eval_symbol_launcher", "enable_hybrid_tensorstore", "enable_gc", "enable_swap",
    "enable_symbol_prealloc_store", "visualize_pipeline_stages", "visualize_debug_stages",
    "render_schedule", "torch_pinned_memory_enabled", "enable_parallel_block_detection",
    "enable_compiled_loops",
)


@dataclass
class ExecutionConfig:
    """Compiler pipeline toggles, memory policy, backend and device of one compilation.
    Constructing it or setting a field also sets `dtypes.default_int` for its backend.

    A flag works or raises (config_support.FIELDS has each field's class and note):
    features not built raise UnsupportedError at compile when set away from their default
    (enable_conservative_grouping, enable_group_fissions, enable_codegen_dynamic_dataflows,
    profile_codegen_kernels, enable_exec_op_profiling, exec_op_profiling_sync_after_each,
    num_executor_pool_workers, enable_parallel_block_detection,
    torch_pinned_prealloc_size_bytes, individualize_consts_smaller_than_x_bytes,
    min_block_store_tensor_point_size, M). Hints, on by default, ask for an optimisation
    not built where available (nowhere yet); their False is what runs:
    enable_fold_pads_into_storage, enable_pad_mask_removal, enable_codegen_thunk_warmup,
    enable_device_assignment, enable_donation_analysis, enable_ast_promo,
    enable_isolate_loop_conditions, enable_eval_symbol_launcher,
    enable_symbol_prealloc_store."""

    # General
    path: str = field(default_factory=get_default_path)
    dev: str = "gpu"
    backend: str = "jax"
    torch_compilation_backend: str = "compile"
    # Optimizer toggles
    enable_dead_code_elim: bool = True
    enable_broadcast_elim: bool = True
    enable_constant_folding: bool = True
    enable_duplicate_code_elim: bool = True
    enable_algebraic_optimizer: bool = True
    enable_domain_reduction: bool = True
    enable_inplace_write: bool = True
    enable_lazy_slice: bool = True
    algebraic_optims_to_disable: Iterable[str] = ()
    individualize_consts_smaller_than_x_bytes: int = 250 * MiB
    # Vectorization
    enable_vectorization: bool = True
    enable_non_trivial_vectorization: bool = True
    reject_vec_groups_smaller_than: int = 3
    reject_vec_groups_with_external_deps_ratio_greater_than: float = 0.5
    # Incrementalization
    enable_incrementalization: bool = True
    incrementalization_percentile: int = 20
    incrementalize_mem_threshold: int = 16 * GiB
    enable_statifying_incrementalization: bool = True
    inc_statify_block_size: int = 256
    enable_fold_pads_into_storage: bool = True
    enable_pad_mask_removal: bool = True
    # Dataflow grouping / codegen (`enable_fusion`: the one switch for fused regions, with
    # the grouping pass's own flag; not in the original's config, named by issue 10)
    enable_fusion: bool = True
    enable_dataflow_grouping: bool = True
    enable_conservative_grouping: bool = False
    min_dataflow_group_size: int = 1
    max_dataflow_group_size: int = 200_000
    enable_group_fusions: bool = True
    enable_group_fissions: bool = False
    enable_codegen_dataflows: bool = True
    enable_codegen_dynamic_dataflows: bool = False
    enable_codegen_thunk_warmup: bool = True
    # Analyses / schedule
    enable_device_assignment: bool = True
    enable_donation_analysis: bool = True
    enable_ast_promo: bool = True
    enable_isolate_loop_conditions: bool = True
    runtime_tensor_prefetch_amount_point: int = 10
    runtime_tensor_prefetch_amount_block: int = 5
    # Executor / memory
    enable_custom_thunk_launchers: bool = True
    enable_eval_symbol_launcher: bool = True
    enable_hybrid_tensorstore: bool = True
    enable_gc: bool = True
    gc_bytes_min: int = 0
    enable_swap: bool = False
    swap_bytes_min: int = 32 * MiB
    enable_symbol_prealloc_store: bool = True
    enable_point_store_fallback: bool = True
    min_block_store_tensor_point_size: int = int(0.8 * MiB)
    # Debug / profiling
    deterministic: bool = False
    seed: int = 0
    visualize_pipeline_stages: bool = False
    visualize_debug_stages: bool = True
    validate_pipeline_stages: bool = False
    render_schedule: bool = False
    profile_codegen_kernels: bool = False
    executor_debug_mode: bool = False
    enable_exec_op_profiling: bool = False
    exec_op_profiling_sync_after_each: bool = False
    # Optional primitives
    enable_index_ops: bool = True
    enable_matmul_ops: bool = True
    # Misc
    default_dim_upper_bound_size: int = 500
    enable_x64: bool = True
    num_executor_pool_workers: int | None = None
    enable_parallel_block_detection: bool = False
    torch_pinned_prealloc_size_bytes: int = 0
    torch_pinned_memory_enabled: bool = True
    M: int = 20_000
    # Ours (API §7 fix 13): stores raise when live device bytes would exceed this.
    device_memory_cap_bytes: int | None = None
    # Ours (ARCHITECTURE §7): on jax, static fusible loops run as one jax.lax.scan.
    enable_compiled_loops: bool = True

    def __post_init__(self) -> None:
        self.validate()
        self.apply_default_int()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("backend", "dev") and "backend" in self.__dict__:
            _check_backend_dev(value if name == "backend" else self.backend,
                               value if name == "dev" else self.dev)
        object.__setattr__(self, name, value)
        if "backend" in self.__dict__ and _is_initialised(self):
            self.apply_default_int()

    def apply_default_int(self) -> None:
        """torch indexes with int64; jax and numpy keep int32 (API §4.2 side effect)."""
        torch = self.get_canonical_backend_name() == DLBackendName.TORCH
        dtypes.default_int = dtypes.int64 if torch else dtypes.int32

    def validate(self) -> None:
        """Reject combinations no pipeline can run, naming the offending fields."""
        _check_backend_dev(self.backend, self.dev)
        if (self.enable_statifying_incrementalization and self.enable_fold_pads_into_storage
                and not self.enable_hybrid_tensorstore):
            raise ConfigError(
                "enable_statifying_incrementalization with enable_fold_pads_into_storage "
                "needs enable_hybrid_tensorstore=True", site=user_site())
        positive = ("inc_statify_block_size", "min_dataflow_group_size",
                    "max_dataflow_group_size", "default_dim_upper_bound_size", "M")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}",
                                  site=user_site())
        if self.min_dataflow_group_size > self.max_dataflow_group_size:
            raise ConfigError("min_dataflow_group_size exceeds max_dataflow_group_size",
                              site=user_site())
        if not 0 <= self.incrementalization_percentile <= 100:
            raise ConfigError("incrementalization_percentile must be in [0, 100]",
                              site=user_site())
        cap = self.device_memory_cap_bytes
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ConfigError(f"device_memory_cap_bytes must be None or an int >= 0, got {cap!r}",
                              site=user_site())

    # ---- queries ------------------------------------------------------------------
    def writes_artefacts(self) -> bool:
        """Compile artefacts (profiles, rendered graphs) go to `path` only when the user
        asked: they set `path`, or turned on a rendering/profiling flag (API §7 fix 15)."""
        return self.path != get_default_path() or any(getattr(self, f) for f in _ARTEFACT_FLAGS)

    def get_canonical_backend_name(self) -> DLBackendName:
        return DLBackendName.from_(self.backend)

    def can_lazy_slice(self) -> bool:
        """Lazy slices are views into stores; jax arrays have no views."""
        return self.enable_lazy_slice and self.get_canonical_backend_name() != DLBackendName.JAX

    def can_inplace_write(self) -> bool:
        """In-place writes mutate buffers; jax arrays are immutable."""
        return (self.enable_inplace_write
                and self.get_canonical_backend_name() != DLBackendName.JAX)

    # ---- presets ------------------------------------------------------------------
    @staticmethod
    def default() -> ExecutionConfig:
        """What `TempoContext(num_dims=n)` uses without a config: a device that exists and
        the backend that compiles fastest there (torch: no jit warm-up), API §7 fix 15."""
        return ExecutionConfig(dev="gpu" if gpu_present() else "cpu", backend="torch")

    @staticmethod
    def test_cfg() -> ExecutionConfig:
        """CPU/torch, deterministic, every optimisation off: all tensors stay readable."""
        overrides: dict[str, Any] = {name: False for name in _TEST_OFF}
        overrides.update(path="./test_run/", dev="cpu", backend="torch", deterministic=True,
                         executor_debug_mode=True, validate_pipeline_stages=True,
                         enable_matmul_ops=True, enable_index_ops=True)
        return ExecutionConfig(**overrides)

    @staticmethod
    def debug_cfg() -> ExecutionConfig:
        """CPU/torch with optimisations on, every stage rendered, small statify blocks."""
        return ExecutionConfig(dev="cpu", backend="torch", deterministic=True,
                               visualize_pipeline_stages=True, visualize_debug_stages=True,
                               validate_pipeline_stages=True, render_schedule=True,
                               inc_statify_block_size=10)


_LAST_FIELD = dataclasses.fields(ExecutionConfig)[-1].name

# Flags that ask for compile artefacts under `path` even when it was left at its default.
_ARTEFACT_FLAGS = ("visualize_pipeline_stages", "render_schedule", "profile_codegen_kernels",
                   "enable_exec_op_profiling")


def gpu_present() -> bool:
    """An NVIDIA GPU with a loaded driver, seen without importing a backend."""
    gpus = "/proc/driver/nvidia/gpus"
    return (os.path.isdir(gpus) and bool(os.listdir(gpus))) or os.path.exists("/dev/nvidia0")


def _is_initialised(cfg: ExecutionConfig) -> bool:
    return _LAST_FIELD in cfg.__dict__


def _check_backend_dev(backend: Any, dev: Any) -> None:
    DLBackendName.from_(backend)
    device.from_(dev)


@dataclass
class Tuning:
    """Internal thresholds that act like configuration but are not ExecutionConfig fields
    (API.md fixes those): each was measured on this 2-core CPU, and its docstring says
    how. Every field is read where it acts, when it acts, so an experiment overrides it
    here and nowhere else: `with tuned(fold_bytes=0): ...` (or assign to `TUNING`)."""

    swap_headroom: int = 8
    """Under a device cap, the schedule's offloads run only once less than cap /
    swap_headroom is free (runtime/swap.py `Swapper.pressed`). Below that an offload only
    moves bytes the device has room for; the margin is room for the charges that follow.
    E7 (cap 64 MiB): offloading always moved TD(n)'s idle Adam moments, a few MiB, at every
    step; with cap/8 TD(1/8/64) swap 0 bytes and MC swaps 45.5 MiB/iter (results/e7)."""

    grouping_effort: int = 250_000
    """Search effort (ops visited plus path states) one grouping pass may spend deciding
    whether joins would close a cycle (compiler/passes/grouping_cycles.py `Work`); joins
    asked after it is spent are refused (safe: less fusion). The compile bench's
    programs spend at most ~90k (lstm_bptt_T64 87k, ppo 76k, most 0); accept5b's Llama
    fine-tune over (i, layer, t) spent 1.37M: 7.1 of its 8 CPU-s compile. At ~5 us a
    unit the cap is ~1.3 s."""

    isl_schedule_cpu_s: float | None = 60.0
    """CPU seconds isl's scheduler may spend on a program the structural scheduler cannot
    order (schedule/isl_worker.py; None: no limit); then compile raises ScheduleTimeError
    naming the ops it could not order. isl's search grows much faster than the program:
    accept6 c13 (PPO epochs over (i, e)) took 107 s at B = 2 and did not finish in 55
    minutes at B = 64 before merge_fixed_reads let the structural scheduler order it; its
    isl path in the tests (test_isl_ast_order, B = 2) takes ~25 CPU-s, the slowest isl
    fallback in the suite. The compile bench's --before path sets its own limit."""

    fold_bytes: int = 256 << 10
    """Largest excursion `codegen_charges.fold` merges into one reservation (without a
    cap). A charge costs more than a decode step's small kernels (attribute reads and
    writes on the accountant, a comparison); reserving a few hundred KiB for a statement
    list changes nothing a cap or the swap could act on, and large values keep their exact
    charges (GPT-2 per-call overhead 13.1 -> 12 us with folding, bench/call_overhead)."""

    compaction_slack_share: int = 4
    """A compacting window store of W points keeps W + ceil(W / share) slots
    (store_choice.compaction_slack): it moves W-1 points every slack+1 writes, so W/4
    costs about 4/slack backend calls per write for 25% more memory than the window
    (untiled window slices; rings of exactly W serve point and tiled reads)."""

    payback_s: float = 60.0
    """A region marked for torch.compile runs eagerly until its eager calls have taken
    this many seconds (runtime/regions.py `after_payback`). The compile costs ~4.5 CPU-s
    and its first call ~10-15 s more (E5 learner, 64x64x64-element regions) and saves
    10-60% of a call past 2^18 elements: at a saving of 1/4 it pays back after ~60 s of
    eager time. Compiling at codegen made E5 compile in ~6 CPU-s (1.5 without) and its
    first run ~14 s longer for a ~10% faster learner."""

    gather_point_bytes: int = 64 << 10
    """Vectorisation does not gather (stack over the batched dim) a looping producer's
    points for an op keeping at most half of each when a point has this many bytes
    (compiler/passes/vectorize_plan.py): the stack copies whole points to save one call
    per point, and a call (~5 us with dispatch) costs about as much as copying 64 KiB."""

    gather_bytes: int = 1 << 20
    """... nor when the whole gather has this many: it keeps all D points alive until the
    batched op runs, where the loop keeps the parts (E6: 128 env steps of 16 envs x 48 KiB
    stacked to read a reward each)."""

    torch_compile_min_elements: int = 1 << 18
    """torch.compile only regions whose largest value has at least this many elements per
    point (compiler/passes/grouping.py `compiled`). Measured on this CPU (torch 2.13,
    inductor, one thread, 2 cores at load 5-7), a region of Linear(64)+tanh+5 elementwise
    ops and a chain of 8 elementwise ops, compiled vs eager min time per call: 64..65536
    elements 1.3-1.8x slower compiled (dispatch through the compiled wrapper costs more
    than the kernels save); 262144: 0.62x (mlp) / 0.98x (elementwise); 1M: 0.56x / 0.35x.
    Compiling costs ~0.5 CPU-s per region and shape, plus ~8 CPU-s for the first
    torch.compile of a process, so only regions past the crossover."""

    swap_block_share: int = 32
    """Under a device cap with swapping, a block store's block holds at most cap /
    swap_block_share bytes (runtime/executor/executor.py `_store_kinds`). Blocks are what
    moves to the host, and a learner reading a range fetches several at once, so a block
    must be a small part of the cap for the fetched blocks and the live values to fit
    beside each other. Chosen, not measured: a 32nd leaves room for a few tensors' fetched
    blocks; smaller blocks mean more swap calls per range read."""

    vec_cap_share: float = 0.5
    """Under device_memory_cap_bytes, a vectorised group may hold at most this share of
    the cap over all D points of its dim (compiler/passes/vectorize_plan.py
    `_held_bytes`): the gathered points of looping producers, the batched results that
    looping readers take apart, and the largest member's batched inputs and outputs, of
    which the loop holds one point (or one window) at a time. The rest of the cap is for
    what the program keeps alive anyway (weights, the loop's own points), which the pass
    does not know. Chosen, not measured."""

    fold_limit_bytes: int = 1 << 20
    """Constant folding keeps an op whose result has more bytes than this
    (compiler/passes/constant_folding.py): a folded value is baked into the program and
    held for the whole run, where a fill or arange of that size is one kernel per use.
    Chosen, not measured: 1 MiB keeps every small table and mask folded."""

    min_product_elements: int = 4096
    """A `sum(mul(a, b))` becomes a matmul only when its product has at least this many
    elements (compiler/passes/vectorize_contract.py): below it the two kernels of mul +
    sum cost less than the up to six launches of the matmul form with its layout ops."""


TUNING = Tuning()


@contextlib.contextmanager
def tuned(**fields: Any) -> Iterator[Tuning]:
    """`TUNING` with `fields` replaced inside the block (a TypeError names an unknown
    field), restored after."""
    new = dataclasses.replace(TUNING, **fields)
    old = dataclasses.replace(TUNING)
    for f in dataclasses.fields(Tuning):
        setattr(TUNING, f.name, getattr(new, f.name))
    try:
        yield TUNING
    finally:
        for f in dataclasses.fields(Tuning):
            setattr(TUNING, f.name, getattr(old, f.name))
