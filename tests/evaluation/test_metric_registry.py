"""One metric registry: every metric by name (``base[@k][:group]`` or a mapping), one call
shape, the tabular/LTR variants of ρ(DTR) and Δ(EEL), and identical numbers to direct calls."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import groupbias.evaluation.fairness as F
import groupbias.evaluation.metrics as M
from groupbias.core.errors import ParameterError
from groupbias.core.registry import METRICS
from groupbias.core.segments import query_blocks
from groupbias.data.membership import membership_from_groups
from groupbias.evaluation import exposure as E
from groupbias.evaluation.catalog import (
    DEFAULT_METRICS,
    RELATED_WORK,
    EvalSpec,
    MetricRequest,
    compute_metrics,
    eel_thresholds,
    metric_keys,
    parse_metric,
    validate_metrics,
)

CORE = ("ndcg", "rho_dtr", "delta_eel")


def equal(a, b):
    # by name, the metrics of one score vector share one Ranking (a top-k cut may then come
    # from the full sort instead of a partition): the same values up to rounding
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)


@pytest.fixture
def case(rng):
    sizes = rng.integers(0, 25, size=60)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    labels = rng.integers(0, 5, size=n).astype(np.float64)
    groups = (rng.random(n) < 0.4).astype(np.float64)
    scores = rng.random(n)
    scores[::5] = 0.5  # some ties
    spec = EvalSpec(
        labels=labels,
        relevance=labels / 4,
        groups=groups,
        qptr=qptr,
        thresholds=eel_thresholds(labels, 4),
    )
    return scores, spec


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made in a test are dropped after it."""
    monkeypatch.setattr(METRICS, "_items", dict(METRICS._items))


def with_metrics(spec, metrics):
    return EvalSpec(
        labels=spec.labels,
        relevance=spec.relevance,
        groups=spec.groups,
        qptr=spec.qptr,
        thresholds=spec.thresholds,
        metrics=tuple(metrics),
        membership=spec.membership,
    )


def test_every_metric_is_registered_and_resolves(case):
    scores, spec = case
    assert set(CORE + RELATED_WORK) <= set(METRICS.names())
    names = [*CORE, *RELATED_WORK]
    for regime in ("tabular", "ltr"):
        out = compute_metrics(scores, with_metrics(spec, names), regime=regime)
        assert list(out) == names, regime
        for v in out.values():
            assert v.dtype == np.float64 and v.shape == (len(spec.qptr) - 1,)


def test_default_set_equals_direct_calls(case):
    scores, spec = case
    assert (
        spec.metrics
        == DEFAULT_METRICS
        == ("ndcg@10", "ndcg@10:affected", "ndcg@10:non_affected", "rho_dtr", "delta_eel")
    )
    kw = dict(qptr=spec.qptr, groups=spec.groups)
    ndcg = {
        f"ndcg@10{s}": M.ndcg(scores, spec.labels, group=g, k=10, **kw, reduce=None)
        for g, s in (("all", ""), ("affected", ":affected"), ("non_affected", ":non_affected"))
    }
    tab = compute_metrics(scores, spec, regime="tabular")
    assert list(tab) == list(DEFAULT_METRICS)
    ltr = compute_metrics(scores, spec, regime="ltr")
    for key, ref in ndcg.items():
        equal(tab[key], ref)
        equal(ltr[key], ref)
    equal(tab["rho_dtr"], M.rho_dtr_tabular(scores, spec.relevance, **kw, reduce=None))
    equal(ltr["rho_dtr"], M.rho_dtr_ranking(scores, spec.relevance, **kw, reduce=None))
    equal(
        tab["delta_eel"],
        M.delta_eel_tabular(scores, spec.relevance, thresholds=spec.thresholds, **kw, reduce=None),
    )
    equal(
        ltr["delta_eel"],
        M.delta_eel_ranking(scores, spec.relevance, thresholds=spec.thresholds, **kw, reduce=None),
    )
    # the two regimes really differ for rho_dtr / delta_eel
    assert not np.array_equal(tab["rho_dtr"], ltr["rho_dtr"], equal_nan=True)
    assert not np.array_equal(tab["delta_eel"], ltr["delta_eel"], equal_nan=True)


def test_group_suffix_and_cutoff(case):
    scores, spec = case
    out = compute_metrics(
        scores, with_metrics(spec, ["ndcg@5:non_affected", "ndcg", "ndcg@10:all"]), regime="tabular"
    )
    kw = dict(qptr=spec.qptr, groups=spec.groups)
    equal(
        out["ndcg@5:non_affected"],
        M.ndcg(scores, spec.labels, group="non_affected", k=5, **kw, reduce=None),
    )
    equal(out["ndcg"], M.ndcg(scores, spec.labels, k=None, **kw, reduce=None))
    equal(out["ndcg@10:all"], M.ndcg(scores, spec.labels, k=10, **kw, reduce=None))
    assert parse_metric("ndcg@10:affected") == MetricRequest(
        "ndcg", 10, "affected", "ndcg@10:affected", {}
    )


def test_cutoff_on_rho_dtr_and_delta_eel(case):
    scores, spec = case
    kw = dict(qptr=spec.qptr, groups=spec.groups)
    ltr = compute_metrics(scores, with_metrics(spec, ["rho_dtr@5", "delta_eel@5"]), regime="ltr")
    equal(ltr["rho_dtr@5"], M.rho_dtr_ranking(scores, spec.relevance, k=5, **kw, reduce=None))
    equal(
        ltr["delta_eel@5"],
        M.delta_eel_ranking(
            scores, spec.relevance, thresholds=spec.thresholds, k=5, **kw, reduce=None
        ),
    )
    tab = compute_metrics(scores, with_metrics(spec, ["delta_eel@5"]), regime="tabular")
    equal(
        tab["delta_eel@5"],
        M.delta_eel_tabular(
            scores, spec.relevance, thresholds=spec.thresholds, k=5, **kw, reduce=None
        ),
    )
    with pytest.raises(ParameterError, match="tabular regime"):
        compute_metrics(scores, with_metrics(spec, ["rho_dtr@5"]), regime="tabular")


def test_related_work_default_cutoff_membership_and_options(case):
    scores, spec = case
    m = membership_from_groups(spec.groups)
    kw = dict(qptr=spec.qptr, membership=m)
    metrics = [
        "awrf",
        "awrf@5",
        {"name": "awrf", "key": "awrf_full", "k": None},
        {"name": "cwex", "key": "cwex@0.2", "alpha": 0.2},
        {"name": "arab@3", "magnitude": "bool"},
        "ndcg_awrf",
    ]
    assert metric_keys(metrics) == [
        "awrf",
        "awrf@5",
        "awrf_full",
        "cwex@0.2",
        "arab@3",
        "ndcg_awrf",
    ]
    out = compute_metrics(scores, with_metrics(spec, metrics), regime="ltr")
    assert list(out) == metric_keys(metrics)
    equal(out["awrf"], F.awrf(scores, k=10, **kw, reduce=None))  # no @k: k = 10
    equal(out["awrf@5"], F.awrf(scores, k=5, **kw, reduce=None))
    equal(out["awrf_full"], F.awrf(scores, k=None, **kw, reduce=None))
    equal(out["cwex@0.2"], F.cwex(scores, alpha=0.2, k=10, **kw, reduce=None))
    equal(out["arab@3"], F.arab(scores, magnitude="bool", k=3, **kw, reduce=None))
    equal(out["ndcg_awrf"], F.ndcg_awrf(scores, spec.labels, k=10, **kw, reduce=None))
    # an explicit membership replaces [groups, 1 - groups]; same numbers in both regimes
    m3 = np.stack([spec.groups, 1 - spec.groups, np.zeros_like(spec.groups)], axis=1)
    s3 = EvalSpec(
        spec.labels,
        spec.relevance,
        spec.groups,
        spec.qptr,
        spec.thresholds,
        metrics=("texfair",),
        membership=m3,
    )
    ref = F.texfair(scores, qptr=spec.qptr, membership=m3, k=10, reduce=None)
    equal(compute_metrics(scores, s3, regime="tabular")["texfair"], ref)
    equal(compute_metrics(scores, s3, regime="ltr")["texfair"], ref)


def test_related_work_metrics_by_name_equal_their_functions(case):
    scores, spec = case
    m = membership_from_groups(spec.groups)
    kw = {"qptr": spec.qptr, "membership": m, "k": 10, "reduce": None}
    direct = {
        "awrf": F.awrf(scores, labels=spec.labels, **kw),
        "texfair": F.texfair(scores, labels=spec.labels, **kw),
        "ndcg_awrf": F.ndcg_awrf(scores, spec.labels, **kw),
    }
    by_name = compute_metrics(
        scores, with_metrics(spec, ["awrf", "texfair", "ndcg_awrf"]), regime="ltr"
    )
    for key in direct:
        equal(direct[key], by_name[key])


@pytest.mark.parametrize(
    "name, problem",
    [
        ("nope", "registered metric name.*arab.*ndcg.*rho_dtr"),
        ("ndcg@ten", "rank cutoff"),
        ("ndcg@0", "rank cutoff"),
        ("ndcg@", "rank cutoff"),
        ("ndcg@10:men", "group suffix"),
        ("rho_dtr:affected", "group suffix"),
        ("awrf@10:affected", "group suffix"),
        ("@10", "metric name"),
        ({"name": "ndcg@5", "k": 3}, "not both"),
        ({"name": "ndcg:affected", "group": "all"}, "not both"),
        ({"key": "x"}, "mapping with a 'name'"),
        (3, "mapping with a 'name'"),
    ],
)
def test_bad_names_raise_naming_the_problem(name, problem):
    with pytest.raises(ParameterError, match=problem):
        validate_metrics([name])
    with pytest.raises(ParameterError, match=problem):
        metric_keys([name])


def test_validation_before_any_computation(case, scratch_registry):
    scores, spec = case
    with pytest.raises(ParameterError, match="distinct output keys"):
        metric_keys(["ndcg@10", "ndcg@10"])
    with pytest.raises(ParameterError, match="a list"):
        validate_metrics("ndcg@10")
    calls = []

    @METRICS.register("probe_calls")
    def probe(scores, spec, *, regime, k, group, **options):
        calls.append(regime)
        return np.zeros(len(spec.qptr) - 1)

    with pytest.raises(ParameterError, match="registered metric name"):
        compute_metrics(scores, with_metrics(spec, ["probe_calls", "nope"]), regime="tabular")
    assert calls == []
    with pytest.raises(ParameterError, match="options the metric accepts"):
        compute_metrics(
            scores, with_metrics(spec, [{"name": "awrf", "colour": 1}]), regime="tabular"
        )


def test_user_registered_metric_is_computed(case, scratch_registry):
    scores, spec = case
    seen = []

    @METRICS.register("top_affected_share")
    def top_affected_share(scores, spec, *, regime, k, group, scale=1.0):
        seen.append((regime, k, group))
        sizes = np.diff(spec.qptr)
        qidx = np.repeat(np.arange(sizes.size), sizes)
        top = E.expected_exposure(scores, qptr=spec.qptr, k=k or 10, ties="stable") > 0
        n = np.bincount(qidx, weights=top, minlength=sizes.size)
        a = np.bincount(qidx, weights=top * spec.groups, minlength=sizes.size)
        with np.errstate(invalid="ignore"):
            return scale * a / np.where(sizes > 0, n, np.nan)

    metrics = [
        "ndcg@10",
        "top_affected_share@3",
        {"name": "top_affected_share:affected", "key": "share", "scale": 2.0},
    ]
    assert metric_keys(metrics) == ["ndcg@10", "top_affected_share@3", "share"]
    out = compute_metrics(scores, with_metrics(spec, metrics), regime="tabular")
    assert seen == [("tabular", 3, "all"), ("tabular", None, "affected")]
    equal(
        out["share"],
        2 * top_affected_share(scores, spec, regime="tabular", k=None, group="affected"),
    )
    equal(
        out["top_affected_share@3"],
        top_affected_share(scores, spec, regime="tabular", k=3, group="all"),
    )
    assert np.nanmax(out["share"]) <= 2.0
    METRICS.register("bad_shape", lambda scores, spec, **kw: np.zeros(3))
    with pytest.raises(ParameterError, match="one value per query"):
        compute_metrics(scores, with_metrics(spec, ["bad_shape"]), regime="tabular")


def test_scratch_registrations_are_gone():
    assert "top_affected_share" not in METRICS and "probe_calls" not in METRICS


def test_query_blocks_cut_at_query_boundaries():
    qptr = np.array([0, 3, 3, 10, 12, 13, 20])  # sizes 3, 0, 7, 2, 1, 7
    from groupbias.core.segments import query_blocks

    # at most 5 items per block; the 7-item queries stand alone
    assert query_blocks(qptr, 5) == [0, 2, 3, 5, 6]
    assert query_blocks(qptr, 100) == [0, 6]
    assert query_blocks(np.array([0]), 5) == [0]


@pytest.mark.parametrize("block", [1, 7, 40])
def test_blockwise_evaluation_equals_one_pass(case, monkeypatch, block):
    """Evaluating blocks of whole queries gives the one-pass per-query values (to rounding:
    sums over a different flat layout may differ in the last bit), for
    every registered metric, both regimes, with and without an explicit membership."""
    import groupbias.evaluation.catalog as MN

    scores, spec = case
    names = [*CORE, "ndcg@5:affected", *RELATED_WORK]
    full = with_metrics(spec, names)
    member = dataclasses.replace(full, membership=membership_from_groups(spec.groups))
    want = {
        (regime, i): compute_metrics(scores, s, regime=regime)
        for regime in ("tabular", "ltr")
        for i, s in enumerate((full, member))
    }
    monkeypatch.setattr(MN, "BLOCK_ITEMS", block)
    assert len(query_blocks(np.asarray(spec.qptr), block)) > 3
    for (regime, i), ref in want.items():
        got = compute_metrics(scores, (full, member)[i], regime=regime)
        assert list(got) == list(ref)
        for key in ref:
            np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12, err_msg=key)


def test_gb_evaluate_makes_the_regime_explicit(rng):
    """The same scores mean different things in the two regimes (utility estimates or the
    ranking they induce): gb.evaluate refuses to guess."""
    import groupbias as gb
    from groupbias.data.ranking_data import RankingData

    sizes = rng.integers(2, 12, size=30)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    labels = rng.integers(0, 2, size=n).astype(np.float64)
    data = RankingData(
        np.zeros((n, 1)), labels, qptr, np.arange(30), groups=(rng.random(n) < 0.4) * 1.0
    )
    biased = labels * np.where(data.groups == 1, 0.6, 1.0)
    with pytest.raises(ParameterError, match="regime"):
        gb.evaluate(biased, data, metrics=["rho_dtr"])
    tab = gb.evaluate(biased, data, regime="tabular", metrics=["rho_dtr"])["rho_dtr"]
    ltr = gb.evaluate(biased, data, regime="ltr", metrics=["rho_dtr"])["rho_dtr"]
    assert tab != ltr
