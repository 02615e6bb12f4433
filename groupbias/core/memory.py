"""Handing freed memory back to the operating system."""

from __future__ import annotations

import ctypes
import gc

__all__ = ["release_free_memory"]


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
