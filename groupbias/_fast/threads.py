"""Calls run in parallel on threads started for one call and joined before it returns."""

from __future__ import annotations

import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from typing import TypeVar

__all__ = [
    "cores",
    "idle_cores",
    "on_main_thread",
    "call_later",
    "in_parallel",
    "in_order",
    "as_they_finish",
    "torch_cores",
]

T = TypeVar("T")
A = TypeVar("A")


def cores() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def idle_cores() -> int:
    """The cores this process may use less the 1-minute load average (rounded), at least 1.

    torch's threads spin while they wait for each other, so on a machine whose cores are
    busy with other jobs every thread beyond the idle cores slows a step down several times
    over (measured in docs/performance.md, "LTR training"); on an idle machine this is
    every core. The count then depends on the load, and torch's sums (so the trained
    weights' last bits) on the count: ``trainer.threads: auto`` trades bit-for-bit reruns
    for speed on a shared machine."""
    n = cores()
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this platform
        return n
    return max(1, min(n, n - round(load)))


def on_main_thread() -> bool:
    """Whether the caller runs on the interpreter's main thread (where signal handlers can
    be set)."""
    return threading.current_thread() is threading.main_thread()


def call_later(seconds: float, fn: Callable[..., object], *args) -> None:
    """``fn(*args)`` on a thread of its own after ``seconds`` (a signal sent again a moment
    later, by the command's unraisable hook); returns at once. The thread is not a daemon:
    the interpreter waits for it before it exits, so the call is never skipped."""
    threading.Timer(seconds, fn, args).start()


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


def in_order(
    work: Callable[[A], T], items: Iterable[A], *, workers: int
) -> Iterator[tuple[A, Callable[[], T]]]:
    """``(item, result)`` for each of ``items`` in their order, where ``result()`` returns
    ``work(item)`` or raises what it raised.

    With ``workers`` > 1 the calls run ahead on ``workers`` threads of a pool that lives
    only as long as this generator (closing it early cancels what has not started and joins
    what has), at most ``workers`` + 1 items past the one the consumer holds; with 1, each
    call runs in the calling thread when its ``result()`` is asked for. ``items`` is read
    lazily, so a buffer the consumer hands back can be drawn again."""
    if workers <= 1:
        for item in items:
            yield item, functools.partial(work, item)
        return
    pending: deque[tuple[A, Future]] = deque()
    with ThreadPoolExecutor(workers) as pool:
        try:
            for item in items:
                pending.append((item, pool.submit(work, item)))
                while len(pending) > workers:
                    done, fut = pending.popleft()
                    yield done, fut.result
            while pending:
                done, fut = pending.popleft()
                yield done, fut.result
        finally:
            for _, fut in pending:
                fut.cancel()


def as_they_finish(
    work: Callable[[A], T], items: Iterable[A], *, workers: int
) -> Generator[tuple[A, Callable[[], T]], None, None]:
    """``(item, result)`` for each of ``items`` as its call ends, ``result()`` returning
    ``work(item)`` or raising what it raised; at most ``workers`` calls run at once, on a
    pool that lives only as long as this generator. Closed early (Ctrl-C, an error in the
    consumer), it drops the calls not started and returns at once: only the calls in flight
    (at most ``workers``) finish, in their threads, for work that is slow to stop (a request
    over the network)."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = {pool.submit(work, item): item for item in items}
        for fut in as_completed(futures):
            yield futures[fut], fut.result
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


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
