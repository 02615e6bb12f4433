"""Keys that scale memory or time, checked while the configuration is built (before any data
is read): a value whose arrays cannot fit in this machine's memory, threads beyond the cores
this process may use, or work that would take longer than :data:`MAX_RUN_S` is refused naming
the key and the figure it would need; work longer than ``warn_after_s`` is a warning with the
estimate.

The estimates are lower bounds from unit costs far below the ones measured (one β̂ estimate
took 10 ms on 10 queries of 20 items, 27 ms on 200, on 2 cores: :data:`S_PER_ESTIMATE` is
2 ms), so an ordinary run is never warned about, and what is refused would take at least the
time said. The data's size is not known yet: a figure per query is for one query.

=========================== ===================================================================
key                         what it scales
=========================== ===================================================================
``trainer.threads``         torch's threads (more than the cores: 1000 gave a MemoryError)
``evaluation.exposure_...`` the sampler's threads (``exposure_workers``)
``evaluation.sessions``     the PPG learner's copies of a query: a (sessions · top_n)² pair
                            matrix per query, and its time
``estimator.bias_boot``     β̂ estimates of the bootstrap bias correction, per β̂
``estimator.bootstrap``     β̂ estimates of the confidence interval, per β̂
``estimator.auto_boot``     β̂ estimates of ``cluster_size: auto``, per β̂
``experiment.n_queries``    the items an experiment simulates itself (``theory``)
``evaluation.samples``      the Monte-Carlo rankings of a policy, per query
``evaluation.epochs``       a learned policy's epochs × ``train_samples``, per query
``experiment.repetitions``  the steps: repetitions × the lengths of the experiment's lists
and the lists                (``bias.betas``, ``experiment.cluster_sizes``, ``.sessions``,
                            ``.datasets``); each step is held in memory before it runs
=========================== ===================================================================
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from .._fast.threads import cores
from ..core.errors import ConfigError, GroupBiasWarning
from ..core.memory import check_fits
from ..core.progress import rough_duration

#: the longest work the command starts (seconds, 7 days): longer is refused
MAX_RUN_S = 7 * 86400
#: lower bound of one β̂ estimate (seconds; 10 ms measured on 10 queries of 20 items)
S_PER_ESTIMATE = 2e-3
#: lower bound of one step of an experiment (seconds)
S_PER_STEP = 1e-3
#: bytes a step of an experiment holds before it runs (its entry in the list of steps)
BYTES_PER_STEP = 200
#: lower bound of one PPG session of one query (seconds; 0.1 s measured: 0.4 s per query
#: of 20 candidates with 4 sessions)
S_PER_PPG_SESSION = 0.01
#: bytes an item simulated by the experiment itself holds (``experiment=theory``: labels,
#: groups, attractiveness, ranks, float64 and int64 arrays)
BYTES_PER_ITEM = 48
#: lower bound of one sampled ranking of one query (seconds) for a policy's Monte Carlo
S_PER_SAMPLE = 1e-7
#: the experiment's keys whose list lengths multiply its steps
STEP_LISTS = ("cluster_sizes", "sessions", "datasets")


def check_resources(c: Mapping, *, trains: bool, warn_after_s) -> None:
    """Check the resource keys of the plain config ``c`` (module docstring)."""
    ev, est, exp = (c.get(k) or {} for k in ("evaluation", "estimator", "experiment"))
    threads = [("evaluation.exposure_workers", ev.get("exposure_workers"))]
    if trains:
        threads.append(("trainer.threads", (c.get("trainer") or {}).get("threads")))
    for key, n in threads:
        if isinstance(n, int) and not isinstance(n, bool) and n > cores():
            raise ConfigError(
                key,
                f"{n} threads, more than the {cores()} cores this process may use",
                hint=f"set {key}=null (every core) or a number up to {cores()}",
            )
    steps, step_keys = _steps(c, exp)
    made = f"{steps:,} steps ({' × '.join(step_keys)})"
    _fits(c, step_keys[0], steps * BYTES_PER_STEP, f"the list of {made}")
    costs = [(step_keys[0], steps * S_PER_STEP, made)]
    per_estimate = _estimates(est)
    costs += [
        (k, n * S_PER_ESTIMATE * steps, f"{n:,} β̂ estimates in each of {made}")
        for k, n in per_estimate
    ]
    sessions = ev.get("sessions")
    if ev.get("learner") == "ppg" and ev.get("learn") and isinstance(sessions, int):
        top_n = ev["top_n"] if isinstance(ev.get("top_n"), int) else 20
        pairs = (sessions * top_n) ** 2
        _fits(c, "evaluation.sessions", pairs * 8.0, f"the pair matrix of {top_n} items")
        costs.append(("evaluation.sessions", sessions * S_PER_PPG_SESSION, "one query's learner"))
    costs += _per_query(c, ev, exp)
    for key, seconds, what in costs:
        _in_time(key, _given(c, key), seconds, what, warn_after_s)


def _per_query(c: Mapping, ev: Mapping, exp: Mapping) -> list[tuple[str, float, str]]:
    """The experiment's own simulated queries (``experiment.n_queries``: their arrays must
    fit), and the time one query's policy takes (``evaluation.samples``, ``.epochs``)."""
    n_queries = exp.get("n_queries")
    if _count(n_queries):
        items = n_queries * sum(exp.get(k, 0) for k in ("n_N", "n_A") if _count(exp.get(k)))
        _fits(c, "experiment.n_queries", items * BYTES_PER_ITEM, f"{items:,} simulated items")
    costs = []
    if ev.get("mode") == "policy" and _count(ev.get("samples")):
        costs.append(("evaluation.samples", ev["samples"] * S_PER_SAMPLE, "one query's sampling"))
    if ev.get("mode") == "policy" and ev.get("learn") and _count(ev.get("epochs")):
        draws = ev["epochs"] * (ev["train_samples"] if _count(ev.get("train_samples")) else 1)
        costs.append(("evaluation.epochs", draws * S_PER_SAMPLE, "one query's learner"))
    return costs


def _count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _steps(c: Mapping, exp: Mapping) -> tuple[int, list[str]]:
    """The steps of the experiment (a lower bound): repetitions × the lengths of its lists
    and of ``bias.betas``; and the keys that make them."""
    steps, keys = 1, []
    reps = exp.get("repetitions")
    if isinstance(reps, int) and reps > 1:
        steps, keys = reps, ["experiment.repetitions"]
    lists = [(f"experiment.{k}", exp.get(k)) for k in STEP_LISTS]
    lists.append(("bias.betas", (c.get("bias") or {}).get("betas")))
    for key, value in lists:
        if isinstance(value, list) and len(value) > 1:
            steps *= len(value)
            keys.append(key)
    return steps, keys or ["experiment.repetitions"]


def _estimates(est: Mapping) -> list[tuple[str, int]]:
    """The β̂ estimates each estimate costs, by key (the keys that are used)."""
    found = []
    if est.get("bias_correction") == "bootstrap" and isinstance(est.get("bias_boot"), int):
        found.append(("estimator.bias_boot", est["bias_boot"]))
    if isinstance(est.get("bootstrap"), int) and est["bootstrap"] > 0:
        found.append(("estimator.bootstrap", est["bootstrap"]))
    if est.get("cluster_size") == "auto" and isinstance(est.get("auto_boot"), int):
        found.append(("estimator.auto_boot", est["auto_boot"]))
    return found


def _given(c: Mapping, key: str):
    """The value of the dotted ``key`` of ``c``."""
    node: object = c
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _fits(c: Mapping, key: str, n_bytes: float, what: str) -> None:
    check_fits(key, _given(c, key), n_bytes, what=what, fix=f"choose a smaller {key}")


def _in_time(key: str, given, seconds: float, what: str, warn_after_s) -> None:
    if seconds > MAX_RUN_S:
        raise ConfigError(
            key,
            f"{given!r}: {what} would take at least {_duration(seconds)} (the command starts "
            f"work of up to {_duration(MAX_RUN_S)})",
            hint=f"choose a smaller {key}",
        )
    if warn_after_s is not None and seconds > warn_after_s:
        warnings.warn(
            f"{key}={given!r}: {what} would take at least about {_duration(seconds)}",
            GroupBiasWarning,
            stacklevel=3,
        )


def _duration(seconds: float) -> str:
    if seconds < 2 * 86400:
        return rough_duration(seconds)
    days = seconds / 86400
    return f"{days:,.0f} days" if days < 3650 else f"{days / 365.25:.1e} years"
