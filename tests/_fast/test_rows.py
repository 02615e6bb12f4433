"""groupbias._fast: the compiled loops of rankings and per-query sums (backend numba) agree
with the numpy passes (backend numpy) within the equality contract (floats 1e-12 relative,
integers exactly) on random lists with ties, near-ties, signed zeros, empty and one-item
queries; the group sums equal a brute-force loop; the backend knob decides the path from
the call's size alone; threads live only inside a call."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import groupbias.evaluation.fairness as F
import groupbias.evaluation.metrics as M
from groupbias._fast import BACKENDS, backend, use_backend
from groupbias._fast.rows import LOOPS_MIN_ITEMS, ranking_loops
from groupbias._fast.sums import group_sums
from groupbias._fast.threads import in_parallel
from groupbias.core.errors import ParameterError
from groupbias.rank.ranking import DeterministicRanking

pytestmark = pytest.mark.reproducibility


def _segments(rng, sizes):
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(q[-1])
    v = rng.random(n) * rng.choice([1e-3, 1.0, 1e6], n)
    v[rng.random(n) < 0.05] = -0.0
    g = rng.random(n)
    g[rng.random(n) < 0.3] = 1.0
    g[rng.random(n) < 0.3] = 0.0
    return v, g, q


@pytest.mark.parametrize("name", ["numpy", "numba"])
def test_group_sums_equal_a_brute_force_loop(rng, name):
    sizes = np.concatenate([rng.integers(0, 300, 400), [0, 1, 2, 7, 8, 9, 128, 129, 40000]])
    v, g, q = _segments(rng, sizes)
    w = rng.random(v.size)
    with use_backend(name):
        got = group_sums(v, w, g, q)
    for j, (x, y) in enumerate(((v, g), (v, 1 - g), (w, g), (w, 1 - g))):
        want = [
            sum(float(a) * float(b) for a, b in zip(x[lo:hi], y[lo:hi]))
            for lo, hi in zip(q[:-1], q[1:])
        ]
        np.testing.assert_allclose(got[j], want, rtol=1e-12, atol=0)


def _lists(rng, trial):
    sizes = rng.integers(0, [2, 8, 40, 140, 300][trial % 5] + 1, size=int(rng.integers(1, 60)))
    sizes[rng.random(sizes.size) < 0.1] = 1
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(q[-1])
    s = [rng.random(n), rng.integers(0, 6, n) / 5.0, np.round(rng.normal(size=n), 1)][trial % 3]
    if trial % 2:  # a few ties, signed zeros and 1-ulp neighbours among distinct scores
        s = rng.normal(size=n)
        s[rng.random(n) < 0.05] = 0.25
        s[rng.random(n) < 0.05] = -0.0
        s[rng.random(n) < 0.05] = 0.0
        near = rng.random(n) < 0.05
        s[near] = np.nextafter(0.5, 1.0)
    top = [5, 5, 12][trial % 3]  # grades past 7 take the loops' per-grade count
    lab = rng.integers(0, top, n).astype(float)
    g = (rng.random(n) < 0.4).astype(float)
    g[rng.random(n) < 0.1] = 0.5
    return s, lab, lab / (top - 1), g, q


def _everything(s, lab, rel, g, q):
    r = DeterministicRanking(s, q)
    kw = {"qptr": q, "groups": g}
    out = [r.best(10, lambda x: np.exp2(x) - 1), r.best(None), r.best(3)]
    for k in (None, 1, 3, 10, 25):
        for ties in ("average", "stable"):
            e = DeterministicRanking(s, q).weights(k, ties)
            out += [e.dense(), e.sums(lab), e.sums(lab, g, combine=lambda a, b: a * b)]
    out.append(DeterministicRanking(s, q).weights(None, offset=2).dense())
    out.append(r.ranks().astype(float))
    for k in (1, 5, 10, None):
        for group in ("all", "affected", "non_affected"):
            for ties in ("average", "stable"):
                out.append(M.ndcg(s, lab, group=group, k=k, ties=ties, **kw, reduce=None))
    out.append(M.ndcg(s, rel, k=None, gain="linear", **kw, reduce=None))
    for k in (None, 5):
        out.append(M.rho_dtr_ranking(s, rel, k=k, **kw, reduce=None))
        out.append(M.rho_dtr_ranking(s, rel, k=k, offset=2, **kw, reduce=None))
        for single in ("count", "skip"):
            opts = {"k": k, "on_single_group": single, **kw}
            out.append(M.delta_eel_ranking(s, rel, thresholds=[0.3, 0.6], **opts, reduce=None))
            out.append(
                M.delta_eel_ranking(s, rel, levels=3, bins="query_minmax", **opts, reduce=None)
            )
            out.append(M.delta_eel_ranking(s, rel, discretize_true=False, **opts, reduce=None))
            out.append(
                M.delta_eel_tabular(rel, lab / 10, thresholds=[0.2, 0.5], **opts, reduce=None)
            )
    out.append(M.rho_dtr_tabular(rel, lab, **kw, reduce=None))
    m = np.stack([g, 1 - g], axis=1)
    for fn in (F.awrf, F.texfair, F.nfairr, F.arab):
        out.append(fn(s, qptr=q, membership=m, k=5, reduce=None))
    return out


@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (1, 2))]
)  # one seed in the fast suite, three in make test
def test_numba_and_numpy_paths_agree_within_the_contract(seed):
    rng = np.random.default_rng(seed)
    for trial in range(15):
        inputs = _lists(rng, trial)
        with use_backend("numba"):
            fast = _everything(*inputs)
        with use_backend("numpy"):
            numpy_only = _everything(*inputs)
        for a, b in zip(fast, numpy_only, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, equal_nan=True)


def test_the_backend_knob_decides_the_path_by_size_alone(monkeypatch):
    monkeypatch.delenv("GROUPBIAS_BACKEND", raising=False)
    assert backend() == "auto"
    assert ranking_loops(LOOPS_MIN_ITEMS) is not None  # loaded now
    assert ranking_loops(LOOPS_MIN_ITEMS - 1) is None  # and still not used below the size
    with use_backend("numpy"):
        assert backend() == "numpy" and ranking_loops(10**9) is None
        with use_backend("numba"):
            assert ranking_loops(1) is not None
        assert backend() == "numpy"  # the inner context is undone
    monkeypatch.setenv("GROUPBIAS_BACKEND", "numpy")
    assert ranking_loops(10**9) is None
    monkeypatch.setenv("GROUPBIAS_BACKEND", "fast")
    with pytest.raises(ParameterError, match="GROUPBIAS_BACKEND"):
        backend()
    with pytest.raises(ParameterError, match="backend"):
        with use_backend("gpu"):
            pass
    assert BACKENDS == ("auto", "numpy", "numba")


def test_a_small_call_takes_the_numpy_path_in_a_fresh_process():
    """Nothing a call leaves behind changes the path of the next: a large call imports the
    loops, and a small call after it still takes the numpy passes (in a fresh process, so
    that what this test session imported does not count)."""
    code = (
        "import sys, numpy as np\n"
        "import groupbias._fast.rows as R\n"
        "from groupbias.evaluation.metrics import ndcg\n"
        "used = []\n"
        "real = R.ranking_loops\n"
        "R.ranking_loops = lambda n: used.append(real(n) is not None) or real(n)\n"
        "import groupbias._fast.dcg as D; D.ranking_loops = R.ranking_loops\n"
        "q = np.array([0, 1000]); ndcg(np.arange(1000.0), np.ones(1000), qptr=q, k=10)\n"
        "print('groupbias._fast.ranking_loops' in sys.modules, used[-1])\n"
        "n = R.LOOPS_MIN_ITEMS; q = np.arange(0, n + 1, 128)\n"
        "ndcg(np.arange(n, dtype=float), np.ones(n), qptr=q, k=10)\n"
        "print('groupbias._fast.ranking_loops' in sys.modules, used[-1])\n"
        "q = np.array([0, 1000]); ndcg(np.arange(1000.0), np.ones(1000), qptr=q, k=10)\n"
        "print(used[-1])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GROUPBIAS_BACKEND"}  # auto
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["False", "False", "True", "True", "False"]


def test_in_parallel_keeps_no_thread_after_the_call():
    before = threading.active_count()
    barrier = threading.Barrier(2, timeout=10)  # the two calls run at the same time
    calls = [lambda: barrier.wait() * 0, lambda: 1, lambda: barrier.wait() * 0 + 2]
    assert in_parallel(calls) == [0, 1, 2]
    assert threading.active_count() == before

    def failing():
        raise ValueError("second")

    with pytest.raises(ValueError, match="second"):
        in_parallel([lambda: 0, failing])
    assert threading.active_count() == before
