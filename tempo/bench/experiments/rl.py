"""RL experiments E5-E7 (BENCHMARKS.md §7.6-§7.8): PPO sweeps, large observations, REINFORCE."""

from __future__ import annotations

from typing import Any

from tempo.bench.experiments.common import MIB, TableSpec, points
from tempo.bench.experiments.lm import _ratio_check
from tempo.bench.registry import Experiment, Point, System, register

SF_WHY = ("sample-factory 2.1.1 requires gymnasium<1.0 and numpy<2 (pip resolves "
          "gymnasium 0.29.1, numpy 1.26.4), incompatible with the dev extra (gymnasium>=1.0) "
          "and jax; not installed")
B = "tempo.bench.baselines."
TS = "tempo.bench.systems.ppo_tempo:"
RL_SYSTEMS = [
    System("tempo-torch", TS + "train_tempo_torch", "rl"),
    System("tempo-jax", TS + "train_tempo_jax", "rl"),
    System("cleanrl", B + "ppo_cleanrl:train_cleanrl", "rl"),
    System("cleanrlcache", B + "ppo_cleanrl:train_cleanrl_cache", "rl"),
    System("rllib", B + "ppo_rllib:train_rllib", "rl", requires=("ray",), only_base=True),
    System("rlgames", B + "ppo_rlgames:train_rlgames", "rl", requires=("rl_games",),
           only_base=True),
    System("samplefactory", None, "rl", missing=SF_WHY, only_base=True),
]
E5_BASE = dict(num_layers=2, params_per_layer=64, ep_len=64, num_envs=64, obs_shape=[3, 4, 4])


def rl_dir(sysname: str, c: dict[str, Any]) -> str:
    """§1.3 directory name of an RL point."""
    obs = "x".join(str(d) for d in c["obs_shape"])
    return (f"{sysname}_num_layers{c['num_layers']}_params_per_layer{c['params_per_layer']}"
            f"_ep_len{c['ep_len']}_num_envs{c['num_envs']}_obs_shape{obs}")


def _sweep_cfgs(base: dict[str, Any], sweeps: dict[str, list[int]]) -> list[dict[str, Any]]:
    cfgs = [dict(base)]
    for k, vals in sweeps.items():
        cfgs += [dict(base, **{k: v}) for v in vals if v != base[k]]
    return cfgs


def _row_sweep(c: dict[str, Any]) -> str:
    diff = [f"{k} {c[k]}" for k in ("ep_len", "params_per_layer", "num_layers", "num_envs")
            if c[k] != E5_BASE[k]]
    return diff[0] if diff else "base"


def _e5_grid(quick: bool) -> list[Point]:
    if quick:
        base = dict(E5_BASE, ep_len=16, num_envs=16, iterations=3)
        cfgs = [base]
    else:
        base = dict(E5_BASE, iterations=12)
        cfgs = _sweep_cfgs(base, {"ep_len": [32, 64, 256], "params_per_layer": [16, 64, 256],
                                  "num_layers": [1, 4, 16], "num_envs": [16, 64, 256]})
    systems = [s for s in RL_SYSTEMS if not (quick and s.name == "rlgames")]
    return points("ppo_small_to_med", systems, cfgs,
                  lambda s, c: "rl_train/small_to_med_scale/" + rl_dir(s, c), base=base)


RL_RATIOS = (("tempo-jax", "cleanrl"), ("tempo-torch", "cleanrl"), ("cleanrlcache", "cleanrl"),
             ("rllib", "cleanrl"), ("rlgames", "cleanrl"))

register(Experiment(
    "ppo_small_to_med", "E5 — PPO iteration time, small-to-medium sweeps (Fig 13)",
    "Tempo is 1.3–2.5x faster than CleanRL, more so with ep_len and num_envs, less with L=16 "
    "and P=256; CleanRL(C) is 1.2–2x slower than CleanRL. RLlib/rl_games at the base point.",
    RL_SYSTEMS, _e5_grid, aliases=("e5",), timeout_s=900,
    extra={"table": TableSpec(
        "iter_mean", "s/iteration", 1.0, _row_sweep, ratios=RL_RATIOS,
        checks=(_ratio_check("cleanrlcache", "cleanrl", 1.2, 2.0),
                _ratio_check("cleanrl", "tempo-torch", 1.3, 2.5)),
        extra_metrics=(("peak_device_bytes", "accountant peak (MiB)", 1 / MIB),
                       ("compile_cpu_s", "compile CPU s (Tempo)", 1.0),))}))


# ---- E6: large observations ---------------------------------------------------------------------
E6_SYSTEMS = [System("tempo-torch", "tempo.bench.systems.ppo_tempo_swap:train_tempo_torch_swap",
                     "rl"),
              *(s for s in RL_SYSTEMS if s.name in ("tempo-jax", "cleanrl"))]
E6_SIZES = [8, 16, 32, 64, 96, 128]
E6_QUICK_SIZES = [8, 128]  # the small-obs speed point, and one past CleanRL's cap


def _e6_grid(quick: bool) -> list[Point]:
    """§7.7: 16 envs x 128 steps under C_dev = 256 MiB. Quick: the smallest and the largest
    observation, 3 iterations (the first is dropped), without tempo-jax (its first run
    compiles for minutes at 3x128x128)."""
    sizes = E6_QUICK_SIZES if quick else E6_SIZES
    cfgs = [dict(num_layers=2, params_per_layer=64, ep_len=128, num_envs=16,
                 obs_shape=[3, s, s], iterations=3 if quick else 5, cap_bytes=256 * MIB)
            for s in sizes]
    systems = [s for s in E6_SYSTEMS if not (quick and s.name == "tempo-jax")]
    return points("ppo_large_obs", systems, cfgs,
                  lambda s, c: "rl_train/large_obs/" + rl_dir(s, c), base=cfgs[0])


register(Experiment(
    "ppo_large_obs", "E6 — large observations under a 256 MiB device cap (Fig 14)",
    "Only Tempo completes beyond the device cap (swap + incrementalisation) with device peak < "
    "cap; baselines storing all obs OOM at the largest sizes; Tempo ≥1.5x faster at small obs.",
    E6_SYSTEMS, _e6_grid, aliases=("e6",), timeout_s=1800,
    extra={"table": TableSpec(
        "iter_mean", "s/iteration", 1.0, lambda c: "obs " + "x".join(map(str, c["obs_shape"])),
        ratios=RL_RATIOS[:2],
        extra_metrics=(("peak_device_bytes", "accountant peak (MiB)", 1 / MIB),
                       ("swapped_bytes", "swapped to host per run (MiB)", 1 / MIB),
                       ("host_peak_bytes", "host pool peak (MiB)", 1 / MIB),
                       ("iter_nocap_mean", "Tempo without a cap, s/iteration (interleaved "
                                           "with the capped runs)", 1.0),
                       ("swap_time_ratio", "time cost of the cap: capped / uncapped s/iter",
                        1.0),
                       ("peak_rss_bytes", "peak RSS − RSS after imports (MiB)", 1 / MIB)),
        memory_note="OOM = accountant live bytes (params+Adam, rollout obs and scalars, "
                    "activations kept for backward) > C_dev = 256 MiB. Tempo runs with swap "
                    "on: swapped bytes and the host pool are per run of all iterations.")}))


# ---- E7: REINFORCE MC vs n-step TD (Tempo only) ------------------------------------------------
E7_SYSTEMS = [System("tempo-torch", "tempo.bench.systems.reinforce_tempo:train_tempo", "rl")]
E7_OBJECTIVES = ("monte_carlo", "1_temporal_difference", "8_temporal_difference",
                 "64_temporal_difference")


def _e7_grid(quick: bool) -> list[Point]:
    cfgs = [dict(objective=o, obs_shape=[3, 32, 32], num_envs=32, ep_len=64 if quick else 256,
                 num_layers=2, params_per_layer=64, iterations=3 if quick else 4,
                 cap_bytes=64 * MIB) for o in E7_OBJECTIVES]
    return points("reinforce_sched", E7_SYSTEMS, cfgs,
                  lambda s, c: f"algo_specific_sched/objective_{c['objective']}")


register(Experiment(
    "reinforce_sched", "E7 — REINFORCE Monte Carlo vs n-step TD (Fig 15)",
    "TD(n) needs O(n) device memory and no swap; MC needs O(T) and swaps; iteration time equal "
    "across n (Tempo only).",
    E7_SYSTEMS, _e7_grid, aliases=("e7",), timeout_s=900,
    extra={"table": TableSpec(
        "iter_mean", "s/iteration", 1.0, lambda c: c["objective"],
        extra_metrics=(("peak_device_bytes", "device peak (MiB)", 1 / MIB),
                       ("swapped_bytes", "swapped to host (MiB)", 1 / MIB),
                       ("host_peak_bytes", "host pool peak (MiB)", 1 / MIB),
                       ("compile_cpu_s", "compile CPU s", 1.0)),
        memory_note="Tempo's accountant under C_dev = 64 MiB with swap on; OOM = a store "
                    "would pass the cap even after swapping.")}))
