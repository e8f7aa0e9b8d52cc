"""Every primitive's rules, one module per family (the JAX way: one search finds them all).

A primitive is an op class of `tempo.core.ops` (parameters + shape/dtype rule `infer`,
which the core needs to record and validate graphs) plus, registered here in one
`primitive(...)` call next to their code:

- its gradient (`grad=`, a rule or `NOT_DIFFERENTIABLE` / `BY_BACKWARD`),
- its batching rule for vectorisation (`batching=`, a rule or `NO_BATCHING`: stays a loop),
- its cost (`cost=`: FLOPs and bytes of one call; `tempo.compiler.op_rules.cost`),
- its kernel on every backend (`torch=`, `jax=`, `numpy=`: factories `(op, backend) ->
  callable`, importing their library in their body, so importing tempo.prims loads none).

Each layer owns the registry of its concern (api.autodiff.grad_rules, compiler.op_rules,
runtime.kernel_registry); this package sits above them all and fills them. It is loaded
by the two api entry points that need every rule (`backward()` and `ctx.compile`).

Finding an op's rules: search its class name (`SumOp`): `tempo/core/ops.py` has its
parameters and shape rule, its family module here everything else.

## Adding a primitive

1. Define the op class in `tempo/core/ops.py` (or a core module it re-exports, such as
   `ops_fused.py`): a frozen dataclass with its parameters, `name`, `arity`, `infer`
   (and `input_dtypes` if the kernels need promoted inputs). Add it to `ops.ALL_OPS`.
2. In the family module here (or a new one imported below), write its gradient, batching
   rule (or `NO_BATCHING`), cost and one kernel factory per backend, and register them
   with one `primitive(...)` call.
3. Add an API function in `tempo/api/ops/` that records it. `tests/prims/` fails until
   every rule exists; `tests/runtime/test_backend_kernels.py` checks the backends agree.

Families: `sources` (const, fill, rand, eval_symbol), `movement` (ident, reshape,
permute, expand, slice, pad, cat, flip), `indexing` (index_select, gather, scatter_add,
index_add), `elementwise` (unary, binary, where, cast), `reduce` (sum, max, cumsum, sort),
`linalg` (matmul, conv), `fused` (softmax, norm), `attention`, `tiled` (attention over
static blocks), `tiled_reduce` (sums and maxima over static blocks), `udf` (udf_source,
map_udf, sink_udf), `control` (merge, barrier), `region` (a fused region, built by the
grouping pass).
"""

from tempo.prims import (  # noqa: F401 - importing a family registers its primitives
    attention,
    control,
    elementwise,
    fused,
    indexing,
    linalg,
    movement,
    reduce,
    region,
    sources,
    tiled,
    tiled_reduce,
    udf,
)
from tempo.prims.define import DEFINED, primitive

__all__ = ["DEFINED", "primitive"]
