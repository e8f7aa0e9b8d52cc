"""MEMSAVE.md drop-in layers vs the torch layers they replace, measured by our own
saved_tensors_hooks (unique storages): (1) InplaceGELU(approximate='tanh') inside
Linear->GELU->Linear: output bit-equal, input/weight grads within 1e-4, saved bytes =
baseline - (4 - 1/8) bytes per GELU element (bit mask) and - 3 per element (byte mask);
special values (x = x_min, 0, +-inf, NaN) and a non-contiguous input; (2) InplaceLayerNorm
with a 2-D normalized_shape, bias=False, no-affine, and a gamma with a 0 (fallback must keep
grads finite and equal nn.LayerNorm's); saved bytes without the LN input; (3)
fused_attention_probs_matmul(scores, v, p, mask) called POSITIONALLY as MEMSAVE.md 7.1 writes
it, vs softmax -> P*mask/(1-p) -> @V with the same mask; (4) convert() on a model holding
nn.GELU('tanh') and a pretrained nn.LayerNorm(eps=1e-12): identical outputs, eps/params
kept, state_dict keys unchanged (a checkpoint still loads)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
import torch.nn as nn, torch.nn.functional as F

CONFIGS = ["torch:default"]


def saved(fn):
    st = {}
    def pack(t):
        s = t.untyped_storage(); st[s.data_ptr()] = s.nbytes(); return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return sum(st.values()), out


def program(cfg):
    from tempo import memsave
    torch.manual_seed(0)
    res = []
    # (1) GELU in an MLP
    N, H, I = 64, 16, 40
    x = torch.randn(N, H)
    l1, l2 = nn.Linear(H, I), nn.Linear(I, H)
    def mlp(act, xx):
        return l2(act(l1(xx)))
    for fmt, per in [("bit", 4 - 1 / 8), ("byte", 3)]:
        xs = [x.clone().requires_grad_(True) for _ in range(2)]
        for p in list(l1.parameters()) + list(l2.parameters()):
            p.grad = None
        b0, y0 = saved(lambda: mlp(nn.GELU(approximate="tanh"), xs[0]))
        y0.square().sum().backward()
        g0 = [xs[0].grad.clone(), l1.weight.grad.clone()]
        for p in list(l1.parameters()) + list(l2.parameters()):
            p.grad = None
        b1, y1 = saved(lambda: mlp(memsave.InplaceGELU(approximate="tanh", mask_format=fmt), xs[1]))
        y1.square().sum().backward()
        res += [(f"gelu_{fmt}_out", y1.detach(), y0.detach(), 0.0),
                (f"gelu_{fmt}_gx", xs[1].grad, g0[0], 1e-4 * float(g0[0].abs().max())),
                (f"gelu_{fmt}_gw", l1.weight.grad, g0[1], 1e-4 * float(g0[1].abs().max())),
                (f"gelu_{fmt}_saving_bytes", np.array(b0 - b1, np.float64), np.array(N * I * per), 1.0)]
    xmin = -0.7517915
    sp = torch.tensor([xmin, 0.0, float("inf"), float("-inf"), float("nan"), 3.0, -5.0, 1e-3], requires_grad=True)
    sp2 = sp.detach().clone().requires_grad_(True)
    ys = memsave.InplaceGELU()(sp); ys.sum().backward()
    F.gelu(sp2).sum().backward()
    res += [("gelu_special_out", torch.nan_to_num(ys.detach(), nan=7.0), torch.nan_to_num(F.gelu(sp2).detach(), nan=7.0), 0.0),
            ("gelu_special_grad", torch.nan_to_num(sp.grad, nan=7.0), torch.nan_to_num(sp2.grad, nan=7.0), 3e-4)]
    base = torch.randn(5, 8)
    nc = base.t().requires_grad_(False).clone().t()  # non-contiguous view pattern
    nc = torch.randn(8, 5).t()
    ncl = nc.clone().requires_grad_(True); ncr = nc.clone().requires_grad_(True)
    a = ncl.t().t() if False else ncl.T.contiguous().T
    gy = torch.randn(5, 8).t().contiguous().t()
    yl = memsave.InplaceGELU()(a); yl.backward(gy)
    yr = F.gelu(ncr); yr.backward(gy)
    res.append(("gelu_noncontig_grad", ncl.grad, ncr.grad, 1e-4))
    # (2) LayerNorm variants
    xl = torch.randn(6, 3, 4, 5)
    for name, kw, gamma in [("ln_2d_nobias", dict(bias=False), torch.randn(4, 5)),
                            ("ln_noaffine", dict(elementwise_affine=False), None),
                            ("ln_gamma0", dict(), torch.cat([torch.zeros(1, 5), torch.randn(3, 5)]))]:
        ref = nn.LayerNorm((4, 5), eps=1e-6, **kw)
        new = memsave.InplaceLayerNorm((4, 5), eps=1e-6, **kw)
        if gamma is not None:
            with torch.no_grad():
                ref.weight.copy_(gamma); new.weight.copy_(gamma)
                if ref.bias is not None:
                    bb = torch.randn(4, 5); ref.bias.copy_(bb); new.bias.copy_(bb)
        xa = xl.clone().requires_grad_(True); xb = xl.clone().requires_grad_(True)
        pre = nn.Linear(5, 5)
        ba, ya = saved(lambda: ref(pre(xa)) * 2.0)
        bb_, yb = saved(lambda: new(pre(xb)) * 2.0)
        gy = torch.randn_like(ya)
        ya.backward(gy); yb.backward(gy)
        res += [(name + "_out", yb.detach(), ya.detach(), 1e-6), (name + "_gx", xb.grad, xa.grad, 1e-4)]
        if gamma is not None:
            res.append((name + "_gw", new.weight.grad, ref.weight.grad, 1e-4))
        if name != "ln_gamma0":
            res.append((name + "_saves_less", np.array(bb_ < ba), np.array(True), 0))
    # (3) fused attention, positional call per MEMSAVE.md 7.1
    S = torch.randn(2, 3, 6, 6); Vv = torch.randn(2, 3, 6, 4)
    keep = torch.rand(2, 3, 6, 6) > 0.3
    Sa, Va = S.clone().requires_grad_(True), Vv.clone().requires_grad_(True)
    Sb, Vb = S.clone().requires_grad_(True), Vv.clone().requires_grad_(True)
    try:
        oa = memsave.fused_attention_probs_matmul(Sa, Va, 0.3, keep)
        ob = (torch.softmax(Sb, -1) * keep / 0.7) @ Vb
        go = torch.randn_like(ob); oa.backward(go); ob.backward(go)
        res += [("attn_pos_out", oa.detach(), ob.detach(), 1e-5), ("attn_pos_gs", Sa.grad, Sb.grad, 1e-5),
                ("attn_pos_gv", Va.grad, Vb.grad, 1e-5)]
    except Exception as e:  # noqa: BLE001
        res.append(("attn_positional_call", np.array(f"{type(e).__name__}: {str(e)[:80]}"), np.array("works"), 0))
    # (4) convert
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 16); self.act = nn.GELU(approximate="tanh"); self.out = nn.Linear(16, 8)
            self.norm = nn.LayerNorm(8, eps=1e-12)
        def forward(self, z):
            return self.norm(z + self.out(self.act(self.fc(z))))
    m = Block()
    with torch.no_grad():
        m.norm.weight.copy_(torch.randn(8)); m.norm.bias.copy_(torch.randn(8))
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    z = torch.randn(5, 8) * 1e-3
    y_ref = m(z).detach()
    rep = memsave.convert(m)
    y_new = m(z.clone().requires_grad_(True))
    res += [("convert_out", y_new.detach(), y_ref, 1e-6),
            ("convert_eps", np.array(m.norm.eps), np.array(1e-12), 0),
            ("convert_types", np.array([type(m.act).__name__, type(m.norm).__name__]), np.array(["InplaceGELU", "InplaceLayerNorm"]), 0),
            ("convert_keys", np.array(sorted(m.state_dict().keys())), np.array(sorted(sd.keys())), 0)]
    m.load_state_dict(sd)
    res.append(("convert_reload", m(z).detach(), y_ref, 1e-6))
    return res


if __name__ == "__main__":
    for r in program(None):
        a, b_ = np.asarray(r[1].detach() if hasattr(r[1], "detach") else r[1]), np.asarray(r[2].detach() if hasattr(r[2], "detach") else r[2])
        if a.dtype.kind in "UOb":
            print(r[0], "ok" if np.array_equal(a, b_) else ("BAD", a, b_)); continue
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
