"""Compiled loops of the Plackett–Luce Monte Carlo (:mod:`groupbias.rank.sampler`), used
when numba is installed (the ``fast`` extra).

Each kernel fuses passes that the numpy path makes one array operation at a time, with the
same IEEE float32 arithmetic in the same order (no fused multiply-add, no fast-math), so
both paths give bit-identical exposures (``tests/rank/test_policies.py`` checks it); numba only
removes the passes and the fancy-indexed scatter. The kernels release the GIL (``nogil``),
so the policy's thread pool runs them in parallel. They are compiled on first use and
cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

# the constants of the float32 logarithm of :func:`groupbias.rank.sampler.log32`, which the
# loops below repeat operation for operation (tests/rank/test_policies.py checks the same bits)
from .sampler import LN2, LOG32_ATANH, LOG32_OFFSET

__all__ = ["SFC64Stream", "race_keys", "accumulate"]


class SFC64Stream:
    """The raw 64-bit words of a numpy ``SFC64`` bit generator (``random_raw``), drawn in a
    compiled loop from a copy of its state: the same words, several times faster."""

    def __init__(self, bitgen: np.random.SFC64) -> None:
        self.state = np.array(bitgen.state["state"]["state"], dtype=np.uint64)

    def random_raw(self, n: int) -> np.ndarray:
        out = np.empty(n, dtype=np.uint64)
        _sfc64(self.state, out)
        return out


@numba.njit(nogil=True, cache=True)
def _sfc64(state: np.ndarray, out: np.ndarray) -> None:
    """Chris Doty-Humphrey's SFC64 (numpy's ``SFC64``): state ``a, b, c, counter``."""
    a, b, c, k = state[0], state[1], state[2], state[3]
    for i in range(out.size):
        t = a + b + k
        k += np.uint64(1)
        a = b ^ (b >> np.uint64(11))
        b = c + (c << np.uint64(3))
        c = ((c << np.uint64(24)) | (c >> np.uint64(40))) + t
        out[i] = t
    state[0], state[1], state[2], state[3] = a, b, c, k


@numba.njit(nogil=True, cache=True, error_model="numpy")
def race_keys(bits: np.ndarray, values: np.ndarray, low: np.int32) -> None:
    """Raw 32-bit words [n_samples, m, w] → in place, as int32, the race keys ``log u ·
    values`` (float32, ``values = -1 / p``) with the column in the bits ``low``: the steps
    of ``groupbias.rank.sampler`` (the race keys) in one loop, float32 operation for operation."""
    n_samples, m, w = bits.shape
    keys = bits.view(np.int32)
    high = ~low
    for s in range(n_samples):
        for r in range(m):
            for j in range(w):
                u = np.uint32((bits[s, r, j] >> np.uint32(9)) | np.uint32(0x3F800001))
                ub = np.float32(u.view(np.float32) - np.float32(1.0)).view(np.int32)
                k = (ub - np.int32(LOG32_OFFSET)) >> np.int32(23)
                f = np.int32(ub - (k << np.int32(23))).view(np.float32) - np.float32(1.0)
                t = f / (np.float32(2.0) + f)
                z = t * t
                p = z * np.float32(LOG32_ATANH[3])
                p = p + np.float32(LOG32_ATANH[2])
                p = p * z
                p = p + np.float32(LOG32_ATANH[1])
                p = p * z
                p = p + np.float32(LOG32_ATANH[0])
                log_u = np.float32(k) * np.float32(LN2) + p * t
                x = log_u * values[r, j]
                keys[s, r, j] = (np.float32(x).view(np.int32) & high) | j


@numba.njit(nogil=True, cache=True)
def accumulate(keys, low, tab, tab2, acc, acc2) -> None:
    """Sorted packed keys [n_samples, m, w] (slot ``j`` has rank ``j + 1``): adds to
    ``acc[r, item]`` the float64 sum over the samples of ``tab[slot]`` (float32), and to
    ``acc2`` that of ``tab2[slot]`` (``tab · tab`` in float32), each summed from 0 in
    sample order and then added, as the numpy path does."""
    n_samples, m, w = keys.shape
    part = np.zeros((m, w))
    part2 = np.zeros((m, w))
    for s in range(n_samples):
        for r in range(m):
            for j in range(w):
                c = keys[s, r, j] & low
                part[r, c] += np.float64(tab[j])
                part2[r, c] += np.float64(tab2[j])
    acc += part
    acc2 += part2
