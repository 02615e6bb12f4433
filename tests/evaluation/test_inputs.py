"""``check_both_groups``: which memberships a fairness metric refuses, against a brute force
over the queries."""

import numpy as np
import pytest

from groupbias.core.errors import ParameterError
from groupbias.evaluation.inputs import check_both_groups


def _brute(groups, qptr):
    """None if some query holds items of both groups whose memberships differ, else the
    words of the refusal."""
    seen_both = False
    for a, b in zip(qptr[:-1], qptr[1:]):
        g = groups[a:b]
        both = g.sum() > 0 and (1 - g).sum() > 0
        seen_both |= both
        if both and g.size and g.max() > g.min():
            return None
    return "equal within every query" if seen_both else "holds one group only|lists of one"


@pytest.mark.parametrize(
    "groups, qptr",
    [
        ([0, 0, 1, 1], [0, 2, 4]),  # differ only across the query boundary
        ([0, 1, 1, 1], [0, 1, 4]),  # the same, one-item first query
        ([0, 0, 1, 0], [0, 2, 4]),  # differ in the second query
        ([0.5, 0.5, 0.5, 0.5], [0, 2, 4]),  # equal fractional memberships
        ([0.5, 0.5, 0.2, 0.2], [0, 2, 4]),
        ([0.5, 0.5, 0.2, 0.3], [0, 2, 4]),
        ([1, 0], [0, 1, 2]),  # lists of one item
        ([0, 1, 0], [0, 0, 3, 3]),  # empty queries around
        ([1, 1, 1], [0, 3]),
    ],
)
def test_refusals_match_brute_force(groups, qptr):
    g, q = np.asarray(groups, float), np.asarray(qptr, np.int64)
    want = _brute(g, q)
    if want is None:
        check_both_groups(g, q)
    else:
        with pytest.raises(ParameterError, match=want):
            check_both_groups(g, q)


def test_random_memberships_match_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(300):
        sizes = rng.integers(0, 4, size=rng.integers(1, 5))
        q = np.concatenate([[0], np.cumsum(sizes)])
        g = rng.choice([0.0, 0.5, 1.0], size=int(q[-1]), p=[0.45, 0.1, 0.45])
        want = _brute(g, q)
        if want is None:
            check_both_groups(g, q)
        elif g.size:
            with pytest.raises(ParameterError, match=want):
                check_both_groups(g, q)
