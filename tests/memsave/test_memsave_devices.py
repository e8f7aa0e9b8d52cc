"""memsave keeps its saved tensors and recomputation on the input's device and in the
input's dtype, and reads nothing on the host in backward (a GPU would wait for it).
Checked on the meta device, which stands in for a GPU: it refuses host reads
(`.item()`, `bool(t)`) and ops mixing it with CPU tensors, and on the device audit of
tests/device (no tensor made off the device)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tempo import memsave
from tempo.memsave.gelu import derivative_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from device_audit import audit_torch  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
META = torch.device("meta")


def _saved_on(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor
              ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t)
        return t

    with audit_torch(fake_gpu=False) as audit, \
            torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = fn(x)
        y.backward(torch.ones_like(y))
    assert not audit.findings, audit.report()
    return y, saved


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("approximate", "mask_format"), [("none", "bit"), ("tanh", "byte")])
def test_gelu_saves_and_recomputes_on_the_device(dtype: torch.dtype, approximate: str,
                                                 mask_format: str) -> None:
    x = torch.empty(3, 70, 5, device=META, dtype=dtype, requires_grad=True)
    y, saved = _saved_on(lambda t: memsave.inplace_gelu(t, approximate, mask_format), x)
    assert (y.device, y.dtype) == (META, dtype)
    assert x.grad is not None and (x.grad.device, x.grad.dtype) == (META, dtype)
    mask = torch.uint8 if mask_format == "bit" else torch.bool
    assert [(s.device, s.dtype) for s in saved] == [(META, dtype), (META, mask)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_format", ["bit", "byte"])
def test_softmax_dropout_matmul_saves_on_the_device(dtype: torch.dtype,
                                                    mask_format: str) -> None:
    v = torch.empty(2, 3, 6, 4, device=META, dtype=dtype, requires_grad=True)

    def fn(s: torch.Tensor) -> torch.Tensor:
        return memsave.softmax_dropout_matmul(s, v, p=0.1, mask_format=mask_format)

    s = torch.empty(2, 3, 5, 6, device=META, dtype=dtype, requires_grad=True)
    out, saved = _saved_on(fn, s)
    assert (out.device, out.dtype) == (META, dtype)
    for g in (s.grad, v.grad):
        assert g is not None and (g.device, g.dtype) == (META, dtype)
    mask = torch.uint8 if mask_format == "bit" else torch.bool
    assert [(t.device, t.dtype) for t in saved] == [(META, dtype), (META, mask), (META, dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_saves_on_the_input_device_and_reads_only_its_guard(dtype: torch.dtype
                                                                       ) -> None:
    """The gamma guard reads one value on the host per forward (which tensors to save
    depends on it); nothing else does, and what is saved stays on the input's device."""
    ln = memsave.InplaceLayerNorm(6, dtype=dtype)
    x = torch.randn(4, 5, 6, dtype=dtype, requires_grad=True)
    saved: list[torch.Tensor] = []
    with audit_torch(fake_gpu=False) as audit, \
            torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t,
                                                     lambda t: t):
        with audit.step():
            y = ln(x)
            y.backward(torch.ones_like(y))
    reads = {f.where.split(" ")[-1] for f in audit.findings}
    assert reads == {"(needs_fallback)"}, audit.report()
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    assert [t.dtype for t in saved] == [dtype, dtype, dtype, acc]
    assert all(t.device == x.device for t in saved)
    assert x.grad is not None and x.grad.dtype == dtype


def test_gelu_tables_are_copied_to_each_device_once() -> None:
    cpu, meta = derivative_table("none"), derivative_table("none", META)
    assert cpu.near.device.type == "cpu" and meta.near.device == META
    assert meta.tail.shape == cpu.tail.shape and meta.t_step == cpu.t_step
    assert derivative_table("none", "meta") is meta
