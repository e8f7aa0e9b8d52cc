"""Tiled attention (`ops.TiledAttentionOp`, made by the statify pass): the key range
arrives as static blocks `(block, start, stop)` and is reduced with an online softmax —
per block, the scores' running max `m`, running sum `l` and the unnormalised output `o`
are rescaled by `exp(m_old - m_new)` — so no step sees a shape that depends on it.

jax compiles one block step (`jit`, the valid range as traced scalars: one compilation
for every block of every step) and masks the padding rows with the neutral elements
(scores -inf, values 0); numpy does the same eagerly. torch (eager: shapes cost nothing)
reads the valid rows of each block as views instead of masking them.

The op is made after autodiff, from the forward ops of attention whose intermediates
nothing else reads, so it has no gradient rule of its own (`NOT_DIFFERENTIABLE`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tempo.api.autodiff.grad_rules import NOT_DIFFERENTIABLE
from tempo.compiler.op_rules import NO_BATCHING, Cost, traffic
from tempo.core import ops
from tempo.prims.define import primitive

if TYPE_CHECKING:
    from tempo.runtime.kernel_registry import Kernel

Blocks = list[tuple[Any, int, int]]


def _cost(op: ops.TiledAttentionOp, ins: Any, outs: Any) -> Cost:
    """Two matmuls and a softmax over the keys: 2·rows·S·(dh + dv) + 5·rows·S."""
    k, v = ins[1].shape, ins[2].shape
    rows, s = math.prod(op.score_shape), k[0]
    dh, dv = k[op.perm_k[-2]], v[op.perm_v[-1]]
    return Cost(rows * s * (2 * (dh + dv) + 5), traffic(ins, outs))


# ---------------------------------------------------------------- masks
def _masker(op: ops.TiledAttentionOp, xp: Any) -> Any:
    """`apply(scores, mask_block)`: the user's mask on one block of scores laid out as
    `score_shape + (n,)` (identity without a mask); `xp` is torch, jnp or np."""
    ss, at, msh, pm = op.score_shape, op.mask_at, op.mask_shape, op.perm_m
    kind, mscale = op.mask, op.mask_scale

    def apply(sc: Any, mb: Any) -> Any:
        if not kind:
            return sc
        n = sc.shape[-1]
        m = xp.permute(mb, pm) if hasattr(xp, "permute") else xp.transpose(mb, pm)
        m = m.reshape(msh + (n,))
        x = sc.reshape(at + (n,))
        if kind == "add":
            x = x + m * mscale
        else:
            x = xp.where(m if kind == "keep" else ~m, x, -xp.inf)
        return x.reshape(ss + (n,))

    return apply


def _safe(xp: Any, m: Any) -> Any:
    """A running max usable as an exponent's offset: -inf (every key so far masked) as 0."""
    return xp.where(xp.isneginf(m), 0.0, m)


# ---------------------------------------------------------------- torch
def _views(front: Any, key: tuple, make: Any) -> Any:
    """`make(front)`, kept on the block view `front` itself: a store hands out the same
    front view of a block at every read until the block is freed, so the kernel's
    permuted views of it are made once per block, not once per step, and die with it."""
    kept = front.__dict__.get("_tempo_views")
    if kept is None:
        kept = front._tempo_views = {}
    got = kept.get(key)
    if got is None:
        got = kept[key] = make(front)
    return got


def _torch(op: ops.TiledAttentionOp, be: Any) -> Kernel:
    """Eager torch reads the valid rows of each block as views (no padding, no mask of
    it). Plain attention (no mask, reshapes that are identities, keys and values batched
    as the queries: checked once per query shape) runs on views of each block made once
    per block: one block (a window, a history shorter than U, or a history a joined
    block store or a ring hands over as one view of its buffer) is one
    `scaled_dot_product_attention` call; several are one batched matmul per block for the
    scores, one softmax over them joined, and one matmul-accumulate per block for the
    output (2n + 6 calls for n blocks). Anything else (a mask, GQA, reshapes between the
    matmuls) takes the general path: each block's scores, concatenated, one softmax, and
    the blocks' value products summed (about 7 calls a block). Every call is a Python
    dispatch costing as much as the small matmuls of a decode step, so the count is what
    this kernel is made of."""
    import torch

    sdpa = torch.nn.functional.scaled_dot_product_attention
    bmm, baddbmm, cat, softmax = torch.bmm, torch.baddbmm, torch.cat, torch.softmax
    pk, pv, scale = op.perm_k, op.perm_v, op.scale
    ss, ps, out_shape = op.score_shape, op.prob_shape, op.out_shape
    masked, apply = bool(op.mask), _masker(op, torch)
    pk_sdpa = (*pk[:-2], pk[-1], pk[-2])  # keys second to last, as SDPA takes them
    U = op.block
    plans: dict[Any, tuple[bool, bool, bool, bool]] = {}
    kkey, vkey = ("k", pk), ("v", pv)

    def batched(x: Any) -> Any:
        """`x` as (N, a, b), a view of it (None where its strides need a copy)."""
        try:
            return x.view(-1, *x.shape[-2:])
        except RuntimeError:
            return None

    def k_views(kb: Any) -> tuple[Any, Any]:
        """(keys for SDPA (..., n, dh), keys for bmm (N, dh, n) or None), views of kb."""
        k4 = kb.permute(pk_sdpa)
        k3 = batched(k4)
        return k4, None if k3 is None else k3.transpose(1, 2)

    def v_views(vb: Any) -> tuple[Any, Any]:
        v4 = vb.permute(pv)
        return v4, batched(v4)

    def plan(q: Any, kb: Any, vb: Any) -> tuple[bool, bool, bool, bool]:
        """(the plain path applies, scores need reshaping, probabilities do, the output
        does)."""
        lead, dv = tuple(q.shape[:-1]), vb.shape[pv[-1]]
        rs, rp, ro = lead != ss, ps != ss, ps + (dv,) != out_shape
        batch = {tuple(x.shape[i] for i in perm[:-2]) for x, perm in ((kb, pk), (vb, pv))}
        fused = not (masked or rs or rp or ro) and q.dim() == len(pv) and (
            batch == {lead[:-1]}) and all(  # views of the blocks' memory, never copies
            _views(x, key, make)[1] is not None
            for x, key, make in ((kb, kkey, k_views), (vb, vkey, v_views)))
        got = plans[(q.shape, vb.shape)] = (fused, rs, rp, ro)
        return got

    def plain(q: Any, kbs: Blocks, vbs: Blocks) -> Any:
        """Plain attention over the blocks' cached views."""
        if len(kbs) == 1:
            (kb, s, e), (vb, _, _) = kbs[0], vbs[0]
            k4 = _views(kb, kkey, k_views)[0]
            v4 = _views(vb, vkey, v_views)[0]
            if s or e != k4.shape[-2]:
                k4, v4 = k4.narrow(-2, s, e - s), v4.narrow(-2, s, e - s)
            return sdpa(q, k4, v4, scale=scale)
        q3 = (q * scale).reshape(-1, *q.shape[-2:])
        scs, vs, ns = [], [], []
        for (kb, s, e), (vb, _, _) in zip(kbs, vbs):
            k3 = _views(kb, kkey, k_views)[1]
            v3 = _views(vb, vkey, v_views)[1]
            if s or e != k3.shape[-1]:
                k3, v3 = k3.narrow(-1, s, e - s), v3.narrow(-2, s, e - s)
            scs.append(bmm(q3, k3))
            vs.append(v3)
            ns.append(e - s)
        parts = softmax(cat(scs, -1), -1).split(ns, -1)
        o = bmm(parts[0], vs[0])
        for pb, v3 in zip(parts[1:], vs[1:]):
            o = baddbmm(o, pb, v3)
        return o.view(out_shape)

    def run(q: Any, kbs: Blocks, vbs: Blocks, mbs: Blocks | None = None) -> Any:
        if not kbs:  # an empty range: no keys, the output of an empty matmul
            return torch.zeros(out_shape, dtype=q.dtype, device=q.device)
        vb0 = vbs[0][0]
        fused, rs, rp, ro = plans.get((q.shape, vb0.shape)) or plan(q, kbs[0][0], vb0)
        if fused:
            return plain(q, kbs, vbs)
        if len(kbs) == 1:  # one block (a window, or a short history)
            (kb, s, e), (vb, _, _) = kbs[0], vbs[0]
            sc = (q * scale) @ kb[s:e].permute(pk)
            if rs:
                sc = sc.reshape(ss + (e - s,))
            if masked:
                mb, _, _ = mbs[0]  # type: ignore[index]  # masked: the mask's blocks
                sc = apply(sc, mb[s:e])
            p = softmax(sc, -1)
            o = (p.reshape(ps + (e - s,)) if rp else p) @ vb[s:e].permute(pv)
            return o.reshape(out_shape) if ro else o
        qs = q * scale
        scs = []
        for k, (kb, s, e) in enumerate(kbs):  # (a whole block needs no slice)
            sc = qs @ (kb if s == 0 and e == U else kb[s:e]).permute(pk)
            if rs:
                sc = sc.reshape(ss + (e - s,))
            if masked:
                mb = mbs[k][0]  # type: ignore[index]  # masked: the mask's blocks
                sc = apply(sc, mb[s:e])
            scs.append(sc)
        p = softmax(cat(scs, -1), -1)
        o, at = None, 0
        for (vb, s, e) in vbs:
            n = e - s
            pb = p[..., at: at + n]
            at += n
            term = (pb.reshape(ps + (n,)) if rp else pb) @ (
                vb if s == 0 and e == U else vb[s:e]).permute(pv)
            o = term if o is None else o + term
        return o.reshape(out_shape) if ro else o

    return run


# ---------------------------------------------------------------- jax / numpy (masked)
def _masked_step(xp: Any, op: ops.TiledAttentionOp) -> Any:
    """One block of the online softmax on static shapes, padding masked: `xp` is jnp or
    np (jax traces it once per block shape)."""
    pk, pv, scale = op.perm_k, op.perm_v, op.scale
    ss, ps = op.score_shape, op.prob_shape
    apply = _masker(op, xp)

    def step(q: Any, kb: Any, vb: Any, mb: Any, s: Any, e: Any, m: Any, l: Any, o: Any
             ) -> Any:
        u = kb.shape[0]
        pos = xp.arange(u)
        valid = (pos >= s) & (pos < e)
        sc = (q @ xp.transpose(kb, pk)).reshape(ss + (u,)) * xp.asarray(scale, q.dtype)
        sc = xp.where(valid, apply(sc, mb), -xp.inf)
        m_new = xp.maximum(m, sc.max(-1, keepdims=True))
        off = _safe(xp, m_new)
        alpha = xp.exp(m - off)
        p = xp.exp(sc - off)
        vmask = valid.reshape((u,) + (1,) * (vb.ndim - 1))
        vb = xp.where(vmask, vb, xp.zeros((), vb.dtype))  # padding may hold inf/nan
        l = l * alpha + p.sum(-1, keepdims=True)
        o = o * alpha.reshape(ps + (1,)) + p.reshape(ps + (u,)) @ xp.transpose(vb, pv)
        return m_new, l, o

    return step


def _online(op: ops.TiledAttentionOp, xp: Any, jit: Any) -> Kernel:
    """The loop over blocks around the masked step: the first block starts from a -inf
    max and zero sum and output; `jit` compiles the three pieces (identity for numpy)."""
    ss, ps, out_shape = op.score_shape, op.prob_shape, op.out_shape
    step = _masked_step(xp, op)

    def first(q: Any, kb: Any, vb: Any, mb: Any, s: Any, e: Any) -> Any:
        dt = q.dtype
        return step(q, kb, vb, mb, s, e, xp.full(ss + (1,), -xp.inf, dt),
                    xp.zeros(ss + (1,), dt), xp.zeros(out_shape, dt))

    def finish(o: Any, l: Any) -> Any:
        return o / l.reshape(ps + (1,))

    first_j, step_j, finish_j = jit(first, "first"), jit(step, "step"), jit(finish, "finish")

    def run(q: Any, kbs: Blocks, vbs: Blocks, mbs: Blocks | None = None) -> Any:
        if not kbs:  # an empty range: no keys, the output of an empty matmul
            return xp.zeros(out_shape, q.dtype)
        mbs = mbs or [(None, 0, 0)] * len(kbs)
        (kb, s, e), (vb, _, _), (mb, _, _) = kbs[0], vbs[0], mbs[0]
        m, l, o = first_j(q, kb, vb, mb, s, e)
        for (kb, s, e), (vb, _, _), (mb, _, _) in zip(kbs[1:], vbs[1:], mbs[1:]):
            m, l, o = step_j(q, kb, vb, mb, s, e, m, l, o)
        return finish_j(o, l)

    return run


def _jax(op: ops.TiledAttentionOp, be: Any) -> Kernel:
    import jax.numpy as jnp

    from tempo.runtime.backends.jax import jit_shared

    return _online(op, jnp, lambda f, part: jit_shared(op, f, part))


def _numpy(op: ops.TiledAttentionOp, be: Any) -> Kernel:
    def quiet(f: Any, part: str) -> Any:
        def run(*args: Any) -> Any:
            with np.errstate(invalid="ignore", over="ignore"):  # padding rows, masked out
                return f(*args)

        return run

    return _online(op, np, quiet)


primitive(ops.TiledAttentionOp, grad=NOT_DIFFERENTIABLE, batching=NO_BATCHING, cost=_cost,
          torch=_torch, jax=_jax, numpy=_numpy)
