"""§6.5: the original's demo setting dtypes.default_float = float16 and
Llama.from_checkpoint(..., dtype=float16): teacher-forced logits over (b, t) vs HF
LlamaForCausalLM in float32 on the same (fp16-rounded) weights, within fp16 precision, and the
logits' dtype is float16; greedy decoding of 6 tokens equals HF's (sharp logits: no near
ties). default_float is restored afterwards. A Meta-layout checkpoint (params.json +
consolidated.00.pth with ffn_dim_multiplier 1.3 and multiple_of 16)."""
import sys, os, json, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

V = 40
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(2)
    dim, mult, mo = 32, 1.3, 16
    hidden = int(2 * 4 * dim / 3); hidden = int(mult * hidden); hidden = mo * ((hidden + mo - 1) // mo)
    hc = LlamaConfig(vocab_size=V, hidden_size=dim, intermediate_size=hidden, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                     max_position_embeddings=64, attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
            p.copy_(p.half().float())   # fp16-exact weights
    def unperm(w, nh):
        o, i = w.shape
        return w.view(nh, 2, o // nh // 2, i).transpose(1, 2).reshape(o, i)
    sd = {"tok_embeddings.weight": m.model.embed_tokens.weight, "norm.weight": m.model.norm.weight, "output.weight": m.lm_head.weight}
    for l, layer in enumerate(m.model.layers):
        a = layer.self_attn
        sd.update({f"layers.{l}.attention.wq.weight": unperm(a.q_proj.weight, 4), f"layers.{l}.attention.wk.weight": unperm(a.k_proj.weight, 2),
                   f"layers.{l}.attention.wv.weight": a.v_proj.weight, f"layers.{l}.attention.wo.weight": a.o_proj.weight,
                   f"layers.{l}.feed_forward.w1.weight": layer.mlp.gate_proj.weight, f"layers.{l}.feed_forward.w2.weight": layer.mlp.down_proj.weight,
                   f"layers.{l}.feed_forward.w3.weight": layer.mlp.up_proj.weight, f"layers.{l}.attention_norm.weight": layer.input_layernorm.weight,
                   f"layers.{l}.ffn_norm.weight": layer.post_attention_layernorm.weight})
    d = tempfile.mkdtemp(prefix="b16_")
    torch.save({k: v.detach().clone().half() for k, v in sd.items()}, os.path.join(d, "consolidated.00.pth"))
    json.dump({"dim": dim, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": V, "multiple_of": mo,
               "ffn_dim_multiplier": mult, "norm_eps": 1e-5, "rope_theta": 10000.0, "use_scaled_rope": False},
              open(os.path.join(d, "params.json"), "w"))
    return d, m


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"], _C["m"] = make()
    d, hf = _C["d"], _C["m"]
    rng = np.random.default_rng(1)
    TOK = rng.integers(0, V, size=(2, 8)).astype(np.int64)
    P, G = 3, 6
    s = {}
    old = dtypes.default_float
    dtypes.default_float = dtypes.float16
    try:
        ctx = TempoContext(cfg, dim_names=("b", "t"))
        (b, B), (t, T) = ctx.variables_and_bounds
        with ctx:
            model = Llama.from_checkpoint(d, t, V, dtypes.float16, ctx.execution_config)
            lg = model.forward(RT.const(TOK).index(0, b).index(0, t).cast(dtypes.default_int))
            s["lg_dtype"] = str(lg.dtype)
            lg[0:B, 0:T].sink_udf(grab(s, "lg"))
        ctx.compile({B: 2, T: 8}).execute()
        ctx2 = TempoContext(cfg, dim_names=("b", "t"))
        (b2, B2), (t2, T2) = ctx2.variables_and_bounds
        with ctx2:
            model2 = Llama.from_checkpoint(d, t2, V, dtypes.float16, ctx2.execution_config)
            ids = RT.placeholder((), dtypes.default_int, domain=(b2, t2))
            ids[t2 < P] = RT.const(TOK[:, :P]).cast(dtypes.default_int).index(0, b2).index(0, ie.min(t2, P - 1))
            ids[True] = Llama.sample(model2.forward(ids)[b2, t2 - 1], greedy=True).cast(dtypes.default_int)
            ids[0:B2, 0:T2].sink_udf(grab(s, "gen"))
        ctx2.compile({B2: 2, T2: P + G}).execute()
    finally:
        dtypes.default_float = old
    with torch.no_grad():
        ref = hf(torch.tensor(TOK)).logits.numpy()
        gen = hf.generate(torch.tensor(TOK[:, :P]), attention_mask=torch.ones(2, P, dtype=torch.long), max_new_tokens=G,
                          do_sample=False, pad_token_id=0, eos_token_id=None).numpy()
    sc = float(np.abs(ref).max())
    return [("dtype", np.array(s["lg_dtype"]), np.array("half"), 0), ("logits", s["lg"].astype(np.float32), ref, 1e-2 * sc),
            ("greedy", s["gen"], gen.astype(s["gen"].dtype), 0)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        if a.dtype.kind in "UOb":
            print(r[0], "ok" if np.array_equal(a, b_) else ("BAD", a, b_)); continue
        err = np.max(np.abs(a.astype(np.float64) - b_.astype(np.float64))) if a.shape == b_.shape else "SHAPE"
        print(r[0], err, r[3], "ok" if a.shape == b_.shape and err <= r[3] else ("BAD", a.ravel()[:10], b_.ravel()[:10]))
