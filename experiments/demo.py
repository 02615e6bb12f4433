"""The demo (plain ``groupbias`` / ``make demo``): the whole method on the embedded synthetic
dataset in well under a minute on two CPU cores.

1. load the synthetic train/valid/test splits;
2. tabular regime, for every β of ``bias.betas`` (1.0 = no bias): simulate group bias,
   estimate β̂ (amortized KS), IPS-correct, evaluate biased vs corrected utilities against
   full information (the true relevance);
3. LTR regime: train a small attention LambdaRank ranker on full-information labels, and on
   biased and corrected labels for every β of ``experiment.ltr_betas``; evaluate on the test
   split;
4. every simulation and ranker is repeated ``experiment.repetitions`` times (other simulation
   draws and initializations);
5. print both tables (Table 1 / Table 2 layout, β in ``experiment.table_betas``) and write
   the figure ``demo.png``/``demo.pdf``: NDCG@10, ρ(DTR) and Δ(EEL) against β for full
   information, biased and corrected — degradation with β and recovery by correction. Tables
   and figure show the same numbers: the mean ± s.d. (sample) over the repetitions; the
   tables' legend names every column.

At β = 1 the per-query noise σ_β is 0, so the biased labels are the true ones (and the
biased LTR ranker is the full-information ranker of the same repetition, not trained again).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.runs import shown_path
from groupbias.app.setup import Setup
from groupbias.core.errors import ParameterError
from groupbias.core.validation import real, sequence
from groupbias.pipelines.ltr import run_ltr, training_labels
from groupbias.pipelines.tabular import run_tabular

from .common import Entry, check_common, evaluation_title, load, rng_for, warn_if_long

#: the figure's file name (README.md shows docs/figures/<FIGURE>.png, a copy of it) and the
#: start of its title (the PNG's Title metadata)
FIGURE = "demo"
FIGURE_TITLE = "Group bias and its correction"


def _betas(name: str, values) -> tuple[float, ...]:
    return sequence(
        name,
        values,
        lambda n, v: real(n, v, low=0.0, high=1.0, low_open=True, what="betas in (0, 1]"),
        what="a non-empty list of betas in (0, 1], e.g. [1.0, 0.8, 0.6]",
        distinct=True,
    )


def _b(beta: float) -> str:
    """β as written in the config: 1.0, 0.8, 0.75."""
    text = f"{beta:g}"
    return text if "." in text else f"{text}.0"


def _same(a, b) -> bool:
    return a is not None and abs(float(a) - float(b)) < 1e-9


def _data_line(title: str, summaries: dict, seconds: float) -> str:
    sizes = ", ".join(f"{name} {s['n_queries']}" for name, s in summaries.items())
    items = sum(s["n_items"] for s in summaries.values())
    affected = sum(s.get("affected_share", 0.0) * s["n_items"] for s in summaries.values())
    return (
        f"[groupbias] {title}: {sum(s['n_queries'] for s in summaries.values())} queries "
        f"({sizes}), {affected / max(items, 1):.0%} affected items: {seconds:.1f} s"
    )


@dataclass
class Demo:
    """``experiment=demo``: ``repetitions`` of every simulation and ranker (the figure's
    intervals); ``ltr_betas``: the β of the LTR part (each trains a biased and a corrected
    ranker per repetition); ``table_betas``: the β columns of the printed tables; ``alpha``:
    significance level of the table markers. The tabular part runs every β of bias.betas."""

    name: str = "demo"
    repetitions: int = 3
    ltr_betas: list = field(default_factory=lambda: [1.0, 0.8, 0.6])
    table_betas: list = field(default_factory=lambda: [0.8, 0.6])
    alpha: float = 0.001

    def __post_init__(self) -> None:
        check_common(self)
        self.ltr_betas = list(_betas("ltr_betas", self.ltr_betas))
        self.table_betas = list(_betas("table_betas", self.table_betas))

    def check(self, setup: Setup) -> None:
        """The tables show both regimes at ``table_betas``: each regime must compute at least
        one of them (else presenting fails, after the run was stored)."""
        for key, have in (
            ("bias.betas", setup.bias.betas),
            ("experiment.ltr_betas", self.ltr_betas),
        ):
            if not any(_same(b, x) for b in self.table_betas for x in have):
                raise ParameterError(
                    "table_betas",
                    f"betas the run computes ({key} = {list(have)})",
                    list(self.table_betas),
                    fix=f"choose table_betas among {key}",
                )

    def planned_steps(self, setup: Setup) -> int:
        """The run's steps: tabular full information and each β, LTR full information and
        each β of ``ltr_betas``."""
        return 2 + len(setup.bias.betas) + len(self.ltr_betas)

    def planned_rankers(self, setup: Setup) -> list[int]:
        """The rankers each planned step trains (the tabular steps none; at β = 1 the
        biased ranker is usually the full-information one: counted once)."""
        per_beta = [(1 if beta == 1.0 else 2) * self.repetitions for beta in self.ltr_betas]
        return [0] * (1 + len(setup.bias.betas)) + [self.repetitions, *per_beta]

    def rankers(self) -> int:
        """The rankers the run trains: full information and, per β of ``ltr_betas``, biased
        and corrected (at β = 1 the biased one is the full-information one), per repetition."""
        per_rep = 1 + sum(1 if beta == 1.0 else 2 for beta in self.ltr_betas)
        return self.repetitions * per_rep

    def _tabular(self, setup: Setup, split, title: str, beta: float | None) -> dict:
        """Every repetition at ``beta``; ``None``: full information (the true relevance,
        evaluated once: nothing is random about it)."""
        out = []
        for rep in range(1 if beta is None else self.repetitions):
            res = run_tabular(
                split,
                beta=1.0 if beta is None else beta,
                beta_std=0.0 if beta in (None, 1.0) else None,
                bias=setup.bias,
                estimator=setup.estimator,
                diagnostics=setup.diagnostics,
                rng=rng_for(setup.seed, "demo-tab", beta, rep),
                dataset=title,
                protocol=setup.evaluation,
            )
            if beta is None:  # unbiased "biased" utilities are the full-information ones
                out += [
                    {**r, "condition": "full", "beta": None, "p_value": None, "repetition": rep}
                    for r in res.records
                    if r["condition"] == "biased"
                ]
            else:
                out += [{**r, "repetition": rep} for r in res.records]
        return {"records": out}

    def _unbiased(self, setup: Setup, splits, beta: float) -> bool:
        """True when the biased labels at ``beta`` are the full-information ones (β = 1 with
        σ_β = 0): the biased ranker is then the full-information ranker, not trained twice."""
        if beta != 1.0:
            return False
        labels, vlabels, *_ = training_labels(
            splits,
            beta=beta,
            bias=setup.bias,
            estimator=setup.estimator,
            rng=rng_for(setup.seed, "demo-ltr-check"),
            beta_std=0.0,
        )
        return all(
            (a["biased"] is None and a["full"] is None) or np.array_equal(a["biased"], a["full"])
            for a in (labels, vlabels)
        )

    def _ltr(
        self,
        setup: Setup,
        splits,
        prepared,
        title: str,
        run_dir,
        beta: float | None,
        full=(),
        reuse=False,
    ) -> dict:
        """Every repetition's rankers: full information (``beta`` None), else biased and
        corrected at ``beta``; with ``reuse`` the biased ranker is the repetition's
        full-information ranker (its records in ``full``)."""
        conditions = ("full",) if beta is None else ("biased", "corrected")
        out = []
        for rep in range(self.repetitions):
            where = run_dir.path / "ltr" / f"rep{rep}"
            res = run_ltr(
                splits,
                beta=1.0 if beta is None else beta,
                beta_std=0.0 if beta in (None, 1.0) else None,
                conditions=("corrected",) if reuse else conditions,
                bias=setup.bias,
                estimator=setup.estimator,
                diagnostics=setup.diagnostics,
                recipe=setup.recipe,
                rng=rng_for(setup.seed, "demo-ltr", beta, rep),
                seed=setup.seed + rep,
                out_dir=where if beta is None else where / f"beta{_b(beta)}",
                dataset=title,
                protocol=setup.evaluation,
                prepared=prepared,
            )
            out += [
                {**r, "repetition": rep}
                for r in res.records
                if r["condition"] in conditions or (beta is not None and r["metric"] == "beta_hat")
            ]
            if reuse:
                out += [
                    {**r, "condition": "biased", "beta": beta}
                    for r in full
                    if r["repetition"] == rep and r["condition"] == "full"
                ]
        return {"records": out}

    def run(self, setup: Setup, run_dir) -> dict:
        entry = Entry(setup.dataset, setup.grouping, "dataset")
        reps = self.repetitions
        print(
            "[groupbias] demo: simulate group bias, estimate β̂, correct, evaluate; "
            f"{reps} repetition{'s' * (reps > 1)}"
        )
        start = time.perf_counter()
        splits = load(entry)
        summaries = {name: d.summary() for name, d in splits.items()}
        print(_data_line(entry.title, summaries, time.perf_counter() - start))
        warn_if_long(setup, splits, rankers=self.rankers(), progress=run_dir.progress)
        tab = functools.partial(self._tabular, setup, splits["train"], entry.title)
        from groupbias.ltr.datamodule import PreparedSplits

        # the LTR steps' lists, normalized once when the first of them asks
        prepared = PreparedSplits(splits, setup.recipe.batching.normalize)
        ltr = functools.partial(self._ltr, setup, splits, prepared, entry.title, run_dir)
        records = run_dir.step(
            "tabular_full", lambda: tab(None), label="tabular, full information"
        )["records"]
        for beta in setup.bias.betas:
            records += run_dir.step(
                f"tabular_beta{_b(beta)}",
                functools.partial(tab, beta),
                label=f"tabular, β = {_b(beta)} ({reps} × simulate, estimate, correct)",
            )["records"]
        full = run_dir.step(
            "ltr_full", lambda: ltr(None), label=f"LTR, full information ({reps} rankers)"
        )["records"]
        records += full
        for beta in self.ltr_betas:
            reuse = self._unbiased(setup, splits, beta)
            records += run_dir.step(
                f"ltr_beta{_b(beta)}",
                functools.partial(ltr, beta, full, reuse),
                label=f"LTR, β = {_b(beta)} ({reps if reuse else 2 * reps} rankers)",
            )["records"]
        return {"records": records, "summaries": summaries}

    def tables(self, records: list[dict]):
        """The Table 1 and Table 2 layouts at ``table_betas``: every cell the mean ± s.d.
        over the repetitions (the figure's numbers)."""
        from groupbias.reporting import paper_table

        shown = [
            r
            for r in records
            if r["condition"] == "full" or any(_same(r["beta"], b) for b in self.table_betas)
        ]
        tab = [r for r in shown if r["regime"] == "tabular" and r["condition"] != "full"]
        ltr = [r for r in shown if r["regime"] == "ltr" and r["metric"] != "beta_hat"]
        return (
            paper_table(tab, alpha=self.alpha),
            paper_table(ltr, include_full=True, alpha=self.alpha),
        )

    def figure(self, records: list[dict]):
        """The degradation-and-recovery figure (:func:`beta_sweep_figure`)."""
        from groupbias.reporting.plots import beta_sweep_figure

        reps = max(int(r.get("repetition", 0)) for r in records) + 1
        return beta_sweep_figure(
            records,
            title=f"{FIGURE_TITLE} ({records[0]['dataset']} data; mean ± s.d. over {reps} "
            f"repetition{'s' * (reps > 1)})",
        )

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting import save_table, table_to_text
        from groupbias.reporting.plots import save_figure

        recs = metrics["records"]
        run_dir = Path(run_dir)
        t1, t2 = self.tables(recs)
        save_table(t1, run_dir / "tabular")
        save_table(t2, run_dir / "ltr")
        print()
        print(
            table_to_text(
                t1,
                title="Tabular regime (Table 1 layout; full information: NDCG 1, ρ 1, Δ 0)"
                + evaluation_title(setup),
                alpha=self.alpha,
            )
        )
        print(
            table_to_text(
                t2,
                title="LTR regime (Table 2 layout; rankers on the test split)"
                + evaluation_title(setup),
                alpha=self.alpha,
            )
        )
        fig = save_figure(self.figure(recs), run_dir / FIGURE)
        print(f"[groupbias] figure {fig['png'].name} (.pdf, .svg), tables tabular.* and ltr.* in")
        print(f"[groupbias]   {shown_path(run_dir)}")
