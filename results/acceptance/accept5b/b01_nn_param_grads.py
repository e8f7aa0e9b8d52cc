"""§6.1 layers' PARAMETER GRADIENTS (not just forward) vs torch.nn autograd, summed over a batch
domain b: Conv1d(stride 2, padding 1, dilation 2), Conv2d(tuple kernel/stride/padding,
groups=2), ConvTransposed1d(stride 2, output_padding 1), Flatten, Linear, RMSNorm over two
trailing dims (eps 1e-5), LayerNorm(no bias), Embedding with repeated ids (scatter-add of
gradients), activation modules Elu(0.5), LeakyRelu(0.2), Mish, Softplus(beta=2),
Softmax(stable=False), Swish, ActivationFunction.from_('tanh')."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

B_ = 3


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import nn
    from tempo.api.nn.flatten import Flatten
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(5)
    f32 = lambda *s: rng.normal(size=s).astype(np.float32) * 0.5
    X1 = f32(B_, 3, 13)
    X2 = f32(B_, 4, 5, 7)
    IDS = np.array([[1, 3, 1, 1], [0, 3, 2, 1], [4, 4, 4, 0]], dtype=np.int64)
    Wc1, bc1 = f32(4, 3, 3), f32(4, 1)
    Wc2, bc2 = f32(6, 2, 2, 3), f32(6, 1, 1)
    Wt, bt = f32(4, 2, 3), f32(2, 1)
    E = f32(5, 6)
    rms_w = f32(2, 3) + 1.0
    ln_w = f32(6) + 1.0
    ctx = TempoContext(cfg, dim_names=("b",))
    ((b, B),) = ctx.variables_and_bounds
    s = {}
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    with ctx:
        x1 = RT.const(X1).index(0, b)
        x2 = RT.const(X2).index(0, b)
        ids = RT.const(IDS).index(0, b)
        conv1 = nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=2, w_init_fun=c(Wc1), b_init_fun=c(bc1))
        conv2 = nn.Conv2d(4, 6, kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), groups=2,
                          w_init_fun=c(Wc2), b_init_fun=c(bc2))
        convt = nn.ConvTransposed1d(4, 2, 3, stride=2, output_padding=1, w_init_fun=c(Wt), b_init_fun=c(bt))
        emb = nn.Embedding(5, 6, w_init_fun=c(E))
        rms = nn.RMSNorm((2, 3), eps=1e-5, w_init_fun=c(rms_w))
        ln = nn.LayerNorm(6, bias=False, w_init_fun=c(ln_w))
        h1 = conv1(x1)                       # (4, 6)
        s1 = nn.Elu(0.5)(h1).sum() + nn.LeakyRelu(0.2)(convt(h1)).sum()
        h2 = conv2(x2)                       # (6, 6, 3)
        h2f = Flatten()(h2)                  # (108,)
        s2 = nn.Mish()(h2f).sum() + (nn.Softplus(beta=2.0)(h2f) * h2f).sum()
        e = emb(ids)                         # (4, 6)
        r = rms(e.reshape((4, 2, 3)))
        s3 = (nn.Softmax(stable=False)(ln(e)) * r.reshape((4, 6))).sum() + \
            (nn.Swish()(r) * nn.ActivationFunction.from_("tanh")(r)).sum()
        loss = s1 + s2 + s3
        loss.backward()
        for name, p in [("c1w", conv1.w), ("c1b", conv1.b), ("c2w", conv2.w), ("c2b", conv2.b),
                        ("ctw", convt.w), ("ctb", convt.b), ("E", emb.embed_table), ("rms", rms.w), ("ln", ln.w)]:
            p.grad.sink_udf(grab(s, name))
        loss[0:B].sink_udf(grab(s, "loss"))
    ctx.compile({B: B_}).execute()
    # torch
    T = lambda a: torch.tensor(a, requires_grad=True)
    tp = {k: T(v) for k, v in dict(c1w=Wc1, c1b=bc1, c2w=Wc2, c2b=bc2, ctw=Wt, ctb=bt, E=E, rms=rms_w, ln=ln_w).items()}
    F = torch.nn.functional
    h1 = F.conv1d(torch.tensor(X1), tp["c1w"], tp["c1b"].view(-1), stride=2, padding=1, dilation=2)
    s1 = F.elu(h1, 0.5).sum((1, 2)) + F.leaky_relu(F.conv_transpose1d(h1, tp["ctw"], tp["ctb"].view(-1), stride=2, output_padding=1), 0.2).sum((1, 2))
    h2 = F.conv2d(torch.tensor(X2), tp["c2w"], tp["c2b"].view(-1), stride=(1, 2), padding=(1, 0), groups=2)
    h2f = h2.flatten(1)
    s2 = F.mish(h2f).sum(1) + (F.softplus(h2f, beta=2.0) * h2f).sum(1)
    e = tp["E"][torch.tensor(IDS)]
    r = F.rms_norm(e.reshape(B_, 4, 2, 3), (2, 3), tp["rms"], eps=1e-5)
    lnv = F.layer_norm(e, (6,), tp["ln"], None)
    s3 = (torch.softmax(lnv, -1) * r.reshape(B_, 4, 6)).sum((1, 2)) + (F.silu(r) * torch.tanh(r)).sum((1, 2, 3))
    loss = s1 + s2 + s3
    loss.sum().backward()
    out = [("loss", s["loss"], loss.detach().numpy(), 1e-4)]
    for k in tp:
        out.append((k, s[k], tp[k].grad.numpy(), 2e-4 * max(1.0, float(tp[k].grad.abs().max()))))
    return out


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        print(r[0], np.max(np.abs(np.asarray(r[1]) - np.asarray(r[2]))))
