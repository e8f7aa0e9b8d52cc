"""The elementwise / activation catalogue of API 3.8 under a temporal index, with gradients
vs torch autograd: each op reads a = A*(1+0.1t) at t and b = B*(1-0.05t') at t' = max(0, t-1)
(leaves A, B per op), a weighted sum over t is the loss. Covers exp2/exp10/log2/log10/
log_base (module form), sqrt, trig, erf, reciprocal, square, pow with a tensor exponent and
literal exponents 0.5/2/3, maximum/minimum (ties excluded), clip with tensor bounds on both
sides, where with a comparison condition, normalize, swish/elu/leakyrelu/softplus(beta)/mish,
abs/neg/relu on shifted values, div/floor-free arithmetic with reflected scalars."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import torch, torch.nn.functional as F
from common6 import catalogue


def program(cfg):
    import tempo.api.recurrent_tensor as tpo
    ops = {
        "exp2": (lambda a, b, t: a.exp2(), lambda a, b, t: torch.exp2(a)),
        "exp10": (lambda a, b, t: tpo.exp10(a * 0.5), lambda a, b, t: torch.pow(10.0, a * 0.5)),
        "log2": (lambda a, b, t: a.log2() + b.log10(), lambda a, b, t: torch.log2(a) + torch.log10(b)),
        "log_base": (lambda a, b, t: tpo.log_base(2.5, a * b), lambda a, b, t: torch.log(a * b) / torch.log(torch.tensor(2.5))),
        "sqrt": (lambda a, b, t: tpo.sqrt(a + b), lambda a, b, t: torch.sqrt(a + b)),
        "trig": (lambda a, b, t: a.sin() * b.cos() + (a * 0.5).tan(), lambda a, b, t: torch.sin(a) * torch.cos(b) + torch.tan(a * 0.5)),
        "tanh_sig": (lambda a, b, t: (a - b).tanh() + (b - a).sigmoid(), lambda a, b, t: torch.tanh(a - b) + torch.sigmoid(b - a)),
        "erf": (lambda a, b, t: (a - 1.0).erf(), lambda a, b, t: torch.erf(a - 1.0)),
        "recip_sq": (lambda a, b, t: tpo.reciprocal(a) + b.square(), lambda a, b, t: 1.0 / a + b * b),
        "pow_t": (lambda a, b, t: tpo.pow_(a, b), lambda a, b, t: torch.pow(a, b)),
        "pow_lit": (lambda a, b, t: a ** 0.5 + a ** 2 + b ** 3, lambda a, b, t: a ** 0.5 + a ** 2 + b ** 3),
        "rpow": (lambda a, b, t: 2.0 ** a, lambda a, b, t: 2.0 ** a),
        "maxmin": (lambda a, b, t: tpo.maximum(a, b * 1.01) - tpo.minimum(a, b * 0.99), lambda a, b, t: torch.maximum(a, b * 1.01) - torch.minimum(a, b * 0.99)),
        "clip_t": (lambda a, b, t: a.clip(b * 0.9, b * 1.1), lambda a, b, t: torch.clamp(a, b * 0.9, b * 1.1)),
        "clamp_lb": (lambda a, b, t: tpo.clip(a, lb=b), lambda a, b, t: torch.maximum(a, b)),
        "where": (lambda a, b, t: tpo.where(a > b, a * a, b + 1.0), lambda a, b, t: torch.where(a > b, a * a, b + 1.0)),
        "where_m": (lambda a, b, t: (a < b).where(a, -b), lambda a, b, t: torch.where(a < b, a, -b)),
        "normalize": (lambda a, b, t: a.normalize(b.mean(), b.std()), lambda a, b, t: (a - b.mean()) / (b.std() + 1e-8)),
        "acts": (lambda a, b, t: (a - b).swish() + (a - b).elu(0.7) + (a - b).leakyrelu(0.2),
                 lambda a, b, t: F.silu(a - b) + F.elu(a - b, 0.7) + F.leaky_relu(a - b, 0.2)),
        "softplus": (lambda a, b, t: (a - b).softplus(2.0) + (b - a).mish(), lambda a, b, t: F.softplus(a - b, beta=2.0) + F.mish(b - a)),
        "abs_neg_relu": (lambda a, b, t: (a - b).abs() - (-(a - 1.0)).relu() + tpo.neg(b), lambda a, b, t: (a - b).abs() - torch.relu(-(a - 1.0)) - b),
        "rdiv": (lambda a, b, t: 1.0 - 3.0 / a + b / 2.0 - (2.0 - b) * a, lambda a, b, t: 1.0 - 3.0 / a + b / 2.0 - (2.0 - b) * a),
        "ln_exp": (lambda a, b, t: (a * b).ln() * (b - a).exp(), lambda a, b, t: torch.log(a * b) * torch.exp(b - a)),
    }
    return catalogue(cfg, ops)
