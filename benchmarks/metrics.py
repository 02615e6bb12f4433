"""Benchmark: NDCG@10 and the paper's metrics, ours vs peers, at two scales.

Inputs: 1,000 and 30,000 queries (MSLR-WEB30K has ~30k queries of ~120 items), each with
lists of 120 items and with MSLR-like lengths (uniform in 1..239, mean 120); labels 0-4
with MSLR's distribution, random scores (no ties), 30 % of the items affected.

NDCG@10 (exp2 gain) from the same flat arrays (scores, labels, qptr), by:

* ``ours``: ``groupbias.evaluation.metrics.ndcg`` (reduce=None) (validation included);
* ``ranx kernel``: ranx's numba kernel (``ranx.metrics.ndcg_burges``, parallel over all
  cores) on rows sorted by numpy: the time is the per-row ``argsort`` of the padded
  ``[queries, width]`` scores, packing the sorted ``(doc, score)`` rows and the kernel; the
  qrels (label-sorted rows, fixed ground truth) are prepared once, outside the timing;
* ``ranx evaluate``: ``ranx.evaluate`` on the same sorted arrays (its public entry point);
* ``ir-measures``: ``ir_measures.iter_calc`` (pytrec_eval) on qrels/run dicts built
  outside the timing;
* ``loop``: a per-query numpy loop (argsort + dot per query).

Every implementation must give our values (1e-9) on the queries with a relevant item. The
other metrics (NDCG@10 per group, ρ(DTR) and Δ(EEL) of a ranking and of tabular
estimates, and the whole default set through ``compute_metrics`` (LTR regime), one
ranking shared) are
ours vs the loop. The physical floor is measured in the same run: one per-row ``argsort``
of the padded scores, and one memory pass over them (a sum).

Prints items/s for every metric and implementation, and as its last line
``ratio: <fastest peer time for NDCG@10 at 30k x 120 / ours>``. Timings are medians of
``--repeats`` runs (``--slow-repeats`` for ir-measures and the loop). ``--json PATH``
writes every timing; ``--plot PATH`` draws NDCG@10 throughput against size.

    .venv/bin/python benchmarks/metrics.py [--queries 1000 30000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import median_time  # noqa: E402

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


def _agree(name, ours, theirs, only=None):
    ok = ~np.isnan(ours) if only is None else only
    if not np.allclose(ours[ok], theirs[ok], rtol=0, atol=1e-9):
        raise SystemExit(f"{name}: results differ from ours")


def ndcg_cases(s, lab, q, args):
    """NDCG@10 of every implementation: ``{name: (seconds, values)}`` (+ the kernel alone)."""
    import ranx
    from ranx.metrics import ndcg_burges

    nq = q.size - 1
    fast, slow = args.repeats, args.slow_repeats
    out = {"ours": median_time(lambda: M.ndcg(s, lab, qptr=q, k=K, reduce=None), fast)}
    ps, ids, qrels = ranx_inputs(s, lab, q)
    run = ranx_run(ps, ids)
    ndcg_burges(qrels, run, K)  # compile outside the timing
    out["ranx kernel"] = median_time(lambda: ndcg_burges(qrels, ranx_run(ps, ids), K), fast)
    out["ranx kernel (sorted input given)"] = median_time(lambda: ndcg_burges(qrels, run, K), fast)

    # (per-query values with a single metric and return_mean=False raise a KeyError in
    # ranx 0.3.21: the mean is compared instead)
    out["ranx evaluate"] = median_time(
        lambda: ranx.evaluate(qrels, ranx_run(ps, ids), "ndcg_burges@10"), fast
    )
    ir_q, ir_r = ir_measures_inputs(s, lab, q)
    out["ir-measures"] = median_time(lambda: ir_measures_ndcg(ir_q, ir_r, nq), slow)
    out["loop"] = median_time(lambda: loop_ndcg(s, lab, q, None, "all", K), slow)
    has_rel = np.bincount(np.repeat(np.arange(nq), np.diff(q)), weights=lab, minlength=nq) > 0
    ours = out["ours"][1]
    for name, (_, values) in out.items():
        if name == "ranx evaluate":  # the mean, queries without a relevant item scoring 0
            _agree(name, np.array([np.where(has_rel, ours, 0.0).mean()]), np.array([values]))
        elif name == "ir-measures":  # pytrec_eval keeps scores as float32: ties there
            _agree(f"ndcg@10 {name}", ours, values, has_rel & ~float32_ties(s, q))
        else:
            _agree(f"ndcg@10 {name}", ours, values, has_rel)
    return out


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
        "one memory pass": median_time(lambda: float(s.sum()), repeats)[0],
    }


def run_scale(n_queries, lengths, args):
    s, lab, rel, biased, g, q = make_input(n_queries, lengths)
    n = int(q[-1])
    table = {"ndcg@10": ndcg_cases(s, lab, q, args)}
    table.update(other_cases(s, lab, rel, biased, g, q, args))
    times = {m: {impl: t for impl, (t, _) in row.items()} for m, row in table.items()}
    return {
        "queries": n_queries,
        "lengths": lengths,
        "items": n,
        "times": times,
        "floors": floors(s, q, args.repeats),
    }


def show(res) -> None:
    n = res["items"]
    print(f"\n{res['queries']} queries, {res['lengths']} lengths, {n} items (items/s, median)")
    impls = list(res["times"]["ndcg@10"])
    print(f"{'metric':<30}" + "".join(f"{i[:16]:>18}" for i in impls))
    for metric, row in res["times"].items():
        cells = "".join(f"{n / row[i]:>18.3g}" if i in row else f"{'':>18}" for i in impls)
        print(f"{metric:<30}{cells}")
    for name, t in res["floors"].items():
        print(f"floor: {name:<23}{n / t:>18.3g}  ({t * 1000:.1f} ms)")


def plot(results, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fixed = [r for r in results if r["lengths"] == "fixed"]
    items = [r["items"] for r in fixed]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for impl in fixed[0]["times"]["ndcg@10"]:
        ys = [r["items"] / r["times"]["ndcg@10"][impl] for r in fixed]
        style = "--" if impl == "ranx kernel (sorted input given)" else "-"
        ax.plot(items, ys, style, marker="o", label=f"NDCG@10 {impl}")
    for name, style in (("one per-row argsort", "--"), ("one memory pass", ":")):
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
    ap.add_argument("--queries", type=int, nargs="+", default=[1000, 30000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--slow-repeats", type=int, default=3)
    ap.add_argument("--lengths", nargs="+", default=["fixed", "mslr"], choices=["fixed", "mslr"])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None)
    args = ap.parse_args(argv)
    results = []
    for nq in args.queries:
        for lengths in args.lengths:
            results.append(run_scale(nq, lengths, args))
            show(results[-1])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.plot:
        plot(results, args.plot)
    fixed = [r for r in results if r["lengths"] == "fixed"] or results
    top = max(fixed, key=lambda r: r["queries"])
    row = top["times"]["ndcg@10"]
    peers = {k: v for k, v in row.items() if k not in ("ours", "ranx kernel (sorted input given)")}
    best = min(peers, key=peers.__getitem__)
    print(f"\nfastest peer at {top['queries']} x {WIDTH}: {best} ({peers[best] * 1000:.1f} ms)")
    print(f"ours: {row['ours'] * 1000:.1f} ms")
    print(f"ratio: {peers[best] / row['ours']:.2f}")


if __name__ == "__main__":
    main()
