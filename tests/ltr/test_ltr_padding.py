"""Flat <-> padded conversion and per-query z-score normalization."""

import numpy as np
import pytest
import torch

from groupbias._fast import use_backend
from groupbias.core.errors import ParameterError
from groupbias.ltr.normalization import zscore_within_queries
from groupbias.ltr.padding import from_padded, pad_segments, to_padded


def _flat(rng, sizes, f=3):
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    x = rng.normal(size=(int(qptr[-1]), f)).astype(np.float32)
    y = rng.integers(0, 5, size=int(qptr[-1])).astype(np.float64)
    return x, y, qptr


def test_round_trip_all_queries(rng):
    x, y, qptr = _flat(rng, [3, 0, 5, 1, 2])
    pb = to_padded(x, y, qptr)
    assert pb.features.shape == (5, 5, 3)
    assert pb.mask.sum().item() == x.shape[0]
    assert pb.mask.sum(1).tolist() == [3, 0, 5, 1, 2]
    np.testing.assert_array_equal(from_padded(pb.features, pb.mask).numpy(), x)
    np.testing.assert_array_equal(from_padded(pb.labels, pb.mask).numpy(), y.astype(np.float32))
    np.testing.assert_array_equal(pb.items.numpy(), np.arange(x.shape[0]))
    # padding carries zeros, no sentinel
    assert torch.all(pb.features[~pb.mask] == 0) and torch.all(pb.labels[~pb.mask] == 0)
    # positions restart at 0 in every query
    np.testing.assert_array_equal(
        from_padded(pb.positions, pb.mask).numpy(), [0, 1, 2, 0, 1, 2, 3, 4, 0, 0, 1]
    )


def test_subset_of_queries_in_given_order(rng):
    x, y, qptr = _flat(rng, [3, 4, 2])
    pb = to_padded(x, y, qptr, queries=np.array([2, 0]), list_size=6)
    assert pb.features.shape == (2, 6, 3)
    expected_items = [7, 8, 0, 1, 2]  # query 2 = items 7..8, query 0 = items 0..2
    np.testing.assert_array_equal(pb.items.numpy(), expected_items)
    np.testing.assert_array_equal(
        from_padded(pb.features.numpy(), pb.mask.numpy()), x[expected_items]
    )
    # row 0 (query 2) has 2 real slots
    assert pb.mask[0].tolist() == [True, True, False, False, False, False]


def test_pad_segments_with_sampled_items(rng):
    x, y, qptr = _flat(rng, [4, 3])
    items = np.array([1, 3, 4, 6])  # 2 items of query 0, 2 of query 1
    pb = pad_segments(x, y, items, np.array([2, 2]), qptr[:-1])
    np.testing.assert_array_equal(from_padded(pb.features, pb.mask).numpy(), x[items])
    # positions are the items' positions in their query segment
    assert pb.positions[pb.mask].tolist() == [1, 3, 0, 2]


def test_from_padded_keeps_gradients():
    v = torch.arange(6.0).reshape(2, 3).requires_grad_()
    m = torch.tensor([[True, True, False], [True, False, False]])
    from_padded(v, m).sum().backward()
    assert v.grad.tolist() == [[1, 1, 0], [1, 0, 0]]


def test_padding_errors(rng):
    x, y, qptr = _flat(rng, [3, 4])
    with pytest.raises(ParameterError, match="list_size"):
        to_padded(x, y, qptr, list_size=3)
    with pytest.raises(ParameterError, match="qptr"):
        to_padded(x, y, np.array([0, 3, 6]))
    with pytest.raises(ParameterError, match="queries"):
        to_padded(x, y, qptr, queries=np.array([2]))
    with pytest.raises(ParameterError, match="labels"):
        to_padded(x, y[:-1], qptr)
    with pytest.raises(ParameterError, match="sizes"):
        pad_segments(x, y, np.arange(3), np.array([2, 2]))


@pytest.mark.parametrize("path", ["numpy", "numba"])
def test_zscore_matches_per_query_formula(rng, path):
    x, _, qptr = _flat(rng, [4, 1, 0, 6], f=4)
    x[4:, 2] = 7.5  # constant within the single-item and the last query
    x[qptr[3] :, 3] = -1.0  # constant within the last query
    with use_backend(path):
        z = zscore_within_queries(x, qptr=qptr)
    assert z.dtype == np.float32 and z.shape == x.shape
    for i in range(4):  # independent per-query reference
        seg = x[qptr[i] : qptr[i + 1]].astype(np.float64)
        if not len(seg):
            continue
        sd = seg.std(axis=0)
        ref = np.where(
            seg.max(0) == seg.min(0), 0.0, (seg - seg.mean(0)) / np.where(sd > 0, sd, 1.0)
        )
        np.testing.assert_allclose(z[qptr[i] : qptr[i + 1]], ref, atol=1e-6)
    assert np.all(z[4] == 0)  # single-item query: all features constant
    assert np.all(z[qptr[3] :, 2:] == 0)
    # within each query: mean 0, std 1 for the varying features
    seg = z[:4, :2].astype(np.float64)
    np.testing.assert_allclose(seg.mean(0), 0, atol=1e-6)
    np.testing.assert_allclose(seg.std(0), 1, atol=1e-6)


@pytest.mark.parametrize("path", ["numpy", "numba"])
def test_zscore_does_not_mutate_and_rejects_nan(rng, path):
    x, _, qptr = _flat(rng, [3, 3])
    x0 = x.copy()
    with use_backend(path):
        zscore_within_queries(x, qptr=qptr)
        np.testing.assert_array_equal(x, x0)
        for bad in (np.nan, np.inf):
            x[4, 1] = bad  # in the second query
            with pytest.raises(ParameterError, match="features"):
                zscore_within_queries(x, qptr=qptr)
