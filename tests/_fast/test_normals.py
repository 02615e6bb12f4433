"""``block_normals``: Box–Muller from raw SFC64 words, block by block, on any thread count."""

import math

import numpy as np
import pytest
from scipy import stats

import groupbias._fast.normals as normals
from groupbias._fast.normals import BLOCK_VALUES, block_normals

pytestmark = pytest.mark.reproducibility


def _expected_block(root, k, size):
    """An independent float64 Box–Muller of block ``k``'s words, value by value (the
    layout of the module docstring: per pass of m words, m cosines then m sines)."""
    bits = np.random.SFC64(np.random.SeedSequence(root, spawn_key=(k,)))
    out, chunk = [], 1 << 14
    while len(out) < size:
        m = min(chunk, (size - len(out) + 1) // 2)
        words = [int(w) for w in bits.random_raw(m)]
        u1 = [((w >> 40) + 1) * 2.0**-24 for w in words]
        u2 = [((w & 0xFFFFFFFF) >> 8) * 2.0**-24 for w in words]
        r = [math.sqrt(-2.0 * math.log(u)) for u in u1]
        cos = [ri * math.cos(2 * math.pi * a) for ri, a in zip(r, u2)]
        sin = [ri * math.sin(2 * math.pi * a) for ri, a in zip(r, u2)]
        out += cos + sin[: min(m, size - len(out) - m)]
    return np.array(out)


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (700, 45)])
def test_values_are_box_muller_of_each_blocks_words(shape):
    out = np.full(shape, np.nan, dtype=np.float32)
    block_normals(out, [11, 12])
    rows = max(1, BLOCK_VALUES // shape[1])
    for k, a in enumerate(range(0, shape[0], rows)):
        got = out[a : a + rows].ravel()
        want = _expected_block([11, 12], k, got.size)
        # float32 log / sin / cos and their products: a few float32 ulps of r (<= 5.77)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=4e-6)


def test_same_bits_on_one_thread_or_many(monkeypatch):
    shape = (3 * BLOCK_VALUES // 64 + 5, 64)  # four blocks, the last one short
    many = np.empty(shape, np.float32)
    monkeypatch.setattr(normals, "cores", lambda: 3)
    block_normals(many, [1])
    one = np.empty(shape, np.float32)
    monkeypatch.setattr(normals, "cores", lambda: 1)
    block_normals(one, [1])
    np.testing.assert_array_equal(many, one)
    other = np.empty(shape, np.float32)
    block_normals(other, [2])
    assert not np.array_equal(one, other)


def test_then_sees_every_row_once_after_its_block_is_drawn():
    out = np.zeros((2 * BLOCK_VALUES // 8 + 3, 8), np.float32)
    seen = np.zeros(out.shape[0], int)

    def then(rows):
        assert np.all(out[rows] != 0.0)  # drawn already
        seen[rows] += 1

    block_normals(out, [3], then=then)
    assert np.all(seen == 1)


def test_standard_normal_distribution():
    z = np.empty((500_000, 5), np.float32)
    block_normals(z, [4])
    x = z.ravel().astype(np.float64)
    assert stats.kstest(x, "norm").pvalue > 1e-3
    assert abs(x.mean()) < 5 / math.sqrt(x.size)
    assert abs(x.var() - 1) < 5 * math.sqrt(2 / x.size)
    assert abs(stats.kurtosis(x)) < 5 * math.sqrt(24 / x.size)
    assert np.abs(x).max() <= math.sqrt(-2 * math.log(2.0**-24)) + 1e-5
    # no correlation between neighbours, between the cosine and the sine of one word, or
    # between columns
    for a, b in [(x[:-1], x[1:]), (x[: 1 << 14], x[1 << 14 : 2 << 14]), (z[:, 0], z[:, 1])]:
        assert abs(np.corrcoef(a, b)[0, 1]) < 5 / math.sqrt(a.size)


def test_refuses_what_it_cannot_fill():
    with pytest.raises(ValueError, match="float32"):
        block_normals(np.empty((3, 3)), [1])
    with pytest.raises(ValueError, match="C-contiguous"):
        block_normals(np.empty((3, 4), np.float32)[:, :2], [1])
