import numpy as np
import pytest

from groupbias.core import segments
from groupbias.core.errors import DataError
from groupbias.data.ranking_data import RankingData


def _toy():
    feats = np.arange(12, dtype=np.float64).reshape(6, 2)
    return RankingData(
        features=feats,
        labels=[2, 0, 1, 0, 3, 1],
        qptr=[0, 3, 3, 6],
        query_ids=np.array(["a", "b", "c"]),
        groups=[1, 0, 0, 1, 0.5, 0],
    )


def test_query_view_is_zero_copy():
    d = _toy()
    assert d.features.dtype == np.float32
    v = d.query(2)
    assert v.query_id == "c"
    assert np.shares_memory(v.features, d.features)
    assert v.labels.tolist() == [0, 3, 1]
    assert d.query(1).features.shape == (0, 2)
    assert d.query(-1).query_id == "c"
    with pytest.raises(IndexError):
        d.query(3)


def test_subset_and_query_index():
    d = _toy()
    s = d.subset(np.array([2, 0]))
    assert s.qptr.tolist() == [0, 3, 6]
    assert s.labels.tolist() == [0, 3, 1, 2, 0, 1]
    assert s.groups.tolist() == [1, 0.5, 0, 1, 0, 0]
    assert d.query_index().tolist() == [0, 0, 0, 2, 2, 2]


@pytest.mark.parametrize(
    "labels, label_max, spacing",
    [
        ([2, 0, 1, 0, 3, 1], None, 1 / 3),  # grades 0..3: the largest label is the top
        ([2, 0, 1, 0, 3, 1], 4.0, 0.25),  # the declared scale wins over the largest label
        ([1, 0, 0, 1, 0, 1], None, 1.0),  # binary
        ([0.5, 0, 1, 0, 0.2, 1], None, None),  # continuous
        ([0, 0, 0, 0, 0, 0], None, None),  # no positive grade: no scale
    ],
)
def test_grade_spacing(labels, label_max, spacing):
    d = RankingData(
        features=np.zeros((6, 1)),
        labels=labels,
        qptr=[0, 3, 6],
        query_ids=["a", "b"],
        label_max=label_max,
    )
    assert d.grade_spacing == spacing
    empty = RankingData(features=np.zeros((0, 1)), labels=[], qptr=[0], query_ids=[])
    assert empty.grade_spacing is None


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"qptr": [0, 2, 7]}, "qptr"),
        ({"labels": [1, 2]}, "labels"),
        ({"groups": [0, 1, 2, 0, 0, 0]}, "groups"),
        ({"query_ids": ["a"]}, "query_ids"),
    ],
)
def test_bad_shapes_raise(kw, msg):
    base = dict(features=np.zeros((6, 2)), labels=np.zeros(6), qptr=[0, 3, 6], query_ids=["a", "b"])
    base.update(kw)
    with pytest.raises(DataError, match=msg):
        RankingData(**base)


def test_segment_primitives_against_loop(rng):
    sizes = rng.integers(0, 7, size=50)
    qptr = np.concatenate([[0], np.cumsum(sizes)])
    x = rng.integers(0, 4, size=qptr[-1]).astype(float)  # many ties
    tb = rng.random(qptr[-1])
    ranks = segments.ranks_within(x, qptr, tiebreak=tb)
    sums = segments.segment_sum(x, qptr)
    mx = segments.segment_max(x, qptr)
    for i in range(sizes.size):
        s, e = qptr[i], qptr[i + 1]
        order = sorted(range(s, e), key=lambda j: (-x[j], tb[j]))
        expect = np.empty(e - s, int)
        expect[np.array(order, int) - s] = np.arange(1, e - s + 1)
        assert ranks[s:e].tolist() == expect.tolist()
        assert sums[i] == x[s:e].sum()
        assert mx[i] == (x[s:e].max() if e > s else -np.inf)
