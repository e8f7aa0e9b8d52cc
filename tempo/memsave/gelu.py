"""GELU that keeps only its output and one bit per element for backward.

y = GELU(x) has one preimage on each side of the minimum x_min, so (y, bit = x >= x_min)
determines x. Backward inverts GELU in fp64 and evaluates GELU'(x); the input x is never saved.
Near the minimum the inverse has a square-root branch point, so the Newton solve runs in the
variable T(x) = sign(x - x_min) * sqrt(GELU(x) - y_min), which is smooth with T' > 0 there; on the
left tail it runs on log(-GELU(x)), which stays conditioned as y -> 0-. fp64 gradients use that
solve directly; lower precisions interpolate tables built once from it (within 5e-8 of the
solve, far below the storage-rounding floor of ~1e-4 in fp32 at the minimum; see RESULTS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tempo.memsave import chunks
from tempo.memsave.bitpack import load_mask, store_mask

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_A = 0.044715
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_MAX_ITERS = 8  # 4 reach fp64 round-off on a dense grid; the rest is margin


def _scalar_gelu(x: float, approximate: str) -> float:
    if approximate == "tanh":
        u = _SQRT_2_OVER_PI * (x + _TANH_A * x**3)
        return 0.5 * x * (1.0 + math.tanh(u))
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def _scalar_dgelu(x: float, approximate: str) -> float:
    if approximate == "tanh":
        u = _SQRT_2_OVER_PI * (x + _TANH_A * x**3)
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_A * x * x)
        t = math.tanh(u)
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du
    pdf = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0))) + x * pdf


@dataclass(frozen=True)
class GeluConstants:
    """Location and value of GELU's minimum and its curvature there, for one form."""

    x_min: float
    y_min: float
    curvature: float


def _constants(approximate: str) -> GeluConstants:
    """Solve GELU'(x) = 0 by bisection in double precision (GELU' is increasing on [-1, -0.5])."""
    lo, hi = -1.0, -0.5
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _scalar_dgelu(mid, approximate) > 0.0:
            hi = mid
        else:
            lo = mid
    x_min = 0.5 * (lo + hi)
    h = 1e-5
    curv = (_scalar_dgelu(x_min + h, approximate) - _scalar_dgelu(x_min - h, approximate)) / (2 * h)
    return GeluConstants(x_min, _scalar_gelu(x_min, approximate), curv)


CONSTANTS: dict[str, GeluConstants] = {"none": _constants("none"), "tanh": _constants("tanh")}


def _check_approximate(approximate: str) -> None:
    if approximate not in CONSTANTS:
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


def _cdf_parts(
    x: torch.Tensor, approximate: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(c, log c, c'/c) of GELU(x) = x * c(x), computed without underflow in the tails."""
    if approximate == "tanh":
        u2 = 2.0 * _SQRT_2_OVER_PI * (x + _TANH_A * x**3)
        du2 = 2.0 * _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_A * x * x)
        logc = nn.functional.logsigmoid(u2)
        return torch.exp(logc), logc, torch.sigmoid(-u2) * du2
    logc = torch.special.log_ndtr(x)
    ratio = torch.exp(-0.5 * x * x - _LOG_SQRT_2PI - logc)
    return torch.exp(logc), logc, ratio


def gelu_derivative(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU'(x) in the dtype of ``x`` (use fp64 for a reference)."""
    _check_approximate(approximate)
    c, _, ratio = _cdf_parts(x, approximate)
    return c + x * (c * ratio)


def gelu_inverse(y: torch.Tensor, bit: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """x with GELU(x) = y on the branch chosen by ``bit`` (True: x >= x_min), computed in fp64.

    y below y_min (rounding) is clamped to the minimum. y == 0 on the left branch maps to -inf.
    """
    _check_approximate(approximate)
    k = CONSTANTS[approximate]
    yd = y.to(torch.float64)
    right = bit.to(torch.bool)
    host = y.device.type == "cpu"
    yc = torch.clamp(yd, min=k.y_min)
    slope = math.sqrt(0.5 * k.curvature)  # T'(x_min)
    one = torch.ones_like(yc)
    t_target = torch.sqrt(yc - k.y_min) * torch.where(right, one, -one)
    # Left branch above -0.1 (x < ~-1.5): solve on log(-GELU) instead of T.
    use_log = (~right) & (yc > -0.1)
    log_target = torch.log(torch.clamp(-yc, min=1e-300))

    guess = k.x_min + t_target / slope
    c_y, _, _ = _cdf_parts(yc, approximate)
    guess = torch.where(right & (yc > 0.3), yc / c_y, guess)
    tail = -torch.sqrt(torch.clamp(-2.0 * (log_target + _LOG_SQRT_2PI), min=0.0))
    guess = torch.where(use_log, torch.minimum(tail, torch.full_like(tail, k.x_min)), guess)

    lo = torch.where(right, k.x_min * one, -40.0 * one)
    hi = torch.where(right, torch.clamp(yc, min=0.0) + 0.25, k.x_min * one)
    x = torch.clamp(guess, min=lo, max=hi)
    for _ in range(_MAX_ITERS):
        c, logc, ratio = _cdf_parts(x, approximate)
        f = x * c
        df = c + x * (c * ratio)
        gap = torch.clamp(f - k.y_min, min=0.0)
        sign = torch.where(x >= k.x_min, one, -one)
        t = sign * torch.sqrt(gap)
        dt = torch.where(t.abs() > 1e-7, df / (2.0 * t), slope * one)
        res_t = t - t_target
        res_log = torch.log(-x) + logc - log_target
        dres_log = 1.0 / x + ratio
        res = torch.where(use_log, res_log, res_t)
        dres = torch.where(use_log, dres_log, dt)
        # Both residuals increase with x: positive residual means the root is to the left.
        hi = torch.where(res > 0, x, hi)
        lo = torch.where(res <= 0, x, lo)
        step = x - res / dres
        ok = (step >= lo) & (step <= hi) & torch.isfinite(step)
        new = torch.where(ok, step, 0.5 * (lo + hi))
        # On the host, stop once converged; on a device the test would wait for the
        # device at every iteration: it runs all _MAX_ITERS (converged points stay put).
        done = host and bool(((new - x).abs() <= 1e-12 * (1.0 + x.abs()))
                             .logical_or_(res.abs() <= 1e-14).all())
        x = new
        if done:
            break
    x = torch.where((yd == 0) & ~right, float("-inf"), x)
    x = torch.where((yd == 0) & right, 0.0, x)
    x = torch.where(torch.isnan(yd) | (yd == float("inf")), yd, x)
    return x


@dataclass(frozen=True)
class DerivativeTable:
    """GELU' sampled on uniform grids, built once from the exact solver.

    ``near``: against T = sign * sqrt(y - y_min) from the left cut (y = -1e-3) to y = 8.
    ``tail``: against log(-y) on the left branch for y in [-1e-3, 0), where T loses resolution.
    Above y = 8 GELU' = 1 to fp64 precision.
    """

    t0: float
    t_step: float
    near: torch.Tensor
    s0: float
    s_step: float
    tail: torch.Tensor


_TABLES: dict[tuple[str, torch.device], DerivativeTable] = {}
_TAIL_Y = -1e-3
_TOP_Y = 8.0


def derivative_table(approximate: str,
                     device: torch.device | str | None = None) -> DerivativeTable:
    """The interpolation tables used for non-fp64 gradients, on `device` (default: the
    CPU): built once per form on the CPU, copied once to each device that asks."""
    dev = torch.device(device if device is not None else "cpu")
    if (approximate, dev) not in _TABLES:
        host = _host_table(approximate)
        _TABLES[approximate, dev] = DerivativeTable(
            host.t0, host.t_step, host.near.to(dev), host.s0, host.s_step, host.tail.to(dev))
    return _TABLES[approximate, dev]


def _host_table(approximate: str) -> DerivativeTable:
    cpu = torch.device("cpu")
    if (approximate, cpu) not in _TABLES:
        k = CONSTANTS[approximate]
        t0, t1 = -math.sqrt(_TAIL_Y - k.y_min), math.sqrt(_TOP_Y - k.y_min)
        t = torch.linspace(t0, t1, (1 << 19) + 1, dtype=torch.float64)
        y = t * t + k.y_min
        x = torch.cat([gelu_inverse(y[i : i + 65536], t[i : i + 65536] >= 0, approximate)
                       for i in range(0, t.numel(), 65536)])
        s0, s1 = -745.0, math.log(-_TAIL_Y)
        s = torch.linspace(s0, s1, (1 << 16) + 1, dtype=torch.float64)
        xs = gelu_inverse(-torch.exp(s), torch.zeros_like(s, dtype=torch.bool), approximate)
        tail = torch.nan_to_num(gelu_derivative(xs, approximate), nan=0.0)
        _TABLES[approximate, cpu] = DerivativeTable(
            t0, (t1 - t0) / (t.numel() - 1), gelu_derivative(x, approximate),
            s0, (s1 - s0) / (s.numel() - 1), tail,
        )
    return _TABLES[approximate, cpu]


def _lerp(table: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    pos = torch.nan_to_num(pos, nan=0.0).clamp_(0.0, table.numel() - 1.000001)
    i = pos.to(torch.int64)
    lo = torch.index_select(table, 0, i)  # much faster than table[i] on CPU
    hi = torch.index_select(table, 0, i + 1)
    return torch.lerp(lo, hi, pos - i)


def derivative_from_output(y: torch.Tensor, bit: torch.Tensor, approximate: str) -> torch.Tensor:
    """GELU'(x) from (y, bit) by table interpolation, in fp64 (about 1e-10 off the exact solve)."""
    k = CONSTANTS[approximate]
    tab = derivative_table(approximate, y.device)
    yd = y.to(torch.float64)
    right = bit.to(torch.bool)
    yc = torch.clamp(yd, min=k.y_min)
    t = torch.sqrt(yc - k.y_min)
    t = torch.where(right, t, -t)
    d = _lerp(tab.near, (t - tab.t0) / tab.t_step)
    in_tail = (~right) & (yc > _TAIL_Y)
    if y.device.type == "cpu":  # the host may look first: interpolate the tail points only
        if bool(in_tail.any()):
            s = torch.log(-yc[in_tail])
            d[in_tail] = _lerp(tab.tail, (s - tab.s0) / tab.s_step)
    else:  # on a device, looking would wait for it: interpolate all, keep the tail's
        tail = _lerp(tab.tail, (torch.log(-yc) - tab.s0) / tab.s_step)
        d = torch.where(in_tail, tail, d)
    d = torch.where(yc > _TOP_Y, 1.0, d)
    d = torch.where(yd == 0, torch.where(right, 0.5, 0.0).to(d.dtype), d)
    return torch.where(torch.isfinite(yd), d, float("nan"))


#: "auto": exact Newton solve for fp64 gradients (gradcheck, references), table otherwise.
BACKWARD_METHOD: list[str] = ["auto"]


def _gelu_grad_from_output(
    grad: torch.Tensor, y: torch.Tensor, bit: torch.Tensor, approximate: str
) -> torch.Tensor:
    """grad * GELU'(x(y, bit)) for one flat chunk."""
    method = BACKWARD_METHOD[0]
    if method == "exact" or (method == "auto" and y.dtype == torch.float64):
        x = gelu_inverse(y, bit, approximate)
        d = gelu_derivative(x, approximate)
        d = torch.where(x == float("-inf"), 0.0, d)
    else:
        d = derivative_from_output(y, bit, approximate)
    return (grad.to(torch.float64) * d).to(grad.dtype)


class InplaceGELUFunction(torch.autograd.Function):
    """Autograd function: saves (output, branch mask); see module docstring."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, approximate: str, mask_format: str) -> torch.Tensor:
        _check_approximate(approximate)
        k = CONSTANTS[approximate]
        y = nn.functional.gelu(x, approximate=approximate)
        ctx.approximate = approximate
        ctx.mask_format = mask_format
        ctx.save_for_backward(y, store_mask(x >= k.x_min, mask_format))
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None]:
        y, mask = ctx.saved_tensors
        flat_y = y.reshape(-1)
        flat_g = grad.reshape(-1)
        out = torch.empty(flat_g.shape, dtype=grad.dtype, device=grad.device)
        for start, stop in chunks.ranges(flat_y.numel(), chunks.ELEMENT_CHUNK):
            bit = load_mask(mask, ctx.mask_format, start, stop)
            out[start:stop] = _gelu_grad_from_output(
                flat_g[start:stop], flat_y[start:stop], bit, ctx.approximate
            )
        return out.view(grad.shape), None, None


def inplace_gelu(
    x: torch.Tensor, approximate: str = "none", mask_format: str = "bit"
) -> torch.Tensor:
    """Functional form of :class:`InplaceGELU`."""
    return InplaceGELUFunction.apply(x, approximate, mask_format)


class InplaceGELU(nn.Module):
    """Drop-in ``nn.GELU`` whose backward needs only the output (plus one bit per element)."""

    def __init__(self, approximate: str = "none", mask_format: str = "bit") -> None:
        super().__init__()
        _check_approximate(approximate)
        self.approximate = approximate
        self.mask_format = mask_format

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (torch.is_grad_enabled() and x.requires_grad):
            return nn.functional.gelu(x, approximate=self.approximate)
        return inplace_gelu(x, self.approximate, self.mask_format)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}, mask_format={self.mask_format!r}"
