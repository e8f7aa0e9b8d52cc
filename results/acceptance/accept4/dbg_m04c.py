import sys, dataclasses, numpy as np, warnings
warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.dtype import dtypes
from tempo.core.configs import ExecutionConfig
flags = ["enable_vectorization", "enable_dataflow_grouping", "enable_fusion", "enable_incrementalization", "enable_statifying_incrementalization",
         "enable_lazy_slice", "enable_domain_reduction", "enable_algebraic_optimizer", "enable_constant_folding", "enable_dead_code_elim",
         "enable_broadcast_elim", "enable_duplicate_code_elim", "enable_inplace_write", "enable_codegen_dataflows", "enable_compiled_loops", "enable_gc", "enable_hybrid_tensorstore", "enable_fold_pads_into_storage", "enable_pad_mask_removal"]
for f in [None] + flags:
    cfg = ExecutionConfig(dev="cpu", backend="torch")
    if f:
        if not hasattr(cfg, f):
            print("no flag", f); continue
        cfg = dataclasses.replace(cfg, **{f: False})
    c = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = c.variables_and_bounds
    s = {}
    with c:
        x = RT.random((), domain=(t,)) + 10.0
        y = x[t + 1] - x
        y[0:T].sink_udf(lambda v: s.__setitem__("y", np.asarray(v)))
    try:
        c.compile({T: 4}).execute()
        print(f, "NO ERROR", s["y"][-1])
    except Exception as e:
        print(f, type(e).__name__)
