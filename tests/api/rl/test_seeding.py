"""The env runner's counter-based seeds and the trivial vector env's per-sub-env draws
(`tempo.api.rl.env.seeding`): a block hashes as its points do, sub-envs are independent
streams, and the draws are U(-1, 1)."""

from __future__ import annotations

import numpy as np

from tempo.api.rl.env.env_runner import point_seed
from tempo.api.rl.env.gym_adapter import TrivialVectorEnv
from tempo.api.rl.env.seeding import point_seeds, uniform


def test_point_seeds_of_a_block_equal_each_point_alone() -> None:
    keys = np.array([(b, i) for b in range(8) for i in range(5)])
    block = point_seeds(3, keys)
    assert [point_seed(3, tuple(k)) for k in keys] == block.tolist()
    assert len(set(block.tolist())) == len(keys)  # distinct per point
    assert not np.array_equal(point_seeds(4, keys), block)  # the program's seed matters
    assert point_seed(3, ()) != point_seed(3, (0,))


def test_sub_envs_are_independent_streams() -> None:
    seeds = [11, 12, 13]
    venv = TrivialVectorEnv(3, (2,), 4, autoreset=False)
    first = venv.reset(seed=seeds)[0][:, 0]
    second = venv.reset()[0][:, 0]  # unseeded: each stream continues
    assert not np.allclose(first, second)
    for j, s in enumerate(seeds):
        alone = TrivialVectorEnv(1, (2,), 4, autoreset=False)
        assert alone.reset(seed=[s])[0][0, 0] == first[j]
        assert alone.reset()[0][0, 0] == second[j]
    again = TrivialVectorEnv(3, (2,), 4, autoreset=False)
    np.testing.assert_array_equal(again.reset(seed=seeds)[0][:, 0], first)


def test_draws_are_uniform() -> None:
    n = 200_000
    u = uniform(np.arange(n, dtype=np.uint64) // 4, np.arange(n, dtype=np.uint64) % 4,
                -1.0, 1.0)
    assert u.min() >= -1.0 and u.max() < 1.0
    hist, _ = np.histogram(u, bins=20, range=(-1.0, 1.0))
    expected = n / 20
    chi2 = float(((hist - expected) ** 2 / expected).sum())
    assert chi2 < 45.0, chi2  # 19 degrees of freedom: p ~ 0.001
    assert abs(u.mean()) < 0.01 and abs(u.var() - 1 / 3) < 0.01
    # neighbouring streams and draws are uncorrelated
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01


def test_mix64_of_an_array_equals_the_scalar_finaliser() -> None:
    """The in-place array form gives SplitMix64's bits (checked against Python ints)."""
    from tempo.api.rl.env.seeding import mix64

    def ref(x: int) -> int:
        m = (1 << 64) - 1
        z = (x + 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    xs = [0, 1, 2**63 + 5, 2**64 - 1, 123456789]
    arr = np.array(xs, np.uint64)
    assert mix64(arr).tolist() == [ref(x) for x in xs]
    assert arr.tolist() == xs  # the input is left alone
    assert int(mix64(np.uint64(2**64 - 1))) == ref(2**64 - 1)


def test_block_seeds_equal_each_point_seed() -> None:
    """A vectorised reset's seeds (the hash of the block's own columns made once) are the
    points' own seeds, whichever of the reset's dims the block spans."""
    from tempo.api.rl.env.env_runner import Runner, _points
    from tempo.core.index_expr import Symbol

    b, i, e = Symbol("b"), Symbol("i"), Symbol("e")
    for dims, block in (((b, i), ((b, 4),)), ((i, b), ((b, 4),)), ((b, e, i), ((b, 2), (e, 3))),
                        ((b,), ((b, 5),))):
        r = Runner("t", lambda n: None, dims, 2, 7, 3, np.dtype(np.float32), (1,))
        seeds = r._block_seeds([s for s, _ in block], [n for _, n in block])
        ts = {b: 0, i: 3, e: 0}
        key, got = seeds(ts)
        pts = _points(ts, [s for s, _ in block], [n for _, n in block])
        want = [point_seed(7, tuple(int(p[v]) for v in dims)) for p in pts]
        assert got.tolist() == want
        assert key == tuple(int(ts[v]) for v in dims if v not in [s for s, _ in block])
