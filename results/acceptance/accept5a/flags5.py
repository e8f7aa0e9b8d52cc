"""accept5a flags sweep: every ExecutionConfig field set alone away from its default (bools
flipped, knobs to a small/other value) on the given programs; each must give the reference
values or raise UnsupportedError at compile. usage: flags5.py backend prog.py [prog.py ...]"""
from __future__ import annotations
import dataclasses, importlib.util, json, sys, tempfile, time, traceback, warnings
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 2)[0])  # the shared ../harness.py
from harness import to_np  # noqa: E402

KNOBS = {
    "path": None, "dev": "fake-gpu", "backend": None, "torch_compilation_backend": "eager",
    "algebraic_optims_to_disable": ("all",), "individualize_consts_smaller_than_x_bytes": 10,
    "reject_vec_groups_smaller_than": 1, "reject_vec_groups_with_external_deps_ratio_greater_than": 0.0,
    "incrementalization_percentile": 0, "incrementalize_mem_threshold": 64,
    "inc_statify_block_size": 2, "min_dataflow_group_size": 3, "max_dataflow_group_size": 2,
    "runtime_tensor_prefetch_amount_point": 0, "runtime_tensor_prefetch_amount_block": 0,
    "gc_bytes_min": 10 ** 9, "swap_bytes_min": 1, "min_block_store_tensor_point_size": 1,
    "seed": 7, "default_dim_upper_bound_size": 50, "num_executor_pool_workers": 2,
    "torch_pinned_prealloc_size_bytes": 1024, "M": 100, "device_memory_cap_bytes": 10 ** 7,
}

def values(cfg):
    for f in dataclasses.fields(cfg):
        cur = getattr(cfg, f.name)
        if isinstance(cur, bool):
            yield f.name, not cur
        elif f.name in KNOBS and KNOBS[f.name] is not None:
            yield f.name, KNOBS[f.name]

def main(backend, progs):
    from tempo.core.configs import ExecutionConfig
    from tempo.core.errors import UnsupportedError, TempoError
    mods = []
    for p in progs:
        spec = importlib.util.spec_from_file_location(p.rsplit("/", 1)[-1][:-3], p)
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); mods.append(m)
    base = ExecutionConfig(dev="cpu", backend=backend)
    for name, val in values(base):
        for m in mods:
            tmp = tempfile.mkdtemp(prefix="a5f_")
            t0 = time.time(); status, detail = "ok", ""
            try:
                cfg = dataclasses.replace(base, path=tmp + "/", **{name: val})
                res = m.program(cfg)
                bad = []
                for n, got, want, tol in res:
                    g, w = to_np(got), to_np(want)
                    if g.shape != w.shape:
                        bad.append(f"{n}: shape {g.shape} vs {w.shape}"); continue
                    if not np.issubdtype(w.dtype, np.number) or w.dtype == bool:
                        if not np.array_equal(g, w):
                            bad.append(f"{n}: differs")
                        continue
                    err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
                    if not err <= tol:
                        bad.append(f"{n}: err {err:.3g}")
                if bad:
                    status, detail = "WRONG", "; ".join(bad)
            except UnsupportedError as e:
                status, detail = "unsupported", str(e).splitlines()[0][:160]
            except TempoError as e:
                status, detail = "TEMPOERR", f"{type(e).__name__}: {str(e)[:300]}"
            except Exception as e:  # noqa: BLE001
                status, detail = "EXC", f"{type(e).__name__}: {str(e)[:300]}"
            print(json.dumps({"prog": m.__name__, "cfg": f"{backend}:{name}={val!r}",
                              "status": status, "detail": detail,
                              "secs": round(time.time() - t0, 1)}), flush=True)

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main(sys.argv[1], sys.argv[2:])
