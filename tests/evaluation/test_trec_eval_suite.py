"""trec_eval's own test suite in ours: the qrels, runs and expected outputs of its
``make quicktest`` (tests/data/trec_eval, copied with NIST's notice: README.md there).

For every option case it ships, every measure both tools name is compared per query and
overall with the value trec_eval prints (4 decimals: within half a unit of the last
printed digit). A measure name is ours when the catalogue's public name parser
(:func:`groupbias.evaluation.catalog.parse_metric`) resolves trec_eval's own spelling of it;
every other measure, and every option case we do not run, is listed below with its
reason. A listed measure that the catalogue comes to resolve fails the test, so the list
only ever shrinks to what is really not offered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import groupbias as gb
from groupbias.core.errors import GroupBiasError
from groupbias.evaluation.catalog import parse_metric
from groupbias.evaluation.evaluate import run_queries
from groupbias.evaluation.trec_eval import trec_measures

DATA = Path(__file__).parents[1] / "data" / "trec_eval"
#: trec_eval prints "%6.4f": a value agrees when within half a unit of the 4th decimal
PRINTED = 0.5e-4 + 1e-12


@dataclass(frozen=True)
class Case:
    """One line of trec_eval's ``make quicktest``: its output file, qrels, run, options."""

    out: str
    qrels: str
    run: str
    command: str
    options: dict = field(default_factory=dict)


#: the quicktest lines we run (trec_eval 10.0's Makefile, in its order)
CASES = [
    Case("out.test", "qrels.test", "results.test", "trec_eval qrels.test results.test"),
    Case(
        "out.test", "qrels.test.with-comments", "results.test",
        "trec_eval qrels.test.with-comments results.test",
    ),
    Case(
        "out.comment.test", "qrels.comment.test.gz", "results.comment.test.gz",
        "trec_eval qrels.comment.test results.comment.test",
    ),
    Case("out.test.a", "qrels.test", "results.test", "trec_eval -m all_trec"),
    Case("out.test.aq", "qrels.test", "results.test", "trec_eval -m all_trec -q"),
    Case(
        "out.test.aqc", "qrels.test", "results.trunc", "trec_eval -m all_trec -q -c",
        {"complete": True},
    ),
    Case(
        "out.test.aqcM", "qrels.test", "results.trunc", "trec_eval -m all_trec -q -c -M100",
        {"complete": True, "max_docs": 100},
    ),
    Case(
        "out.test.aql", "qrels.rel_level", "results.test",
        "trec_eval -m all_trec -mrelstring.20 -q -l2", {"relevance_level": 2},
    ),
    Case(
        "out.test.meas_params", "qrels.test", "results.test",
        "trec_eval -q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 "
        "-m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 "
        "-mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20",
    ),
]  # fmt: skip

#: the quicktest lines we do not run, and why
OPTIONS_NOT_OFFERED = {
    "out.test.prefs (-R prefs, twice: prefs.test and prefs.comment.test)": "not offered: "
    "preference judgments (-R prefs) and trec_eval's all_prefs measures",
    "out.test.qrels_prefs (-R qrels_prefs)": "not offered: preference measures from qrels",
    "out.test.qrels_jg (-R qrels_jg, twice: qrels.123 and qrels.comments.123)": "not "
    "offered: qrels with several judgment groups and their averages",
    "out.test.aqZ (-Z zscores_file)": "not offered: z-scores of per-query values",
}

#: trec_eval's measures that the catalogue does not resolve, by name pattern, and why
NOT_OFFERED = {
    r"num_ret|num_rel|num_rel_ret|num_nonrel_judged_ret": "not offered: counts of documents "
    "(retrieved, relevant, relevant retrieved, judged non-relevant retrieved)",
    r"gm_map|gm_bpref": "not offered: geometric means over the queries",
    r"iprec_at_recall_[\d.]+|11pt_avg.*": "not offered: interpolated precision at recall levels",
    r"Rprec_mult_[\d.]+": "not offered: precision at multiples of R",
    r"relative_P_\d+|set_relative_P": "not offered: precision relative to the best possible",
    r"set_P|set_recall|set_map|set_F": "not offered: measures of the retrieved set, unranked",
    r"relstring(_\d+)?": "not offered: a string of relevance marks, not a number",
    r"utility.*": "not offered: utility (a weighted count of documents)",
    r"ndcg_.*=.*": "not offered: nDCG with a gain per relevance level (trec_eval's "
    "ndcg.1=3,2=9,4=4.5)",
    r"ndcg_rel|Rndcg": "not offered: nDCG averaged over relevant documents / cut at R",
    r"G|binG": "not offered: trec_eval's G and binG gain measures",
    r"infAP": "not offered: inferred AP (sampled judgments)",
    r"rbp|rbp_resid": "not offered: rank-biased precision and its residual",
    r"unj_\d+": "not offered: the unjudged share of the first k documents, divided by k "
    "(Judged@k, ir_measures', is offered: it divides by the run's length where shorter, "
    "counts a relevance below 0 as judged, and is not 1 - unj_k then)",
}
#: not measures: checked against the run's tag and our number of queries
NOT_MEASURES = ("runid", "num_q")


def _printed(name: str) -> dict[str, dict[str, str]]:
    """trec_eval's output ``name``: ``{measure: {query or 'all': printed value}}``."""
    out: dict[str, dict[str, str]] = {}
    for line in (DATA / name).read_text().splitlines():
        measure, query, value = line.split()
        out.setdefault(measure, {})[query] = value
    return out


def _resolves(measure: str) -> bool:
    try:
        parse_metric(measure)
    except GroupBiasError:
        return False
    return True


def _reason(measure: str) -> str | None:
    return next((why for p, why in NOT_OFFERED.items() if re.fullmatch(p, measure)), None)


def _split_measures(printed: dict) -> list[str]:
    """The measures of ``printed`` we compare; every other one must be listed."""
    compared = []
    for measure in printed:
        if measure in NOT_MEASURES:
            continue
        listed = _reason(measure)
        if listed is not None:
            assert not _resolves(measure), (
                f"{measure} is listed as {listed!r} but the catalogue resolves it: remove it "
                "from NOT_OFFERED so that it is compared"
            )
        else:
            assert _resolves(measure), f"{measure}: neither compared nor listed with a reason"
            compared.append(measure)
    return compared


def _differences(measure: str, queries, values, printed: dict) -> list[str]:
    """Where ours and trec_eval's printed ``measure`` differ: per query where it printed
    them (``-q``), and overall."""
    want = printed[measure]
    got = dict(zip(np.asarray(queries).astype(str).tolist(), values.tolist()))
    cells = [("all", float(np.mean(values)))]
    if len(want) > 1:  # -q: every query's row
        assert sorted(got) == sorted(q for q in want if q != "all"), measure
        cells += list(got.items())
    return [
        f"{measure} {q}: ours {v:.6f}, trec_eval {want[q]}"
        for q, v in cells
        if abs(v - float(want[q])) > PRINTED
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.out}:{c.qrels}")
def test_trec_eval_quicktest_case(case: Case):
    printed = _printed(case.out)
    compared = _split_measures(printed)
    run, qrels = gb.read_run(DATA / case.run), gb.read_qrels(DATA / case.qrels)
    queries = run_queries(run, qrels, complete=case.options.get("complete", False))
    if "num_q" in printed:  # trec_eval's default and all_trec measures print them
        assert printed["num_q"]["all"] == str(queries.size)
        assert printed["runid"]["all"] == run.tag
    if not compared:  # every measure of the case is listed above, with its reason
        return
    values = gb.evaluate_run(run, qrels, None, metrics=compared, reduce=None, **case.options)
    wrong = [d for m in compared for d in _differences(m, queries, values[m], printed)]
    assert not wrong, "\n".join(wrong)


def test_every_quicktest_line_is_run_or_listed():
    makefile_outputs = {
        "out.test", "out.comment.test", "out.test.a", "out.test.aq", "out.test.aqc",
        "out.test.aqcM", "out.test.aql", "out.test.prefs", "out.test.qrels_prefs",
        "out.test.qrels_jg", "out.test.meas_params", "out.test.aqZ",
    }  # fmt: skip
    run = {c.out for c in CASES}
    listed = {k.split()[0] for k in OPTIONS_NOT_OFFERED}
    assert run | listed == makefile_outputs and not run & listed
    assert {c.qrels for c in CASES} >= {"qrels.test.with-comments", "qrels.comment.test.gz"}


#: trec_eval's measure families and the names :mod:`groupbias.evaluation.trec_eval` gives
#: them (its own module-level names, independent of the catalogue's parser)
MODULE_NAMES = {
    r"map": "map",
    r"ndcg": "ndcg",
    r"recip_rank": "mrr",
    r"P_(\d+)": r"p@\1",
    r"recall_(\d+)": r"recall@\1",
    r"ndcg_cut_(\d+)": r"ndcg@\1",
    r"map_cut_(\d+)": r"map@\1",
    r"Rprec": "rprec",
    r"bpref": "bpref",
    r"success_(\d+)": r"success@\1",
}


def _module_name(measure: str) -> str | None:
    for pattern, ours in MODULE_NAMES.items():
        if re.fullmatch(pattern, measure):
            return re.sub(pattern, ours, measure)
    return None


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.out}:{c.qrels}")
def test_the_trec_eval_module_under_each_option(case: Case):
    """-c and -l reach every measure the module computes (P, recall, RR, AP, nDCG, cut
    or not), per query and overall, whatever the catalogue names."""
    printed = _printed(case.out)
    names = {m: _module_name(m) for m in printed if _module_name(m)}
    run, qrels = gb.read_run(DATA / case.run), gb.read_qrels(DATA / case.qrels)
    queries, values = trec_measures(run, qrels, list(names.values()), **case.options)
    wrong = [
        d for m, ours in names.items() for d in _differences(m, queries, values[ours], printed)
    ]
    assert not wrong, "\n".join(wrong)
    if case.out != "out.test.meas_params":  # all_trec and the default measures
        assert {"map", "P_10"} <= set(names)


def test_without_the_options_the_cases_differ():
    """The options matter on these files: -c and -l2 change the values trec_eval prints."""
    run, qrels = gb.read_run(DATA / "results.trunc"), gb.read_qrels(DATA / "qrels.test")
    # out.test.aqc's rows: 301 0.0324, 302 0.0000 (not in the run), 303 0.2723, all 0.1016
    without = gb.evaluate_run(run, qrels, None, metrics=["map"])["map"]
    assert without == pytest.approx((0.0324 + 0.2723) / 2, abs=1e-4)
    assert gb.evaluate_run(run, qrels, None, metrics=["map"], complete=True)["map"] == (
        pytest.approx((0.0324 + 0.2723) / 3, abs=1e-4)
    )
    run, qrels = gb.read_run(DATA / "results.test"), gb.read_qrels(DATA / "qrels.rel_level")
    level1 = gb.evaluate_run(run, qrels, None, metrics=["map", "ndcg"], reduce=None)
    level2 = gb.evaluate_run(run, qrels, None, metrics=["map", "ndcg"], reduce=None,
                             relevance_level=2)  # fmt: skip
    assert not np.allclose(level1["map"], level2["map"])
    np.testing.assert_array_equal(level1["ndcg"], level2["ndcg"])  # graded gains kept
