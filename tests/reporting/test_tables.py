import pandas as pd
import pytest

from groupbias.core.errors import ParameterError
from groupbias.reporting import paper_table, save_table


def _records():
    r = []
    for beta, bh in [(0.8, 0.825), (0.6, 0.626)]:
        r.append(
            dict(dataset="Yahoo", beta=beta, metric="beta_hat", condition="estimate", value=bh)
        )
        r += [
            dict(dataset="Yahoo", beta=beta, metric="ndcg@10", condition="biased", value=0.9),
            dict(
                dataset="Yahoo",
                beta=beta,
                metric="ndcg@10",
                condition="corrected",
                value=0.99,
                p_value=1e-5,
            ),
            dict(dataset="Yahoo", beta=beta, metric="delta_eel", condition="biased", value=0.4),
            # significant but worse: no marker
            dict(
                dataset="Yahoo",
                beta=beta,
                metric="delta_eel",
                condition="corrected",
                value=0.5,
                p_value=1e-6,
            ),
        ]
    r.append(dict(dataset="Yahoo", beta=None, metric="ndcg@10", condition="full", value=0.6))
    return r


def test_layout_markers_and_order():
    t = paper_table(_records(), metrics=("ndcg@10", "delta_eel"), include_full=True)
    assert list(t.columns.get_level_values(0)).count("β = 0.8") == 5
    assert t.columns[0] == ("full information", "NDCG@10 ↑", "F")
    row = t.loc["Yahoo"]
    assert row[("β = 0.8", "β̂", "")] == "0.825"
    assert row[("β = 0.8", "NDCG@10 ↑", "C")] == "0.990*"
    assert row[("β = 0.6", "Δ(EEL) ↓", "C")] == "0.500"  # worse: no star
    assert row[("full information", "Δ(EEL) ↓", "F")] == "–"  # missing value
    # beta blocks in descending order, as in the paper
    blocks = list(dict.fromkeys(t.columns.get_level_values(0)))
    assert blocks == ["full information", "β = 0.8", "β = 0.6"]


def test_save_table_formats(tmp_path):
    t = paper_table(_records(), metrics=("ndcg@10",))
    paths = save_table(t, tmp_path / "table1", caption="Table 1")
    md = paths["md"].read_text()
    assert "| Yahoo | 0.825 | 0.900 | 0.990* |" in md
    tex = paths["tex"].read_text()
    assert r"\multicolumn{3}{c}{$\beta$ = 0.8}" in tex and r"0.990$^{*}$" in tex
    # the CSV holds the numbers behind the cells (a view's marker is not a number)
    csv = pd.read_csv(paths["csv"]).set_index(["beta", "metric", "condition"])
    assert csv.loc[(0.8, "beta_hat", "estimate"), "value"] == 0.825
    assert csv.loc[(0.8, "ndcg@10", "corrected"), "value"] == 0.99
    assert csv.loc[(0.8, "ndcg@10", "corrected"), "p"] == 1e-5
    assert csv.loc[(0.8, "ndcg@10", "corrected"), "n"] == 1
    assert csv["value"].dtype == float and "*" not in paths["csv"].read_text()


def test_repetitions_are_averaged_into_mean_and_sd():
    """Records of several repetitions: one cell shows their mean ± sample s.d.; the star
    needs every repetition's test below alpha; the CSV keeps mean, s.d. and n."""
    recs = []
    for rep, (b, c, p) in enumerate([(0.80, 0.90, 1e-5), (0.70, 0.96, 0.005), (0.75, 0.93, 1e-6)]):
        base = dict(dataset="D", beta=0.6, metric="ndcg@10", repetition=rep)
        recs += [
            dict(base, condition="biased", value=b),
            dict(base, condition="corrected", value=c, p_value=p),
        ]
    t = paper_table(recs, metrics=("ndcg@10",), alpha=0.001)
    assert t.loc["D", ("β = 0.6", "NDCG@10 ↑", "B")] == "0.750 ± 0.050"
    assert t.loc["D", ("β = 0.6", "NDCG@10 ↑", "C")] == "0.930 ± 0.030"  # 0.005 >= 0.001
    assert paper_table(recs, metrics=("ndcg@10",), alpha=0.01).loc["D"].iloc[1].endswith("*")
    num = t.attrs["numbers"].set_index("condition")
    assert num.loc["biased", "value"] == pytest.approx(0.75) and num.loc["biased", "n"] == 3
    assert num.loc["corrected", "sd"] == pytest.approx(0.03)
    with pytest.raises(ParameterError, match="repetition"):
        paper_table(recs + [recs[0]], metrics=("ndcg@10",))


def test_bad_records():
    with pytest.raises(ParameterError, match="records"):
        paper_table([{"dataset": "x"}])


def test_duplicate_records_are_an_error_not_a_silent_pick():
    recs = _records()
    recs.append(dict(dataset="Yahoo", beta=0.8, metric="ndcg@10", condition="biased", value=0.5))
    with pytest.raises(ParameterError, match="one record per dataset"):
        paper_table(recs, metrics=("ndcg@10",))


def test_latex_star_on_negative_values(tmp_path):
    recs = [
        dict(dataset="d", beta=0.8, metric="arab", condition="biased", value=-0.3),
        dict(dataset="d", beta=0.8, metric="arab", condition="corrected", value=-0.1, p_value=1e-6),
    ]
    t = paper_table(recs, metrics=("arab",))
    assert t.loc["d"].tolist() == ["-0.300", "-0.100*"]  # closer to 0 is better for ARaB
    tex = save_table(t, tmp_path / "t")["tex"].read_text()
    assert r"-0.100$^{*}$" in tex and "-0.100*" not in tex


def test_stars_follow_the_direction_a_metric_is_registered_with():
    """A user metric registered as lower-is-better gets its star when it decreases, not
    when it increases (the direction comes from the metric registry)."""
    from groupbias.core.registry import METRICS
    from groupbias.evaluation.catalog import direction_of, metric_info

    @metric_info(direction="lower")
    def misses(scores, spec, *, regime, k, group, **options):  # pragma: no cover - not run
        raise AssertionError

    METRICS.register("misses", misses, replace=True)
    assert direction_of("misses@5") == "lower" and direction_of("unregistered") == "higher"
    assert direction_of("delta_eel") == "lower" and direction_of("arab@10") == "zero"
    assert direction_of("ndcg@10:affected") == "higher"
    for worse, better in ((0.4, 0.2), (0.2, 0.4)):
        recs = [
            dict(dataset="d", beta=0.8, metric="misses@5", condition="biased", value=worse),
            dict(
                dataset="d",
                beta=0.8,
                metric="misses@5",
                condition="corrected",
                value=better,
                p_value=1e-6,
            ),
        ]
        cell = paper_table(recs, metrics=("misses@5",)).loc["d"].tolist()[1]
        assert cell.endswith("*") == (better < worse)
