"""The paired E1 ratio check (`tempo.bench.tpt_pair`): runs both decoders, checks they
agree, and reports the ratio of each back-to-back pair of runs."""

from __future__ import annotations

import re
import statistics

import pytest
import torch

from tempo.bench import tpt_pair


def test_paired_ratios_are_per_pair() -> None:
    ours, theirs = [1.0, 3.0, 2.0, 8.0], [2.0, 2.0, 4.0, 4.0]
    r = [0.5, 1.5, 0.5, 2.0]
    assert tpt_pair.paired(ours, theirs) == (min(r), statistics.median(r), max(r))
    with pytest.raises(ValueError):
        tpt_pair.paired([1.0], [1.0, 2.0])


@pytest.mark.parametrize("attn", ["causal", "window"])
def test_pair_line(attn: str) -> None:
    torch.set_num_threads(1)
    line = tpt_pair.pair(attn, 12, 3)
    assert line.startswith(f"{attn} T=12: tempo min ")
    nums = {k: float(v) for k, v in re.findall(r"(min|med|paired med) (\d+\.\d+)", line)}
    assert nums["paired med"] > 0 and "compile" in line


def test_pair_refuses_decoders_that_disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    build = tpt_pair.TorchGpt2Decoder._build

    def wrong(self: tpt_pair.TorchGpt2Decoder) -> dict[str, torch.Tensor]:
        w = build(self)
        w["w2"] = w["w2"] * 1.5  # a different program than Tempo's
        return w

    monkeypatch.setattr(tpt_pair.TorchGpt2Decoder, "_build", wrong)
    with pytest.raises(AssertionError, match="disagrees"):
        tpt_pair.pair("causal", 12, 1)


def test_pair_with_small_blocks_agrees() -> None:
    """U=4 at T=12: causal attention over three K/V blocks, checked against torch-opt."""
    line = tpt_pair.pair("causal", 12, 1, block=4)
    assert line.startswith("causal T=12 U=4: tempo min ")
