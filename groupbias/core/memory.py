"""Memory: refusing requests whose arrays cannot fit, and handing freed memory back to the
operating system."""

from __future__ import annotations

import ctypes
import gc
import os

from .errors import ParameterError

__all__ = ["physical_memory", "check_fits", "release_free_memory"]


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def _size(n_bytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes / 2**10:.1f} KiB"


def check_fits(name: str, given, n_bytes: float, *, what: str, fix: str | None = None) -> None:
    """Refuse, before anything is allocated, a request whose arrays alone (``n_bytes``,
    estimated by the caller: ``what`` says of what) exceed the machine's physical memory:
    a :class:`ParameterError` naming ``name`` and both sizes, instead of numpy's
    ``Unable to allocate`` or a ``MemoryError`` minutes later."""
    total = physical_memory()
    if total is None or n_bytes <= total:
        return
    raise ParameterError(
        name,
        f"a size whose arrays fit in memory ({what} would need about {_size(n_bytes)}; "
        f"this machine has {_size(total)})",
        given,
        fix,
    )


def release_free_memory() -> bool:
    """Hand the memory a finished run freed back to the operating system, so that building
    its report (pandas, matplotlib) starts from what is still in use. glibc keeps freed
    blocks below its mmap threshold (up to 32 MB: a float64 array of 4M items) in its heap;
    ``malloc_trim(0)`` returns their pages. Returns False where the C library has no
    ``malloc_trim`` (nothing is done there)."""
    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return False
    trim(0)
    return True
