"""The runtime side of `Env.reset`/`Env.step`: gymnasium vector environments behind the UDFs.

One *slot* per reset point holds a gymnasium vector env (`num_envs` sub-envs, or 1). A step
at point p continues the episode of the slot reset at p's values of the reset domain.
Episodes are absorbing (autoreset is off): after an env terminates or truncates, later steps
return its last observation, reward 0 and the same (sticky) terminated/truncated flags, so a
fixed-length rollout over `t` stays well defined and its reward sum is the episode return.

Vectorised over a domain dim (`lazy_vectorized_version`), a reset point becomes a block of
points served by one slot, and a step over the block is one call of the UDF. The block's
sub-envs are exactly the points' own (each seeded by its point's seed), so a vectorised
program reads the values the per-point one does: one vector env steps them all when it
seeds sub-envs one by one (gymnasium's Sync/Async vector envs, the trivial set's); native
vector envs taking one seed (CartPole's) are stepped one per point inside that call."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from tempo.api.rl.env.seeding import finish_seeds, hash_columns, point_seeds, seed_hash
from tempo.core.errors import TempoError, UnsupportedError
from tempo.core.index_expr import Symbol
from tempo.runtime.host_arrays import to_host

MAX_LIVE_SLOTS = 4096  # episodes alive at once; older slots are recycled beyond this


def to_numpy(x: Any) -> np.ndarray:
    """A backend tensor (torch, jax, numpy) as a host numpy array (bfloat16 included)."""
    return to_host(x)


def point_seed(seed: int, key: tuple[int, ...]) -> int:
    """The seed of the slot reset at point `key`: distinct per point, fixed by `seed`
    (`seeding.point_seeds`, which hashes a block's points at once)."""
    return int(point_seeds(seed, [tuple(int(k) for k in key)])[0])


def seeds_sub_envs(env: gym.vector.VectorEnv) -> bool:
    """Whether `env.reset(seed=[...])` seeds each sub-env by its own seed (gymnasium's
    Sync/Async vector envs, the trivial set's), so that sub-envs of different points can
    share one vector env exactly; native vector envs (e.g. CartPole's) take one seed."""
    return isinstance(env, gym.vector.SyncVectorEnv | gym.vector.AsyncVectorEnv) or bool(
        getattr(env, "seeds_sub_envs", False))


class Slot:
    """The episodes of `points` reset points of `per` sub-envs each, with absorbing
    episodes. Point k's sub-envs behave as that point's own vector env reset with its
    seed (a slot of several points is a vectorised reset): one vector env for all of
    them when it seeds sub-envs one by one, else a vector env per point stepped in turn."""

    def __init__(self, make: Callable[[int], gym.vector.VectorEnv], points: int, per: int,
                 layout: Any) -> None:
        env = make(points * per)
        if points == 1 or seeds_sub_envs(env):
            self.envs = [env]
        else:
            env.close()
            self.envs = [make(per) for _ in range(points)]
        self.lists = seeds_sub_envs(self.envs[0])
        self.n = points * per
        self.per = per
        self.layout = layout  # how the slot was reset: () per point, else the vectorised dims
        self.seeded = False
        self.done = np.zeros(self.n, bool)
        self.term = np.zeros(self.n, bool)
        self.trunc = np.zeros(self.n, bool)
        self.last_obs: np.ndarray | None = None

    def _reset(self, seeds: Sequence[int] | np.ndarray | None) -> np.ndarray:
        if seeds is None:
            return np.concatenate([np.asarray(e.reset()[0]) for e in self.envs])
        if self.lists:  # sub-env j of point k: seed s_k + j, as gymnasium seeds a vector env
            subs = (np.asarray(seeds, np.int64)[:, None] + np.arange(self.per)).ravel()
            env: Any = self.envs[0]  # gymnasium types reset's seed as one int
            return np.asarray(env.reset(seed=subs.tolist())[0])
        return np.concatenate([np.asarray(e.reset(seed=int(s))[0])
                               for e, s in zip(self.envs, seeds)])

    def reset(self, seeds: Sequence[int] | np.ndarray) -> np.ndarray:
        """Seeded on the first reset; later resets continue the sub-envs' generators."""
        obs = self._reset(None if self.seeded else seeds)
        self.seeded = True
        self.done[:] = False
        self.term[:] = False
        self.trunc[:] = False
        self.last_obs = np.array(obs)
        return self.last_obs

    def _step(self, actions: np.ndarray) -> tuple[Any, ...]:
        if len(self.envs) == 1:
            return self.envs[0].step(actions)[:4]
        parts = [e.step(actions[k * self.per:(k + 1) * self.per])[:4]
                 for k, e in enumerate(self.envs)]
        return tuple(np.concatenate([np.asarray(p[j]) for p in parts]) for j in range(4))

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        assert self.last_obs is not None  # reset() ran: Runner.slot checks it
        obs, rew, term, trunc = self._step(actions)
        obs, rew = np.array(obs), np.asarray(rew, np.float32).copy()
        term, trunc = np.asarray(term, bool).copy(), np.asarray(trunc, bool).copy()
        was = self.done
        if was.any():  # absorbing: ended episodes keep their last values
            obs[was], rew[was] = self.last_obs[was], 0.0
            term[was], trunc[was] = self.term[was], self.trunc[was]
        self.term, self.trunc = term, trunc
        self.done = was | term | trunc
        self.last_obs = obs
        return obs, rew, term, trunc


class Runner:
    """The episodes of one `env.reset(domain=...)` call and the steps that continue them."""

    def __init__(self, name: str, make: Callable[[int], gym.vector.VectorEnv],
                 reset_vars: Sequence[Symbol], num_envs: int | None, seed: int,
                 obs_size: int, pack_dtype: np.dtype, act_shape: tuple[int, ...]) -> None:
        self.name = name
        self.act_shape = act_shape  # one sub-env's action shape
        self.obs_shape: tuple[int, ...] = ()  # one sub-env's observation shape (Env sets it)
        self.make = make
        self.vars = tuple(reset_vars)
        self.num_envs = num_envs
        self.seed = seed
        self.obs_size = obs_size
        self.pack_dtype = pack_dtype
        self.slots: OrderedDict[tuple[int, ...], Slot] = OrderedDict()
        self.spare: dict[tuple[Any, int], list[Slot]] = {}
        self.layouts: set[Any] = set()  # how resets ran: () per point, else vectorised dims
        self.step_layouts: set[Any] = set()  # steps the compiler vectorised (compile time)
        self.steps_as_ops = False  # steps are Tempo ops (trivial_ops), resets only here
        self.reset_value: Any = None  # the reset's recurrent tensor (Env.reset sets it)

    # ---------------------------------------------------------------- slots
    def _key(self, ts: dict) -> tuple[int, ...]:
        return tuple(int(ts[v]) for v in self.vars)

    def _fresh(self, key: tuple[int, ...], points: int, layout: Any) -> Slot:
        self.layouts.add(layout)
        per = self.num_envs or 1
        old = self.slots.pop(key, None)
        if old is not None and old.n == points * per and old.layout == layout:
            self.slots[key] = old
            return old
        pool = self.spare.get((layout, points))
        slot = pool.pop() if pool else Slot(self.make, points, per, layout)
        slot.seeded = False
        self.slots[key] = slot
        if len(self.slots) > MAX_LIVE_SLOTS:
            _, evicted = self.slots.popitem(last=False)
            self.spare.setdefault((evicted.layout, evicted.n // evicted.per), []).append(
                evicted)
        return slot

    def slot(self, key: tuple[int, ...], layout: Any) -> Slot:
        s = self.slots.get(key)
        if s is None and self.layouts and layout not in self.layouts:
            raise UnsupportedError(
                f"{self.name}: reset ran {_layout_word(next(iter(self.layouts)))} but step ran "
                f"{_layout_word(layout)}; vectorise both over the same dims or neither")
        if s is None:
            raise TempoError(
                f"{self.name}.step at reset point {dict(zip(map(str, self.vars), key))} has no "
                f"episode: its reset did not run first (or more than {MAX_LIVE_SLOTS} "
                "episodes were alive at once)")
        if s.layout != layout:
            raise UnsupportedError(
                f"{self.name}: reset ran {_layout_word(s.layout)} but step ran "
                f"{_layout_word(layout)}; vectorise both over the same dims or neither")
        return s

    # ---------------------------------------------------------------- per point
    def reset_point(self, ts: dict) -> np.ndarray:
        key = self._key(ts)
        obs = self._fresh(key, 1, ()).reset([point_seed(self.seed, key)])
        return obs if self.num_envs is not None else obs[0]

    def step_point(self, actions: Any, _episode: Any, ts: dict) -> np.ndarray:
        """One point's step; `_episode` is the reset's observation, read only to order the
        step after its reset (Env.step)."""
        s = self.slot(self._key(ts), ())
        packed = self._pack(*s.step(self._actions(actions, s.n)))
        return packed if self.num_envs is not None else packed[0]

    def _obs_point_shape(self) -> tuple[int, ...]:
        return self.obs_shape if self.num_envs is None else (self.num_envs, *self.obs_shape)

    def _actions(self, actions: Any, n: int) -> np.ndarray:
        """(n, *action_shape); Env.step checked the size (a leading 1 per point is allowed)."""
        return to_numpy(actions).reshape((n, *self.act_shape))

    def _pack(self, obs: np.ndarray, r: np.ndarray, term: np.ndarray,
              trunc: np.ndarray) -> np.ndarray:
        """(n, obs_size + 3): flat observation, reward, terminated, truncated."""
        n = obs.shape[0]
        out = np.empty((n, self.obs_size + 3), self.pack_dtype)
        out[:, : self.obs_size] = obs.reshape(n, -1)
        out[:, self.obs_size] = r
        out[:, self.obs_size + 1] = term
        out[:, self.obs_size + 2] = trunc
        return out

    # ---------------------------------------------------------------- vectorised
    def _vec_dims(self, dims: Sequence[tuple[Symbol, int]], what: str) -> tuple[Symbol, ...]:
        syms = tuple(d for d, _ in dims)
        outside = [str(d) for d in syms if d not in self.vars]
        if outside:
            raise UnsupportedError(
                f"{self.name}.{what} cannot be vectorised over {outside}: an episode steps "
                f"sequentially there (only the reset dims {[str(v) for v in self.vars]} batch)")
        return syms

    def reset_vectorized(self, dim: Symbol, size: int) -> Callable[[dict], Any] | None:
        """`lazy_vectorized_version(dim, size)` of reset: all `size` points along `dim` at
        once, obs (size, [num_envs], *obs) from one vector env; None (keep the loop) for a
        dim the episodes step along. With steps as Tempo ops (the trivial env) nothing ties
        the reset to a step's layout: it batches along the reset's first dim only (the envs,
        `b` of `(b, i)`), so that later dims (the iterations `i`) do not start every
        iteration's episodes up front, one reset call per env."""
        if self.steps_as_ops and dim != self.vars[0]:
            return None
        return self.reset_block([(dim, size)]) if dim in self.vars else None

    def step_vectorized(self, dim: Symbol, size: int
                        ) -> Callable[[Any, Any, dict], Any] | None:
        """`lazy_vectorized_version(dim, size)` of step: one vector-env call per block."""
        return self.step_block([(dim, size)]) if dim in self.vars else None

    def reset_block(self, dims: Sequence[tuple[Symbol, int]]) -> Callable[[dict], Any]:
        """reset over a block: obs of shape (*sizes, [num_envs], *obs) from one vector env."""
        syms, sizes = self._vec_dims(dims, "reset"), tuple(int(s) for _, s in dims)
        per = self.num_envs or 1
        layout = tuple(zip(map(str, syms), sizes))
        block = self._block_seeds(syms, sizes)

        def reset(ts: dict) -> np.ndarray:
            if layout not in self.step_layouts and not self.steps_as_ops:
                # step keeps its loop: one env per point
                return np.stack([self.reset_point(p) for p in _points(ts, syms, sizes)]
                                ).reshape((*sizes, *self._obs_point_shape()))
            key, seeds = block(ts)  # seeds row-major: the block's rows
            obs = self._fresh(key, len(seeds), layout).reset(seeds)
            lead = (*sizes, per) if self.num_envs is not None else sizes
            return obs.reshape((*lead, *obs.shape[1:]))

        return reset

    def _block_seeds(self, syms: Sequence[Symbol], sizes: Sequence[int]
                     ) -> Callable[[dict], tuple[tuple[int, ...], np.ndarray]]:
        """`ts -> (slot key, seeds of the block's points in row-major order, `_points`'s)`,
        each point's seed `point_seeds(self.seed, its key)`. The block's own columns are
        made here once, and which vars they are: comparing Symbols runs the
        index-expression simplifier (~70 us per reset of E5's 64-env block, a tenth of its
        reset); so is the hash of the columns before the first var that varies between
        blocks (the envs' of `(b, i)`: three of the five 64-element hashes of a reset)."""
        n = math.prod(sizes)
        names = [str(v) for v in syms]
        cols: list[Any] = []  # per var: its column (a block dim) or the var (one value)
        for v in self.vars:
            if str(v) in names:
                k = names.index(str(v))
                inner = math.prod(sizes[k + 1:])
                cols.append(np.arange(n, dtype=np.int64) // inner % sizes[k])
            else:
                cols.append(v)
        kept = [c for c in cols if not isinstance(c, np.ndarray)]
        lead = next((j for j, c in enumerate(cols) if not isinstance(c, np.ndarray)),
                    len(cols))
        start = seed_hash(self.seed, n)
        if lead:
            start = hash_columns(start, np.stack(cols[:lead], axis=1))
        rest = cols[lead:]

        def seeds(ts: dict) -> tuple[tuple[int, ...], np.ndarray]:
            key = tuple(int(ts[v]) for v in kept)
            if not rest:
                return key, finish_seeds(start)
            tail = np.stack([c if isinstance(c, np.ndarray) else
                             np.full(n, int(ts[c]), np.int64) for c in rest], axis=1)
            return key, finish_seeds(hash_columns(start, tail))

        return seeds

    def step_block(self, dims: Sequence[tuple[Symbol, int]]
                   ) -> Callable[[Any, Any, dict], Any]:
        """step over a block: one vector-env call for every point of the block."""
        syms, sizes = self._vec_dims(dims, "step"), tuple(int(s) for _, s in dims)
        per = self.num_envs or 1
        layout = tuple(zip(map(str, syms), sizes))
        self.step_layouts.add(layout)
        names = [str(v) for v in syms]
        kept = [v for v in self.vars if str(v) not in names]  # (Symbol == simplifies)

        def step(actions: Any, episode: Any, ts: dict) -> np.ndarray:
            if layout not in self.layouts:  # reset kept its loop: step each point's env
                a = to_numpy(actions).reshape((math.prod(sizes), -1))
                return np.stack([self.step_point(a[k], episode, p) for k, p in
                                 enumerate(_points(ts, syms, sizes))]).reshape(
                                     (*sizes, *((per,) if self.num_envs else ()), -1))
            s = self.slot(tuple(int(ts[v]) for v in kept), layout)
            packed = self._pack(*s.step(self._actions(actions, s.n)))
            lead = (*sizes, per) if self.num_envs is not None else sizes
            return packed.reshape((*lead, packed.shape[-1]))

        return step


def _points(ts: dict, syms: Sequence[Symbol], sizes: Sequence[int]) -> list[dict]:
    """The points of a block, as `ts` dicts, in row-major order."""
    out = []
    for idx in np.ndindex(*sizes):
        p = dict(ts)
        p.update({s: int(k) for s, k in zip(syms, idx)})
        out.append(p)
    return out


def _layout_word(layout: Any) -> str:
    return "point by point" if not layout else "vectorised over " + ", ".join(
        f"{n} ({s})" for n, s in layout)
