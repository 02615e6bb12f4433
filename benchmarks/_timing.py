"""Shared by the benchmark scripts: interleaved median timing, the machine's load, and
MSLR-like random query lists."""

from __future__ import annotations

import gc
import os
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


def interleaved(cases: dict, rounds: int, keep: bool = True) -> dict:
    """Time every case once per round, in turn (A B C A B C ...), ``rounds`` rounds:
    ``{name: (median seconds, a result)}``. Only the first round's result is kept (and
    only with ``keep``): no result of an earlier call is alive while another is timed."""
    times: dict = {name: [] for name in cases}
    results: dict = {}
    for r in range(rounds):
        for name, fn in cases.items():
            gc.collect()
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            if keep and r == 0:
                results[name] = out
            del out
    return {name: (statistics.median(t), results.get(name)) for name, t in times.items()}


def load() -> str:
    """The 1-minute load average (other jobs on the machine), for beside every ratio."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:  # pragma: no cover - platforms without getloadavg
        return "n/a"


def random_qptr(rng: np.random.Generator, n_queries: int, max_len: int) -> np.ndarray:
    """Query offsets of ``n_queries`` lists with lengths uniform in 1..max_len."""
    sizes = rng.integers(1, max_len + 1, size=n_queries)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
