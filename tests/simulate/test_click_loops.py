"""The click log keeps its rows: digests of the portable columns of simulated logs (the
integer columns and the session times, whole numbers) pinned from the implementation before
the fast paths moved behind ``groupbias._fast`` (the same on CPUs with and without AVX-512),
over deterministic and Plackett–Luce logging, swap / shuffle / no interventions, PBM and
cascade users, noise clicks, drifts, lists shorter than the positions (empty and one-item
queries among them) and more sessions than one chunk. The compiled loop and the numpy passes
(backend numba / numpy) give the same rows, pinned cases and random ones alike; the float
outputs (examination, propensities) are compared with hand values and across the paths
within the equality contract, never pinned."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from groupbias._fast import use_backend
from groupbias.simulate.clicks import Drift, UserModel, simulate_click_log

pytestmark = pytest.mark.reproducibility

# sizes of the queries' lists, positions, temperature, intervention and its rate, user
# model (kind, eta, noise, continuation), sessions, per-query propensities or not, drift
CASES = {
    "full_det_shuffle_pbm": (
        [12, 10, 30, 15],
        10,
        0.0,
        "shuffle",
        0.3,
        ("pbm", 1.0, 0.02, 0.5),
        140_000,
        True,
        None,
    ),
    "full_det_swap_cascade": (
        [5, 7, 9],
        5,
        0.0,
        "swap",
        0.5,
        ("cascade", 1.0, 0.05, 0.3),
        3000,
        True,
        None,
    ),
    "full_pl_none_pbm": (
        [8, 6, 11],
        6,
        0.5,
        "none",
        0.1,
        ("pbm", 0.7, 0.0, 0.5),
        2000,
        False,
        None,
    ),
    "short_det_shuffle_pbm": (
        [0, 1, 3, 12, 2, 0],
        10,
        0.0,
        "shuffle",
        0.4,
        ("pbm", 1.0, 0.1, 0.5),
        140_000,
        True,
        None,
    ),
    "short_det_swap_drift": (
        [1, 4, 20, 0, 2],
        5,
        0.0,
        "swap",
        0.6,
        ("pbm", 1.5, 0.0, 0.5),
        5000,
        True,
        ("linear", 0.9, 0.5, 0.5),
    ),
    "short_pl_shuffle_cascade": (
        [1, 3, 7, 2],
        4,
        0.3,
        "shuffle",
        0.5,
        ("cascade", 1.0, 0.02, 0.0),
        4000,
        True,
        ("step", 0.8, 0.6, 0.4),
    ),
    "short_det_none_nobeta": (
        [1, 1, 2],
        3,
        0.0,
        "none",
        0.0,
        ("pbm", 1.0, 0.0, 0.5),
        1000,
        False,
        ("step", 0.8, 0.6, 0.4),
    ),
}

# sha256 (first 16 hex digits) of the integer columns and the times of every case at seeds 0
# and 1, from the numpy implementation before the fast paths moved to groupbias._fast
PINNED = {
    "full_det_shuffle_pbm": ("3a3bdde1349a3281", "f8550f44296b4333"),
    "full_det_swap_cascade": ("501a7dd5d9cf6374", "78864039a68f2ceb"),
    "full_pl_none_pbm": ("8ebeec33f4c8e850", "49bc047d0d01d256"),
    "short_det_none_nobeta": ("a6e794d29894c1ba", "c5506bcf628f60fc"),
    "short_det_shuffle_pbm": ("1f34288f46656356", "8de772b9f7df4f2f"),
    "short_det_swap_drift": ("9e7c941b88ebdd12", "cbcd11443cc5e9a9"),
    "short_pl_shuffle_cascade": ("4100294e9a7a8f9d", "c18909eb55f717e9"),
}


def _dataset(seed: int, sizes):
    """Relevance on a 5-point grade scale, 40 % affected items, scores rounded to one
    decimal (ties within lists)."""
    r = np.random.default_rng(seed)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    rel = r.integers(0, 5, n) / 4.0
    groups = (r.random(n) < 0.4).astype(np.float64)
    scores = np.round(r.normal(size=n), 1)
    return rel, groups, qptr, scores


def simulate_case(name: str, seed: int):
    sizes, k, tau, intervention, rate, user, n, with_beta, drift = CASES[name]
    rel, groups, qptr, scores = _dataset(seed, sizes)
    n_q = qptr.size - 1
    beta_q = np.random.default_rng(seed + 100).uniform(0.5, 1.0, n_q) if with_beta else None
    return simulate_click_log(
        rel,
        groups,
        qptr=qptr,
        logging_scores=scores,
        n_sessions=n,
        rng=np.random.default_rng(seed),
        positions=k,
        user=UserModel(*user),
        beta_query=beta_q,
        beta_mean=0.75 if (with_beta and drift is not None) else None,
        drift=Drift(*drift) if drift else None,
        temperature=tau,
        intervention=intervention,
        intervention_rate=rate,
    )


def digest(sim) -> str:
    """The portable columns only: integers, and the times (whole numbers as floats)."""
    h = hashlib.sha256()
    log = sim.log
    for a in (log.session, log.query, log.item, log.position, log.click, log.time):
        h.update(str(a.dtype).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _floats_agree(a, b) -> None:
    """Propensities and examination within the contract (1e-15 relative)."""
    for x, y in ((a.beta_session, b.beta_session), (a.beta_schedule, b.beta_schedule)):
        np.testing.assert_allclose(x, y, rtol=1e-15, atol=0)
    np.testing.assert_allclose(a.examination, b.examination, rtol=1e-15, atol=0)


@pytest.fixture(params=["numpy", "numba"])
def path(request):
    with use_backend(request.param):
        yield request.param


@pytest.mark.parametrize("name", sorted(CASES))
def test_simulated_logs_keep_their_rows(name, path):
    sims = [simulate_case(name, seed) for seed in (0, 1)]
    assert tuple(digest(sim) for sim in sims) == PINNED[name]
    eta = CASES[name][5][1]
    k = CASES[name][1]
    hand = [1.0 / (j**eta) for j in range(1, k + 1)]  # θ_j = j^-η, by Python's float power
    np.testing.assert_allclose(sims[0].examination, hand, rtol=1e-15, atol=0)


def _random_case(seed: int):
    """Settings drawn at random: 1..8 queries of 0..14 items (at least one non-empty),
    1..9 positions, any logging, intervention, user model and drift."""
    r = np.random.default_rng(1000 + seed)
    sizes = r.integers(0, 15, size=int(r.integers(1, 9)))
    sizes[r.integers(sizes.size)] = max(1, sizes.max())
    drift = [None, ("linear", 0.9, 0.5, 0.5), ("step", 0.8, 0.6, 0.3)][r.integers(3)]
    user = ("pbm", "cascade")[r.integers(2)], float(r.uniform(0, 2)), float(r.uniform(0, 0.3))
    return (
        [int(x) for x in sizes],
        int(r.integers(1, 10)),
        float(r.choice([0.0, 0.0, 0.2, 2.0])),
        ("none", "swap", "shuffle")[r.integers(3)],
        float(r.choice([0.0, 0.5, 1.0])),
        (*user, float(r.choice([0.0, 0.5, 1.0]))),
        int(r.integers(1, 300)),
        bool(r.integers(2)),
        drift,
    )


def test_the_compiled_loop_gives_the_numpy_rows_on_random_settings(monkeypatch):
    for seed in range(60):
        monkeypatch.setitem(CASES, "random", _random_case(seed))
        logs = {}
        for mode in ("numpy", "numba"):
            with use_backend(mode):
                logs[mode] = simulate_case("random", seed)
        assert digest(logs["numpy"]) == digest(logs["numba"]), CASES["random"]
        _floats_agree(logs["numpy"], logs["numba"])
        assert logs["numba"].log.n_rows == logs["numpy"].log.n_rows > 0
