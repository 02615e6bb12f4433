"""Estimator robustness: groups of unequal merit and heterogeneous per-query propensities.

Part 1 (unequal merit): for every dataset, affected/non-affected utility ratio, β and
repetition, one simulation (β_q ~ N(β, σ_β)); every configured estimator estimates β̂ on it,
corrects, and records ``abs_error = |β̂ - β|`` and the corrected ρ(DTR) and Δ(EEL) (biased
values beside). The synthetic dataset reaches each ratio through its generator's
``utility_ratio``; other datasets by removing affected items at random
(:func:`groupbias.simulate.merit.at_utility_ratio`).

Part 2 (Fig. 9 settings): on the first dataset at its own ratio, per-query propensities with
σ_β 0.2 / 0.3 and two modes; per estimator of ``fig9_estimators`` the per-query error
``mean_q |β̂_q - β_q|``.

Figures: ``estimator_robustness_<dataset>.{png,pdf}`` (rows |β̂ - β|, ρ(DTR), Δ(EEL) against
the ratio, one column per β, one line per estimator, mean ± std over repetitions) and
``estimator_fig9.{png,pdf}``.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.config import build
from groupbias.app.setup import Setup
from groupbias.core.errors import ParameterError
from groupbias.core.io import write_text_atomic
from groupbias.core.validation import integer, real, sequence
from groupbias.estimate.estimators import estimate_simulated
from groupbias.pipelines.records import record_base
from groupbias.pipelines.tabular import correct_and_evaluate
from groupbias.simulate.merit import at_utility_ratio

from .common import (
    available,
    check_common,
    dataset_list,
    entries,
    parse_entries,
    rng_for,
    step_records,
)

METRICS = ("rho_dtr", "delta_eel")


def _estimators(nodes, key: str) -> dict:
    if not isinstance(nodes, dict) or not nodes:
        raise ParameterError(key, "a mapping name -> estimator config with _target_", nodes)
    return {str(name): build(node, f"{key}.{name}") for name, node in nodes.items()}


def _ratio_data(entry, data, ratio: float, rng, split: str):
    """The dataset at utility ratio ``ratio``: the synthetic generator's knob, else random
    removal of affected items."""
    spec = entry.dataset
    if "utility_ratio" in spec.info.option_names():
        params = {**(spec.params or {}), "utility_ratio": float(ratio)}
        splits = dataclasses.replace(spec, params=params).load(only=(split,))
        return entry.grouping.apply(splits, spec.info)[split]
    return at_utility_ratio(data, ratio, rng=rng)[0]


@dataclass
class EstimatorRobustness:
    """``experiment=estimator_robustness``: ``ratios`` of the affected group's mean utility
    to the other's; ``betas``; ``estimators``: name -> estimator config; ``repetitions``;
    ``split``; ``fig9_stds`` and ``fig9_modes``: the heterogeneous settings of part 2, judged
    for ``fig9_estimators``; ``datasets``: names or mappings (skipped when absent)."""

    trains_ranker = False  # tabular regime only: the ranker groups are not built

    name: str = "estimator_robustness"
    split: str = "train"
    ratios: list = field(default_factory=lambda: [1.0, 0.9, 0.8, 0.7, 0.6])
    betas: list = field(default_factory=lambda: [1.0, 0.8, 0.6])
    repetitions: int = 3
    estimators: dict = field(default_factory=dict)
    fig9_stds: list = field(default_factory=lambda: [0.2, 0.3])
    fig9_modes: list = field(default_factory=lambda: [0.6, 0.8])
    fig9_estimators: dict = field(default_factory=dict)
    skip_missing: bool = True
    datasets: list = field(default_factory=list)

    dataset_list = property(dataset_list)  # the app's check of data overrides

    def __post_init__(self) -> None:
        check_common(self)
        unit = dict(low=0.0, low_open=True)
        sequence("ratios", self.ratios, lambda n, v: real(n, v, **unit), what="ratios > 0")
        sequence("betas", self.betas, lambda n, v: real(n, v, high=1.0, **unit), what="betas")
        integer("repetitions", self.repetitions, low=1)
        std = dict(low=0.0)
        sequence("fig9_stds", self.fig9_stds, lambda n, v: real(n, v, **std), what="stds >= 0")
        sequence(
            "fig9_modes",
            self.fig9_modes,
            lambda n, v: real(n, v, high=1.0, **unit),
            what="two betas",
            allow_empty=True,
        )
        self.built = _estimators(self.estimators, "estimators")
        fig9 = self.fig9_estimators
        self.fig9_built = _estimators(fig9, "fig9_estimators") if fig9 else {}
        self.entries = parse_entries(self.datasets, required=True)

    # ------------------------------------------------------------------ part 1
    def _merit_step(self, setup, entry, data, ratio, beta, rep):
        tag = (setup.seed, self.name, entry.title, ratio, beta, rep)
        d = _ratio_data(entry, data, ratio, rng_for(*tag, "data"), self.split)
        bias = dataclasses.replace(setup.bias, betas=(beta,))
        sim = bias.simulate(d, beta=beta, rng=rng_for(*tag, "sim"))
        out = []
        for name, est in self.built.items():
            base = {
                **record_base(entry.title, "tabular", beta, bias, est),
                "estimator": name,
                "ratio": float(ratio),
                "repetition": rep,
            }
            e = estimate_simulated(est, d, sim, rng=rng_for(*tag, name))
            *_, recs = correct_and_evaluate(d, sim, e, base=base, metrics=METRICS)
            out += [r for r in recs if r["metric"] in METRICS]
            err = float(np.nanmean(np.abs(e.beta_hat_per_query - beta)))
            out.append({**base, "metric": "abs_error", "condition": "estimate", "value": err})
        return {"records": out}

    # ------------------------------------------------------------------ part 2
    def _fig9_step(self, setup, entry, data, setting, rep):
        kind, value = setting
        if kind == "two_mode":
            bias = dataclasses.replace(setup.bias, variant="two_mode", modes=tuple(value))
        else:
            bias = dataclasses.replace(setup.bias, beta_std=float(value))
        beta = float(np.mean(value)) if kind == "two_mode" else 0.8
        tag = (setup.seed, self.name, "fig9", entry.title, kind, str(value), rep)
        sim = bias.simulate(data, beta=beta, rng=rng_for(*tag, "sim"))
        out = []
        for name, est in self.fig9_built.items():
            e = estimate_simulated(est, data, sim, rng=rng_for(*tag, name))
            err = np.abs(e.beta_hat_per_query - sim.beta_query)
            label = "two modes" if kind == "two_mode" else f"σ_β = {value:g}"
            out.append(
                {
                    "dataset": entry.title,
                    "setting": label,
                    "estimator": name,
                    "repetition": rep,
                    "metric": "per_query_error",
                    "condition": "estimate",
                    "value": float(np.nanmean(err)),
                }
            )
        return {"records": out}

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped, first = [], [], None
        listed = entries(self.entries, setup)
        for entry, splits in available(
            listed, skip_missing=self.skip_missing, skipped=skipped, only=(self.split,)
        ):
            data = splits[self.split]
            first = first or (entry, data)
            grid = [
                {"ratio": ratio, "beta": beta, "rep": rep}
                for ratio in self.ratios
                for beta in self.betas
                for rep in range(self.repetitions)
            ]
            step = functools.partial(self._merit_step, setup, entry, data)
            records += step_records(
                run_dir, entry, {"{title}_r{ratio}_b{beta}_rep{rep}": step}, grid
            )
        if first is not None and self.fig9_built:
            settings = [("std", s) for s in self.fig9_stds]
            if self.fig9_modes:
                settings.append(("two_mode", list(self.fig9_modes)))
            entry, data = first
            for setting in settings:
                for rep in range(self.repetitions):
                    records += run_dir.step(
                        f"fig9_{setting[0]}{setting[1]}_rep{rep}",
                        lambda s=setting, k=rep: self._fig9_step(setup, entry, data, s, k),
                        key={"setting": str(setting), "rep": rep},
                    )["records"]
        return {"records": records, "skipped": skipped}

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        import pandas as pd

        from groupbias.reporting.plots import plot_fig9_errors, plot_robustness

        df = pd.DataFrame(metrics["records"])
        if df.empty:
            print(
                "[groupbias] estimator_robustness: no dataset available;",
                *metrics.get("skipped", []),
            )
            return
        merit = df[df["metric"] == "abs_error"]
        table = merit.pivot_table(
            index=["dataset", "ratio"], columns=["beta", "estimator"], values="value"
        ).sort_index(ascending=[True, False])
        text = "|β̂ − β| (mean over repetitions)\n" + table.round(3).to_string() + "\n"
        fig9 = df[df["metric"] == "per_query_error"]
        if not fig9.empty:
            t9 = fig9.pivot_table(index="setting", columns="estimator", values="value")
            text += "\nper-query mean |β̂_q − β_q| (Fig. 9 settings)\n" + t9.round(3).to_string()
            text += "\n"
            plot_fig9_errors(fig9, Path(run_dir) / "estimator_fig9")
        for ds in merit["dataset"].unique():
            plot_robustness(
                df[df["dataset"] == ds],
                Path(run_dir) / f"estimator_robustness_{_slug(ds)}",
                title=str(ds),
            )
        write_text_atomic(Path(run_dir) / "estimator_robustness.txt", text)
        print(text, end="")
        print(f"[groupbias] figures written to {run_dir}")


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s).strip("_").lower()
