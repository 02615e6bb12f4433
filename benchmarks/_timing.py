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


def one_torch_thread(fn):
    """``fn`` as a call that runs it with torch on one thread: the thread count is set inside
    the call (so inside its timing) and the count in force before is restored after it."""

    def call():
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn()
        finally:
            torch.set_num_threads(before)

    return call


def set_backend(name: str | None) -> str:
    """Set ``GROUPBIAS_BACKEND`` for ours (and the fresh processes started after) when
    ``name`` is given; the backend in force, as the line to print."""
    if name is not None:
        os.environ["GROUPBIAS_BACKEND"] = name
    value = os.environ.get("GROUPBIAS_BACKEND", "").strip()
    return f"GROUPBIAS_BACKEND={value}" if value else "GROUPBIAS_BACKEND unset (auto)"


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return os.cpu_count() or 1


def first_call_child(fn, warm: int) -> None:
    """The body of a fresh process for :func:`fresh_first_calls`: times the process's first
    call of ``fn`` and ``warm`` calls after it, and prints them as JSON (the last line), with
    whether the call loaded numba (the compiled path's one-time cost)."""
    import json
    import sys

    numba_before = "numba" in sys.modules
    gc.collect()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    warm_t = median_time(fn, warm)[0] if warm else float("nan")
    loaded = "numba" in sys.modules and not numba_before
    print(json.dumps({"first": first, "warm": warm_t, "numba": loaded}))


def fresh_first_calls(cmd: list[str], processes: int) -> dict:
    """Run ``cmd`` (a script's child mode calling :func:`first_call_child`) in ``processes``
    fresh interpreters: the medians of the first call and of the warm calls, and whether the
    first call loaded numba."""
    import json
    import subprocess
    import sys

    runs = []
    for _ in range(processes):
        out = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "first": statistics.median(r["first"] for r in runs),
        "warm": statistics.median(r["warm"] for r in runs),
        "numba": any(r["numba"] for r in runs),
        "processes": processes,
    }


def first_call_line(name: str, res: dict) -> str:
    """The printed line of :func:`fresh_first_calls`."""
    path = "loads numba" if res["numba"] else "does not load numba"
    return (
        f"{name:<24}first call in a fresh process {res['first'] * 1000:8.1f} ms, "
        f"warm there {res['warm'] * 1000:8.1f} ms (medians of {res['processes']} processes; "
        f"the first call {path})"
    )


def add_path_options(ap) -> None:
    """``--backend`` (GROUPBIAS_BACKEND for ours) and ``--first-call`` (fresh processes
    timing ours' first call), the options of the metric benchmarks."""
    ap.add_argument(
        "--backend",
        choices=["auto", "numpy", "numba"],
        default=None,
        help="sets GROUPBIAS_BACKEND for ours (default: as the environment has it, else auto)",
    )
    ap.add_argument(
        "--first-call",
        type=int,
        default=3,
        help="fresh processes timing ours' first call at the smallest --queries (0: none)",
    )
