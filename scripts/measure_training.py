"""Compile and run time of training programs (issue 4's note): a 4-layer MLP regression
trained with backward + Adam over I iterations, checked against torch.optim.

    .venv/bin/python scripts/measure_training.py
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import torch

import tempo.runtime.backends  # noqa: F401 - import backends before timing compiles
from tempo.api import RecurrentTensor as RT
from tempo.api import TempoContext
from tempo.api.nn import Linear
from tempo.api.optim.optim import Adam
from tempo.core.configs import ExecutionConfig


def const_init(t: torch.Tensor):  # noqa: ANN201
    def init(shape, dtype, domain):  # noqa: ANN001, ANN202
        return RT.const(t.detach().numpy().copy())

    return init


def mlp_adam(iters: int = 50, width: int = 32, depth: int = 4,
             cfg: ExecutionConfig | None = None) -> dict:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(64, 8, generator=g), torch.randn(64, 2, generator=g)
    sizes = [8] + [width] * (depth - 1) + [2]  # (an output of 1 would hit the matmul squeeze quirk)
    tls = [torch.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]
    cfg = cfg or ExecutionConfig(dev="cpu", backend="torch", path="results/core/run/")
    ctx = TempoContext(cfg, num_dims=1)
    ((i, I),) = ctx.variables_and_bounds
    with ctx:
        layers = [Linear(a, b, domain=(i,), w_init_fun=const_init(t.weight),
                         b_init_fun=const_init(t.bias)) for (a, b), t in
                  zip(zip(sizes, sizes[1:]), tls)]
        h = RT.const(X.numpy())
        for k, layer in enumerate(layers):
            h = layer(h)
            if k < len(layers) - 1:
                h = h.tanh()
        loss = ((h - RT.const(Y.numpy())) ** 2).mean()
        losses: list[float] = []
        loss.sink_udf(lambda v: losses.append(float(v)))
        loss.backward()
        params = [p for layer in layers for p in layer.parameters]
        Adam(params, [], lr=0.01).step()
    n_ops = len(ctx.sdg.ops)
    t0 = time.perf_counter()
    exe = ctx.compile({I: iters})
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    exe.execute()
    run_s = time.perf_counter() - t0
    model = torch.nn.Sequential(*[m for t in tls for m in (t, torch.nn.Tanh())][:-1])
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    ref = []
    for _ in range(iters):
        opt.zero_grad()
        lt = ((model(X) - Y) ** 2).mean()
        ref.append(lt.item())
        lt.backward()
        opt.step()
    err = float(np.max(np.abs(np.array(losses) - np.array(ref))))
    return {"ops": n_ops, "iters": iters, "compile_s": compile_s, "execute_s": run_s,
            "ms_per_iter": run_s / iters * 1e3, "max_loss_err_vs_torch": err,
            "breakdown_ms": exe.get_compilation_time_breakdown()}


def main() -> None:
    res = {"mlp4_adam": mlp_adam()}
    os.makedirs("results/core", exist_ok=True)
    with open("results/core/measure_training.json", "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
