"""§6.1 layers vs torch.nn with the same weights, over a time dim: ConvTransposed1d/2d
(stride, padding, output_padding, dilation, groups), Conv3d (stride/padding tuples),
LSTMCell over time (h, c recurrence), Embedding of int ids, SwiGLU = silu(xW+b)*(xV+c),
Flatten(start_dim=1), FullyConnected shapes, activation modules via ActivationFunction.from_."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

T_ = 3

def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.nn import ConvTransposed1d, ConvTransposed2d, Conv3d, ActivationFunction, Embedding
    from tempo.api.nn.rnn import LSTMCell
    from tempo.api.nn.swiglu import SwiGLU
    from tempo.api.nn.flatten import Flatten
    from tempo.core.dtype import dtypes
    rng = np.random.default_rng(5)
    def cinit(arr):
        return lambda shape, dtype, domain: RT.const(arr)
    X1 = rng.normal(size=(T_, 2, 4, 5)).astype(np.float32)     # (N, C=4, L=5)
    X2 = rng.normal(size=(T_, 1, 4, 3, 3)).astype(np.float32)  # (N, C, H, W)
    X3 = rng.normal(size=(T_, 1, 2, 5, 4, 4)).astype(np.float32)
    W1 = rng.normal(size=(4, 3, 3)).astype(np.float32) * 0.3   # transposed: (in, out/groups, k), groups=2 -> out 6
    B1 = rng.normal(size=(6,)).astype(np.float32)
    W2 = rng.normal(size=(4, 2, 2, 3)).astype(np.float32) * 0.3
    W3 = rng.normal(size=(3, 2, 2, 3, 3)).astype(np.float32) * 0.3
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    s = {}
    with ctx:
        ct1 = ConvTransposed1d(4, 6, 3, stride=2, padding=1, output_padding=1, dilation=1, groups=2,
                               w_init_fun=cinit(W1), b_init_fun=cinit(B1.reshape(6, 1)))
        ct2 = ConvTransposed2d(4, 2, (2, 3), stride=(2, 1), padding=(0, 1), dilation=(1, 2), bias=False, w_init_fun=cinit(W2))
        c3 = Conv3d(2, 3, (2, 3, 3), stride=(1, 2, 1), padding=(0, 1, 1), bias=False, w_init_fun=cinit(W3))
        x1 = RT.const(X1).index(0, t); x2 = RT.const(X2).index(0, t); x3 = RT.const(X3).index(0, t)
        ct1(x1)[0:T].sink_udf(grab(s, "ct1"))
        ct2(x2)[0:T].sink_udf(grab(s, "ct2"))
        c3(x3)[0:T].sink_udf(grab(s, "c3"))
        Flatten(start_dim=1)(x2)[0:T].sink_udf(grab(s, "flat"))
        # LSTM over time
        H = 3
        lstm = LSTMCell(4, H)
        xs = RT.const(X1[:, 0, :, 0]).index(0, t)   # (4,)
        h = RT.placeholder((H,), dtypes.float32, domain=(t,)); c = RT.placeholder((H,), dtypes.float32, domain=(t,))
        h[0] = RT.zeros((H,)); c[0] = RT.zeros((H,))
        h1, c1 = lstm(xs, (h, c))
        h[t + 1] = h1; c[t + 1] = c1
        h1[0:T].sink_udf(grab(s, "lstm_h")); c1[0:T].sink_udf(grab(s, "lstm_c"))
        lstm_sd = {k: v for k, v in lstm.flat_state_dict().items()}
        emb = Embedding(10, 4)
        ids = RT.const(np.array([[3, 1], [0, 9], [5, 5]])).cast(dtypes.default_int).index(0, t)
        emb(ids)[0:T].sink_udf(grab(s, "emb"))
        emb.embed_table.sink_udf(grab(s, "emb_table"))
        sw = SwiGLU(4, 2)
        sw(xs)[0:T].sink_udf(grab(s, "swiglu"))
        for name in ("swish_w", "swish_b", "lin_w", "lin_b"):
            pass
        sw.swish_linear_layer.w.sink_udf(grab(s, "sw_W")); sw.swish_linear_layer.b.sink_udf(grab(s, "sw_b"))
        sw.linear_layer.w.sink_udf(grab(s, "sw_V")); sw.linear_layer.b.sink_udf(grab(s, "sw_c"))
        for lname in lstm_sd:
            pass
        lstm_params = lstm.parameters
        for j, p in enumerate(lstm_params):
            p.sink_udf(grab(s, f"lstm_p{j}"))
        acts = {n: ActivationFunction.from_(n) for n in ("relu", "sigmoid", "tanh", "silu", "elu", "leakyrelu", "mish", "softplus", "softmax")}
        for n, a in acts.items():
            a(xs)[0:T].sink_udf(grab(s, "act_" + n))
    ctx.compile({T: T_}).execute()
    F = torch.nn.functional
    ref = {}
    ref["ct1"] = torch.stack([F.conv_transpose1d(torch.tensor(X1[k]), torch.tensor(W1), torch.tensor(B1), stride=2, padding=1, output_padding=1, groups=2) for k in range(T_)])
    ref["ct2"] = torch.stack([F.conv_transpose2d(torch.tensor(X2[k]), torch.tensor(W2), stride=(2, 1), padding=(0, 1), dilation=(1, 2)) for k in range(T_)])
    ref["c3"] = torch.stack([F.conv3d(torch.tensor(X3[k]), torch.tensor(W3), stride=(1, 2, 1), padding=(0, 1, 1)) for k in range(T_)])
    ref["flat"] = torch.tensor(X2).flatten(2)
    # LSTM: find weights from our parameters by shape: torch LSTMCell(4,3) has weight_ih (12,4), weight_hh (12,3), biases (12,)
    ps = [s[f"lstm_p{j}"] for j in range(len(lstm_params))]
    tl = torch.nn.LSTMCell(4, 3)
    big = [p for p in ps if p.shape == (12, 4)] + [p for p in ps if p.shape == (12, 3)] + [p for p in ps if p.shape == (12,)]
    if len(big) == 4:
        with torch.no_grad():
            tl.weight_ih.copy_(torch.tensor(big[0])); tl.weight_hh.copy_(torch.tensor(big[1]))
            tl.bias_ih.copy_(torch.tensor(big[2])); tl.bias_hh.copy_(torch.tensor(big[3]))
        hh, cc = torch.zeros(3), torch.zeros(3); Hs, Cs = [], []
        for k in range(T_):
            hh, cc = tl(torch.tensor(X1[k, 0, :, 0]), (hh, cc)); Hs.append(hh); Cs.append(cc)
        ref["lstm_h"], ref["lstm_c"] = torch.stack(Hs).detach(), torch.stack(Cs).detach()
    else:
        ref["lstm_layout"] = None
    ref["emb"] = torch.tensor(s["emb_table"])[torch.tensor([[3, 1], [0, 9], [5, 5]])]
    xs_t = torch.tensor(X1[:, 0, :, 0])
    ref["swiglu"] = F.silu(xs_t @ torch.tensor(s["sw_W"]).T + torch.tensor(s["sw_b"])) * (xs_t @ torch.tensor(s["sw_V"]).T + torch.tensor(s["sw_c"]))
    tf = {"relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "silu": F.silu, "elu": F.elu, "leakyrelu": F.leaky_relu,
          "mish": F.mish, "softplus": F.softplus, "softmax": lambda z: z.softmax(-1)}
    for n, f in tf.items():
        ref["act_" + n] = f(xs_t)
    res = []
    for k, v in ref.items():
        if v is None:
            res.append((k, np.array("our LSTMCell params are not torch's 4 tensors"), np.array("torch layout"), 0)); continue
        res.append((k, s[k], v.numpy(), 1e-4 * max(1.0, float(v.abs().max()))))
    return res
