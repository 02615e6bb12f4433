"""SVMlight parsing: scikit-learn's ``load_svmlight_file(path, query_id=True)`` against
``data_loaders.svmlight.parse_svmlight`` (fresh parse, no cache; one untimed warm-up, then
the median of ``--repeats`` runs, each listed) on generated files shaped
like MSLR-WEB30K (dense, 136 features, ~100 lines per query) and Yahoo! Set 1 (sparse,
100-200 of 700 features per line). Also reports the cache reload time and the time of a
half-size file (linear time: ~0.5).

scikit-learn runs once per file (about 10 s each at the default size). The result of a run
is released before the next one starts, so that every run allocates its output in the same
state of the process: holding the previous result (~0.5 GiB for the Yahoo!-shaped file) makes
the next run take memory the process never touched, and on a virtual machine whose host maps
guest memory lazily that first touch alone can cost more than the parse.

Usage: ``python benchmarks/svmlight_parse.py [--lines N] [--repeats R]``. The last line is
``ratio: <sum of sklearn times / sum of our median times>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from data_loaders.svmlight import load_svmlight, parse_svmlight  # noqa: E402


def _mslr_kind(j: int) -> str:
    """Value style of MSLR feature j (1-based): counts, 6-decimal scores, negatives."""
    if 16 <= j <= 20 or 71 <= j <= 80 or 101 <= j <= 105:
        return "pos6"
    if 46 <= j <= 65:
        return "frac6"
    if 106 <= j <= 120:
        return "neg6"
    if j in (11, 15, 122, 123, 125, 126):
        return "bigint"
    return "smallint"


def _vocab(rng, fid: int, kind: str, size: int = 256) -> np.ndarray:
    if kind == "pos6":
        vals = [f"{v:.6f}" for v in rng.gamma(2, 8, size)]
    elif kind == "frac6":
        vals = ["0" if rng.random() < 0.4 else f"{v:.6f}".rstrip("0") for v in rng.random(size)]
    elif kind == "neg6":
        vals = [f"{-v:.6f}" for v in rng.gamma(4, 5, size)]
    elif kind == "bigint":
        vals = [str(v) for v in rng.integers(0, 10 ** int(rng.integers(2, 8)), size)]
    elif kind == "yahoo":
        vals = [f"{v:.5f}".rstrip("0").rstrip(".") or "0" for v in rng.random(size)]
    else:
        vals = [str(v) for v in np.minimum(rng.geometric(0.5, size) - 1, 30)]
    return np.array([f"{fid}:{v}".encode() for v in vals], dtype=object)


def _write_lines(path: Path, heads: list[bytes], tokens: np.ndarray, counts: np.ndarray):
    ends = np.cumsum(counts)
    starts = ends - counts
    flat = tokens.tolist()
    with open(path, "wb") as fh:
        fh.write(
            b"".join(
                h + b" ".join(flat[s:e]) + b"\n"
                for h, s, e in zip(heads, starts.tolist(), ends.tolist())
            )
        )


def _heads(rng, n_lines: int, mean_query: int) -> list[bytes]:
    sizes = rng.integers(mean_query // 2, mean_query * 3 // 2, 2 * n_lines // mean_query + 2)
    qid = np.repeat(np.arange(1, sizes.size + 1), sizes)[:n_lines]
    labels = rng.integers(0, 5, n_lines)
    return [b"%d qid:%d " % (a, b) for a, b in zip(labels.tolist(), qid.tolist())]


def make_mslr(path: Path, n_lines: int, rng) -> Path:
    vocab = [_vocab(rng, j, _mslr_kind(j)) for j in range(1, 137)]
    idx = rng.integers(0, 256, (n_lines, 136))
    tokens = np.stack([vocab[j][idx[:, j]] for j in range(136)], axis=1).ravel()
    _write_lines(path, _heads(rng, n_lines, 100), tokens, np.full(n_lines, 136))
    return path


def make_yahoo(path: Path, n_lines: int, rng) -> Path:
    vocab = np.stack([_vocab(rng, j, "yahoo") for j in range(1, 701)])  # [700, 256]
    present = rng.random((n_lines, 700)) < rng.uniform(0.14, 0.29, (n_lines, 1))
    rows, cols = np.nonzero(present)  # row-major: ids ascending per line
    tokens = vocab[cols, rng.integers(0, 256, cols.size)]
    _write_lines(path, _heads(rng, n_lines, 24), tokens, present.sum(axis=1))
    return path


def _time(fn, repeats: int, log: list | None = None) -> tuple[float, object]:
    """Median time of ``repeats`` calls and the last result (earlier results are released
    before the next call)."""
    times, out = [], None
    for _ in range(repeats):
        out = None
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    if log is not None:
        log.extend(times)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from sklearn.datasets import load_svmlight_file

    rng = np.random.default_rng(0)
    sk_total = ours_total = 0.0
    with tempfile.TemporaryDirectory(prefix="svmlight-bench-") as tmp:
        tmp = Path(tmp)
        for name, make, nf in (("mslr", make_mslr, 136), ("yahoo", make_yahoo, 700)):
            path = make(tmp / f"{name}.txt", args.lines, rng)
            size_mb = path.stat().st_size / 2**20
            t_sk, (X, y, q) = _time(
                lambda: load_svmlight_file(
                    str(path), query_id=True, n_features=nf, zero_based=False
                ),
                1,
            )
            parse_svmlight(path, n_features=nf)  # warm-up (memory of the process)
            runs: list = []
            t_ours, data = _time(lambda: parse_svmlight(path, n_features=nf), args.repeats, runs)
            t_two, _ = _time(
                lambda: parse_svmlight(path, n_features=nf, workers=2), max(1, args.repeats // 2)
            )
            # same values as scikit-learn
            k = min(5000, data.n_items)
            assert np.array_equal(X[:k].toarray().astype(np.float32), data.features[:k])
            assert np.array_equal(y, data.labels)
            assert np.array_equal(np.unique(q), np.unique(data.query_ids))
            del X, y, q
            # linear time: the first half of the lines
            half = tmp / f"{name}-half.txt"
            with open(path, "rb") as src, open(half, "wb") as dst:
                for i, line in enumerate(src):
                    if i >= args.lines // 2:
                        break
                    dst.write(line)
            t_half, _ = _time(lambda: parse_svmlight(half, n_features=nf), args.repeats)
            # cache: first call parses and stores, later calls map the stored arrays
            cdir = tmp / "cache"
            t_store, _ = _time(lambda: load_svmlight(path, n_features=nf, cache_dir=cdir), 1)
            t_reload, hit = _time(
                lambda: load_svmlight(path, n_features=nf, cache_dir=cdir), args.repeats
            )
            assert hit.meta["cache"] == "hit"
            t_touch, _ = _time(lambda: float(np.asarray(hit.features).sum()), 1)
            print(
                f"{name}: {args.lines} lines, {size_mb:.0f} MiB, "
                f"{data.n_queries} queries, features {data.features.shape}"
            )
            print(f"  sklearn load_svmlight_file     {t_sk:8.3f} s   (1 run)")
            print(
                f"  parse_svmlight                 {t_ours:8.3f} s   "
                f"x{t_sk / t_ours:.1f}  ({size_mb / t_ours:.0f} MiB/s; median of runs "
                + ", ".join(f"{t:.3f}" for t in runs)
                + f"; x{t_sk / max(runs):.1f} "
                "for the slowest)"
            )
            print(f"  parse_svmlight (workers=2)     {t_two:8.3f} s   x{t_sk / t_two:.1f}")
            print(
                f"  half-size file                 {t_half:8.3f} s   "
                f"half/full = {t_half / t_ours:.2f} (linear: 0.50)"
            )
            print(
                f"  cache: parse+store {t_store:.3f} s, reload {t_reload * 1e3:.1f} ms, "
                f"first full read of the mapped features {t_touch:.3f} s"
            )
            sk_total += t_sk
            ours_total += t_ours
            os.remove(half)
    print(f"overall: sklearn {sk_total:.3f} s, ours {ours_total:.3f} s")
    print(f"ratio: {sk_total / ours_total:.2f}")


if __name__ == "__main__":
    main()
