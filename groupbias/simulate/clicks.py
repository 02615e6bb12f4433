# long: one model of click logs: its columns, their simulation (one chunk loop over the draws,
# the rows written by groupbias._fast.clicks) and the file format

"""Click logs: simulation at scale, and the columnar file users bring from their systems.

A click log has one row per shown result of a session:

==========  =======  ========================================================
column      dtype    meaning
==========  =======  ========================================================
session     int64    session id (rows of one session share it)
query       int64    query index (0-based, the order of the dataset's queries)
item        int64    the item's index within its query's list (0-based)
position    int64    1-based position the item was shown at
click       int8     1 if clicked, else 0
time        float64  (optional) when the session happened; orders the log's time line
==========  =======  ========================================================

:func:`write_click_log` writes it as Parquet, atomically; :func:`read_click_log` reads one
back (a user's own log too) and checks every column, raising
:class:`~groupbias.core.errors.DataFormatError` naming the file and the column.

Simulation (:func:`simulate_click_log`), vectorized over all sessions (sessions are drawn in
chunks; no Python loop per session):

1. every session draws a query uniformly at random and shows the top ``positions`` items of
   the logging policy's scores: the deterministic ranking (``temperature = 0``) or a
   Plackett–Luce sample of ``softmax(score / temperature)`` (Gumbel top-k);
2. interventions in a fraction ``intervention_rate`` of the sessions: ``"swap"`` exchanges
   the first result with one at a uniform position 2..n (Joachims et al. 2017),
   ``"shuffle"`` shows the shown results in a uniformly random order (RandTop-k);
3. attractiveness under group bias: ``a = P(R) (g β_s + 1 − g)`` with the session's
   propensity ``β_s = clip(β(t_s) + β_q − β̄, β_min, 1)``: the per-query draw ``β_q`` of
   :func:`groupbias.simulate.group_bias.draw_query_beta` around ``β̄``, moved along the drift
   schedule ``β(t)`` of the log's time line (:class:`Drift`; none: ``β_s = β_q``);
4. a user model (:class:`UserModel`): the position-based model (PBM) clicks an item at
   position ``k`` with ``θ_k · c`` where ``θ_k = k^−η`` and ``c = ε + (1 − ε) a`` (``ε``:
   the noise-click rate of an examined item); the dependent-click cascade model (DCM)
   examines position 1, clicks an examined item with ``c`` and goes on to the next position
   after a non-click always, after a click with probability ``λ`` (``λ = 0``: the cascade
   model; its examination depends on the clicks above, which a PBM propensity cannot undo).

The expected clicks of one fixed ranking per query (:func:`simulate_clicks`: a position-based
model with examination ``P(E | rank) = rank ** -eta`` and ``clicks ~ Binomial(n_sessions,
P(E | rank) * a)``) and the IPS estimate of the attractiveness from them
(:func:`attractiveness_from_clicks`) are the simple form of the same model.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._fast.clicks import session_rows
from ..core.errors import DataFormatError, ParameterError
from ..core.io import write_bytes_atomic
from ..core.memory import check_fits
from ..core.segments import list_sizes, query_index, ranks_within
from ..core.validation import (
    check_qptr,
    checked_arguments,
    choice,
    generator,
    integer,
    is_integer,
    real,
    vector,
)

__all__ = [
    "USER_MODELS",
    "INTERVENTIONS",
    "DRIFTS",
    "COLUMNS",
    "UserModel",
    "Drift",
    "ClickLog",
    "ClickSimulation",
    "top_k_table",
    "check_log_size",
    "simulate_click_log",
    "write_click_log",
    "read_click_log",
    "examination_probability",
    "simulate_clicks",
    "attractiveness_from_clicks",
]

USER_MODELS = ("pbm", "cascade")
INTERVENTIONS = ("none", "swap", "shuffle")
DRIFTS = ("none", "linear", "step")
#: required columns and their kind (i: integer, f: float)
COLUMNS = {"session": "i", "query": "i", "item": "i", "position": "i", "click": "i"}
CHUNK = 1 << 17  # sessions simulated at a time (bounds memory, not a per-session loop)


@dataclass(frozen=True)
class UserModel:
    """How users examine and click (module docstring): ``kind`` "pbm" or "cascade";
    ``eta``: PBM severity, ``θ_k = k^−η``; ``noise``: click probability of an examined
    unattractive item ``ε``; ``continuation``: DCM probability of going on after a click."""

    kind: str = "pbm"
    eta: float = 1.0
    noise: float = 0.0
    continuation: float = 0.5

    def __post_init__(self) -> None:
        choice("kind", self.kind, USER_MODELS)
        real("eta", self.eta, low=0.0, what="a severity eta >= 0")
        real("noise", self.noise, low=0.0, high=1.0, high_open=True)
        real("continuation", self.continuation, low=0.0, high=1.0)

    def examination(self, positions: int) -> np.ndarray:
        """PBM examination ``θ_k = k^−η`` for k = 1..positions (float64)."""
        return np.arange(1, int(positions) + 1, dtype=np.float64) ** -float(self.eta)


@dataclass(frozen=True)
class Drift:
    """A schedule ``β(t)`` of the mean group propensity over the log's time line ``t`` in
    [0, 1): ``"none"`` (constant ``start``), ``"linear"`` (``start`` → ``end``), ``"step"``
    (``start`` before ``at``, ``end`` from ``at`` on)."""

    kind: str = "none"
    start: float = 0.8
    end: float = 0.6
    at: float = 0.5

    def __post_init__(self) -> None:
        choice("kind", self.kind, DRIFTS)
        real("start", self.start, low=0.0, high=1.0, low_open=True)
        real("end", self.end, low=0.0, high=1.0, low_open=True)
        real("at", self.at, low=0.0, high=1.0, low_open=True, high_open=True)

    def beta_at(self, t) -> np.ndarray:
        """``β(t)`` for times ``t`` in [0, 1) (float64, the shape of ``t``)."""
        t = np.asarray(t, dtype=np.float64)
        if self.kind == "none":
            return np.full(t.shape, self.start)
        if self.kind == "linear":
            return self.start + (self.end - self.start) * t
        return np.where(t < self.at, self.start, self.end)


@dataclass(frozen=True, eq=False)
class ClickLog:
    """A click log's columns (module docstring), one entry per shown result. ``source``
    names the file it came from (for messages)."""

    session: np.ndarray
    query: np.ndarray
    item: np.ndarray
    position: np.ndarray
    click: np.ndarray
    time: np.ndarray | None = None
    source: str = "<memory>"

    @property
    def n_rows(self) -> int:
        return int(self.session.size)

    @property
    def n_sessions(self) -> int:
        return int(np.unique(self.session).size)

    def flat_items(self, qptr) -> np.ndarray:
        """Flat item indices ``qptr[query] + item`` into a dataset with offsets ``qptr``;
        rows naming a query or item the dataset lacks raise DataFormatError."""
        q = np.asarray(qptr, dtype=np.int64)
        n_q = q.size - 1
        if self.query.size and (self.query.min() < 0 or self.query.max() >= n_q):
            raise DataFormatError(
                self.source, None, f"query indices must lie in [0, {n_q - 1}]", field="query"
            )
        size = np.diff(q)[self.query]
        if np.any((self.item < 0) | (self.item >= size)):
            raise DataFormatError(
                self.source,
                None,
                "item indices must lie within their query's list",
                field="item",
            )
        return q[self.query] + self.item

    def counts(self, qptr, positions: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(shown, clicks)``, float64 [n_items, positions]: how often every item was
        shown at every position, and clicked there (``positions``: the log's largest by
        default)."""
        flat = self.flat_items(qptr)
        q = np.asarray(qptr, dtype=np.int64)
        size = np.diff(q)[self.query]
        if np.any((self.position < 1) | (self.position > size)):  # before allocating by it
            row = int(np.flatnonzero((self.position < 1) | (self.position > size))[0])
            raise DataFormatError(
                self.source,
                None,
                f"row {row}: position {int(self.position[row])} outside 1..{int(size[row])}, "
                "the length of its query's list",
                field="position",
            )
        k = int(self.position.max(initial=0)) if positions is None else int(positions)
        n = int(q[-1])
        if self.position.size and self.position.max() > k:
            raise ParameterError("positions", f">= the log's largest ({self.position.max()})", k)
        cell = flat * k + (self.position - 1)
        shown = np.bincount(cell, minlength=n * k).astype(np.float64)
        clicks = np.bincount(cell, weights=self.click, minlength=n * k)
        return shown.reshape(n, k), clicks.reshape(n, k)

    def session_order(self) -> np.ndarray:
        """Row order along the time line: by ``time`` (then session id), or by session id."""
        if self.time is None:
            return np.argsort(self.session, kind="stable")
        return np.lexsort((self.session, self.time))

    def to_frame(self):
        import pandas as pd

        cols = {
            "session": self.session,
            "query": self.query,
            "item": self.item,
            "position": self.position,
            "click": self.click,
        }
        if self.time is not None:
            cols["time"] = self.time
        return pd.DataFrame(cols)


@dataclass(frozen=True, eq=False)
class ClickSimulation:
    """A simulated log with its truth: ``examination`` (θ_k, the PBM's; for the cascade
    model the PBM of the same ``eta`` is not the truth), ``beta_session`` (float64
    [n_sessions], the propensity ``β_s`` of every session), ``beta_schedule`` (the mean
    propensity ``β(t_s)`` at the session's time; without a drift the mean the per-query
    propensities were drawn around)."""

    log: ClickLog
    examination: np.ndarray
    beta_session: np.ndarray
    beta_schedule: np.ndarray


# --------------------------------------------------------------------------- rankings


def top_k_table(scores, qptr, k: int) -> np.ndarray:
    """The top ``k`` items of every query by descending score: int64 [n_queries, k] flat
    item indices, -1 where a list is shorter than ``k`` (ties: original order)."""
    q = check_qptr(qptr, np.asarray(scores).size)
    ranks = ranks_within(np.asarray(scores, dtype=np.float64), q)
    keep = ranks <= k
    table = np.full((q.size - 1, int(k)), -1, dtype=np.int64)
    table[query_index(q)[keep], ranks[keep] - 1] = np.flatnonzero(keep)
    return table


def _padded(scores: np.ndarray, qptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(items int64 [n_q, L], scores float64 [n_q, L])`` padded with -1 / -inf."""
    sizes = list_sizes(qptr)
    width = int(sizes.max(initial=1))
    qidx = query_index(qptr)
    col = np.arange(qptr[-1]) - qptr[qidx]
    items = np.full((sizes.size, width), -1, dtype=np.int64)
    vals = np.full((sizes.size, width), -np.inf)
    items[qidx, col] = np.arange(qptr[-1])
    vals[qidx, col] = scores
    return items, vals


def _sample_lists(pad_items, pad_scores, queries, k, temperature, rng) -> np.ndarray:
    """Plackett–Luce top-``k`` of every session (Gumbel-max): int64 [S, k], -1 padded."""
    keys = pad_scores[queries] / temperature
    keys = keys + rng.gumbel(size=keys.shape)
    width = keys.shape[1]
    if width > k:
        part = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(width), keys.shape).copy()
    sub = np.take_along_axis(keys, part, axis=1)
    order = np.argsort(-sub, axis=1, kind="stable")
    cols = np.take_along_axis(part, order, axis=1)
    shown = pad_items[queries[:, None], cols]
    if shown.shape[1] < k:
        shown = np.pad(shown, ((0, 0), (0, k - shown.shape[1])), constant_values=-1)
    return shown


def _intervened(lists, list_of, n_shown, kind: str, rate: float, rng):
    """``(hit, hit_lists)``: the sessions (ascending) that get a swap or shuffle
    intervention, a fraction ``rate`` of those showing two results or more, and their lists
    after it. Session ``i`` shows ``lists[i]`` (``list_of`` None) or
    ``lists[list_of[i]]``; ``n_shown``: how many results each shows."""
    hit = np.flatnonzero((rng.random(n_shown.size) < rate) & (n_shown >= 2))
    rows = lists[hit] if list_of is None else lists[list_of[hit]]
    if kind == "swap":
        j = 1 + np.floor(rng.random(hit.size) * (n_shown[hit] - 1)).astype(np.int64)
        at = np.arange(hit.size)
        first = rows[:, 0].copy()
        rows[:, 0] = rows[at, j]
        rows[at, j] = first
        return hit, rows
    keys = rng.random((hit.size, lists.shape[1]))
    keys[rows < 0] = np.inf  # empty slots stay at the end
    perm = np.argsort(keys, axis=1)
    return hit, np.take_along_axis(rows, perm, axis=1)


# --------------------------------------------------------------------------- simulation


def _session_beta(queries, times, beta_query, beta_mean, drift, beta_min):
    """``(β_s, β(t_s))`` of every session; without a drift ``β(t_s)`` is ``beta_mean`` (the
    mean of ``beta_query`` when not given)."""
    schedule = drift.beta_at(times)
    if beta_query is None:
        return np.clip(schedule, beta_min, 1.0), schedule
    bq = np.asarray(beta_query, dtype=np.float64)
    b = bq[queries]
    if drift.kind == "none":
        mean = float(bq.mean()) if beta_mean is None else float(beta_mean)
        return b, np.full(b.shape, mean)
    return np.clip(schedule + b - float(beta_mean), beta_min, 1.0), schedule


def _check_simulation_inputs(relevance, groups, qptr, logging_scores, beta_query):
    rel = vector("relevance", relevance, low=0.0, high=1.0)
    g = vector("groups", groups, rel.size, low=0.0, high=1.0)
    q = check_qptr(qptr, rel.size)
    s = vector("logging_scores", logging_scores, rel.size)
    if beta_query is not None:
        b = vector("beta_query", beta_query, q.size - 1, per="query")
        if b.size and (b.min() <= 0 or b.max() > 1):
            raise ParameterError("beta_query", "propensities in (0, 1]", f"[{b.min()}, {b.max()}]")
    if q.size < 2:
        raise ParameterError("qptr", "at least one query", "no queries")
    return rel, g, q, s


def _empty_columns(rows: int) -> dict[str, np.ndarray]:
    """Uninitialized columns of ``rows`` rows in the log's dtypes."""
    cols = {c: np.empty(rows, dtype=np.int64) for c in ("session", "query", "item", "position")}
    cols["click"] = np.empty(rows, dtype=np.int8)
    cols["time"] = np.empty(rows, dtype=np.float64)
    return cols


def _uniforms(shape: tuple[int, int], buffer: np.ndarray, rng) -> np.ndarray:
    """``rng.random(shape)`` drawn into the front of ``buffer`` (the same numbers, no new
    memory for every chunk)."""
    return rng.random(out=buffer[: shape[0] * shape[1]].reshape(shape))


@dataclass(frozen=True, eq=False)
class _Sessions:
    """What every chunk of a simulation reads: ``n`` sessions of ``k`` positions over the
    checked inputs, the user model, the logging temperature, the intervention, the
    arguments of :func:`_session_beta` after the queries and times (``beta``), and the
    per-session truth written chunk by chunk (``beta_s``, ``sched``)."""

    n: int
    k: int
    qptr: np.ndarray
    rel: np.ndarray
    g: np.ndarray
    user: UserModel
    theta: np.ndarray
    tau: float
    intervention: str
    rate: float
    beta: tuple
    beta_s: np.ndarray
    sched: np.ndarray


def _chunk(run: _Sessions, lo, queries, lists, list_of, n_shown, out, rng) -> int:
    """Simulate the chunk of sessions ``lo ..``: session ``i`` shows ``lists[list_of[i]]``,
    ``n_shown[i]`` results; its rows go to the columns ``out`` from their first row on
    (``out["u"]`` and ``out["go_on"]``: scratch for the uniforms). Returns the number of
    rows written."""
    m, k = queries.size, lists.shape[1]
    hit, hit_lists = np.empty(0, np.int64), np.empty((0, k), np.int64)
    if run.intervention != "none" and run.rate != 0:
        hit, hit_lists = _intervened(lists, list_of, n_shown, run.intervention, run.rate, rng)
    times = np.arange(lo, lo + m, dtype=np.float64)
    b, sc = _session_beta(queries, times / run.n, *run.beta)
    run.beta_s[lo : lo + m], run.sched[lo : lo + m] = b, sc
    user = run.user
    u = _uniforms((m, k), out["u"], rng)
    go_on = _uniforms((m, k), out["go_on"], rng) if user.kind == "cascade" else u[:0]
    return session_rows(
        *(lists, list_of, hit, hit_lists, run.qptr, queries, run.rel, run.g, b),
        (user.noise, run.theta, user.continuation),
        (u, go_on),
        lo,
        out,
    )


def _simulate(run: _Sessions, table, padded: tuple, rng) -> dict[str, np.ndarray]:
    """Every chunk of sessions (``table``: the deterministic logging ranking's top-k table,
    else ``padded`` items and scores of Plackett–Luce logging): the log's columns, written
    in place when every list is as long as the positions, else chunk by chunk and
    concatenated."""
    n, k = run.n, run.k
    n_filled = (table >= 0).sum(axis=1) if table is not None else np.empty(0, np.int64)
    scratch = {c: np.empty(min(n, CHUNK) * k) for c in ("u", "go_on")}
    full = _empty_columns(n * k) if int(list_sizes(run.qptr).min()) >= k else None
    parts, rows = [], 0
    for lo in range(0, n, CHUNK):
        queries = rng.integers(0, run.qptr.size - 1, size=min(n, lo + CHUNK) - lo)
        if table is not None:
            lists, list_of, n_shown = table, queries, n_filled[queries]
        else:
            lists = _sample_lists(padded[0], padded[1], queries, k, run.tau, rng)
            list_of, n_shown = np.arange(queries.size), (lists >= 0).sum(axis=1)
        if full is not None:
            cols = {c: v[rows:] for c, v in full.items()}
        else:
            cols = _empty_columns(int(n_shown.sum()))
            parts.append(cols)
        rows += _chunk(run, lo, queries, lists, list_of, n_shown, cols | scratch, rng)
    if full is not None:
        return full
    if len(parts) == 1:
        return parts[0]
    return {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}


# long: one vectorized pass per chunk of sessions; the steps follow the module docstring
def check_log_size(n_sessions: int, positions: int, *, name: str = "n_sessions") -> int:
    """``n_sessions``, refused (naming ``name``) before anything is drawn when the log's
    columns would not fit in memory: per row (a session's position) five int64 columns and
    the click, per session its propensity and schedule value."""
    n = integer(name, n_sessions, low=1)
    check_fits(
        name,
        n_sessions,
        float(n) * (48 * positions + 16),
        what=f"a click log of {n} sessions x {positions} positions",
        fix="Log fewer sessions",
    )
    return n


@checked_arguments
def simulate_click_log(
    relevance,
    groups,
    *,
    qptr,
    logging_scores,
    n_sessions: int,
    rng: np.random.Generator,
    positions: int = 10,
    user: UserModel | None = None,
    beta_query=None,
    beta_mean: float | None = None,
    drift: Drift | None = None,
    beta_min: float = 0.01,
    temperature: float = 0.0,
    intervention: str = "swap",
    intervention_rate: float = 0.1,
) -> ClickSimulation:
    """Simulate ``n_sessions`` sessions (module docstring) and return the log with its truth.

    ``relevance``: P(R) [n_items] in [0, 1]; ``groups``: memberships [n_items] (1 =
    affected); ``logging_scores``: the logging policy's score of every item; ``beta_query``:
    per-query propensities (None: every query at the drift schedule, or no group bias when
    ``drift`` is None too); ``beta_mean``: the mean they were drawn around (needed with a
    drift); ``temperature``: 0 = deterministic logging ranking, > 0 = Plackett–Luce sampling.
    Session times are the session indices 0..n_sessions-1.
    """
    rel, g, q, s = _check_simulation_inputs(relevance, groups, qptr, logging_scores, beta_query)
    k = integer("positions", positions, low=1)
    n = check_log_size(n_sessions, k)
    rng = generator(rng)
    user = user or UserModel()
    choice("intervention", intervention, INTERVENTIONS)
    rate = real("intervention_rate", intervention_rate, low=0.0, high=1.0)
    tau = real("temperature", temperature, low=0.0)
    bmin = real("beta_min", beta_min, low=0.0, high=1.0, low_open=True)
    if drift is not None and beta_query is not None and beta_mean is None:
        raise ParameterError("beta_mean", "the mean the beta_query were drawn around", None)
    if drift is None:
        drift = Drift("none", start=1.0) if beta_query is None else Drift("none")
    table = top_k_table(s, q, k) if tau == 0 else None
    padded = _padded(s, q) if tau > 0 else (None, None)
    beta = (beta_query, beta_mean, drift, bmin)
    theta, beta_s, sched = user.examination(k), np.empty(n), np.empty(n)
    run = _Sessions(n, k, q, rel, g, user, theta, tau, intervention, rate, beta, beta_s, sched)
    cols_out = _simulate(run, table, padded, rng)
    log = ClickLog(  # (the columns are int64 already: no copies)
        session=cols_out["session"].astype(np.int64, copy=False),
        query=cols_out["query"].astype(np.int64, copy=False),
        item=cols_out["item"].astype(np.int64, copy=False),
        position=cols_out["position"].astype(np.int64, copy=False),
        click=cols_out["click"],
        time=cols_out["time"],
        source="<simulated>",
    )
    return ClickSimulation(
        log=log, examination=run.theta, beta_session=run.beta_s, beta_schedule=run.sched
    )


# --------------------------------------------------------------------------- files


def write_click_log(path, log: ClickLog) -> Path:
    """Write ``log`` as Parquet to ``path`` atomically."""
    buf = io.BytesIO()
    log.to_frame().to_parquet(buf, index=False)
    return write_bytes_atomic(path, buf.getvalue())


def _column(df, name: str, kind: str, path: str) -> np.ndarray:
    if name not in df.columns:
        raise DataFormatError(
            path, None, f"missing column; a click log has {', '.join(COLUMNS)}", field=name
        )
    a = df[name].to_numpy()
    if a.dtype == bool and name == "click":
        a = a.astype(np.int8)
    if kind == "i" and not np.issubdtype(a.dtype, np.integer):
        raise DataFormatError(path, None, f"expected integers, got dtype {a.dtype}", field=name)
    if kind == "f" and not (np.issubdtype(a.dtype, np.number) and a.dtype != bool):
        raise DataFormatError(path, None, f"expected numbers, got dtype {a.dtype}", field=name)
    return a


def _check_values(cols: dict, path: str) -> None:
    bad = {
        "session": cols["session"] < 0,
        "query": cols["query"] < 0,
        "item": cols["item"] < 0,
        "position": cols["position"] < 1,
        "click": (cols["click"] != 0) & (cols["click"] != 1),
    }
    for name, mask in bad.items():
        if np.any(mask):
            row = int(np.argmax(mask))
            want = {"position": ">= 1", "click": "0 or 1"}.get(name, ">= 0")
            raise DataFormatError(
                path,
                None,
                f"row {row}: {cols[name][row]!r}, expected {want}",
                field=name,
            )
    t = cols.get("time")
    if t is not None and not np.all(np.isfinite(t)):
        row = int(np.argmax(~np.isfinite(t)))
        raise DataFormatError(path, None, f"row {row}: not a finite time", field="time")
    key = np.sort(cols["session"] * (int(cols["position"].max(initial=0)) + 1) + cols["position"])
    if np.any(key[1:] == key[:-1]):
        raise DataFormatError(
            path, None, "two rows of one session share a position", field="position"
        )


def read_click_log(path) -> ClickLog:
    """Read a Parquet click log (ours or a user's) and check its columns and values."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no click log there")
    try:
        df = pd.read_parquet(p)
    except Exception as exc:  # pyarrow's errors for a file that is not Parquet
        raise DataFormatError(p, None, f"not a readable Parquet file ({exc})") from None
    where = str(p)
    cols = {name: _column(df, name, kind, where) for name, kind in COLUMNS.items()}
    cols = {name: a.astype(np.int8 if name == "click" else np.int64) for name, a in cols.items()}
    time = _column(df, "time", "f", where).astype(np.float64) if "time" in df.columns else None
    if time is not None:
        cols["time"] = time
    _check_values(cols, where)
    return ClickLog(**cols, source=where)


# ------------------------------------------------------ expected clicks of one fixed ranking


def examination_probability(ranks, *, eta: float = 1.0) -> np.ndarray:
    """Position-based examination ``P(E | rank) = rank ** -eta`` (float64, same shape)."""
    e = real("eta", eta, low=0, what="a severity eta >= 0")
    r = np.asarray(ranks)
    if not np.issubdtype(r.dtype, np.number) or (r.size and (r.min() < 1)):
        raise ParameterError("ranks", "ranks >= 1", f"dtype {r.dtype}")
    return np.power(r.astype(np.float64), -e)


@checked_arguments
def simulate_clicks(
    attractiveness,
    *,
    qptr,
    ranking_scores,
    n_sessions: int,
    rng: np.random.Generator,
    eta: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Clicks of ``n_sessions`` sessions per query under a position-based model.

    Every session shows each query's items sorted by ``ranking_scores`` (descending; ties by
    original position). An item at rank ``r`` is examined with ``P(E | r) = r ** -eta`` and
    clicked when examined and attracted, so over the sessions
    ``clicks ~ Binomial(n_sessions, P(E | r) * a)`` independently per item.

    Returns ``(clicks int64 [n_items], impressions float64 [n_items])`` where
    ``impressions = n_sessions * P(E | r)`` is the expected number of examinations (the IPS
    denominator of :func:`attractiveness_from_clicks`).
    """
    a = vector("attractiveness", attractiveness, low=0.0, high=1.0)
    q = check_qptr(qptr, a.size)
    s = vector("ranking_scores", ranking_scores, a.size)
    if not is_integer(n_sessions) or n_sessions < 1:
        raise ParameterError("n_sessions", "an integer >= 1", n_sessions)
    rng = generator(rng)
    ranks = ranks_within(s, q, descending=True)
    pe = examination_probability(ranks, eta=eta)
    clicks = rng.binomial(int(n_sessions), np.clip(pe * a, 0.0, 1.0)).astype(np.int64)
    return clicks, float(n_sessions) * pe


@checked_arguments
def attractiveness_from_clicks(clicks, impressions) -> np.ndarray:
    """IPS estimate of the attractiveness: ``clicks / impressions`` (float64 [n_items]) with
    ``impressions = n_sessions * P(E | rank)`` (unbiased for ``a``; not clipped to [0, 1]).
    Items with zero impressions get 0."""
    c = vector("clicks", clicks, low=0.0)
    imp = vector("impressions", impressions, c.size, low=0.0)
    out = np.zeros(c.size)
    pos = imp > 0
    out[pos] = c[pos] / imp[pos]
    return out
