"""The library GPT-2 core (layer as a dimension) equals the bench's float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.llm.models.gpt2_core import Gpt2Core
from tempo.bench.baselines.gpt2_core import Gpt2CoreConfig, init_weights, reference_decode
from tempo.core.errors import TempoError


@pytest.mark.parametrize(("batch", "attn"), [(1, "window"), (3, "causal")])
def test_gpt2_core_equals_reference(batch: int, attn: str) -> None:
    c = Gpt2CoreConfig(n_layers=3, n_heads=2, d_model=16, d_ff=32, batch=batch, seq_len=10,
                       attn=attn, window=3)
    w = init_weights(c, "torch")
    x0 = np.random.default_rng(2).standard_normal((batch, 16)).astype(np.float32)
    ctx = TempoContext(num_dims=1)
    ((t, T),) = ctx.variables_and_bounds
    rows: list = []
    with ctx:
        core = Gpt2Core(3, 2, 16, 32, t, w, window=3 if attn == "window" else None)
        s = core.decode(RT.const(x0))
        s.sink_udf(lambda x: rows.append(x.clone()))
    ctx.compile({T: c.seq_len}).execute()
    out = torch.stack([r.reshape(batch, 16) for r in rows], 1).double()
    torch.testing.assert_close(out, torch.from_numpy(reference_decode(w, x0, c)), atol=1e-4,
                               rtol=1e-4)


def test_gpt2_core_checks_weight_shapes() -> None:
    ctx = TempoContext(num_dims=1)
    ((t, _T),) = ctx.variables_and_bounds
    w = init_weights(Gpt2CoreConfig(n_layers=2, d_model=16, d_ff=32, n_heads=2), "torch")
    with ctx, pytest.raises(TempoError, match="'w1' must have shape"):
        Gpt2Core(2, 2, 16, 64, t, w)
