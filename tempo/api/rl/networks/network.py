"""RL networks (API.md §6.4): a trunk (encoder + hidden layers) and one or two decoders.

Inputs are batch-first, `(N, *obs_shape)`: the encoder flattens from dim 1, so a program
over a symbolic batch passes `obs.unsqueeze()` (N = 1) and squeezes the value. `net(obs)`
returns `(action, value | None)`; `log_prob`, `entropy` and `qvalues` read the last forward.
Parameters evolve along the builder's update domain (e.g. `(i,)`), as every `nn.Module`."""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Sequence
from typing import Any

from tempo.api.distributions import Categorical, Normal
from tempo.api.nn.module import Module
from tempo.api.recurrent_tensor import RecurrentTensor
from tempo.core import index_expr as ie
from tempo.core.errors import TempoError, user_site


def affine(lin: Any, x: RecurrentTensor) -> RecurrentTensor:
    """`lin(x)` as (N, out): matmul squeezes size-1 rows/columns (API §7), reshape restores."""
    return lin(x).reshape((int(x.shape[0]), lin.out_features))


class Trunk(Module):
    """Encoder then hidden layers; each layer is `(module, activation | None)` or a
    recurrent layer (a module with `recurrent = True` taking the whole sequence)."""

    def __init__(self, layers: list[Any], domain: Any = None,
                 independent_domain: Any = None) -> None:
        super().__init__(domain, independent_domain)
        self.layers = layers

    def forward(self, x: Any) -> RecurrentTensor:
        h = RecurrentTensor.lift(x)
        for layer in self.layers:
            h = layer(h)
        return h


class Network(Module, abc.ABC):
    """Trunk + first decoder (+ value decoder). Subclasses say what the first decoder means."""

    def __init__(self, trunk: Trunk, domain: Any = None, independent_domain: Any = None,
                 value_head: Any = None, rebuild: Callable[[], Network] | None = None) -> None:
        super().__init__(domain, independent_domain)
        self.trunk = trunk
        self.value_head = value_head
        self._rebuild = rebuild
        self._last: dict[str, Any] = {}

    # ---------------------------------------------------------------- forward
    def forward(self, obs: Any) -> tuple[RecurrentTensor, RecurrentTensor | None]:
        obs = RecurrentTensor.lift(obs)
        if obs.ndim < 2:
            raise TempoError(f"networks take batch-first observations (N, ...), got shape "
                             f"{tuple(obs.shape)}; pass obs.unsqueeze() for one observation",
                             site=user_site())
        z = self.trunk(obs)
        action = self._decode(z)
        value = None
        if self.value_head is not None:
            value = affine(self.value_head, z).reshape((int(z.shape[0]),))
            self._last["value"] = value
        return action, value

    @abc.abstractmethod
    def _decode(self, z: RecurrentTensor) -> RecurrentTensor:
        """The head's output from the trunk's features (each network kind decodes its own)."""

    def _need(self, key: str, what: str) -> Any:
        if key not in self._last:
            raise TempoError(f"{type(self).__name__}.{what}() is valid after a forward "
                             f"(call net(obs) first){'' if key != 'q' else ' of a q-network'}",
                             site=user_site())
        return self._last[key]

    def log_prob(self, actions: Any) -> RecurrentTensor:
        """Log-probability of `actions` (N, *action_shape) under the last forward: (N,)."""
        return self._log_prob(self._need("dist", "log_prob"), RecurrentTensor.lift(actions))

    def _log_prob(self, dist: Any, a: RecurrentTensor) -> RecurrentTensor:
        return dist.log_prob(a)

    def entropy(self) -> RecurrentTensor:
        """Entropy of the last forward's policy, (N,)."""
        return self._need("dist", "entropy").entropy()

    def qvalues(self) -> RecurrentTensor:
        """The last forward's q-values, (N, num_actions)."""
        return self._need("q", "qvalues")

    # ---------------------------------------------------------------- target networks
    def _update_var(self, var: ie.Symbol | None) -> ie.Symbol:
        if var is not None:
            return var
        if len(self.domain.variables) != 1:
            raise TempoError(f"the network's update domain is {self.domain}: name the "
                             "update variable (update_var=/var=)", site=user_site())
        return self.domain.variables[0]

    def polyak_update(self, target: Network, tau: float, update_var: ie.Symbol | None = None,
                      update_freq: int = 1) -> None:
        """Define `target`'s parameters as a moving average of this network's:
        `target[u] = tau·self[u] + (1−tau)·target[u−1]` every `update_freq` steps of `u`
        (held in between), `self[0]` at `u == 0`. Over a domain like (i, t) with u = i,
        `self` is read at the start of the step, (i, 0)."""
        u = self._update_var(update_var)
        mine, theirs = self.parameters + self.buffers, target.parameters + target.buffers
        if len(mine) != len(theirs) or any(tuple(a.shape) != tuple(b.shape)
                                           for a, b in zip(mine, theirs)):
            raise TempoError("polyak_update needs a target with the same architecture",
                             site=user_site())
        freq, tau = int(update_freq), float(tau)
        if freq < 1 or not 0.0 <= tau <= 1.0:
            raise TempoError(f"polyak_update: need update_freq >= 1 and tau in [0, 1], got "
                             f"{update_freq}, {tau}", site=user_site())
        for p, tp in zip(mine, theirs):
            vars_ = tuple(tp.unindexed_domain.variables)
            if u not in vars_:
                raise TempoError(f"polyak_update: {u} is not in the target's domain",
                                 site=user_site())
            after = vars_[vars_.index(u) + 1:]
            prev = tuple(u - 1 if v.struct_eq(u) else v for v in vars_)
            src = p.detach()
            if after:
                src = src[tuple(0 if v in after else v for v in vars_)]
            tp.clear_placeholder_branches()
            tp[u.symb_eq(0)] = src
            on = (u % freq).symb_eq(0)
            tp[on] = src if tau == 1.0 else src * tau + tp[prev] * (1.0 - tau)
            if freq > 1:
                tp[True] = tp[prev]

    def copy_every(self, num_steps: int = 1, var: ie.Symbol | None = None) -> Network:
        """A new network of the same architecture holding this one's parameters, refreshed
        every `num_steps` steps of the update variable (a DQN target network)."""
        if self._rebuild is None:
            raise TempoError("copy_every needs a network built by ModelBuilder",
                             site=user_site())
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
            # checked here, not by polyak_update: its message names its own arguments
            raise TempoError(f"copy_every: num_steps must be an int >= 1 (the target is "
                             f"refreshed every num_steps steps), got {num_steps!r}",
                             site=user_site())
        target = self._rebuild()
        self.polyak_update(target, 1.0, var, num_steps)
        return target


class CategoricalDistPiDecoder(Network):
    """Softmax policy: logits → `Categorical`; the action is a fresh sample per point."""

    def __init__(self, trunk: Trunk, head: Any, **kw: Any) -> None:
        super().__init__(trunk, **kw)
        self.head = head

    def _decode(self, z: RecurrentTensor) -> RecurrentTensor:
        logits = affine(self.head, z)
        dist = Categorical(logits=logits)
        self._last.update(dist=dist, logits=logits)
        return dist.sample()


class NormalDistPiNetwork(Network):
    """Gaussian policy with a learned state-independent log-sigma; log_prob and entropy are
    summed over the action dims. `squish` bounds the mean with tanh."""

    def __init__(self, trunk: Trunk, head: Any, action_shape: Sequence[int], squish: bool,
                 **kw: Any) -> None:
        super().__init__(trunk, **kw)
        self.head = head
        self.action_shape = tuple(int(d) for d in action_shape)
        self.squish = squish
        self.log_sigma = self.param_from_init(RecurrentTensor.zeros(self.action_shape),
                                              regularize=False)

    def _decode(self, z: RecurrentTensor) -> RecurrentTensor:
        n = int(z.shape[0])
        mu = affine(self.head, z).reshape((n, *self.action_shape))
        if self.squish:
            mu = mu.tanh()
        dist = Normal(mu, self.log_sigma.exp())
        self._last.update(dist=dist, mu=mu)
        return dist.sample()

    def _log_prob(self, dist: Any, a: RecurrentTensor) -> RecurrentTensor:
        lp = dist.log_prob(a)
        return lp.sum(tuple(range(1, lp.ndim))) if lp.ndim > 1 else lp

    def entropy(self) -> RecurrentTensor:
        # sigma is state-independent: the entropy is the same for all n samples, so sum it
        # over the action dims once and expand (the graph E5 times; equal to summing
        # Normal.entropy()'s (n, *action_shape) per sample)
        dist = self._need("dist", "entropy")
        ent = dist.sigma_entropy()
        n = int(self._last["mu"].shape[0])
        total = ent.sum() if ent.ndim else ent
        return total.unsqueeze(0).expand((n,))


class QNetwork(Network):
    """q-values per action; the action is the argmax (greedy)."""

    def __init__(self, trunk: Trunk, head: Any, **kw: Any) -> None:
        super().__init__(trunk, **kw)
        self.head = head

    def _decode(self, z: RecurrentTensor) -> RecurrentTensor:
        q = affine(self.head, z)
        self._last["q"] = q
        return q.argmax(-1)


class VNetwork(Network):
    """A value function only: `net(obs) -> (value, None)`, value (N,)."""

    def __init__(self, trunk: Trunk, head: Any, **kw: Any) -> None:
        super().__init__(trunk, **kw)
        self.head = head

    def _decode(self, z: RecurrentTensor) -> RecurrentTensor:
        v = affine(self.head, z).reshape((int(z.shape[0]),))
        self._last["value"] = v
        return v


def flat_size(shape: Sequence[int] | int) -> int:
    return shape if isinstance(shape, int) else math.prod(int(d) for d in shape)
