"""Shared by the benchmark scripts: median timing and MSLR-like random query lists."""

from __future__ import annotations

import statistics
import time

import numpy as np


def median_time(fn, repeats: int):
    """``(median seconds over repeats, the last result)`` of ``fn()``."""
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def random_qptr(rng: np.random.Generator, n_queries: int, max_len: int) -> np.ndarray:
    """Query offsets of ``n_queries`` lists with lengths uniform in 1..max_len."""
    sizes = rng.integers(1, max_len + 1, size=n_queries)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
