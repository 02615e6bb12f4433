"""Compiled loops (numba) of the Plackett–Luce Monte Carlo (:mod:`groupbias._fast.plackett_luce`):
the race keys of a step in one pass, and the slot weights of the sorted keys added up per
item. Same law and the same draws as the numpy passes; the logarithm is numba's, so keys may
differ from numpy's in the last bit and the two paths agree in distribution (the equality
contract). Release the GIL; compiled on first use, then cached on disk. Loaded only through
:func:`groupbias._fast.backend.compiled`.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["race_keys", "accumulate"]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def race_keys(bits, values, low):
    """Raw 32-bit words [n_samples, m, w] → in place, as int32, the race keys ``log u ·
    values`` (float32, ``values = -1 / p``; ``u`` the midpoint of one of ``2^22`` cells of
    (0, 1)) with the column in the bits ``low``."""
    n_samples, m, w = bits.shape
    keys = bits.view(np.int32)
    high = ~low
    for s in range(n_samples):
        for r in range(m):
            for j in range(w):
                u = np.uint32((bits[s, r, j] >> np.uint32(9)) | np.uint32(0x3F800001))
                x = np.log(np.float32(u.view(np.float32) - np.float32(1.0))) * values[r, j]
                keys[s, r, j] = (np.float32(x).view(np.int32) & high) | j


@numba.njit(nogil=True, cache=True)
def accumulate(keys, low, tab, acc, acc2):
    """Sorted packed keys [n_samples, m, w] (slot ``j`` has rank ``j + 1``): adds to
    ``acc[r, item]`` the sum over the samples of ``tab[slot]`` and to ``acc2`` that of its
    square."""
    n_samples, m, w = keys.shape
    for s in range(n_samples):
        for r in range(m):
            for j in range(w):
                c = keys[s, r, j] & low
                x = np.float64(tab[j])
                acc[r, c] += x
                acc2[r, c] += x * x
