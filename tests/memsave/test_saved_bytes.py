"""Measured saved-for-backward bytes of a BERT layer equal the closed form of MEMSAVE.md 4."""

import pytest

from tempo.memsave.closed_form import LayerShape, layer_bytes

pytest.importorskip("transformers")
from tempo.memsave.probe import layer_saved_bytes  # noqa: E402

ALL = ("gelu", "layernorm", "attention")


@pytest.mark.parametrize(
    "techniques,fmt",
    [((), "byte"), (("gelu",), "byte"), (("layernorm",), "byte"), (("attention",), "byte"),
     (ALL, "byte"), (ALL, "bit")],
)
def test_layer_bytes_match_closed_form(techniques, fmt) -> None:
    measured = layer_saved_bytes(64, 4, 32, techniques, fmt, batch=2)
    assert measured == layer_bytes(LayerShape(2, 32, 64, 4, 256), techniques, fmt)


def test_cpu_dropout_baseline_saves_more() -> None:
    """CPU F.dropout keeps fp32 noise, not a bool mask: the reason for bool_mask_dropout()."""
    gpu_like = layer_saved_bytes(64, 4, 32, (), "byte", batch=1)
    cpu = layer_saved_bytes(64, 4, 32, (), "byte", batch=1, bool_masks=False)
    assert cpu - gpu_like == 3 * (2 * 32 * 64 + 4 * 32 * 32)


@pytest.mark.slow
def test_max_batch_under_cap_subprocess() -> None:
    from tempo.memsave.probe import run_probe

    common = dict(mode="maxbatch", hidden=256, heads=4, layers=2, seq=256, cap_mib=300,
                  bool_masks=True, max_batch=64)
    base = run_probe(**common)
    conv = run_probe(**common, techniques="gelu,layernorm,attention")
    assert "error" not in base and "error" not in conv
    assert conv["max_batch"] > base["max_batch"] >= 1
