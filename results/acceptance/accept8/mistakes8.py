"""accept8 user mistakes: the RL network builder and target networks, UDF sources with a
vectorised form, optimiser arguments spelled the torch way, torch dtypes, masks and
reductions, lexicographic reads. Not repeating accept3-7's (see their mistakes*.py)."""
import os as _os
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT  # noqa: E402
from tempo.core.dtype import dtypes  # noqa: E402

sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from mistakes_run import backend_config, case, context, run  # noqa: E402

CFG = backend_config()


def ctx1():
    return context(CFG, 1)


def ctx2():
    return context(CFG, 2)


def _conv(a):
    if CFG.backend == "torch":
        import torch
        return torch.from_numpy(np.asarray(a))
    return np.asarray(a)


@case
def s01_qvalues_before_forward():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        net = ModelBuilder(domain=(i,)).with_ff_encoder(3, 4).with_qfun_decoder(2).build()
        q = net.qvalues()                                # MISTAKE: no forward yet
        q[0:I].sink_udf(lambda v: None)
    c.compile({I: 2}).execute()


@case
def s02_network_obs_without_batch_dim():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        net = ModelBuilder(domain=(i,)).with_ff_encoder(3, 4).with_qfun_decoder(2).build()
        a, _ = net(RT.random((3,), domain=(i,)))         # MISTAKE: (3,), not (1, 3)
        a[0:I].sink_udf(lambda v: None)
    c.compile({I: 2}).execute()


@case
def s03_polyak_tau_above_one():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        mk = lambda: ModelBuilder(domain=(i,)).with_ff_encoder(3, 4).with_qfun_decoder(2).build()  # noqa: E731
        net, tgt = mk(), mk()
        net.polyak_update(tgt, tau=5.0)                  # MISTAKE: tau in [0, 1]
    c.compile({I: 2}).execute()


@case
def s04_qfun_decoder_then_vfun_decoder():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        ModelBuilder(domain=(i,)).with_ff_encoder(3, 4).with_qfun_decoder(2) \
            .with_vfun_decoder().build()                 # MISTAKE: value head is for policies
    c.compile({I: 2}).execute()


@case
def s05_cnn_encoder_without_obs_shape():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        ModelBuilder(domain=(i,)).with_cnn_encoder([(1, 2, 3, 1, 0, "relu")]) \
            .with_ff_hidden([8]).with_qfun_decoder(2).build()   # MISTAKE: flattened size unknown
    c.compile({I: 2}).execute()


@case
def s06_lazy_vec_forgets_the_size_dim():
    c, b, B, t, T = ctx2()
    data = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    with c:
        x = RT.source_with_ts_udf(
            lambda ts: _conv(data[ts[b], ts[t]]), (3,), dtypes.float32, domain=(b, t),
            lazy_vectorized_version=lambda dim, size: (lambda ts: _conv(data[0, 0])))  # MISTAKE
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def s07_source_udf_returns_wrong_shape():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.source_with_ts_udf(lambda ts: _conv(np.zeros(4, np.float32)), (3,),
                                  dtypes.float32, domain=(b, t))   # MISTAKE: gives (4,)
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def s08_lazy_vec_returns_array_not_function():
    c, b, B, t, T = ctx2()
    data = np.zeros((2, 5, 3), np.float32)
    with c:
        x = RT.source_with_ts_udf(
            lambda ts: _conv(data[ts[b], ts[t]]), (3,), dtypes.float32, domain=(b, t),
            lazy_vectorized_version=lambda dim, size: _conv(data[:, 0]))  # MISTAKE: not a function
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 5}).execute()


@case
def s09_adam_betas_torch_keyword():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam
    c, i, I = ctx1()
    with c:
        lin = Linear(3, 1, domain=(i,))
        loss = lin(RT.random((3,), domain=(i,))).sum()
        loss.backward()
        Adam(lin.parameters, [], lr=0.01, betas=(0.9, 0.99)).step()  # MISTAKE: torch's betas
    c.compile({I: 2}).execute()


@case
def s10_adam_weight_decay_keyword():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import Adam
    c, i, I = ctx1()
    with c:
        lin = Linear(3, 1, domain=(i,))
        loss = lin(RT.random((3,), domain=(i,))).sum()
        loss.backward()
        Adam(lin.parameters, [], lr=0.01, weight_decay=0.1).step()  # MISTAKE: AdamW(wd=)
    c.compile({I: 2}).execute()


@case
def s11_sgd_nesterov_without_momentum():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD
    c, i, I = ctx1()
    with c:
        lin = Linear(3, 1, domain=(i,))
        loss = lin(RT.random((3,), domain=(i,))).sum()
        loss.backward()
        SGD(lin.parameters, [], lr=0.1, nesterov=True).step()     # MISTAKE: needs momentum
        lin.w[0:I].sink_udf(lambda v: None)
    c.compile({I: 2}).execute()


@case
def s12_negative_max_norm():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD
    c, i, I = ctx1()
    with c:
        lin = Linear(3, 1, domain=(i,))
        loss = lin(RT.random((3,), domain=(i,))).sum()
        loss.backward()
        SGD(lin.parameters, [], lr=0.1, max_norm=-1.0).step()     # MISTAKE
    c.compile({I: 2}).execute()


@case
def s13_cast_to_torch_dtype():
    import torch
    c, b, B, t, T = ctx2()
    with c:
        y = RT.random((3,), domain=(b, t)).cast(torch.float16)   # MISTAKE: torch dtype
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s14_placeholder_torch_dtype():
    import torch
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((3,), torch.float32, domain=(b, t))   # MISTAKE: torch dtype
        h[b, 0] = RT.zeros((3,))
        h[b, t + 1] = h + 1.0
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s15_python_float_into_half_recurrence():
    c, b, B, t, T = ctx2()
    with c:
        h = RT.placeholder((3,), dtypes.float16, domain=(b, t))
        h[b, 0] = RT.zeros((3,), dtypes.float16)
        h[b, t + 1] = 0.5 * h                              # MISTAKE: 0.5 is float32 (API 5)
        h[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s16_where_with_float_condition():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = RT.where(x - 0.5, x, 0.0)                      # MISTAKE: float condition
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s17_masked_fill_torch_method():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((3,), domain=(b, t))
        y = x.masked_fill(x > 0.5, 0.0)                    # MISTAKE: torch method (API: where)
        y[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s18_topk_torch_method():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((5,), domain=(b, t))
        v, k = x.topk(2)                                   # MISTAKE: not in API (sort)
        v[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s19_argmax_dim_out_of_range():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((5,), domain=(b, t))
        k = x.argmax(dim=1)                                # MISTAKE: 1-D point (default dim=1!)
        k[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s20_cumsum_of_scalar_point():
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        g = r.cumsum(0)                                    # MISTAKE: slice first, r[b, 0:t+1]
        g[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s21_suffix_discount_length_mismatch():
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        disc = 0.9 ** RT.arange(T).cast(dtypes.float32)    # MISTAKE: length T, suffix is T - t
        g = (disc * r[b, t:T]).sum(0)
        g[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()


@case
def s22_previous_on_shifted_read():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x.init = RT.const(1.0)
        x[True] = x[b, t - 1].previous + 1.0               # MISTAKE: previous of an indexed read
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def s23_bootstrapped_returns_vector_value():
    from tempo.api.rl import bootstrapped_n_step_returns
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        v = RT.random((1,), domain=(b, t))                 # MISTAKE: value head's (1,), not ()
        g = bootstrapped_n_step_returns(r, v, t, n=2)
        g[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()


@case
def s24_from_env_no_hidden():
    from tempo.api.rl.env.env import Env
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        env = Env.make_env("trivial.trivial", observation_shape=(3,), continuous=False)
        ModelBuilder.from_env([], (i,), env)              # MISTAKE: needs a hidden size
    c.compile({I: 2}).execute()


if __name__ == "__main__":
    run("mistakes8")
