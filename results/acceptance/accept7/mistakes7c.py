"""accept7 user mistakes, round 3: PyTorch habits with the libraries (nn, optim) and
placeholders without the domain their definitions use."""
import sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core.dtype import dtypes

import os as _os
sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from mistakes_run import backend_config, case, context, run  # noqa: E402

CFG = backend_config()


def ctx3():
    return context(CFG, 3)


@case
def r01_parameters_called_like_torch():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam
    c, i, I, b, B, t, T = ctx3()
    with c:
        lin = Linear(3, 1, domain=(i,))
        x = RT.random((3,), domain=(i, b, t))
        loss = lin(x)[i, 0:B, 0:T].mean()
        loss.backward()
        Adam(lin.parameters(), [], lr=0.01).step()     # MISTAKE? torch's parameters()
        loss[0:I].sink_udf(lambda v: None)
    c.compile({I: 2, B: 2, T: 3}).execute()


@case
def r02_placeholder_without_domain():
    c, i, I, b, B, t, T = ctx3()
    with c:
        h = RT.placeholder((4,), dtypes.float32)       # MISTAKE: no domain
        h[t + 1] = h * 0.5
        h[0:T].sink_udf(lambda v: None)
    c.compile({I: 1, B: 1, T: 3}).execute()


@case
def r03_mha_wrong_embed_dim():
    from tempo.api.nn import MultiHeadAttention
    c, i, I, b, B, t, T = ctx3()
    with c:
        mha = MultiHeadAttention(8, 2, t)
        x = RT.random((6,), domain=(b, t))
        y = mha(x)                                     # MISTAKE: 6 features, MHA takes 8
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({I: 1, B: 1, T: 3}).execute()


@case
def r04_optimizer_zero_grad():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD
    c, i, I, b, B, t, T = ctx3()
    with c:
        lin = Linear(3, 1, domain=(i,))
        opt = SGD(lin.parameters, [], lr=0.01)
        opt.zero_grad()                                # MISTAKE? torch habit
        x = RT.random((3,), domain=(i, b, t))
        loss = lin(x)[i, 0:B, 0:T].mean()
        loss.backward()
        opt.step()
        loss[0:I].sink_udf(lambda v: None)
    c.compile({I: 2, B: 2, T: 3}).execute()


@case
def r05_module_on_two_update_dims():
    from tempo.api.nn import Linear
    c, i, I, b, B, t, T = ctx3()
    with c:
        lin = Linear(3, 2, domain=(i,))
        x = RT.random((3,), domain=(b, t))
        y = lin(x)                                      # fine: weights at i
        lin2 = Linear(2, 2, domain=(b,))               # a second module over b
        z = lin2(y)
        z[0:I, 0:B, 0:T].sink_udf(lambda v: None)      # MISTAKE? params never defined past 0
    c.compile({I: 2, B: 2, T: 3}).execute()


@case
def r06_lstm_state_order_swapped():
    from tempo.api.nn.rnn import LSTMCell
    c, i, I, b, B, t, T = ctx3()
    with c:
        cell = LSTMCell(3, 4)
        x = RT.random((3,), domain=(b, t))
        h = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        cc = RT.placeholder((4,), dtypes.float32, domain=(b, t))
        h[b, 0] = RT.zeros((4,)); cc[b, 0] = RT.zeros((4,))
        hn, cn = cell(x, h)                               # MISTAKE: state must be (h, c)
        h[b, t + 1] = hn; cc[b, t + 1] = cn
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({I: 1, B: 1, T: 3}).execute()


if __name__ == "__main__":
    run("mistakes7c")
