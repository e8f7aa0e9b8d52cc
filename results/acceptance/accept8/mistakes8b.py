"""accept8 user mistakes, round 2: backward recurrences and lexicographic chains with base
cases missing or registered after the catch-all branch, RL plumbing (an unsqueezed action
into env.step, objectives' arguments, target-network arguments), a sink callback of the
wrong arity, and one parameter stepped by two optimizers."""
import os as _os
import sys
import warnings

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


@case
def t01_backward_recurrence_without_base():
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        G = RT.placeholder((), dtypes.float32, domain=(b, t))
        G[True] = r + 0.9 * G[b, t + 1]                  # MISTAKE: no G[b, T - 1] base case
        G[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()


@case
def t02_base_case_after_catch_all():
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        G = RT.placeholder((), dtypes.float32, domain=(b, t))
        G[True] = r + 0.9 * G[b, t + 1]
        G[b, T - 1] = r                                  # MISTAKE: never taken (first wins)
        G[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()


@case
def t03_previous_without_init():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x[True] = x.previous + 1.0                       # MISTAKE: no x.init: wraps around
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def t04_init_after_previous():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.placeholder((), dtypes.float32, domain=(b, t))
        x[True] = x.previous + 1.0
        x.init = RT.const(0.0)                           # MISTAKE: registered after the catch-all
        x[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 3}).execute()


@case
def t05_n_step_returns_n_zero():
    from tempo.api.rl import bootstrapped_n_step_returns
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        v = RT.random((), domain=(b, t))
        g = bootstrapped_n_step_returns(r, v, t, n=0)    # MISTAKE
        g[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()


@case
def t06_env_step_with_batch_first_action():
    from tempo.api.rl.env.env import Env
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I, t, T = ctx2()
    with c:
        env = Env.make_env("trivial.trivial", observation_shape=(3,), continuous=False)
        net = ModelBuilder.from_env([4], (i,), env)
        obs = RT.placeholder((3,), env.observation_dtype, domain=(i, t))
        obs[i, 0] = env.reset(domain=(i,))
        a, _ = net(obs.unsqueeze(0))
        obs[i, t + 1], r, term, trunc = env.step(a)      # MISTAKE: a is (1,), squeeze(0) it
        r[0:I, 0:T].sink_udf(lambda v: None)
    c.compile({I: 1, T: 3}).execute()


@case
def t07_polyak_update_var_not_in_domain():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I, t, T = ctx2()
    with c:
        mk = lambda: ModelBuilder(domain=(i,)).with_ff_encoder(3, 4).with_qfun_decoder(2).build()  # noqa: E731
        net, tgt = mk(), mk()
        net.polyak_update(tgt, 0.1, update_var=t)        # MISTAKE: the update dim is i
    c.compile({I: 2, T: 2}).execute()


@case
def t08_copy_every_zero_steps():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I = ctx1()
    with c:
        net = ModelBuilder(domain=(i,)).with_ff_encoder(3, 4).with_qfun_decoder(2).build()
        net.copy_every(0)                                # MISTAKE
    c.compile({I: 2}).execute()


@case
def t09_sink_with_ts_callback_one_arg():
    c, b, B, t, T = ctx2()
    with c:
        x = RT.random((2,), domain=(b, t))
        x.sink_with_ts_udf(lambda v: print(v))           # MISTAKE: gets (value, symbol values)
    c.compile({B: 2, T: 2}).execute()


@case
def t10_two_optimizers_on_one_parameter():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD, Adam
    c, i, I = ctx1()
    with c:
        lin = Linear(3, 1, domain=(i,))
        loss = lin(RT.random((3,), domain=(i,))).sum()
        loss.backward()
        SGD(lin.parameters, [], lr=0.1).step()
        Adam(lin.parameters, [], lr=0.1).step()          # MISTAKE: never takes effect
        lin.w[0:I].sink_udf(lambda v: None)
    c.compile({I: 3}).execute()


@case
def t11_step_called_twice():
    from tempo.api.nn import Linear
    from tempo.api.optim.optim import SGD
    c, i, I = ctx1()
    with c:
        lin = Linear(3, 1, domain=(i,))
        loss = lin(RT.random((3,), domain=(i,))).sum()
        loss.backward()
        opt = SGD(lin.parameters, [], lr=0.1)
        opt.step()
        opt.step()                                       # MISTAKE: torch habit? (second is dead)
        lin.w[0:I].sink_udf(lambda v: None)
    c.compile({I: 3}).execute()


@case
def t12_gae_lambda_above_one():
    from tempo.api.rl import gae
    c, b, B, t, T = ctx2()
    with c:
        r = RT.random((), domain=(b, t))
        v = RT.random((), domain=(b, t))
        a = gae(r, v, t, gamma=0.9, lambda_=1.5)          # MISTAKE
        a[0:B, 0:T].sink_udf(lambda v: None)
    c.compile({B: 2, T: 4}).execute()


if __name__ == "__main__":
    run("mistakes8b")
