"""Benchmark: the paper's fairness metrics against padded numpy, and the related-work
fairness metrics against a per-query loop.

Paper's metrics (first part): ρ(DTR) and Δ(EEL) of the ranking by the scores, default
settings (no cutoff, average ties, thresholds of graded labels), on 1,000 and 30,000 queries
x 120 items (``--queries``, ``--width``; labels 0-4 with MSLR's distribution, relevance =
label/4, 30 % of the items affected). Ours: ``groupbias.metrics.rho_dtr_ranking`` and
``delta_eel_ranking`` (validation included), called as a user calls them: nothing is loaded
or switched before the timing, the library picks its path by the call's size and
``GROUPBIAS_BACKEND`` (``--backend auto|numpy|numba`` sets it; unset means ``auto``). At the
smallest ``--queries`` the first call of a process is timed apart too (``--first-call``
fresh interpreters, each timing its first call and then warm calls: numba's import and
on-disk cache load where the call takes the compiled path), medians printed; in the timed
process ours and the torch peer are called once before the rounds (warm medians).
Peers, as a researcher writes them on the padded ``[queries, width]`` rows:

* ``padded numpy``: one per-row ``argsort``, the discount scattered to the items' slots,
  group sums by row sums; Δ(EEL)'s target exposure from per-row grade counts (every item of
  a grade gets the mean discount of the ranks its grade occupies);
* ``padded torch, 1 thread``: the same with torch tensors (``torch.argsort``, ``scatter``,
  grade counts by ``scatter_add``), ``torch.set_num_threads(1)`` inside the timed call (the
  count before restored after it).

Timings interleaved (``--rounds``), medians; every peer must agree with ours (the largest
difference is printed); the 1-minute load average is printed beside each ratio (against the
strongest peer of the row), and the last line is ``ratio: <the smallest of these>``.

Reference lines (Python loops per query, timed once on ``--reference-queries`` queries and
scaled): the conventions of the paper's released evaluation code (top 20, exposure
``1/log2(2 + r)``, single-group queries dropped, ρ(DTR) from exposure per utility, Δ(EEL)
squared over per-query min-max bins) against ours with those settings (the ``paper_code``
preset, deterministic), and FairRankTune's ``EXPU`` (min/max ratio of exposure per utility,
which is ρ(DTR)) against ``rho_dtr_ranking``; both must agree with ours (1e-9).

Related-work metrics (second part, the earlier baseline): 6,000 queries, ~750k items (list
sizes uniform in 1..249), random scores, binary relevance, two groups: term-count-like
magnitudes (0-3 per group, ~30 % of the items without any group term) and their row shares
as membership; ``groupbias.evaluation.fairness`` vs a per-query numpy loop (1e-9).

    .venv/bin/python benchmarks/fairness.py [--queries 1000 30000] [--width 120] [--rounds 5]
        [--backend auto|numpy|numba] [--first-call 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import (  # noqa: E402
    add_path_options,
    cores,
    first_call_child,
    first_call_line,
    fresh_first_calls,
    interleaved,
    load,
    median_time,
    one_torch_thread,
    random_qptr,
    set_backend,
)

from groupbias import fairness as F  # noqa: E402
from groupbias import metrics as M  # noqa: E402
from groupbias.evaluation.catalog import eel_thresholds  # noqa: E402

LABEL_P = [0.52, 0.32, 0.13, 0.02, 0.01]


def make_input(n_queries: int, max_len: int = 249, seed: int = 0):
    rng = np.random.default_rng(seed)
    qptr = random_qptr(rng, n_queries, max_len)
    n = int(qptr[-1])
    scores = rng.random(n)
    labels = (rng.random(n) < 0.3).astype(np.float64)
    counts = rng.integers(0, 4, size=(n, 2)).astype(np.float64)
    counts[rng.random(n) < 0.3] = 0.0
    rows = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)
    return scores, labels, counts, share, qptr


# ------------------------------------------------------------------ per-query loop baseline


def _disc(n: int, k: int | None) -> np.ndarray:
    d = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    if k is not None:
        d[k:] = 0.0
    return d


def _js(p, t):
    mid = 0.5 * (p + t)

    def kl(x):
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / mid[nz])))

    return 0.5 * kl(p) + 0.5 * kl(t)


def loop_awrf(scores, share, labels, qptr, k, target):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        m = share[a:b]
        e = _disc(b - a, k) @ m[order]
        if target == "relevant":
            t = m[labels[a:b] > 0].sum(axis=0)
        else:
            t = np.full(m.shape[1], 1.0)
        if e.sum() <= 0 or t.sum() <= 0:
            continue
        out[i] = 1.0 - _js(e / e.sum(), t / t.sum())
    return out


def loop_texfair(scores, membership, qptr, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        m = membership[a:b][order]
        d = _disc(b - a, k)
        e = d @ m
        if e.sum() <= 0:
            out[i] = 1.0
            continue
        rbdf = d @ (m.sum(axis=1) > 0) / d.sum()
        out[i] = 1.0 - np.abs(e / e.sum() - 0.5).sum() * rbdf
    return out


def loop_nfairr(scores, counts, qptr, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        c = counts[a:b]
        tot = c.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            omega = 1.0 - np.abs(c / tot[:, None] - 0.5).sum(axis=1)
        omega[tot <= 0] = 1.0
        d = _disc(b - a, k)
        fairr = d @ omega[np.argsort(-scores[a:b], kind="stable")]
        ideal = d @ np.sort(omega)[::-1]
        if ideal > 0:
            out[i] = fairr / ideal
    return out


def loop_cwex(scores, share, qptr, k, alpha):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        m = share[a:b][order]
        d = _disc(b - a, k)
        ex = d @ np.column_stack([m, 1.0 - m.sum(axis=1)]) / d.sum()
        out[i] = alpha * ex[2] - (1 - alpha) * abs(ex[0] - ex[1])
    return out


def loop_arab(scores, counts, qptr, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        mag = np.log1p(counts[a:b][order])
        diff = mag[:, 0] - mag[:, 1]
        t = b - a if k is None else min(k, b - a)
        rab = np.cumsum(diff[:t]) / np.arange(1, t + 1)  # RaB@x, x = 1..t
        out[i] = rab.mean()
    return out


# ------------------------------------------------------------------ paper's metrics: padded numpy


def paper_input(n_queries: int, width: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = n_queries * width
    qptr = np.arange(0, n + 1, width, dtype=np.int64)
    labels = rng.choice(5, size=n, p=LABEL_P).astype(np.float64)
    return rng.random(n), labels / 4.0, (rng.random(n) < 0.3).astype(np.float64), qptr


def _numpy_exposure(s):
    """Exposure ``1 / log2(1 + rank)`` of every slot of the rows ``s`` (ranked by argsort)."""
    m, w = s.shape
    e = np.empty((m, w))
    disc = np.broadcast_to(1.0 / np.log2(np.arange(2, w + 2)), (m, w))
    np.put_along_axis(e, np.argsort(s, axis=1)[:, ::-1], disc, axis=1)
    return e


def _numpy_rho(xa, xn, ya, yn):
    num, den = xa * yn, ya * xn
    hi, lo = np.maximum(num, den), np.minimum(num, den)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(hi > 0, lo / hi, 1.0)
    return np.where((xa + xn <= 0) | (ya + yn <= 0), np.nan, rho)


def numpy_rho_dtr(s, rel, g, width):
    s, rel, g = (v.reshape(-1, width) for v in (s, rel, g))
    e = _numpy_exposure(s)
    return _numpy_rho(
        (e * g).sum(1), (e * (1 - g)).sum(1), (rel * g).sum(1), (rel * (1 - g)).sum(1)
    )


def numpy_delta_eel(s, rel, g, width, thresholds):
    s, rel, g = (v.reshape(-1, width) for v in (s, rel, g))
    e = _numpy_exposure(s)
    grade = np.searchsorted(np.asarray(thresholds), rel, side="right")
    levels = len(thresholds) + 1
    counts = np.stack([(grade == v).sum(1) for v in range(levels)], axis=1)
    above = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1] - counts  # items of higher grades
    prefix = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, width + 2)))])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (prefix[above + counts] - prefix[above]) / counts
    target = np.take_along_axis(mean, grade, axis=1)
    diff = e - target
    return np.hypot((diff * g).sum(1), (diff * (1 - g)).sum(1))


# ------------------------------------------------------------------ paper's metrics: padded torch


def _torch_rows(s, rel, g, width):
    import torch

    return tuple(torch.from_numpy(v).view(-1, width) for v in (s, rel, g))


def _torch_exposure(s):
    """Exposure ``1 / log2(1 + rank)`` of every slot of the rows ``s`` (ranked by argsort)."""
    import torch

    m, w = s.shape
    disc = (1.0 / torch.log2(torch.arange(2, w + 2, dtype=torch.float64))).expand(m, w)
    return torch.empty_like(s).scatter_(1, torch.argsort(s, dim=1, descending=True), disc)


def _torch_rho(xa, xn, ya, yn):
    import torch

    num, den = xa * yn, ya * xn
    hi, lo = torch.maximum(num, den), torch.minimum(num, den)
    rho = torch.where(hi > 0, lo / hi, 1.0)
    return torch.where((xa + xn <= 0) | (ya + yn <= 0), torch.nan, rho).numpy()


def torch_rho_dtr(s, rel, g, width):
    s, rel, g = _torch_rows(s, rel, g, width)
    e = _torch_exposure(s)
    return _torch_rho(
        (e * g).sum(1), (e * (1 - g)).sum(1), (rel * g).sum(1), (rel * (1 - g)).sum(1)
    )


def torch_delta_eel(s, rel, g, width, thresholds):
    import torch

    s, rel, g = _torch_rows(s, rel, g, width)
    e = _torch_exposure(s)
    th = torch.as_tensor(np.asarray(thresholds, dtype=np.float64))
    grade = torch.searchsorted(th, rel.contiguous(), right=True)
    levels = th.numel() + 1
    counts = torch.zeros(s.shape[0], levels, dtype=torch.int64)
    counts.scatter_add_(1, grade, torch.ones_like(grade))
    above = torch.flip(torch.cumsum(torch.flip(counts, [1]), 1), [1]) - counts
    disc = 1.0 / torch.log2(torch.arange(2, width + 2, dtype=torch.float64))
    prefix = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(disc, 0)])
    mean = (prefix[above + counts] - prefix[above]) / counts
    target = torch.gather(mean, 1, grade)
    diff = e - target
    return torch.hypot((diff * g).sum(1), (diff * (1 - g)).sum(1)).numpy()


# ------------------------------------------------------------------ reference lines


def released_code_loop(s, lab, g, qptr, top_n=20, levels=2):
    """The conventions of the paper's released evaluation code, one query at a time (as
    ``evaluation=paper_code`` follows them for a deterministic ranking): the top ``top_n``
    by score, single-group queries dropped (NaN), exposure ``1/log2(2 + r)``; ρ(DTR) =
    min/max of the groups' exposure per utility (1 when a group has none); Δ(EEL) the
    squared distance to the target of ``levels`` min-max bins of the labels."""
    rho = np.full(qptr.size - 1, np.nan)
    eel = np.full(qptr.size - 1, np.nan)
    for q in range(qptr.size - 1):
        a, b = qptr[q], qptr[q + 1]
        order = a + np.argsort(-s[a:b], kind="stable")[:top_n]
        gq, lq = g[order], lab[order]
        if gq.min() == gq.max():
            continue
        e = 1.0 / np.log2(2.0 + np.arange(1, order.size + 1))
        lo, hi = lq.min() - 1e-10, lq.max() + 1e-10
        grade = np.floor((lq - lo) / ((hi - lo) / levels))
        ranked = np.sort(grade)[::-1]
        target = np.array([e[ranked == x].mean() for x in grade])
        ratios = []
        eel[q] = 0.0
        for member in (gq, 1.0 - gq):
            eel[q] += (e @ member - target @ member) ** 2
            u = lq @ member
            ratios.append(0.0 if u == 0 else (e @ member) / u)
        both = ratios[0] * ratios[1] != 0
        rho[q] = min(ratios) / max(ratios) if both else 1.0
    return rho, eel


def fairranktune_rho(s, rel, g, qptr):
    """FairRankTune's exposure-per-utility fairness (``EXPU``, Singh and Joachims' DTR,
    min/max of the groups' mean exposure per mean utility) of every query's ranking."""
    import pandas as pd
    from FairRankTune import Metrics

    out = np.full(qptr.size - 1, np.nan)
    for q in range(qptr.size - 1):
        a, b = qptr[q], qptr[q + 1]
        order = np.argsort(-s[a:b], kind="stable")
        ranking = pd.DataFrame({"r": order})
        relevance = pd.DataFrame({"r": rel[a:b][order]})
        groups = dict(enumerate(g[a:b].astype(int).tolist()))
        if len(set(groups.values())) == 2:
            out[q] = Metrics.EXPU(ranking, groups, relevance, "MinMaxRatio")[0]
    return out


def reference_lines(s, rel, g, q, th, args) -> None:
    """The released code's conventions and FairRankTune, timed once on the first
    ``--reference-queries`` queries and scaled to the input (a Python loop per query),
    each against ours on the same queries."""
    from groupbias.evaluation.catalog import EvalSpec
    from groupbias.evaluation.protocol import EvaluationProtocol

    n = min(args.reference_queries, q.size - 1)
    qs, m = q[: n + 1], int(q[n])
    sub = (s[:m], rel[:m], g[:m])
    scale = (q.size - 1) / n
    paper_code = EvaluationProtocol(
        mode="deterministic", offset=2, on_zero_utility="one", eel_bins="query_minmax",
        eel_levels=2, eel_distance="sq_l2", top_n=20, single_group="drop", ties="stable",
    )  # fmt: skip
    spec = EvalSpec(
        labels=sub[1], relevance=sub[1], groups=sub[2], qptr=qs, metrics=("rho_dtr", "delta_eel")
    )
    t0 = time.perf_counter()
    mine = paper_code.evaluate(sub[0], spec, regime="ltr")
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    rho, eel = released_code_loop(*sub, qs)
    t_loop = time.perf_counter() - t0
    diff = max(_max_diff(mine["rho_dtr"], rho), _max_diff(mine["delta_eel"], eel))
    print(
        f"reference: the released code's conventions (rho_dtr + delta_eel, paper_code), "
        f"{n} queries scaled to {q.size - 1}: loop {t_loop * scale * 1000:.1f} ms, ours "
        f"{t_ours * scale * 1000:.1f} ms, ratio {t_loop / t_ours:.1f}, max |diff| {diff:.1e}"
    )
    try:
        import FairRankTune  # noqa: F401
    except ImportError:
        print("reference: FairRankTune is not installed (pip install fairranktune)")
        return
    t0 = time.perf_counter()
    frt = fairranktune_rho(*sub, qs)
    t_frt = time.perf_counter() - t0
    t0 = time.perf_counter()
    mine = M.rho_dtr_ranking(sub[0], sub[1], qptr=qs, groups=sub[2], reduce=None)
    t_ours = time.perf_counter() - t0
    diff = _max_diff(mine, frt)
    print(
        f"reference: FairRankTune EXPU (rho_dtr), {n} queries scaled to {q.size - 1}: "
        f"{t_frt * scale:.1f} s, ours {t_ours * scale * 1000:.1f} ms, "
        f"ratio {t_frt / t_ours:.0f}, max |diff| {diff:.1e}"
    )


def _max_diff(ours, theirs) -> float:
    ok = ~np.isnan(ours)
    if not np.array_equal(ok, ~np.isnan(theirs)):
        raise SystemExit("a reference skips other queries than ours")
    diff = float(np.max(np.abs(ours[ok] - theirs[ok]), initial=0.0))
    if not diff <= 1e-9:
        raise SystemExit(f"a reference differs from ours ({diff:.3g})")
    return diff


def paper_cases(n_queries: int, width: int) -> dict:
    """``{metric: {implementation: call}}`` of the paper's metrics on one input."""
    s, rel, g, q = paper_input(n_queries, width)
    th = eel_thresholds(rel * 4, 4)
    kw = {"qptr": q, "groups": g, "reduce": None}
    return {
        "rho_dtr": {
            "ours": lambda: M.rho_dtr_ranking(s, rel, **kw),
            "padded numpy": lambda: numpy_rho_dtr(s, rel, g, width),
            "padded torch, 1 thread": one_torch_thread(lambda: torch_rho_dtr(s, rel, g, width)),
        },
        "delta_eel": {
            "ours": lambda: M.delta_eel_ranking(s, rel, thresholds=th, **kw),
            "padded numpy": lambda: numpy_delta_eel(s, rel, g, width, th),
            "padded torch, 1 thread": one_torch_thread(
                lambda: torch_delta_eel(s, rel, g, width, th)
            ),
        },
    }


def _agree(name: str, ours, theirs) -> float:
    ok = ~np.isnan(ours)
    if not np.array_equal(ok, ~np.isnan(theirs)):
        raise SystemExit(f"{name}: skips other queries than ours")
    diff = float(np.max(np.abs(ours[ok] - theirs[ok]), initial=0.0))
    if not diff <= 1e-9:
        raise SystemExit(f"{name}: differs from ours ({diff:.3g})")
    return diff


def paper_metrics(args) -> list[float]:
    print(
        f"paper's metrics, {args.rounds} rounds; ours called as a user calls them "
        f"({args.backend_line}; the path picked per call by its size), "
        f"{cores()} core(s) for the process"
    )
    import torch  # noqa: F401 - the peer's import, outside its timing

    ratios = []
    for n_queries in args.queries:
        print(f"\n{n_queries} queries x {args.width} items (medians)")
        for name, cases in paper_cases(n_queries, args.width).items():
            first = None
            if args.first_call and n_queries == min(args.queries):
                child = [__file__, "--_first-call", name, "--queries", str(n_queries)]
                child += ["--width", str(args.width), "--rounds", str(args.rounds)]
                first = fresh_first_calls(child, args.first_call)
            for warm in ("ours", "padded torch, 1 thread"):  # warm, outside the timing
                cases[warm]()  # (the first call of a process is timed apart: --first-call)
            out = interleaved(cases, args.rounds)
            t_ours, v_ours = out.pop("ours")
            print(f"{name:<10} {'ours':<24}{t_ours * 1000:9.1f} ms")
            for peer, (t_peer, v_peer) in out.items():
                diff = _agree(f"{name} {peer}", v_ours, np.asarray(v_peer))
                print(f"{name:<10} {peer:<24}{t_peer * 1000:9.1f} ms   max |diff| {diff:.1e}")
            if first is not None:
                print(first_call_line(f"{name} ours", first))
            best = min(out, key=lambda k: out[k][0])
            ratios.append(out[best][0] / t_ours)
            print(
                f"ratio of {name} at {n_queries} x {args.width}: {ratios[-1]:.2f} "
                f"(strongest peer: {best}) load: {load()}"
            )
    if args.reference_queries:
        s, rel, g, q = paper_input(max(args.queries), args.width)
        reference_lines(s, rel, g, q, eel_thresholds(rel * 4, 4), args)
    return ratios


# ------------------------------------------------------------------ timing


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, nargs="+", default=[1000, 30000])
    ap.add_argument("--width", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--related-queries", type=int, default=6000)
    ap.add_argument("--max-len", type=int, default=249)
    ap.add_argument("--k", type=int, default=10, help="cutoff (0 = no cutoff)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference-queries", type=int, default=2000, help="0: no reference lines")
    add_path_options(ap)
    ap.add_argument("--related", type=int, default=1, help="0: skip the related-work part")
    ap.add_argument("--_first-call", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.backend_line = set_backend(args.backend)
    if args._first_call:
        ours = paper_cases(args.queries[0], args.width)[args._first_call]["ours"]
        first_call_child(ours, args.rounds)
        return
    print(f"load before: {load()}")
    k = args.k or None
    paper = paper_metrics(args)
    if not args.related:
        print(f"ratio: {min(paper):.2f}")
        return
    s, lab, counts, share, q = make_input(args.related_queries, args.max_len)
    print(
        f"input: {q.size - 1} queries, {s.size} items, 2 groups, k={k}, "
        f"{args.repeats} repeats (median)"
    )

    cases = {
        "awrf uniform": (
            lambda: F.awrf(s, qptr=q, membership=share, k=k, reduce=None),
            lambda: loop_awrf(s, share, lab, q, k, "uniform"),
        ),
        "awrf relevant": (
            lambda: F.awrf(
                s, qptr=q, membership=share, labels=lab, k=k, target="relevant", reduce=None
            ),
            lambda: loop_awrf(s, share, lab, q, k, "relevant"),
        ),
        "texfair (rbdf)": (
            lambda: F.texfair(s, qptr=q, membership=share, k=k, reduce=None),
            lambda: loop_texfair(s, share, q, k),
        ),
        "nfairr": (
            lambda: F.nfairr(s, qptr=q, membership=counts, k=k, reduce=None),
            lambda: loop_nfairr(s, counts, q, k),
        ),
        "cwex(0.5)": (
            lambda: F.cwex(s, qptr=q, membership=share, k=k, alpha=0.5, reduce=None),
            lambda: loop_cwex(s, share, q, k, 0.5),
        ),
        "arab tf": (
            lambda: F.arab(s, qptr=q, membership=counts, k=k, magnitude="tf", reduce=None),
            lambda: loop_arab(s, counts, q, k),
        ),
    }
    total_vec = total_loop = 0.0
    print(f"{'metric':<18}{'vectorized s':>14}{'loop s':>10}{'ratio':>8}  mean")
    for name, (vec, loop) in cases.items():
        tv, rv = median_time(vec, args.repeats)
        tl, rl = median_time(loop, args.repeats)
        if not np.array_equal(np.isnan(rv), np.isnan(rl)) or not np.allclose(
            rv[~np.isnan(rv)], rl[~np.isnan(rl)], rtol=0, atol=1e-9
        ):
            raise SystemExit(f"{name}: vectorized and loop results disagree")
        total_vec += tv
        total_loop += tl
        print(f"{name:<18}{tv:>14.4f}{tl:>10.3f}{tl / tv:>8.1f}  {np.nanmean(rv):.6f}")
    print(f"{'total':<18}{total_vec:>14.4f}{total_loop:>10.3f}")
    print(f"related-work metrics vs the loop: {total_loop / total_vec:.1f}  load: {load()}")
    print(f"ratio: {min(paper):.2f}")


if __name__ == "__main__":
    main()
