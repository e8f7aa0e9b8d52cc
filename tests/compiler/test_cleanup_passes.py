"""Each clean-up pass on small programs: the rewrite happens (the graph left is checked),
results equal the run with every pass off bit for bit (pass_harness) and eager torch."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from pass_harness import kinds, with_passes
from programs import close

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.tensor_base import record
from tempo.core import ops
from tempo.core.configs import tuned
from tempo.core.domain import Domain
from tempo.core.dtype import dtypes

RNG = np.random.default_rng(7)
A = RNG.standard_normal((2, 3)).astype(np.float32)
B = RNG.standard_normal((3,)).astype(np.float32)
SPECIAL = np.array([[-0.0, 1.5, np.nan], [np.inf, -2.0, 0.0]], dtype=np.float32)
DCE = "enable_dead_code_elim"


def test_dead_code_elimination_removes_what_no_output_reads(cfg) -> None:
    def build():  # noqa: ANN202
        a = RT.const(A)
        (a.exp() * 2.0).sum()  # dead: nothing reads it
        return {"y": a + 1.0}

    res, g = with_passes(cfg, build, 0, {}, [DCE])
    close(res["y"], torch.from_numpy(A) + 1.0)
    assert kinds(g)["exp"] == 0 and kinds(g)["sum"] == 0


def test_dedup_merges_equal_ops_and_equal_recurrences(cfg) -> None:
    def build(tt):  # noqa: ANN202
        t, _ = tt
        x = RT.const(A) * RT.from_symbol(t).cast(dtypes.float32)
        h1 = RT.placeholder((2, 3), dtypes.float32, domain=(t,))
        h1[0] = RT.const(A)
        h1[True] = x * 2.0
        h2 = RT.placeholder((2, 3), dtypes.float32, domain=(t,))
        h2[0] = RT.const(A)
        h2[True] = x * 2.0
        return {"y": (h1 + h2) * 1.5}

    res, g = with_passes(cfg, build, 1, {0: 4}, ["enable_duplicate_code_elim", DCE])
    ta = torch.from_numpy(A)
    h = torch.stack([ta] + [ta * k * 2.0 for k in range(1, 4)])
    close(res["y"], (h + h) * 1.5)
    assert kinds(g)["merge"] == 1 and kinds(g)["mul"] == 3  # (x * 2.0 once)


def test_constant_folding_evaluates_exact_ops_and_keeps_dtypes(cfg) -> None:
    def build(tt):  # noqa: ANN202
        t, T = tt
        a, b = RT.const(A), RT.const(B)
        i = RT.const(np.arange(6, dtype=np.int32)).reshape((2, 3))
        return {
            "affine": (a * b + 1.0).permute((1, 0)).reshape((6,)),
            "int_div": i.cast(dtypes.float32) / 4.0,
            "int_sum": (i * 3).sum(1),
            "ones": RT.ones((3, 4)) * 2.0,
            "cmp": a > b,
            "exp": a.exp(),  # a transcendental: its bits depend on the library, not folded
            "steps": RT.from_symbol(t) + RT.from_symbol(T),  # T is known at compile time
        }

    res, g = with_passes(cfg, build, 1, {0: 3}, ["enable_constant_folding", DCE])
    ta, tb, ti = torch.from_numpy(A), torch.from_numpy(B), torch.arange(6).reshape(2, 3).int()
    close(res["affine"], (ta * tb + 1.0).permute(1, 0).reshape(6))
    close(res["int_div"], ti.float() / 4.0)
    assert res["int_sum"].dtype == torch.int64 and res["int_sum"].tolist() == [9, 36]
    close(res["ones"], torch.full((3, 4), 2.0))
    close(res["cmp"], ta > tb)
    close(res["exp"], ta.exp())
    assert res["steps"].tolist() == [3, 4, 5]
    k = kinds(g)
    for gone in ("mul", "permute", "reshape", "div", "cast", "sum", "gt"):
        assert k[gone] == 0, (gone, k)
    assert k["exp"] == 1 and k["fill"] >= 1
    assert k["eval_symbol"] == 1 and k["add"] == 1  # t + T: only T is folded


def test_constant_folding_leaves_out_of_range_casts_to_the_backend(cfg) -> None:
    def build():  # noqa: ANN202
        return {"big": RT.const(np.float32(3e9)).cast(dtypes.int32),
                "ok": RT.const(np.float32(-2.7)).cast(dtypes.int32)}

    res, g = with_passes(cfg, build, 0, {}, ["enable_constant_folding"])
    assert res["ok"].item() == -2
    assert kinds(g)["cast"] == 1  # only the out-of-range one is left


def test_constant_folding_keeps_results_past_the_fold_limit(cfg) -> None:
    """`Tuning.fold_limit_bytes` decides which results are baked in (24 B here)."""
    def build():  # noqa: ANN202
        return {"y": RT.const(A) * 2.0}

    with tuned(fold_limit_bytes=24):
        res, g = with_passes(cfg, build, 0, {}, ["enable_constant_folding"])
    close(res["y"], torch.from_numpy(A) * 2.0)
    assert kinds(g)["mul"] == 0
    with tuned(fold_limit_bytes=23):
        res, g = with_passes(cfg, build, 0, {}, ["enable_constant_folding"])
    close(res["y"], torch.from_numpy(A) * 2.0)
    assert kinds(g)["mul"] == 1


def test_a_comparison_the_domain_decides_is_folded(cfg) -> None:
    """`t < limit` with T <= limit is true at every point (the env's step-limit test):
    it becomes a fill and the `where` on it its branch; `t < 3` with T = 5 and
    `T - 1 - t >= 0` (true) stay exact; nothing is folded the domain does not prove."""
    def build(tt):  # noqa: ANN202
        t, T = tt
        x = RT.from_symbol(t).cast(dtypes.float32) * 2.0
        step = RT.from_symbol(t)
        return {
            "live": (step < 5).where(x, x * 0.0) + 1.0,  # t <= 4 < 5: always x
            "early": (step < 3).where(x, x * 0.0),  # depends on t
            "back": RT.from_expr(T - 1 - t) >= 0,  # 0..4 >= 0: always true
            "past": (step + 1) > 5,  # t + 1 <= 5: always false
        }

    res, g = with_passes(cfg, build, 1, {0: 5},
                         ["enable_constant_folding", "enable_algebraic_optimizer", DCE])
    ts = torch.arange(5, dtype=torch.float32)
    close(res["live"], ts * 2.0 + 1.0)
    close(res["early"], torch.where(ts < 3, ts * 2.0, ts * 0.0))
    assert res["back"].tolist() == [True] * 5 and res["past"].tolist() == [False] * 5
    k = kinds(g)
    assert k["lt"] == 1 and k["where"] == 1  # only t < 3
    assert k["ge"] == 0 and k["gt"] == 0


def _wrapped(ys: dict[str, RT]) -> dict[str, RT]:
    """Read each result once more, so rules acting on readers have one (outputs are kept)."""
    return {k: y * 3.0 for k, y in ys.items()}


def test_algebraic_aliases_and_chains(cfg) -> None:
    def build():  # noqa: ANN202
        x = RT.const(SPECIAL)
        return _wrapped({
            "perm2": x.permute((1, 0)).permute((1, 0)),
            "reshape2": x.reshape((3, 2)).reshape((6,)),
            "cast_lossless": x.cast(dtypes.float64).cast(dtypes.float32),
            "cast_lossy": x.cast(dtypes.float16).cast(dtypes.float32),
            "mul1": x * 1.0, "div1": x / 1.0, "sub0": x - 0.0, "negneg": x.neg().neg(),
            "add_negzero": x + RT.const(np.float32(-0.0)),
            "add_zero": x + 0.0,  # not x: -0.0 + 0.0 is +0.0
            "ident": x.ident(),
        })

    res, g = with_passes(cfg, build, 0, {}, ["enable_algebraic_optimizer", DCE])
    tx = torch.from_numpy(SPECIAL)
    want = {"perm2": tx, "reshape2": tx.reshape(6), "cast_lossless": tx,
            "cast_lossy": tx.half().float(), "mul1": tx, "div1": tx, "sub0": tx,
            "negneg": tx, "add_negzero": tx, "add_zero": tx + 0.0, "ident": tx}
    for name, w in want.items():
        torch.testing.assert_close(res[name], w * 3.0, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(torch.signbit(res[name]), torch.signbit(w * 3.0)), name
    k = kinds(g)
    assert k["permute"] == 0 and k["reshape"] == 1 and k["ident"] == 0 and k["neg"] == 0
    assert k["cast"] == 2  # only the lossy chain is left
    assert k["div"] == 0 and k["sub"] == 0 and k["add"] == 1  # x + 0.0 stays
    assert k["mul"] == len(want)  # the wrapping * 3.0 only


def test_algebraic_merges_alias_and_prune_with_bounds(cfg) -> None:
    def build(tt):  # noqa: ANN202
        t, T = tt
        x = RT.from_symbol(t).cast(dtypes.float32)
        alias = RT.placeholder((), dtypes.float32, domain=(t,))
        alias[True] = x * 2.0
        pruned = RT.placeholder((), dtypes.float32, domain=(t,))
        pruned[T > 10] = x * 5.0  # false for T = 4
        pruned[True] = x + 7.0
        return {"alias": alias * 3.0, "pruned": pruned * 3.0}

    res, g = with_passes(cfg, build, 1, {0: 4}, ["enable_algebraic_optimizer", DCE])
    tx = torch.arange(4).float()
    close(res["alias"], tx * 2.0 * 3.0)
    close(res["pruned"], (tx + 7.0) * 3.0)
    assert kinds(g)["merge"] == 0  # both recurrences end up as one unconditional branch


def test_algebraic_sum_of_cat_for_integers_only(cfg) -> None:
    ai = np.arange(6, dtype=np.int64).reshape(2, 3)

    def build():  # noqa: ANN202
        a, b = RT.const(ai), RT.const(ai * 5)
        fa, fb = RT.const(A), RT.const(A * 5)
        return {"ints": RT.cat(a, b, dim=0).sum(0), "floats": RT.cat(fa, fb, dim=0).sum(0)}

    res, g = with_passes(cfg, build, 0, {}, ["enable_algebraic_optimizer", DCE])
    ta = torch.from_numpy(ai)
    assert torch.equal(res["ints"], torch.cat([ta, ta * 5]).sum(0))
    close(res["floats"], torch.cat([torch.from_numpy(A), torch.from_numpy(A) * 5]).sum(0))
    assert kinds(g)["cat"] == 1  # the float one: reassociating a float sum changes bits


def _running_sum(dt):  # noqa: ANN001, ANN202
    def build(tt):  # noqa: ANN202
        t, _ = tt
        x = (RT.from_symbol(t) * 3 + 1).cast(dt)
        acc = RT.placeholder((), dt, domain=(t,))
        acc[0] = x[0]
        acc[True] = acc[t - 1] + x
        return {"acc": acc}

    return build


def _self_reads(g) -> int:  # noqa: ANN001
    return sum(1 for op in g.ops.values() if isinstance(op, ops.MergeOp)
               for e in g.in_edges[op.op_id] if e.src.op_id == op.op_id or
               any(x.src.op_id == op.op_id for x in g.in_edges[e.src.op_id]))


def test_integer_running_sum_is_lifted_into_cumsum(cfg) -> None:
    res, g = with_passes(cfg, _running_sum(dtypes.int64), 1, {0: 6},
                         ["enable_algebraic_optimizer", DCE])
    assert res["acc"].tolist() == torch.cumsum(torch.arange(6) * 3 + 1, 0).tolist()
    assert kinds(g)["cumsum"] == 1 and _self_reads(g) == 0


def test_float_running_sum_stays_a_recurrence(cfg) -> None:
    res, g = with_passes(cfg, _running_sum(dtypes.float32), 1, {0: 6},
                         ["enable_algebraic_optimizer", DCE])
    want = torch.tensor([sum(3.0 * k + 1 for k in range(n + 1)) for n in range(6)])
    close(res["acc"], want)
    assert kinds(g)["cumsum"] == 0 and _self_reads(g) == 1


def test_broadcast_elimination_reads_the_unexpanded_tensor(cfg) -> None:
    col = A[:, :1]

    def build():  # noqa: ANN202
        c, a = RT.const(col), RT.const(A)
        s = RT.const(np.float32(2.5)).reshape((1, 1))
        return {"y": c.expand((2, 3)) * a, "z": a + s, "w": c.expand((2, 3)).exp()}

    res, g = with_passes(cfg, build, 0, {}, ["enable_broadcast_elim", DCE])
    tc, ta = torch.from_numpy(col), torch.from_numpy(A)
    close(res["y"], tc.expand(2, 3) * ta)
    close(res["z"], ta + 2.5)
    close(res["w"], tc.expand(2, 3).exp())
    k = kinds(g)
    assert k["expand"] == 1 and k["reshape"] == 0  # exp needs its expand: it is not binary


def test_domain_reduction_drops_dims_a_value_does_not_vary_along(cfg) -> None:
    def build(ii, tt):  # noqa: ANN202
        (i, _), (t, T) = ii, tt
        a, b = RT.const(A), RT.const(B)
        # an op over (i, t) that reads only constants, as autodiff makes them
        (m,) = record(ops.BinaryOp, [a, b], domain=Domain((i, t)), fn="mul")
        (n,) = record(ops.BinaryOp, [m, RT.from_symbol(i).cast(dtypes.float32)], fn="add")
        (s,) = record(ops.UnaryOp, [a], domain=Domain((t,)), fn="neg")
        hist = s[0:T].sum(0)  # a slice along t: s keeps t for this reader
        return {"n": n.exp(), "hist": hist}  # (kept outputs keep their domain)

    res, g = with_passes(cfg, build, 2, {0: 2, 1: 3}, ["enable_domain_reduction"])
    ta, tb = torch.from_numpy(A), torch.from_numpy(B)
    want_n = torch.stack([torch.stack([ta * tb + k] * 3) for k in range(2)]).exp()
    close(res["n"], want_n)
    close(res["hist"], -ta * 3)
    doms = {op.describe(): [v.name for v in op.domain.variables] for op in g.ops.values()
            if op.describe() in ("mul", "add", "neg")}
    assert doms["mul"] == [] and doms["add"] == ["d0"] and doms["neg"] == ["d1"]


def test_domain_reduction_keeps_kept_tensors_and_varying_ops(cfg) -> None:
    def build(tt):  # noqa: ANN202
        t, _ = tt
        (m,) = record(ops.UnaryOp, [RT.const(A)], domain=Domain((t,)), fn="neg")
        noise = RT.rand((2,), domain=(t,))  # a fresh draw per t: varies although it reads nothing
        return {"m": m, "noise_kept": noise * 0.0}

    res, g = with_passes(cfg, build, 1, {0: 3}, ["enable_domain_reduction"])
    close(res["m"], torch.stack([-torch.from_numpy(A)] * 3))
    assert all(len(op.domain) == 1 for op in g.ops.values()
               if isinstance(op, ops.UnaryOp | ops.RandOp))


def test_algebraic_picks_from_an_expand_without_it(cfg) -> None:
    def build(tt):  # noqa: ANN202
        t, _ = tt
        step = RT.from_symbol(t)
        one = RT.const(np.float32([2.5])).expand((4,)).index(0, step)  # a size-1 dim
        row = RT.const(B).expand((4, 3)).index(0, step)  # a prepended dim
        return {"one": one * 3.0, "row": row * 3.0}

    res, g = with_passes(cfg, build, 1, {0: 4}, ["enable_algebraic_optimizer", DCE])
    close(res["one"], torch.full((4,), 7.5))
    close(res["row"], torch.from_numpy(B).expand(4, 3) * 3.0)
    assert kinds(g)["index_select"] == 0


def test_a_reduced_tensor_reads_back_by_its_recorded_domain(cfg) -> None:
    on = dataclasses.replace(cfg, enable_domain_reduction=True, enable_dead_code_elim=True)
    ctx = TempoContext(on, num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        (m,) = record(ops.UnaryOp, [RT.const(A)], domain=Domain((t,)), fn="neg")
        (m * RT.from_symbol(t).cast(dtypes.float32)).sink_udf(lambda v: None)
    exe = ctx.compile({T: 3})
    exe.execute()
    assert len(exe.sdg.ops[m.tensor_id.op_id].domain) == 0  # it ran once
    ta = torch.from_numpy(A)
    close(exe.get_spatial_tensor_torch(m.tensor_id, (1,)), -ta)
    close(exe.get_spatial_tensor_torch(m.tensor_id, (slice(0, 3),)), torch.stack([-ta] * 3))


def test_algebraic_drops_unit_reshapes_around_an_elementwise_op(cfg) -> None:
    """A Linear layer on a row: matmul's squeeze, the bias add and the unsqueeze back are
    one add; a reshape that moves elements (not only size-1 dims) stays."""
    def build(tt):  # noqa: ANN202
        t, _ = tt
        x = RT.const(A[:1]) * RT.from_symbol(t).cast(dtypes.float32)  # (1, 3) per point
        row = (x.reshape((3,)) + RT.const(B)).reshape((1, 3))
        moved = (RT.const(A).reshape((3, 2)) - RT.const(np.float32([1.0, 2.0]))).reshape((2, 3))
        return {"row": row.exp(), "moved": moved * 2.0}

    res, g = with_passes(cfg, build, 1, {0: 4}, ["enable_algebraic_optimizer", DCE])
    steps = torch.arange(4, dtype=torch.float32).reshape(4, 1, 1)
    close(res["row"], (torch.from_numpy(A[:1]) * steps + torch.from_numpy(B)).exp())
    close(res["moved"], (torch.from_numpy(A).reshape(3, 2) - torch.tensor([1.0, 2.0])
                         ).reshape(2, 3) * 2.0)
    assert kinds(g)["reshape"] == 2  # the moving pair only
