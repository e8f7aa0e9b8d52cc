"""Bool masks packed 8 elements per byte, so a saved mask costs 1/8 byte per element.

Bit order is little-endian inside each byte: element ``8k + j`` lives in bit ``j`` of byte ``k``.
The last byte is zero-padded.
"""

from __future__ import annotations

import torch

_SHIFTS: dict[torch.device, torch.Tensor] = {}


def _shifts(device: torch.device) -> torch.Tensor:
    """0..7 as uint8 on `device`, made there once (a host copy per call would be a
    host-to-device transfer at every pack on a GPU)."""
    s = _SHIFTS.get(device)
    if s is None:
        s = _SHIFTS[device] = torch.arange(8, dtype=torch.uint8, device=device)
    return s


def packed_numel(n: int) -> int:
    """Bytes needed to hold ``n`` bits."""
    return (n + 7) // 8


def pack_bits(mask: torch.Tensor) -> torch.Tensor:
    """Pack a bool tensor (any shape, flattened row-major) into a 1-D uint8 tensor."""
    flat = mask.reshape(-1)
    n = flat.numel()
    pad = packed_numel(n) * 8 - n
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    groups = flat.view(-1, 8).to(torch.uint8)
    return (groups << _shifts(mask.device)).sum(dim=1, dtype=torch.uint8)


def unpack_bits(packed: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Bits ``[start, stop)`` of a packed mask as a 1-D bool tensor (no full-size unpack)."""
    if stop <= start:
        return torch.zeros(0, dtype=torch.bool, device=packed.device)
    first, last = start // 8, packed_numel(stop)
    chunk = packed[first:last]
    bits = (chunk.unsqueeze(1) >> _shifts(packed.device)) & 1
    offset = start - first * 8
    return bits.reshape(-1)[offset : offset + stop - start].bool()


def unpack_all(packed: torch.Tensor, shape: torch.Size | tuple[int, ...]) -> torch.Tensor:
    """Whole mask back in ``shape`` (tests and small tensors only)."""
    n = 1
    for d in shape:
        n *= d
    return unpack_bits(packed, 0, n).reshape(shape)


def store_mask(mask: torch.Tensor, mask_format: str) -> torch.Tensor:
    """Flatten ``mask`` for saving: packed bits (``"bit"``) or one bool per element (``"byte"``)."""
    if mask_format == "bit":
        return pack_bits(mask)
    if mask_format == "byte":
        return mask.reshape(-1).contiguous()
    raise ValueError(f"mask_format must be 'bit' or 'byte', got {mask_format!r}")


def load_mask(stored: torch.Tensor, mask_format: str, start: int, stop: int) -> torch.Tensor:
    """Elements ``[start, stop)`` of a mask saved by :func:`store_mask`, as bool."""
    if mask_format == "bit":
        return unpack_bits(stored, start, stop)
    return stored[start:stop]
