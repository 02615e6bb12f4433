"""Group bias that drifts over a click log's time line: tracking β_t and finding the change.

Per dataset (its ``split``) and drift schedule of ``drifts`` (linear: ``start`` → ``end``;
step: ``start`` before the share ``at`` of the log, ``end`` after): per-query propensities
β_q are drawn around ``start`` (``bias`` group), moved along the schedule, and ``sessions``
sessions are logged (the click model and logging policy of ``experiment=clicks``). From the
log alone: position propensities θ̂ (intervention harvesting or EM), the level β̂ of the
whole log (the configured estimator on the position-debiased attractiveness), then
:mod:`groupbias.estimate.drift`'s sliding-window and EWMA tracks of β̂_t and the CUSUM change-point
test. Recorded: the mean absolute error of each track against the schedule β(t) (after
the first ``window`` sessions), for a step the sessions each track needs to settle within
``tolerance`` of the new value, and the detected change (session, p-value, β̂ before and
after). Figure ``drift_<dataset>.{png,pdf}``: true vs estimated β_t, one panel per schedule (the
tracks from the ``window``-th session on).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from groupbias.app.setup import Setup
from groupbias.core.errors import ParameterError
from groupbias.core.io import write_text_atomic
from groupbias.core.validation import choice, integer, real, sequence
from groupbias.estimate.drift import (
    detect_change,
    ewma_beta,
    group_click_series,
    settling_sessions,
    sliding_beta,
)
from groupbias.pipelines.clicks import labels_from_clicks, logging_scores
from groupbias.pipelines.ltr import label_scale
from groupbias.simulate.clicks import DRIFTS, Drift, check_log_size, simulate_click_log

from .clicks import ClickLogKeys
from .common import available, check_common, entries, folder_name, parse_entries, rng_for

#: where the tracks' level comes from: the groups' mean ratio itself, or the estimator
LEVELS = ("ratio", "estimator")
#: points of each track kept for the figure
FIGURE_POINTS = 400


@dataclass
class DriftExperiment(ClickLogKeys):
    """``experiment=drift`` (module docstring): ``sessions``; ``drifts`` (linear | step),
    ``start``, ``end``, ``at``; the trackers' ``window``, ``half_life`` (sessions),
    ``bins`` of the change test, ``tolerance`` of settling, ``level`` (ratio: the tracks
    are the groups' mean-attractiveness ratio, which assumes equal mean utility; estimator:
    the ratio rescaled to the estimator's β̂ of the whole log); the click model and logging
    policy keys of ``experiment=clicks``; ``split``; ``alpha`` of the change test;
    ``skip_missing``; ``datasets``."""

    trains_ranker = False  # the ranker groups are not built

    name: str = "drift"
    sessions: int = 200_000
    drifts: list = field(default_factory=lambda: ["step", "linear"])
    start: float = 0.8
    end: float = 0.6
    at: float = 0.5
    window: int = 10_000
    half_life: float = 5_000.0
    bins: int = 100
    tolerance: float = 0.05
    level: str = "ratio"
    split: str = "train"
    alpha: float = 0.01
    skip_missing: bool = True
    datasets: list = field(default_factory=list)

    def __post_init__(self) -> None:
        check_common(self)
        integer("sessions", self.sessions, low=100)
        self.drifts = list(
            sequence(
                "drifts",
                self.drifts,
                lambda n, v: choice(n, v, tuple(d for d in DRIFTS if d != "none")),
                what="a list of schedules among linear, step",
            )
        )
        for key in ("start", "end"):
            real(key, getattr(self, key), low=0.0, high=1.0, low_open=True)
        real("at", self.at, low=0.0, high=1.0, low_open=True, high_open=True)
        integer("window", self.window, low=1, high=self.sessions)
        real("half_life", self.half_life, low=0.0, low_open=True)
        integer("bins", self.bins, low=4, high=self.sessions)
        real("tolerance", self.tolerance, low=0.0, low_open=True)
        choice("level", self.level, LEVELS)
        self.settings = self.click_settings()
        check_log_size(self.sessions, self.positions, name="sessions")  # before any data
        self.entries = parse_entries(self.datasets, required=True)

    def _one(self, data, setup: Setup, *, title: str, kind: str, scale: float) -> dict:
        rng = rng_for(setup.seed, "drift", title, kind)
        sim = setup.bias.simulate(data, beta=self.start, rng=rng, label_max=scale)
        scores = logging_scores(data, sim.relevance, sim.attractiveness, self.settings, rng)
        drift = Drift(kind, self.start, self.end, self.at)
        out = simulate_click_log(
            sim.relevance,
            data.groups,
            qptr=data.qptr,
            logging_scores=scores,
            n_sessions=self.sessions,
            rng=rng,
            beta_query=sim.beta_query,
            beta_mean=self.start,
            drift=drift,
            **self.settings.simulation_options(),
        )
        fitted = labels_from_clicks(
            out.log,
            data,
            estimator=setup.estimator,
            rng=rng,
            settings=self.settings,
            conditions=("both",),
            relevance=sim.relevance,
        )
        level = fitted.beta_hat["both"] if self.level == "estimator" else None
        series = group_click_series(
            out.log, data.groups, qptr=data.qptr, propensity=fitted.position.theta
        )
        tracks = {
            "sliding": sliding_beta(series, self.window, level=level),
            "ewma": ewma_beta(series, self.half_life, level=level),
        }
        truth = out.beta_schedule
        cp = detect_change(series, bins=self.bins, level=level)
        change = int(round(self.at * self.sessions))
        result: dict = {
            "level": fitted.beta_hat["both"] if level is None else level,
            "change": cp.__dict__,
            "tracks": {},
        }
        keep = np.linspace(0, self.sessions - 1, FIGURE_POINTS).round().astype(int)
        result["tracks"]["truth"] = truth[keep].tolist()
        result["tracks"]["session"] = keep.tolist()
        result["tracks"]["change_session"] = [cp.session]
        for name, est in tracks.items():
            result["tracks"][name] = est[keep].tolist()
            result[f"mae_{name}"] = float(np.nanmean(np.abs(est - truth)[self.window :]))
            if kind == "step":
                result[f"settle_{name}"] = settling_sessions(
                    est, change=change, target=self.end, tolerance=self.tolerance
                )
        return result

    def run(self, setup: Setup, run_dir) -> dict:
        records, skipped, tracks = [], [], {}
        for entry, splits in available(
            entries(self.entries, setup),
            skip_missing=self.skip_missing,
            skipped=skipped,
            only=(self.split,),
        ):
            title, data = entry.title, splits[self.split]
            if data.groups is None:
                raise ParameterError("datasets", "grouped data", title)
            for kind in self.drifts:
                res = run_dir.step(
                    f"drift_{folder_name(title)}_{kind}",
                    functools.partial(
                        self._one, data, setup, title=title, kind=kind, scale=label_scale(splits)
                    ),
                    key=entry.step_key,
                )
                tracks[f"{title}|{kind}"] = res["tracks"]
                records += self._records(res, title, kind)
        return {"records": records, "skipped": skipped, "tracks": tracks}

    def _records(self, res: dict, title: str, kind: str) -> list:
        base = {"dataset": title, "drift": kind, "start": self.start, "end": self.end}
        cp = res["change"]
        recs = [
            {**base, "metric": "beta_level", "value": res["level"]},
            {
                **base,
                "metric": "change_session",
                "value": float(cp["session"]),
                "p_value": cp["p_value"],
            },
            {**base, "metric": "beta_before", "value": cp["before"]},
            {**base, "metric": "beta_after", "value": cp["after"]},
        ]
        for name in ("sliding", "ewma"):
            recs.append({**base, "metric": f"mae_{name}", "value": res[f"mae_{name}"]})
            if f"settle_{name}" in res:
                settle = res[f"settle_{name}"]
                value = None if settle is None else float(settle)
                recs.append({**base, "metric": f"settle_{name}", "value": value})
        return recs

    def present(self, setup: Setup, metrics: dict, run_dir: Path) -> None:
        recs = metrics["records"]
        if not recs:
            print("[groupbias] drift: no dataset available;", *metrics.get("skipped", []))
            return
        text = drift_text(recs, self)
        write_text_atomic(Path(run_dir) / "drift.txt", text)
        print(text, end="")
        for ds in dict.fromkeys(r["dataset"] for r in recs):
            panels = {
                k.split("|", 1)[1]: v
                for k, v in metrics["tracks"].items()
                if k.startswith(f"{ds}|")
            }
            out = plot_drift(panels, Path(run_dir) / f"drift_{folder_name(ds)}", ds, self)
            print(f"[groupbias] figure: {out['png']}")


def drift_text(recs: list, exp: DriftExperiment) -> str:
    lines = [
        f"\nβ drifting from {exp.start} to {exp.end} over {exp.sessions:,} sessions "
        f"(window {exp.window:,}, EWMA half-life {exp.half_life:g}, tolerance {exp.tolerance})"
    ]
    for r in recs:
        extra = f"  (p = {r['p_value']:.2g})" if "p_value" in r else ""
        v = r["value"]
        shown = "never" if v is None else f"{v:.4g}"
        lines.append(f"{r['dataset']:<12} {r['drift']:<7} {r['metric']:<15} {shown}{extra}")
    lines.append(
        f"mae: mean |β̂_t − β(t)|; settle: sessions after the step until the track stays within "
        f"{exp.tolerance} of {exp.end}; change_session: the CUSUM test's change point "
        f"(true: {round(exp.at * exp.sessions):,} for the step)"
    )
    return "\n".join(lines) + "\n"


def plot_drift(panels: dict, stem: Path, title: str, exp: DriftExperiment) -> dict:
    import matplotlib.pyplot as plt

    from groupbias.reporting.plots import save_figure

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.4), squeeze=False)
    for ax, (kind, tr) in zip(axes[0], panels.items()):
        x = np.asarray(tr["session"])
        warm = x >= exp.window  # the tracks once a full window of sessions is in
        ax.plot(x, tr["truth"], "k-", lw=2, label="true β(t)")
        ax.plot(x[warm], np.asarray(tr["sliding"])[warm], "-", label=f"sliding ({exp.window:,})")
        ax.plot(
            x[warm], np.asarray(tr["ewma"])[warm], "-", label=f"EWMA (½-life {exp.half_life:g})"
        )
        ax.axvline(tr["change_session"][0], color="grey", ls=":", label="detected change")
        ax.set_title(f"{kind}")
        ax.set_xlabel("session")
        ax.set_ylabel("β")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{title}: true vs estimated β_t")
    fig.tight_layout()
    return save_figure(fig, stem)
