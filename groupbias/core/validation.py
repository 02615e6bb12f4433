"""Input validation shared by every public function (the one place these checks live).

Each check returns the value converted to its working type, or raises
:class:`~groupbias.core.errors.ParameterError` naming the parameter, what was expected and what was
given. ``bool`` is never accepted where a number is expected (``True`` is an ``int`` in
Python, but ``k=True`` is a mistake).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import numbers
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from .errors import ArgumentError, ParameterError

__all__ = [
    "is_integer",
    "is_real",
    "integer",
    "real",
    "choice",
    "sequence",
    "vector",
    "generator",
    "as_array",
    "check_qptr",
    "offsets_from_sizes",
    "identifiers",
    "check_k",
    "all_integral",
    "all_finite",
    "check_threads",
    "checked_arguments",
]

_F = TypeVar("_F", bound=Callable)
#: what a required argument commonly left out is
_REQUIRED_HINTS = {
    "qptr": "Pass qptr=data.qptr, the query offsets (items of query i: qptr[i]:qptr[i+1])",
    "groups": "Pass groups=data.groups, the affected-group memberships in [0, 1]",
    "rng": "Pass rng=np.random.default_rng(seed)",
}


def is_integer(value) -> bool:
    """True for Python and numpy integers, False for ``bool`` and everything else."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_real(value) -> bool:
    """True for real numbers (integers included, NaN and inf included), False for ``bool``."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    lo = "-inf" if low is None else f"{low}"
    hi = "inf" if high is None else f"{high}"
    return f"{'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}"


def _inside(v: float, low, high, low_open: bool, high_open: bool) -> bool:
    if low is not None and (v < low or (low_open and v == low)):
        return False
    return not (high is not None and (v > high or (high_open and v == high)))


def real(
    name: str,
    value,
    *,
    low=None,
    high=None,
    low_open: bool = False,
    high_open: bool = False,
    what: str | None = None,
    fix: str | None = None,
) -> float:
    """A finite real number in the given interval, as ``float``."""
    ok = (
        is_real(value)
        and bool(np.isfinite(float(value)))
        and _inside(float(value), low, high, low_open, high_open)
    )
    if not ok:
        raise ParameterError(
            name, what or f"a number in {_interval(low, high, low_open, high_open)}", value, fix
        )
    return float(value)


def integer(
    name: str, value, *, low=None, high=None, what: str | None = None, fix: str | None = None
) -> int:
    """An integer (not ``bool``) in ``[low, high]``, as ``int``."""
    if not is_integer(value) or not _inside(int(value), low, high, False, False):
        if what is None:
            what = (
                "an integer"
                if low is None and high is None
                else f"an integer in {_interval(low, high, False, False)}"
            )
        raise ParameterError(name, what, value, fix)
    return int(value)


def choice(name: str, value, allowed: Sequence[str]) -> str:
    """One of the strings ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ParameterError(name, "one of " + ", ".join(repr(a) for a in allowed), value)
    return value


def sequence(
    name: str, values, item, *, what: str, allow_empty: bool = False, distinct: bool = False
) -> tuple:
    """A list or tuple (not a string) whose every entry passes ``item(name, entry)``; returns
    the checked entries as a tuple. ``what``: the expected list, for the message;
    ``distinct``: a value listed twice is refused (it would be computed and stored twice)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ParameterError(name, what, values)
    if not values and not allow_empty:
        raise ParameterError(name, what, list(values))
    out = tuple(item(name, v) for v in values)
    if distinct:
        twice = next((v for i, v in enumerate(out) if v in out[:i]), None)
        if twice is not None:
            raise ParameterError(
                name, f"{what}, each value once", list(values), fix=f"{twice!r} is listed twice"
            )
    return out


def vector(
    name: str,
    values,
    n: int | None = None,
    *,
    low=None,
    high=None,
    finite: bool = True,
    what: str | None = None,
    fix: str | None = None,
    per: str = "item",
) -> np.ndarray:
    """A 1-D numeric array (bool allowed) as float64, optionally of length ``n`` (one value
    per ``per``: ``"item"``, ``"query"``, ...), finite and inside ``[low, high]``. No copy
    when the input is already float64."""
    a = as_array(name, values)
    if a.ndim != 1 or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise ParameterError(name, "a 1-D numeric array", f"shape {a.shape}, dtype {a.dtype}")
    if n is not None and a.size != n:
        raise ParameterError(
            name,
            f"length {n} (one value per {per})",
            f"length {a.size}",
        )
    a = a.astype(np.float64, copy=False)
    if a.size and not _quick_check(a, finite, low, high):
        _full_check(a, name, finite, low, high, what, fix)
    return a


def _quick_check(a: np.ndarray, finite: bool, low, high) -> bool:
    """True when ``a`` (float64, non-empty) surely passes :func:`vector`'s checks, from one
    or two reductions: NaN carries through the minimum and the maximum, and a finite sum
    has only finite terms. False means: check element by element."""
    if low is not None or high is not None:
        lo, hi = a.min(), a.max()
        inside = (low is None or lo >= low) and (high is None or hi <= high)
        return bool(inside and (not finite or (np.isfinite(lo) and np.isfinite(hi))))
    return not finite or bool(np.isfinite(np.add.reduce(a)))


def _full_check(a: np.ndarray, name: str, finite: bool, low, high, what, fix) -> None:
    """:func:`vector`'s checks element by element: the error of the first that fails."""
    if finite and not np.all(np.isfinite(a)):
        raise ParameterError(name, "finite values", "NaN or infinite entries", fix)
    if (low is not None and a.min() < low) or (high is not None and a.max() > high):
        raise ParameterError(
            name,
            what or f"values in {_interval(low, high, False, False)}",
            f"range [{a.min()!r}, {a.max()!r}]",
            fix,
        )


def as_array(name: str, values) -> np.ndarray:
    """``np.asarray(values)``, with the values a numpy array cannot take directly (a torch
    tensor that requires grad or lives on a GPU, ragged or mixed nested lists) refused with
    :class:`ParameterError` naming ``name`` instead of a conversion traceback."""
    try:
        return np.asarray(values)
    except (RuntimeError, TypeError, ValueError) as exc:
        fix = None
        if type(values).__module__.startswith("torch"):
            fix = "pass tensor.detach().cpu().numpy()"
        raise ParameterError(
            name, "an array of numbers", f"{type(values).__name__} ({exc})".strip(), fix
        ) from None


def generator(rng, *, name: str = "rng", used_for: str | None = None) -> np.random.Generator:
    """A ``numpy.random.Generator`` (no global seeding anywhere in groupbias)."""
    if not isinstance(rng, np.random.Generator):
        what = "a numpy.random.Generator" + (f" (used for {used_for})" if used_for else "")
        raise ParameterError(
            name, what, type(rng).__name__, fix="pass rng=np.random.default_rng(seed)"
        )
    return rng


def check_qptr(qptr, n_items: int, name: str = "qptr") -> np.ndarray:
    """Query offsets for ``n_items`` items (``qptr[0] = 0``, non-decreasing, ``qptr[-1] =
    n_items``) as int64. Order is checked by comparing neighbours, never by subtracting them
    (``np.diff`` of offsets that wrapped around int64 wraps back and looks non-decreasing)."""
    q = np.asarray(qptr)
    if q.ndim != 1 or q.size < 1 or q.dtype.kind not in "iu":
        raise ParameterError(
            name,
            "1-D integer offsets of length n_queries + 1",
            f"array of shape {q.shape} and dtype {q.dtype}",
        )
    if q.dtype == np.uint64 and q.size and int(q.max()) > _INT64_MAX:
        raise ParameterError(name, "offsets below 2**63", f"maximum {int(q.max())}")
    q = q.astype(np.int64, copy=False)
    if q[0] != 0 or q[-1] != n_items or (q[1:] < q[:-1]).any():
        raise ParameterError(
            name, f"non-decreasing offsets from 0 to n_items={n_items}", f"[{q[0]} .. {q[-1]}]"
        )
    return q


_INT64_MAX = 2**63 - 1


def offsets_from_sizes(sizes, name: str = "sizes") -> np.ndarray:
    """Query offsets (``qptr``, int64 [n + 1]) of the list sizes ``sizes`` (non-negative
    integers), with the sum checked: sizes whose total passes ``2**63 - 1`` raise
    :class:`ParameterError` instead of wrapping around (``4 x 2**62`` would wrap to 0)."""
    s = np.asarray(sizes)
    if s.ndim != 1 or not (s.size == 0 or np.issubdtype(s.dtype, np.integer)):
        raise ParameterError(name, "a 1-D array of integer list sizes", f"shape {s.shape}")
    if s.size and (int(s.min()) < 0 or int(s.max()) > _INT64_MAX):
        raise ParameterError(name, "list sizes in [0, 2**63 - 1]", f"range [{s.min()}, {s.max()}]")
    s = s.astype(np.int64, copy=False)
    if s.size and int(s.max()) > _INT64_MAX // s.size:  # the sum might not fit: add exactly
        total = sum(int(v) for v in s)
        if total > _INT64_MAX:
            raise ParameterError(
                name, "list sizes whose sum fits in int64 (at most 2**63 - 1 items)", f"sum {total}"
            )
    qptr = np.zeros(s.size + 1, dtype=np.int64)
    np.cumsum(s, out=qptr[1:])
    return qptr


def identifiers(name: str, values) -> np.ndarray:
    """Ids (query, user, item, session, author ids) as int64 when every one is an integer
    that fits int64 (integer arrays; strings of decimal digits), else as strings; never as
    floats, whose 53-bit mantissa merges distinct ids (``2**53`` and ``2**53 + 1``, or
    sessions ``10**30 + s``). A float array is refused with :class:`ParameterError` (read id
    columns as text or integers)."""
    a = np.asarray(values)
    if a.dtype == bool or a.dtype.kind in "fc":
        raise ParameterError(
            name,
            "integer or string ids (floats merge distinct ids above 2**53)",
            f"an array of dtype {a.dtype}",
            fix="read id columns as integers or text",
        )
    if a.dtype.kind == "i":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "u":
        if a.size and int(a.max()) > _INT64_MAX:
            return a.astype(str)
        return a.astype(np.int64)
    if a.dtype.kind == "O":
        for v in a.ravel():
            if isinstance(v, (float, np.floating)) or isinstance(v, (bool, np.bool_)):
                raise ParameterError(
                    name,
                    "integer or string ids (floats merge distinct ids above 2**53)",
                    v,
                    fix="read id columns as integers or text",
                )
        if all(is_integer(v) and -_INT64_MAX - 1 <= int(v) <= _INT64_MAX for v in a.ravel()):
            return a.astype(np.int64)
        a = np.asarray([str(v) for v in a.ravel()], dtype=str).reshape(a.shape)
    if a.dtype.kind not in "US":
        raise ParameterError(name, "integer or string ids", f"an array of dtype {a.dtype}")
    text = a.astype(str)
    if text.size == 0:
        return np.zeros(a.shape, dtype=np.int64)
    stripped = np.char.strip(text)
    body = np.char.lstrip(stripped, "+-")
    signs = np.char.str_len(stripped) - np.char.str_len(body)
    digits = np.char.isdigit(body) & (signs <= 1)
    if not bool(digits.all()):
        return text
    longest = int(np.char.str_len(body).max())
    if longest > 19 or (longest == 19 and any(abs(int(v)) > _INT64_MAX for v in stripped.ravel())):
        return text
    return stripped.astype(np.int64)


def all_finite(values: np.ndarray, block: int = 1 << 20) -> bool:
    """No NaN or infinite value, checked over blocks of ``block`` values (no temporaries the
    size of ``values``)."""
    flat = np.asarray(values).ravel()
    if flat.dtype.kind not in "fc":
        return True
    for s in range(0, flat.size, block):
        if not np.isfinite(flat[s : s + block]).all():
            return False
    return True


def all_integral(values: np.ndarray, block: int = 1 << 20) -> bool:
    """Every value is a whole number (False for NaN), checked over blocks of ``block``
    values: no temporaries the size of ``values``."""
    flat = np.asarray(values).ravel()
    for s in range(0, flat.size, block):
        part = flat[s : s + block]
        if not np.array_equal(part, np.round(part)):
            return False
    return True


def check_k(k, name: str = "k") -> int | None:
    """A rank cutoff: an integer >= 1, or None for no cutoff."""
    if k is None:
        return None
    return integer(name, k, low=1, what="an integer >= 1, or None for no cutoff")


def check_threads(threads, name: str = "threads") -> int:
    """Worker threads: an integer of at least 1 (a caller that takes None for "every core"
    asks :func:`groupbias._fast.threads.cores`, the one place the core count is computed)."""
    return integer(name, threads, low=1, what="an integer of at least 1, or null (all cores)")


def checked_arguments(fn: _F) -> _F:
    """``fn``, whose calls with a keyword it does not take, or without an argument it needs,
    raise :class:`~groupbias.core.errors.ArgumentError` naming the keyword (with the closest
    ones it takes: ``beta`` → ``did you mean beta_mean?``) instead of Python's bare
    ``TypeError``. A correct call costs nothing more: the arguments are bound against the
    signature only after a ``TypeError``."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError:
            try:
                sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise _argument_error(fn.__name__, sig, args, kwargs, exc) from None
            raise

    return call  # type: ignore[return-value]


def _argument_error(name: str, sig: inspect.Signature, args, kwargs, exc) -> Exception:
    """The :class:`ArgumentError` of a call ``sig`` cannot bind (``exc``: Python's)."""
    params = sig.parameters
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    keywords = [p for p, v in params.items() if v.kind in kinds]
    takes_any = any(v.kind == inspect.Parameter.VAR_KEYWORD for v in params.values())
    unknown = [k for k in kwargs if k not in params and not takes_any]
    if unknown:
        k = unknown[0]
        close = [p for p in keywords if p.startswith(k) or k.startswith(p)]
        close += [c for c in difflib.get_close_matches(k, keywords, n=3) if c not in close]
        fix = f"Did you mean {_either(close[:3])}?" if close else f"It takes {', '.join(keywords)}"
        return ArgumentError(k, name, "not a keyword argument", fix)
    try:
        bound = sig.bind_partial(*args, **kwargs).arguments
    except TypeError:
        bound = None
    if bound is not None:
        for p, v in params.items():
            if p not in bound and v.default is v.empty and v.kind in kinds:
                return ArgumentError(p, name, "missing required argument", _REQUIRED_HINTS.get(p))
    return ArgumentError("arguments", name, str(exc).replace(f"{name}() ", ""))


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
