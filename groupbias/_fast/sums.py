"""Per-query sums over the groups, and the EEL target exposure of thresholded grades.

:func:`group_sums` gives ``sum a g``, ``sum a (1 - g)``, ``sum b g`` and ``sum b (1 - g)``
per query (numpy: segment sums of the products; compiled: one pass over the three arrays,
split between threads on large inputs). :func:`threshold_target` gives the EEL target
exposure of the grades ``#{t <= value}`` in one compiled pass, or None (the caller grades
and ranks with numpy).
"""

from __future__ import annotations

import numpy as np

from ..core.segments import segment_sum
from .rows import flat64, loop_rows, ranking_loops

__all__ = ["group_sums", "threshold_target"]


def group_sums(a: np.ndarray, b: np.ndarray | None, g: np.ndarray, qptr: np.ndarray):
    """``(A_A, A_N)`` or, with ``b``, ``(A_A, A_N, B_A, B_N)``: the per-query sums of
    ``a g``, ``a (1 - g)`` (and of ``b``), float64 [n_queries] each."""
    loops = ranking_loops(a.size)
    if loops is not None and flat64(a, g) and (b is None or flat64(b)):
        out = np.empty((qptr.size - 1, 4))
        starts, sizes = qptr[:-1], np.diff(qptr)
        second = a if b is None else b

        def task(q0: int, q1: int) -> None:
            loops.group_sums(a, second, g, starts[q0:q1], sizes[q0:q1], out[q0:q1])

        loop_rows(qptr.size - 1, a.size, task)
        return tuple(np.ascontiguousarray(out[:, j]) for j in range(2 if b is None else 4))
    ng = 1.0 - g
    arrays = (a,) if b is None else (a, b)
    return tuple(segment_sum(x * w, qptr) for x in arrays for w in (g, ng))


def threshold_target(
    values: np.ndarray, thresholds: np.ndarray, qptr: np.ndarray, table: np.ndarray
) -> np.ndarray | None:
    """The EEL target exposure (average ties over rank weights ``table``) of the grades
    ``#{t in thresholds : t <= value}`` by the compiled loops, or None where they do not
    serve or the grades span too many levels for the numpy path to count them."""
    loops = ranking_loops(values.size)
    if loops is None or not flat64(values):
        return None
    prefix = np.concatenate([[0.0], np.cumsum(table)])
    out = np.empty(values.size)
    t = np.ascontiguousarray(thresholds, dtype=np.float64)

    def task(q0: int, q1: int) -> tuple[int, int]:
        return loops.eel_target(values, t, qptr[q0 : q1 + 1], prefix, out)

    ranges = loop_rows(qptr.size - 1, values.size, task)
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    if values.size and (qptr.size - 1) * (hi - lo + 1) > 4 * values.size + 1024:
        return None
    return out
