"""Click-log rows of a chunk of sessions: one dispatcher, numpy passes or a compiled loop.

:func:`session_rows` turns the draws of a chunk (the lists shown, the interventions, the
sessions' propensities and the uniforms of the clicks) into the log's rows. Both paths read
the same draws and make the same comparisons, so the integer columns (session, query, item,
position, click) are equal on both; ``time`` is the session's index as a float.
"""

from __future__ import annotations

import numpy as np

from .backend import compiled

__all__ = ["LOOPS_MIN_ROWS", "session_rows"]

#: rows (sessions × positions) from which the compiled loop serves a chunk under "auto"
LOOPS_MIN_ROWS = 1 << 16

COLUMNS = ("session", "query", "item", "position", "click", "time")


def session_rows(
    lists: np.ndarray,
    list_of: np.ndarray,
    hit: np.ndarray,
    hit_lists: np.ndarray,
    qptr: np.ndarray,
    queries: np.ndarray,
    rel: np.ndarray,
    groups: np.ndarray,
    beta: np.ndarray,
    user: tuple[float, np.ndarray, float],
    draws: tuple[np.ndarray, np.ndarray],
    first: int,
    out: dict[str, np.ndarray],
) -> int:
    """Write the rows of sessions ``first .. first + m - 1`` (``m = queries.size``) into the
    columns ``out`` (:data:`COLUMNS`) from row 0 on; returns the number of rows.

    Session ``i`` shows the flat items ``lists[list_of[i]]`` (-1: an empty slot, no row), or
    ``hit_lists[h]`` when ``hit[h] == i`` (``hit`` ascending); ``beta[i]`` is its
    propensity. ``user = (noise, theta, continuation)``; ``draws = (u, go_on)``, uniforms
    ``[m, k]`` (``go_on`` empty: a position-based user, clicking where ``u < theta * p``;
    else a cascade user, clicking where examined and ``u < p``, going on after a click where
    ``go_on < continuation``). ``p = noise + (1 - noise) * rel * (g β + 1 - g)``."""
    u, go_on = draws
    loops = compiled("click_loops", u.size, LOOPS_MIN_ROWS)
    noise, theta, continuation = user
    if loops is not None:
        return int(
            loops.session_rows(
                *(lists, list_of, hit, hit_lists, qptr, queries, rel, groups, beta, noise),
                *(theta, u, go_on, continuation, first),
                *(out[c] for c in COLUMNS),
            )
        )
    shown = lists[list_of]
    shown[hit] = hit_lists
    filled = shown >= 0
    it = np.where(filled, shown, 0)
    gi = groups[it]
    p = noise + (1.0 - noise) * (rel[it] * (gi * beta[:, None] + 1.0 - gi))
    if go_on.shape[0]:  # a cascade: examined until a click the user does not go on after
        clicked = np.zeros(shown.shape, dtype=bool)
        examined = np.ones(shown.shape[0], dtype=bool)
        for j in range(shown.shape[1]):  # vectorized over sessions
            clicked[:, j] = examined & filled[:, j] & (u[:, j] < p[:, j])
            examined &= ~clicked[:, j] | (go_on[:, j] < continuation)
    else:
        clicked = u < theta[None, :] * p
    rows, cols = np.nonzero(filled)
    n = rows.size
    out["session"][:n] = rows + first
    out["query"][:n] = queries[rows]
    out["item"][:n] = shown[rows, cols] - qptr[queries[rows]]
    out["position"][:n] = cols + 1
    out["click"][:n] = clicked[rows, cols]
    out["time"][:n] = rows + first
    return n
