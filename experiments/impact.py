"""RQ1 (Fig. 2, 5, 6): the impact of group bias, without correction.

Per setup (dataset × sensitive feature × threshold) and β ∈ bias.betas (1.0 = no bias):
NDCG@10 overall / affected / non-affected, ρ(DTR) and Δ(EEL) of the biased scores in the
tabular regime (training split) and, with ``ltr`` in experiment.regimes, of a ranker trained
on the biased labels (test split). With ``experiment.setups: paper`` the 32 Yahoo! and MSLR
setups of §6.1 are used for the datasets present; otherwise the listed datasets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from data_loaders.grouping import FeatureGrouping, paper_setups
from groupbias.app.setup import Setup
from groupbias.core.errors import ParameterError
from groupbias.core.validation import choice
from groupbias.data.datasets import DatasetSpec
from groupbias.pipelines.ltr import run_ltr

from .common import (
    Entry,
    available,
    beta_grid,
    check_common,
    dataset_list,
    entries,
    folder_name,
    parse_entries,
    rng_for,
    step_records,
    tabular_step,
)

REGIMES = ("tabular", "ltr")


def _reference_std(beta: float) -> float | None:
    """β = 1 is the full-information reference: no per-query noise either (else the bias
    model's own)."""
    return 0.0 if beta == 1.0 else None


def setups(exp, setup: Setup) -> list[Entry]:
    """The paper's 32 Yahoo!/MSLR setups (``setups: paper``) or the listed datasets."""
    if exp.setups != "paper" or setup.data_from_command_line:
        return entries(exp.entries, setup)
    out = []
    for name in ("yahoo", "mslr"):
        for s in paper_setups(name):
            spec = DatasetSpec(name=name)
            title = f"{spec.label} [{s['feature_id']}] ({s['threshold']})"
            out.append(
                Entry(
                    DatasetSpec(name=name, title=title), FeatureGrouping(**s), "experiment.setups"
                )
            )
    return out


def setups_list(exp) -> tuple | None:
    """``dataset_list`` (:func:`.common.dataset_list`) of an experiment with ``setups``: the
    paper's setups (none of them plain) or the listed datasets."""
    if exp.setups != "paper":
        return dataset_list(exp)
    return "experiment.setups", (("yahoo", False), ("mslr", False))


def check_setups(exp) -> None:
    choice("setups", exp.setups, ("paper", "listed"))
    if exp.setups == "listed" and not exp.datasets:
        raise ParameterError("datasets", "a non-empty list with setups: listed", exp.datasets)


@dataclass
class Impact:
    """``experiment=impact``: ``setups`` (paper | listed), ``datasets`` (for listed),
    ``split`` (tabular regime), ``regimes`` (tabular and/or ltr), ``skip_missing``."""

    name: str = "impact"
    setups: str = "paper"
    datasets: list = field(default_factory=list)
    split: str = "train"
    regimes: list = field(default_factory=lambda: list(REGIMES))
    skip_missing: bool = True

    dataset_list = property(setups_list)  # the app's check of data overrides

    def __post_init__(self) -> None:
        check_common(self)
        check_setups(self)
        if isinstance(self.regimes, str) or not self.regimes:
            raise ParameterError("regimes", "a non-empty list of tabular, ltr", self.regimes)
        for r in self.regimes:
            choice("regimes", r, REGIMES)
        self.entries = parse_entries(self.datasets)

    def _tabular(self, setup, splits, title, beta):
        split = splits[self.split]
        res = tabular_step(
            setup, split, title, tag="impact", beta=beta, beta_std=_reference_std(beta)
        )
        return {"records": [r for r in res["records"] if r["condition"] == "biased"]}

    def _ltr(self, setup, run_dir, splits, prepared, title, beta):
        res = run_ltr(
            splits,
            beta=beta,
            bias=setup.bias,
            estimator=setup.estimator,
            diagnostics=setup.diagnostics,
            recipe=setup.recipe,
            conditions=("biased",),
            beta_std=_reference_std(beta),
            rng=rng_for(setup.seed, "impact-ltr", title, beta),
            seed=setup.seed,
            out_dir=run_dir.path / "models" / folder_name(title) / f"beta{beta}",
            dataset=title,
            prepared=prepared,
        )
        return {"records": [r for r in res.records if r["condition"] == "biased"]}

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped = [], []
        for entry, splits in available(
            setups(self, setup), skip_missing=self.skip_missing, skipped=skipped
        ):
            steps = {}  # per β: the tabular step, then the LTR step
            if "tabular" in self.regimes:
                steps["tab_{title}_beta{beta}"] = functools.partial(
                    self._tabular, setup, splits, entry.title
                )
            if "ltr" in self.regimes and "test" in splits:
                from groupbias.ltr.datamodule import PreparedSplits

                # normalized once, when the first LTR step asks; shared by every β
                prepared = PreparedSplits(splits, setup.recipe.batching.normalize)
                steps["ltr_{title}_beta{beta}"] = functools.partial(
                    self._ltr, setup, run_dir, splits, prepared, entry.title
                )
            records += step_records(run_dir, entry, steps, beta_grid(setup.bias.betas))
        for r in records:  # β = 1 is the full-information case of the figures
            if r["beta"] == 1.0:
                r["condition"] = "full"
        return {"records": records, "skipped": skipped}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        from groupbias.reporting.plots import plot_degradation

        recs = metrics["records"]
        for regime in REGIMES:
            sub = [r for r in recs if r["regime"] == regime]
            if sub:
                out = plot_degradation(
                    sub,
                    Path(run_dir) / f"impact_{regime}",
                    title=f"Impact of group bias ({regime} regime)",
                )
                print(f"[groupbias] figure: {out['png']}")
