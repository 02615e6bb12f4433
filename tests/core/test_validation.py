"""Tests of groupbias.core.validation helpers that scan large arrays."""

from __future__ import annotations

import numpy as np

from groupbias.core.validation import all_integral
from groupbias.data.membership import utility_ratio


def test_all_integral_checks_every_block():
    a = np.arange(10, dtype=np.float64)
    assert all_integral(a, block=3)
    assert all_integral(np.array([]))
    for pos in (0, 2, 3, 9):  # first block, block end, next block start, last (short) block
        b = a.copy()
        b[pos] += 0.5
        assert not all_integral(b, block=3)
    b = a.copy()
    b[7] = np.nan
    assert not all_integral(b, block=3)


def test_utility_ratio_by_hand():
    rel = np.array([1.0, 0.5, 0.0, 0.25, 0.75])
    aff = np.array([True, False, True, False, False])
    # affected mean (1 + 0) / 2 = 0.5; non-affected (0.5 + 0.25 + 0.75) / 3 = 0.5
    assert utility_ratio(rel, aff) == 1.0
    assert utility_ratio(rel, ~aff) == 1.0
    assert np.isnan(utility_ratio(rel, np.zeros(5, bool)))
    assert utility_ratio(np.array([1.0, 0.0]), np.array([True, False])) == float("inf")
