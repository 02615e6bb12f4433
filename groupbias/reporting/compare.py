"""Systems side by side, the way ranx users compare runs (``ranx.compare``).

Every system (a TREC run, or a condition's run that an LTR experiment wrote) is evaluated
per query on the same qrels and item→group file; for every metric, every pair of systems is
compared by a paired test over the queries both have (Student's t by default, as
``scipy.stats.ttest_rel``; or Wilcoxon), and the p-values of that metric's family of
``k (k − 1) / 2`` pairs are adjusted for multiple testing if asked (none by default; Holm or
Bonferroni: :func:`groupbias.evaluation.stats.adjust_p_values`). The table shows each
system's mean and, as superscript letters, the systems it is *significantly better than*
(adjusted p ≤ alpha, in the direction the metric is registered with: higher, lower or closer
to 0); the best value of each column is bold. The defaults are ``ranx.compare``'s
(:data:`RANX_DEFAULTS`: ``stat_test="student"``, no correction, ``max_p=0.01``), so the
letters are ranx's; :meth:`Comparison.headline` names the test and correction used. The
numbers behind the table are tidy tables (:class:`Comparison` ``values`` and ``tests``),
written as CSV beside the Markdown and LaTeX views.
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import ParameterError
from ..core.io import write_text_atomic
from ..core.validation import choice, real
from ..evaluation.catalog import direction_of
from ..evaluation.stats import CORRECTIONS, TESTS, adjust_p_values, paired_test
from .frames import runs_frame
from .tables import better_than, column_label, tex_text

__all__ = ["RANX_DEFAULTS", "Comparison", "compare", "compare_runs", "system_letters"]

#: ``ranx.compare``'s defaults as our settings: its ``stat_test="student"`` is the two-sided
#: paired t-test of ``scipy.stats.ttest_rel``, it corrects nothing, and a pair differs
#: significantly at ``p <= max_p`` (0.01)
RANX_TEST, RANX_CORRECTION, RANX_ALPHA = "ttest", "none", 0.01
RANX_DEFAULTS = {"test": RANX_TEST, "correction": RANX_CORRECTION, "alpha": RANX_ALPHA}
TEST_NAMES = {
    "ttest": "paired t-test (two-sided, as scipy.stats.ttest_rel)",
    "wilcoxon": "Wilcoxon signed-rank test (two-sided, as scipy.stats.wilcoxon)",
}
CORRECTION_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni"}


def system_letters(n: int) -> list[str]:
    """``a, b, ..., z, aa, ab, ...``: the letters naming ``n`` systems."""
    letters = list(string.ascii_lowercase)
    out = []
    for i in range(n):
        name, i = "", i + 1
        while i:
            i, r = divmod(i - 1, 26)
            name = letters[r] + name
        out.append(name)
    return out


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`: ``values`` (one row per system × metric: ``system``,
    ``letter``, ``metric``, ``mean`` over the ``n_shared`` units every system has,
    ``n_queries`` the system's own, ``n_any`` the units any system has) and ``tests`` (one
    row per metric and ordered pair: ``metric``, ``system``, ``other``, ``statistic``, ``p_value``,
    ``p_adjusted``, ``n_pairs``, ``better``: the system beats the other significantly), and
    the settings; ``unit``: what the values are per (``queries``, ``seeds``)."""

    values: pd.DataFrame
    tests: pd.DataFrame
    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    test: str
    correction: str
    alpha: float
    unit: str = "queries"

    def beats(self, system: str, metric: str) -> list[str]:
        """The letters of the systems ``system`` is significantly better than."""
        t = self.tests
        rows = t[(t["metric"] == metric) & (t["system"] == system) & t["better"]]
        letters = dict(zip(self.systems, system_letters(len(self.systems))))
        return sorted(letters[o] for o in rows["other"])

    def _cells(self, mark) -> pd.DataFrame:
        """The table of formatted cells (``mark(value, letters, best)`` formats one)."""
        letters = system_letters(len(self.systems))
        v = self.values.set_index(["system", "metric"])["mean"]
        rows = {}
        for metric in self.metrics:
            col = [float(v[(s, metric)]) for s in self.systems]
            best = _best(col, direction_of(metric))
            rows[column_label(metric)] = [
                mark(x, "".join(self.beats(s, metric)), x == best and np.isfinite(x))
                for s, x in zip(self.systems, col)
            ]
        index = pd.Index([f"{a} {s}" for a, s in zip(letters, self.systems)], name="system")
        return pd.DataFrame(rows, index=index)

    def shared(self) -> str:
        """How many units (queries, seeds) the means are over, per metric: the units every
        system has, of all any system has."""
        v = self.values.drop_duplicates("metric").set_index("metric")
        parts = []
        for metric in self.metrics:
            n, total = int(v.loc[metric, "n_shared"]), int(v.loc[metric, "n_any"])
            label = column_label(metric)
            parts.append(f"{label} {n}" + (f" of {total}" if total != n else ""))
        return ", ".join(parts)

    def headline(self) -> str:
        """One line naming the test, the correction and the level, and whether they are
        ``ranx.compare``'s defaults (else the flags that give its table)."""
        fix = self._correction_text()
        settings = {"test": self.test, "correction": self.correction, "alpha": self.alpha}
        ranx = (
            "ranx.compare's defaults"
            if settings == RANX_DEFAULTS
            else "ranx.compare's table: --test ttest --correction none --alpha 0.01"
        )
        adjusted = "adjusted " if self.correction != "none" else ""
        return (
            f"Test: {TEST_NAMES[self.test]}, {fix}, significant at {adjusted}p ≤ "
            f"{self.alpha:g} ({ranx})."
        )

    def _correction_text(self) -> str:
        """``no correction`` or ``Holm correction over the 3 pairs of each metric``."""
        if self.correction == "none":
            return "no correction"
        pairs = len(self.systems) * (len(self.systems) - 1) // 2
        return (
            f"{CORRECTION_NAMES[self.correction]} correction over the {pairs} pairs of each metric"
        )

    def legend(self) -> str:
        test = "paired t-test" if self.test == "ttest" else "Wilcoxon signed-rank test"
        adjusted = "adjusted " if self.correction != "none" else ""
        if self.tests["p_value"].isna().all():
            return (
                f"Means over the {self.unit} every system has ({self.shared()}); no paired "
                f"test: no pair of systems has two {self.unit} in common. Bold: the best "
                "value of a column."
            )
        return (
            f"Means over the {self.unit} every system has ({self.shared()}). Superscripts: "
            f"the systems a value is significantly better than ({test} over the {self.unit} "
            f"both have, {self._correction_text()}, {adjusted}p ≤ {self.alpha:g}); bold: "
            "the best value of a column."
        )

    def to_markdown(self, *, headline: bool = True) -> str:
        """The table and its legend, after :meth:`headline` (unless ``headline=False``)."""

        def mark(x, sup, best):
            text = "–" if not np.isfinite(x) else f"{x:.3f}"
            text = f"**{text}**" if best else text
            return text + (f"<sup>{sup}</sup>" if sup else "")

        t = self._cells(mark)
        lines = ["| " + " | ".join(["system", *t.columns]) + " |", "|" + "---|" * (t.shape[1] + 1)]
        for idx, row in t.iterrows():
            lines.append("| " + " | ".join([str(idx), *row.tolist()]) + " |")
        head = self.headline() + "\n\n" if headline else ""
        return head + "\n".join(lines) + "\n\n" + self.legend() + "\n"

    def to_latex(self, caption: str | None = None) -> str:
        def mark(x, sup, best):
            text = "--" if not np.isfinite(x) else f"{x:.3f}"
            text = r"\textbf{" + text + "}" if best else text
            return text + (r"$^{" + sup + "}$" if sup else "")

        t = self._cells(mark)
        out = [r"\begin{table}", r"\centering"]
        if caption:
            out.append(r"\caption{" + tex_text(caption) + "}")
        out += [r"\begin{tabular}{l" + "c" * t.shape[1] + "}", r"\toprule"]
        out.append(" & ".join(["system", *[tex_text(c) for c in t.columns]]) + r" \\")
        out.append(r"\midrule")
        for idx, row in t.iterrows():
            out.append(" & ".join([tex_text(str(idx)), *row.tolist()]) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", "", tex_text(self.legend()), r"\end{table}"]
        return "\n".join(out) + "\n"

    def save(self, stem: str | os.PathLike) -> dict[str, Path]:
        """``stem.md``, ``stem.tex`` (views) and ``stem_values.csv``, ``stem_tests.csv`` (the
        numbers), atomically."""
        stem = Path(stem)
        return {
            "md": write_text_atomic(stem.parent / f"{stem.name}.md", self.to_markdown()),
            "tex": write_text_atomic(stem.parent / f"{stem.name}.tex", self.to_latex()),
            "values": write_text_atomic(
                stem.parent / f"{stem.name}_values.csv", self.values.to_csv(index=False)
            ),
            "tests": write_text_atomic(
                stem.parent / f"{stem.name}_tests.csv", self.tests.to_csv(index=False)
            ),
        }


def _best(col: list[float], direction: str) -> float:
    finite = [x for x in col if np.isfinite(x)]
    if not finite:
        return float("nan")
    key = {"lower": lambda x: x, "zero": abs}.get(direction, lambda x: -x)
    return min(finite, key=key)


def compare(
    per_query: Mapping[str, Mapping[str, pd.Series]],
    *,
    metrics: Sequence[str] | None = None,
    test: str = RANX_TEST,
    correction: str = RANX_CORRECTION,
    alpha: float = RANX_ALPHA,
    unit: str = "queries",
) -> Comparison:
    """Compare systems on per-query values: ``per_query[system][metric]`` a Series indexed
    by query id (NaN: the metric is undefined there; ``unit``: what the index counts, e.g.
    ``"seeds"`` for values per replicate). Each mean is over the units *every* system has
    (``n_shared``; ``n_any``: the units any system has; a metric no unit of which every
    system has is a :class:`ParameterError`), so the best value compares like with like;
    pairs are tested on the units both systems have; ``metrics``: the metrics to compare
    (default: the first system's); three or more systems make the letters worth reading,
    two or more are needed. The defaults of ``test``, ``correction`` and ``alpha`` are
    ``ranx.compare``'s (:data:`RANX_DEFAULTS`)."""
    test = choice("test", test, TESTS)
    correction = choice("correction", correction, CORRECTIONS)
    real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    systems = tuple(per_query)
    if len(systems) < 2:
        raise ParameterError("systems", "at least two systems to compare", list(systems))
    metrics = tuple(metrics or next(iter(per_query.values())))
    values, tests = [], []
    for metric in metrics:
        series = {}
        for s in systems:
            if metric not in per_query[s]:
                raise ParameterError("metrics", f"metrics every system has ({s!r})", metric)
            series[s] = per_query[s][metric]
        frame = pd.DataFrame(series)  # units × systems, aligned by query id
        values += _shared_means(frame, systems, metric, unit)
        tests += _pair_tests(frame, systems, metric, test)
    tests_df = pd.DataFrame(tests)
    for metric in metrics:  # one family per metric: each unordered pair once
        at = tests_df["metric"] == metric
        first = at & tests_df["first"]
        adj = pd.Series(adjust_p_values(tests_df.loc[first, "p_value"], method=correction))
        adj.index = tests_df.index[first]
        key = tests_df.loc[at, "pair"]
        tests_df.loc[at, "p_adjusted"] = key.map(dict(zip(tests_df.loc[first, "pair"], adj)))
    tests_df["better"] = [
        bool(p <= alpha and better_than(m, a, b))  # ranx: p <= max_p
        for p, m, a, b in zip(
            tests_df["p_adjusted"], tests_df["metric"], tests_df["mean"], tests_df["other_mean"]
        )
    ]
    tests_df = tests_df.drop(columns=["first", "pair", "mean", "other_mean"])
    return Comparison(
        pd.DataFrame(values), tests_df, systems, metrics, test, correction, float(alpha), unit
    )


def _shared_means(frame: pd.DataFrame, systems, metric: str, unit: str) -> list[dict]:
    """Every system's mean of ``metric`` over the units every system has."""
    frame = frame.astype(np.float64)
    shared = frame.notna().all(axis=1)
    if not shared.any():
        raise ParameterError(
            "systems",
            f"{unit} where every system has {metric}",
            "none",
            fix="compare systems evaluated on common " + unit,
        )
    n_any = int(frame.notna().any(axis=1).sum())
    return [
        {
            "system": s,
            "letter": letter,
            "metric": metric,
            "mean": float(frame.loc[shared, s].mean()),
            "n_queries": int(frame[s].notna().sum()),
            "n_shared": int(shared.sum()),
            "n_any": n_any,
        }
        for s, letter in zip(systems, system_letters(len(systems)))
    ]


def _pair_tests(frame: pd.DataFrame, systems, metric: str, test: str) -> list[dict]:
    """Both orders of every pair of systems on one metric (the p-value is symmetric)."""
    out = []
    for i, s in enumerate(systems):
        for j, o in enumerate(systems):
            if i == j:
                continue
            a, b = frame[s].to_numpy(np.float64), frame[o].to_numpy(np.float64)
            both = ~(np.isnan(a) | np.isnan(b))
            try:
                stat, p, n = paired_test(a, b, test=test)
            except ParameterError:  # fewer than two queries both have
                stat, p, n = float("nan"), float("nan"), int(both.sum())
            out.append(
                {
                    "metric": metric,
                    "system": s,
                    "other": o,
                    "statistic": stat,
                    "p_value": p,
                    "n_pairs": n,
                    "first": i < j,
                    "pair": (min(i, j), max(i, j)),
                    "mean": float(np.mean(a[both])) if both.any() else float("nan"),
                    "other_mean": float(np.mean(b[both])) if both.any() else float("nan"),
                }
            )
    return out


def compare_runs(
    runs: Mapping[str, object],
    qrels,
    groups,
    *,
    metrics: Sequence = ("ndcg@10", "rho_dtr", "delta_eel"),
    affected: str | None = None,
    label_max=None,
    test: str = RANX_TEST,
    correction: str = RANX_CORRECTION,
    alpha: float = RANX_ALPHA,
    semantics: str = "trec_eval",
) -> Comparison:
    """:func:`compare` of TREC runs (``{name: path or TrecRun}``) evaluated per query on
    ``qrels`` and ``groups`` as :func:`groupbias.evaluation.evaluate.evaluate_run` does
    (nDCG, MRR and MAP with ``trec_eval``'s semantics unless ``semantics="candidates"``;
    the fairness metrics on each run's ranking of its candidates)."""
    frame = runs_frame(
        runs, qrels, groups, metrics=metrics, affected=affected, label_max=label_max,
        semantics=semantics,
    )  # fmt: skip
    keys = [c for c in frame.columns if c not in ("system", "query")]
    per_query = {
        name: {k: rows.set_index("query")[k] for k in keys}
        for name, rows in frame.groupby("system", sort=False)
    }
    return compare(per_query, metrics=keys, test=test, correction=correction, alpha=alpha)
