"""§6.5 Llama from an HF checkpoint with llama3 RoPE scaling (rope_parameters rope_type
'llama3', factor 8, low 1, high 4, original_max_position_embeddings 8, so with head_dim 16
one frequency is smoothed and the rest scaled), untied embeddings, GQA 4/2, theta 1e4:
(a) teacher-forced logits at all 20 positions vs HF forward; (b) from_checkpoint(...,
enable_rope_scaling=False) must equal HF WITHOUT scaling (a second HF model with the same
weights and default rope); (c) force_rope_base=500000 vs HF with rope_theta 5e5 (and the same
llama3 scaling, as get_args keeps it). Nothing in accept2-5 used rope scaling."""
import sys, os, tempfile, copy
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

V, N = 40, 20
_C = {}
SCAL = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(3)
    kw = dict(vocab_size=V, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=64,
              attn_implementation="eager")
    m = LlamaForCausalLM(LlamaConfig(rope_scaling=dict(SCAL), **kw)).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(2.0)
    d = tempfile.mkdtemp(prefix="c01_")
    m.save_pretrained(d, safe_serialization=True)
    plain = LlamaForCausalLM(LlamaConfig(**kw)).eval()
    plain.load_state_dict(m.state_dict())
    big = LlamaForCausalLM(LlamaConfig(rope_scaling=dict(SCAL, rope_theta=500000.0), rope_theta=500000.0, **kw)).eval()
    big.load_state_dict(m.state_dict())
    rng = np.random.default_rng(0)
    tok = rng.integers(0, V, size=(N,)).astype(np.int64)
    with torch.no_grad():
        refs = [x(torch.tensor(tok)[None]).logits[0].numpy() for x in (m, plain, big)]
    return d, tok, refs


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"], _C["tok"], _C["refs"] = make()
    d, TOK, refs = _C["d"], _C["tok"], _C["refs"]
    s = {}
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        tok = RT.const(TOK).cast(dtypes.default_int).index(0, t)
        for name, kw in (("scaled", {}), ("unscaled", {"enable_rope_scaling": False}),
                         ("base5e5", {"force_rope_base": 500000})):
            model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config, **kw)
            model.forward(tok)[0:T].sink_udf(grab(s, name))
    ctx.compile({T: N}).execute()
    out = [(n, s[n], r, 2e-4) for n, r in zip(("scaled", "unscaled", "base5e5"), refs)]
    # the scaling must matter here (else (a) proves nothing)
    out.append(("scaling_matters", np.array(np.abs(refs[0] - refs[1]).max() > 1e-2), np.array(True), 0))
    return out
