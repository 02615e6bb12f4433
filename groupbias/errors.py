"""Typed errors of the method library."""

from __future__ import annotations


class GroupBiasError(ValueError):
    """Base class of the library's errors (a ``ValueError``)."""


class ParameterError(GroupBiasError):
    """An impossible parameter value; the message names the parameter, what was expected,
    what was given, and (where obvious) the fix."""

    def __init__(self, name: str, expected: str, given, fix: str | None = None) -> None:
        self.name = name
        msg = f"{name}: expected {expected}, got {given!r}"
        if fix:
            msg += f". {fix}"
        super().__init__(msg)


def check_qptr(qptr, n_items: int, name: str = "qptr"):
    """Validate query offsets for ``n_items`` items and return them as int64."""
    import numpy as np

    q = np.asarray(qptr)
    if q.ndim != 1 or q.size < 1 or not np.issubdtype(q.dtype, np.integer):
        raise ParameterError(name, "1-D integer offsets of length n_queries + 1",
                             f"array of shape {q.shape} and dtype {q.dtype}")
    q = q.astype(np.int64, copy=False)
    if q[0] != 0 or q[-1] != n_items or np.any(np.diff(q) < 0):
        raise ParameterError(name, f"non-decreasing offsets from 0 to n_items={n_items}",
                             f"[{q[0]} .. {q[-1]}]")
    return q


def check_k(k):
    """Validate a rank cutoff: an integer >= 1, or None for no cutoff."""
    import numbers

    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ParameterError("k", "an integer >= 1, or None for no cutoff", k)
    return int(k)
