"""§4.1/§7.10 executor API on an LLM program (accept4/5a tested tick/reset on toy programs):
greedy decoding over t fed by a prompt source_with_ts_udf (reading a Python list a user can
change), tokens collected by tempo.utils.make_step_by_step_sink; (a) driven by tick(): each
tick must deliver exactly one more token (streaming) and the tokens equal HF generate;
(b) the prompt list is swapped, reset() + execute() must give HF's continuation of the new
prompt (the source is re-read); (c) a run under the backend's profiler context manager
(TorchProfiler / JaxProfiler / cProfile Profiler with the config) writes its trace file and
gives the same tokens; (d) a second executor from the same context with a longer bound."""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np, torch

V, P, G = 40, 3, 5
_C = {}


def make():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(21)
    hc = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=True, max_position_embeddings=64,
                     attn_implementation="eager")
    m = LlamaForCausalLM(hc).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    d = tempfile.mkdtemp(prefix="c11_")
    m.save_pretrained(d, safe_serialization=True)
    return d, m


def hf_gen(m, prompt, n):
    with torch.no_grad():
        p = torch.tensor(prompt)[None]
        return m.generate(p, attention_mask=torch.ones_like(p), max_new_tokens=n, do_sample=False, pad_token_id=0,
                          eos_token_id=None)[0].numpy()


def program(cfg):
    from tempo.api import RecurrentTensor as RT, TempoContext
    from tempo.api.llm.models.llama import Llama
    from tempo.core import index_expr as ie
    from tempo.core.dtype import dtypes
    from tempo.utils.make_sink import make_step_by_step_sink
    if "d" not in _C:
        _C["d"], _C["m"] = make()
    d, hf = _C["d"], _C["m"]
    be = cfg.backend
    prompt = [[5, 17, 2]]
    def feed(ts):
        v = np.array(prompt[0][ts[t]], dtype=np.int64 if be == "torch" else np.int32)
        if be == "torch":
            return torch.tensor(v)
        if be == "jax":
            import jax.numpy as jnp
            return jnp.asarray(v)
        return v
    store = {}
    ctx = TempoContext(cfg, dim_names=("t",))
    ((t, T),) = ctx.variables_and_bounds
    with ctx:
        model = Llama.from_checkpoint(d, t, V, dtypes.float32, ctx.execution_config)
        tok = RT.placeholder((), dtypes.default_int, domain=(t,))
        tok[t < P] = RT.source_with_ts_udf(feed, (), dtypes.default_int, domain=(t,))
        tok[True] = Llama.sample(model.forward(tok), greedy=True).cast(dtypes.default_int)[t - 1]
        tok.sink_udf(make_step_by_step_sink("tok", store))
    exe = ctx.compile({T: P + G})
    counts = []
    while exe.tick():
        counts.append(len(store.get("tok", [])))
    counts.append(len(store.get("tok", [])))
    toks = lambda: np.array([int(np.asarray(x)) for x in store["tok"]])
    out = [("tick_streams_one_token_each", np.array(counts[:P + G]), np.arange(1, P + G + 1), 0),
           ("tick_tokens", toks(), hf_gen(hf, prompt[0], G), 0)]
    prompt[0] = [31, 4, 9]
    store.clear(); exe.reset(); exe.execute()
    out.append(("reset_new_prompt", toks(), hf_gen(hf, prompt[0], G), 0))
    if be == "torch":
        from tempo.utils.torch_profiler import TorchProfiler as Prof
    elif be == "jax":
        from tempo.utils.jax_profiler import JaxProfiler as Prof
    else:
        from tempo.utils.cprofiler import Profiler as Prof
    store.clear(); exe.reset()
    prof = Prof(cfg, name="c11_run")
    with prof:
        exe.execute()
    files = [f for root, _, fs in os.walk(cfg.path) for f in fs if "c11_run" in os.path.join(root, f)]
    out.append(("profiler_wrote_a_trace", np.array(len(files) > 0), np.array(True), 0))
    out.append(("profiled_tokens", toks(), hf_gen(hf, prompt[0], G), 0))
    store.clear()
    ctx.compile({T: P + G + 3}).execute()
    out.append(("longer_bound", toks(), hf_gen(hf, prompt[0], G + 3), 0))
    return out
