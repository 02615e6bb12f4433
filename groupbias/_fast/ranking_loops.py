"""Compiled loops (numba) of rankings and the per-query sums over them.

Each loop computes what the numpy passes of :mod:`groupbias._fast.rows` compute, in one
pass over the items instead of several: integer results (selections, orders, tie checks)
are equal by construction; float sums are taken in item order, so they agree with numpy's
pairwise sums within the equality contract (``docs/reliability.md``: 1e-12 relative), not
bit for bit. The loops release the GIL and are compiled on first use, then cached on disk.
Loaded only through :func:`groupbias._fast.backend.compiled`.
"""

# long: every compiled loop of rankings in one module (one import of numba, one cache)
from __future__ import annotations

import numba
import numpy as np

__all__ = ["group_sums", "ranked_group_sums", "eel_target", "top_k_dcg", "TOP_K_MAX"]

#: grades whose counts per query fit the 8-bit fields of one int64 (queries of at most
#: 255 items)
_FIELD_GRADES = 8
_FIELD_ROW = 255
#: the longest cutoff :func:`top_k_dcg` selects
TOP_K_MAX = 128
#: lanes of the running maxima that bound a row's k-th largest score from below
_LANES = 16
#: the sign bit, the bits of the exponent and the other 63 bits of a float64's bits
_SIGN = np.int64(-(2**63))
_EXPONENT = np.int64(0x7FF0000000000000)
_LOW63 = np.int64(2**63 - 1)
#: above every key of a finite score
_MAX_KEY = _LOW63


@numba.njit(nogil=True, cache=True, inline="always")
def _sums4(e, v, g, lo, n, out, r):
    """``out[r, 0..3]``: the sums of ``e g``, ``e (1 - g)``, ``v g`` and ``v (1 - g)``
    over ``lo .. lo + n``, in item order."""
    s0 = s1 = s2 = s3 = 0.0
    for i in range(lo, lo + n):
        gi = g[i]
        hi = 1.0 - gi
        s0 += e[i] * gi
        s1 += e[i] * hi
        s2 += v[i] * gi
        s3 += v[i] * hi
    out[r, 0], out[r, 1], out[r, 2], out[r, 3] = s0, s1, s2, s3


@numba.njit(nogil=True, cache=True)
def group_sums(a, b, g, starts, sizes, out):
    """Per segment ``starts[r] .. starts[r] + sizes[r]`` (a query) the sums of ``a g``,
    ``a (1 - g)``, ``b g`` and ``b (1 - g)`` into ``out[r, 0..3]``, in one pass."""
    for r in range(starts.size):
        _sums4(a, b, g, starts[r], sizes[r], out, r)


@numba.njit(nogil=True, cache=True, inline="always")
def _target_row(values, thresholds, prefix, lo, n, counts, mean, grades, out):
    """The EEL target exposure of the items ``lo .. lo + n`` into ``out[:n]``: the mean
    position exposure of the ranks its grade block occupies (``prefix``: 0 and the
    cumulative position exposures). Returns the smallest and the largest grade present."""
    n_levels = thresholds.size + 1
    counts[:] = 0
    for i in range(n):
        c = _grade(values[lo + i], thresholds)
        grades[i] = c
        counts[c] += 1
    above = 0
    lo_grade, hi_grade = n_levels, -1
    for c in range(n_levels - 1, -1, -1):
        k = counts[c]
        if k:
            mean[c] = (prefix[above + k] - prefix[above]) / k
            lo_grade = min(lo_grade, c)
            hi_grade = max(hi_grade, c)
        above += k
    for i in range(n):
        out[i] = mean[grades[i]]
    return lo_grade, hi_grade


@numba.njit(nogil=True, cache=True)
def ranked_group_sums(keys, mask, starts, sizes, table, values, g, grading, out, tied):
    """For every row of packed keys (their bits, int64) sorted ascending: the rank weight
    ``e_i = table[slot]`` of every item, and per row the sums of ``e g``, ``e (1 - g)``,
    ``v g`` and ``v (1 - g)`` (``out[r, 0..3]``) without dense weights. ``v`` is ``values``
    or, with ``grading = (thresholds, prefix)`` (``prefix`` not empty), the EEL target
    exposure of the grades ``#{t <= value}``. ``tied[r]``: two real keys of the row are
    equal as floats once the column bits (``mask``) are dropped; such a row's sums are the
    caller's to redo."""
    w = keys.shape[1]
    ebuf = np.empty(w)
    vbuf = np.empty(w)
    by_position = _by_position(table, w)
    thresholds, prefix = grading
    counts = np.zeros(thresholds.size + 1, dtype=np.int64)
    mean = np.empty(thresholds.size + 1)
    grades = np.empty(w, dtype=np.int64)
    for r in range(starts.size):
        s0 = starts[r]
        n = sizes[r]
        tied[r] = _scatter_row(keys[r], mask, n, by_position, ebuf)
        if prefix.size:
            _target_row(values, thresholds, prefix, s0, n, counts, mean, grades, vbuf)
        else:
            vbuf[:n] = values[s0 : s0 + n]
        _sums4(ebuf, vbuf, g[s0 : s0 + n], 0, n, out, r)


@numba.njit(nogil=True, cache=True)
def eel_target(values, thresholds, qptr, prefix, out):
    """EEL target exposure of every item: its grade ``#{t <= value}`` (``thresholds``
    ascending) and the mean position exposure of the ranks its grade block occupies in its
    query. Returns the smallest and the largest grade (``(0, -1)`` without items)."""
    n_levels = thresholds.size + 1
    counts = np.zeros(n_levels, dtype=np.int64)
    mean = np.empty(n_levels)
    grades = np.empty(_max_size(qptr), dtype=np.int64)
    lo_grade, hi_grade = n_levels, -1
    for q in range(qptr.size - 1):
        lo = qptr[q]
        n = qptr[q + 1] - lo
        if n:
            a, b = _target_row(values, thresholds, prefix, lo, n, counts, mean, grades, out[lo:])
            lo_grade, hi_grade = min(lo_grade, a), max(hi_grade, b)
    if hi_grade < 0:
        return 0, -1
    return lo_grade, hi_grade


# long: one pass per query does the selection, the tie check, DCG and the ideal DCG
@numba.njit(nogil=True, cache=True)
def top_k_dcg(scores, labels, weights, qptr, k, table, gains, dcg, ideal, tied):
    """DCG@k and the ideal DCG@k of every query (items ``qptr[q] .. qptr[q + 1]``) from a
    top-k selection of its scores and the counts of its grades. ``weights``: the group
    weight of every item (0 or 1), or empty for all items; ``gains[c]``: the gain of grade
    ``c``; ``table``: the rank weights (the DCG discount cut at ``k``). ``tied[q]``: a tie
    touches the selection (the query's DCG is the caller's to redo). Returns the number of
    tied queries, or -1 (outputs unfinished) unless every label is a whole number in
    ``[0, gains.size - 1]`` and every score is finite."""
    bits = scores.view(np.int64)
    grouped = weights.size > 0
    longest = _max_size(qptr)
    lanes = np.empty(_LANES)
    keys = np.empty(longest, dtype=np.int64)
    where = np.empty(longest, dtype=np.int64)
    vals = np.empty(k + 1)
    cols = np.empty(k + 1, dtype=np.int64)
    counts = np.zeros(gains.size, dtype=np.int64)
    n_tied = 0
    for q in range(qptr.size - 1):
        s0 = qptr[q]
        n = qptr[q + 1] - s0
        m = min(k, n)
        if n == 0:
            dcg[q] = ideal[q] = 0.0
            tied[q] = False
            continue
        hi = _grade_counts(labels, weights, s0, n, grouped, counts)
        if hi < 0 or not _all_finite(bits, s0, n):
            return -1
        best = 0.0
        j = 0
        for c in range(hi, -1, -1):
            for _ in range(min(counts[c], m - j)):
                best += gains[c] * table[j]
                j += 1
        ideal[q] = best
        if k > _LANES or n < _LANES:
            t = _top_k_row(scores[s0 : s0 + n], m, vals, cols)
        else:
            t = _top_k_bounded(scores, bits, s0, n, k, lanes, keys, where, vals, cols)
        tied[q] = t
        n_tied += t
        total = 0.0
        if not t:
            for j in range(m):
                x = gains[np.int64(labels[s0 + cols[j]])]
                if grouped:
                    x = x * weights[s0 + cols[j]]
                total += x * table[j]
        dcg[q] = total
    return n_tied


@numba.njit(nogil=True, cache=True)
def _by_position(table, w):
    """``table[w - 1 - j]`` at ``j``: the weight of the key at position ``j`` of a sorted
    row of width ``w`` whose keys are all real (ascending: the last is slot 0)."""
    out = np.empty(w)
    for j in range(w):
        out[j] = table[w - 1 - j]
    return out


@numba.njit(nogil=True, cache=True)
def _scatter_row(row, mask, n, by_position, out):
    """``out[column] = by_position[j]`` for the ``n`` real keys of the sorted ``row`` (the
    last ``n`` positions ``j``); returns whether two of them are equal as floats once the
    column bits are dropped (equal bits, or two zeros of either sign). A call of its own:
    inlined beside the sums that read ``out``, it compiles to slower code."""
    w = row.size
    same = False
    zeros = 0
    prev = np.int64(1)  # never the high bits of a key (the column bits are 0 there)
    for j in range(w - n, w):
        key = row[j]
        high = key & ~mask
        same |= high == prev
        zeros += (high << 1) == 0
        prev = high
        out[key & mask] = by_position[j]
    return same or zeros > 1


@numba.njit(nogil=True, cache=True, inline="always")
def _grade(v, thresholds):
    c = 0
    for t in thresholds:
        c += np.int64(v >= t)
    return c


@numba.njit(nogil=True, cache=True)
def _max_size(qptr):
    m = 1
    for q in range(qptr.size - 1):
        m = max(m, qptr[q + 1] - qptr[q])
    return m


@numba.njit(nogil=True, cache=True, inline="always")
def _insert(vals, cols, pos, v, col):
    """``v`` (column ``col``) into the descending ``vals[:pos + 1]`` from slot ``pos`` up."""
    while pos > 0 and vals[pos - 1] < v:
        vals[pos] = vals[pos - 1]
        cols[pos] = cols[pos - 1]
        pos -= 1
    vals[pos] = v
    cols[pos] = col


@numba.njit(nogil=True, cache=True, inline="always")  # called once per row
def _top_k_row(values, cap, vals, cols):
    """The ``cap`` largest of ``values`` (``cap <= values.size``) in ``vals`` (descending)
    with their columns: a buffer kept sorted by insertion, most values costing one
    comparison with its last value.
    Returns whether two of the kept values are equal or the last kept one equals a value
    left out (a tie touching the buffer): a value left out equal to the last kept one was
    equal to the last one when it was left out (the last one only grows), so only those
    moments are recorded."""
    for j in range(cap):
        _insert(vals, cols, j, values[j], j)
    last = vals[cap - 1]
    equal_out = np.nan  # the last value left out that equalled the last kept one then
    for j in range(cap, values.size):
        v = values[j]
        if v >= last:
            if v == last:
                equal_out = v
            else:
                _insert(vals, cols, cap - 1, v, j)
                if vals[cap - 1] == last:
                    equal_out = last
                last = vals[cap - 1]
    tied = equal_out == last
    for j in range(1, cap):
        tied |= vals[j] == vals[j - 1]
    return tied


@numba.njit(nogil=True, cache=True, inline="always")
def _larger(a, b):
    return a if a > b else b


@numba.njit(nogil=True, cache=True, inline="always")  # called once per row
def _kth_bound(scores, s0, n, k, lanes, lane_keys):
    """A lower bound of the ``k``-th largest of ``scores[s0 : s0 + n]`` (``k <= 16 <=
    n``) in one branch-free pass: the ``k``-th largest of the maxima of 16 interleaved
    lanes (``k`` distinct items reach it). The lanes are 16 local values (registers),
    ranked by their :func:`order_key` in ``lane_keys``."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = -np.inf
    a8 = a9 = a10 = a11 = a12 = a13 = a14 = a15 = -np.inf
    full = n - n % _LANES
    for c in range(s0, s0 + full, _LANES):
        a0, a1 = _larger(scores[c], a0), _larger(scores[c + 1], a1)
        a2, a3 = _larger(scores[c + 2], a2), _larger(scores[c + 3], a3)
        a4, a5 = _larger(scores[c + 4], a4), _larger(scores[c + 5], a5)
        a6, a7 = _larger(scores[c + 6], a6), _larger(scores[c + 7], a7)
        a8, a9 = _larger(scores[c + 8], a8), _larger(scores[c + 9], a9)
        a10, a11 = _larger(scores[c + 10], a10), _larger(scores[c + 11], a11)
        a12, a13 = _larger(scores[c + 12], a12), _larger(scores[c + 13], a13)
        a14, a15 = _larger(scores[c + 14], a14), _larger(scores[c + 15], a15)
    lanes[0], lanes[1], lanes[2], lanes[3] = a0, a1, a2, a3
    lanes[4], lanes[5], lanes[6], lanes[7] = a4, a5, a6, a7
    lanes[8], lanes[9], lanes[10], lanes[11] = a8, a9, a10, a11
    lanes[12], lanes[13], lanes[14], lanes[15] = a12, a13, a14, a15
    for i in range(n - full):
        lanes[i] = _larger(scores[s0 + full + i], lanes[i])
    bits = lanes.view(np.int64)
    for i in range(_LANES):  # the lanes' order keys (integer compares vectorize)
        lane_keys[i] = order_key(bits[i])
    bound = _MAX_KEY  # the k-th largest lane maximum, branch-free
    for i in range(_LANES):
        v = lane_keys[i]
        larger = 0
        for j in range(_LANES):
            larger += lane_keys[j] > v
        bound = min(bound, v if larger < k else _MAX_KEY)
    value = np.inf
    for i in range(_LANES):
        value = lanes[i] if lane_keys[i] == bound else value
    return value


@numba.njit(nogil=True, cache=True, inline="always")
def order_key(bits):
    """An int64 in the order of the float64 of ``bits`` (finite, or infinite), equal for
    ``-0.0`` and ``0.0``: integer compares rank the candidates (they vectorize)."""
    bits = 0 if bits == _SIGN else bits
    return bits ^ ((bits >> 63) & _LOW63)


@numba.njit(nogil=True, cache=True, inline="always")  # called once per row
def _all_finite(bits, s0, n):
    """Whether the float64s of ``bits[s0 : s0 + n]`` are all finite (one integer pass)."""
    special = False
    for j in range(s0, s0 + n):
        special |= (bits[j] & _EXPONENT) == _EXPONENT  # infinite or NaN
    return not special


@numba.njit(nogil=True, cache=True, inline="always")  # called once per row
def _top_k_bounded(scores, bits, s0, n, k, lanes, keys, where, vals, cols):
    """:func:`_top_k_row` of a row of at least 16 items and ``k <= 16``: the scores at or
    above :func:`_kth_bound` gathered first (branch-free; a score equal to a selected one
    is among them), then every one of them placed at the slot of its count of larger ones
    (slot ``k``: left out), by their :func:`order_key` (``bits``: the scores' bits).
    ``vals`` and ``cols`` hold ``k + 1`` values. Returns whether a tie touches the
    selection."""
    bound = _kth_bound(scores, s0, n, k, lanes, keys)
    m = 0
    for j in range(n):
        where[m] = j
        m += scores[s0 + j] >= bound
    for i in range(m):
        keys[i] = order_key(bits[s0 + where[i]])
    tied = False
    for i in range(m):
        v = keys[i]
        larger = 0
        equal = 0
        for j in range(m):
            larger += keys[j] > v
            equal += keys[j] == v
        slot = min(larger, k)
        vals[slot] = scores[s0 + where[i]]
        cols[slot] = where[i]
        tied |= (equal > 1) & (larger < k)
    return tied


@numba.njit(nogil=True, cache=True, inline="always")  # called once per row
def _grade_counts(labels, weights, s0, n, grouped, counts):
    """``counts[c]``: the items of ``labels[s0 : s0 + n]`` of grade ``c`` (the label, or 0
    where the group weight is 0), cleared first up to the largest grade; returns that
    grade, or -1 unless every label is a whole number in ``[0, counts.size - 1]``. Grades
    below 8 of lists of at most 255 items are counted in the 8-bit fields of one integer
    (one branch-free pass)."""
    fields = np.int64(0)
    bad = False
    for j in range(s0, s0 + n):
        v = labels[j]
        c = np.int64(min(max(v, 0.0), _FIELD_GRADES - 1.0))  # NaN: 0
        bad |= np.float64(c) != v
        if grouped:
            c *= np.int64(weights[j] != 0.0)
        fields += np.int64(1) << (c << 3)
    if not bad and n <= _FIELD_ROW:
        hi = 0
        for c in range(_FIELD_GRADES):
            counts[c] = (fields >> (8 * c)) & 255
            if counts[c]:
                hi = c
        return hi
    counts[:] = 0
    hi = 0
    for j in range(s0, s0 + n):
        v = labels[j]
        if not (v >= 0.0 and v < counts.size):
            return -1
        c = np.int64(v)
        if np.float64(c) != v:
            return -1
        if grouped and weights[j] == 0.0:
            c = 0
        counts[c] += 1
        hi = max(hi, c)
    return hi
