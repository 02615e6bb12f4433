"""The compiled loop of click-log simulation, used when numba is installed (the ``fast``
extra) and a log is large enough to pay for loading it
(:func:`groupbias.simulate.clicks.click_loops`).

:func:`session_rows` writes the rows of a chunk of sessions — every column of the log at
once — from the random numbers the numpy path draws (the same draws, in the same order,
drawn by numpy before the loop runs), so that the log has the same bits as the numpy
passes of :func:`groupbias.simulate.clicks.simulate_click_log`: the click probability
repeats numpy's operations one for one (no fused multiply-add, no fast-math), and the rows
come in the order of ``np.nonzero`` over the sessions' slots. It replaces the gathered
``[sessions, positions]`` temporaries of the numpy path (shown items, groups,
attractiveness, click probability, clicks) and the ``nonzero`` over padding slots.

``tests/simulate/test_click_loops.py`` compares the loop with the numpy path bit for bit. The loop
releases the GIL and is compiled on first use, then cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba

__all__ = ["session_rows"]


# long: one pass over a chunk's sessions and slots writing the six columns of every row
@numba.njit(nogil=True, cache=True)
def session_rows(
    lists,
    list_of,
    hit,
    hit_lists,
    qptr,
    queries,
    rel,
    groups,
    beta,
    noise,
    theta,
    u,
    go_on,
    continuation,
    first,
    session,
    query,
    item,
    position,
    click,
    time,
):
    """Write the rows of sessions ``first .. first + m - 1`` (``m = queries.size``) into the
    columns ``session``, ``query``, ``item``, ``position``, ``click`` and ``time`` from row 0
    on; returns the number of rows written.

    Session ``i`` shows the flat items ``lists[list_of[i]]`` (-1: an empty slot, no row),
    or ``hit_lists[h]`` when ``hit[h] == i`` (the sessions with an intervention, ascending);
    ``beta[i]`` is its propensity. An item ``it`` in slot ``j`` has the click probability
    ``p = noise + (1 - noise) * rel[it] * (g β + 1 − g)`` of an examined slot; with ``go_on``
    empty the user is a PBM (click: ``u[i, j] < theta[j] * p``), else a DCM (click:
    examined and ``u[i, j] < p``; it goes on after a click when ``go_on[i, j] <
    continuation``)."""
    m, k = u.shape
    cascade = go_on.shape[0] > 0
    row = 0
    h = 0
    for i in range(m):
        if h < hit.size and hit[h] == i:
            shown = hit_lists[h]
            h += 1
        else:
            shown = lists[list_of[i]]
        qi = queries[i]
        offset = qptr[qi]
        b = beta[i]
        s = first + i
        t = float(s)
        examined = True
        for j in range(k):
            it = shown[j]
            if it < 0:
                continue
            gi = groups[it]
            att = rel[it] * (gi * b + 1.0 - gi)
            p = noise + (1.0 - noise) * att
            if cascade:
                c = examined and u[i, j] < p
                examined = examined and (not c or go_on[i, j] < continuation)
            else:
                c = u[i, j] < theta[j] * p
            session[row] = s
            query[row] = qi
            item[row] = it - offset
            position[row] = j + 1
            click[row] = 1 if c else 0
            time[row] = t
            row += 1
    return row
