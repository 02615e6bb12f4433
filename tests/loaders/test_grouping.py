import math

import numpy as np
import pandas as pd
import pytest

from data_loaders import grouping
from data_loaders.grouping import (
    PAPER_SENSITIVE_FEATURES,
    candidate_report,
    feature_threshold,
    group_by_attribute,
    group_by_feature,
    paper_setups,
    plot_candidates,
)
from data_loaders.synthetic import make_synthetic
from groupbias.core.errors import GroupingError, ParameterError
from groupbias.data.ranking_data import RankingData

# Three queries (sizes 4, 2, 2). Feature ids are the dataset's own numbers (10, 20, 30).
#   feature 10: [0, 0, 4, 4 | 0, 4 | 0, 4]      mean 2, std 2
#   feature 20: [0, 10, 10, 10 | 0, 10 | 0, 10] mean 50/8, one zero per query
#   feature 30: [0, 10, 10, 10 | 10, 10 | 0, 10] query 2 has no zero
LABELS = [1, 0, 2, 1, 3, 0, 2, 2]
X = np.array(
    [
        [0, 0, 0],
        [0, 10, 10],
        [4, 10, 10],
        [4, 10, 10],
        [0, 0, 10],
        [4, 10, 10],
        [0, 0, 0],
        [4, 10, 10],
    ],
    dtype=np.float32,
)


@pytest.fixture
def tiny():
    return RankingData(
        features=X,
        labels=np.array(LABELS, dtype=float),
        qptr=np.array([0, 4, 6, 8]),
        query_ids=np.array([1, 2, 3]),
        feature_ids=np.array([10, 20, 30]),
        name="tiny",
    )


def test_report_hand_values(tiny):
    r = candidate_report(tiny).set_index("feature_id")
    # feature 10: mean 2, std 2 -> mean-std = 0: nothing is below 0
    assert r.loc[10, "mean"] == pytest.approx(2.0)
    assert r.loc[10, "std"] == pytest.approx(2.0)
    assert r.loc[10, "coverage_mean_std"] == 0.0
    assert r.loc[10, "population_ratio_mean_std"] == 0.0
    assert math.isnan(r.loc[10, "utility_ratio_mean_std"])
    # at the mean (2): affected = items 0,1,4,6 (labels 1,0,3,2), every query has both sides
    assert r.loc[10, "coverage_mean"] == 1.0
    assert r.loc[10, "population_ratio_mean"] == pytest.approx(4 / 4)
    assert r.loc[10, "utility_ratio_mean"] == pytest.approx(
        ((1 + 0 + 3 + 2) / 4) / ((2 + 1 + 0 + 2) / 4)
    )
    # feature 20: mean 6.25, var = (3 * 6.25**2 + 5 * 3.75**2) / 8, threshold 6.25 - std
    std20 = math.sqrt((3 * 6.25**2 + 5 * 3.75**2) / 8)
    assert r.loc[20, "std"] == pytest.approx(std20)
    assert r.loc[20, "threshold_mean_std"] == pytest.approx(6.25 - std20)
    assert r.loc[20, "coverage_mean_std"] == 1.0 and r.loc[20, "is_candidate"]
    # affected = items 0,4,6 (labels 1,3,2 -> mean 2); others labels 0,2,1,0,2 -> mean 1
    assert r.loc[20, "population_ratio_mean_std"] == pytest.approx(3 / 5)
    assert r.loc[20, "utility_ratio_mean_std"] == pytest.approx(2 / 1)
    # feature 30: zeros only in queries 1 and 3 -> coverage 2/3, not a candidate
    assert r.loc[30, "coverage_mean_std"] == pytest.approx(2 / 3)
    assert not r.loc[30, "is_candidate"]
    assert r.loc[30, "population_ratio_mean_std"] == pytest.approx(2 / 6)
    assert r.loc[30, "utility_ratio_mean_std"] == pytest.approx(((1 + 2) / 2) / (8 / 6))
    assert not r.loc[10, "is_candidate"]


def test_report_coverage_parameter_and_subset(tiny):
    r = candidate_report(tiny, coverage=0.5, features=[30, 10])
    assert list(r["feature_id"]) == [30, 10]
    assert list(r["is_candidate"]) == [True, False]  # 2/3 > 0.5, 0 < 0.5
    with pytest.raises(GroupingError, match="unknown feature id 7"):
        candidate_report(tiny, features=[7])
    with pytest.raises(ParameterError, match="coverage"):
        candidate_report(tiny, coverage=1.5)


def _brute_report(data, side="below"):
    """Per-feature, per-query loop: an independent implementation of the criterion."""
    rows = []
    for j, fid in enumerate(data.feature_ids):
        x = data.features[:, j].astype(np.float64)
        m, s = x.mean(), x.std()
        row = {"feature_id": fid}
        for key, t in (("mean", m), ("mean_std", m - s)):
            aff = x < t if side == "below" else x > t
            both = 0
            for q in range(data.n_queries):
                a = aff[data.qptr[q] : data.qptr[q + 1]]
                both += bool(a.any() and (~a).any())
            row[f"coverage_{key}"] = both / data.n_queries
            row[f"population_ratio_{key}"] = aff.sum() / (~aff).sum()
            with np.errstate(divide="ignore"):
                row[f"utility_ratio_{key}"] = data.labels[aff].mean() / data.labels[~aff].mean()
        rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("side", ["below", "above"])
def test_report_matches_brute_force(side, monkeypatch):
    data = make_synthetic(n_queries=60, list_size=(3, 12), n_features=7, seed=3)
    monkeypatch.setattr(grouping, "BLOCK_ELEMENTS", 2 * data.n_items)  # 2 features a block
    got = candidate_report(data, affected=side)
    exp = _brute_report(data, side)
    for col in exp.columns:
        np.testing.assert_allclose(
            got[col].to_numpy(dtype=float), exp[col].to_numpy(dtype=float), rtol=1e-9
        )


def test_group_by_feature(tiny):
    before = tiny.features.copy()
    g = group_by_feature(tiny, 20, threshold="mean-std")
    np.testing.assert_array_equal(g.groups, [1, 0, 0, 0, 1, 0, 1, 0])
    assert g.meta["grouping"]["threshold_value"] == pytest.approx(
        6.25 - math.sqrt((3 * 6.25**2 + 5 * 3.75**2) / 8)
    )
    assert tiny.groups is None and np.array_equal(tiny.features, before)
    up = group_by_feature(tiny, 10, threshold=3.0, affected="above")
    np.testing.assert_array_equal(up.groups, [0, 0, 1, 1, 0, 1, 0, 1])
    # items exactly at the threshold are non-affected on either side
    at = group_by_feature(tiny, 10, threshold=2.0)
    np.testing.assert_array_equal(at.groups, [1, 1, 0, 0, 1, 0, 1, 0])
    assert feature_threshold(tiny, 10, threshold="mean-std") == pytest.approx(0.0)


def test_group_by_feature_errors(tiny):
    with pytest.raises(GroupingError, match="unknown feature id 11.*ids 10..30"):
        group_by_feature(tiny, 11)
    with pytest.raises(GroupingError, match="puts no items below"):
        group_by_feature(tiny, 10, threshold="mean-std")  # threshold 0, min is 0
    with pytest.raises(GroupingError, match="puts all items"):
        group_by_feature(tiny, 10, threshold=100.0)
    with pytest.raises(ParameterError, match="threshold"):
        group_by_feature(tiny, 10, threshold="median")
    with pytest.raises(ParameterError, match="affected"):
        group_by_feature(tiny, 10, affected="left")


def test_group_by_attribute(tiny):
    vals = np.array(["a", "b", "a", "c", "b", "b", "c", "a"])
    g = group_by_attribute(tiny, vals, affected=["a", "c"])
    np.testing.assert_array_equal(g.groups, [1, 0, 1, 1, 0, 0, 1, 1])
    assert group_by_attribute(tiny, vals, affected="b").groups.sum() == 3
    with pytest.raises(GroupingError, match="match no item"):
        group_by_attribute(tiny, vals, affected="z")
    with pytest.raises(GroupingError, match="one value per item"):
        group_by_attribute(tiny, vals[:3], affected="a")


def test_paper_presets():
    assert PAPER_SENSITIVE_FEATURES["yahoo"] == (5, 88, 100, 141, 155, 264, 393, 426)
    assert PAPER_SENSITIVE_FEATURES["mslr"] == (11, 14, 15, 126, 127, 130, 131, 132)
    setups = paper_setups("MSLR")
    assert len(setups) == 16
    assert {s["threshold"] for s in setups} == {"mean", "mean-std"}
    with pytest.raises(ParameterError):
        paper_setups("istella")


def test_synthetic_sensitive_feature_is_found(tmp_path):
    data = make_synthetic(n_queries=300, seed=0, affected_share=0.3, utility_ratio=0.6)
    r = candidate_report(data).set_index("feature_id")
    sid = data.meta["sensitive_feature_id"]
    # the sensitive feature separates the groups at its mean: population ratio = share/(1-share)
    share = data.groups.mean()
    assert r.loc[sid, "population_ratio_mean"] == pytest.approx(share / (1 - share))
    assert r.loc[sid, "utility_ratio_mean"] == pytest.approx(
        data.labels[data.groups == 1].mean() / data.labels[data.groups == 0].mean()
    )
    out = plot_candidates(r.reset_index(), tmp_path / "fig4")
    assert out.suffix == ".png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_candidates_errors(tiny, tmp_path):
    r = candidate_report(tiny, coverage=1.0)  # coverage must exceed 1: no candidate
    with pytest.raises(GroupingError, match="among the candidates"):
        plot_candidates(r, tmp_path / "x.png")
    with pytest.raises(ParameterError, match="report"):
        plot_candidates(pd.DataFrame({"a": [1]}), tmp_path / "x.png")
