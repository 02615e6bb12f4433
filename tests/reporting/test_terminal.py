"""Terminal tables: grouped headers, numbers aligned on their last digit with markers beside,
wrapped by β block to a width limit, generic over the columns a block holds."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from groupbias.core.errors import ParameterError
from groupbias.reporting.tables import paper_table
from groupbias.reporting.terminal import display_width, table_to_text

COLS = ["block", "metric", "cond"]


def _frame(columns, rows, index):
    return pd.DataFrame(
        rows,
        index=pd.Index(index, name="dataset"),
        columns=pd.MultiIndex.from_tuples(columns, names=COLS),
    )


def test_small_table_renders_exactly_as_drawn_by_hand():
    t = _frame(
        [("β = 0.8", "β̂", ""), ("β = 0.8", "NDCG@10 ↑", "B"), ("β = 0.8", "NDCG@10 ↑", "C")],
        [["0.790", "0.991", "0.999*"], ["0.5", "0.98", "–"]],
        ["a", "long name"],
    )
    assert table_to_text(t) == (
        "           ────── β = 0.8 ──────\n"
        "             β̂       NDCG@10 ↑\n"
        "dataset                B      C\n"
        "────────────────────────────────\n"
        "a          0.790   0.991  0.999*\n"
        "long name    0.5    0.98      –\n"
        "β̂ the estimated β (mean over the estimate's clusters); B biased; C corrected\n"
    )


def test_display_width_counts_terminal_columns():
    assert display_width("β̂") == 1  # β and a combining circumflex
    assert display_width("Δ(EEL) ↓") == 8
    assert display_width("表") == 2


def _records(datasets, betas, metrics, rng, full=True):
    recs = []
    for ds in datasets:
        for m in metrics:
            if full:
                recs.append(
                    dict(
                        dataset=ds,
                        beta=None,
                        metric=m,
                        condition="full",
                        value=float(rng.uniform(0, 1)),
                    )
                )
            for b in betas:
                for cond in ("biased", "corrected"):
                    recs.append(
                        dict(
                            dataset=ds,
                            beta=b,
                            metric=m,
                            condition=cond,
                            value=float(rng.uniform(-1, 1)),
                            p_value=1e-5 if cond == "corrected" else None,
                        )
                    )
        for b in betas:
            recs.append(
                dict(dataset=ds, beta=b, metric="beta_hat", condition="estimate", value=b - 0.01)
            )
    return recs


TABLE1_METRICS = ("ndcg@10", "rho_dtr", "delta_eel")
MANY = ("ndcg@10", "rho_dtr", "delta_eel", "awrf", "texfair", "cwex", "arab")


@pytest.mark.parametrize("width", [60, 80, 100, 120])
@pytest.mark.parametrize("metrics", [TABLE1_METRICS, MANY])
def test_every_line_fits_and_every_cell_is_shown(width, metrics):
    rng = np.random.default_rng(3)
    names = ["TREC 2019 [h-index]", "MSLR [127] (0.5)", "synthetic"]
    t = paper_table(_records(names, [0.8, 0.6], metrics, rng, full=False), metrics=metrics)
    text = table_to_text(t, width=width, title="Table 1 " * 20, alpha=0.001)
    lines = text.splitlines()
    assert max(len(s) for s in lines) <= width
    assert max(display_width(s) for s in lines) <= width
    # every cell appears, in its row, in the order of the table
    for ds, row in t.iterrows():
        shown = " ".join(s[len(ds) :] for s in lines if s.startswith(ds))
        assert shown.split() == [str(v) for v in row]
    # wrapped by β block: each part has the row labels; β = 0.8 comes before β = 0.6
    assert text.index("β = 0.8") < text.index("β = 0.6")
    assert sum(s.startswith("synthetic") for s in lines) == text.count("\ndataset ")


def test_numbers_align_on_their_last_digit_and_markers_hang_right():
    t = _frame(
        [("β = 0.6", "Δ(EEL) ↓", "B"), ("β = 0.6", "Δ(EEL) ↓", "C")],
        [["0.509", "0.065*"], ["12.5", "-0.1"], ["–", "1.250*"]],
        ["x", "y", "z"],
    )
    lines = table_to_text(t).splitlines()
    body = [s for s in lines if s[:1] in "xyz"]
    # the last digit of every number (and the dash of a missing one) of one column sits in
    # the same terminal column
    tokens = [[(m.start(), m.group()) for m in re.finditer(r"\S+", s)][1:] for s in body]
    for col in (0, 1):
        ends = {start + len(tok.rstrip("*")) for row in tokens for start, tok in [row[col]]}
        assert len(ends) == 1, body
    head = next(s for s in lines if s.startswith("dataset"))
    assert head.index("C") == body[0].index("0.065*") + len("0.065") - 1  # label over digit


def test_reference_block_repeats_beside_each_beta_part():
    rng = np.random.default_rng(5)
    t = paper_table(
        [
            r
            for r in _records(["synthetic"], [0.8, 0.6], TABLE1_METRICS, rng)
            if r["metric"] != "beta_hat"
        ],
        include_full=True,
    )
    text = table_to_text(t, width=100)
    parts = text.split("\n\n")
    assert len(parts) == 2
    for part, beta in zip(parts, ("β = 0.8", "β = 0.6")):
        assert "full information" in part and beta in part
        assert part.index("full information") < part.index(beta)
    # too narrow for the reference beside a β block: it comes once, first
    narrow = table_to_text(t, width=60).split("\n\n")
    assert "full information" in narrow[0] and "β =" not in narrow[0]
    assert all("── full information ──" not in p for p in narrow[1:])


def test_extra_columns_of_a_block_render_like_the_others():
    rng = np.random.default_rng(9)
    t = paper_table(
        _records(["synthetic", "TREC 2020"], [0.8, 0.6], TABLE1_METRICS, rng, full=False)
    )
    for b in ("β = 0.8", "β = 0.6"):
        t[(b, "assumption", "")] = ["ok", "!"]
    t = t[[c for b in ("β = 0.8", "β = 0.6") for c in t.columns if c[0] == b]]
    text = table_to_text(t, width=100)
    assert text.count("assumption") == 2
    rows = [s for s in text.splitlines() if s.startswith(("synthetic", "TREC 2020"))]
    assert [s.split()[-1] for s in rows] == ["ok", "!", "ok", "!"]
    assert max(len(s) for s in text.splitlines()) <= 100


def test_bad_arguments():
    with pytest.raises(ParameterError, match="table"):
        table_to_text([["0.5"]])
    with pytest.raises(ParameterError, match="width"):
        table_to_text(pd.DataFrame([["0.5"]]), width=5)


def test_the_legend_explains_every_column():
    """β̂, null β̂ and its flag, the conditions, the marker and the averaging are named
    below the table (the demo's tables average their repetitions)."""
    recs = []
    for rep, nb in enumerate([0.93, 0.91]):
        base = dict(dataset="D", beta=0.6, repetition=rep)
        recs += [
            dict(base, metric="beta_hat", condition="estimate", value=0.6),
            dict(base, metric="null_beta_hat", condition="diagnostic", value=nb),
            dict(base, metric="assumption_violated", condition="diagnostic", value=float(rep)),
            dict(base, metric="ndcg@10", condition="biased", value=0.9),
            dict(base, metric="ndcg@10", condition="corrected", value=0.95, p_value=1e-4),
        ]
    t = paper_table(recs, metrics=("ndcg@10",), alpha=0.001)
    assert t.loc["D", ("β = 0.6", "null β̂", "")] == "0.920 ± 0.014!"  # one repetition failed
    text = " ".join(table_to_text(t, width=100).split())
    for part in (
        "β̂ the estimated β",
        "null β̂ the same estimator on data simulated without bias (β = 1)",
        "! when it is off by more than the tolerance",
        "B biased; C corrected",
        "* better than biased, paired t-test p < 0.001 in every repetition",
        "mean over 2 repetitions (or seeds); ± s.d. in the saved tables",
    ):
        assert part in text, part
    assert "0.920!" in text and "±" not in text.split("β̂ the estimated")[0]
    full = " ".join(table_to_text(t, width=100, spread=True).split())
    assert "0.920 ± 0.014!" in full and "mean ± s.d. over 2 repetitions" in full
