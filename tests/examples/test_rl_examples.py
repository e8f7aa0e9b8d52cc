"""The RL example programs (examples/rl) run end to end at small sizes (seconds), write
their CSV and PNG, and the slow tests show them learn on CartPole with fixed seeds:
PPO reaches a mean return >= 195 (three seeds); REINFORCE (MC and TD(n)) and DQN
clearly improve."""

from __future__ import annotations

import csv
import os
import time

import numpy as np
import pytest

from examples.rl import dqn, ppo, reinforce
from examples.rl.common import run


def _ok_log(log, iterations: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    assert [int(r["iteration"]) for r in log.rows] == list(range(iterations))
    ret = log.column("mean_return")
    assert np.isfinite(ret).all() and np.isfinite(log.column("loss")).all()
    return ret


def test_ppo_cartpole_small_writes_csv_and_png(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = ppo.parser().parse_args(["--iterations", "3", "--ep-len", "20", "--num-envs", "4",
                                 "--quiet", "--out", str(tmp_path)])
    log = run(ppo.build(a))
    ret = _ok_log(log, 3)
    assert ((ret >= 8) & (ret <= 20)).all()  # CartPole: 1 per step alive, episodes >= 8 steps
    np.testing.assert_array_equal(ret, log.column("mean_ep_len"))
    csv_path, png_path = log.write(str(tmp_path), "ppo")
    with open(csv_path) as f:
        assert len(list(csv.DictReader(f))) == 3
    assert os.path.getsize(png_path) > 1000


@pytest.mark.parametrize("shared", [False, True])
def test_ppo_symbolic_batch_on_the_trivial_env(shared: bool) -> None:
    args = ["--env", "trivial.trivial", "--symbolic-batch", "--iterations", "2", "--ep-len",
            "6", "--num-envs", "2", "--hidden", "8", "8", "--quiet"]
    log = run(ppo.build(ppo.parser().parse_args(args + (["--shared"] if shared else []))))
    ret = _ok_log(log, 2)
    assert ((ret <= 0) & (ret >= -6)).all()  # reward -|s| per step


def test_ppo_continuous_pendulum() -> None:
    a = ppo.parser().parse_args(["--env", "gym.Pendulum-v1", "--iterations", "2", "--ep-len",
                                 "8", "--num-envs", "2", "--hidden", "16", "--quiet"])
    ret = _ok_log(run(ppo.build(a)), 2)
    assert (ret < 0).all() and (ret > -8 * 16.3).all()  # Pendulum's reward is in [-16.3, 0]


@pytest.mark.parametrize(("objective", "backend"), [("mc", "torch"), ("td", "torch"),
                                                   ("td", "jax")])
def test_reinforce_small(objective: str, backend: str) -> None:
    """On jax the TD(n) window near the episode end (`min(t+n, T) - t` rows) changes shape
    with t: the compiled-loops analysis must keep the loop reading it in Python."""
    a = reinforce.parser().parse_args(["--objective", objective, "--n", "3", "--iterations", "2",
                                       "--ep-len", "12", "--num-envs", "3", "--quiet",
                                       "--backend", backend])
    ret = _ok_log(run(reinforce.build(a)), 2)
    assert ((ret >= 8) & (ret <= 12)).all()


@pytest.mark.slow
def test_ppo_cartpole_reaches_195() -> None:
    """Over seeds 0-2: every run reaches a mean return >= 195 in some iteration and most
    runs end there (mean of the last 5 >= 195). One seed's last 5 is no criterion: with a
    constant lr of 5e-3 a run can reach 200 and drift back. Last-5 means of seeds 0/1/2:
    195+/199.3/192.7 before the env runner's counter-based seeds (15c96a3), 160.7/200.0/
    196.6 after (seed 0 peaks at 198.9); seeds 1-2 first reach 195 at iterations 18-26."""
    ends = []
    for seed in range(3):
        a = ppo.parser().parse_args(["--iterations", "35", "--ep-len", "200", "--num-envs",
                                     "16", "--lr", "5e-3", "--seed", str(seed), "--quiet"])
        ret = _ok_log(run(ppo.build(a)), 35)
        assert ret.max() >= 195, (seed, ret)
        ends.append(ret[-5:].mean())
    assert sum(e >= 195 for e in ends) >= 2, ends


@pytest.mark.slow
def test_ppo_continuous_improves_on_the_trivial_env() -> None:
    """A Gaussian policy learns to drive the state to 0 (reward -|s| per step): ~-21 over
    the first 5 iterations to ~-4.5 by iteration 15-19 with seed 0."""
    a = ppo.parser().parse_args(["--env", "trivial.trivial", "--env-kwargs", "continuous=True",
                                 "--iterations", "20", "--ep-len", "50", "--num-envs", "16",
                                 "--hidden", "32", "32", "--seed", "0", "--quiet"])
    ret = _ok_log(run(ppo.build(a)), 20)
    assert ret[-5:].mean() > 0.4 * ret[:5].mean(), ret  # returns are negative


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["mc", "td"])
def test_reinforce_cartpole_improves(objective: str) -> None:
    a = reinforce.parser().parse_args(["--objective", objective, "--iterations", "25",
                                       "--ep-len", "100", "--num-envs", "16", "--quiet"])
    ret = _ok_log(run(reinforce.build(a)), 25)
    assert ret[-5:].mean() > 1.8 * ret[:5].mean(), ret


def test_dqn_per_step_updates_compile_structurally_in_seconds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Parameters over (i, t), one Adam step per env step: the loop-tree scheduler orders
    it (isl's own search, the fallback, ran for over 10 minutes on this program)."""
    from tempo.schedule import isl_worker

    def no_isl_search(sc: object, *_: object) -> None:
        raise AssertionError("the DQN schedule fell back to isl's search")

    monkeypatch.setattr(isl_worker, "compute_schedule", no_isl_search)
    a = dqn.parser().parse_args(["--iterations", "3", "--ep-len", "10", "--num-envs", "2",
                                 "--batch-size", "8", "--quiet"])
    prog = dqn.build(a)
    c0 = time.process_time()
    exe = prog.ctx.compile(prog.bounds)
    compile_cpu_s = time.process_time() - c0
    assert compile_cpu_s < 20, compile_cpu_s  # ~1.3 CPU-s unloaded
    prog.log.start()
    exe.execute()
    ret = _ok_log(prog.log, 3)
    assert ((ret >= 8) & (ret <= 10)).all()


@pytest.mark.slow
def test_dqn_cartpole_improves() -> None:
    """Eager torch with these hyper-parameters (scratch reference) goes ~22 -> 50 on seeds
    0 and 1; with one update per iteration instead it collapsed to ~9.6, as ours did."""
    a = dqn.parser().parse_args(["--iterations", "30", "--ep-len", "50", "--num-envs", "4",
                                 "--seed", "0", "--quiet"])
    ret = _ok_log(run(dqn.build(a)), 30)
    assert ret[-5:].mean() >= 45 and ret[-5:].mean() > 1.5 * ret[:5].mean(), ret
