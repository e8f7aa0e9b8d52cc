"""`ModelBuilder` (alias `DNNBuilder`): a fluent recipe for RL networks (API.md §6.4).

    net = (ModelBuilder(domain=(i,)).with_ff_encoder(obs_shape, 64).with_ff_hidden([64])
           .with_discrete_pi_decoder(2).with_vfun_decoder().build())

Weights default to orthogonal init with gain √2 (policy heads 0.01, value heads 1.0, as
CleanRL); activations default to tanh. The recipe is kept, so `copy_every` can build a
second network of the same architecture."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from tempo.api.nn.activations import ActivationFunction
from tempo.api.nn.conv import Conv2d
from tempo.api.nn.init import InitFn
from tempo.api.nn.linear import Linear
from tempo.api.nn.module import Module
from tempo.api.ops.init import orthogonal_init
from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.api.rl.networks.network import (
    CategoricalDistPiDecoder,
    Network,
    NormalDistPiNetwork,
    QNetwork,
    Trunk,
    VNetwork,
    affine,
    flat_size,
)
from tempo.core import index_expr as ie
from tempo.core.domain import DomainLike
from tempo.core.errors import TempoError, user_site

CNNSpec = tuple[int, int, int, int, int, Any]  # (in, out, kernel, stride, padding, act)


def _act(a: Any) -> ActivationFunction | None:
    return None if a is None else ActivationFunction.from_(a)


class FFLayer(Module):
    """Linear then an activation, batch-first (N, in) → (N, out)."""

    def __init__(self, lin: Linear, act: ActivationFunction | None) -> None:
        super().__init__()
        self.lin, self.act = lin, act

    def forward(self, x: Any) -> RecurrentTensor:
        y = affine(self.lin, RecurrentTensor.lift(x))
        return self.act(y) if self.act is not None else y


class FlattenFFLayer(FFLayer):
    """The ff encoder: flatten from dim 1, then Linear and activation."""

    def forward(self, x: Any) -> RecurrentTensor:
        return super().forward(RecurrentTensor.lift(x).flatten(1))


class CNNLayer(Module):
    """Conv2d then an activation over (N, C, H, W)."""

    def __init__(self, conv: Conv2d, act: ActivationFunction | None) -> None:
        super().__init__()
        self.conv, self.act = conv, act

    def forward(self, x: Any) -> RecurrentTensor:
        y = self.conv(x)
        return self.act(y) if self.act is not None else y


class RecurrentFFLayer(Module):
    """h[t] = act(W x[t] + U h[t-1] + b), h[-1] = 0, along the time symbol: the last symbol
    of the input's domain outside the network's domains (or `time_var`)."""

    def __init__(self, lin: Linear, rec: Linear, act: ActivationFunction | None,
                 time_var: ie.Symbol | None) -> None:
        super().__init__()
        self.lin, self.rec, self.act, self.time_var = lin, rec, act, time_var

    def forward(self, x: Any) -> RecurrentTensor:
        x = RecurrentTensor.lift(x)
        own = set(self.lin.full_dom.variables)
        t = self.time_var or next((v for v in reversed(x.domain.variables) if v not in own),
                                  None)
        if t is None:
            raise TempoError("a recurrent hidden layer needs a time symbol in its input's "
                             f"domain {x.domain}", site=user_site())
        pre = affine(self.lin, x)
        h = RecurrentTensor.placeholder(pre.shape, pre.dtype, domain=pre.domain)
        prev = tuple(t - 1 if v.struct_eq(t) else v for v in h.unindexed_domain.variables)
        act = self.act or (lambda z: z)
        h[t.symb_eq(0)] = act(pre)
        h[True] = act(pre + affine(self.rec, h[prev]))
        return h


class ModelBuilder:
    """Fluent recipe: encoder → hidden → decoder(s) → `build()`."""

    def __init__(self, domain: DomainLike = None, independent_domain: DomainLike = None,
                 w_init_fun: InitFn | None = None) -> None:
        self.domain, self.independent_domain = domain, independent_domain
        self.w_init_fun = w_init_fun
        self._encoder: tuple[str, Any] | None = None
        self._hidden: list[tuple[str, Any]] = []
        self._decoder: tuple[str, Any] | None = None
        self._second: str | None = None

    # ---------------------------------------------------------------- recipe
    def with_ff_encoder(self, obs_shape: Sequence[int] | int, encoded_latent_size: int,
                        bias: bool = True, activation_fun: Any = None) -> ModelBuilder:
        self._encoder = ("ff", (flat_size(obs_shape), encoded_latent_size, bias,
                                activation_fun or "tanh"))
        return self

    def with_cnn_encoder(self, convs: Sequence[CNNSpec],
                         obs_shape: Sequence[int] | None = None) -> ModelBuilder:
        """Conv2d layers, flattened; later layers need the flattened size, computed from
        `obs_shape` (C, H, W) (ours; required when hidden layers or decoders follow)."""
        self._encoder = ("cnn", (list(convs), None if obs_shape is None else tuple(obs_shape)))
        return self

    def with_ff_hidden(self, hidden_sizes: Sequence[int], bias: bool = True,
                       activation_fun: Any = None) -> ModelBuilder:
        self._hidden += [("ff", (int(h), bias, activation_fun or "tanh")) for h in hidden_sizes]
        return self

    def with_recurrent_ff_hidden(self, hidden_sizes: Sequence[int], bias: bool = True,
                                 activation_fun: Any = None,
                                 time_var: ie.Symbol | None = None) -> ModelBuilder:
        self._hidden += [("rec", (int(h), bias, activation_fun or "tanh", time_var))
                         for h in hidden_sizes]
        return self

    def with_discrete_pi_decoder(self, num_actions: int) -> ModelBuilder:
        self._decoder = ("discrete", int(num_actions))
        return self

    def with_continuous_pi_decoder(self, action_shape: Sequence[int] | int, bias: bool = False,
                                   squish: bool = False) -> ModelBuilder:
        shape = (action_shape,) if isinstance(action_shape, int) else tuple(action_shape)
        self._decoder = ("continuous", (shape, bias, squish))
        return self

    def with_qfun_decoder(self, num_outputs: int) -> ModelBuilder:
        self._decoder = ("q", int(num_outputs))
        return self

    def with_vfun_decoder_only(self) -> ModelBuilder:
        self._decoder = ("v", None)
        return self

    def with_vfun_decoder(self) -> ModelBuilder:
        self._need_pi("with_vfun_decoder")
        self._second = "v"
        return self

    def with_no_second_decoder(self) -> ModelBuilder:
        self._need_pi("with_no_second_decoder")
        self._second = None
        return self

    def _need_pi(self, what: str) -> None:
        if self._decoder is None or self._decoder[0] not in ("discrete", "continuous"):
            raise TempoError(f"{what}() follows a policy decoder (with_discrete_pi_decoder / "
                             "with_continuous_pi_decoder)", site=user_site())

    # ---------------------------------------------------------------- building
    def _lin(self, i: int, o: int, bias: bool, gain: float) -> Linear:
        w = self.w_init_fun or functools.partial(orthogonal_init, gain=gain)
        return Linear(i, o, bias, domain=self.domain, independent_domain=self.independent_domain,
                      w_init_fun=w)

    def _trunk(self) -> tuple[list[Module], int]:
        if self._encoder is None:
            raise TempoError("a network needs an encoder (with_ff_encoder / with_cnn_encoder)",
                             site=user_site())
        kind, spec = self._encoder
        layers: list[Module] = []
        width: int | None
        if kind == "ff":
            i, o, bias, act = spec
            layers.append(FlattenFFLayer(self._lin(i, o, bias, math.sqrt(2)), _act(act)))
            width = o
        else:
            convs, obs_shape = spec
            for c_in, c_out, k, s, p, act in convs:
                w = self.w_init_fun or functools.partial(orthogonal_init, gain=math.sqrt(2))
                conv = Conv2d(c_in, c_out, k, s, p, domain=self.domain,
                              independent_domain=self.independent_domain, w_init_fun=w)
                layers.append(CNNLayer(conv, _act(act)))
            layers.append(_Flatten1())
            width = _cnn_out(convs, obs_shape)
        for kind, spec in self._hidden:
            if width is None:
                raise TempoError("with_cnn_encoder(convs, obs_shape=...) is needed to size the "
                                 "layers after it", site=user_site())
            if kind == "ff":
                h, bias, act = spec
                layers.append(FFLayer(self._lin(width, h, bias, math.sqrt(2)), _act(act)))
            else:
                h, bias, act, tv = spec
                layers.append(RecurrentFFLayer(self._lin(width, h, bias, math.sqrt(2)),
                                               self._lin(h, h, False, math.sqrt(2)), _act(act),
                                               tv))
            width = h
        if width is None:
            raise TempoError("with_cnn_encoder(convs, obs_shape=...) is needed to size the "
                             "decoder", site=user_site())
        return layers, width

    def build(self) -> Network:
        if self._decoder is None:
            raise TempoError("a network needs a decoder (with_discrete_pi_decoder, "
                             "with_continuous_pi_decoder, with_qfun_decoder or "
                             "with_vfun_decoder_only)", site=user_site())
        layers, width = self._trunk()
        kw: dict[str, Any] = dict(domain=self.domain, independent_domain=self.independent_domain,
                                  rebuild=self.build)
        trunk = Trunk(layers, self.domain, self.independent_domain)
        kind, spec = self._decoder
        if self._second == "v":
            kw["value_head"] = self._lin(width, 1, True, 1.0)
        if kind == "discrete":
            return CategoricalDistPiDecoder(trunk, self._lin(width, spec, True, 0.01), **kw)
        if kind == "continuous":
            shape, bias, squish = spec
            return NormalDistPiNetwork(trunk, self._lin(width, flat_size(shape), bias, 0.01),
                                       shape, squish, **kw)
        if kind == "q":
            return QNetwork(trunk, self._lin(width, spec, True, 1.0), **kw)
        return VNetwork(trunk, self._lin(width, 1, True, 1.0), **kw)

    # ---------------------------------------------------------------- from an env
    @staticmethod
    def from_env(hidden: Sequence[int], domain: DomainLike, env: Any,
                 actor_critic: bool = False) -> Network:
        """ff encoder to hidden[0], ff hidden layers hidden[1:], a categorical policy for a
        Discrete action space or a Gaussian one for a Box; a value head if `actor_critic`."""
        if not hidden:
            raise TempoError("from_env needs at least one hidden size", site=user_site())
        b = ModelBuilder(domain=domain).with_ff_encoder(env.single_observation_shape, hidden[0])
        b = b.with_ff_hidden(hidden[1:])
        space = env.action_space
        if isinstance(space, gym.spaces.Discrete):
            b = b.with_discrete_pi_decoder(int(space.n))
        elif isinstance(space, gym.spaces.Box):
            b = b.with_continuous_pi_decoder(tuple(space.shape))
        else:
            raise TempoError(f"from_env: no policy for the action space {space}",
                             site=user_site())
        b = b.with_vfun_decoder() if actor_critic else b.with_no_second_decoder()
        return b.build()


class _Flatten1(Module):
    def forward(self, x: Any) -> RecurrentTensor:
        return RecurrentTensor.lift(x).flatten(1)


def _cnn_out(convs: Sequence[CNNSpec], obs_shape: tuple[int, ...] | None) -> int | None:
    if obs_shape is None:
        return None
    c, h, w = obs_shape
    for _c_in, c_out, k, s, p, _ in convs:
        h, w, c = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1, c_out
    return c * h * w


DNNBuilder = ModelBuilder
