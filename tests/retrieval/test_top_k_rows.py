"""``top_k_rows`` (the top k of every query of a batched search) against a brute-force
per-row sort, on random CSR matrices with many ties, empty rows and rows shorter than k."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from groupbias._fast import use_backend
from groupbias._fast.topk import product_top_k
from groupbias.retrieval.bm25 import BM25Index, top_k_rows


def _brute(m: sparse.csr_matrix, k: int | None):
    qptr, cols, vals = [0], [], []
    for r in range(m.shape[0]):
        a, b = m.indptr[r], m.indptr[r + 1]
        entries = sorted(zip(m.data[a:b].tolist(), m.indices[a:b].tolist()),
                         key=lambda e: (-e[0], e[1]))  # fmt: skip
        entries = entries if k is None else entries[:k]
        vals += [v for v, _ in entries]
        cols += [c for _, c in entries]
        qptr.append(len(cols))
    return np.array(qptr), np.array(cols, dtype=np.int64), np.array(vals)


def _random_csr(rng, n_rows, n_cols, levels, dtype=np.float64):
    sizes = rng.choice([0, 1, 3, 7, 20, 60, 200, n_cols], size=n_rows)
    rows, cols = [], []
    for r, s in enumerate(sizes):
        c = rng.choice(n_cols, size=min(s, n_cols), replace=False)
        rows += [r] * c.size
        cols += c.tolist()
    vals = rng.integers(0, levels, size=len(cols)).astype(dtype) / 4  # many exact ties
    vals[rng.random(vals.size) < 0.05] = -np.inf
    m = sparse.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_cols))
    return m


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [None, 1, 2, 5, 17, 100, 1000])
def test_top_k_rows_equals_a_per_row_sort(seed, k):
    rng = np.random.default_rng(seed)
    levels = [2, 5, 50, 10_000][seed % 4]
    dtype = np.float32 if seed == 5 else np.float64
    m = _random_csr(rng, int(rng.integers(1, 40)), 300, levels, dtype)
    qptr, cols, vals = top_k_rows(m, k)
    want = _brute(m, k)
    np.testing.assert_array_equal(qptr, want[0])
    np.testing.assert_array_equal(cols, want[1])
    np.testing.assert_array_equal(vals, want[2])
    assert qptr.dtype == cols.dtype == np.int64 and vals.dtype == dtype


def test_top_k_rows_of_integers_and_of_no_rows():
    rng = np.random.default_rng(7)
    m = _random_csr(rng, 25, 120, 3)
    ints = sparse.csr_matrix((np.floor(m.data * 4).clip(-9).astype(np.int64), m.indices,
                              m.indptr), shape=m.shape)  # fmt: skip
    for k in (None, 3, 50):
        got = top_k_rows(ints, k)
        for g, w in zip(got, _brute(ints, k), strict=True):
            np.testing.assert_array_equal(g, w)
    empty = sparse.csr_matrix((0, 5))
    qptr, cols, vals = top_k_rows(empty, 3)
    assert qptr.tolist() == [0] and cols.size == vals.size == 0


def test_search_keeps_the_brute_force_top_k_of_frequent_terms():
    rng = np.random.default_rng(3)
    words = np.array([f"w{i}" for i in range(30)])
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 12)))) for _ in range(400)]
    ix = BM25Index(texts)
    queries = ["w0 w1", "w2", "w3 w4 w5", "w29 w0"]
    run = ix.search(queries, k=50)
    dense = (ix.query_weights(queries) @ ix.weights).toarray()
    for i in range(len(queries)):
        hit = np.flatnonzero(dense[i] != 0)
        want = hit[np.lexsort((hit, -dense[i, hit]))][:50]
        got = run.docs[run.qptr[i] : run.qptr[i + 1]]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("k", [None, 1, 9, 40, 1000])
def test_both_paths_equal_a_per_row_sort(backend, k):
    rng = np.random.default_rng(11)
    for levels, dtype in ((3, np.float64), (40, np.float32), (100_000, np.float64)):
        m = _random_csr(rng, 60, 400, levels, dtype)
        with use_backend(backend):
            got = top_k_rows(m, k)
        for g, w in zip(got, _brute(m, k), strict=True):
            np.testing.assert_array_equal(g, w)
        assert got[1].dtype == np.int64 and got[2].dtype == dtype


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("k", [None, 1, 7, 60, 1000])
def test_product_top_k_equals_the_top_k_of_the_dense_product(backend, k):
    rng = np.random.default_rng(5)
    w = _random_csr(rng, 50, 3000, 4)  # [terms, docs], many tied weights
    w.data[~np.isfinite(w.data)] = 1.0
    # query weights: cancelling sums (dropped like scipy drops them), empty queries
    entries = (rng.integers(0, 20, 40), rng.integers(0, 50, 40))
    q = sparse.csr_matrix((rng.choice([-1.0, 0.5, 1.0, 2.0], size=40), entries), shape=(25, 50))
    with use_backend(backend):
        got = product_top_k(q, w, k)
    dense = q.toarray() @ w.toarray()
    want = _brute(sparse.csr_matrix(dense), k)  # the stored entries: nonzero sums
    for g, x in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, x)
