"""The Tempo GPT-2-core decoder equals the float64 no-cache reference (and so the baselines)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights, reference_decode
from tempo.bench.memory import DeviceMemoryAccountant
from tempo.bench.systems.gpt2_tempo import TempoGpt2Decoder


@pytest.mark.parametrize("block", [256, 4])  # one block; three (causal: joined, E1's path)
@pytest.mark.parametrize("attn", ["causal", "window"])
def test_tempo_gpt2_matches_reference(attn: str, block: int) -> None:
    cfg = dict(n_layers=2, n_heads=2, d_model=32, d_ff=64, batch=2, seq_len=12, attn=attn,
               window=4, block=block)
    c = Gpt2CoreConfig.from_dict(cfg)
    w = init_weights(c, "torch")
    x0 = np.random.default_rng(0).standard_normal((2, 32)).astype(np.float32)
    ref = reference_decode(w, x0, c)
    dec = TempoGpt2Decoder(cfg, DeviceMemoryAccountant(), w, x0)
    dec.compile()
    dec.run()
    assert dec.out is not None and dec.out.shape == (2, 12, 32)
    torch.testing.assert_close(dec.out.double(), torch.from_numpy(ref), atol=1e-4, rtol=1e-4)
    dec.run()  # runs again after reset with the same result
    torch.testing.assert_close(dec.out.double(), torch.from_numpy(ref), atol=1e-4, rtol=1e-4)
