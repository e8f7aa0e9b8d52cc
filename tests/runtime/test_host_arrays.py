"""numpy bfloat16 (ml_dtypes) <-> torch bfloat16: neither DLPack nor torch.as_tensor /
Tensor.numpy() takes it ("can't convert np.ndarray of type ml_dtypes.bfloat16"), so
`runtime.host_arrays` moves the bits as int16. Every layout a store or a user hands over
round-trips bit for bit."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
import torch

from tempo.runtime.host_arrays import host_to_torch, to_host, torch_to_host

BF = ml_dtypes.bfloat16
BASE = np.array([[1.5, -2.25, 3.0e-38], [np.inf, -0.0, 0.0078125]], dtype=BF)


@pytest.mark.parametrize("arr", [
    BASE, BASE.T, BASE[:, ::-1], np.array(2.5, dtype=BF),
    np.broadcast_to(np.array(1.5, dtype=BF), (2, 3)),  # read-only, zero strides
], ids=["plain", "transposed", "negative_stride", "0d", "read_only"])
def test_numpy_bfloat16_to_torch_and_back_bit_for_bit(arr: np.ndarray) -> None:
    with warnings.catch_warnings(), pytest.raises(TypeError):
        warnings.simplefilter("ignore")
        torch.as_tensor(arr)  # the reason for host_arrays
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no read-only warning from torch
        t = host_to_torch(arr)
    assert t.dtype == torch.bfloat16 and tuple(t.shape) == arr.shape
    assert t.float().tolist() == arr.astype(np.float32).tolist()
    back = torch_to_host(t)
    assert back.dtype == np.dtype(BF)
    np.testing.assert_array_equal(back.view(np.uint16), np.array(arr).view(np.uint16))


def test_other_dtypes_and_non_torch_values_pass_through() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert torch.equal(host_to_torch(x), torch.as_tensor(x))
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).mT  # (non-contiguous)
    np.testing.assert_array_equal(to_host(t), np.arange(6, dtype=np.float32).astype(BF)
                                  .reshape(2, 3).T)
    np.testing.assert_array_equal(to_host([1, 2], np.int64), np.array([1, 2]))
    assert torch_to_host(torch.ones(2, dtype=torch.float16)).dtype == np.float16
