"""CounterfactualLambdaLoss against a brute-force double loop of its formula."""

from __future__ import annotations

import math

import pytest
import torch

from groupbias.core.errors import ParameterError
from groupbias.ltr.losses import CounterfactualLambdaLoss


def _brute(scores, labels, n, *, k=None, sigma=1.0):
    """The docstring formula for one list of ``n`` real items, by plain loops."""
    s, y = list(scores[:n]), list(labels[:n])
    order = sorted(range(n), key=lambda i: (-s[i], i))
    rank = {i: r + 1 for r, i in enumerate(order)}

    def disc(r):
        return 0.0 if (k is not None and r > k) else 1.0 / math.log2(1 + r)

    ideal = sorted(y, reverse=True)
    z = sum(g * disc(r + 1) for r, g in enumerate(ideal))
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i == j or y[i] <= 0:
                continue
            pl = math.log2(1 + math.exp(-sigma * (s[i] - s[j])))
            total += y[i] * abs(disc(rank[i]) - disc(rank[j])) * pl
    return total / z


@pytest.mark.parametrize("k", [None, 2])
def test_matches_the_formula_by_brute_force(k):
    scores = torch.tensor([[0.3, 1.2, -0.5, 0.9, 7.0], [2.0, -1.0, 0.5, 0.0, 0.0]])
    labels = torch.tensor([[0.0, 1.7, 0.4, 2.5, 9.0], [0.0, 0.0, 3.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, True, False], [True, True, True, False, False]])
    loss = CounterfactualLambdaLoss(k=k, sigma=1.3, reduction="none")
    got = loss(scores, labels, mask)
    want = [
        _brute(scores[0].tolist(), labels[0].tolist(), 4, k=k, sigma=1.3),
        _brute(scores[1].tolist(), labels[1].tolist(), 3, k=k, sigma=1.3),
    ]
    assert torch.allclose(got, torch.tensor(want), rtol=1e-5)
    mean = CounterfactualLambdaLoss(k=k, sigma=1.3)(scores, labels, mask)
    assert math.isclose(float(mean), sum(want) / 2, rel_tol=1e-5)


def test_padding_is_never_read_and_the_gradient_lifts_clicked_items():
    scores = torch.tensor([[0.0, 0.5, float("nan")]], requires_grad=True)
    labels = torch.tensor([[2.0, 0.0, 5.0]])
    mask = torch.tensor([[True, True, False]])
    loss = CounterfactualLambdaLoss()(scores, labels, mask)
    loss.backward()
    assert torch.isfinite(loss)
    assert scores.grad[0, 0] < 0 < scores.grad[0, 1]  # descent raises the labeled item
    assert scores.grad[0, 2] == 0


def test_lists_without_positive_labels_add_nothing():
    loss = CounterfactualLambdaLoss()
    s = torch.tensor([[0.1, 0.2], [0.3, 0.1]])
    y = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    m = torch.ones(2, 2, dtype=torch.bool)
    per = loss.__class__(reduction="none")(s, y, m)
    assert per[0] == 0
    assert math.isclose(float(loss(s, y, m)), float(per[1]), rel_tol=1e-6)


@pytest.mark.parametrize(("key", "value"), [("sigma", 0.0), ("k", 0), ("reduction", "avg")])
def test_bad_settings_are_refused_by_name(key, value):
    with pytest.raises(ParameterError) as e:
        CounterfactualLambdaLoss(**{key: value})
    assert e.value.name == key
