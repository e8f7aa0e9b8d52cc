"""tempo.memsave as a PyTorch user would try it on day one, vs the stock layers (torch eager):
(1) double backward (a gradient penalty / Hessian-vector product) through InplaceGELU,
InplaceLayerNorm and softmax_dropout_matmul (p = 0): either the second derivative equals the
stock layer's or the call raises -- never a silent wrong number; (2) fp16 / bf16 GELU grads
within MEMSAVE.md 1.4's floors (7e-3 / 2e-2); (3) convert() on torch's own
nn.TransformerEncoderLayer(activation=nn.GELU()) in training mode (dropout 0): outputs, loss
and every grad equal the unconverted layer's; (4) empty inputs (M = 0 rows) and the leak audit
(no tensor in vars(grad_fn))."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = ["torch:default"]


def double_backward(f_new, f_ref, x, extra=()):
    """d/dx of ||d f(x)/dx . w||^2 for both; returns (got, want) or ('raised', ...)."""
    outs = []
    for f in (f_new, f_ref):
        xx = x.detach().clone().requires_grad_(True)
        ex = [e.detach().clone().requires_grad_(True) for e in extra]
        y = f(xx, *ex)
        w = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)
        (g,) = torch.autograd.grad((y * w).sum(), xx, create_graph=True)
        pen = (g * g).sum()
        (h,) = torch.autograd.grad(pen, xx)
        outs.append(h)
    return outs


def program(cfg):
    from tempo import memsave
    torch.manual_seed(0)
    res = []
    x = torch.randn(4, 8, dtype=torch.float64)
    x = x[(x + 0.7517915).abs() > 0.05].reshape(-1)[:24].reshape(3, 8)
    # (1) double backward
    cases = {
        "gelu": (lambda z: memsave.InplaceGELU()(z), lambda z: nn.GELU()(z), ()),
        "gelu_tanh": (lambda z: memsave.InplaceGELU("tanh")(z), lambda z: nn.GELU("tanh")(z), ()),
        "layernorm": (lambda z, g, b: memsave.inplace_layer_norm(z, (8,), g, b, 1e-5),
                      lambda z, g, b: F.layer_norm(z, (8,), g, b, 1e-5),
                      (torch.rand(8, dtype=torch.float64) + 0.5, torch.randn(8, dtype=torch.float64))),
        "attention": (lambda s, v: memsave.softmax_dropout_matmul(s, v, 0.0),
                      lambda s, v: torch.softmax(s, -1) @ v,
                      (torch.randn(8, 5, dtype=torch.float64),)),
    }
    for name, (fn, fr, extra) in cases.items():
        try:
            got, want = double_backward(fn, fr, x, extra)
            res.append((f"double_backward.{name}", got, want, 1e-6))
        except Exception as e:  # raising is acceptable: a clear refusal
            res.append((f"double_backward.{name}.raises_clearly",
                        np.array("backward" in str(e).lower() or "double" in str(e).lower()
                                 or "twice" in str(e).lower() or "differentiable" in str(e).lower()),
                        np.array(True), 0))
    # (2) half precision GELU grads
    xs = torch.linspace(-5, 5, 2001)
    for dt, floor in ((torch.float16, 7e-3), (torch.bfloat16, 2e-2)):
        a = xs.to(dt).requires_grad_(True)
        memsave.InplaceGELU()(a).backward(torch.ones_like(a))
        ref = xs.to(dt).to(torch.float64).requires_grad_(True)
        F.gelu(ref).backward(torch.ones_like(ref))
        err = (a.grad.double() - ref.grad).abs().max().item()
        res.append((f"half_grad.{dt}", np.array(err <= floor), np.array(True), 0))
        res.append((f"half_grad.{dt}.dtype", np.array(str(a.grad.dtype)), np.array(str(dt)), 0))
    # (3) convert torch's TransformerEncoderLayer
    torch.manual_seed(1)
    ref = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                     activation=nn.GELU(), batch_first=True)
    new = copy.deepcopy(ref)
    rep = memsave.convert(new)
    res.append(("convert.changed_some", np.array(len(rep.changed) >= 3), np.array(True), 0))
    inp = torch.randn(2, 5, 16)
    outs = []
    for m in (ref, new):
        m.train()
        o = m(inp)
        loss = (o * torch.linspace(-1, 1, o.numel()).reshape(o.shape)).sum()
        loss.backward()
        outs.append((o.detach(), {k: p.grad.clone() for k, p in m.named_parameters()}))
    res.append(("convert.out", outs[1][0], outs[0][0], 1e-6))
    for k in outs[0][1]:
        res.append((f"convert.grad.{k}", outs[1][1][k], outs[0][1][k], 1e-4))
    # eval-mode (the stock fast path) after conversion
    ref.eval(); new.eval()
    with torch.no_grad():
        res.append(("convert.eval_out", new(inp), ref(inp), 1e-5))
    # (4) empty inputs and the leak audit
    e = torch.randn(0, 8, requires_grad=True)
    y = memsave.InplaceGELU()(e); y.sum().backward()
    res.append(("empty.gelu.grad", e.grad, torch.zeros(0, 8), 0))
    ln = memsave.InplaceLayerNorm(8)
    e2 = torch.randn(0, 8, requires_grad=True)
    ln(e2).sum().backward()
    res.append(("empty.ln.grad", e2.grad, torch.zeros(0, 8), 0))
    res.append(("empty.ln.wgrad", ln.weight.grad, torch.zeros(8), 0))
    z = torch.randn(3, 8, requires_grad=True)
    leaks = []
    for name, out in (("gelu", memsave.InplaceGELU()(z)), ("ln", memsave.InplaceLayerNorm(8)(z)),
                      ("attn", memsave.softmax_dropout_matmul(z, torch.randn(8, 2), 0.3))):
        leaks += [f"{name}.{k}" for k, v in vars(out.grad_fn).items() if isinstance(v, torch.Tensor)]
    res.append(("leak_audit", np.array(",".join(leaks)), np.array(""), 0))
    return res
