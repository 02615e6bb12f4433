"""The compiled loop (numba) of the Plackett–Luce Monte Carlo
(:mod:`groupbias._fast.plackett_luce`): the slot weights of the sorted race keys added up per
item in one pass, instead of a scatter into a [samples, rows, width] array and two sums over
it. The same keys as the numpy path; the sums are taken in another order, so the two paths
agree within the equality contract. Releases the GIL; compiled on first use, then cached on
disk. Loaded only through :func:`groupbias._fast.backend.compiled`.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["accumulate"]


@numba.njit(nogil=True, cache=True)
def accumulate(keys, low, tab, acc, acc2):
    """Sorted packed keys [n_samples, m, w] (slot ``j`` has rank ``j + 1``): adds to
    ``acc[r, item]`` the sum over the samples of ``tab[slot]`` and to ``acc2`` that of its
    square (taken in float32, as the numpy path does)."""
    n_samples, m, w = keys.shape
    for s in range(n_samples):
        for r in range(m):
            for j in range(w):
                c = keys[s, r, j] & low
                acc[r, c] += np.float64(tab[j])
                acc2[r, c] += np.float64(tab[j] * tab[j])  # squared in float32, as numpy
