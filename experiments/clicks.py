"""Learning to rank from click logs: position and group bias corrected together, against the
number of logged sessions.

Per dataset, β (``bias.betas``) and repetition: the group-biased attractiveness of the train
and valid splits is simulated once (β_q per query); the logging policy ranks them; for every
entry of ``sessions`` a click log of that many train sessions (and valid sessions in
proportion to the valid queries) is simulated, position propensities are estimated from it,
and the ranker is trained on each correction's labels (none / position / group / both,
:mod:`groupbias.pipelines.clicks`); a full-information ranker (true relevance) is trained
once per repetition. Every ranker ranks the test split: NDCG@10, ρ(DTR), Δ(EEL) against the
true labels; ``both`` gets paired t-tests against each other condition over the test queries
(each query's metric averaged over the repetitions first, so a query counts once).
Printed: a table per dataset and β; written: the figure ``clicks_<dataset>.{png,pdf}``
(metric against sessions, one line per condition, full information dashed) and, with
``save_logs``, the train click logs as Parquet.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from groupbias.app.setup import Setup
from groupbias.core.errors import ParameterError
from groupbias.core.io import write_text_atomic
from groupbias.core.validation import integer, real, sequence
from groupbias.evaluation.catalog import metric_keys
from groupbias.pipelines.clicks import (
    CORRECTIONS,
    ClickSettings,
    evaluate_ranker,
    labels_from_clicks,
    logging_scores,
    simulate_split_log,
    valid_labels,
)
from groupbias.pipelines.ltr import evaluation_spec, label_scale
from groupbias.pipelines.records import records_for
from groupbias.simulate.clicks import UserModel, check_log_size, write_click_log

from .common import (
    TABLE_METRICS,
    available,
    check_common,
    check_metrics,
    dataset_list,
    entries,
    folder_name,
    parse_entries,
    rng_for,
    with_validation,
)


def _lists(per_query: dict) -> dict:
    return {
        c: {m: np.asarray(v).tolist() for m, v in mets.items()} for c, mets in per_query.items()
    }


def _arrays(per_query: dict) -> dict:
    return {
        c: {
            m: np.asarray([np.nan if x is None else x for x in v], dtype=np.float64)
            for m, v in mets.items()
        }
        for c, mets in per_query.items()
    }


def per_query_mean(reps: list) -> np.ndarray:
    """Every query's mean over repetitions (NaN where no repetition has a value)."""
    stack = np.vstack(reps)
    ok = ~np.isnan(stack)
    total = np.where(ok, stack, 0.0).sum(axis=0)
    count = ok.sum(axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


#: the click model and logging policy a library user gets, and the experiments' defaults
DEFAULT_CLICKS = ClickSettings()


@dataclass
class ClickLogKeys:
    """The config keys of :class:`~groupbias.pipelines.clicks.ClickSettings` shared by
    ``experiment=clicks`` and ``experiment=drift``: its fields, the user model's as
    ``user_model`` (its kind), ``eta``, ``noise``, ``continuation``; the defaults are the
    settings' own (:data:`DEFAULT_CLICKS`); and their ``dataset_list`` (both list
    ``datasets``)."""

    dataset_list = property(dataset_list)  # the app's check of data overrides
    #: keys used only under another option (``DEPENDENT_KEYS`` of the app's build_setup)
    DEPENDENT_KEYS: ClassVar[dict[str, tuple]] = {
        "continuation": ("user_model", ("cascade",)),
        "logging_noise": ("logging", ("noisy_relevance", "noisy_attractiveness")),
        "labeled_fraction": ("logging", ("ranker",)),
        "intervention_rate": ("intervention", ("swap", "shuffle")),
    }

    positions: int = DEFAULT_CLICKS.positions
    user_model: str = DEFAULT_CLICKS.user.kind
    eta: float = DEFAULT_CLICKS.user.eta
    noise: float = DEFAULT_CLICKS.user.noise
    continuation: float = DEFAULT_CLICKS.user.continuation
    logging: str = DEFAULT_CLICKS.logging
    logging_noise: float = DEFAULT_CLICKS.logging_noise
    labeled_fraction: float = DEFAULT_CLICKS.labeled_fraction
    temperature: float = DEFAULT_CLICKS.temperature
    intervention: str = DEFAULT_CLICKS.intervention
    intervention_rate: float = DEFAULT_CLICKS.intervention_rate
    propensity: str = DEFAULT_CLICKS.propensity

    def click_settings(self) -> ClickSettings:
        """The validated settings of these keys (errors name the key)."""
        try:
            user = UserModel(self.user_model, self.eta, self.noise, self.continuation)
        except ParameterError as exc:  # the user model's kind is the key user_model
            if exc.name != "kind":
                raise
            raise ParameterError("user_model", exc.expected, exc.given) from None
        return ClickSettings(
            positions=self.positions,
            user=user,
            logging=self.logging,
            logging_noise=self.logging_noise,
            labeled_fraction=self.labeled_fraction,
            temperature=self.temperature,
            intervention=self.intervention,
            intervention_rate=self.intervention_rate,
            propensity=self.propensity,
        )


@dataclass
class Clicks(ClickLogKeys):
    """``experiment=clicks`` (module docstring). ``sessions``: train-log sizes;
    ``repetitions``; the click model: ``positions``, ``user_model`` (pbm | cascade), ``eta``,
    ``noise``, ``continuation``; the logging policy: ``logging`` (noisy_relevance |
    noisy_attractiveness | ranker), ``logging_noise``, ``labeled_fraction``, ``temperature``,
    ``intervention`` (none | swap | shuffle), ``intervention_rate``; ``propensity`` (harvest
    | em); ``save_logs``; ``alpha`` of the table's markers; ``metrics``; ``skip_missing``;
    ``valid_fraction``; ``datasets``."""

    name: str = "clicks"
    sessions: list = field(default_factory=lambda: [1000, 10_000, 100_000, 1_000_000])
    repetitions: int = 1
    save_logs: bool = True
    alpha: float = 0.01
    metrics: list = field(default_factory=lambda: list(TABLE_METRICS))
    skip_missing: bool = True
    valid_fraction: float = 0.2
    datasets: list = field(default_factory=list)

    def __post_init__(self) -> None:
        check_common(self)
        self.sessions = list(
            sequence(
                "sessions",
                self.sessions,
                lambda n, v: integer(n, v, low=1),
                what="a list of session counts >= 1",
            )
        )
        if not isinstance(self.save_logs, bool):
            raise ParameterError("save_logs", "true or false", self.save_logs)
        real("valid_fraction", self.valid_fraction, low=0.0, high=1.0, high_open=True)
        self.settings = self.click_settings()
        for n in self.sessions:  # before any data is read
            check_log_size(n, self.positions, name="sessions")
        self.metrics, _ = check_metrics(self.metrics, [])
        self.entries = parse_entries(self.datasets, required=True)

    # ------------------------------------------------------------------ one step each

    def _world(self, splits, setup: Setup, title: str, beta: float, rep: int):
        """Simulated attractiveness and logging scores of train and valid (fixed for every
        session count of one repetition)."""
        rng = rng_for(setup.seed, "clicks-world", title, beta, rep)
        scale = label_scale(splits)
        world = {}
        for split in ("train", "valid"):
            if split not in splits:
                continue
            data = splits[split]
            sim = setup.bias.simulate(data, beta=beta, rng=rng, label_max=scale)
            scores = logging_scores(data, sim.relevance, sim.attractiveness, self.settings, rng)
            world[split] = (data, sim, scores)
        return world

    def _full(self, splits, setup: Setup, run_dir, title: str, rep: int) -> dict:
        from groupbias.ltr.train import train_ranker  # torch: only where a ranker is trained

        scale = label_scale(splits)
        train, valid, test = splits["train"], splits.get("valid"), splits["test"]
        spec = evaluation_spec(test, scale=scale, bias=setup.bias, metrics=self.metrics)
        out = run_dir.path / "models" / folder_name(title) / f"rep{rep}" / "full"
        ranker = train_ranker(
            train,
            valid,
            recipe=setup.recipe,
            train_labels=train.labels,
            valid_labels=None if valid is None else valid.labels,
            seed=setup.seed + rep,
            out_dir=out,
        )
        return {"per_query": _lists({"full": evaluate_ranker(ranker, test, spec, out)})}

    def _sessions(self, splits, setup: Setup, run_dir, *, title, beta, rep, n) -> dict:
        from groupbias.ltr.train import train_ranker  # torch: only where a ranker is trained

        world = self._world(splits, setup, title, beta, rep)
        rng = rng_for(setup.seed, "clicks-log", title, beta, rep, n)
        logs = {}
        n_train_q = splits["train"].n_queries
        for split, (data, sim, scores) in world.items():
            count = n if split == "train" else max(1, round(n * data.n_queries / n_train_q))
            logs[split] = simulate_split_log(
                data,
                relevance=sim.relevance,
                beta_query=sim.beta_query,
                scores=scores,
                n_sessions=count,
                settings=self.settings,
                rng=rng,
            )
        folder = (
            run_dir.path / "models" / folder_name(title) / f"beta{beta}" / f"rep{rep}" / f"n{n}"
        )
        if self.save_logs:
            write_click_log(folder / "train_clicks.parquet", logs["train"])
        train, valid, test = splits["train"], splits.get("valid"), splits["test"]
        fitted = labels_from_clicks(
            logs["train"],
            train,
            estimator=setup.estimator,
            rng=rng,
            settings=self.settings,
            relevance=world["train"][1].relevance,
        )
        vl = valid_labels(logs["valid"], valid, fitted, self.settings) if valid else {}
        scale = label_scale(splits)
        spec = evaluation_spec(test, scale=scale, bias=setup.bias, metrics=self.metrics)
        per_query = {}
        for cond in CORRECTIONS:
            ranker = train_ranker(
                train,
                valid,
                recipe=setup.recipe,
                train_labels=fitted.labels[cond] * scale,
                valid_labels=vl[cond] * scale if valid else None,
                seed=setup.seed + rep,
                out_dir=folder / cond,
            )
            per_query[cond] = evaluate_ranker(ranker, test, spec, folder / cond)
        truth = UserModel(self.user_model, self.eta).examination(self.positions)
        return {
            "per_query": _lists(per_query),
            "theta_hat": fitted.position.theta.tolist(),
            "theta_error": float(np.max(np.abs(fitted.position.theta / truth - 1))),
            "beta_hat": fitted.beta_hat,
            "observed": float(fitted.observed.mean()),
        }

    # ------------------------------------------------------------------ run / present

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped = [], []
        for entry, splits in available(
            entries(self.entries, setup), skip_missing=self.skip_missing, skipped=skipped
        ):
            title = entry.title
            splits = with_validation(splits, self.valid_fraction, seed=setup.seed, title=title)
            key = entry.step_key
            full = [
                _arrays(
                    run_dir.step(
                        f"clicks_{folder_name(title)}_full_rep{rep}",
                        functools.partial(self._full, splits, setup, run_dir, title, rep),
                        key={**key, "rep": rep},
                    )["per_query"]
                )["full"]
                for rep in range(self.repetitions)
            ]
            for beta in setup.bias.betas:
                for n in self.sessions:
                    records += self._records(splits, setup, run_dir, title, key, beta, n, full)
        return {"records": records, "skipped": skipped}

    def _records(self, splits, setup, run_dir, title, key, beta, n, full) -> list:
        steps = [
            run_dir.step(
                f"clicks_{folder_name(title)}_beta{beta}_n{n}_rep{rep}",
                functools.partial(
                    self._sessions, splits, setup, run_dir, title=title, beta=beta, rep=rep, n=n
                ),
                key={**key, "beta": beta, "n": n, "rep": rep},
            )
            for rep in range(self.repetitions)
        ]
        per_query = {"full": {m: per_query_mean([f[m] for f in full]) for m in full[0]}}
        for cond in CORRECTIONS:
            parts = [_arrays(s["per_query"])[cond] for s in steps]
            per_query[cond] = {m: per_query_mean([p[m] for p in parts]) for m in parts[0]}
        base = {"dataset": title, "beta": float(beta), "n_sessions": int(n)}
        recs = records_for(per_query, base=base, focus="both")
        recs.append(
            {
                **base,
                "metric": "theta_error",
                "condition": "position",
                "value": float(np.mean([s["theta_error"] for s in steps])),
            }
        )
        for cond in ("group", "both"):
            recs.append(
                {
                    **base,
                    "metric": "beta_hat",
                    "condition": cond,
                    # a stored NaN (no estimate) reads back as None
                    "value": float(np.mean(np.array([s["beta_hat"][cond] for s in steps], float))),
                }
            )
        return recs

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        import pandas as pd

        df = pd.DataFrame(metrics["records"])
        if df.empty:
            print("[groupbias] clicks: no dataset available;", *metrics.get("skipped", []))
            return
        cols = metric_keys(list(self.metrics))
        text = clicks_table(df, cols, alpha=self.alpha)
        write_text_atomic(Path(run_dir) / "clicks.txt", text)
        print(text, end="")
        for ds in df["dataset"].unique():
            stem = Path(run_dir) / f"clicks_{folder_name(ds)}"
            out = plot_clicks(df[df["dataset"] == ds], stem, ds, cols)
            print(f"[groupbias] figure: {out['png']}")


def clicks_table(df, metric_cols, *, alpha: float) -> str:
    """Per dataset and β: rows (sessions, condition), metric columns; ``both`` marks ``>``
    (``<``) where it is significantly better than position-only / group-only (paired t-test,
    p < alpha): ``p`` for position, ``g`` for group."""
    better = {m: (-1 if m.startswith("delta_eel") else 1) for m in metric_cols}
    lines = []
    for (ds, beta), part in df.groupby(["dataset", "beta"], sort=False):
        lines.append(f"\n{ds}, β = {beta}: test metrics of rankers trained from clicks")
        lines.append(
            f"{'sessions':>9} {'condition':<9} "
            + " ".join(f"{m:>14}" for m in metric_cols)
            + f" {'θ̂ err':>7} {'β̂':>6}"
        )
        for n, rows in part.groupby("n_sessions"):
            extra = rows.set_index(["metric", "condition"])["value"]
            for cond in ("full", *CORRECTIONS):
                cells = []
                for m in metric_cols:
                    r = rows[(rows["metric"] == m) & (rows["condition"] == cond)]
                    if r.empty:
                        cells.append(f"{'':>14}")
                        continue
                    r = r.iloc[0]
                    mark = ""
                    for other, tag in (("position", "p"), ("group", "g")):
                        p = r.get(f"p_vs_{other}")
                        if cond == "both" and p is not None and p == p and p < alpha:
                            ref = rows[(rows["metric"] == m) & (rows["condition"] == other)]
                            if (r["value"] - ref["value"].iloc[0]) * better[m] > 0:
                                mark += tag
                    cells.append(f"{r['value']:>11.4f}{mark:<3}")
                th = extra.get(("theta_error", "position")) if cond == "position" else None
                bh = extra.get(("beta_hat", cond)) if cond in ("group", "both") else None
                lines.append(
                    f"{n:>9} {cond:<9} "
                    + " ".join(cells)
                    + (f" {th:>7.3f}" if th is not None else f" {'':>7}")
                    + (f" {bh:>6.3f}" if bh is not None else "")
                )
    lines.append(
        f"\np / g after a value of 'both': significantly better than position-only / "
        f"group-only (paired t-test over test queries, p < {alpha}); θ̂ err: largest "
        "relative error of the estimated position propensities."
    )
    return "\n".join(lines) + "\n"


def plot_clicks(df, stem: Path, title: str, metric_cols) -> dict:
    """Metric against sessions (log x), one line per condition, full information dashed;
    one panel per entry of ``metric_cols`` (per-group variants left out)."""
    import matplotlib.pyplot as plt

    from groupbias.reporting.plots import save_figure

    present = set(df["metric"])
    metrics = [m for m in metric_cols if m in present and ":" not in m]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        part = df[df["metric"] == m]
        for cond in ("none", "position", "group", "both", "full"):
            rows = part[part["condition"] == cond].sort_values("n_sessions")
            for beta, br in rows.groupby("beta"):
                ax.plot(
                    br["n_sessions"],
                    br["value"],
                    "--" if cond == "full" else "-o",
                    label=f"{cond} (β={beta})" if rows["beta"].nunique() > 1 else cond,
                    markersize=3,
                )
        ax.set_xscale("log")
        ax.set_xlabel("sessions in the click log")
        ax.set_title(m)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{title}: rankers trained from clicks")
    fig.tight_layout()
    return save_figure(fig, stem)
