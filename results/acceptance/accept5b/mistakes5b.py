"""accept5b library mistakes: each should raise a TempoError subclass naming the user's
file:line (mistakes5b.py:N) in the user's words. Run: python mistakes5b.py [backend]."""
import re, sys, traceback, warnings, os, tempfile
import numpy as np
warnings.simplefilter("ignore")
from tempo.api import RecurrentTensor as RT, TempoContext
from tempo.core import index_expr as ie
from tempo.core.configs import ExecutionConfig
from tempo.core.dtype import dtypes
from tempo.core.errors import TempoError
from tempo.api import nn
from tempo.api.nn.rnn import LSTMCell
from tempo.api.distributions import Categorical, Normal
from tempo.api.optim.optim import SGD, Adam

BE = sys.argv[1] if len(sys.argv) > 1 else "torch"
CFG = ExecutionConfig(dev="cpu", backend=BE)
import os as _os
sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from mistakes_run import case, run  # noqa: E402 (the shared runner, ../mistakes_run.py)

def ctx1():
    c = TempoContext(CFG, dim_names=("i", "t"))
    (i, I), (t, T) = c.variables_and_bounds
    return c, i, I, t, T

@case
def n01_embedding_float_ids():
    c, i, I, t, T = ctx1()
    with c:
        e = nn.Embedding(5, 3)
        y = e(RT.const(np.array([0.0, 1.0, 2.0], np.float32)))   # MISTAKE: float ids
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 2}).execute()
@case
def n02_conv_wrong_channels():
    c, i, I, t, T = ctx1()
    with c:
        conv = nn.Conv2d(3, 4, 3)
        y = conv(RT.ones((2, 5, 8, 8)))        # MISTAKE: 5 channels into Conv2d(3, ...)
        y.sink_udf(lambda v: None)
    c.compile({I: 2, T: 2}).execute()
@case
def n03_lstm_state_not_tuple():
    c, i, I, t, T = ctx1()
    with c:
        cell = LSTMCell(3, 4)
        h = cell(RT.ones((3,)), RT.zeros((4,)))  # MISTAKE: LSTMCell takes (h, c)
@case
def n04_normal_shapes():
    c, i, I, t, T = ctx1()
    with c:
        Normal(RT.zeros((3,)), RT.ones((4,)))   # MISTAKE: shapes do not broadcast
@case
def n05_step_before_backward():
    c, i, I, t, T = ctx1()
    with c:
        lin = nn.Linear(3, 2, domain=(i,))
        Adam(lin.parameters, lin.buffers).step()   # MISTAKE: no backward()
@case
def n06_sgd_on_module():
    c, i, I, t, T = ctx1()
    with c:
        lin = nn.Linear(3, 2, domain=(i,))
        SGD(lin, lr=0.1)                     # MISTAKE: the module, not .parameters
@case
def n07_params_without_update_domain():
    c, i, I, t, T = ctx1()
    with c:
        lin = nn.Linear(3, 2)                  # MISTAKE: no domain=(i,): nothing to update along
        (lin(RT.ones((3,))) ** 2).sum().backward()
        SGD(lin.parameters, lin.buffers).step()
@case
def n08_gae_without_time_dim():
    from tempo.api import rl
    c, i, I, t, T = ctx1()
    with c:
        r = RT.random((), domain=(i,))
        rl.gae(r, r, t)                        # MISTAKE: rewards have no t
@case
def n09_env_unknown():
    from tempo.api.rl.env.env import Env
    c, i, I, t, T = ctx1()
    with c:
        Env.make_env("gym.CartPoIe-v1")        # MISTAKE: typo in the id
@case
def n10_env_float_actions_discrete():
    from tempo.api.rl.env.env import Env
    c, i, I, t, T = ctx1()
    with c:
        env = Env.make_env("gym.CartPole-v1")
        o = RT.placeholder(env.observation_shape, env.observation_dtype, domain=(i, t))
        o[i, 0] = env.reset(domain=(i,))
        o[i, t + 1], r, te, tr = env.step(RT.random((), domain=(i, t)))   # MISTAKE: float action
@case
def n11_llama_missing_dir():
    from tempo.api.llm.models.llama import Llama
    c, i, I, t, T = ctx1()
    with c:
        Llama.from_checkpoint("/nonexistent/llama", t, 32, dtypes.float32, CFG)   # MISTAKE
@case
def n12_llama_float_tokens():
    from tempo.api.llm.models.llama import Llama, LlamaArgs
    c, i, I, t, T = ctx1()
    with c:
        m = Llama(LlamaArgs(dim=16, n_heads=2, n_layers=1, vocab_size=10, multiple_of=16), t)
        m.forward(RT.random((), domain=(t,)))   # MISTAKE: float "tokens"
@case
def n13_statedict_missing_key():
    c, i, I, t, T = ctx1()
    with c:
        lv, L = c.new_perm_var(3)
        sd = {"layers.0.w": np.ones((2, 2), np.float32), "layers.1.w": np.ones((2, 2), np.float32)}
        w = RT.init_from_statedict(sd, lambda ts: f"layers.{list(ts.values())[0]}.w", shape=(2, 2),
                                   dtype=dtypes.float32, domain=(lv,))   # MISTAKE: no layer 2
        w[0:L].sink_udf(lambda v: None)
    c.compile({I: 2, T: 2}).execute()
@case
def n14_categorical_both():
    c, i, I, t, T = ctx1()
    with c:
        Categorical(probs=RT.ones((3,)), logits=RT.ones((3,)))   # MISTAKE
@case
def n15_mha_heads_do_not_divide():
    c, i, I, t, T = ctx1()
    with c:
        nn.MultiHeadAttention(10, 3, t)         # MISTAKE: 3 heads do not divide 10
@case
def n16_sequential_shape_mismatch():
    c, i, I, t, T = ctx1()
    with c:
        net = nn.Sequential(nn.Linear(4, 5), nn.Relu(), nn.Linear(6, 2))   # MISTAKE: 5 -> 6
        net(RT.ones((4,))).sink_udf(lambda v: None)
@case
def n17_sample_bad_top_p():
    from tempo.api.llm.models.llama import Llama
    c, i, I, t, T = ctx1()
    with c:
        Llama.sample(RT.random((5,), domain=(t,)), temperature=0.8, top_p=1.5)   # MISTAKE: top_p > 1
@case
def n18_fixed_then_step():
    c, i, I, t, T = ctx1()
    with c:
        lin = nn.Linear(3, 2, domain=(i,))
        lin.fixed()
        (lin(RT.ones((3,))) ** 2).sum().backward()
        SGD(lin.parameters, lin.buffers).step()   # MISTAKE: fixed() already defined them
@case
def n19_rmsnorm_wrong_shape():
    c, i, I, t, T = ctx1()
    with c:
        nn.RMSNorm(4)(RT.ones((2, 3)))          # MISTAKE: last dim 3, not 4
@case
def n20_polyak_different_arch():
    from tempo.api.rl.networks.model_builder import ModelBuilder
    c, i, I, t, T = ctx1()
    with c:
        a = ModelBuilder(domain=(i,)).with_ff_encoder((4,), 3).with_qfun_decoder(2).build()
        b = ModelBuilder(domain=(i,)).with_ff_encoder((4,), 5).with_qfun_decoder(2).build()
        a.polyak_update(b, 0.1)                 # MISTAKE: different widths

run("mistakes5b")
