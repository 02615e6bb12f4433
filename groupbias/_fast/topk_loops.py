"""Compiled loops of the top k of every row (numba; loaded only through
:func:`groupbias._fast.topk.top_k_rows` and :func:`~groupbias._fast.topk.product_top_k`,
which sums the rows of a sparse product first): per row a partition for the k-th largest value,
then a sort of the entries at or above it, largest first, ties by the smaller column; the
same output as the numpy path (``tests/retrieval/test_top_k_rows.py`` runs both)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["product_top_k", "top_k"]


#: buckets of the histogram that narrows a long row down before its partition
_BUCKETS = 4096


@numba.njit(nogil=True, cache=True)
def _kth_largest(vals, k):
    """The ``k``-th largest of ``vals`` (finite or infinite, ``k < vals.size``). Long rows
    are narrowed by a histogram first: ``bucket(v) = floor((v - lo) * scale)`` is monotone
    in ``v``, so the bucket holding the k-th largest is the first from the top where the
    counts reach ``k``; only the values in it and above are partitioned."""
    n = vals.size
    lo, hi = vals.min(), vals.max()
    scale = (_BUCKETS - 1) / (hi - lo) if hi > lo else 0.0
    if n < 8 * k or not (scale > 0.0 and scale < np.inf):
        return np.partition(vals, n - k)[n - k]
    counts = np.zeros(_BUCKETS, dtype=np.int64)
    for i in range(n):
        counts[int((vals[i] - lo) * scale)] += 1
    top, above = _BUCKETS - 1, 0
    while above + counts[top] < k:
        above += counts[top]
        top -= 1
    cand = np.empty(above + counts[top], dtype=vals.dtype)
    j = 0
    for i in range(n):
        if int((vals[i] - lo) * scale) >= top:
            cand[j] = vals[i]
            j += 1
    return np.partition(cand, cand.size - k)[cand.size - k]


@numba.njit(nogil=True, cache=True)
def _select(docs, vals, k, out_cols, out_vals, o):
    """The ``min(k, n)`` largest of ``vals`` (ties: smaller ``docs`` first, ``docs``
    distinct) written at ``o``; returns how many."""
    n = vals.size
    m = min(n, k)
    if m == 0:
        return 0
    if n > k:
        thr = _kth_largest(vals, k)
        sel = np.flatnonzero(vals >= thr)
    else:
        sel = np.arange(n)
    sel = sel[np.argsort(docs[sel])]
    sel = sel[np.argsort(-vals[sel], kind="mergesort")]
    for i in range(m):
        out_cols[o + i] = docs[sel[i]]
        out_vals[o + i] = vals[sel[i]]
    return m


@numba.njit(nogil=True, cache=True)
def top_k(indptr, indices, data, k, qptr, out_cols, out_vals, r0, r1):
    """Rows ``r0 .. r1``: the ``k`` largest entries of row ``r`` (finite or infinite
    floats, no duplicate columns) written at ``qptr[r] ..`` of ``out_cols`` / ``out_vals``
    (``qptr[r + 1] - qptr[r] = min(k, row size)``)."""
    for r in range(r0, r1):
        a, b = indptr[r], indptr[r + 1]
        _select(indices[a:b], data[a:b], k, out_cols, out_vals, qptr[r])


@numba.njit(nogil=True, cache=True)
def product_top_k(ap, ai, ax, bp, bi, bx, k, starts, out_cols, out_vals, counts, q0, q1, n_cols):
    """Rows ``q0 .. q1`` of the product ``A B`` of two CSR matrices (float64), each row
    summed as scipy's ``csr_matmat`` sums it (the same order, zero sums dropped), and its
    ``k`` largest entries written at ``starts[q]`` (``counts[q]`` of them). Returns False
    where a sum is NaN (the caller then takes the numpy path)."""
    acc = np.zeros(n_cols)
    mark = np.zeros(n_cols, dtype=np.bool_)
    touched = np.empty(n_cols, dtype=np.int64)
    for q in range(q0, q1):
        nt = 0
        for jj in range(ap[q], ap[q + 1]):
            t = ai[jj]
            v = ax[jj]
            for pp in range(bp[t], bp[t + 1]):
                d = bi[pp]
                if not mark[d]:
                    mark[d] = True
                    touched[nt] = d
                    nt += 1
                acc[d] += v * bx[pp]
        docs = np.empty(nt, dtype=np.int64)
        vals = np.empty(nt)
        n = 0
        for i in range(nt):
            d = touched[i]
            s = acc[d]
            acc[d] = 0.0
            mark[d] = False
            if s != 0:
                if s != s:
                    return False
                docs[n] = d
                vals[n] = s
                n += 1
        counts[q] = _select(docs[:n], vals[:n], k, out_cols, out_vals, starts[q])
    return True
