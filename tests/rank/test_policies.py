"""Plackett–Luce policies: sampling and expected exposure against exact enumeration written
here independently (product formula over all permutations), expected metrics against brute
force, and the fair-exposure learner on a toy case with a known optimum."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from groupbias import metrics as M
from groupbias._fast import use_backend
from groupbias._fast.plackett_luce import NUMPY_STEP
from groupbias.core.errors import ParameterError
from groupbias.evaluation import exposure as E
from groupbias.evaluation.catalog import EvalSpec, compute_metrics
from groupbias.evaluation.fair_exposure import FairExposureLearner
from groupbias.rank.plackett_luce import PlackettLuce

pytestmark = pytest.mark.reproducibility


def _brute(logits, offset=1, k=None):
    """{perm: probability} and the expected exposure of one list, by the product formula."""
    n = len(logits)
    w = [math.exp(x) for x in logits]
    probs, expo = {}, [0.0] * n
    for perm in itertools.permutations(range(n)):
        p = 1.0
        for r, i in enumerate(perm):
            p *= w[i] / sum(w[j] for j in perm[r:])
        probs[perm] = p
        for r, i in enumerate(perm, start=1):
            if k is None or r <= k:
                expo[i] += p / math.log2(offset + r)
    return probs, np.array(expo)


def _lists(seed, sizes):
    rng = np.random.default_rng(seed)
    q = np.concatenate([[0], np.cumsum(sizes)])
    return rng.normal(size=q[-1]) * 1.5, q


def test_exact_exposure_matches_product_formula_for_lists_up_to_six():
    logits, q = _lists(0, [1, 2, 3, 4, 5, 6, 6])
    for offset, k in ((1, None), (2, None), (1, 3)):
        got = PlackettLuce(logits, q).expected_exposure(k, offset=offset)
        assert got.exact.all() and np.all(got.stderr == 0)
        for a, b in zip(q[:-1], q[1:]):
            np.testing.assert_allclose(got.mean[a:b], _brute(logits[a:b], offset, k)[1], 1e-12)


def test_two_equal_logits_share_the_first_two_ranks():
    e = PlackettLuce([0.0, 0.0], [0, 2]).expected_exposure().mean
    np.testing.assert_allclose(e, [(1 + 1 / math.log2(3)) / 2] * 2)


def test_sampled_first_positions_and_monte_carlo_exposure_within_error():
    logits, q = _lists(1, [3, 5, 6, 4])
    rng = np.random.default_rng(7)
    n = 20_000
    ranks = PlackettLuce(logits, q).sample(n, rng=rng)
    for a, b in zip(q[:-1], q[1:]):
        probs, _ = _brute(logits[a:b])
        first = np.zeros(b - a)
        for perm, p in probs.items():
            first[perm[0]] += p
        observed = (ranks[:, a:b] == 1).mean(axis=0)
        se = np.sqrt(first * (1 - first) / n)
        assert np.all(np.abs(observed - first) <= 5 * se + 1e-9)
        assert sorted(ranks[0, a:b]) == list(range(1, b - a + 1))  # each sample a permutation
    mc = PlackettLuce(logits, q, samples=20_000, exact_max=0, seed=3).expected_exposure()
    assert not mc.exact.any() and np.all(mc.stderr > 0)
    for a, b in zip(q[:-1], q[1:]):
        exact = _brute(logits[a:b])[1]
        assert np.all(np.abs(mc.mean[a:b] - exact) <= 5 * mc.stderr[a:b] + 1e-6)


def test_expected_ndcg_and_fairness_metrics_of_a_policy_by_brute_force():
    logits, q = _lists(4, [4, 5])
    labels = np.array([1.0, 0, 2, 0, 0, 1, 1, 0, 2])
    groups = np.array([1.0, 0, 0, 1, 1, 0, 1, 0, 0])
    pol = PlackettLuce(logits, q)
    got = M.ndcg(pol, labels, qptr=q, k=3, reduce=None)
    want = []
    for a, b in zip(q[:-1], q[1:]):
        probs, _ = _brute(logits[a:b])
        lab = labels[a:b]
        ideal = sorted(2**lab - 1, reverse=True)
        idcg = sum(gv / math.log2(1 + r) for r, gv in enumerate(ideal[:3], 1))
        want.append(
            sum(
                p * sum((2 ** lab[i] - 1) / math.log2(1 + r) for r, i in enumerate(perm[:3], 1))
                for perm, p in probs.items()
            )
            / idcg
        )
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # ρ(DTR) and Δ(EEL) use the expected group exposure
    e = np.concatenate([_brute(logits[a:b])[1] for a, b in zip(q[:-1], q[1:])])
    ea = np.array([(e * groups)[a:b].sum() for a, b in zip(q[:-1], q[1:])])
    en = np.array([(e * (1 - groups))[a:b].sum() for a, b in zip(q[:-1], q[1:])])
    ua = np.array([(labels * groups)[a:b].sum() for a, b in zip(q[:-1], q[1:])])
    un = np.array([(labels * (1 - groups))[a:b].sum() for a, b in zip(q[:-1], q[1:])])
    r = (ea / ua) / (en / un)
    np.testing.assert_allclose(
        M.rho_dtr_ranking(pol, labels, qptr=q, groups=groups, reduce=None), np.minimum(r, 1 / r)
    )
    tgt = E.target_exposure(labels, qptr=q)
    ta = np.array([(tgt * groups)[a:b].sum() for a, b in zip(q[:-1], q[1:])])
    tn = np.array([(tgt * (1 - groups))[a:b].sum() for a, b in zip(q[:-1], q[1:])])
    np.testing.assert_allclose(
        M.delta_eel_ranking(
            pol, labels, qptr=q, groups=groups, discretize_true=False, distance="sq_l2", reduce=None
        ),
        (ea - ta) ** 2 + (en - tn) ** 2,
    )


def test_a_policy_is_refused_where_one_ranking_is_needed():
    pol = PlackettLuce([0.0, 1.0, 2.0], [0, 3])
    with pytest.raises(ParameterError, match="ties"):
        M.ndcg(pol, [1.0, 0, 1], qptr=[0, 3], ties="pessimistic", reduce=None)
    spec = EvalSpec(
        labels=np.array([1.0, 0, 1]),
        relevance=np.array([1.0, 0, 1]),
        groups=np.array([1.0, 0, 0]),
        qptr=np.array([0, 3]),
        thresholds=(0.5,),
        metrics=("ndcg@2", "rank_bias"),
    )
    with pytest.raises(ParameterError, match="deterministic ranking"):
        compute_metrics(pol, spec, regime="ltr")
    with pytest.raises(ParameterError, match="regime"):
        compute_metrics(pol, spec, regime="tabular")
    with pytest.raises(ParameterError, match="samples"):
        PlackettLuce([0.0], [0, 1], samples=0)


def test_learner_gives_equal_utility_items_equal_exposure():
    """Pure EEL (λ = 1): the optimum gives items of one grade equal expected exposure (the
    target); the start (logits from slightly different utilities) does not."""
    u = np.array([1.0, 0.9, 0.0, 0.8, 0.8, 0.8, 0.1])
    q = np.array([0, 3, 7])
    grades = (u >= 0.5).astype(float)
    target = E.target_exposure(grades, qptr=q)
    start = PlackettLuce(u / 0.1, q).expected_exposure().mean
    pol = FairExposureLearner(tradeoff=1.0, epochs=300, lr=0.1, samples=32, device="cpu").fit(
        u, grades, qptr=q
    )
    e = pol.expected_exposure().mean
    assert abs(start[0] - start[1]) > 0.1
    assert abs(e[0] - e[1]) < 0.03
    assert np.ptp(e[3:6]) < 0.04
    assert ((e - target) ** 2).sum() < ((start - target) ** 2).sum() / 10


def test_learner_policy_gradient_on_a_long_list():
    """Lists over six items are learned by REINFORCE: the same optimum within its noise."""
    u = np.array([1.0, 0.9, 0.8, 0.0, 0.1, 0.0, 0.2, 0.0])
    q = np.array([0, 8])
    grades = (u >= 0.5).astype(float)
    target = E.target_exposure(grades, qptr=q)
    start = PlackettLuce(u / 0.1, q, samples=20_000).expected_exposure().mean
    pol = FairExposureLearner(tradeoff=1.0, epochs=300, lr=0.1, samples=32, device="cpu").fit(
        u, grades, qptr=q, samples=20_000
    )
    e = pol.expected_exposure().mean
    assert np.ptp(start[:3]) > 0.2 and np.ptp(e[:3]) < 0.05
    assert ((e - target) ** 2).sum() < ((start - target) ** 2).sum() / 10


@pytest.mark.parametrize("extra", [0, 4])  # 4 items: exact gradient; 8: REINFORCE
def test_learner_dtr_objective_gives_exposure_proportional_to_utility(extra):
    """objective='dtr': the optimum has E_A / U_A = E_N / U_N (ρ(DTR) = 1 against the
    utilities it learned from); the start, sorted by utility, does not."""
    u = np.array([1.0, 0.9, 0.3, 0.0] + [0.0] * extra)
    g = np.array([1.0, 0.0, 1.0, 0.0] + [0.0, 1.0] * (extra // 2))
    q = np.array([0, u.size])
    start = PlackettLuce(u / 0.1, q, samples=20_000)
    pol = FairExposureLearner(
        tradeoff=1.0, epochs=300, lr=0.1, samples=32, objective="dtr", device="cpu"
    ).fit(u, u, qptr=q, groups=g, samples=20_000)
    rho0 = M.rho_dtr_ranking(start, u, qptr=q, groups=g, reduce=None)[0]
    rho = M.rho_dtr_ranking(pol, u, qptr=q, groups=g, reduce=None)[0]
    assert rho0 < 0.97 and rho > 0.99
    with pytest.raises(ParameterError, match="groups"):
        FairExposureLearner(objective="dtr").fit(u, u, qptr=q)


def test_learner_ndcg_only_keeps_the_utility_order():
    u = np.array([0.9, 0.1, 0.5])
    q = np.array([0, 3])
    pol = FairExposureLearner(tradeoff=0.0, epochs=100, lr=0.1, device="cpu").fit(
        u, u, qptr=q, samples=100
    )
    assert M.ndcg(pol, u, qptr=q, gain="linear", reduce=None)[0] > 0.99
    with pytest.raises(ParameterError, match="tradeoff"):
        FairExposureLearner(tradeoff=1.5)


# ---------------------------------------------------------------------- sampling paths


def _exact_of(logits, q):
    return np.concatenate([_brute(logits[a:b])[1] for a, b in zip(q[:-1], q[1:])])


def test_numpy_exposure_does_not_depend_on_the_workers():
    """Tasks draw from generators keyed by (seed, block, task): 1, 2 or 3 threads give the
    same bits; another seed gives other draws."""
    logits, q = _lists(5, np.random.default_rng(6).integers(7, 40, size=300))
    runs = [
        PlackettLuce(logits, q, samples=64, seed=9, workers=t, batch_items=2000).expected_exposure()
        for t in (1, 2, 3)
    ]
    for r in runs[1:]:
        assert np.array_equal(r.mean, runs[0].mean) and np.array_equal(r.stderr, runs[0].stderr)
    other = PlackettLuce(logits, q, samples=64, seed=10, batch_items=2000).expected_exposure()
    assert not np.array_equal(other.mean, runs[0].mean)


def test_compiled_and_numpy_paths_agree_within_the_contract(monkeypatch):
    """With backend numba the sums over the sorted race keys run in a compiled loop, on the
    same keys summed in another order: the exposures agree within 1e-12 relative, and the
    same path with the same seed gives the same bits."""
    import importlib

    loops = importlib.import_module("groupbias._fast.plackett_luce_loops")
    logits, q = _lists(8, np.random.default_rng(9).integers(7, 150, size=120))
    kwargs = {"samples": 300, "exact_max": 0, "seed": 4, "batch_items": 30_000}
    calls = []
    accumulate = loops.accumulate
    monkeypatch.setattr(loops, "accumulate", lambda *a: calls.append(1) or accumulate(*a))
    with use_backend("numba"):
        fast = PlackettLuce(logits, q, **kwargs).expected_exposure()
        again = PlackettLuce(logits, q, **kwargs).expected_exposure()
    assert calls  # the compiled loop ran
    with use_backend("numpy"):
        slow = PlackettLuce(logits, q, **kwargs).expected_exposure()
    np.testing.assert_allclose(fast.mean, slow.mean, rtol=1e-12, atol=0)
    np.testing.assert_allclose(fast.stderr, slow.stderr, rtol=1e-9, atol=0)
    assert np.array_equal(again.mean, fast.mean) and np.array_equal(again.stderr, fast.stderr)


@pytest.mark.parametrize("width", [3, 40, 130, 300, 1100])
def test_exposures_of_hard_lists_keep_their_bits_and_sums(width):
    """Lists with ties, empty and one-item lists, race and Gumbel keys, steps that split
    rows, a cutoff: 1 or 2 workers and any step give the same bits for the same
    batch_items, and every sample is a permutation (the means of a list add up to its
    rank weights)."""
    rng = np.random.default_rng(width)
    sizes = rng.integers(0, width + 1, size=25)
    sizes[:4] = [0, 1, width, 1]
    logits, q = _lists(width, sizes)
    logits[::3] = np.round(logits[::3])  # ties
    logits[1::2] = logits[0]
    far = logits.copy()
    far[q[1:-1][sizes[1:] > 1]] -= 80.0  # Gumbel keys
    for values in (logits, far):
        for batch in (777, NUMPY_STEP):
            pol = {"samples": 37, "exact_max": 0, "seed": 5, "batch_items": batch}
            one, two = (
                PlackettLuce(values, q, workers=w, **pol).expected_exposure(k=10) for w in (1, 2)
            )
            assert np.array_equal(one.mean, two.mean) and np.array_equal(one.stderr, two.stderr)
            for a, b in zip(q[:-1], q[1:]):
                if b > a:
                    weights = 1 / np.log2(1 + np.arange(1, min(b - a, 10) + 1))
                    assert one.mean[a:b].sum() == pytest.approx(weights.sum(), rel=1e-6)


@pytest.mark.parametrize(
    "far, device",
    [(0.0, "cpu"), (-70.0, "cpu"), (0.0, "torch"), (-70.0, "torch")],
    ids=["race", "gumbel", "torch-race", "torch-gumbel"],
)
def test_every_sampling_path_matches_exact_enumeration(far, device):
    """Race keys (logits within 60 of the row maximum) and Gumbel keys (one logit of every
    list moved 70 lower), numpy and torch: Monte Carlo within 5 standard errors of the exact
    exposure, and every sampled ranking a permutation (the exposures of a list add up to the
    sum of the rank weights in every sample, so their means do too)."""
    rng = np.random.default_rng(11)
    sizes = [3, 4, 5, 6, 6]
    q = np.concatenate([[0], np.cumsum(sizes)])
    logits = rng.normal(size=q[-1]) * 1.5
    logits[q[:-1]] += far
    mc = PlackettLuce(
        logits, q, samples=20_000, exact_max=0, seed=2, device=device
    ).expected_exposure()
    exact = _exact_of(logits, q)
    assert np.all(np.abs(mc.mean - exact) <= 5 * mc.stderr + 1e-6)
    for a, b in zip(q[:-1], q[1:]):
        weights = 1 / np.log2(1 + np.arange(1, b - a + 1))
        assert mc.mean[a:b].sum() == pytest.approx(weights.sum(), rel=1e-6)


@pytest.mark.parametrize("device", ["cpu", "torch"])
def test_monte_carlo_z_scores_over_many_lists(device):
    """Many lists and steps: the z-scores against exact values look standard."""
    logits, q = _lists(2, np.random.default_rng(3).integers(1, 8, size=200))
    exact = PlackettLuce(logits, q, exact_max=7).expected_exposure().mean
    mc = PlackettLuce(
        logits, q, samples=3000, exact_max=0, batch_items=5000, device=device
    ).expected_exposure()
    z = (mc.mean - exact)[mc.stderr > 0] / mc.stderr[mc.stderr > 0]
    assert abs(z.mean()) < 0.15 and 0.8 < z.std() < 1.2


def test_a_list_wider_than_the_packed_keys_is_sampled_by_argsort():
    """1100 items (over the 1024 of the packed keys): equal logits give every item the same
    expected exposure, the mean rank weight; each sample a permutation."""
    n = 1100
    pol = PlackettLuce(np.zeros(n), [0, n], samples=200, exact_max=0)
    e = pol.expected_exposure()
    weights = 1 / np.log2(1 + np.arange(1, n + 1))
    assert e.mean.sum() == pytest.approx(weights.sum(), rel=1e-7)  # float32 weights
    z = (e.mean - weights.mean()) / np.sqrt(np.mean(e.stderr**2))
    assert 0.8 < z.std() < 1.2 and np.abs(z).max() < 5
    ranks = pol.sample(3, rng=np.random.default_rng(0))
    assert all(sorted(r) == list(range(1, n + 1)) for r in ranks)


def test_bad_device_and_workers_are_refused_by_name():
    for kwargs, name in (
        ({"device": "gpu"}, "device"),
        ({"device": 0}, "device"),
        ({"workers": 0}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"workers": True}, "workers"),
    ):
        with pytest.raises(ParameterError) as info:
            PlackettLuce([0.0, 1.0], [0, 2], **kwargs)
        assert info.value.name == name


def test_auto_and_cuda_devices_follow_what_torch_sees():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        assert PlackettLuce([0.0, 1.0], [0, 2], device="auto").device == "cuda"
        return
    assert PlackettLuce([0.0, 1.0], [0, 2], device="auto").device == "cpu"
    with pytest.raises(ParameterError) as info:
        PlackettLuce([0.0, 1.0], [0, 2], device="cuda")
    assert info.value.name == "device"
