"""Δ(EEL) of Table 1 on TREC 2020 under every convention we could name: which one, if any,
gives the paper's 0.356 (β = 0.8) and 1.152 (β = 0.6) for the biased utilities.

The utilities are those of ``groupbias experiment=table1`` (training split, the same seeds:
simulated attractiveness and its IPS correction); only the way Δ(EEL) is computed from them
changes. Each convention is one change from our default (the deterministic Table 1 row: EEL
target grades by the thresholds 0.25 / 0.5 / 0.75, exposure ``1 / log2(1 + r)``, the group
target exposures ``[E_A, E_N]``, ℓ2, the mean over queries) or a combination named in its
label. The truth is graded by its binary labels (``a* = 0.5``) throughout, or by the same
per-query min–max bins where the estimate is.

    python -m tools.eel_scale                  # the table of docs/method.md
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the paper's biased Δ(EEL) on TREC 2020, Table 1 (β = 0.8, β = 0.6)
PAPER = (0.356, 1.152)
BETAS = (0.8, 0.6)


@dataclass(frozen=True)
class Convention:
    """How Δ(EEL) is computed: ``grades`` of the estimate (``bins`` thresholds 0.25/0.5/0.75,
    ``a*`` one threshold 0.5, ``minmax2`` / ``minmax5`` per-query min–max levels, ``raw`` every
    distinct score its own grade); ``offset`` of the exposure ``1 / log2(offset + r)``;
    ``k`` the exposure cutoff; ``level`` ``group`` or ``item`` exposures; ``distance``
    ``l2`` | ``l1`` | ``sq_l2``; ``over`` ``mean`` (over queries), ``two_groups`` (mean over
    the queries with both groups), ``sum`` (over queries) or ``global`` (ℓ2 of every query's
    group differences as one vector)."""

    label: str
    grades: str = "bins"
    offset: int = 1
    k: int | None = None
    level: str = "group"
    distance: str = "l2"
    over: str = "mean"


CONVENTIONS = (
    Convention("our default (the deterministic row of Table 1)"),
    Convention("ℓ1 (Theorem 4.2's “multiply it by 2”)", distance="l1"),
    Convention("squared ℓ2 (the released code)", distance="sq_l2"),
    Convention("item exposures instead of group exposures", level="item"),
    Convention("one threshold a* = 0.5 (Theorem 4.2)", grades="a*"),
    Convention("per-query min–max, 2 levels (the released evaluation)", grades="minmax2"),
    Convention("per-query min–max, 5 levels (the released learner's target)", grades="minmax5"),
    Convention("no discretization: every distinct score a grade", grades="raw"),
    Convention("exposure 1/log2(2 + r) (the released code)", offset=2),
    Convention("exposure of the top 10 only", k=10),
    Convention("mean over the queries with both groups only", over="two_groups"),
    Convention("ℓ1, no discretization, top 10", grades="raw", k=10, distance="l1"),
    Convention("ℓ1, min–max 5 levels, top 10", grades="minmax5", k=10, distance="l1"),
    Convention("ℓ2 of all queries' group differences as one vector", over="global"),
    Convention("sum over queries instead of the mean", over="sum"),
)


def trec2020_utilities(split: str = "train") -> dict:
    """The data and, per β, the biased and corrected utilities of Table 1 on TREC 2020."""
    from hydra import compose, initialize_config_dir

    from experiments.common import entries, load, rng_for
    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.config import build_setup
    from groupbias.pipelines.tabular import run_tabular

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["experiment=table1"])
    setup, experiment = build_setup(cfg)
    entry = next(e for e in entries(experiment.entries, setup) if e.title == "TREC 2020")
    data = load(entry, only=(split,))[split]
    scores = {}
    for beta in BETAS:
        res = run_tabular(
            data,
            beta=beta,
            bias=setup.bias,
            estimator=setup.estimator,
            diagnostics=setup.diagnostics,
            rng=rng_for(setup.seed, "table1", entry.title, beta),
            dataset=entry.title,
            keep_scores=True,
        )
        scores[beta] = {"biased": res.attractiveness, "corrected": res.corrected}
    return {"data": data, "scores": scores}


def _grades(values: np.ndarray, how: str, qptr: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    from groupbias.evaluation.exposure import discretize, query_minmax_grades

    if how == "bins":
        return discretize(values, thresholds=(0.25, 0.5, 0.75)).astype(np.float64)
    if how == "a*":
        return discretize(values, thresholds=(0.5,)).astype(np.float64)
    if how.startswith("minmax"):
        return query_minmax_grades(values, qptr, qidx, int(how[len("minmax") :]))
    return np.asarray(values, dtype=np.float64)  # raw: every distinct value its own grade


def delta_eel(estimate, truth, groups, qptr, c: Convention) -> float:
    """Δ(EEL) between the EEL targets of ``estimate`` and ``truth`` under convention ``c``."""
    from groupbias.core.segments import query_index, segment_sum
    from groupbias.evaluation.exposure import group_sums, target_exposure

    qidx = query_index(qptr)
    truth_grades = "minmax" + c.grades[-1] if c.grades.startswith("minmax") else "a*"
    d = target_exposure(
        _grades(estimate, c.grades, qptr, qidx), qptr=qptr, k=c.k, offset=c.offset
    ) - target_exposure(_grades(truth, truth_grades, qptr, qidx), qptr=qptr, k=c.k, offset=c.offset)
    g = np.asarray(groups, dtype=np.float64)
    if c.level == "group":  # the components are the two group differences of each query
        d_a, d_n = group_sums(d, g, qptr)
        squares, absolute = d_a**2 + d_n**2, np.abs(d_a) + np.abs(d_n)
    else:  # item level: one query's items are its components
        squares, absolute = segment_sum(d**2, qptr), segment_sum(np.abs(d), qptr)
    if c.over == "global":
        return float(np.sqrt(np.sum(squares)))
    per = {"l1": absolute, "l2": np.sqrt(squares), "sq_l2": squares}[c.distance]
    if c.over == "sum":
        return float(np.sum(per))
    if c.over == "two_groups":
        n_affected = segment_sum(g, qptr)
        per = per[(n_affected > 0) & (n_affected < np.diff(qptr))]
    return float(np.mean(per))


def rows(utilities: dict) -> list[list[str]]:
    """One row per convention: biased at β = 0.8 and 0.6, their ratio, corrected at both."""
    data = utilities["data"]
    truth = np.asarray(data.labels, dtype=np.float64)
    out = []
    for c in CONVENTIONS:
        vals = {
            (beta, cond): delta_eel(s, truth, data.groups, data.qptr, c)
            for beta, by in utilities["scores"].items()
            for cond, s in by.items()
        }
        b8, b6 = vals[(0.8, "biased")], vals[(0.6, "biased")]
        ratio = f"{b6 / b8:.2f}" if b8 > 0 else "–"
        cells = [f"{b8:.3f}", f"{b6:.3f}", ratio]
        cells += [f"{vals[(0.8, 'corrected')]:.3f}", f"{vals[(0.6, 'corrected')]:.3f}"]
        out.append([c.label, *cells])
    ratio = f"{PAPER[1] / PAPER[0]:.2f}"
    out.append(["**the paper**", f"{PAPER[0]:.3f}", f"{PAPER[1]:.3f}", ratio, "0.114", "0.137"])
    return out


HEADER = ["convention", "biased β = 0.8", "biased β = 0.6", "ratio", "corr. β = 0.8", "β = 0.6"]


def main() -> None:
    from experiments.common import markdown
    from groupbias.core.io import env_value

    if env_value("GROUPBIAS_TREC_FAIR") is None:  # unset or empty: the shared copy
        os.environ["GROUPBIAS_TREC_FAIR"] = str(
            Path(__file__).resolve().parents[2] / "shared/data/trec-fair"
        )

    print(markdown(HEADER, rows(trec2020_utilities())))


if __name__ == "__main__":
    main()
