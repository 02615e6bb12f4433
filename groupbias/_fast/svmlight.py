"""SVMlight decoding: whether a chunk of a file is parsed by the compiled loop.

The numpy passes of the reader (``data_loaders.svmlight``) decode every spelling and raise
the errors with file, line and field; the compiled loop
(:mod:`groupbias._fast.svmlight_loops`) parses the common spelling straight into dense rows
and declines anything else, which then takes the numpy passes. Both compute each value as
one correctly rounded division of exact operands, so they give the same float32 values.
"""

from __future__ import annotations

from types import ModuleType

from .backend import compiled

__all__ = ["LOOPS_MIN_BYTES", "dense_chunk_loop"]

#: file size from which the compiled loop serves under backend "auto" (importing numba once
#: per process costs what the loop saves on about 32 MiB)
LOOPS_MIN_BYTES = 32 << 20


def dense_chunk_loop(file_bytes: int) -> ModuleType | None:
    """The compiled loop (``parse_dense_chunk``) for a file of ``file_bytes`` bytes, or None
    for the numpy passes."""
    return compiled("svmlight_loops", file_bytes, LOOPS_MIN_BYTES)
