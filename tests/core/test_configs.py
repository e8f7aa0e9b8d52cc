"""ExecutionConfig: every API §4.2 field and default, presets, validation, and the
`dtypes.default_int` side effect of constructing or editing a config."""

from __future__ import annotations

import dataclasses

import pytest

from tempo.core import configs
from tempo.core.config_support import FIELDS, Support
from tempo.core.configs import ExecutionConfig, get_default_path
from tempo.core.dl_backend import DLBackendName
from tempo.core.dtype import dtypes
from tempo.core.errors import ConfigError, TempoError, UnsupportedError

MiB, GiB = 2**20, 2**30

DEFAULTS = {
    "dev": "gpu", "backend": "jax", "torch_compilation_backend": "compile",
    "enable_dead_code_elim": True, "enable_broadcast_elim": True,
    "enable_constant_folding": True, "enable_duplicate_code_elim": True,
    "enable_algebraic_optimizer": True, "enable_domain_reduction": True,
    "enable_inplace_write": True, "enable_lazy_slice": True, "algebraic_optims_to_disable": (),
    "individualize_consts_smaller_than_x_bytes": 250 * MiB,
    "enable_vectorization": True, "enable_non_trivial_vectorization": True,
    "reject_vec_groups_smaller_than": 3,
    "reject_vec_groups_with_external_deps_ratio_greater_than": 0.5,
    "enable_incrementalization": True, "incrementalization_percentile": 20,
    "incrementalize_mem_threshold": 16 * GiB, "enable_statifying_incrementalization": True,
    "inc_statify_block_size": 256, "enable_fold_pads_into_storage": True,
    "enable_pad_mask_removal": True, "enable_dataflow_grouping": True,
    "enable_conservative_grouping": False, "min_dataflow_group_size": 1,
    "max_dataflow_group_size": 200_000, "enable_group_fusions": True,
    "enable_group_fissions": False, "enable_codegen_dataflows": True,
    "enable_codegen_dynamic_dataflows": False, "enable_codegen_thunk_warmup": True,
    "enable_device_assignment": True, "enable_donation_analysis": True,
    "enable_ast_promo": True, "enable_isolate_loop_conditions": True,
    "runtime_tensor_prefetch_amount_point": 10, "runtime_tensor_prefetch_amount_block": 5,
    "enable_custom_thunk_launchers": True, "enable_eval_symbol_launcher": True,
    "enable_hybrid_tensorstore": True, "enable_gc": True, "gc_bytes_min": 0,
    "enable_swap": False, "swap_bytes_min": 32 * MiB, "enable_symbol_prealloc_store": True,
    "enable_point_store_fallback": True, "min_block_store_tensor_point_size": int(0.8 * MiB),
    "deterministic": False, "seed": 0, "visualize_pipeline_stages": False,
    "visualize_debug_stages": True, "validate_pipeline_stages": False,
    "render_schedule": False, "profile_codegen_kernels": False, "executor_debug_mode": False,
    "enable_exec_op_profiling": False, "exec_op_profiling_sync_after_each": False,
    "enable_index_ops": True, "enable_matmul_ops": True, "default_dim_upper_bound_size": 500,
    "enable_x64": True, "num_executor_pool_workers": None,
    "enable_parallel_block_detection": False, "torch_pinned_prealloc_size_bytes": 0,
    "torch_pinned_memory_enabled": True, "M": 20_000, "device_memory_cap_bytes": None,
    "enable_compiled_loops": True,
}
# Fields beyond API §4.2, each named by an issue: adding one is allowed, renaming or
# dropping an API field is not.
EXTENSIONS = {"enable_fusion": True}


@pytest.fixture(autouse=True)
def _restore_default_int():
    old = dtypes.default_int
    yield
    dtypes.default_int = old


def test_every_field_and_default() -> None:
    cfg = ExecutionConfig()
    names = {f.name for f in dataclasses.fields(ExecutionConfig)}
    assert names == set(DEFAULTS) | set(EXTENSIONS) | {"path"}
    for name, want in {**DEFAULTS, **EXTENSIONS}.items():
        assert getattr(cfg, name) == want, name
    assert cfg.path == get_default_path()
    assert get_default_path().startswith("./runs/") and get_default_path().endswith("/")
    assert ExecutionConfig().path == cfg.path  # computed once, at import


def test_default_runs_where_it_can_and_writes_nothing_unasked() -> None:
    """No config (API §7 fix 15): a device that exists, torch there, no ./runs/ artefacts."""
    from tempo.api.tempo_context_manager import DEFAULT_EXEC_CFG
    from tempo.core.configs import gpu_present

    for cfg in (ExecutionConfig.default(), DEFAULT_EXEC_CFG):
        assert cfg.dev == ("gpu" if gpu_present() else "cpu") and cfg.backend == "torch"
        assert not cfg.writes_artefacts()
    assert dataclasses.replace(ExecutionConfig.default(), path="/tmp/x/").writes_artefacts()
    assert dataclasses.replace(ExecutionConfig.default(), render_schedule=True).writes_artefacts()


def test_test_cfg() -> None:
    cfg = ExecutionConfig.test_cfg()
    assert (cfg.path, cfg.dev, cfg.backend) == ("./test_run/", "cpu", "torch")
    assert cfg.deterministic and cfg.executor_debug_mode and cfg.validate_pipeline_stages
    assert cfg.enable_matmul_ops and cfg.enable_index_ops
    assert not cfg.torch_pinned_memory_enabled
    # the switches the pipeline reads (the others are API-only fields: see the test above)
    for name in ("enable_dead_code_elim", "enable_gc", "enable_hybrid_tensorstore",
                 "enable_constant_folding", "enable_algebraic_optimizer",
                 "enable_duplicate_code_elim", "enable_domain_reduction",
                 "enable_broadcast_elim"):
        assert getattr(cfg, name) is False, name
    assert not cfg.can_lazy_slice() and not cfg.can_inplace_write()


def test_debug_cfg() -> None:
    cfg = ExecutionConfig.debug_cfg()
    assert (cfg.dev, cfg.backend, cfg.inc_statify_block_size) == ("cpu", "torch", 10)
    assert cfg.enable_dead_code_elim and cfg.enable_vectorization and cfg.enable_gc
    assert cfg.visualize_pipeline_stages and cfg.visualize_debug_stages


def test_validation_statify_pads_without_hybrid_store() -> None:
    with pytest.raises(ConfigError) as info:
        ExecutionConfig(enable_hybrid_tensorstore=False)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TempoError)
    assert "enable_hybrid_tensorstore" in str(info.value)
    assert "test_configs.py" in str(info.value)  # names the user's line
    ExecutionConfig(enable_hybrid_tensorstore=False, enable_fold_pads_into_storage=False)
    ExecutionConfig(enable_hybrid_tensorstore=False, enable_statifying_incrementalization=False)
    with pytest.raises(ValueError):
        dataclasses.replace(ExecutionConfig.default(), enable_hybrid_tensorstore=False)


@pytest.mark.parametrize("kw", [{"backend": "tensorflow"}, {"dev": "tpu"}, {"dev": "gpu:x"},
                                {"inc_statify_block_size": 0},
                                {"device_memory_cap_bytes": -1},
                                {"device_memory_cap_bytes": 1.5}])
def test_invalid_values_raise(kw: dict) -> None:
    with pytest.raises(ConfigError):
        ExecutionConfig(**kw)


def test_setting_unknown_backend_raises() -> None:
    cfg = ExecutionConfig.test_cfg()
    with pytest.raises(ConfigError):
        cfg.backend = "mxnet"
    assert cfg.backend == "torch"


@pytest.mark.parametrize("backend,want", [("torch", "int64"), ("PyTorch", "int64"),
                                          ("jax", "int32"), ("xla", "int32"),
                                          ("numpy", "int32"), ("np", "int32")])
def test_default_int_follows_backend_on_construction(backend: str, want: str) -> None:
    dtypes.default_int = dtypes.int8
    ExecutionConfig(backend=backend)
    assert dtypes.default_int == getattr(dtypes, want)


def test_default_int_follows_backend_on_setattr_and_replace() -> None:
    cfg = ExecutionConfig(backend="jax")
    assert dtypes.default_int == dtypes.int32
    cfg.backend = "torch"
    assert dtypes.default_int == dtypes.int64
    dtypes.default_int = dtypes.int8
    cfg.seed = 3  # any attribute re-applies the backend's int
    assert dtypes.default_int == dtypes.int64
    dataclasses.replace(cfg, backend="numpy")
    assert dtypes.default_int == dtypes.int32


@pytest.mark.parametrize(("backend", "other", "want"), [
    ("jax", "torch", "int32"), ("numpy", "torch", "int32"), ("torch", "jax", "int64")])
def test_constructing_a_context_switches_default_int(backend: str, other: str,
                                                     want: str) -> None:
    """API §1.1: construction activates the context, its int dtype included (§4.2): a
    config of another backend made after this one's (the usual order in a script that
    tries several) does not decide the dtype of `arange` and symbol values."""
    from tempo.api import RecurrentTensor, TempoContext

    cfg = ExecutionConfig(dev="cpu", backend=backend)
    ExecutionConfig(dev="cpu", backend=other)
    ctx = TempoContext(cfg, num_dims=1)
    assert dtypes.default_int == getattr(dtypes, want)
    assert RecurrentTensor.arange(3).dtype == getattr(dtypes, want)
    ExecutionConfig(dev="cpu", backend=other)
    ctx.execution_config = cfg  # programs replace the config after construction
    assert dtypes.default_int == getattr(dtypes, want)
    ctx.__exit__(None, None, None)


def test_replace_keeps_other_fields() -> None:
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), seed=7, device_memory_cap_bytes=1024)
    assert (cfg.seed, cfg.device_memory_cap_bytes, cfg.backend) == (7, 1024, "torch")


def test_canonical_backend_and_capabilities() -> None:
    assert ExecutionConfig(backend="XLA").get_canonical_backend_name() == DLBackendName.JAX
    assert ExecutionConfig(backend="pytorch").get_canonical_backend_name() == DLBackendName.TORCH
    jax_cfg = ExecutionConfig(backend="jax")
    assert not jax_cfg.can_inplace_write() and not jax_cfg.can_lazy_slice()
    torch_cfg = ExecutionConfig(backend="torch")
    assert torch_cfg.can_inplace_write() and torch_cfg.can_lazy_slice()
    off = ExecutionConfig(backend="torch", enable_inplace_write=False, enable_lazy_slice=False)
    assert not off.can_inplace_write() and not off.can_lazy_slice()


def test_module_exports() -> None:
    assert configs.ExecutionConfig is ExecutionConfig


def test_compile_without_config_leaves_the_directory_alone(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from tempo.api import RecurrentTensor, TempoContext

    monkeypatch.chdir(tmp_path)
    ctx = TempoContext(num_dims=1, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    seen: list[float] = []
    with ctx:
        (RecurrentTensor.from_symbol(t) * 2).sink_udf(lambda v: seen.append(float(v)))
    ctx.compile({T: 3}).execute()
    assert seen == [0.0, 2.0, 4.0]
    assert list(tmp_path.iterdir()) == []


# ---- which fields work (tempo.core.config_support) --------------------------------------
def _other(value: object) -> object:
    """A valid non-default value for a field whose default is `value`."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return 2 if value is None else f"{value}_other"


_FIELD_DEFAULTS = {f.name: getattr(ExecutionConfig(), f.name)
                   for f in dataclasses.fields(ExecutionConfig)}
_UNSUPPORTED = sorted(n for n, e in FIELDS.items() if e.support is Support.UNSUPPORTED)
_HINTS = sorted(n for n, e in FIELDS.items() if e.support is Support.HINT)


def _compile(cfg: ExecutionConfig) -> list[float]:
    """Compile and run `t * 2` over T=3 with `cfg` (a new flag's error comes from here)."""
    from tempo.api import RecurrentTensor, TempoContext

    ctx = TempoContext(cfg, num_dims=1, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    seen: list[float] = []
    with ctx:
        (RecurrentTensor.from_symbol(t) * 2).sink_udf(lambda v: seen.append(float(v)))
    ctx.compile({T: 3}).execute()
    return seen


def test_every_field_has_exactly_one_class() -> None:
    """A new ExecutionConfig field fails here until config_support.FIELDS classifies it."""
    assert set(FIELDS) == set(_FIELD_DEFAULTS)
    assert all(isinstance(e.support, Support) and e.note for e in FIELDS.values())


def _reads(name: str) -> list[str]:
    """Files of the tempo package that read the field `name` (as `.name` or "name").
    configs.py declares and validates every field, and config_support.py names every field
    in its table: there only `self.name` / `cfg.name` count (a method, the GPU check)."""
    import re
    from pathlib import Path

    import tempo

    own = {"configs.py": re.compile(rf"self\.{name}\b"),
           "config_support.py": re.compile(rf"cfg\.{name}\b")}
    anywhere = re.compile(rf"\.{name}\b|[\"']{name}[\"']")
    return [str(p) for p in Path(tempo.__file__).parent.rglob("*.py")
            if own.get(p.name, anywhere).search(p.read_text())]


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_class_matches_the_code(name: str) -> None:
    """Implemented fields are read somewhere; the others nowhere (implementing one means
    moving it to IMPLEMENTED in config_support.FIELDS)."""
    readers = _reads(name)
    if FIELDS[name].support is Support.IMPLEMENTED:
        assert readers, f"{name} is IMPLEMENTED but nothing reads it"
    else:  # validate() may check a combination of fields without implementing them
        readers = [r for r in readers if not r.endswith("configs.py")]
        assert not readers, f"{name} is read in {readers}: reclassify it in FIELDS"


@pytest.mark.parametrize("name", _UNSUPPORTED)
def test_unsupported_field_raises_at_compile(name: str) -> None:
    value = _other(_FIELD_DEFAULTS[name])
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), **{name: value})
    with pytest.raises(UnsupportedError) as info:
        _compile(cfg)
    msg = str(info.value)
    assert f"{name}={value!r}" in msg and FIELDS[name].note in msg
    assert f"leave it at its default ({_FIELD_DEFAULTS[name]!r})" in msg
    assert "test_configs.py" in msg and "ctx.compile({T: 3})" in msg  # the compile line
    assert isinstance(info.value, TempoError)


def test_hint_fields_accept_any_value() -> None:
    overrides = {name: _other(_FIELD_DEFAULTS[name]) for name in _HINTS}
    assert _compile(dataclasses.replace(ExecutionConfig.test_cfg(), **overrides)) == [0, 2, 4]


@pytest.mark.parametrize("name", _HINTS)
def test_hints_are_switches_whose_off_value_is_what_runs(name: str) -> None:
    """"A flag works or raises UnsupportedError": a HINT is a switch defaulting to on of a
    feature not built, so its only other value, False, asks for what runs. A knob (M,
    min_block_store_tensor_point_size, individualize_consts_...) accepted any value and
    ignored it: those are UNSUPPORTED (test_unsupported_field_raises_at_compile)."""
    assert _FIELD_DEFAULTS[name] is True


def test_config_docstring_names_every_unsupported_field_and_hint() -> None:
    """ExecutionConfig's docstring says which flags raise and which are hints."""
    doc = " ".join((ExecutionConfig.__doc__ or "").split())
    import re

    for name in _UNSUPPORTED + _HINTS:
        assert re.search(rf"\b{name}\b", doc), name


def test_debug_stages_write_the_graph_after_every_pass(tmp_path) -> None:  # noqa: ANN001
    """visualize_debug_stages (with visualize_pipeline_stages) writes the graph after each
    pass that changed it, numbered in pipeline order; without it only the two stages."""
    from tempo.api import RecurrentTensor, TempoContext

    def run(cfg: ExecutionConfig) -> list[float]:
        ctx = TempoContext(cfg, num_dims=1, dim_names=("t",))
        ((t, T),) = ctx.variables_and_bounds
        seen: list[float] = []
        with ctx:
            x = RecurrentTensor.from_symbol(t) * 2
            _unused = x + 5  # dead-code elimination removes it: a stage that changes
            x.sink_udf(lambda v: seen.append(float(v)))
        ctx.compile({T: 3}).execute()
        return seen

    base = dataclasses.replace(ExecutionConfig.test_cfg(), visualize_pipeline_stages=True,
                               enable_dead_code_elim=True)
    on, off = tmp_path / "on", tmp_path / "off"
    assert run(dataclasses.replace(base, path=f"{on}/", visualize_debug_stages=True)) \
        == [0, 2, 4]
    assert run(dataclasses.replace(base, path=f"{off}/")) == [0, 2, 4]
    stages = sorted(p.name for p in on.glob("sdg_pass_*.dot"))
    assert stages and stages[0].startswith("sdg_pass_01_")
    assert all((on / s).read_text().startswith("digraph sdg {") for s in stages)
    assert not list(off.glob("sdg_pass_*.dot"))


def test_deterministic_on_a_gpu_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from tempo.core import config_support

    cfg = ExecutionConfig(dev="gpu", backend="torch", deterministic=True)
    config_support.check_supported(dataclasses.replace(cfg, dev="cpu"), "here")
    monkeypatch.setattr(config_support, "gpu_present", lambda: True)
    with pytest.raises(UnsupportedError, match="deterministic=True on a GPU"):
        config_support.check_supported(cfg, "here")


def test_render_schedule_and_pipeline_stages_write_under_path(tmp_path) -> None:  # noqa: ANN001
    cfg = dataclasses.replace(ExecutionConfig.test_cfg(), path=f"{tmp_path}/",
                              render_schedule=True, visualize_pipeline_stages=True)
    assert _compile(cfg) == [0, 2, 4]
    assert "for " in (tmp_path / "schedule.txt").read_text()
    for name in ("sdg_0_recorded.dot", "sdg_1_optimised.dot"):
        assert (tmp_path / name).read_text().startswith("digraph sdg {")


def test_gc_bytes_min_keeps_small_points() -> None:
    from tempo.api.compile_driver import _collected
    from tempo.core.domain import Domain
    from tempo.core.sdg import SDG, TensorId, TensorInfo
    from tempo.core.shape import Shape

    g = SDG(Domain.empty())
    small, big = TensorId(0, 0), TensorId(1, 0)
    g.tensors = {small: TensorInfo(Shape.from_((2,)), dtypes.float32),
                 big: TensorInfo(Shape.from_((100,)), dtypes.float32)}
    cfg = ExecutionConfig.test_cfg()
    assert _collected(g, dataclasses.replace(cfg, enable_gc=True)) == [small, big]
    assert _collected(g, dataclasses.replace(cfg, enable_gc=True, gc_bytes_min=9)) == [big]
    assert _collected(g, cfg) == []
