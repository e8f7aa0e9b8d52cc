"""Environment sets: `"<set>.<name>"` → a gymnasium env builder (API.md §6.4).

A set's builder makes one environment from an `EnvBuildCtx`; an optional vector builder
makes `n` of them stepped by one call (gymnasium's native vector envs, e.g. CartPole's, or
the trivial env's). Sets whose package is absent raise a `TempoError` naming it."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tempo.core.errors import TempoError, UnsupportedError, user_site


@dataclass(frozen=True)
class EnvBuildCtx:
    """What a builder needs: the name after the set's dot, the episode limit, the user's
    wrappers and keyword arguments, and (vector builders) the number of environments."""

    env_set: str
    name: str
    max_episode_steps: int | None = None
    wrappers: Sequence[type[gym.Wrapper]] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    num_envs: int = 1


EnvBuilder = Callable[[EnvBuildCtx], gym.Env]
VectorEnvBuilder = Callable[[EnvBuildCtx], gym.vector.VectorEnv]


class EnvRegistry:
    """Class-level registry of environment sets (`register_env_set(name, builder)`)."""

    _sets: dict[str, EnvBuilder] = {}
    _vector_sets: dict[str, VectorEnvBuilder] = {}

    @classmethod
    def register_env_set(cls, name: str, builder: EnvBuilder,
                         vector_builder: VectorEnvBuilder | None = None) -> None:
        """Register (or replace) a set; `vector_builder` is optional (else gymnasium's
        SyncVectorEnv over `builder`)."""
        if "." in name:
            raise TempoError(f"an env set name cannot contain '.', got {name!r}",
                             site=user_site())
        cls._sets[name] = builder
        cls._vector_sets.pop(name, None)
        if vector_builder is not None:
            cls._vector_sets[name] = vector_builder

    @classmethod
    def env_sets(cls) -> list[str]:
        return sorted(cls._sets)

    @classmethod
    def split_name(cls, full_name: str) -> tuple[str, str]:
        env_set, dot, name = full_name.partition(".")
        if not dot or env_set not in cls._sets:
            raise TempoError(
                f"environment {full_name!r}: names are '<env_set>.<env_name>' with env_set one "
                f"of {cls.env_sets()} (register others with EnvRegistry.register_env_set)",
                site=user_site())
        return env_set, name

    @classmethod
    def build(cls, bctx: EnvBuildCtx) -> gym.Env:
        """One environment with the user's wrappers applied."""
        env = cls._sets[bctx.env_set](bctx)
        for w in bctx.wrappers:
            env = w(env)
        return env

    @classmethod
    def build_vector(cls, bctx: EnvBuildCtx) -> gym.vector.VectorEnv:
        """`bctx.num_envs` environments behind one `step` call."""
        vb = cls._vector_sets.get(bctx.env_set)
        if vb is not None and not bctx.wrappers:
            return vb(bctx)
        return gym.vector.SyncVectorEnv([lambda: cls.build(bctx)] * bctx.num_envs)


# ---------------------------------------------------------------- built-in sets
def _gym_kwargs(bctx: EnvBuildCtx) -> dict[str, Any]:
    kw = dict(bctx.kwargs)
    if bctx.max_episode_steps is not None:
        kw["max_episode_steps"] = bctx.max_episode_steps
    return kw


def _gym(bctx: EnvBuildCtx) -> gym.Env:
    try:
        return gym.make(bctx.name, **_gym_kwargs(bctx))
    except gym.error.Error as exc:
        raise TempoError(f"gymnasium cannot make {bctx.name!r}: {exc}", site=user_site()) from exc


def _gym_vector(bctx: EnvBuildCtx) -> gym.vector.VectorEnv:
    spec = gym.spec(bctx.name)
    mode = "vector_entry_point" if spec.vector_entry_point is not None else "sync"
    return gym.make_vec(bctx.name, num_envs=bctx.num_envs, vectorization_mode=mode,
                        **_gym_kwargs(bctx))


def _trivial_kwargs(bctx: EnvBuildCtx) -> dict[str, Any]:
    kw = dict(bctx.kwargs)
    if "observation_shape" not in kw:
        raise TempoError("the trivial env needs observation_shape=(...) (e.g. (3, 4, 4))",
                         site=user_site())
    unknown = set(kw) - {"observation_shape", "continuous", "seed"}
    if unknown:
        raise TempoError(f"the trivial env takes observation_shape and continuous, not "
                         f"{sorted(unknown)}", site=user_site())
    kw["max_episode_steps"] = bctx.max_episode_steps or 64
    return kw


def _trivial(bctx: EnvBuildCtx) -> gym.Env:
    from tempo.api.rl.env.gym_adapter import TrivialGymEnv

    return TrivialGymEnv(_trivial_kwargs(bctx))


def _trivial_vector(bctx: EnvBuildCtx) -> gym.vector.VectorEnv:
    from tempo.api.rl.env.gym_adapter import TrivialVectorEnv

    kw = _trivial_kwargs(bctx)
    return TrivialVectorEnv(bctx.num_envs, kw["observation_shape"], kw["max_episode_steps"],
                            bool(kw.get("continuous", True)), kw.get("seed"), autoreset=False)


_PACKAGES = {"brax": "brax", "cule": "torchcule", "torchcatch": "torchcatch"}


def _needs_package(env_set: str) -> EnvBuilder:
    """A set whose simulator is an optional package: absent → a TempoError naming it;
    present → UnsupportedError (no adapter to its non-gymnasium API is built yet)."""
    package = _PACKAGES[env_set]

    def build(bctx: EnvBuildCtx) -> gym.Env:
        if importlib.util.find_spec(package) is None:
            raise TempoError(
                f"environment set {env_set!r} needs the package {package!r}, which is not "
                f"installed (pip install {package}); installed sets that work here: gym, "
                "trivial", site=user_site())
        raise UnsupportedError(
            f"environment set {env_set!r}: {package} is installed but Tempo has no adapter "
            "for it yet; wrap its environments as gymnasium envs and register them with "
            "EnvRegistry.register_env_set", site=user_site())

    return build


EnvRegistry.register_env_set("gym", _gym, _gym_vector)
EnvRegistry.register_env_set("trivial", _trivial, _trivial_vector)
for _set in _PACKAGES:
    EnvRegistry.register_env_set(_set, _needs_package(_set))
