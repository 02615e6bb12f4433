"""Benchmark: Plackett–Luce sampling + Monte-Carlo expected exposure against numpy's packed-key
sort on one thread, at 1,000 queries in a fresh process and at 30,000 queries.

Input: lists of ``--items`` items (default 120), logits standard normal, ``--samples``
rankings per query (default 100), no cutoff, discount ``1/log2(1 + r)``.

* Ours: ``PlackettLuce(logits, qptr, samples=S, exact_max=0, device=--device,
  workers=--workers).expected_exposure()`` as a user calls it: the path is picked by size
  (numpy passes below 10^8 sampled keys of a block, compiled loops from there; ``--backend``
  sets ``GROUPBIAS_BACKEND``),
  on the cores the process may use.
* Peer (``numpy packed-key sort``): what a researcher writes with numpy on one thread:
  cache-sized chunks of rows, float32 uniforms from ``Generator.random``, exponential race
  keys ``-log1p(-u) / p`` (numpy's SIMD logarithm), the column packed into the low mantissa
  bits, one int32 sort per row, the discount scattered back with ``put_along_axis``, float64
  sums and sums of squares over the samples.
* Reference line: the per-query loop of earlier versions of this script (Gumbel-max
  ``argsort`` per query), timed on ``--loop-queries`` queries and scaled to the input.

Small size (``--small``, default 1,000 queries): every round starts a fresh interpreter that
imports both, then times one call of each (the order alternating between rounds): the
one-time costs of a process (thread pool, first allocations, and loading compiled loops
where ours would load them) are inside the timing. Large size (``--queries``, default
30,000): one process, one untimed call each, then ``--rounds`` interleaved rounds. Medians;
the 1-minute load average is printed beside every ratio. Ours and the peer draw different
random numbers, so they agree in distribution: the z-scores of their per-item difference
are printed (mean ≈ 0, sd ≈ 1); the checks against exact enumeration are in
tests/rank/test_policies.py. Last line: ``ratio: <the smaller of the two ratios>``.

    .venv/bin/python benchmarks/policy.py [--small 1000] [--queries 30000] [--rounds 5]
        [--items 120] [--samples 100] [--device cpu|torch|cuda|auto] [--workers N]
        [--backend auto|numpy|numba]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved, load  # noqa: E402

from groupbias._fast.threads import cores  # noqa: E402
from groupbias.core.errors import ParameterError  # noqa: E402
from groupbias.rank.plackett_luce import PlackettLuce  # noqa: E402

#: values drawn per chunk of the peer (512 KiB of float32 keys, as ours)
PEER_STEP = 1 << 17


def make_input(n_queries: int, items: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qptr = np.arange(n_queries + 1, dtype=np.int64) * items
    return rng.normal(size=int(qptr[-1])), qptr


def numpy_packed(logits: np.ndarray, width: int, samples: int, seed: int):
    """The peer: numpy packed-key sort on one thread (see the module docstring). Returns
    ``(mean, stderr)`` per item."""
    rng = np.random.default_rng(seed)
    rows = logits.reshape(-1, width)
    inv_p = np.exp(rows.max(axis=1, keepdims=True) - rows).astype(np.float32)  # 1 / p
    disc = (1.0 / np.log2(np.arange(2, width + 2))).astype(np.float32)
    low = np.int32((1 << max(1, (width - 1).bit_length())) - 1)
    col = np.arange(width, dtype=np.int32)
    acc, acc2 = np.zeros(rows.shape), np.zeros(rows.shape)
    per = max(1, PEER_STEP // (samples * width))
    for r0 in range(0, rows.shape[0], per):
        m = min(per, rows.shape[0] - r0)
        u = rng.random((samples, m, width), dtype=np.float32)
        keys = np.log1p(np.negative(u, out=u), out=u)  # -E, E exponential
        np.multiply(keys, -inv_p[r0 : r0 + m], out=keys)  # E / p >= 0: int32 order is float order
        packed = keys.view(np.int32)
        packed &= ~low
        packed |= col
        packed.sort(axis=2)
        packed &= low  # the column in every slot
        ex = np.empty_like(keys)
        np.put_along_axis(ex, packed, np.broadcast_to(disc, packed.shape), axis=2)
        acc[r0 : r0 + m] = ex.sum(axis=0, dtype=np.float64)
        acc2[r0 : r0 + m] = np.square(ex, out=ex).sum(axis=0, dtype=np.float64)
    mean = acc / samples
    var = np.maximum(acc2 / samples - mean * mean, 0.0)
    return mean.ravel(), np.sqrt(var / max(samples - 1, 1)).ravel()


def loop_exposure(logits: np.ndarray, qptr: np.ndarray, samples: int, seed: int):
    """Reference line: per-query loop, Gumbel-max rankings of one query at a time."""
    rng = np.random.default_rng(seed)
    mean = np.empty(logits.size)
    for a, b in zip(qptr[:-1], qptr[1:]):
        n = b - a
        z = logits[a:b] + rng.gumbel(size=(samples, n))
        order = np.argsort(-z, axis=1)
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, n + 1), axis=1)
        mean[a:b] = (1.0 / np.log2(1.0 + ranks)).mean(axis=0)
    return mean


def ours(logits, qptr, args, seed: int = 1):
    policy = PlackettLuce(
        logits,
        qptr,
        samples=args.samples,
        exact_max=0,
        seed=seed,
        device=args.device,
        workers=args.workers,
    )
    return policy.expected_exposure()


def z_scores(got, peer) -> str:
    mean, se = peer
    z = (got.mean - mean) / np.sqrt(got.stderr**2 + se**2)
    return f"z-scores of the difference: mean {z.mean():+.3f}, sd {z.std():.3f}"


def fresh_round(args, order: str) -> dict:
    """One fresh interpreter timing one call of ours and one of the peer in ``order``."""
    cmd = [sys.executable, __file__, "--_child", order, "--_queries", str(args.small)]
    for key in ("items", "samples", "device"):
        cmd += [f"--{key}", str(getattr(args, key))]
    if args.workers is not None:
        cmd += ["--workers", str(args.workers)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(args) -> None:
    """The body of :func:`fresh_round`: prints the two times and the agreement as JSON."""
    logits, qptr = make_input(args._queries, args.items)
    times, results = {}, {}
    for name in args._child.split(","):
        t0 = time.perf_counter()
        if name == "ours":
            results[name] = ours(logits, qptr, args)
        else:
            results[name] = numpy_packed(logits, args.items, args.samples, 2)
        times[name] = time.perf_counter() - t0
    times["agreement"] = z_scores(results["ours"], results["peer"])
    times["path"] = path()
    print(json.dumps(times))


def small(args) -> float:
    rounds = [fresh_round(args, "ours,peer" if r % 2 else "peer,ours") for r in range(args.rounds)]
    t_ours = statistics.median(r["ours"] for r in rounds)
    t_peer = statistics.median(r["peer"] for r in rounds)
    keys = args.small * args.items * args.samples
    print(
        f"\n{args.small} queries x {args.items} items x {args.samples} samples "
        f"({keys / 1e6:.0f}M keys), a fresh process per round, {args.rounds} rounds"
    )
    print(f"  ours ({rounds[0]['path']}, {threads_of(args)} thread(s)) {t_ours * 1e3:8.1f} ms")
    print(f"  numpy packed-key sort, 1 thread      {t_peer * 1e3:8.1f} ms")
    print(f"  agreement (first round): {rounds[0]['agreement']}")
    ratio = t_peer / t_ours
    print(f"ratio at {args.small} queries, fresh process: {ratio:.2f}  load: {load()}")
    return ratio


def large(args) -> float:
    logits, qptr = make_input(args.queries, args.items)
    keys = args.queries * args.items * args.samples
    print(
        f"\n{args.queries} queries x {args.items} items x {args.samples} samples "
        f"({keys / 1e6:.0f}M keys), one process, {args.rounds} interleaved rounds"
    )
    t0 = time.perf_counter()
    first = ours(logits, qptr, args)  # loads the compiled loops where they pay
    print(f"  ours, first call (one-time setup included): {time.perf_counter() - t0:.2f} s")
    cases = {
        "ours": lambda: ours(logits, qptr, args),
        "peer": lambda: numpy_packed(logits, args.items, args.samples, 2),
    }
    out = interleaved(cases, args.rounds)
    (t_ours, got), (t_peer, peer) = out["ours"], out["peer"]
    print(f"  ours ({path()}, {threads_of(args)} thread(s)) {t_ours:8.2f} s")
    print(f"  numpy packed-key sort, 1 thread      {t_peer:8.2f} s")
    print(
        f"  agreement: {z_scores(got, peer)}; first call bit-identical: "
        f"{np.array_equal(first.mean, got.mean)}"
    )
    n_loop = min(args.loop_queries, args.queries)
    t_loop, _ = time_once(lambda: loop_exposure(logits, qptr[: n_loop + 1], args.samples, 3))
    print(
        f"  reference: per-query loop {t_loop * args.queries / n_loop:8.2f} s "
        f"(timed on {n_loop} queries, scaled)"
    )
    ratio = t_peer / t_ours
    print(f"ratio at {args.queries} queries: {ratio:.2f}  load: {load()}")
    return ratio


def path() -> str:
    """Which path ours took (the compiled loops are imported only where they serve)."""
    loaded = "groupbias._fast.plackett_luce_loops" in sys.modules
    return "compiled loops" if loaded else "numpy passes"


def time_once(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def threads_of(args) -> int:
    return args.workers or cores()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1000, help="queries, fresh process (0: skip)")
    ap.add_argument("--queries", type=int, default=30_000, help="queries, one process (0: skip)")
    ap.add_argument("--items", type=int, default=120)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loop-queries", type=int, default=1000)
    ap.add_argument("--device", default="cpu", help="PlackettLuce device: cpu|torch|cuda|auto")
    ap.add_argument("--workers", type=int, default=None, help="ours: threads (default: all)")
    ap.add_argument("--backend", default=None, help="ours: GROUPBIAS_BACKEND (auto|numpy|numba)")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_queries", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.backend:
        os.environ["GROUPBIAS_BACKEND"] = args.backend  # ours, and the fresh processes
    if args._child:
        child(args)
        return
    try:
        ours(*make_input(1, args.items), args)  # a device that is not there: a usage error
    except ParameterError as exc:
        ap.error(str(exc))
    print(f"load before: {load()}")
    ratios = []
    if args.small:
        ratios.append(small(args))
    if args.queries:
        ratios.append(large(args))
    print(f"ratio: {min(ratios):.2f}")


if __name__ == "__main__":
    main()
