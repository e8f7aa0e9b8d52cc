"""§6.1 conv variants not covered before, values AND weight/input gradients vs torch (the
numpy/jax backends have their own conv kernels and conv-gradient rules): depthwise Conv2d
(groups = channels = 4, dilation (2, 1), padding (2, 1)), ConvTransposed2d(groups=2, stride 2,
dilation 2, output_padding 1, padding 1), Conv3d(stride (1, 2, 1), padding 1, no bias),
ConvTransposed3d(stride 2, output_padding (1, 0, 1)); inputs batched (N=2, ...) and a second
input over a batch DOMAIN dim b (unbatched points)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api import nn
    rng = np.random.default_rng(17)
    f = lambda *sh: (rng.normal(size=sh) * 0.5).astype(np.float32)
    X2 = f(2, 4, 7, 6); Wd, bd = f(4, 1, 3, 3), f(4, 1, 1)
    Wt2, bt2 = f(4, 3, 3, 2), f(6, 1, 1)       # ConvTransposed2d(4 -> 6, groups 2): weight (in, out/groups, k)
    X3 = f(2, 2, 4, 5, 4); W3 = f(3, 2, 3, 3, 3)
    Wt3, bt3 = f(3, 2, 2, 2, 3), f(2, 1, 1, 1)
    c = lambda a: (lambda shape, dtype, domain: RT.const(a))
    s = {}
    ctx = TempoContext(cfg, dim_names=("b",))
    ((b, B),) = ctx.variables_and_bounds
    with ctx:
        x2 = RT.const(X2, requires_grad=True)
        x3 = RT.const(X3, requires_grad=True)
        dw = nn.Conv2d(4, 4, 3, padding=(2, 1), dilation=(2, 1), groups=4, w_init_fun=c(Wd), b_init_fun=c(bd))
        ct2 = nn.ConvTransposed2d(4, 6, (3, 2), stride=2, padding=1, dilation=2, output_padding=1, groups=2,
                                  w_init_fun=c(Wt2), b_init_fun=c(bt2))
        c3 = nn.Conv3d(2, 3, 3, stride=(1, 2, 1), padding=1, bias=False, w_init_fun=c(W3))
        ct3 = nn.ConvTransposed3d(3, 2, (2, 2, 3), stride=2, output_padding=(1, 0, 1), w_init_fun=c(Wt3), b_init_fun=c(bt3))
        y2 = ct2(dw(x2).tanh())
        y3 = ct3(c3(x3).sigmoid())
        xb = x2.index(0, b % 2)              # a point per b, unbatched (C, H, W)
        yb = dw(xb)
        loss = (y2 * y2).sum() + (y3 * y3).sum() + (yb * yb).sum()[0:B].sum(0)
        loss.backward()
        for k, v in dict(y2=y2, y3=y3, gx2=x2.grad, gx3=x3.grad, gWd=dw.w.grad, gWt2=ct2.w.grad, gbt2=ct2.b.grad,
                         gW3=c3.w.grad, gWt3=ct3.w.grad).items():
            v.sink_udf(grab(s, k))
    ctx.compile({B: 3}).execute()
    F = torch.nn.functional
    T = lambda a: torch.tensor(a, requires_grad=True)
    tx2, tx3, tWd, tbd, tWt2, tbt2, tW3, tWt3, tbt3 = map(T, [X2, X3, Wd, bd, Wt2, bt2, W3, Wt3, bt3])
    dwo = lambda z: F.conv2d(z, tWd, tbd.view(-1), padding=(2, 1), dilation=(2, 1), groups=4)
    ty2 = F.conv_transpose2d(dwo(tx2).tanh(), tWt2, tbt2.view(-1), stride=2, padding=1, dilation=2, output_padding=1, groups=2)
    ty3 = F.conv_transpose3d(F.conv3d(tx3, tW3, None, stride=(1, 2, 1), padding=1).sigmoid(), tWt3, tbt3.view(-1), stride=2, output_padding=(1, 0, 1))
    tyb = dwo(tx2[[0, 1, 0]])
    tl = (ty2 ** 2).sum() + (ty3 ** 2).sum() + (tyb ** 2).sum()
    tl.backward()
    ref = dict(y2=ty2, y3=ty3, gx2=tx2.grad, gx3=tx3.grad, gWd=tWd.grad, gWt2=tWt2.grad, gbt2=tbt2.grad, gW3=tW3.grad, gWt3=tWt3.grad)
    return [(k, s[k], v.detach().numpy(), 1e-4 * max(1.0, float(v.abs().max()))) for k, v in ref.items()]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], a.shape, b_.shape, err, "ok" if a.shape == b_.shape and err <= r[3] else "BAD")
