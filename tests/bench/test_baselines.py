"""Baseline correctness against independent references (BENCHMARKS.md §2.2, §7.5, §4.1)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights, reference_decode
from tempo.bench.baselines.gpt2_jax import JaxGpt2Decoder
from tempo.bench.baselines.gpt2_torch import TorchGpt2Decoder
from tempo.bench.memory import DeviceMemoryAccountant, DeviceOutOfMemory
from tempo.bench.timing import StatsLogger


@pytest.mark.parametrize("attn", ["causal", "window"])
def test_three_gpt2_decoders_agree(attn: str) -> None:
    cfg = dict(n_layers=2, n_heads=4, d_model=32, d_ff=64, batch=2, seq_len=20, attn=attn,
               window=5)
    c = Gpt2CoreConfig.from_dict(cfg)
    w = {k: v * 10 for k, v in init_weights(c, "jax", seed=1).items()}  # non-degenerate scores
    x0 = np.random.default_rng(0).standard_normal((2, 32)).astype(np.float32)
    ref = reference_decode(w, x0, c)  # float64, no cache: recomputes K/V from layer inputs
    for dec in (TorchGpt2Decoder(cfg, DeviceMemoryAccountant(), False, w, x0),
                TorchGpt2Decoder(cfg, DeviceMemoryAccountant(), True, w, x0),
                JaxGpt2Decoder(cfg, DeviceMemoryAccountant(), w, x0)):
        dec.compile()
        dec.run()
        np.testing.assert_allclose(np.asarray(dec.out), ref, atol=1e-4)


def test_accountant_cap_raises_oom() -> None:
    acct = DeviceMemoryAccountant(cap_bytes=1 << 20)
    dec = TorchGpt2Decoder(dict(seq_len=4096, batch=4), acct)
    with pytest.raises(DeviceOutOfMemory, match="out of memory"):
        dec.run()


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs dev extra")
def test_eager_llama_matches_transformers(tmp_path: Path) -> None:
    from transformers import LlamaForCausalLM

    from tempo.bench.baselines.llama_core import ensure_weights, load_state
    from tempo.bench.baselines.llama_torch import EagerLlama

    wd = ensure_weights(str(tmp_path), n_layers=2, max_pos=64)
    model = LlamaForCausalLM.from_pretrained(wd).eval()
    toks = torch.randint(0, 2048, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = model(toks).logits
        eager = EagerLlama(load_state(wd), 2, 2, 12)
        got = torch.stack([eager.step(toks[:, i], i) for i in range(12)], 1)
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)


def test_cleanrl_ppo_improves_trivial_return() -> None:
    from tempo.bench.baselines.ppo_cleanrl import train_cleanrl

    log = StatsLogger()
    # lr raised from 1e-4 so that 30 single-update iterations show learning
    train_cleanrl(dict(iterations=30, lr=1e-3, num_envs=32, ep_len=32), DeviceMemoryAccountant(),
                  log)
    r = [log.rows[i]["mean_episode_return"] for i in sorted(log.rows)]
    assert np.mean(r[-5:]) > np.mean(r[:5]) + 1.0


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the bench extra")
def test_rllib_runs_base_point() -> None:
    from tempo.bench.baselines.ppo_rllib import train_rllib

    log = StatsLogger()
    train_rllib(dict(iterations=3), DeviceMemoryAccountant(), log)
    assert len(log.rows) == 3 and log.iter_mean() is not None


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs dev extra")
def test_tiny_llama_decoders_agree(tmp_path: Path) -> None:
    """E4's Tempo and JAX-like decoders give the eager Torch decoder's greedy tokens; the
    JAX step's logits equal the eager ones (which equal HF's, test above). Window mode (its
    mask contains the causal one; causal Tempo-vs-HF is tests/api/llm)."""
    attn = "window"
    import jax.numpy as jnp

    from tempo.bench.baselines.llama_core import load_state
    from tempo.bench.baselines.llama_jax import JaxLlamaDecoder
    from tempo.bench.baselines.llama_torch import EagerLlama, TorchLlamaDecoder
    from tempo.bench.systems.llama_tempo import TempoLlamaDecoder

    cfg = dict(n_layers=2, seq_len=24, batch=2, attn=attn, window=6, weights_dir=str(tmp_path))
    decs = [TorchLlamaDecoder(cfg, DeviceMemoryAccountant()),
            JaxLlamaDecoder(cfg, DeviceMemoryAccountant()),
            TempoLlamaDecoder(cfg, DeviceMemoryAccountant())]
    for dec in decs:
        dec.compile()
        dec.run()
    ref = np.asarray(decs[0].tokens)
    for dec in decs[1:]:
        np.testing.assert_array_equal(np.asarray(dec.tokens), ref)
    jd = decs[1]
    eager = EagerLlama(load_state(str(tmp_path / "tiny_llama_l2")), 2, 2, 24, attn, 6)
    kc = jnp.zeros((2, 2, 24, 2, 32), jnp.float32)
    vc = jnp.zeros((2, 2, 24, 2, 32), jnp.float32)
    for pos in range(12):
        tok = torch.from_numpy(ref[:, pos])
        with torch.no_grad():
            want = eager.step(tok, pos)
        _, got, kc, vc = jd.step(jd.w, kc, vc, jnp.asarray(ref[:, pos]), jnp.int32(pos))
        np.testing.assert_allclose(np.asarray(got), want.numpy(), atol=1e-4, rtol=1e-4)
