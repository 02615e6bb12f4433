"""SVMlight decoding: whether a chunk of a file is parsed by the compiled loop.

The compiled loop (:mod:`groupbias._fast.svmlight_loops`) parses the common spelling of
whole chunks and declines anything else; the line-by-line parser of
``data_loaders.svmlight`` takes what it declines (and every chunk where the loop does not
serve) and raises the errors with file, line and field. Both compute each value as
``float(token)``, so they give the same float32 values.
"""

from __future__ import annotations

from types import ModuleType

from .backend import compiled

__all__ = ["LOOPS_MIN_BYTES", "chunk_loop"]

#: file size from which the compiled loop serves under backend "auto" (importing numba and
#: loading the loop, about 0.4 s, is what the line-by-line parser takes for about 2 MiB)
LOOPS_MIN_BYTES = 2 << 20


def chunk_loop(file_bytes: int) -> ModuleType | None:
    """The compiled loop (``parse_chunk``) for a file of ``file_bytes`` bytes, or None for
    the line-by-line parser."""
    return compiled("svmlight_loops", file_bytes, LOOPS_MIN_BYTES)
