"""What every metric shares: the checks of its inputs at the public boundary and the reduction
over queries.

Every metric of :mod:`groupbias.evaluation.metrics` and :mod:`groupbias.evaluation.fairness`
is one function with one call shape, ``metric(scores, [labels,] *, qptr, ..., reduce="mean")``:
arrays positional, everything else keyword-only. ``reduce`` says what comes back
(:func:`reduce_queries`): ``"mean"`` (default) the mean over the queries where the metric is
defined (NaN when there is none), ``None`` the per-query values (float64 [n_queries], NaN
where a query is skipped), and, where a metric offers it, ``"sum"`` or ``"amortized"``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import ParameterError
from ..core.segments import nanmean, segment_sum
from ..core.validation import check_qptr, vector
from ..rank.ranking import DeterministicRanking, Ranking, as_ranking

__all__ = [
    "REDUCE",
    "item_vector",
    "check_groups",
    "check_both_groups",
    "value_inputs",
    "ranking_inputs",
    "membership_matrix",
    "check_reduce",
    "reduce_queries",
]

#: what ``reduce`` may be for every metric: the mean over queries, or the per-query values
REDUCE = ("mean", None)


def item_vector(
    name: str, values, n: int | None, *, nonnegative: bool = False, unit: bool = False
) -> np.ndarray:
    """A per-item metric input: finite, optionally non-negative or in [0, 1]."""
    if unit:
        return vector(
            name,
            values,
            n,
            low=0.0,
            high=1.0,
            what="values in [0, 1] (1 = affected, 0 = non-affected)",
        )
    return vector(
        name,
        values,
        n,
        low=0.0 if nonnegative else None,
        what="non-negative values" if nonnegative else None,
        fix="drop or impute them before computing metrics",
    )


def check_groups(groups, n: int) -> np.ndarray:
    """Affected-group memberships in [0, 1] of ``n`` items (float64 [n])."""
    if groups is None:
        raise ParameterError("groups", "an array of affected-group memberships in [0, 1]", None)
    return item_vector("groups", groups, n, unit=True)


def check_both_groups(groups: np.ndarray, qptr: np.ndarray) -> None:
    """Refuse memberships under which no query has items of both groups (one-group data,
    or lists of one item), or under which every query's items share one membership value
    (0.5 for every item, say): a fairness metric comparing the groups' exposure within a
    query would report such data as perfectly fair (ρ = 1, Δ = 0) whatever the scores."""
    if groups.size == 0:
        return
    # memberships in [0, 1] that differ within a query put items of both groups in it, so
    # one comparison of neighbours within the queries settles the common case
    differs = groups[1:] != groups[:-1]
    inner = qptr[1:-1]
    differs[inner[(inner > 0) & (inner < groups.size)] - 1] = False  # pairs across queries
    if differs.any():
        return
    both = (segment_sum(groups, qptr) > 0) & (segment_sum(1.0 - groups, qptr) > 0)
    if not np.any(both):
        one = bool(np.all(np.diff(qptr) <= 1))
        raise ParameterError(
            "groups",
            "at least one query with items of both groups (the metric compares the groups' "
            "exposure within a query)",
            "lists of one item each" if one else "every query holds one group only",
            fix="group the items by another attribute, or evaluate only NDCG",
        )
    same = np.unique(groups)
    shown = f" ({same[0]:g} for every item)" if same.size == 1 else ""
    raise ParameterError(
        "groups",
        "at least one query whose items differ in affected-group membership (the metric "
        "compares the groups' exposure within a query)",
        f"memberships equal within every query{shown}",
        fix="With equal memberships every ranking gives both groups the same share of "
        "exposure, so every ranking reads as perfectly fair; give the items their own "
        "memberships, or evaluate only NDCG",
    )


def value_inputs(
    first_name: str,
    first,
    second_name: str,
    second,
    qptr,
    *,
    first_nonnegative: bool = False,
    second_nonnegative: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(first, second, qptr)`` of a metric on per-item values (utility
    estimates, exposures). ``first`` may be a :class:`~groupbias.rank.ranking.
    DeterministicRanking` of the queries ``qptr`` (its scores are the values); a policy has
    no values and is refused."""
    if isinstance(first, Ranking):
        ranking = DeterministicRanking.of(first, qptr, first_name)
        x = item_vector(first_name, ranking.scores, None, nonnegative=first_nonnegative)
    else:
        x = item_vector(first_name, first, None, nonnegative=first_nonnegative)
    n = x.size
    y = item_vector(second_name, second, n, nonnegative=second_nonnegative)
    q = check_qptr(qptr, n)
    return x, y, q


def ranking_inputs(
    scores,
    second_name: str,
    second,
    qptr,
    *,
    second_nonnegative: bool = True,
) -> tuple[Ranking, np.ndarray, np.ndarray]:
    """Validated ``(ranking, second, qptr)`` of a metric of a ranking: ``scores`` is
    a score array (ranked here, descending) or a :class:`~groupbias.rank.ranking.Ranking`
    of the queries ``qptr`` (a deterministic ranking or a Plackett–Luce policy)."""
    r = as_ranking(scores, qptr)
    n = r.n_items
    y = item_vector(second_name, second, n, nonnegative=second_nonnegative)
    return r, y, r.qptr


def membership_matrix(membership, n: int | None, name: str = "membership") -> np.ndarray:
    """A validated membership matrix: float64 [n_items, n_groups], ``n_groups >= 2``,
    finite and non-negative (a row of zeros: no group association)."""
    m = np.asarray(membership)
    if m.ndim == 1:
        raise ParameterError(
            name,
            "a 2-D array [n_items, n_groups]",
            "a 1-D array",
            fix="turn an affected-group vector into [affected, "
            "non-affected] columns with "
            "groupbias.data.membership.membership_from_groups(groups)",
        )
    if m.ndim != 2 or not (np.issubdtype(m.dtype, np.number) or m.dtype == bool):
        raise ParameterError(
            name, "a 2-D numeric array [n_items, n_groups]", f"shape {m.shape}, dtype {m.dtype}"
        )
    if n is not None and m.shape[0] != n:
        raise ParameterError(name, f"{n} rows (one per item)", f"{m.shape[0]} rows")
    if m.shape[1] < 2:
        raise ParameterError(
            name,
            "at least 2 group columns",
            f"{m.shape[1]} column(s)",
            fix="with a single group every ranking is trivially fair; add "
            "the other group(s), e.g. with membership_from_groups",
        )
    m = m.astype(np.float64, copy=False)
    if not np.all(np.isfinite(m)):
        raise ParameterError(
            name,
            "finite values",
            "NaN or infinite entries",
            fix="use a row of zeros for an item with no known group",
        )
    if m.size and m.min() < 0:
        raise ParameterError(name, "non-negative associations", f"minimum {m.min()!r}")
    return m


def check_reduce(reduce, allowed: Sequence = REDUCE):
    """``reduce`` if it is one of ``allowed``, else a :class:`ParameterError` naming them."""
    if not any(reduce is a or (isinstance(reduce, str) and reduce == a) for a in allowed):
        shown = ", ".join("None" if a is None else repr(a) for a in allowed)
        raise ParameterError("reduce", f"one of {shown} (None: the per-query values)", reduce)
    return reduce


def reduce_queries(values: np.ndarray, reduce, allowed: Sequence = REDUCE):
    """Per-query ``values`` (float64 [n_queries], NaN = skipped) reduced as ``reduce`` says:
    ``None`` → the array itself, ``"mean"`` → the mean over the non-NaN queries, ``"sum"``
    → their sum (both NaN when every query is skipped)."""
    reduce = check_reduce(reduce, allowed)
    if reduce is None:
        return values
    if reduce == "mean":
        return nanmean(values)
    ok = ~np.isnan(values)
    return float(values[ok].sum()) if ok.any() else float("nan")
