"""SVMlight parsing: ``data_loaders.svmlight.parse_svmlight`` against the faster of polars and
pyarrow on a dense file, with scikit-learn's ``load_svmlight_file`` as a reference line.

Input: generated files shaped like MSLR-WEB30K (dense: every line lists features 1..136 in
order, ~100 lines per query) and like Yahoo! Set 1 (sparse, 100-200 of 700 features per
line), ``--lines`` lines each.

Dense file, timed interleaved (``--rounds`` rounds, medians, the load printed):

* ours: ``parse_svmlight(path, n_features=136, workers=<the cores this process may use>)``
  (fresh parse, no cache; the compiled loop of ``groupbias._fast.svmlight_loops`` where numba is
  installed, loaded before the timing) and the same with ``workers=1``;
* polars: ``read_csv`` with a space separator and every column as text, then each feature
  column sliced past its ``<id>:`` prefix and cast to float64 then float32 (the rounding of
  ``float(token)`` then float32, as ours), the label to float64 and ``qid:`` to int64
  (polars's threads: all cores);
* pyarrow: ``pyarrow.csv.read_csv`` the same way (``utf8_slice_codeunits`` and casts);
* floor: reading the file's bytes (page cache).

Both peers must give ours's features, labels and query ids exactly (the largest difference
is printed). scikit-learn runs once per file (about 10 s each at the default size): a
reference line, as are the sparse file's figures, the half-size file (linear time: ~0.5)
and the cache reload. The last line is ``ratio: <faster peer's median / our median>``
(dense file, ours on all cores).

Usage: ``python benchmarks/svmlight_parse.py [--lines N] [--rounds R]``.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved, load  # noqa: E402

from data_loaders.svmlight import load_svmlight, parse_loop, parse_svmlight  # noqa: E402
from groupbias._fast.svmlight import LOOPS_MIN_BYTES  # noqa: E402


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


def polars_dense(path: Path, nf: int):
    """(features float32 [rows, nf], labels, qids) of a dense file by polars."""
    import polars as pl

    df = pl.read_csv(path, separator=" ", has_header=False, infer_schema=False)
    cols = df.columns
    feats = [
        pl.col(c).str.slice(len(f"{j}:")).cast(pl.Float64).cast(pl.Float32)
        for j, c in enumerate(cols[2 : 2 + nf], 1)
    ]
    X = df.select(feats).to_numpy()
    y = df[cols[0]].cast(pl.Float64).to_numpy()
    q = df[cols[1]].str.slice(4).cast(pl.Int64).to_numpy()
    return X, y, q


def pyarrow_dense(path: Path, nf: int):
    """The same by pyarrow's CSV reader and compute functions."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    names = [f"c{i}" for i in range(nf + 2)]
    table = csv.read_csv(
        path,
        read_options=csv.ReadOptions(column_names=names),
        parse_options=csv.ParseOptions(delimiter=" "),
        convert_options=csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string())),
    )
    cols = [
        pc.cast(pc.cast(pc.utf8_slice_codeunits(table[f"c{j + 1}"], len(f"{j}:")), pa.float64()),
                pa.float32())
        for j in range(1, nf + 1)
    ]  # fmt: skip
    X = np.column_stack([c.to_numpy() for c in cols])
    y = pc.cast(table["c0"], pa.float64()).to_numpy()
    q = pc.cast(pc.utf8_slice_codeunits(table["c1"], 4), pa.int64()).to_numpy()
    return X, y, q


def dense_peers(path: Path, nf: int, rounds: int, size_mb: float) -> float:
    """Ours, polars, pyarrow and the raw read, interleaved: prints them, returns the ratio."""
    from groupbias._fast.threads import cores as n_cores

    cores = n_cores()
    loop = parse_loop(LOOPS_MIN_BYTES)
    print(f"  ours: {'compiled loop (numba)' if loop else 'line-by-line parser'}, workers={cores}")
    cases = {
        "ours": lambda: parse_svmlight(path, n_features=nf, workers=cores),
        "ours, workers=1": lambda: parse_svmlight(path, n_features=nf),
        "polars": lambda: polars_dense(path, nf),
        "pyarrow": lambda: pyarrow_dense(path, nf),
        "floor: read the bytes": lambda: path.read_bytes(),
    }
    for fn in cases.values():  # untimed warm-up (imports, the loop, first allocations)
        fn()
    out = interleaved(cases, rounds)
    mine = out["ours"][1]
    for name, (t, res) in out.items():
        note = ""
        if name in ("polars", "pyarrow"):
            X, y, q = res
            diff = float(np.max(np.abs(X.astype(np.float64) - mine.features), initial=0.0))
            rows_q = np.repeat(mine.query_ids, np.diff(mine.qptr))
            same = np.array_equal(y, mine.labels) and np.array_equal(q, rows_q)
            if diff != 0.0 or not same:
                raise SystemExit(f"{name}: values differ from ours ({diff:.3g})")
            note = f"   max |diff| {diff:.1e}"
        print(f"  {name:<24}{t:8.3f} s  {size_mb / t:7.0f} MiB/s{note}")
    best = min(("polars", "pyarrow"), key=lambda k: out[k][0])
    ratio = out[best][0] / out["ours"][0]
    print(f"ratio against {best} (dense file): {ratio:.2f}  load: {load()}")
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3, help="reference lines: our repeats")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    from sklearn.datasets import load_svmlight_file

    rng = np.random.default_rng(0)
    ratio = None
    print(f"load before: {load()}")
    with tempfile.TemporaryDirectory(prefix="svmlight-bench-") as tmp:
        tmp = Path(tmp)
        for name, make, nf in (("mslr", make_mslr, 136), ("yahoo", make_yahoo, 700)):
            path = make(tmp / f"{name}.txt", args.lines, rng)
            size_mb = path.stat().st_size / 2**20
            print(f"{name}: {args.lines} lines, {size_mb:.0f} MiB")
            if name == "mslr":
                ratio = dense_peers(path, nf, args.rounds, size_mb)
            t_sk, (X, y, q) = _time(
                lambda: load_svmlight_file(
                    str(path), query_id=True, n_features=nf, zero_based=False
                ),
                1,
            )
            t_ours, data = _time(lambda: parse_svmlight(path, n_features=nf), args.repeats)
            k = min(5000, data.n_items)  # same values as scikit-learn
            assert np.array_equal(X[:k].toarray().astype(np.float32), data.features[:k])
            assert np.array_equal(y, data.labels)
            del X, y, q
            half = tmp / f"{name}-half.txt"
            with open(path, "rb") as src, open(half, "wb") as dst:
                for i, line in enumerate(src):
                    if i >= args.lines // 2:
                        break
                    dst.write(line)
            t_half, _ = _time(lambda: parse_svmlight(half, n_features=nf), args.repeats)
            cdir = tmp / "cache"
            t_store, _ = _time(lambda: load_svmlight(path, n_features=nf, cache_dir=cdir), 1)
            t_reload, hit = _time(
                lambda: load_svmlight(path, n_features=nf, cache_dir=cdir), args.repeats
            )
            assert hit.meta["cache"] == "hit"
            print(
                f"  reference: sklearn load_svmlight_file {t_sk:.3f} s (1 run), ours "
                f"(workers=1) {t_ours:.3f} s ({size_mb / t_ours:.0f} MiB/s): x{t_sk / t_ours:.1f}"
            )
            print(
                f"  half-size file {t_half:.3f} s (half/full = {t_half / t_ours:.2f}, linear: "
                f"0.50); cache: parse+store {t_store:.3f} s, reload {t_reload * 1e3:.1f} ms"
            )
            os.remove(half)
    print(f"ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
