"""Compiled loops of deterministic rankings and of the per-query sums over them, used when
numba is installed (the ``fast`` extra) and the data are large enough to pay for loading
them (:func:`groupbias.rank.ranking.ranking_loops`).

Each loop computes exactly what the numpy passes of :mod:`groupbias.rank.ranking` and
:mod:`groupbias.evaluation` compute, in one pass over the items instead of several:

* selections and orders (which column holds which slot, which rows hold ties, the sorted
  grades of a row) are integer results, equal by construction;
* float results repeat numpy's operations one for one (no fused multiply-add, no
  fast-math): :func:`pairwise_sum` is numpy's summation order (eight accumulators, halves
  above 128 values), so a sum over a query here has the bits of ``np.add.reduceat`` (first
  value plus the pairwise sum of the rest) and of ``ndarray.sum(axis=1)`` (the pairwise sum
  of the row).

``tests/rank/test_ranking_loops.py`` compares every loop with the numpy path bit for bit. The
loops release the GIL and are compiled on first use, then cached on disk (``cache=True``).
"""

# long: every compiled loop of rankings in one module, loaded at once where they pay (one
# import of numba, one on-disk cache); the loops share the pairwise-sum leaf and the helpers
from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "pairwise_sum",
    "packed_heads",
    "packed_tied_rows",
    "grade_tops",
    "packed_keys",
    "sorted_slot_weights",
    "group_sums2",
    "ranked_group_sums",
    "eel_target",
    "top_k_dcg",
    "order_key",
    "TOP_K_MAX",
]

_PW_BLOCK = 128
#: scratch frames of :func:`pairwise_sum` (halving 2^63 values takes fewer)
_FRAMES = 64


@numba.njit(nogil=True, cache=True, inline="always")
def _block_sum(row, n):
    """numpy's pairwise sum of the ``n <= 128`` values of ``row`` (one leaf of
    :func:`pairwise_sum`; a slice and range loops, so that the loads need no index
    checks)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += row[i]
        return res
    r0, r1, r2, r3 = row[0], row[1], row[2], row[3]
    r4, r5, r6, r7 = row[4], row[5], row[6], row[7]
    end = n - n % 8
    for i in range(8, end, 8):
        r0 += row[i]
        r1 += row[i + 1]
        r2 += row[i + 2]
        r3 += row[i + 3]
        r4 += row[i + 4]
        r5 += row[i + 5]
        r6 += row[i + 6]
        r7 += row[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(end, n):
        res += row[i]
    return res


@numba.njit(nogil=True, cache=True)
def pairwise_sum(x, lo, n, frames, left):
    """numpy's pairwise sum of ``x[lo : lo + n]`` (``DOUBLE_pairwise_sum``): fewer than 8
    values one after another from ``-0.0``; up to 128 in eight interleaved accumulators
    combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` and the rest added in
    order; more: the two halves (the first a multiple of 8) summed alike and added. The
    halving runs on scratch frames (``frames`` int64 [64, 3]: start, length, which half is
    pending; ``left`` float64 [64]: the left half's sum) instead of recursion, which numba
    does not cache."""
    if n <= _PW_BLOCK:
        return _block_sum(x[lo : lo + n], n)
    sp = 0
    frames[0, 0], frames[0, 1], frames[0, 2] = lo, n, 0
    res = 0.0
    while True:
        flo, fn = frames[sp, 0], frames[sp, 1]
        if fn > _PW_BLOCK:  # descend into the left half
            n2 = fn // 2
            n2 -= n2 % 8
            frames[sp, 2] = 1
            sp += 1
            frames[sp, 0], frames[sp, 1], frames[sp, 2] = flo, n2, 0
            continue
        res = _block_sum(x[flo : flo + fn], fn)
        while True:  # hand res up: a left half starts its right half, a right half adds
            sp -= 1
            if sp < 0:
                return res
            if frames[sp, 2] == 1:
                left[sp] = res
                frames[sp, 2] = 2
                plo, pn = frames[sp, 0], frames[sp, 1]
                n2 = pn // 2
                n2 -= n2 % 8
                sp += 1
                frames[sp, 0], frames[sp, 1], frames[sp, 2] = plo + n2, pn - n2, 0
                break
            res = left[sp] + res


#: grades counted in the 8-bit fields of one int64 (rows of at most 255 items)
_FIELD_GRADES = 8
_FIELD_ROW = 255


@numba.njit(nogil=True, cache=True)
def grade_tops(values, starts, sizes, max_grade, out):
    """The ``out.shape[1]`` largest values of every row, descending, ``-inf`` beyond the
    row, from counts per grade (from the row's largest grade down); False (``out``
    unfinished) unless every value is a whole number in ``[0, max_grade]``. Rows of grades
    below 8 and at most 255 items count in the 8-bit fields of one integer (one branch-free
    pass)."""
    n = out.shape[1]
    counts = np.zeros(max_grade + 1, dtype=np.int64)
    for r in range(starts.size):
        s0 = starts[r]
        size = sizes[r]
        bad = 0
        fields = np.int64(0)
        for j in range(s0, s0 + size):
            v = values[j]
            c = np.int64(min(max(v, 0.0), _FIELD_GRADES - 1.0))  # NaN: 0
            bad |= np.int64(np.float64(c) != v)
            fields += np.int64(1) << (c << 3)
        if bad == 0 and size <= _FIELD_ROW:
            for g in range(_FIELD_GRADES):
                counts[g] = (fields >> (8 * g)) & 255
            top = _FIELD_GRADES - 1
        else:  # a grade of 8 or more, or a long row: one count per grade
            counts[:] = 0
            for j in range(s0, s0 + size):
                v = values[j]
                if not (v >= 0.0 and v <= max_grade):
                    return False
                c = np.int64(v)
                if np.float64(c) != v:
                    return False
                counts[c] += 1
            top = max_grade
        p = 0
        g = top
        while g >= 0 and p < n:
            c = counts[g]
            while c > 0 and p < n:
                out[r, p] = g
                p += 1
                c -= 1
            g -= 1
        while p < n:
            out[r, p] = -np.inf
            p += 1
    return True


@numba.njit(nogil=True, cache=True)
def packed_keys(scores, starts, sizes, bits, fill, low, out):
    """The packed sort keys of every row (``out[r, j]``, float64: the score of column ``j``
    with its lowest ``bits`` mantissa bits replaced by ``j``; ``fill`` in the padding), as
    :func:`groupbias.rank.ranking._packed_sort` builds them; False unless every score is
    finite and above ``low``."""
    mask = (np.int64(1) << bits) - 1
    keys = out.view(np.int64)
    iscores = scores.view(np.int64)
    w = out.shape[1]
    ok = True
    for r in range(starts.size):
        s0 = starts[r]
        size = sizes[r]
        for j in range(size):
            v = scores[s0 + j]
            ok &= (v > low) & (v < np.inf)
            keys[r, j] = (iscores[s0 + j] & ~mask) | j
        for j in range(size, w):
            out[r, j] = fill
    return ok


@numba.njit(nogil=True, cache=True, inline="always")
def _equal_high(a, b):
    """Two packed keys with the column bits dropped are equal as floats: the same bits,
    or +0 and -0 (nothing but the sign bit left)."""
    return (a == b) | (((a << 1) == 0) & ((b << 1) == 0))


@numba.njit(nogil=True, cache=True)
def sorted_slot_weights(keys, mask, starts, sizes, table, out, tied):
    """Rows of packed keys (their bits, int64) sorted ascending as floats (padding first):
    ``out[starts[r] + column] = table[slot]`` for every real item (slot 0: the largest
    key), and ``tied[r]`` whether two real keys of the row are equal as floats once the
    column bits (``mask``) are dropped."""
    by_position = _by_position(table, keys.shape[1])
    for r in range(starts.size):
        s0 = starts[r]
        tied[r] = _scatter_row(keys[r], mask, sizes[r], by_position, out[s0 : s0 + sizes[r]])


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


@numba.njit(nogil=True, cache=True)
def packed_heads(keys, mask, sizes, heads, first_tie):
    """Rows of packed keys (their bits, int64) sorted ascending: ``heads[r, j]`` the column
    bits of the ``j``-th largest key (``j < h = heads.shape[1]``, padding included) and
    ``first_tie[r]`` the first of those slots whose key equals the one before as a float
    once the column bits (``mask``) are dropped (``h`` when none of them does)."""
    w = keys.shape[1]
    h = heads.shape[1]
    for r in range(sizes.size):
        real = min(sizes[r], h)
        first = h
        prev = np.int64(0)
        for slot in range(h):
            key = keys[r, w - 1 - slot]
            heads[r, slot] = key & mask
            high = key & ~mask
            if 0 < slot < real and first == h and _equal_high(high, prev):
                first = slot
            prev = high
        first_tie[r] = first


@numba.njit(nogil=True, cache=True)
def packed_tied_rows(keys, mask, sizes, tied):
    """``tied[r]``: two real keys (their bits, int64) of the sorted row ``r`` are equal as
    floats once the column bits (``mask``) are dropped (the exact path's cue)."""
    w = keys.shape[1]
    for r in range(sizes.size):
        t = False
        prev = np.int64(0)
        for slot in range(sizes[r]):
            high = keys[r, w - 1 - slot] & ~mask
            t |= (slot > 0) & _equal_high(high, prev)
            prev = high
        tied[r] = t


@numba.njit(nogil=True, cache=True, inline="always")
def _tail_sum(p, n, frames, left):
    """:func:`pairwise_sum` of ``p[1:n]``, its one- and two-leaf cases written out (the
    common list lengths: a call into the halving loop costs as much as the sum)."""
    m = n - 1
    if m <= _PW_BLOCK:
        return _block_sum(p[1:n], m)
    half = m // 2
    half -= half % 8
    if m - half <= _PW_BLOCK:
        return _block_sum(p[1 : 1 + half], half) + _block_sum(p[1 + half : n], m - half)
    return pairwise_sum(p, 1, m, frames, left)


@numba.njit(nogil=True, cache=True, inline="always")
def _segment4(a, b, g, lo, n, frames, left, prods, out, r):
    """``out[r, 0..3]``: the sums of ``a g``, ``a (1 - g)``, ``b g`` and ``b (1 - g)`` over
    ``lo .. lo + n`` with the bits of ``np.add.reduceat`` of each product (the first value
    plus the pairwise sum of the rest; 0 when ``n`` is 0). The products go to ``prods``
    (four float64 buffers of the longest segment: contiguous 1-D arrays, which the loads
    and stores need to be fast), then each is summed alone."""
    if n == 0:
        out[r, 0] = out[r, 1] = out[r, 2] = out[r, 3] = 0.0
        return
    a, b, g = a[lo : lo + n], b[lo : lo + n], g[lo : lo + n]
    p0, p1, p2, p3 = prods
    for i in range(n):
        gi = g[i]
        hi = 1.0 - gi
        p0[i] = a[i] * gi
        p1[i] = a[i] * hi
        p2[i] = b[i] * gi
        p3[i] = b[i] * hi
    out[r, 0] = p0[0] + _tail_sum(p0, n, frames, left)
    out[r, 1] = p1[0] + _tail_sum(p1, n, frames, left)
    out[r, 2] = p2[0] + _tail_sum(p2, n, frames, left)
    out[r, 3] = p3[0] + _tail_sum(p3, n, frames, left)


@numba.njit(nogil=True, cache=True)
def group_sums2(a, b, g, starts, sizes, out):
    """Per segment ``starts[r] .. starts[r] + sizes[r]`` (a query) the sums of ``a g``,
    ``a (1 - g)``, ``b g`` and ``b (1 - g)`` into ``out[r, 0..3]`` with the bits of
    ``segment_sum`` of each product, in one pass over the three arrays."""
    frames = np.empty((_FRAMES, 3), dtype=np.int64)
    left = np.empty(_FRAMES)
    m = _max_size_of(sizes)
    prods = (np.empty(m), np.empty(m), np.empty(m), np.empty(m))
    for r in range(starts.size):
        _segment4(a, b, g, starts[r], sizes[r], frames, left, prods, out, r)


@numba.njit(nogil=True, cache=True)
def ranked_group_sums(keys, mask, starts, sizes, table, values, g, grading, out, tied):
    """For every row of packed keys (their bits, int64) sorted ascending: the rank weight
    ``e_i = table[slot]`` of every item, and per row the sums of ``e g``, ``e (1 - g)``,
    ``v g`` and ``v (1 - g)`` (``out[r, 0..3]``, the bits of ``segment_sum`` of each
    product over the query, as :func:`group_sums2` on the dense weights), without the dense
    weights: every row in a buffer of its own. ``v`` is ``values`` or, when ``grading =
    (thresholds, prefix)`` is given, the EEL target exposure of the grades ``#{t <= value}``
    (as :func:`eel_target`). ``tied[r]``: two real keys of the row are equal as floats once
    the column bits (``mask``) are dropped; such a row's sums are the caller's to redo."""
    w = keys.shape[1]
    frames = np.empty((_FRAMES, 3), dtype=np.int64)
    left = np.empty(_FRAMES)
    prods = (np.empty(w), np.empty(w), np.empty(w), np.empty(w))
    ebuf = np.empty(w)
    vbuf = np.empty(w)
    by_position = _by_position(table, w)
    thresholds, prefix = grading
    n_levels = thresholds.size + 1
    counts = np.zeros(n_levels, dtype=np.int64)
    mean = np.empty(n_levels)
    grades = np.empty(w, dtype=np.int64)
    for r in range(starts.size):
        s0 = starts[r]
        n = sizes[r]
        tied[r] = _scatter_row(keys[r], mask, n, by_position, ebuf)
        v = values[s0 : s0 + n]
        if prefix.size:
            counts[:] = 0
            for i in range(n):
                c = _grade(values[s0 + i], thresholds)
                grades[i] = c
                counts[c] += 1
            above = 0
            for c in range(n_levels - 1, -1, -1):
                k = counts[c]
                if k:
                    mean[c] = (prefix[above + k] - prefix[above]) / k
                above += k
            for i in range(n):
                vbuf[i] = mean[grades[i]]
            v = vbuf[:n]
        _segment4(ebuf, v, g[s0 : s0 + n], 0, n, frames, left, prods, out, r)


#: grades whose counts per query fit the 8-bit fields of one int64 (queries of at most
#: 255 items)
_FIELD_GRADES = 8
_FIELD_ROW = 255


@numba.njit(nogil=True, cache=True, inline="always")
def _grade(v, thresholds):
    c = 0
    for t in thresholds:
        c += np.int64(v >= t)
    return c


@numba.njit(nogil=True, cache=True)
def eel_target(values, thresholds, qptr, prefix, out):
    """EEL target exposure of every item: its grade ``#{t <= value}`` (``thresholds``
    ascending), and the mean position exposure of the ranks its grade block occupies in its
    query, ``(prefix[above + count] - prefix[above]) / count`` (``prefix``: 0 and the
    cumulative sums of the position exposures), as
    :func:`groupbias.evaluation.exposure.tie_average_exposure` computes it from grade
    counts. Returns the smallest and the largest grade (``(0, -1)`` without items)."""
    n_levels = thresholds.size + 1
    counts = np.zeros(n_levels, dtype=np.int64)
    mean = np.empty(n_levels)
    grades = np.empty(_max_size(qptr), dtype=np.int64)
    lo_grade = n_levels
    hi_grade = -1
    fields_fit = n_levels <= _FIELD_GRADES
    for q in range(qptr.size - 1):
        lo = qptr[q]
        n = qptr[q + 1] - lo
        if n == 0:
            continue
        fields = np.int64(0)
        for i in range(n):
            c = _grade(values[lo + i], thresholds)
            grades[i] = c
            fields += np.int64(1) << (8 * c)
        if fields_fit and n <= _FIELD_ROW:
            for c in range(n_levels):
                counts[c] = (fields >> (8 * c)) & 255
        else:
            counts[:] = 0
            for i in range(n):
                counts[grades[i]] += 1
        above = 0
        for c in range(n_levels - 1, -1, -1):
            k = counts[c]
            if k:
                mean[c] = (prefix[above + k] - prefix[above]) / k
                lo_grade = min(lo_grade, c)
                hi_grade = max(hi_grade, c)
            above += k
        for i in range(n):
            out[lo + i] = mean[grades[i]]
    if hi_grade < 0:
        return 0, -1
    return lo_grade, hi_grade


@numba.njit(nogil=True, cache=True)
def _max_size_of(sizes):
    m = 1
    for n in sizes:
        m = max(m, n)
    return m


@numba.njit(nogil=True, cache=True)
def _max_size(qptr):
    m = 1
    for q in range(qptr.size - 1):
        m = max(m, qptr[q + 1] - qptr[q])
    return m


#: the longest cutoff whose DCG :func:`top_k_dcg` sums (one leaf of the pairwise sum)
TOP_K_MAX = _PW_BLOCK


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


#: lanes of the running maxima that bound a row's k-th largest score from below
_LANES = 16


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


#: the sign bit, the bits of the exponent and the other 63 bits of a float64's bits
_SIGN = np.int64(-(2**63))
_EXPONENT = np.int64(0x7FF0000000000000)
_LOW63 = np.int64(2**63 - 1)
#: above every key of a finite score
_MAX_KEY = _LOW63


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


# long: one pass per query does the selection, the tie check, DCG and the ideal gains
@numba.njit(nogil=True, cache=True)
def top_k_dcg(scores, bits, labels, weights, qptr, slots, blocks, queries, k, table, gains, out):
    """DCG@k of the queries ``queries = (q0, q1)`` (items ``qptr[q] .. qptr[q + 1]``, read
    in query order: the memory order) from a top-k selection of their scores, with the bits
    of ``Exposure.sums`` over the clean top-k views of :class:`~groupbias.rank.ranking.
    DeterministicRanking`, and the ideal gains of :meth:`~groupbias.rank.ranking.
    DeterministicRanking.best` from the counts of every grade. ``bits``: the scores' bits
    (``scores.view(np.int64)``).

    ``slots[q]``: the row of query ``q`` in the order of the padded blocks (-1: empty) and
    ``slots[n_queries + q]`` its block. ``blocks`` (int64 [n_blocks, 5]): per block its last
    row + 1, its view width ``w = min(k, width)``, whether its rows are checked for ties over
    the whole list (1: lists shorter than 2k, ranked by a full sort there), the offset of its
    ideal gains in ``out[2]`` and its width. ``weights``: the group weight of every item (0
    or 1), or empty for all items. ``gains[c]``: the gain of grade ``c``. ``table``: the
    rank weights (the DCG discount cut at ``k``).

    ``out = (dcg, tied, ideal)``, by row: ``dcg[r]`` the pairwise sum of the ``w`` products
    ``gain * weight * table[slot]`` (0 beyond the list), ``tied[r]`` whether a tie touches
    the selection (such a row's block is the caller's to redo), ``ideal[off + (r - first
    row) * w + j]`` the gain of the ``j``-th largest grade (of ``label * weight``), 0 beyond
    the list. Returns the number of tied rows, or -1 (``out`` unfinished) unless every
    label is a whole number in ``[0, gains.size - 1]`` and every score is finite."""
    dcg, tied, ideal = out
    q0, q1 = queries
    n_queries = qptr.size - 1
    grouped = weights.size > 0
    cap_max = k + 1
    for b in range(blocks.shape[0]):
        if blocks[b, 2]:
            cap_max = max(cap_max, blocks[b, 4])
    longest = _max_size(qptr[q0 : q1 + 1])
    lanes = np.empty(_LANES)
    keys = np.empty(longest, dtype=np.int64)
    where = np.empty(longest, dtype=np.int64)
    vals = np.empty(cap_max)
    cols = np.empty(cap_max, dtype=np.int64)
    prod = np.empty(k)
    counts = np.zeros(gains.size, dtype=np.int64)
    n_tied = 0
    for q in range(q0, q1):
        r = slots[q]
        if r < 0:
            continue
        b = slots[n_queries + q]
        w, whole, off = blocks[b, 1], blocks[b, 2], blocks[b, 3]
        first = blocks[b - 1, 0] if b > 0 else 0
        s0 = qptr[q]
        n = qptr[q + 1] - s0
        m = min(k, n)
        hi = _grade_counts(labels, weights, s0, n, grouped, counts)
        if hi < 0:
            return -1
        row = ideal[off + (r - first) * w : off + (r - first + 1) * w]
        j = 0
        for c in range(hi, -1, -1):
            for _ in range(min(counts[c], w - j)):
                row[j] = gains[c]
                j += 1
        while j < w:
            row[j] = 0.0
            j += 1
        if whole or k > _LANES or n < _LANES:
            t = _top_k_row(scores[s0 : s0 + n], n if whole else m, vals, cols)
        else:
            t = _top_k_bounded(scores, bits, s0, n, k, lanes, keys, where, vals, cols)
        if not _all_finite(bits, s0, n):
            return -1
        tied[r] = t
        n_tied += t
        if t:  # the caller redoes the block (the columns may be any)
            dcg[r] = 0.0
            continue
        for j in range(m):
            x = gains[np.int64(labels[s0 + cols[j]])]
            if grouped:
                x = x * weights[s0 + cols[j]]
            prod[j] = x * table[j]
        for j in range(m, w):
            prod[j] = 0.0
        dcg[r] = _block_sum(prod[:w], w)
    return n_tied
