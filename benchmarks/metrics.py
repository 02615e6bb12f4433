"""Benchmark: NDCG@10 against its strongest peers, and the paper's other metrics.

Inputs: 1,000, 10,000 and 30,000 queries (MSLR-WEB30K has ~30k queries of ~120 items),
each with lists of 120 items and with MSLR-like lengths (uniform in 1..239, mean 120);
labels 0-4 with MSLR's distribution, random scores (no ties), 30 % of the items affected.

NDCG@10 (exp2 gain) from the same flat arrays (scores, labels, qptr), by:

* ``ours``: ``groupbias.metrics.ndcg`` (reduce=None), input validation included, called as
  a user calls it: nothing is loaded or switched before the timing, the library picks its
  path by the call's size and ``GROUPBIAS_BACKEND`` (``--backend auto|numpy|numba`` sets it;
  unset means ``auto``). At the smallest ``--queries`` the first call of a process is timed
  apart too: ``--first-call`` fresh interpreters each time their first call and then warm
  calls (what a fresh process's first call pays: numba's import and on-disk cache load
  where the call takes the compiled path), medians printed beside the warm ones; in the
  timed process ours is called once before the rounds, so its medians are warm ones;
* ``padded numpy``: what a researcher writes in 20 lines: the scores and labels padded to
  ``[queries, longest list]`` (a reshape when every list is 120 long), one per-row
  ``argsort``, the top-10 labels gathered and dotted with the discount, the ideal DCG from
  a per-row ``sort`` of the labels;
* ``padded torch, 1 thread``: the same on padded tensors with ``torch.topk`` of the scores
  and of the labels, ``torch.set_num_threads(1)`` inside the timed call (the count before
  restored after it);
* ``padded torch, N threads``: the same on torch's default threads (the cores);
* ``ranx kernel (sorted rows)``: ranx's numba kernel ``ranx.metrics.ndcg_burges`` (both
  cores) on run rows sorted beforehand, outside the timing (the ranking is done for it) and
  qrels rows sorted by label, also outside;
* ``ranx evaluate``: ``ranx.evaluate`` on the unsorted padded rows (its public entry point);
* ``ir-measures`` and ``pytrec_eval``: dict inputs built outside the timing (pytrec_eval
  with gains ``2^l - 1`` as its qrels' levels);
* ``loop``: a per-query numpy loop (the earlier baseline).

Timings are interleaved (every implementation once per round, ``--rounds`` rounds) and
medians; the 1-minute load average is printed beside every ratio. Every peer must agree
with ours (the largest difference is printed) on the queries with a relevant item
(pytrec_eval keeps scores as float32: queries with float32 ties among the scores are left
out of its check; ranx evaluate gives the mean only). The physical floor is measured in the
same run: one per-row ``argsort`` and one values-only ``sort`` of the padded scores, and one
memory pass over them (a sum).

Per input it prints ``ratio at <queries> x <lengths>: <fastest peer / ours>`` (the strongest
peer of that row); the last line is ``ratio: <the worst of these>``. ``--others`` also times
the other metrics (NDCG@10 per group, ρ(DTR) and Δ(EEL) of a ranking and of tabular
estimates, and the default set through ``compute_metrics``) against the per-query loop.
``--json PATH`` writes every timing.

    .venv/bin/python benchmarks/metrics.py [--queries 1000 10000 30000] [--rounds 5]
        [--backend auto|numpy|numba] [--first-call 3]
"""

from __future__ import annotations

import argparse
import json
import sys
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
    set_backend,
)

from groupbias import metrics as M  # noqa: E402
from groupbias.evaluation.catalog import (  # noqa: E402
    DEFAULT_METRICS,
    EvalSpec,
    compute_metrics,
    eel_thresholds,
)

K = 10
WIDTH = 120
LABEL_P = [0.52, 0.32, 0.13, 0.02, 0.01]


def make_input(n_queries: int, lengths: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if lengths == "fixed":
        sizes = np.full(n_queries, WIDTH)
    else:
        sizes = rng.integers(1, 2 * WIDTH, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    labels = rng.choice(5, size=n, p=LABEL_P).astype(np.float64)
    scores = rng.random(n)
    groups = (rng.random(n) < 0.3).astype(np.float64)
    relevance = labels / 4.0
    beta = np.repeat(rng.normal(0.6, 0.1, size=n_queries), sizes)
    biased = relevance * np.where(groups == 1, beta, 1.0)
    return scores, labels, relevance, biased, groups, qptr


def padded(values, qptr, fill):
    sizes = np.diff(qptr)
    width = int(sizes.max())
    out = np.full((sizes.size, width), fill)
    out[np.arange(width) < sizes[:, None]] = values
    return out


# ------------------------------------------------------------------ peers


def ranx_inputs(scores, labels, qptr):
    """Padded score rows and ranx qrels rows ``[queries, width, 2]`` (doc id, label) sorted by
    label; padding: doc id = width (never a qrels id), score -inf, label 0."""
    s = padded(scores, qptr, -np.inf)
    lab = padded(labels, qptr, 0.0)
    ids = np.broadcast_to(np.arange(s.shape[1], dtype=np.float64), s.shape)
    ids = np.where(np.isfinite(s), ids, float(s.shape[1]))
    o = np.argsort(-lab, axis=1, kind="stable")
    qrels = np.stack([np.take_along_axis(ids, o, 1), np.take_along_axis(lab, o, 1)], axis=2)
    return s, ids, np.ascontiguousarray(qrels)


def ranx_run(s, ids):
    """The per-row sort (the ranking) and the kernel's run layout."""
    o = np.argsort(-s, axis=1)
    return np.stack([np.take_along_axis(ids, o, 1), np.take_along_axis(s, o, 1)], axis=2)


def ir_measures_inputs(scores, labels, qptr):
    qrels, run = {}, {}
    for i in range(qptr.size - 1):
        a, b = int(qptr[i]), int(qptr[i + 1])
        docs = [f"d{j}" for j in range(b - a)]
        qrels[f"q{i}"] = dict(zip(docs, labels[a:b].astype(int).tolist(), strict=True))
        run[f"q{i}"] = dict(zip(docs, scores[a:b].tolist(), strict=True))
    return qrels, run


def ir_measures_ndcg(qrels, run, n_queries):
    import ir_measures
    from ir_measures import nDCG

    measure = nDCG(gains={lv: 2**lv - 1 for lv in range(5)}) @ K
    out = np.full(n_queries, np.nan)
    for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, run):
        out[int(m.query_id[1:])] = m.value
    return out


def pytrec_eval_ndcg(evaluator, run, n_queries):
    out = np.full(n_queries, np.nan)
    for qid, row in evaluator.evaluate(run).items():
        out[int(qid[1:])] = row[f"ndcg_cut_{K}"]
    return out


def _discount():
    return 1.0 / np.log2(np.arange(2, K + 2, dtype=np.float64))


def numpy_ndcg(scores, labels, qptr, fixed):
    """Padded numpy: argsort rows, gather the top-k labels, dot with the discount; the
    ideal DCG from the rows of labels sorted."""
    if fixed:
        s, lab = scores.reshape(-1, WIDTH), labels.reshape(-1, WIDTH)
    else:
        s, lab = padded(scores, qptr, -np.inf), padded(labels, qptr, 0.0)
    d = _discount()
    top = np.argsort(s, axis=1)[:, : -K - 1 : -1]
    dcg = (np.exp2(np.take_along_axis(lab, top, axis=1)) - 1.0) @ d
    idcg = (np.exp2(np.sort(lab, axis=1)[:, : -K - 1 : -1]) - 1.0) @ d
    out = np.full(idcg.size, np.nan)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out


def torch_ndcg(scores, labels, qptr, fixed):
    """The same on padded tensors: ``torch.topk`` of the scores and of the labels."""
    import torch

    if fixed:
        s = torch.from_numpy(scores).view(-1, WIDTH)
        lab = torch.from_numpy(labels).view(-1, WIDTH)
    else:
        s = torch.from_numpy(padded(scores, qptr, -np.inf))
        lab = torch.from_numpy(padded(labels, qptr, 0.0))
    d = torch.from_numpy(_discount())
    top = torch.topk(s, K, dim=1).indices
    dcg = (torch.exp2(torch.gather(lab, 1, top)) - 1.0) @ d
    idcg = (torch.exp2(torch.topk(lab, K, dim=1).values) - 1.0) @ d
    return torch.where(idcg > 0, dcg / idcg, torch.nan).numpy()


# ------------------------------------------------------------------ per-query loop baseline


def _disc(n, k=None):
    d = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    if k is not None:
        d[k:] = 0.0
    return d


def _tie_exposure(key, k=None):
    """Exposure when sorted by key (descending) with tied items sharing their block mean."""
    n = key.size
    order = np.argsort(-key, kind="stable")
    d = _disc(n, k)
    _, inv = np.unique(-key[order], return_inverse=True)
    block_mean = np.bincount(inv, weights=d) / np.bincount(inv)
    out = np.empty(n)
    out[order] = block_mean[inv]
    return out


def loop_ndcg(scores, labels, qptr, groups, weight, k):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        gains = 2.0 ** labels[a:b] - 1.0
        if weight == "affected":
            gains = gains * groups[a:b]
        elif weight == "non_affected":
            gains = gains * (1.0 - groups[a:b])
        d = _disc(b - a, k)
        order = np.argsort(-scores[a:b], kind="stable")
        dcg = float(np.dot(gains[order], d))
        idcg = float(np.dot(np.sort(gains)[::-1], d))
        if idcg > 0:
            out[i] = dcg / idcg
    return out


def _rho(xa, xn, ya, yn):
    if xa + xn <= 0 or ya + yn <= 0:
        return np.nan
    num, den = xa * yn, ya * xn
    if max(num, den) == 0:
        return 1.0
    return min(num, den) / max(num, den)


def loop_rho_ranking(scores, rel, qptr, groups):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        e = _tie_exposure(scores[a:b])
        g = groups[a:b]
        out[i] = _rho(e @ g, e @ (1 - g), rel[a:b] @ g, rel[a:b] @ (1 - g))
    return out


def loop_rho_tabular(est, rel, qptr, groups):
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        g = groups[a:b]
        out[i] = _rho(est[a:b] @ g, est[a:b] @ (1 - g), rel[a:b] @ g, rel[a:b] @ (1 - g))
    return out


def loop_eel(model_key, rel, qptr, groups, thresholds, *, discretize_model):
    t = np.asarray(thresholds)
    out = np.full(qptr.size - 1, np.nan)
    for i in range(qptr.size - 1):
        a, b = qptr[i], qptr[i + 1]
        key = model_key[a:b]
        if discretize_model:
            key = np.searchsorted(t, key, side="right").astype(np.float64)
        model = _tie_exposure(key)
        target = _tie_exposure(np.searchsorted(t, rel[a:b], side="right").astype(np.float64))
        g = groups[a:b]
        diff = model - target
        out[i] = np.hypot(diff @ g, diff @ (1 - g))
    return out


# ------------------------------------------------------------------ timing


def _agree(name, ours, theirs, only=None) -> float:
    """The largest difference between ours and a peer (exits when it exceeds 1e-9)."""
    ok = ~np.isnan(ours) if only is None else only
    diff = float(np.max(np.abs(ours[ok] - theirs[ok]), initial=0.0))
    if not diff <= 1e-9:
        raise SystemExit(f"{name}: results differ from ours ({diff:.3g})")
    return diff


def ndcg_cases(s, lab, q, lengths, args):
    """NDCG@10 of every implementation, interleaved: ``{name: (seconds, values)}`` and the
    largest difference of every peer from ours."""
    import pytrec_eval
    import ranx
    from ranx.metrics import ndcg_burges

    nq = q.size - 1
    fixed = lengths == "fixed"
    ps, ids, qrels = ranx_inputs(s, lab, q)
    run = ranx_run(ps, ids)
    ndcg_burges(qrels, run, K)  # compile outside the timing
    ir_q, ir_r = ir_measures_inputs(s, lab, q)
    gains = {qid: {d: 2**v - 1 for d, v in row.items()} for qid, row in ir_q.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(gains, {f"ndcg_cut_{K}"})
    torch_ndcg(s, lab, q, fixed)  # torch's first call sets up its thread pool
    cases = {
        "ours": lambda: M.ndcg(s, lab, qptr=q, k=K, reduce=None),
        "padded numpy": lambda: numpy_ndcg(s, lab, q, fixed),
        "padded torch, 1 thread": one_torch_thread(lambda: torch_ndcg(s, lab, q, fixed)),
        f"padded torch, {torch_threads()} threads": lambda: torch_ndcg(s, lab, q, fixed),
        "ranx kernel (sorted rows)": lambda: ndcg_burges(qrels, run, K),
        # (per-query values with a single metric and return_mean=False raise a KeyError in
        # ranx 0.3.21: the mean is compared instead)
        "ranx evaluate": lambda: ranx.evaluate(qrels, ranx_run(ps, ids), f"ndcg_burges@{K}"),
        "ir-measures": lambda: ir_measures_ndcg(ir_q, ir_r, nq),
        "pytrec_eval": lambda: pytrec_eval_ndcg(evaluator, ir_r, nq),
        "loop": lambda: loop_ndcg(s, lab, q, None, "all", K),
    }
    cases["ours"]()  # warm: the first call of a process is timed apart (--first-call)
    out = interleaved(cases, args.rounds)
    has_rel = np.bincount(np.repeat(np.arange(nq), np.diff(q)), weights=lab, minlength=nq) > 0
    ours = out["ours"][1]
    diffs = {}
    for name, (_, values) in out.items():
        if name == "ranx evaluate":  # the mean, queries without a relevant item scoring 0
            mean = np.array([np.where(has_rel, ours, 0.0).mean()])
            diffs[name] = _agree(name, mean, np.array([values]))
        elif name in ("ir-measures", "pytrec_eval"):  # scores as float32: ties there
            diffs[name] = _agree(name, ours, values, has_rel & ~float32_ties(s, q))
        elif name != "ours":
            diffs[name] = _agree(name, ours, np.asarray(values, dtype=np.float64), has_rel)
    return out, diffs


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def float32_ties(scores, qptr):
    """Queries with two scores that are equal in float32."""
    rows = np.sort(padded(scores.astype(np.float32), qptr, -np.inf), axis=1)
    return ((rows[:, 1:] == rows[:, :-1]) & np.isfinite(rows[:, 1:])).any(axis=1)


def other_cases(s, lab, rel, biased, g, q, args):
    th = eel_thresholds(lab, 4)
    spec = EvalSpec(labels=lab, relevance=rel, groups=g, qptr=q, thresholds=th)
    kw = {"qptr": q, "groups": g}
    cases = {
        "ndcg@10 affected": (
            lambda: M.ndcg(s, lab, group="affected", k=K, **kw, reduce=None),
            lambda: loop_ndcg(s, lab, q, g, "affected", K),
        ),
        "ndcg@10 non_affected": (
            lambda: M.ndcg(s, lab, group="non_affected", k=K, **kw, reduce=None),
            lambda: loop_ndcg(s, lab, q, g, "non_affected", K),
        ),
        "rho_dtr ranking": (
            lambda: M.rho_dtr_ranking(s, rel, **kw, reduce=None),
            lambda: loop_rho_ranking(s, rel, q, g),
        ),
        "rho_dtr tabular": (
            lambda: M.rho_dtr_tabular(biased, rel, **kw, reduce=None),
            lambda: loop_rho_tabular(biased, rel, q, g),
        ),
        "delta_eel ranking": (
            lambda: M.delta_eel_ranking(s, rel, thresholds=th, **kw, reduce=None),
            lambda: loop_eel(s, rel, q, g, th, discretize_model=False),
        ),
        "delta_eel tabular": (
            lambda: M.delta_eel_tabular(biased, rel, thresholds=th, **kw, reduce=None),
            lambda: loop_eel(biased, rel, q, g, th, discretize_model=True),
        ),
    }
    out = {}
    for name, (ours, loop) in cases.items():
        out[name] = {
            "ours": median_time(ours, args.repeats),
            "loop": median_time(loop, args.slow_repeats),
        }
        _agree(name, out[name]["ours"][1], out[name]["loop"][1])

    def loop_default():
        return [loop_ndcg(s, lab, q, g, w, K) for w in ("all", "affected", "non_affected")] + [
            loop_rho_ranking(s, rel, q, g),
            loop_eel(s, rel, q, g, th, discretize_model=False),
        ]

    ours = median_time(lambda: compute_metrics(s, spec, regime="ltr"), args.repeats)
    loop = median_time(loop_default, args.slow_repeats)
    for (key, mine), theirs in zip(ours[1].items(), loop[1], strict=True):
        _agree(f"default set {key}", mine, theirs)
    out[f"default set ({len(DEFAULT_METRICS)} metrics)"] = {"ours": ours, "loop": loop}
    return out


def floors(s, q, repeats):
    rows = padded(s, q, -np.inf)
    return {
        "one per-row argsort": median_time(lambda: np.argsort(rows, axis=1), repeats)[0],
        "one per-row sort (values)": median_time(lambda: np.sort(rows, axis=1), repeats)[0],
        "one memory pass": median_time(lambda: float(s.sum()), repeats)[0],
    }


def run_scale(n_queries, lengths, args):
    s, lab, rel, biased, g, q = make_input(n_queries, lengths)
    n = int(q[-1])
    first = None
    if args.first_call and n_queries == min(args.queries):
        child = [__file__, "--_first-call", str(n_queries), lengths, "--rounds", str(args.rounds)]
        first = fresh_first_calls(child, args.first_call)
    ndcg, diffs = ndcg_cases(s, lab, q, lengths, args)
    table = {"ndcg@10": ndcg}
    if args.others:
        table.update(other_cases(s, lab, rel, biased, g, q, args))
    times = {m: {impl: t for impl, (t, _) in row.items()} for m, row in table.items()}
    row = times["ndcg@10"]
    peers = {k: v for k, v in row.items() if k != "ours"}
    best = min(peers, key=peers.__getitem__)
    return {
        "queries": n_queries,
        "lengths": lengths,
        "items": n,
        "times": times,
        "agreement": diffs,
        "floors": floors(s, q, args.rounds),
        "fastest peer": best,
        "ratio": peers[best] / row["ours"],
        "load": load(),
        "first call": first,
    }


def show(res) -> None:
    n = res["items"]
    print(f"\n{res['queries']} queries, {res['lengths']} lengths, {n} items (median ms, items/s)")
    for metric, row in res["times"].items():
        for impl, t in row.items():
            diff = res["agreement"].get(impl) if metric == "ndcg@10" else None
            agree = "" if diff is None else f"  max |diff| {diff:.1e}"
            print(f"{metric:<24}{impl:<28}{t * 1000:>10.1f} ms{n / t:>12.3g}/s{agree}")
    if res["first call"] is not None:
        print(first_call_line("ndcg@10 ours", res["first call"]))
    for name, t in res["floors"].items():
        print(f"floor: {name:<45}{t * 1000:>10.1f} ms{n / t:>12.3g}/s")
    print(
        f"ratio at {res['queries']} x {res['lengths']}: {res['ratio']:.2f} "
        f"(fastest peer: {res['fastest peer']}) load: {res['load']}"
    )


def plot(results, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fixed = [r for r in results if r["lengths"] == "fixed"]
    items = [r["items"] for r in fixed]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for impl in fixed[0]["times"]["ndcg@10"]:
        ys = [r["items"] / r["times"]["ndcg@10"][impl] for r in fixed]
        style = "--" if impl == "ranx kernel (sorted rows)" else "-"
        ax.plot(items, ys, style, marker="o", label=f"NDCG@10 {impl}")
    for name, style in (("one per-row sort (values)", "--"), ("one memory pass", ":")):
        ys = [r["items"] / r["floors"][name] for r in fixed]
        ax.plot(items, ys, style, color="grey", label=f"floor: {name}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"items (queries x {WIDTH})")
    ax.set_ylabel("items / s")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, nargs="+", default=[1000, 10000, 30000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5, help="(--others) our repeats")
    ap.add_argument("--slow-repeats", type=int, default=3, help="(--others) the loop's")
    ap.add_argument("--lengths", nargs="+", default=["fixed", "mslr"], choices=["fixed", "mslr"])
    ap.add_argument("--others", action="store_true", help="also the other metrics vs the loop")
    add_path_options(ap)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--_first-call", nargs=2, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    backend = set_backend(args.backend)
    if args._first_call:
        n_queries, lengths = int(args._first_call[0]), args._first_call[1]
        s, lab, _, _, _, q = make_input(n_queries, lengths)
        first_call_child(lambda: M.ndcg(s, lab, qptr=q, k=K, reduce=None), args.rounds)
        return
    print(f"load before: {load()}")
    print(
        f"ours: called as a user calls it ({backend}; the path picked per call by its size), "
        f"{cores()} core(s) for the process"
    )
    results = []
    for nq in args.queries:
        for lengths in args.lengths:
            results.append(run_scale(nq, lengths, args))
            show(results[-1])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.plot:
        plot(results, args.plot)
    worst = min(results, key=lambda r: r["ratio"])
    print(
        f"\nworst: {worst['queries']} x {worst['lengths']}, fastest peer {worst['fastest peer']} "
        f"({worst['times']['ndcg@10'][worst['fastest peer']] * 1000:.1f} ms), "
        f"ours {worst['times']['ndcg@10']['ours'] * 1000:.1f} ms, load {worst['load']}"
    )
    print(f"ratio: {worst['ratio']:.2f}")


if __name__ == "__main__":
    main()
