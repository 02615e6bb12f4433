"""Standard normal draws in row blocks, each block from its own generator, on every core.

:func:`block_normals` fills a C-contiguous float32 matrix with N(0, 1) draws. Rows are cut
into blocks of ``BLOCK_VALUES // n_columns`` rows (a fixed size, whatever the core count);
block ``k`` is drawn from ``SFC64(SeedSequence(entropy, spawn_key=(k,)))``. The blocks are
independent, so they are spread over threads (numpy releases the interpreter lock in its
passes) and the values are the same bits on one thread or many.

Within a block, each raw 64-bit word gives two normals by the Box–Muller transform in
float32: ``u1 = (hi + 1) 2^-24`` in (0, 1] and ``u2 = lo 2^-24`` from the top 24 bits of the
word's two 32-bit halves, ``r = sqrt(-2 log u1)``, then ``r cos(2 pi u2)`` and
``r sin(2 pi u2)``, in chunks that stay in the core's cache. The transform is exact up to
float32 rounding; it cannot give ``|z| > 5.77`` (``u1 >= 2^-24``), where the normal has
mass 8e-9. numpy's float32 ``log``, ``sin`` and ``cos`` follow the CPU's instruction set,
so another machine may give values an ulp apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from .threads import cores, in_parallel

__all__ = ["BLOCK_VALUES", "block_normals"]

#: values per block: 8 MiB of float32, a few blocks per core at any useful size
BLOCK_VALUES = 1 << 21
#: word pairs per pass: the pass's five float32/uint32 arrays stay in a core's L2 cache
_CHUNK = 1 << 14
_SCALE = np.float32(2.0**-24)
_ANGLE = np.float32(2.0**-24 * 2.0 * np.pi)


def _box_muller(bits: np.random.SFC64, out: np.ndarray) -> None:
    """Fill the 1-D float32 ``out`` with normals from ``bits``' raw words (module docstring)."""
    r = np.empty(_CHUNK, np.float32)
    angle = np.empty(_CHUNK, np.float32)
    top = np.empty(_CHUNK, np.uint32)
    spare = np.empty(_CHUNK, np.float32)
    shift = np.uint32(8)
    pos, size = 0, out.size
    while pos < size:
        m = min(_CHUNK, (size - pos + 1) // 2)
        words = bits.random_raw(m).view(np.uint32)
        rr, aa, tt = r[:m], angle[:m], top[:m]
        np.right_shift(words[1::2], shift, out=tt)
        tt += np.uint32(1)
        np.multiply(tt, _SCALE, out=rr, dtype=np.float32)
        np.log(rr, out=rr)
        rr *= np.float32(-2.0)
        np.sqrt(rr, out=rr)
        np.right_shift(words[0::2], shift, out=tt)
        np.multiply(tt, _ANGLE, out=aa, dtype=np.float32)
        first = out[pos : pos + m]
        np.cos(aa, out=first)
        first *= rr
        rest = min(m, size - pos - m)  # m, or m - 1 at the end of an odd count
        second = out[pos + m : pos + 2 * m] if rest == m else spare[:m]
        np.sin(aa, out=second)
        second *= rr
        if rest != m:
            out[pos + m :] = second[:rest]
        pos += m + rest


def block_normals(
    out: np.ndarray, entropy: Sequence[int], then: Callable[[slice], None] | None = None
) -> None:
    """Fill ``out`` (float32, 2-D, C-contiguous) with standard normals, block ``k`` of rows
    from its own generator keyed by ``(entropy, k)`` (module docstring). ``then(rows)``, if
    given, is called with each block's row slice right after it is drawn (while the block is
    in cache), on the thread that drew it."""
    if out.dtype != np.float32 or out.ndim != 2 or not out.flags.c_contiguous:
        raise ValueError("block_normals fills a C-contiguous 2-D float32 array")
    n_rows, n_cols = out.shape
    step = max(1, BLOCK_VALUES // max(n_cols, 1))
    starts = list(range(0, n_rows, step))
    root = [int(v) for v in entropy]

    def draw(blocks: Sequence[int]) -> None:
        for k in blocks:
            rows = slice(starts[k], min(starts[k] + step, n_rows))
            bits = np.random.SFC64(np.random.SeedSequence(root, spawn_key=(k,)))
            _box_muller(bits, out[rows].reshape(-1))
            if then is not None:
                then(rows)

    workers = max(1, min(cores(), len(starts)))
    in_parallel([partial(draw, range(w, len(starts), workers)) for w in range(workers)])
