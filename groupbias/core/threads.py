"""Worker threads: calls run in parallel on threads kept for the process, and short GIL
time slices while threads run many short numpy calls.

:func:`in_parallel` runs the first of its calls on the calling thread and the others on a
pool of threads kept for the process (starting threads, and waiting for the calling
thread's share to be done by another thread, cost more than many calls take).

Threads that each make one numpy call after another (tens of microseconds each, the GIL
released inside and taken back between calls) keep handing the GIL to each other. A
thread that finds the GIL taken waits for it for up to the interpreter's switch interval
(5 ms by default) before it asks the holder to let go; with a much shorter interval the
two threads take turns at a steady pace instead, and fewer of them sleep and are woken
(on a 2-core machine, the Plackett–Luce numpy passes at 1,000 queries: 62 ms against
55 ms, the same bits; ``benchmarks/policy.py``).

:func:`short_switch_interval` sets the interval for the duration of such a section and
puts back the one it found when the last section running in the process ends (sections
may overlap, from several threads). The interval is the interpreter's, so other threads
of the process switch at that pace too while a section runs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["SHORT_SWITCH_INTERVAL", "in_parallel", "short_switch_interval"]

T = TypeVar("T")

#: the switch interval (seconds) inside :func:`short_switch_interval`
SHORT_SWITCH_INTERVAL = 1e-4

_lock = threading.Lock()
_sections = 0
_found = 0.0


@contextmanager
def short_switch_interval(seconds: float = SHORT_SWITCH_INTERVAL) -> Iterator[None]:
    """Run the body with the interpreter's switch interval at most ``seconds``; the
    interval found before the first of the overlapping sections is put back after the
    last one."""
    global _sections, _found
    with _lock:
        if _sections == 0:
            _found = sys.getswitchinterval()
            sys.setswitchinterval(min(seconds, _found))
        _sections += 1
    try:
        yield
    finally:
        with _lock:
            _sections -= 1
            if _sections == 0:
                sys.setswitchinterval(_found)


_pool_lock = threading.Lock()
_pool: list[tuple[int, ThreadPoolExecutor]] = []  # (threads, pool), kept for the process
_on_helper = threading.local()


def _helpers(n: int) -> ThreadPoolExecutor:
    """A pool of at least ``n`` threads, kept for the process (a larger one replaces it)."""
    with _pool_lock:
        if not _pool or _pool[0][0] < n:
            if _pool:
                _pool.pop()[1].shutdown(wait=False)
            _pool.append((n, ThreadPoolExecutor(n, thread_name_prefix="groupbias")))
        return _pool[0][1]


def _forget_pool() -> None:
    """In a forked child: the parent's threads are not there, so a new pool is made."""
    _pool.clear()


if hasattr(os, "register_at_fork"):  # pragma: no branch - every POSIX platform
    os.register_at_fork(after_in_child=_forget_pool)


def _as_helper(call: Callable[[], T]) -> T:
    _on_helper.active = True
    try:
        return call()
    finally:
        _on_helper.active = False


def in_parallel(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The results of ``calls``, in order, run in parallel: the first on the calling
    thread (which would otherwise wait idle, while a pool thread takes a while to wake),
    the others on threads kept for the process. Returns (or raises the first exception,
    in order) once every call has ended. Called from one of those threads, it runs the
    calls one after the other (the pool's threads may all be waiting already)."""
    if len(calls) == 1 or getattr(_on_helper, "active", False):
        return [call() for call in calls]
    pool = _helpers(len(calls) - 1)
    futures = [pool.submit(_as_helper, call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:  # no call is still running when this returns or raises
        wait(futures)
    return [first, *(f.result() for f in futures)]
