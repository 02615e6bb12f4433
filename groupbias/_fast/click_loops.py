"""The compiled loop (numba) of click-log rows: one pass over a chunk's sessions and slots
writing every column at once, from the random numbers drawn before it (the numpy path of
:func:`groupbias._fast.clicks.session_rows` reads the same draws). Loaded only through
:func:`groupbias._fast.backend.compiled`; releases the GIL; compiled on first use and
cached on disk.
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
