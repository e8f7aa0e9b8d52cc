"""Every autodiff test runs once per available backend (torch, jax): the `backend` fixture
sets the harness default that `Prog` uses, so each program is compiled for that backend."""

from __future__ import annotations

from collections.abc import Iterator

import autodiff_harness
import pytest
from autodiff_harness import backends

# Cases that fail on jax because of a jax kernel, not because of autodiff: test name -> reason.
JAX_XFAIL: dict[str, str] = {}


@pytest.fixture(params=backends(), autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    name = request.param
    reason = JAX_XFAIL.get(request.node.originalname) if name == "jax" else None
    if reason is not None:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    old = autodiff_harness.DEFAULT_BACKEND
    autodiff_harness.DEFAULT_BACKEND = name
    try:
        yield name
    finally:
        autodiff_harness.DEFAULT_BACKEND = old
