"""What each `ExecutionConfig` field does in this Tempo, and the compile-time check that
keeps the house rule "no config flag silently does nothing" (API §4.2 lists the fields of
the original system; not every feature behind them is built here).

Every field is in exactly one class (tests/core/test_configs.py checks the table covers
every field, so a new field cannot be added without deciding its class):

* IMPLEMENTED: read by the compiler or runtime and does what API §4.2 says.
* UNSUPPORTED: the feature is not built: a switch defaulting to off, or a knob of a
  feature not built (its default is accepted, as every default config carries it). Any
  other value raises `UnsupportedError` at `ctx.compile`, naming the field, the compile
  line and the fix.
* HINT: a switch, on by default, of an optimisation that is not built: True asks for it
  "where available" (nowhere yet) and False turns it off, which is what runs either way,
  so both values are honoured and run the same program. Only boolean switches defaulting
  to True may be HINTs (tests/core/test_configs.py checks): a knob whose other values
  would ask for something we do not do is UNSUPPORTED instead.

HINT fields (False honoured; True is the default and asks for a feature not built):

=====================================================  =======================================
field                                                  what is (not) implemented
=====================================================  =======================================
enable_fold_pads_into_storage, enable_pad_mask_removal pads are never copied into stores,
                                                       padded blocks are always masked
enable_codegen_thunk_warmup                            no warm-up: regions compile at first call
enable_device_assignment                               every op runs on `dev`
enable_donation_analysis                               no buffer donation (jax)
enable_ast_promo                                       frees are per point, never promoted
enable_isolate_loop_conditions                         loop conditions are not isolated
enable_eval_symbol_launcher                            one generic op launcher
enable_symbol_prealloc_store                           symbols are evaluated per point
=====================================================  =======================================

Knobs of features not built (UNSUPPORTED, any value but the default raises):
`individualize_consts_smaller_than_x_bytes` (constants are shared, never duplicated),
`min_block_store_tensor_point_size` (block stores follow reads, not sizes), `M` (the
scheduler needs no big-M constant), besides the switches defaulting to off.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

from tempo.core.configs import ExecutionConfig, gpu_present
from tempo.core.device import device
from tempo.core.errors import UnsupportedError


class Support(enum.Enum):
    IMPLEMENTED = "implemented"
    UNSUPPORTED = "raises unless left at its default"
    HINT = "accepted as a hint"


@dataclass(frozen=True)
class FieldSupport:
    """A field's class and one line: what it does, or which feature is missing."""

    support: Support
    note: str


def _entries(support: Support, note: str, *names: str) -> dict[str, FieldSupport]:
    return {n: FieldSupport(support, note) for n in names}


_I, _U, _H = Support.IMPLEMENTED, Support.UNSUPPORTED, Support.HINT
_GROUPING = ("conservative grouping and group fission are not built (the grouping pass "
             "joins every connected point-to-point group)")

FIELDS: dict[str, FieldSupport] = {
    **_entries(_I, "run directory of compile artefacts", "path"),
    **_entries(_I, "device and runtime backend", "dev", "backend"),
    **_entries(_I, "switches its pass of compiler/pipeline.py", "enable_dead_code_elim",
               "enable_broadcast_elim", "enable_constant_folding",
               "enable_duplicate_code_elim", "enable_algebraic_optimizer",
               "enable_domain_reduction"),
    **_entries(_I, "algebraic rules to skip", "algebraic_optims_to_disable"),
    **_entries(_I, "block stores write points in place (never on jax)", "enable_inplace_write"),
    **_entries(_I, "slice reads of block stores are views (never on jax)", "enable_lazy_slice"),
    **_entries(_I, "block stores for tensors read through slices", "enable_hybrid_tensorstore"),
    **_entries(_I, "points per block of a block store (blocks are allocated as written) and "
               "per static block of a tiled read", "inc_statify_block_size"),
    **_entries(_I, "the statify pass: attention over a read whose length grows with a loop "
               "variable runs over static blocks (padded, masked, online softmax)",
               "enable_statifying_incrementalization"),
    **_entries(_I, "frees each point after its last read", "enable_gc"),
    **_entries(_I, "points smaller than this many bytes are never freed", "gc_bytes_min"),
    **_entries(_I, "CPU kernels are deterministic for a seed; a GPU raises", "deterministic"),
    **_entries(_I, "seeds every backend's generator and data shuffling", "seed"),
    **_entries(_I, "writes the recorded and optimised graphs (DOT) under path",
               "visualize_pipeline_stages"),
    **_entries(_I, "checks the graph after every pass, and the schedule's order against "
               "every read and free", "validate_pipeline_stages"),
    **_entries(_I, "writes executor.schedule_text() to <path>/schedule.txt", "render_schedule"),
    **_entries(_I, "checks every op's outputs against its inferred shapes", "executor_debug_mode"),
    **_entries(_I, "IndexSelect/IndexAdd ops, else gather/scatter", "enable_index_ops"),
    **_entries(_I, "MatMul op, else mul + sum", "enable_matmul_ops"),
    **_entries(_I, "jax's 64-bit types (torch and numpy always have them)", "enable_x64"),
    **_entries(_I, "stores raise past this many live bytes", "device_memory_cap_bytes"),
    **_entries(_U, _GROUPING, "enable_conservative_grouping", "enable_group_fissions"),
    **_entries(_U, "code generation of dataflows is not built",
               "enable_codegen_dynamic_dataflows"),
    **_entries(_I, "the schedule offloads points idle between the stage that makes them and "
               "a later stage that reads them to a host pool and fetches them before the "
               "read; under device_memory_cap_bytes the runtime also offloads the least "
               "recently stored points and complete blocks of block stores rather than "
               "fail (window stores are never swapped); under a cap a block store's blocks "
               "hold at most a 32nd of the cap", "enable_swap"),
    **_entries(_I, "points smaller than this are never swapped", "swap_bytes_min"),
    **_entries(_I, "the schedule prefetches a swapped point this many iterations of the "
               "reader's loop before its read (0: fetched at the read)",
               "runtime_tensor_prefetch_amount_point"),
    **_entries(_I, "host copies of swapped points are pinned on a GPU (False: pageable, "
               "copied synchronously); no effect on the CPU", "torch_pinned_memory_enabled"),
    **_entries(_I, "the schedule prefetches a swapped block this many iterations of the "
               "reader's loop before its read (0: fetched at the read)",
               "runtime_tensor_prefetch_amount_block"),
    **_entries(_U, "pinned host copies are allocated per swapped point, not from a "
               "preallocated pool", "torch_pinned_prealloc_size_bytes"),
    **_entries(_I, "False: every tensor whose reads a window store can serve (trailing "
               "windows and points within W of the producer's step, read in its loop) gets "
               "one, even where it saves no memory and for tensors read only at points; "
               "True: window stores only where they hold fewer points than a block store "
               "(torch and numpy; jax writes no array in place, and its point stores, freed "
               "after each point's last read, already hold only a window's points: both "
               "values give the same bounded stores there)",
               "enable_point_store_fallback"),
    **_entries(_U, "no generated kernels to profile", "profile_codegen_kernels"),
    **_entries(_U, "per-op executor profiling is not built (tempo.utils has TorchProfiler, "
               "JaxProfiler and Profiler)", "enable_exec_op_profiling",
               "exec_op_profiling_sync_after_each"),
    **_entries(_I, "the most points of a dimension whose bound is given as a bare boolean "
               "tensor (`ctx.compile({T: done})`; `{T: (max, done)}` sets it per bound)",
               "default_dim_upper_bound_size"),
    **_entries(_U, "the executor runs on one thread, no worker pool", "num_executor_pool_workers"),
    **_entries(_U, "parallel block detection is not built", "enable_parallel_block_detection"),
    **_entries(_I, "on jax, each innermost schedule loop whose iterations run pure Tempo ops "
               "and regions with exact reads runs as one jax.lax.scan per run of iterations "
               "with constant conditions (recurrence reads x[t-k] carried, others stacked; "
               "runtime/loops.py); loops that do not qualify, and every loop on torch and "
               "numpy, stay Python loops", "enable_compiled_loops"),
    **_entries(_I, "'compile': torch.compile for large fused regions (enable_group_fusions); "
               "'eager': never", "torch_compilation_backend"),
    **_entries(_U, "constants are shared, never duplicated per reader",
               "individualize_consts_smaller_than_x_bytes"),
    **_entries(_I, "switches the vectorisation pass: dims no cycle carries become a leading "
               "batch dim of groups of ops (a UDF source batches only with its "
               "lazy_vectorized_version)", "enable_vectorization"),
    **_entries(_I, "also batches reads of other points of the dim: shifted reads (x[t-1]), "
               "one-point reads (x[T-1]) and recurrences whose branches select along it "
               "(boundaries), as slices, index selects and concatenations",
               "enable_non_trivial_vectorization"),
    **_entries(_I, "groups of fewer ops keep their loops", "reject_vec_groups_smaller_than"),
    **_entries(_I, "groups whose share of reads gathered from ops that keep their loop "
               "exceeds this keep their loops",
               "reject_vec_groups_with_external_deps_ratio_greater_than"),
    **_entries(_I, "switches the incrementalisation passes: a tensor above "
               "incrementalize_mem_threshold bytes is computed in blocks of rows over a new "
               "dimension (sums over the rows add up per-block sums), and a sum over a "
               "temporal dim whose per-step term reads a bounded window ahead (a gradient "
               "summed over an episode with n-step targets) becomes a running sum inside "
               "its loop (passes/accumulate.py)", "enable_incrementalization"),
    **_entries(_I, "tensors above this many bytes are computed in blocks",
               "incrementalize_mem_threshold"),
    **_entries(_I, "each block holds at most this percent of the rows (0: one row)",
               "incrementalization_percentile"),
    **_entries(_H, "tiled reads use whole store blocks as they are: no pad is copied into a "
               "store, and every padded block is masked", "enable_fold_pads_into_storage",
               "enable_pad_mask_removal"),
    **_entries(_I, "switches the grouping pass: connected ops over one domain that read each "
               "other point to point run as one fused region (one call, intermediates never "
               "stored)", "enable_dataflow_grouping"),
    **_entries(_I, "fused regions on or off: False skips the grouping pass whatever "
               "enable_dataflow_grouping says", "enable_fusion"),
    **_entries(_I, "regions have at least this many ops (and always two)",
               "min_dataflow_group_size"),
    **_entries(_I, "regions have at most this many ops", "max_dataflow_group_size"),
    **_entries(_I, "the backend compiles each region with static input shapes: jax.jit on jax, "
               "torch.compile on torch for regions of at least "
               "Tuning.torch_compile_min_elements elements (else one eager function)",
               "enable_group_fusions"),
    **_entries(_I, "a region's body is generated straight-line Python (else interpreted)",
               "enable_codegen_dataflows"),
    **_entries(_H, "no warm-up calls: a compiled region compiles at its first call",
               "enable_codegen_thunk_warmup"),
    **_entries(_H, "every op runs on the configured device", "enable_device_assignment"),
    **_entries(_H, "no buffer donation", "enable_donation_analysis"),
    **_entries(_H, "frees are per point, never promoted to blocks", "enable_ast_promo"),
    **_entries(_H, "loop conditions are not isolated", "enable_isolate_loop_conditions"),
    **_entries(_I, "generated code keeps values consumed where they are made in locals "
               "(no store write, read or free)", "enable_custom_thunk_launchers"),
    **_entries(_H, "one generic op launcher", "enable_eval_symbol_launcher"),
    **_entries(_H, "symbols are evaluated per point", "enable_symbol_prealloc_store"),
    **_entries(_U, "block stores follow the reads, not tensor sizes",
               "min_block_store_tensor_point_size"),
    **_entries(_I, "with visualize_pipeline_stages, also writes the graph after every pass "
               "that changed it (sdg_pass_<k>_<name>.dot under path)", "visualize_debug_stages"),
    **_entries(_U, "the scheduler needs no big-M constant (bounds are isl parameters)", "M"),
}


TORCH_COMPILATION_BACKENDS = ("compile", "eager")


def check_supported(cfg: ExecutionConfig, site: str) -> None:
    """Raise `UnsupportedError` at compile time for every field set to a value this Tempo
    cannot honour, so a ported program learns at its compile line, not from its results."""
    defaults = {f.name: _default(f) for f in dataclasses.fields(ExecutionConfig)}
    bad = [f"{name}={getattr(cfg, name)!r}: {entry.note}; leave it at its default "
           f"({defaults[name]!r})" for name, entry in FIELDS.items()
           if entry.support is Support.UNSUPPORTED and getattr(cfg, name) != defaults[name]]
    if cfg.torch_compilation_backend not in TORCH_COMPILATION_BACKENDS:
        bad.append(f"torch_compilation_backend={cfg.torch_compilation_backend!r}: one of "
                   f"{', '.join(map(repr, TORCH_COMPILATION_BACKENDS))}")
    if not cfg.enable_point_store_fallback and not cfg.enable_gc:
        bad.append("enable_point_store_fallback=False: window stores need enable_gc=True "
                   "(they keep only the points not yet freed); leave it True")
    if cfg.deterministic and _on_gpu(cfg):
        bad.append("deterministic=True on a GPU: Tempo does not switch the backends to "
                   "deterministic GPU kernels; run with dev='cpu' or deterministic=False")
    if bad:
        lines = "\n  ".join(bad)
        raise UnsupportedError("ExecutionConfig asks for features this Tempo does not "
                               f"implement (API §4.2 lists what is built):\n  {lines}",
                               site=site)


def _default(f: dataclasses.Field) -> object:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _on_gpu(cfg: ExecutionConfig) -> bool:
    return device.from_(cfg.dev).is_gpu and gpu_present()
