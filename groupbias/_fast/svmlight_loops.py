"""Compiled loop of the SVMlight reader (numba; loaded only through
:func:`groupbias._fast.svmlight.chunk_loop`): one pass over the bytes of a chunk of whole
lines, writing labels, query ids and the features, as dense rows or as (row, feature id,
value) triples.

It accepts the common spelling only and declines (returns False) on anything else, which
then goes through the line-by-line parser of ``data_loaders.svmlight`` (that parser raises
the errors, with file, line and field):

* tokens separated by spaces, tabs, ``\\v``, ``\\f`` or ``\\r``; ``#`` starts a comment that
  runs to the end of the line; blank and comment-only lines are skipped (and counted);
* a line is ``<label> [qid:<id>] <feature id>:<value> ...`` with feature ids in increasing
  order from ``base`` and below ``limit`` (``qid`` required in ``"required"`` mode);
* numbers are ``[+-]digits[.digits]`` (``1.`` and ``.5`` too) with at most 22 digits after
  the point and an integer mantissa ``M`` of at most ``2**53``: the value is ``M / 10**F``,
  one correctly rounded division of exact operands, hence ``float(token)`` (what the
  line-by-line parser computes); feature values are then rounded to float32 as there;
* a value or label that rounds to infinity in float32, a query id of more than 18 digits,
  an exponent, or a longer mantissa: declined.

``tests/loaders/test_svmlight.py`` compares both parsers on the same files.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["parse_chunk"]

_POW10 = np.array([10.0**i for i in range(23)])
_MAX_MANTISSA = 1 << 53
_F32_OVERFLOW = 2.0**128 - 2.0**103
_NEWLINE, _HASH, _COLON, _DOT, _PLUS, _MINUS, _ZERO = 10, 35, 58, 46, 43, 45, 48


@numba.njit(nogil=True, cache=True, inline="always")
def _space(b):
    return b == 32 or 9 <= b <= 13 and b != _NEWLINE


@numba.njit(nogil=True, cache=True, inline="always")
def _ends(b):
    """A token ends at whitespace (the newline included) or a comment."""
    return b == 32 or 9 <= b <= 13 or b == _HASH


@numba.njit(nogil=True, cache=True)
def _digits(buf, pos, m):
    """Decimal digits from ``pos`` appended to ``m``: ``(m, count, end)``."""
    start = pos
    while True:
        d = np.uint8(buf[pos] - _ZERO)
        if d > 9:
            break
        m = m * 10 + np.int64(d)
        pos += 1
    return m, pos - start, pos


@numba.njit(nogil=True, cache=True)
def _decimal(buf, pos, pow10):
    """``(ok, value, end)`` of the number at ``pos`` (see the module docstring)."""
    neg = False
    b = buf[pos]
    if b == _MINUS or b == _PLUS:
        neg = b == _MINUS
        pos += 1
    m, n_int, pos = _digits(buf, pos, np.int64(0))
    n_frac = 0
    if buf[pos] == _DOT:
        m, n_frac, pos = _digits(buf, pos + 1, m)
    digits = n_int + n_frac
    # at most 18 digits cannot overflow int64; the mantissa must be exact in a double
    if digits == 0 or digits > 18 or m > _MAX_MANTISSA or n_frac > 22 or not _ends(buf[pos]):
        return False, 0.0, pos
    value = np.float64(m) / pow10[n_frac]
    return True, -value if neg else value, pos


@numba.njit(nogil=True, cache=True)
def _integer(buf, pos, max_digits):
    """``(ok, value, end)`` of the unsigned integer at ``pos`` (at most ``max_digits``)."""
    v = np.int64(0)
    n = 0
    while True:
        d = np.int64(buf[pos]) - _ZERO
        if not 0 <= d <= 9:
            break
        v = v * 10 + d
        n += 1
        pos += 1
        if n > max_digits:
            return False, v, pos
    return n > 0, v, pos


# long: one pass over a chunk's bytes, every field of a line parsed where it is read
@numba.njit(nogil=True, cache=True)
def parse_chunk(
    buf, start, end, qid_required, base, limit, labels, qids, line_idx, block, rows, fids, vals
):
    """Parse ``buf[start:end]`` (whole lines, the last ending with ``\\n``): ``(ok, R, P)``;
    row ``r`` has its label in ``labels[r]``, query id in ``qids[r]`` (-1 without one) and
    0-based line in ``line_idx[r]``. Features: into ``block[r]`` (float32, zeros where
    absent; ids from ``base``) when ``block`` has rows, else as the ``P`` triples
    ``rows``, ``fids``, ``vals`` (room for one per ``:`` of the chunk). ``ok`` False: a
    spelling this loop declines (see the module docstring)."""
    dense = block.shape[0] > 0
    pow10 = _POW10
    pos = start
    line = 0
    R = 0
    P = 0
    while pos < end:
        while _space(buf[pos]):
            pos += 1
        b = buf[pos]
        if b == _HASH:
            while buf[pos] != _NEWLINE:
                pos += 1
            b = _NEWLINE
        if b == _NEWLINE:  # blank or comment-only line
            pos += 1
            line += 1
            continue
        if b < 32 and not 9 <= b <= 13:
            return False, R, P
        ok, label, pos = _decimal(buf, pos, pow10)
        if not ok or abs(label) >= _F32_OVERFLOW:
            return False, R, P
        qid = np.int64(-1)
        prev = base - 1
        while True:
            while _space(buf[pos]):
                pos += 1
            b = buf[pos]
            if b == _NEWLINE or b == _HASH:
                break
            if (
                b == 113  # q
                and buf[pos + 1] == 105  # i
                and buf[pos + 2] == 100  # d
                and buf[pos + 3] == _COLON
                and qid < 0
                and prev == base - 1
            ):
                ok, qid, pos = _integer(buf, pos + 4, 18)
                if not ok or not _ends(buf[pos]):
                    return False, R, P
                continue
            ok, fid, pos = _integer(buf, pos, 9)
            if not ok or buf[pos] != _COLON or fid <= prev or fid >= limit:
                return False, R, P
            ok, value, pos = _decimal(buf, pos + 1, pow10)
            if not ok or abs(value) >= _F32_OVERFLOW:
                return False, R, P
            if dense:
                block[R, fid - base] = np.float32(value)
            else:
                rows[P] = R
                fids[P] = fid
                vals[P] = np.float32(value)
                P += 1
            prev = fid
        if qid_required and qid < 0:
            return False, R, P
        while buf[pos] != _NEWLINE:  # a comment to the end of the line
            pos += 1
        pos += 1
        labels[R] = label
        qids[R] = qid
        line_idx[R] = line
        R += 1
        line += 1
    return True, R, P
