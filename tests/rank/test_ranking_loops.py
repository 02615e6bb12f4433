"""groupbias.rank.ranking_loops: the compiled loops give every ranking and metric the bits of
the numpy passes (``use_ranking_loops("never")``), on random lists with ties, near-ties,
signed zeros, empty and one-item queries, long and short lists; the pairwise sums equal
``np.add.reduceat`` and ``ndarray.sum(axis=1)`` bit for bit; and the loops are loaded only
where they pay."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import groupbias.evaluation.fairness as F
import groupbias.evaluation.metrics as M
import groupbias.rank.ranking as R
from groupbias.core.segments import segment_sum
from groupbias.rank.ranking import DeterministicRanking

numba = pytest.importorskip("numba")  # the loops are the `fast` extra
L = pytest.importorskip("groupbias.rank.ranking_loops")


@pytest.fixture
def loops_mode():
    previous = R.use_ranking_loops("auto")
    yield R.use_ranking_loops
    R.use_ranking_loops(previous)


def _segments(rng, sizes):
    q = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(q[-1])
    v = rng.random(n) * rng.choice([1e-3, 1.0, 1e6], n)
    v[rng.random(n) < 0.05] = -0.0
    g = rng.random(n)
    g[rng.random(n) < 0.3] = 1.0
    g[rng.random(n) < 0.3] = 0.0
    return v, g, q


def test_group_sums_have_the_bits_of_reduceat(rng):
    # segments below 8, up to 128 and halved above it (8192 and beyond included)
    sizes = np.concatenate(
        [rng.integers(0, 300, 2000), [0, 1, 2, 7, 8, 9, 127, 128, 129, 136, 257, 8193, 40000]]
    )
    v, g, q = _segments(rng, sizes)
    out = np.empty((sizes.size, 4))
    w = rng.random(v.size)
    L.group_sums2(v, w, g, q[:-1], np.diff(q), out)
    for j, want in enumerate((v * g, v * (1.0 - g), w * g, w * (1.0 - g))):
        np.testing.assert_array_equal(out[:, j], segment_sum(want, q))


@pytest.mark.parametrize("width", [1, 5, 8, 10, 17, 120, 129, 300])
def test_pairwise_sum_has_the_bits_of_a_row_sum(rng, width):
    rows = rng.random((300, width)) * rng.choice([1e-3, 1.0, 1e6], (300, width))
    flat = rows.ravel()
    frames, left = np.empty((64, 3), dtype=np.int64), np.empty(64)
    got = [L.pairwise_sum(flat, r * width, width, frames, left) for r in range(300)]
    np.testing.assert_array_equal(got, rows.sum(axis=1))


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


@pytest.mark.parametrize("seed", range(3))
def test_the_loops_give_the_numpy_paths_bits(seed, loops_mode):
    rng = np.random.default_rng(seed)
    for trial in range(15):
        inputs = _lists(rng, trial)
        loops_mode("always")
        fast = _everything(*inputs)
        loops_mode("never")
        numpy_only = _everything(*inputs)
        for a, b in zip(fast, numpy_only, strict=True):
            np.testing.assert_array_equal(a, b)


def test_grade_tops_count_rows_and_refuse_other_values():
    starts, sizes = np.array([0, 3, 3]), np.array([3, 0, 300])
    values = np.concatenate([[2.0, 0.0, 2.0], np.full(300, 1.0)])  # a row over 255 items
    out = np.empty((3, 4))
    assert L.grade_tops(values, starts, sizes, 63, out)
    np.testing.assert_array_equal(out[0], [2, 2, 0, -np.inf])
    np.testing.assert_array_equal(out[1], [-np.inf] * 4)
    np.testing.assert_array_equal(out[2], [1, 1, 1, 1])
    for bad in (0.5, -1.0, 64.0, np.nan):
        values[1] = bad
        assert not L.grade_tops(values, starts, sizes, 63, out)


def test_the_loops_load_only_where_they_pay():
    code = (
        "import sys, numpy as np\n"
        "from groupbias.evaluation.metrics import ndcg\n"
        "from groupbias.rank.ranking import LOOPS_MIN_ITEMS\n"
        "q = np.array([0, 1000]); ndcg(np.arange(1000.0), np.ones(1000), qptr=q, k=10)\n"
        "print('groupbias.rank.ranking_loops' in sys.modules)\n"
        "n = LOOPS_MIN_ITEMS; q = np.arange(0, n + 1, 128)\n"
        "ndcg(np.arange(n, dtype=float), np.ones(n), qptr=q, k=10)\n"
        "print('groupbias.rank.ranking_loops' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
