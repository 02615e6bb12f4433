"""Calls run in parallel on threads started for one call and joined before it returns."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["cores", "in_parallel", "torch_cores"]

T = TypeVar("T")


def cores() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def in_parallel(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The results of ``calls``, in order: the first runs on the calling thread, each other
    on a thread started for it. Returns, or raises the first exception in call order, only
    after every call has ended; no thread outlives the call."""
    results: list = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # handed to the caller below
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(1, len(calls))]
    for t in threads:
        t.start()
    try:
        run(0)
    finally:
        for t in threads:
            t.join()
    for exc in errors:
        if exc is not None:
            raise exc
    return results


@contextmanager
def torch_cores(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` for the body (None: left as they are), and the
    count found put back afterwards."""
    import torch

    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
