"""Bit packing round-trips against the bool mask it came from."""

import pytest
import torch

from tempo.memsave.bitpack import load_mask, pack_bits, store_mask, unpack_all, unpack_bits


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 1000])
def test_roundtrip(n: int) -> None:
    mask = torch.rand(n, generator=torch.Generator().manual_seed(n)) > 0.5
    packed = pack_bits(mask)
    assert packed.dtype == torch.uint8 and packed.numel() == (n + 7) // 8
    assert torch.equal(unpack_all(packed, (n,)), mask)


def test_ranges_and_bit_order() -> None:
    mask = torch.zeros(20, dtype=torch.bool)
    mask[[0, 3, 9, 19]] = True
    packed = pack_bits(mask)
    assert packed[0].item() == 0b00001001  # little-endian: element 0 is bit 0
    for a, b in [(0, 20), (3, 11), (9, 10), (17, 20), (5, 5)]:
        assert torch.equal(unpack_bits(packed, a, b), mask[a:b])


def test_store_formats_and_multidim() -> None:
    mask = torch.rand(3, 5, 7) > 0.3
    for fmt in ("bit", "byte"):
        stored = store_mask(mask, fmt)
        assert torch.equal(load_mask(stored, fmt, 4, 50), mask.reshape(-1)[4:50])
    with pytest.raises(ValueError):
        store_mask(mask, "nibble")
