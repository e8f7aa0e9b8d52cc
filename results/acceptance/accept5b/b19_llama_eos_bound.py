"""§6.5 + §7.10 as the README writes it: a batch of 2 prompts as a spatial (B,) token vector
over t, greedy decode with stop tokens, the bound {T: (max_len, done)} with done[t] =
done[t-1] | stop_condition(tok, stops) (finished rows emit the pad id): the loop must run
exactly until BOTH rows have emitted a stop token (HF generate(eos_token_id=stops)'s length),
and the tokens equal HF's (HF pads finished rows with pad_token_id too). Stop ids are picked
from an unconstrained HF run so row 0 stops at its 2nd new token and row 1 at its 4th."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch
from common import grab

V, P, MAXN = 48, 3, 8
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(5)
    hc = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=64,
                     attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    d = tempfile.mkdtemp(prefix="b19_")
    m.save_pretrained(d, safe_serialization=True)
    return d, m


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama, stop_condition
    from tempo.core.dtype import dtypes
    if "d" not in _C:
        _C["d"], _C["m"] = make()
    d, hf = _C["d"], _C["m"]
    PR = np.array([[3, 17, 29], [41, 5, 12]], np.int64)
    with torch.no_grad():
        free = hf.generate(torch.tensor(PR), attention_mask=torch.ones(2, P, dtype=torch.long), max_new_tokens=MAXN,
                           do_sample=False, pad_token_id=0, eos_token_id=None).numpy()
    new = free[:, P:]
    stops = [int(new[0, 1]), int(new[1, 3])]
    if stops[1] in new[1, :3] or stops[0] in new[1, :3] or stops[1] in new[0, :1]:
        stops = stops  # (near-collisions are still fine: HF applies the same rule)
    with torch.no_grad():
        ref = hf.generate(torch.tensor(PR), attention_mask=torch.ones(2, P, dtype=torch.long), max_new_tokens=MAXN,
                          do_sample=False, pad_token_id=stops[0], eos_token_id=stops).numpy()
    s = {"rows": []}
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config)
        pr = RT.const(PR, dtype=dtypes.default_int)
        tok = RT.placeholder((2,), dtypes.default_int, domain=(t,))
        tok[t < P] = pr.index(1, t)
        nxt = Llama.sample(model.forward(tok), greedy=True).cast(dtypes.default_int)
        done = RT.placeholder((2,), dtypes.bool_, domain=(t,))
        pad = RT.const(np.full((2,), stops[0]), dtype=dtypes.default_int)
        tok[True] = done[t - 1].where(pad, nxt[t - 1])
        done[t < P] = RT.const(np.zeros((2,), bool), dtype=dtypes.bool_)
        done[True] = done[t - 1] | stop_condition(tok, stops)
        tok.sink_udf(lambda v: s["rows"].append(np.asarray(v.detach() if hasattr(v, "detach") else v).copy()))
    ctx.compile({T: (P + MAXN, done)}).execute()
    got = np.stack(s["rows"], 1)
    return [("n_points", np.array(got.shape[1]), np.array(ref.shape[1]), 0),
            ("tokens", got, ref.astype(got.dtype), 0)]


if __name__ == "__main__":
    from tempo.core.configs import ExecutionConfig
    for r in program(ExecutionConfig(dev="cpu", backend="torch")):
        a, b_ = np.asarray(r[1]), np.asarray(r[2])
        ok = a.shape == b_.shape and np.array_equal(a, b_)
        print(r[0], "ok" if ok else ("BAD", a, b_))
