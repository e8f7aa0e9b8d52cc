"""accept6 mistakes (libraries in time, configs, dynamic bounds): each should raise a
TempoError subclass naming the user's file:line (mistakes6.py:N) in the user's words.
Run: python mistakes6.py [backend]."""
import sys, warnings, os
import numpy as np
warnings.simplefilter("ignore")
import torch
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.api import nn
from tempo.api.nn.multihead_attention import MultiHeadAttention
from tempo.api.nn.utils import clip_norm
from tempo.api.optim.optim import SGD, Adam
from tempo.api.rl.env.env import Env
from tempo.api.rl.replay_buffer.replay_buffer import ReplayBuffer
from tempo.api.data import DataLoader
from tempo.api import rl

BE = sys.argv[1] if len(sys.argv) > 1 else "torch"
CFG = ExecutionConfig(dev="cpu", backend=BE)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mistakes_run import case, run  # noqa: E402


def ctx1():
    c = TempoContext(CFG, dim_names=("i", "t"))
    (i, I), (t, T) = c.variables_and_bounds
    return c, i, I, t, T


@case
def m01_lr_schedule_as_tensor():
    c, i, I, t, T = ctx1()
    with c:
        lin = nn.Linear(3, 1, domain=(i,))
        loss = lin(RT.ones((3,))).sum()
        loss.backward()
        SGD(lin.parameters, [], lr=0.1 * 0.9 ** RT.from_symbol(i)).step()  # MISTAKE: lr must be a float
    c.compile({I: 3, T: 2}).execute()


@case
def m02_negative_lr():
    c, i, I, t, T = ctx1()
    with c:
        lin = nn.Linear(3, 1, domain=(i,))
        Adam(lin.parameters, [], lr=-0.01)  # MISTAKE: negative lr


@case
def m03_replay_insert_wrong_shape():
    c, i, I, t, T = ctx1()
    with c:
        buf = ReplayBuffer.make(10, [(4,), ()], [dtypes.float32, dtypes.int64])
        buf.insert((RT.ones((3,), domain=None), RT.const(1, dtype=dtypes.int64)))  # MISTAKE: obs (3,) into (4,)


@case
def m04_replay_sample_without_token():
    c, i, I, t, T = ctx1()
    with c:
        buf = ReplayBuffer.make(10, [()], [dtypes.float32])
        x = RT.random(domain=(i, t))
        buf.insert((x,))
        (s,) = buf.sample((i,))  # MISTAKE: no token: sampling may run before any insert
        s.sink_udf(lambda v: None)
    c.compile({I: 2, T: 3}).execute()


@case
def m05_dataloader_batch_too_big():
    c, i, I, t, T = ctx1()
    ds = torch.utils.data.TensorDataset(torch.ones(5, 2))
    with c:
        DataLoader.from_torch_dataset(ds, batch_size=8).sample((i,))  # MISTAKE: 5 items, batch 8


@case
def m06_mha_pattern_over_other_dim():
    c, i, I, t, T = ctx1()
    with c:
        x = RT.random((8,), domain=(i, t))
        mha = MultiHeadAttention(8, 2, t)
        y = mha(x, ie.slice_(0, i + 1))  # MISTAKE: the pattern ranges over i, not the sequence dim t
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 3}).execute()


@case
def m07_mha_input_without_seq_dim():
    c, i, I, t, T = ctx1()
    with c:
        x = RT.random((8,), domain=(i,))
        y = MultiHeadAttention(8, 2, t)(x)  # MISTAKE: x has no t
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 3}).execute()


@case
def m08_env_step_action_shape_vec():
    c, i, I, t, T = ctx1()
    with c:
        env = Env.make_env("gym.Pendulum-v1", num_envs=3)
        obs = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, t))
        obs[i, 0] = env.reset(domain=(i,))
        obs[i, t + 1], r, d, tr = env.step(RT.zeros((3,), domain=None) + obs.sum() * 0)  # MISTAKE: needs (3, 1)


@case
def m09_bool_bound_not_over_dim():
    c, i, I, t, T = ctx1()
    with c:
        x = RT.random(domain=(i, t))
        done = RT.random(domain=(i,)) > 0.5
        x.sink_udf(lambda v: None)
    c.compile({I: 2, T: (5, done)}).execute()  # MISTAKE: done does not vary along t


@case
def m10_bool_bound_float():
    c, i, I, t, T = ctx1()
    with c:
        x = RT.random(domain=(i, t))
        x.sink_udf(lambda v: None)
    c.compile({I: 2, T: (5, x)}).execute()  # MISTAKE: a float stop tensor


@case
def m11_clip_norm_empty():
    c, i, I, t, T = ctx1()
    with c:
        clip_norm([], 1.0)  # MISTAKE: no gradients


@case
def m12_conv1d_kernel_longer_than_input():
    c, i, I, t, T = ctx1()
    with c:
        conv = nn.Conv1d(2, 3, kernel_size=5)
        y = conv(RT.ones((2, 3)))  # MISTAKE: length 3 < kernel 5
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 2}).execute()


@case
def m13_gae_value_shape():
    c, i, I, t, T = ctx1()
    with c:
        r = RT.random(domain=(i, t))
        v = RT.random((2,), domain=(i, t))
        rl.gae(r, v, t).sink_udf(lambda x: None)  # MISTAKE: value (2,) vs reward ()
    c.compile({I: 2, T: 3}).execute()


@case
def m14_config_unknown_backend_value():
    c, i, I, t, T = ctx1()
    with c:
        RT.random(domain=(i,)).sink_udf(lambda v: None)
    c.execution_config = ExecutionConfig(dev="cpu", backend="tensorflow")  # MISTAKE: unknown backend
    c.compile({I: 2, T: 2}).execute()


@case
def m15_config_bad_knob():
    c, i, I, t, T = ctx1()
    with c:
        RT.random(domain=(i,)).sink_udf(lambda v: None)
    import dataclasses
    c.execution_config = dataclasses.replace(CFG, inc_statify_block_size=0)  # MISTAKE: block size 0
    c.compile({I: 2, T: 2}).execute()


@case
def m16_embedding_id_out_of_range():
    c, i, I, t, T = ctx1()
    with c:
        e = nn.Embedding(4, 3)
        y = e(RT.const(np.array([1, 7]), dtype=dtypes.int64))  # MISTAKE: id 7 of a 4-word table
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 2}).execute()


@case
def m17_sample_shape_float_actions_into_log_prob():
    c, i, I, t, T = ctx1()
    from tempo.api.distributions import Categorical
    with c:
        d = Categorical(logits=RT.random((4,), domain=(i,)))
        d.log_prob(RT.const(1.5)).sink_udf(lambda v: None)  # MISTAKE: a float class index
    c.compile({I: 2, T: 2}).execute()


@case
def m18_dynamic_bound_read_past_stop():
    c, i, I, t, T = ctx1()
    with c:
        x = RT.from_symbol(t).cast(dtypes.float32)
        done = RT.from_symbol(t) >= 2
        x[0:T + 1].sum().sink_udf(lambda v: None)  # MISTAKE: reads one past the end T
    c.compile({I: 1, T: (6, done)}).execute()


@case
def m19_optimizer_params_of_two_domains():
    c, i, I, t, T = ctx1()
    with c:
        a = nn.Linear(3, 1, domain=(i,))
        b = nn.Linear(3, 1, domain=(t,))
        (a(RT.ones((3,))).sum() + b(RT.ones((3,))).sum()).backward()
        SGD(a.parameters + b.parameters, [], lr=0.1).step()  # MISTAKE: parameters over (i) and (t)


@case
def m20_windowed_size_zero():
    c, i, I, t, T = ctx1()
    with c:
        x = RT.random((8,), domain=(i, t))
        y = MultiHeadAttention(8, 2, t).windowed_forward(x, 0)  # MISTAKE: a window of 0 tokens
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 3}).execute()


run("mistakes6")
