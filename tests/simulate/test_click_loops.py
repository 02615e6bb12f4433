"""The click log keeps its bits: digests of simulated logs pinned from the numpy
implementation (every column, the session propensities and the examination), over
deterministic and Plackett–Luce logging, swap / shuffle / no interventions, PBM and cascade
users, noise clicks, drifts, lists shorter than the positions (empty and one-item queries
among them) and more sessions than one chunk; the compiled loop (numba, the ``fast`` extra)
and the numpy passes give the same bits, pinned cases and random ones alike."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from groupbias.simulate.clicks import (
    Drift,
    UserModel,
    click_loops,
    simulate_click_log,
    use_click_loops,
)

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

# sha256 (first 16 hex digits) of every case at seeds 0 and 1, from the numpy implementation
PINNED = {
    "full_det_shuffle_pbm": ("3f539c9738713bb8", "8d324cf9feb31d61"),
    "full_det_swap_cascade": ("f4b9b5f6b4db8c42", "f4d7af6033fc20d7"),
    "full_pl_none_pbm": ("28d54a079d276923", "e4484c661e056cd4"),
    "short_det_shuffle_pbm": ("514a216467c8ab0a", "f2a8a2fe6eda28d7"),
    "short_det_swap_drift": ("95f7843e4df4314e", "85dd9bf3d0462ce8"),
    "short_pl_shuffle_cascade": ("8748ab0f5c960b7d", "19753aa5710072d9"),
    "short_det_none_nobeta": ("50bb514f0c561b14", "5b40594c2615c3a3"),
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
    h = hashlib.sha256()
    log = sim.log
    columns = (log.session, log.query, log.item, log.position, log.click, log.time)
    for a in (*columns, sim.beta_session, sim.beta_schedule, sim.examination):
        h.update(str(a.dtype).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@pytest.fixture(params=["never", "always"])
def loops_mode(request):
    if request.param == "always":
        pytest.importorskip("numba")  # the fast extra
    previous = use_click_loops(request.param)
    assert (click_loops(1) is not None) == (request.param == "always")
    yield request.param
    use_click_loops(previous)


@pytest.mark.parametrize("name", sorted(CASES))
def test_simulated_logs_keep_their_bits(name, loops_mode):
    assert tuple(digest(simulate_case(name, seed)) for seed in (0, 1)) == PINNED[name]


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


def test_the_compiled_loop_gives_the_numpy_bits_on_random_settings(monkeypatch):
    pytest.importorskip("numba")
    for seed in range(60):
        monkeypatch.setitem(CASES, "random", _random_case(seed))
        logs = {}
        for mode in ("never", "always"):
            previous = use_click_loops(mode)
            try:
                logs[mode] = simulate_case("random", seed)
            finally:
                use_click_loops(previous)
        assert digest(logs["never"]) == digest(logs["always"]), CASES["random"]
        assert logs["always"].log.n_rows == logs["never"].log.n_rows > 0
