"""Fast, validating reader for SVMlight / LETOR ranking files.

Format (one item per line; see ``docs/data_svmlight.md``)::

    <label> qid:<query id> <feature id>:<value> <feature id>:<value> ... [# comment]

The reader parses whole chunks of the file at once with numpy, with no Python work per line
or per number:

1. the file is read in chunks of whole lines (1 MiB by default) into reused buffers;
2. comments (``#`` to the end of the line) are blanked;
3. every whitespace byte and every ``:`` is an *event*; the non-empty gaps between events are
   the *pieces* (label, ``qid``, query id, feature ids, values); the line structure is checked
   on the events (a colon has a piece on both sides, pieces alternate ``key:value``, every
   line starts with its label);
4. numbers are decoded eight bytes at a time (SWAR): a piece is loaded right-aligned into a
   little-endian 64-bit word (two words for 9..16 bytes, a 32-bit word for ids of at most 4
   digits), every byte is checked to be a digit, one ``.`` or a leading sign, the decimal
   point is squeezed out, and multiply-shift steps combine the digits into an integer
   mantissa ``M`` (at most 2**53); the value is then ``M / 10**F`` (``F`` = digits after the
   point), one correctly rounded IEEE division of exact operands, hence the same double as
   ``float(token)``; single characters are read directly; rarer spellings (exponents, more
   than 16 characters) go through ``float`` after a full-match regex check;
5. values are written into the dense float32 output chunk by chunk (a plain copy when every
   line lists all ids in order, a scatter otherwise).

Any check that fails in the vectorized path sends the chunk to a line-by-line parser that
applies the same grammar and raises :class:`DataFormatError` naming the file, the 1-based
line and the field (or, if the chunk only used a spelling the fast path declines, returns
the same values the fast path would have).

Conventions: column ``j`` of ``features`` holds feature id ``feature_ids[j]``, with
``feature_ids = feature_id_base + arange(n_features)``, so ids stay stable (Yahoo! ids
1..700 are 700 columns even if some id never occurs); absent features are 0. Without
``n_features``, ids above :data:`MAX_FEATURE_ID` are an error (one stray huge id would make
every dense row that wide), and so is a dense matrix over 256 MiB that the file fills to
less than 1 % (:func:`_check_fill`: a 40 KB file with one id of 100,000 would ask for
2 GiB). Labels are float64; ``item_ids`` holds each item's 1-based line
number in the source file. Feature values and labels that round to infinity in float32
(e.g. ``1e39``) and query ids above ``2**63 - 1`` are errors.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias._fast.svmlight import dense_chunk_loop
from groupbias.core.errors import DataFormatError, MissingFilesError
from groupbias.core.validation import is_integer
from groupbias.data.ranking_data import RankingData

__all__ = [
    "FORMAT_VERSION",
    "MAX_FEATURE_ID",
    "SvmlightRows",
    "read_svmlight",
    "parse_svmlight",
    "load_svmlight",
    "qptr_from_qids",
    "check_graded_labels",
]

#: Bumped whenever the parser's output for the same input can change (part of the cache key).
FORMAT_VERSION = 2

#: Largest feature id accepted when ``n_features`` is None (the dense output has one column
#: per id up to the largest, so one stray huge id would allocate a huge row for every line);
#: pass ``n_features`` to accept wider files.
MAX_FEATURE_ID = 100_000
#: Largest query id (int64).
MAX_QID = 2**63 - 1
#: Magnitudes from here on round to infinity in float32 (2**128 - 2**103, the midpoint
#: between the largest float32 and 2**128; ties round to the even 2**128).
F32_OVERFLOW = 2.0**128 - 2.0**103

QID_MODES = ("required", "optional")

_PAD = 16  # spaces before every chunk (word gathers reach 16 bytes back)
_TAIL = 32  # slack after every chunk (word gathers reach 16 bytes forward)
DEFAULT_CHUNK_BYTES = 1 << 20

_NUM_RE = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
UINT_RE = re.compile(rb"[0-9]+")
_NONFINITE = {
    b"nan",
    b"+nan",
    b"-nan",
    b"inf",
    b"+inf",
    b"-inf",
    b"infinity",
    b"+infinity",
    b"-infinity",
}

# ---- SWAR number decoding ---------------------------------------------------------------------
# A piece of L <= 8 bytes ending at ``end`` is loaded right-aligned into one little-endian
# 64-bit word (its first byte at byte 8 - L, its last byte in the top byte). After XOR with
# '0' in every byte, digits are the bytes 0..9.
_U = np.uint64
_ONE, _S7, _S8, _S16, _S32, _S56 = _U(1), _U(7), _U(8), _U(16), _U(32), _U(56)
_W64 = _U(64)
_FF = _U(0xFF)
_M80 = _U(0x8080808080808080)
_M7F = _U(0x7F7F7F7F7F7F7F7F)
_X30 = _U(0x3030303030303030)  # '0' in every byte
_X1E = _U(0x1E1E1E1E1E1E1E1E)  # '.' XOR '0'
_P76 = _U(0x7676767676767676)  # + 0x76 sets the high bit of bytes >= 10
_C1 = _U(2561)  # 10 * 256 + 1
_C1M, _C2 = _U(0x00FF00FF00FF00FF), _U(6553601)  # 100 * 65536 + 1
_C2M, _C3 = _U(0x0000FFFF0000FFFF), _U(42949672960001)  # 10000 * 2**32 + 1
_MAXM = _U(1 << 53)
_E8 = _U(100_000_000)


def _top_bytes(n: int) -> int:
    """Mask of the top ``n`` bytes of a 64-bit word (0 <= n <= 8)."""
    return (((1 << (8 * n)) - 1) << (8 * (8 - n))) & 0xFFFFFFFFFFFFFFFF


_V = np.array([_top_bytes(n) for n in range(9)], dtype=np.uint64)  # bytes of the piece
_V80 = _V & _M80  # their high bits
# one word: divisor by  bytes-before-point + 8 * n_points  (10**digits after the point)
_DIV1 = np.ones(16)
_DIV1[8:] = 10.0 ** (7 - np.arange(8))
# 9..16 bytes: divisor by  bytes-before-point + 16 * n_points
_DIVL = np.ones(32)
_DIVL[16:] = 10.0 ** (15 - np.arange(16))
_FLO8 = np.array(
    [0x80 << (8 * (8 - n)) if 0 < n <= 8 else 0 for n in range(9)], dtype=np.uint64
)  # high bit of the first byte of an n-byte right-aligned piece
_ALL = _U(0xFFFFFFFFFFFFFFFF)
_SGN = np.array([1.0, -1.0])
_QID_X = _U(int.from_bytes(b"\0" * 5 + b"qid", "little")) ^ (_X30 & _U(_top_bytes(3)))
_BATCH = 1 << 15


class _Decoder:
    """SWAR decoders of integer and decimal pieces, with scratch buffers reused across
    batches so that the hot loop allocates nothing.

    Per word ``x`` (piece bytes XOR '0', so digits are 0..9): non-digit bytes are flagged by
    the high bit of ``((x & 0x7F) + 0x76) | x``; apart from a leading sign they must all be
    ``'.'`` (``x & S == ('.' ^ '0') & S`` with ``S`` the flagged bytes spread to 0xFF), at
    most one; the bytes before the point move one byte up (``B = min((point >> 7) - 1,
    point)`` is the mask of those bytes, 0 without a point); eight digits combine into an
    integer with three multiply-shift steps (``* 2561 >> 8``, ``* 6553601 >> 16``,
    ``* 42949672960001 >> 32`` with masks in between).
    """

    def __init__(self, n: int = _BATCH) -> None:
        self.n = n
        u = [np.empty(n, np.uint64) for _ in range(12)]
        (
            self.q,
            self.r,
            self.rl,
            self.a,
            self.b,
            self.x,
            self.x2,
            self.nd,
            self.zd,
            self.t,
            self.B,
            self.m,
        ) = u
        self.i64 = np.empty(n, np.int64)
        self.i64b = np.empty(n, np.int64)
        self.g = np.empty(n)
        self.u8 = [np.empty(n, np.uint8) for _ in range(5)]
        self.bl = [np.empty(n, bool) for _ in range(3)]
        self.w32 = [np.empty(n, np.uint32) for _ in range(4)]

    # -- building blocks (k = batch length) --
    def _load(self, A, end, k, back, out):
        """``out`` = the 8 bytes before ``end - back`` as a word, XOR '0' in every byte."""
        i64, q, r, rl, a, b = (
            self.i64[:k],
            self.q[:k],
            self.r[:k],
            self.rl[:k],
            self.a[:k],
            self.b[:k],
        )
        np.subtract(end, 8 + back, out=i64)
        qi = q.view(np.int64)
        np.right_shift(i64, 3, out=qi)
        np.bitwise_and(i64, 7, out=i64)
        np.left_shift(i64, 3, out=r.view(np.int64))
        np.subtract(_W64, r, out=rl)  # a shift by 64 gives 0, as r == 0 needs
        A.take(qi, out=a, mode="wrap")
        np.add(qi, 1, out=qi)
        A.take(qi, out=b, mode="wrap")
        np.right_shift(a, r, out=out)
        np.left_shift(b, rl, out=b)
        np.bitwise_or(out, b, out=out)
        np.bitwise_xor(out, _X30, out=out)

    def _masks(self, Lw, k):
        """``(V, V80)``: bytes of a right-aligned piece of ``Lw`` (0..8) bytes in a word and
        their high bits (``~0 << 8 * (8 - Lw)``; numpy shifts by >= 64 give 0)."""
        V, V80, i64 = self.t[:k], self.rl[:k], self.i64[:k]
        np.subtract(8, Lw, out=i64)
        np.left_shift(i64, 3, out=i64)
        np.left_shift(_ALL, i64.view(np.uint64), out=V)
        np.bitwise_and(V, _M80, out=V80)
        return V, V80

    def _core(self, x, Lw, k, fb, need_digit, M, cd, fidx, ok, neg):
        """Validate and decode one word ``x`` holding ``Lw`` piece bytes.

        ``fb``: first byte of the piece (a sign is allowed there) or None. Outputs: ``M``
        the digits as an integer (point squeezed out), ``cd`` number of non-digits other
        than the sign (valid: at most one, a point), ``fidx`` bytes-before-point + 8 * cd,
        ``ok``, ``neg`` (only with ``fb``). Returns whether any piece has a point (when
        none has, ``fidx`` is not computed).
        """
        nd, zd, a, B = self.nd[:k], self.zd[:k], self.a[:k], self.B[:k]
        tmp = self.u8[1][:k]
        b1 = self.bl[1][:k]
        V, V80 = self._masks(Lw, k)
        np.bitwise_and(x, _M7F, out=nd)
        np.add(nd, _P76, out=nd)
        np.bitwise_or(nd, x, out=nd)
        np.bitwise_and(nd, V80, out=nd)  # non-digit bytes (high bits)
        if need_digit:  # not every byte a non-digit
            np.not_equal(nd, V80, out=ok)
        else:
            ok.fill(True)
        if fb is not None:  # leave out a sign opening the piece
            sg = self.bl[2][:k]
            np.equal(fb, 45, out=neg)
            np.equal(fb, 43, out=sg)
            np.bitwise_or(sg, neg, out=sg)
            np.subtract(8, Lw, out=self.i64[:k])
            np.left_shift(self.i64[:k], 3, out=self.i64[:k])
            np.left_shift(_U(0x80), self.i64[:k].view(np.uint64), out=a)
            np.multiply(a, sg, out=a)
            np.invert(a, out=a)
            np.bitwise_and(nd, a, out=zd)
        else:
            np.copyto(zd, nd)
        # every other non-digit must be a '.', at most one of them
        np.right_shift(zd, _S7, out=a)
        np.multiply(a, _FF, out=a)
        np.bitwise_and(x, a, out=B)
        np.bitwise_and(a, _X1E, out=a)
        np.equal(B, a, out=b1)
        np.bitwise_and(ok, b1, out=ok)
        np.bitwise_count(zd, out=cd)
        np.less_equal(cd, 1, out=b1)
        np.bitwise_and(ok, b1, out=ok)
        # keep the digits only
        np.right_shift(nd, _S7, out=nd)
        np.multiply(nd, _FF, out=nd)
        np.invert(nd, out=nd)
        np.bitwise_and(x, nd, out=x)
        np.bitwise_and(x, V, out=x)  # digit values, 0 elsewhere
        points = bool(zd.any())
        if points:
            np.right_shift(zd, _S7, out=B)
            np.subtract(B, _ONE, out=B)
            np.minimum(B, zd, out=B)  # bytes before the point (0 without one)
            np.bitwise_and(x, B, out=a)
            np.left_shift(a, _S8, out=a)
            np.invert(B, out=zd)
            np.bitwise_and(x, zd, out=x)
            np.bitwise_or(x, a, out=x)
            np.bitwise_count(B, out=fidx)
            np.right_shift(fidx, 3, out=fidx)
            np.left_shift(cd, 3, out=tmp)
            np.add(fidx, tmp, out=fidx)
        np.multiply(x, _C1, out=M)
        np.right_shift(M, _S8, out=M)
        np.bitwise_and(M, _C1M, out=M)
        np.multiply(M, _C2, out=M)
        np.right_shift(M, _S16, out=M)
        np.bitwise_and(M, _C2M, out=M)
        np.multiply(M, _C3, out=M)
        np.right_shift(M, _S32, out=M)
        return points

    # -- decoders --
    def words(self, A, end):
        """The 8 bytes before each ``end`` as words (XOR '0' in every byte)."""
        n = end.size
        out = np.empty(n, np.uint64)
        for i in range(0, n, self.n):
            j = min(n, i + self.n)
            self._load(A, end[i:j], j - i, 0, out[i:j])
        return out

    def ids(self, A, end, length):
        """Unsigned integers of 1..8 digits: ``(value int64, ok)`` (32-bit words when every
        piece of a batch has at most 4 bytes)."""
        n = end.size
        out = np.empty(n, np.int64)
        ok = np.empty(n, bool)
        A32 = A.view(np.uint32)
        for i in range(0, n, self.n):
            j = min(n, i + self.n)
            k = j - i
            Lb = length[i:j]
            if int(Lb.max()) <= 4:
                self._ids4(A32, end[i:j], Lb, k, out[i:j], ok[i:j])
                continue
            x, t, nd = self.x[:k], self.t[:k], self.nd[:k]
            self._load(A, end[i:j], k, 0, x)
            _V80.take(Lb, out=t, mode="wrap")
            np.bitwise_and(x, _M7F, out=nd)
            np.add(nd, _P76, out=nd)
            np.bitwise_or(nd, x, out=nd)
            np.bitwise_and(nd, t, out=nd)
            np.equal(nd, 0, out=ok[i:j])
            np.less_equal(Lb, 8, out=self.bl[0][:k])
            np.bitwise_and(ok[i:j], self.bl[0][:k], out=ok[i:j])
            _V.take(Lb, out=t, mode="wrap")
            np.bitwise_and(x, t, out=x)
            M = out[i:j].view(np.uint64)
            np.multiply(x, _C1, out=M)
            np.right_shift(M, _S8, out=M)
            np.bitwise_and(M, _C1M, out=M)
            np.multiply(M, _C2, out=M)
            np.right_shift(M, _S16, out=M)
            np.bitwise_and(M, _C2M, out=M)
            np.multiply(M, _C3, out=M)
            np.right_shift(M, _S32, out=M)
        return out, ok

    def _ids4(self, A32, e, Lb, k, out, ok):
        """1..4 digit pieces from 32-bit words: two multiply-shift steps."""
        i64 = self.i64[:k]
        q = self.i64b[:k]
        w, r, rl, t = (b[:k] for b in self.w32)
        np.subtract(e, 4, out=i64)
        np.right_shift(i64, 2, out=q)
        np.bitwise_and(i64, 3, out=i64)
        np.left_shift(i64, 3, out=r.view(np.int32))
        np.subtract(np.uint32(32), r, out=rl)
        A32.take(q, out=w, mode="wrap")
        np.right_shift(w, r, out=w)
        np.add(q, 1, out=q)
        A32.take(q, out=t, mode="wrap")
        np.left_shift(t, rl, out=t)
        np.bitwise_or(w, t, out=w)
        np.bitwise_xor(w, np.uint32(0x30303030), out=w)
        np.subtract(4, Lb, out=i64)  # bytes of the piece: ~0 << 8 * (4 - L)
        np.left_shift(i64, 3, out=rl.view(np.int32), casting="same_kind")
        np.left_shift(np.uint32(0xFFFFFFFF), rl, out=t)
        np.bitwise_and(w, np.uint32(0x7F7F7F7F), out=r)
        np.add(r, np.uint32(0x76767676), out=r)
        np.bitwise_or(r, w, out=r)
        np.bitwise_and(r, t, out=r)
        np.bitwise_and(r, np.uint32(0x80808080), out=r)
        np.equal(r, 0, out=ok)
        np.bitwise_and(w, t, out=w)
        np.multiply(w, np.uint32(2561), out=w)
        np.right_shift(w, np.uint32(8), out=w)
        np.bitwise_and(w, np.uint32(0x00FF00FF), out=w)
        np.multiply(w, np.uint32(0x00640001), out=w)
        np.right_shift(w, np.uint32(16), out=w)
        np.copyto(out, w)

    def _short(self, arr, A, end, length, out, ok, signs):
        """Pieces of 1..8 bytes."""
        n = end.size
        for i in range(0, n, self.n):
            j = min(n, i + self.n)
            k = j - i
            e, Lb = end[i:j], length[i:j]
            x, M, g = self.x[:k], self.m[:k], self.g[:k]
            cd, fidx, neg = self.u8[2][:k], self.u8[3][:k], self.bl[0][:k]
            self._load(A, e, k, 0, x)
            fb = None
            if signs:
                fb = self.u8[4][:k]
                np.subtract(e, Lb, out=self.i64[:k])
                arr.take(self.i64[:k], out=fb, mode="wrap")
            o = out[i:j]
            if self._core(x, Lb, k, fb, True, M, cd, fidx, ok[i:j], neg):
                _DIV1.take(fidx, out=g, mode="wrap")
                np.divide(M.view(np.int64), g, out=o)  # exact M, exact 10**F: one rounding
            else:
                np.copyto(o, M.view(np.int64), casting="unsafe")
            if signs:
                _SGN.take(neg.view(np.uint8), out=g, mode="wrap")
                np.multiply(o, g, out=o)

    def _long(self, arr, A, end, length, out, ok, signs):
        """Pieces of 9..16 bytes, loaded as two words (lo: the bytes before the last 8)."""
        n = end.size
        for i in range(0, n, self.n):
            j = min(n, i + self.n)
            k = j - i
            e, Lb, o, okb = end[i:j], length[i:j], out[i:j], ok[i:j]
            i64, q = self.i64[:k], self.q[:k].view(np.int64)
            r, rl, a, lo, hi = self.r[:k], self.rl[:k], self.a[:k], self.x[:k], self.x2[:k]
            ndl, ndh, rest, t, B, M = (
                self.nd[:k],
                self.zd[:k],
                self.b[:k],
                self.t[:k],
                self.B[:k],
                self.m[:k],
            )
            u0, u1, cnt = self.u8[0][:k], self.u8[1][:k], self.u8[2][:k]
            b1, neg = self.bl[1][:k], self.bl[0][:k]
            Ll = self.i64b[:k]
            # load 16 bytes: words q, q+1, q+2 shifted by r bits
            np.subtract(e, 16, out=i64)
            np.right_shift(i64, 3, out=q)
            np.bitwise_and(i64, 7, out=i64)
            np.left_shift(i64, 3, out=r.view(np.int64))
            np.subtract(_W64, r, out=rl)
            A.take(q, out=lo, mode="wrap")
            np.right_shift(lo, r, out=lo)
            np.add(q, 1, out=q)
            A.take(q, out=a, mode="wrap")
            np.left_shift(a, rl, out=t)
            np.bitwise_or(lo, t, out=lo)
            np.right_shift(a, r, out=hi)
            np.add(q, 1, out=q)
            A.take(q, out=a, mode="wrap")
            np.left_shift(a, rl, out=a)
            np.bitwise_or(hi, a, out=hi)
            np.bitwise_xor(lo, _X30, out=lo)
            np.bitwise_xor(hi, _X30, out=hi)
            np.subtract(Lb, 8, out=Ll)
            # non-digit bytes
            _V80.take(Ll, out=t, mode="wrap")
            np.bitwise_and(lo, _M7F, out=ndl)
            np.add(ndl, _P76, out=ndl)
            np.bitwise_or(ndl, lo, out=ndl)
            np.bitwise_and(ndl, t, out=ndl)
            np.bitwise_and(hi, _M7F, out=ndh)
            np.add(ndh, _P76, out=ndh)
            np.bitwise_or(ndh, hi, out=ndh)
            np.bitwise_and(ndh, _M80, out=ndh)
            if signs:  # a sign may open the piece (in lo)
                fb = self.u8[4][:k]
                np.subtract(e, Lb, out=i64)
                arr.take(i64, out=fb, mode="wrap")
                sg = b1
                np.equal(fb, 45, out=neg)
                np.equal(fb, 43, out=sg)
                np.bitwise_or(sg, neg, out=sg)
                _FLO8.take(Ll, out=t, mode="wrap")
                np.multiply(t, sg, out=t)
                np.invert(t, out=t)
                np.bitwise_and(ndl, t, out=rest)
            else:
                np.copyto(rest, ndl)
            # the other non-digits must be '.' bytes, at most one in all
            np.right_shift(rest, _S7, out=t)
            np.multiply(t, _FF, out=t)
            np.bitwise_and(lo, t, out=a)
            np.bitwise_and(t, _X1E, out=t)
            np.equal(a, t, out=okb)
            np.right_shift(ndh, _S7, out=t)
            np.multiply(t, _FF, out=t)
            np.bitwise_and(hi, t, out=a)
            np.invert(t, out=B)
            np.bitwise_and(hi, B, out=hi)  # digits of hi (the point zeroed)
            np.bitwise_and(t, _X1E, out=t)
            np.equal(a, t, out=b1)
            np.bitwise_and(okb, b1, out=okb)
            np.bitwise_count(rest, out=u0)
            np.bitwise_count(ndh, out=u1)
            np.add(u0, u1, out=cnt)
            np.less_equal(cnt, 1, out=b1)
            np.bitwise_and(okb, b1, out=okb)
            # digits of lo: bytes of the piece that are digits
            _V.take(Ll, out=t, mode="wrap")
            np.right_shift(ndl, _S7, out=a)
            np.multiply(a, _FF, out=a)
            np.invert(a, out=a)
            np.bitwise_and(a, t, out=a)
            np.bitwise_and(lo, a, out=lo)
            # squeeze the point out: bytes before it move one byte up (across the words)
            np.right_shift(ndh, _S7, out=B)
            np.subtract(B, _ONE, out=B)
            np.minimum(B, ndh, out=B)  # bytes of hi before a point in hi
            np.right_shift(rest, _S7, out=t)
            np.subtract(t, _ONE, out=t)
            np.minimum(t, rest, out=t)  # bytes of lo before a point in lo
            np.not_equal(ndh, 0, out=b1)
            np.multiply(b1, _ALL, out=a)
            np.bitwise_or(t, a, out=t)  # ... or all of lo when the point is in hi
            np.bitwise_and(lo, t, out=a)
            np.right_shift(a, _S56, out=rest)  # the byte carried into hi
            np.left_shift(a, _S8, out=a)
            np.invert(t, out=ndl)
            np.bitwise_and(lo, ndl, out=lo)
            np.bitwise_or(lo, a, out=lo)
            np.bitwise_and(hi, B, out=a)
            np.left_shift(a, _S8, out=a)
            np.invert(B, out=ndl)
            np.bitwise_and(hi, ndl, out=hi)
            np.bitwise_or(hi, a, out=hi)
            np.bitwise_or(hi, rest, out=hi)
            # divisor index: bytes before the point + 16 * n_points
            np.bitwise_count(t, out=u0)
            np.bitwise_count(B, out=u1)
            np.add(u0, u1, out=u0)
            np.right_shift(u0, 3, out=u0)
            np.left_shift(cnt, 4, out=u1)
            np.add(u0, u1, out=u0)
            # digits: lo * 10**8 + hi
            for w in (lo, hi):
                np.multiply(w, _C1, out=w)
                np.right_shift(w, _S8, out=w)
                np.bitwise_and(w, _C1M, out=w)
                np.multiply(w, _C2, out=w)
                np.right_shift(w, _S16, out=w)
                np.bitwise_and(w, _C2M, out=w)
                np.multiply(w, _C3, out=w)
                np.right_shift(w, _S32, out=w)
            np.multiply(lo, _E8, out=M)
            np.add(M, hi, out=M)
            np.less_equal(M, _MAXM, out=b1)
            np.bitwise_and(okb, b1, out=okb)
            g = self.g[:k]
            _DIVL.take(u0, out=g, mode="wrap")
            np.divide(M.view(np.int64), g, out=o)
            if signs:
                _SGN.take(neg.view(np.uint8), out=g, mode="wrap")
                np.multiply(o, g, out=o)

    def numbers(self, arr, A, end, length, signs=True):
        """Decimal pieces ``[+-]digits[.digits]`` (at least one digit, at most 16 bytes and
        2**53 as mantissa): ``(value float64, ok)``; ``ok`` is False for other spellings.
        The value is ``M / 10**F`` (``M`` all digits as an integer, ``F`` digits after the
        point), one correctly rounded division of exact operands: the same double as
        ``float(piece)``. ``signs=False`` promises that no piece starts with a sign."""
        n = end.size
        out = np.empty(n)
        ok = np.empty(n, bool)
        if n == 0:
            return out, ok
        one = length == 1
        n1 = int(np.count_nonzero(one))
        big = length > 8
        nbig = int(np.count_nonzero(big))
        if n1 * 4 > n:  # many single characters: a cheap path
            i1 = np.flatnonzero(one)
            d = arr.take(end.take(i1) - 1)
            d -= 48
            out[i1] = d
            ok[i1] = d < 10
            if n1 == n:
                return out, ok
            rest = ~(one | big)
        elif nbig == 0:  # one class: no partition
            self._short(arr, A, end, length, out, ok, signs)
            return out, ok
        else:
            rest = ~big
        for idx, fn in (
            (np.flatnonzero(rest), self._short),
            (np.flatnonzero(big) if nbig else None, self._long),
        ):
            if idx is not None and idx.size:
                v, o = np.empty(idx.size), np.empty(idx.size, bool)
                fn(arr, A, end.take(idx), length.take(idx), v, o, signs)
                out[idx] = v
                ok[idx] = o
        if nbig and int(length.max()) > 16:
            ok &= length <= 16
        return out, ok


# ---- result of one chunk ------------------------------------------------------------------
@dataclass
class _Chunk:
    n_lines: int  # newline-terminated lines in the chunk
    line_idx: np.ndarray  # int64 [R], 0-based line within the chunk of each row
    labels: np.ndarray  # float64 [R]
    qids: np.ndarray  # int64 [R], -1 where the line has no qid
    rows: np.ndarray | None  # int64 [P], row of each feature pair (None if complete)
    fids: np.ndarray  # int64 [P]
    vals: np.ndarray  # float64 [P]
    complete: bool = False  # every row lists all n_features ids in increasing order


def _fast_chunk(ba, arr, A, cend, mode, base, nf, dec: _Decoder) -> _Chunk | None:
    """Vectorized parse of ``arr[_PAD:cend]`` (whole lines); None when any check fails."""
    off = _PAD - 1  # arr[_PAD - 1] is a pad space: the first event
    reg = arr[off:cend]
    if ba.find(b"#", _PAD, cend) >= 0:
        _blank_comments(reg)
    ev = reg <= 32
    ev |= reg == 58
    E = np.flatnonzero(ev)
    del ev
    evb = reg.take(E)
    # whitespace bytes that split() treats as such: \t \n \v \f \r and space
    if np.any((evb < 9) | ((evb > 13) & (evb < 32))):
        return None
    gap = E[1:] - E[:-1]
    gap -= 1
    iscol = evb == 58
    if int(gap.min()) > 0:
        # every gap holds a piece (single separators): pieces are indexed by the event
        # before them, and a colon always has a piece on both sides
        length = gap
        pend = E[1:]
        pend += off  # absolute end (exclusive) of each piece
        f = iscol[1:]  # piece is followed by ':' (a key)
        N = np.flatnonzero(evb == 10)
        fe = N  # pieces of line l: [fe[l-1], fe[l])
    else:
        P = np.flatnonzero(gap)  # non-empty gaps, indexed by the preceding event
        length = gap.take(P)
        P1 = P + 1
        pend = E.take(P1)
        pend += off
        n_colon = int(np.count_nonzero(iscol))
        f = iscol.take(P1)
        if int(np.count_nonzero(f)) != n_colon or int(np.count_nonzero(iscol.take(P))) != n_colon:
            return None  # a colon without a piece on one side
        N = np.flatnonzero(evb == 10)
        fe = np.searchsorted(P, N)
        del P, P1
    del gap, E, evb, iscol
    n_lines = int(N.size)
    fs = np.empty_like(fe)
    fs[:1] = 0
    fs[1:] = fe[:-1]
    cnt = fe - fs
    nb = np.flatnonzero(cnt)  # non-blank lines
    s = fs.take(nb)
    c = cnt.take(nb)
    del fe, fs, cnt, N
    R = int(nb.size)
    if R == 0:
        e = np.empty(0, np.int64)
        return _Chunk(n_lines, e, np.empty(0), e, e, e, np.empty(0))
    # keys and values alternate inside a line, which starts and ends with a non-key
    if f.size > 1:
        alt = f[1:] != f[:-1]
        alt[s[1:] - 1] = True
        if not alt.all():
            return None
        del alt
    if f.take(s).any() or f.take(s + c - 1).any():
        return None
    f = f.copy()  # (a view of iscol in the single-separator case)
    # qid: second piece of the line is 'qid', third its value
    has_q = c >= 3
    qi = s[has_q] + 1
    if qi.size:
        w = dec.words(A, pend.take(qi))
        has_q[has_q] = (length.take(qi) == 3) & ((w & _V[3]) == _QID_X)
    if mode == "required" and not has_q.all():
        return None
    qids = np.full(R, -1, dtype=np.int64)
    if has_q.any():
        qv = s[has_q] + 2
        q, okq = dec.ids(A, pend.take(qv), length.take(qv))
        if not okq.all():
            return None
        qids[has_q] = q
        f[qv - 1] = False  # the 'qid' key is not a feature
    signs = ba.find(b"-", _PAD, cend) >= 0 or ba.find(b"+", _PAD, cend) >= 0
    # labels
    lend, llen = pend.take(s), length.take(s)
    lab, okl = dec.numbers(arr, A, lend, llen, signs)
    if not okl.all() and not _fallback_numbers(arr, lend, llen, lab, okl):
        return None
    # feature pairs: key pieces K, values K + 1
    K = np.flatnonzero(f)
    del f
    fids, okf = dec.ids(A, pend.take(K), length.take(K))
    if not okf.all():
        return None
    del okf
    K += 1
    vend = pend.take(K)
    vlen = length.take(K)
    del K, pend, length
    vals, okv = dec.numbers(arr, A, vend, vlen, signs)
    if not okv.all() and not _fallback_numbers(arr, vend, vlen, vals, okv):
        return None
    del vend, vlen, okv
    npairs = (c - 1) // 2 - has_q
    if fids.size:
        if int(fids.min()) < base:
            return None
        top = int(fids.max())
        if top >= base + nf if nf is not None else top > MAX_FEATURE_ID:
            return None
    increasing, inc = True, None
    if fids.size > 1:
        inc = fids[1:] > fids[:-1]
        first = np.cumsum(npairs) - npairs  # first pair of each row
        first = first[(npairs > 0) & (first > 0)]
        inc[first - 1] = True
        increasing = bool(inc.all())
    # increasing ids within base..base+nf-1, nf of them in every row: exactly that sequence
    complete = increasing and nf is not None and fids.size == R * nf and bool((npairs == nf).all())
    rows = None if complete else np.repeat(np.arange(R, dtype=np.int64), npairs)
    if not increasing and _has_duplicate(rows, fids, np.flatnonzero(~inc) + 1):
        return None
    return _Chunk(n_lines, nb, lab, qids, rows, fids, vals, complete)


def _blank_comments(reg: np.ndarray) -> None:
    """Overwrite every ``#`` ... end of line with spaces, in place (``reg`` ends with \\n)."""
    hashes = np.flatnonzero(reg == 35)
    nls = np.flatnonzero(reg == 10)
    line = np.searchsorted(nls, hashes)
    first = np.r_[True, line[1:] != line[:-1]]  # the first '#' of each line
    mark = np.zeros(reg.size + 1, dtype=np.int8)
    mark[hashes[first]] = 1
    mark[nls[line[first]]] = -1
    inside = np.cumsum(mark[:-1], dtype=np.int8).view(bool)
    reg[inside] = 32


def _has_duplicate(rows, fids, where) -> bool:
    """Whether any row among ``rows[where]`` has a feature id twice."""
    bad_rows = np.unique(rows.take(where))
    sel = np.flatnonzero(np.isin(rows, bad_rows))
    r, f = rows.take(sel), fids.take(sel)
    o = np.lexsort((f, r))
    r, f = r.take(o), f.take(o)
    return bool(np.any((r[1:] == r[:-1]) & (f[1:] == f[:-1])))


def _fallback_numbers(arr, end, length, out, ok) -> bool:
    """Parse the pieces with ``ok == False`` by ``float`` after a full-match check; False if
    one is not a finite number (the caller then reports the line)."""
    for i in np.flatnonzero(~ok).tolist():
        e = int(end[i])
        tok = arr[e - int(length[i]) : e].tobytes()
        if not _NUM_RE.fullmatch(tok):
            return False
        v = float(tok)
        if not math.isfinite(v):
            return False
        out[i] = v
    return True


# ---- line-by-line path ----------------------------------------------------------------------
def _overflows32(a: np.ndarray) -> bool:
    """Whether a value of ``a`` (float64) becomes infinite as a float32."""
    return bool(a.size) and (a.max() >= F32_OVERFLOW or a.min() <= -F32_OVERFLOW)


def _parse_number(tok: bytes, lineno: int, field: str) -> float:
    if _NUM_RE.fullmatch(tok):
        v = float(tok)
        if abs(v) < F32_OVERFLOW:
            return v
        raise _BadLine(
            lineno,
            f"value {tok.decode('latin-1')!r} overflows to infinity (beyond the float32 range)",
            field=field,
        )
    if tok.lower() in _NONFINITE:
        raise _BadLine(lineno, f"non-finite value {tok.decode('latin-1')!r}", field=field)
    raise _BadLine(lineno, f"not a number: {tok.decode('latin-1')!r}", field=field)


def _slow_chunk(data: bytes, mode, base, nf) -> _Chunk:
    """Parse whole lines one by one with the same grammar; raise :class:`_BadLine` (line
    numbered from 1 within ``data``) on the first bad line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    line_idx, labels, qids, rows, fids, vals = [], [], [], [], [], []
    for i, line in enumerate(lines):
        lineno = i + 1
        toks = line.split(b"#", 1)[0].split()
        if not toks:
            continue
        label = _parse_number(toks[0], lineno, "label")
        k, qid = 1, -1
        if len(toks) > 1 and toks[1][:4] == b"qid:":
            qs = toks[1][4:]
            if not UINT_RE.fullmatch(qs):
                raise _BadLine(
                    lineno,
                    f"query id must be a non-negative integer, got {qs.decode('latin-1')!r}",
                    field="qid",
                )
            if len(qs) > 19 or int(qs) > MAX_QID:  # length first: int() of 5000 digits raises
                shown = (
                    qs.decode("latin-1")
                    if len(qs) <= 40
                    else f"{qs[:20].decode()}... ({len(qs)} digits)"
                )
                raise _BadLine(lineno, f"query id {shown} is above 2**63 - 1", field="qid")
            qid, k = int(qs), 2
        elif mode == "required":
            raise _BadLine(lineno, "missing 'qid:<query id>' as the second token", field="qid")
        row = len(labels)
        seen = set()
        for j in range(k, len(toks)):
            tok = toks[j]
            parts = tok.split(b":")
            field = f"token {j + 1}"
            if len(parts) != 2:
                raise _BadLine(
                    lineno,
                    f"expected '<feature id>:<value>', got {tok.decode('latin-1')!r}",
                    field=field,
                )
            fs, vs = parts
            if fs == b"qid":
                raise _BadLine(lineno, "'qid:<query id>' must be the second token", field=field)
            if not UINT_RE.fullmatch(fs):
                raise _BadLine(
                    lineno,
                    f"feature id must be a non-negative integer, got {fs.decode('latin-1')!r}",
                    field=field,
                )
            # length before int(): 5000 digits pass Python's str-to-int limit
            fid = int(fs) if len(fs) <= 19 else None
            if (
                fid is None
                or fid < base
                or fid >= (base + nf if nf is not None else MAX_FEATURE_ID + 1)
            ):
                hi = base + nf - 1 if nf is not None else MAX_FEATURE_ID
                fix = "" if nf is not None else " (pass n_features to accept larger ids)"
                shown = fs.decode("latin-1") if len(fs) <= 40 else f"of {len(fs)} digits"
                raise _BadLine(
                    lineno, f"feature id {shown} out of range {base}..{hi}{fix}", field=field
                )
            if fid in seen:
                raise _BadLine(lineno, f"duplicate feature id {fid}", field=field)
            seen.add(fid)
            vals.append(_parse_number(vs, lineno, f"feature {fid}"))
            fids.append(fid)
            rows.append(row)
        line_idx.append(i)
        labels.append(label)
        qids.append(qid)
    i64 = np.int64
    return _Chunk(
        len(lines),
        np.array(line_idx, i64),
        np.array(labels, np.float64),
        np.array(qids, i64),
        np.array(rows, i64),
        np.array(fids, i64),
        np.array(vals, np.float64),
    )


# ---- file level -----------------------------------------------------------------------------
def _buffer(cap: int) -> bytearray:
    ba = bytearray(_PAD + cap + _TAIL + (-(cap + _TAIL) % 8))
    ba[:_PAD] = b" " * _PAD
    return ba


class _Reader:
    """Fills buffers with chunks of whole lines: ``buf[_PAD:cend]`` ends with ``\\n``,
    ``buf[:_PAD]`` is spaces and at least ``_TAIL`` bytes follow ``cend``. A partial last
    line is carried over to the next chunk; a line longer than the buffer grows it."""

    def __init__(self, fh, cap: int) -> None:
        self.fh, self.cap, self.tail, self.eof = fh, cap, b"", False

    def next(self, ba: bytearray) -> tuple[bytearray, int] | None:
        if len(ba) < _PAD + self.cap + _TAIL:
            ba = _buffer(self.cap)
        fill = len(self.tail)
        ba[_PAD : _PAD + fill] = self.tail
        while True:
            with memoryview(ba) as mv:
                while not self.eof and fill < self.cap:
                    n = self.fh.readinto(mv[_PAD + fill : _PAD + self.cap])
                    if not n:
                        self.eof = True
                    else:
                        fill += n
            end = _PAD + fill
            if fill == 0:
                return None
            if self.eof:
                if ba[end - 1] != 10:
                    ba[end] = 10
                    end += 1
                self.tail = b""
                return ba, end
            last = ba.rfind(b"\n", _PAD, end)
            if last >= 0:
                self.tail = bytes(ba[last + 1 : end])
                return ba, last + 1
            self.cap *= 2  # a line longer than the buffer
            nb = _buffer(self.cap)
            nb[:end] = ba[:end]
            ba = nb


class _BadLine(Exception):
    """A malformed line, numbered within its chunk (made a DataFormatError by the caller)."""

    def __init__(self, line: int, message: str, field: str | None) -> None:
        super().__init__(message)
        self.line, self.message, self.field = line, message, field


_local = threading.local()


def parse_loop(size: int):
    """The compiled loop of :mod:`groupbias._fast.svmlight` for a file of ``size`` bytes
    (chosen by size and the ``backend`` knob), else None (the numpy passes)."""
    return dense_chunk_loop(size)


def _loop_chunk(loop, ba, cend, mode, nf, base) -> _Chunk | None:
    """The chunk parsed by the compiled loop straight into dense rows, or None where the
    loop declines (then the numpy path parses it, as without the loop)."""
    n_lines = ba.count(b"\n", _PAD, cend)
    if ba[cend - 1] != 10:
        return None
    arr = np.frombuffer(ba, dtype=np.uint8)
    labels, qids = np.empty(n_lines), np.empty(n_lines, dtype=np.int64)
    line_idx = np.empty(n_lines, dtype=np.int64)
    block = np.zeros((n_lines, nf), dtype=np.float32)
    args = (arr, _PAD, cend, mode == "required", base, labels, qids, line_idx, block)
    ok, rows = loop.parse_dense_chunk(*args)
    del arr
    if not ok:
        return None
    e = np.empty(0, np.int64)
    vals = block[:rows].reshape(-1)
    return _Chunk(n_lines, line_idx[:rows], labels[:rows], qids[:rows], None, e, vals, True)


def _process(ba, cend, mode, base, nf, loop=None):
    """Parse one chunk (runs in a worker): ``(chunk, lin, vals, width)`` with ``lin`` the
    flat positions of the values in a dense ``[rows, width]`` block (None when the values
    fill it in order); ``loop``: :func:`parse_loop`'s module, tried first."""
    if loop is not None and nf is not None:
        ch = _loop_chunk(loop, ba, cend, mode, nf, base)
        if ch is not None:
            return ch, None, ch.vals, nf
    dec = getattr(_local, "decoder", None)
    if dec is None:
        dec = _local.decoder = _Decoder()
    arr = np.frombuffer(ba, dtype=np.uint8)
    ch = _fast_chunk(ba, arr, arr.view(np.uint64), cend, mode, base, nf, dec)
    del arr
    if ch is None or _overflows32(ch.vals) or _overflows32(ch.labels):
        ch = _slow_chunk(bytes(ba[_PAD:cend]), mode, base, nf)  # raises on an overflow
    w = nf if nf is not None else (int(ch.fids.max()) - base + 1 if ch.fids.size else 0)
    if ch.complete:  # values already in row-major order
        return ch, None, ch.vals.astype(np.float32), w
    lin = ch.rows * w
    lin += ch.fids
    lin -= base
    return ch, lin, ch.vals.astype(np.float32), w


#: a dense feature matrix above this size must hold at least :data:`MIN_FILL` of its cells
#: as values of the file (real LTR data fills 30-100 %)
SPARSE_BYTES = 256 << 20
MIN_FILL = 0.01


def _check_fill(path, rows: int, width: int, pairs: int, base: int) -> None:
    """Refuse a dense matrix of ``rows x width`` float32 cells over :data:`SPARSE_BYTES`
    that the file fills with fewer than :data:`MIN_FILL` of them (``pairs`` values): one
    stray large feature id in a small file would otherwise ask for gigabytes."""
    cells = rows * width
    if cells * 4 > SPARSE_BYTES and pairs < MIN_FILL * cells:
        raise DataFormatError(
            path,
            None,
            f"feature ids up to {base + width - 1} over {rows} lines make a "
            f"{cells * 4 / 2**30:.1f} GiB dense matrix that the file fills with "
            f"{pairs} values ({100 * pairs / cells:.2g} % of it); number the features "
            "densely (feature ids 1..k)",
            field="feature id",
        )


class _Dense:
    """Growable dense float32 output of a fixed width, filled chunk by chunk. Memory starts
    as zeros and every row is written once, so absent features are already 0."""

    def __init__(self, width: int) -> None:
        self.w, self.n, self.arr = width, 0, None

    def add(self, R: int, lin: np.ndarray, vals: np.ndarray, est_rows: int) -> None:
        need = self.n + R
        if self.arr is None or need > self.arr.shape[0]:
            cap = max(need, est_rows, int(1.5 * (0 if self.arr is None else self.arr.shape[0])))
            new = np.zeros((cap, self.w), dtype=np.float32)
            if self.arr is not None:
                new[: self.n] = self.arr[: self.n]
            self.arr = new
        if lin is None:
            self.arr[self.n : need] = vals.reshape(R, self.w)
        else:
            self.arr[self.n : need].reshape(-1)[lin] = vals
        self.n = need

    def result(self) -> np.ndarray:
        return np.zeros((0, self.w), np.float32) if self.arr is None else self.arr[: self.n]


_allocator_primed = False


def _prime_allocator() -> None:
    """Allocate and free one 32 MiB block, once per process.

    glibc serves large blocks with fresh ``mmap`` calls (page faults on every use) until a
    freed ``mmap`` block raises its threshold to that block's size (at most 32 MiB). After
    that, the per-chunk temporaries of the parser (a few MiB) are reused from the heap. Any
    program that frees a ~32 MiB array reaches the same state; elsewhere this is a no-op.
    """
    global _allocator_primed
    if not _allocator_primed:
        block = np.empty((32 << 20) - (1 << 16), dtype=np.uint8)
        del block
        _allocator_primed = True


@dataclass(frozen=True)
class SvmlightRows:
    """Rows of an SVMlight file, before grouping into queries.

    features : float32 [n_rows, n_features], column j = feature id ``feature_ids[j]``
    labels : float64 [n_rows]
    qids : int64 [n_rows] (-1 where a line has no qid; only with ``qid="optional"``)
    line_numbers : int64 [n_rows], 1-based line of each row in the file
    feature_ids : int64 [n_features]
    n_lines : lines in the file (blank and comment lines included)
    """

    features: np.ndarray
    labels: np.ndarray
    qids: np.ndarray
    line_numbers: np.ndarray
    feature_ids: np.ndarray
    n_lines: int


def _check_options(n_features, feature_id_base, qid, workers=1, chunk_bytes=1 << 20):
    from groupbias.core.errors import ParameterError

    def is_int(v):
        return is_integer(v)

    if qid not in QID_MODES:
        raise ParameterError("qid", f"one of {QID_MODES}", qid)
    if not is_int(feature_id_base) or feature_id_base < 0:
        raise ParameterError("feature_id_base", "a non-negative integer", feature_id_base)
    if n_features is not None and (not is_int(n_features) or n_features < 0):
        raise ParameterError("n_features", "None or a non-negative integer", n_features)
    if not is_int(workers) or workers < 1:
        raise ParameterError("workers", "a positive integer", workers)
    if not is_int(chunk_bytes) or chunk_bytes < 1024:
        raise ParameterError("chunk_bytes", "an integer >= 1024", chunk_bytes)


def read_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    feature_id_base: int = 1,
    qid: str = "required",
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    workers: int = 1,
    progress: bool | None = None,
) -> SvmlightRows:
    """Parse an SVMlight file into dense rows (no caching, no query grouping).

    Parameters
    ----------
    n_features : number of feature columns, ids ``feature_id_base .. + n_features - 1``;
        an id outside raises. ``None``: up to the largest id in the file, which must be at
        most :data:`MAX_FEATURE_ID`.
    feature_id_base : the smallest feature id (1 for SVMlight / LETOR, 0 for zero-based).
    qid : ``"required"`` (every data line has ``qid:<n>`` as its second token) or
        ``"optional"`` (lines may have it; ``qids`` is -1 where absent).
    chunk_bytes : size of a chunk of whole lines (the unit of work).
    progress : a progress bar over the bytes read (tqdm, on stderr); None (default) shows it
        for files over 64 MiB when stderr is a terminal.
    workers : threads parsing chunks (numpy releases the GIL; on a busy 2-core machine one
        thread is usually as fast). The result does not depend on it.

    Raises :class:`DataFormatError` (file, 1-based line, field) on malformed input and
    :class:`MissingFilesError` when the file does not exist.
    """
    _check_options(n_features, feature_id_base, qid, workers, chunk_bytes)
    path = Path(path)
    if not path.is_file():
        raise MissingFilesError(path.parent, [path.name])
    base, nf = int(feature_id_base), None if n_features is None else int(n_features)
    if path.stat().st_size <= 2 * chunk_bytes:
        workers = 1
    _prime_allocator()
    size = path.stat().st_size
    loop = parse_loop(size)
    dense = _Dense(nf) if nf is not None else None
    blocks, labels, qids, lines = [], [], [], []
    state = {"line0": 1, "bytes": 0, "pairs": 0}
    if progress is None:
        import sys

        progress = size > 64 << 20 and sys.stderr.isatty()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"parsing {path.name}", leave=False)
    pool: list[bytearray] = []

    def collect(result, ba, nbytes):
        line0 = state["line0"]
        try:
            ch, lin, vals, w = result()
        except _BadLine as e:
            raise DataFormatError(path, line0 + e.line - 1, e.message, field=e.field) from None
        R = ch.labels.size
        state["pairs"] += vals.size
        _check_fill(path, R, nf if nf is not None else w, vals.size, base)  # this chunk
        state["bytes"] += nbytes
        if bar is not None:
            bar.update(nbytes)
        if dense is not None:
            rows_so_far = dense.n + R
            est = int(rows_so_far * size / max(state["bytes"], 1) * 1.05) + 1024
            dense.add(R, lin, vals, est)
        else:
            block = np.zeros((R, w), dtype=np.float32)
            block.reshape(-1)[lin] = vals
            blocks.append(block)
        labels.append(ch.labels)
        qids.append(ch.qids)
        lines.append(ch.line_idx + line0)
        state["line0"] = line0 + ch.n_lines
        pool.append(ba)

    with open(path, "rb", buffering=0) as fh:
        reader = _Reader(fh, int(chunk_bytes))
        if workers == 1:
            while got := reader.next(pool.pop() if pool else _buffer(reader.cap)):
                ba, cend = got
                args = (ba, cend, qid, base, nf, loop)
                collect(lambda args=args: _process(*args), ba, cend - _PAD)
        else:
            pending: deque = deque()
            with ThreadPoolExecutor(workers) as ex:
                try:
                    while got := reader.next(pool.pop() if pool else _buffer(reader.cap)):
                        ba, cend = got
                        pending.append(
                            (ex.submit(_process, ba, cend, qid, base, nf, loop), ba, cend - _PAD)
                        )
                        while len(pending) > workers:
                            fut, b, nbytes = pending.popleft()
                            collect(fut.result, b, nbytes)
                    while pending:
                        fut, b, nbytes = pending.popleft()
                        collect(fut.result, b, nbytes)
                finally:
                    for fut, _, _ in pending:
                        fut.cancel()
    if bar is not None:
        bar.close()
    if dense is not None:
        features, width = dense.result(), nf
    else:
        width = max([b.shape[1] for b in blocks] + [0])
        _check_fill(path, sum(b.shape[0] for b in blocks), width, state["pairs"], base)
        features = np.zeros((sum(b.shape[0] for b in blocks), width), dtype=np.float32)
        r = 0
        for b in blocks:
            features[r : r + b.shape[0], : b.shape[1]] = b
            r += b.shape[0]
    if features.shape[0] == 0:
        raise DataFormatError(
            path, None, "no data lines (the file is empty or holds only blank and comment lines)"
        )
    return SvmlightRows(
        features=features,
        labels=np.concatenate(labels),
        qids=np.concatenate(qids),
        line_numbers=np.concatenate(lines),
        feature_ids=np.arange(base, base + width, dtype=np.int64),
        n_lines=state["line0"] - 1,
    )


def qptr_from_qids(
    qids: np.ndarray, line_numbers: np.ndarray, *, path=None
) -> tuple[np.ndarray, np.ndarray]:
    """Query offsets from runs of equal consecutive qids: ``(qptr, query_ids)``.

    A qid that reappears after another qid raises :class:`DataFormatError` naming the line
    where it reappears and where it first occurred (queries must be contiguous).
    """
    n = qids.size
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]]) if n else np.empty(0, int)
    run_q = qids[starts]
    order = np.argsort(run_q, kind="stable")
    sq = run_q[order]
    dup = np.flatnonzero(sq[1:] == sq[:-1])
    if dup.size:
        later = order[dup + 1]
        i = int(np.argmin(later))
        run, prev = int(later[i]), int(order[dup[i]])
        raise DataFormatError(
            path,
            int(line_numbers[starts[run]]),
            f"qid {int(run_q[run])} reappears after other queries (first seen on line "
            f"{int(line_numbers[starts[prev]])}); the lines of a query must be contiguous",
            field="qid",
        )
    qptr = np.empty(starts.size + 1, dtype=np.int64)
    qptr[:-1] = starts
    qptr[-1] = n
    return qptr, run_q.astype(np.int64)


def parse_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    feature_id_base: int = 1,
    label_max: float | None = None,
    name: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    workers: int = 1,
) -> RankingData:
    """Parse an SVMlight ranking file (``label qid:Q fid:val ...``) into :class:`RankingData`.

    Every data line needs ``qid:<n>``; a query is a run of consecutive lines with the same
    qid (a qid that reappears later raises). Output: ``features`` float32 [n_items,
    n_features] with ``feature_ids = feature_id_base + arange(n_features)`` (absent
    features are 0), ``labels`` float64, ``qptr`` int64 [n_queries + 1], ``query_ids``
    int64 (the qids), ``item_ids`` int64 (1-based line numbers), ``meta`` with the source
    path and its line count. No caching: see :func:`load_svmlight`. Options as in
    :func:`read_svmlight`.
    """
    rows = read_svmlight(
        path,
        n_features=n_features,
        feature_id_base=feature_id_base,
        qid="required",
        chunk_bytes=chunk_bytes,
        workers=workers,
    )
    qptr, query_ids = qptr_from_qids(rows.qids, rows.line_numbers, path=path)
    return RankingData(
        features=rows.features,
        labels=rows.labels,
        qptr=qptr,
        query_ids=query_ids,
        feature_ids=rows.feature_ids,
        item_ids=rows.line_numbers,
        label_max=label_max,
        name=name or Path(path).name,
        meta={"source": str(Path(path).resolve()), "n_lines": rows.n_lines},
    )


def check_graded_labels(data: RankingData, *, label_max: float, path=None) -> None:
    """Raise :class:`DataFormatError` (naming the line, from ``item_ids``) unless every
    label is an integer in ``0..label_max``."""
    y = data.labels
    bad = (y < 0) | (y > label_max) | (y != np.floor(y))
    if bad.any():
        i = int(np.argmax(bad))
        line = int(data.item_ids[i]) if data.item_ids is not None else None
        raise DataFormatError(
            path, line, f"label {y[i]!r} is not an integer grade in 0..{label_max:g}", field="label"
        )


def load_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    feature_id_base: int = 1,
    label_max: float | None = None,
    name: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    cache: bool = True,
    graded: bool = False,
) -> RankingData:
    """:func:`parse_svmlight` through the on-disk cache (see :mod:`data_loaders.cache`).

    ``cache=False`` always parses; otherwise the parsed split is stored as memory-mapped
    ``.npy`` files under ``cache_dir`` (default ``$GROUPBIAS_CACHE`` or
    ``~/.cache/groupbias``) and reused until the source file changes (cached arrays are
    read-only). ``graded=True`` (needs ``label_max``) also checks that labels are integers
    in ``0..label_max`` (:func:`check_graded_labels`).
    """
    from .cache import cached

    name = name or Path(path).name
    if graded and label_max is None:
        from groupbias.core.errors import ParameterError

        raise ParameterError("label_max", "a number when graded=True", label_max)

    def build() -> RankingData:
        data = parse_svmlight(
            path,
            n_features=n_features,
            feature_id_base=feature_id_base,
            label_max=label_max,
            name=name,
        )
        if graded:
            check_graded_labels(data, label_max=label_max, path=path)
        return data

    if not cache:
        return build()
    options = {
        "parser": "svmlight",
        "parser_version": FORMAT_VERSION,
        "n_features": n_features,
        "feature_id_base": int(feature_id_base),
        "label_max": label_max,
        "name": name,
        "graded": bool(graded),
    }
    return cached(path, options, build, cache_dir=cache_dir)
