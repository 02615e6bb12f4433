"""LambdaLoss family and padded NDCG: hand-computed values, brute force, allRank, masking."""

import importlib.util
import math
import sys
import types

import numpy as np
import pytest
import torch

from groupbias.core.errors import ParameterError
from groupbias.ltr.losses import lambda_loss, list_gains, padded_ndcg

LOG2_3 = math.log2(3)


def sp2(x):
    """log2(1 + exp(-x)): the pair loss at score difference x (sigma 1)."""
    return math.log2(1 + math.exp(-x))


def t(rows, dtype=torch.float64):
    return torch.tensor(rows, dtype=dtype)


# one list: labels y = [0, 2, 1], scores s = [1.0, 0.5, -0.5] -> ranks 1, 2, 3
S3 = [[1.0, 0.5, -0.5]]
Y3 = [[0.0, 2.0, 1.0]]
M3 = [[True, True, True]]
# exp2 gains g = [0, 3, 1]; ideal order [3, 1, 0]: maxDCG = 3/log2(2) + 1/log2(3)
MAXDCG = 3 + 1 / LOG2_3
# pairs with y_i > y_j: (1, 0), (2, 0), (1, 2); score differences -0.5, -1.5, 1.0


def test_lambdarank_three_items_by_hand():
    # w_ij = |G_i - G_j| * |1/log2(1 + r_i) - 1/log2(1 + r_j)|
    expected = (
        (3 / MAXDCG) * (1 - 1 / LOG2_3) * sp2(-0.5)  # items 1 (r 2), 0 (r 1)
        + (1 / MAXDCG) * (1 - 1 / 2) * sp2(-1.5)  # items 2 (r 3), 0 (r 1)
        + (2 / MAXDCG) * (1 / LOG2_3 - 1 / 2) * sp2(1.0)
    )  # items 1 (r 2), 2 (r 3)
    got = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="lambdaRank")
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_ndcgloss2_and_plusplus_three_items_by_hand():
    # delta_t = 1/log2(1 + t) - 1/log2(2 + t), t = |r_i - r_j|
    d1, d2 = 1 - 1 / LOG2_3, 1 / LOG2_3 - 1 / 2
    ndcg2 = (
        (3 / MAXDCG) * d1 * sp2(-0.5)  # |2 - 1| = 1
        + (1 / MAXDCG) * d2 * sp2(-1.5)  # |3 - 1| = 2
        + (2 / MAXDCG) * d1 * sp2(1.0)
    )  # |2 - 3| = 1
    got = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="ndcgLoss2")
    assert got.item() == pytest.approx(ndcg2, rel=1e-12)
    lr = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="lambdaRank").item()
    pp = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="ndcgLoss2PP", mu=10.0)
    assert pp.item() == pytest.approx(10 * ndcg2 + lr, rel=1e-12)
    # allRank's scheme names are accepted
    pp2 = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="ndcgLoss2PP_scheme", mu=10.0)
    assert pp2.item() == pp.item()


def test_ranknet_sigma_and_linear_gain_by_hand():
    got = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="rankNet", sigma=2.0)
    assert got.item() == pytest.approx(sp2(-1.0) + sp2(-3.0) + sp2(2.0), rel=1e-12)
    # linear gains g = y = [0, 2, 1]: maxDCG = 2 + 1/log2(3)
    m = 2 + 1 / LOG2_3
    expected = (
        (2 / m) * (1 - 1 / LOG2_3) * sp2(-0.5)
        + (1 / m) * 0.5 * sp2(-1.5)
        + (1 / m) * (1 / LOG2_3 - 0.5) * sp2(1.0)
    )
    got = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="lambdaRank", gain="linear")
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_cutoff_k1_by_hand():
    # k = 1: discounts [1, 0, 0] by rank, maxDCG@1 = 3; pair (1, 2) has both ranks > 1
    expected = (3 / 3) * 1 * sp2(-0.5) + (1 / 3) * 1 * sp2(-1.5)
    got = lambda_loss(t(S3), t(Y3), torch.tensor(M3), weighting="lambdaRank", k=1)
    assert got.item() == pytest.approx(expected, rel=1e-12)


def brute_force(s, y, *, weighting, k=None, sigma=1.0, mu=10.0, gain="exp2"):
    """Independent per-list reference with Python floats and explicit pair loops."""
    n = len(s)
    order = sorted(range(n), key=lambda i: (-s[i], i))
    rank = [0] * n
    for r, i in enumerate(order):
        rank[i] = r + 1
    g = [(2.0**v - 1) if gain == "exp2" else v for v in y]
    ideal = sorted(g, reverse=True)[: (n if k is None else k)]
    maxdcg = max(sum(v / math.log2(r + 2) for r, v in enumerate(ideal)), 1e-10)
    G = [v / maxdcg for v in g]

    def disc(r):
        return 0.0 if (k is not None and r > k) else 1 / math.log2(1 + r)

    total = 0.0
    for i in range(n):
        for j in range(n):
            if not y[i] > y[j] or (k is not None and min(rank[i], rank[j]) > k):
                continue
            dg = abs(G[i] - G[j])
            tt = abs(rank[i] - rank[j])
            lam = dg * abs(disc(rank[i]) - disc(rank[j]))
            nd2 = dg * (1 / math.log2(1 + tt) - 1 / math.log2(2 + tt))
            w = {
                "lambdaRank": lam,
                "ndcgLoss2": nd2,
                "ndcgLoss2PP": mu * nd2 + lam,
                "rankNet": 1.0,
            }[weighting]
            x = sigma * (s[i] - s[j])
            total += w * (max(-x, 0) + math.log1p(math.exp(-abs(x)))) / math.log(2)
    return total


@pytest.mark.parametrize("weighting", ["lambdaRank", "ndcgLoss2", "ndcgLoss2PP", "rankNet"])
@pytest.mark.parametrize("k", [None, 3])
def test_matches_brute_force_on_random_padded_lists(rng, weighting, k):
    lengths = [7, 1, 4, 0, 6]
    width = 8
    s = rng.normal(size=(5, width))
    y = rng.integers(0, 4, size=(5, width)).astype(float)
    mask = np.arange(width)[None] < np.array(lengths)[:, None]
    per_list = lambda_loss(
        t(s), t(y), torch.tensor(mask), weighting=weighting, k=k, sigma=1.5, reduction="none"
    )
    refs = [
        brute_force(list(s[b, :n]), list(y[b, :n]), weighting=weighting, k=k, sigma=1.5)
        for b, n in enumerate(lengths)
    ]
    np.testing.assert_allclose(per_list.numpy(), refs, rtol=1e-10, atol=1e-12)
    has_pair = [len(set(y[b, :n])) > 1 for b, n in enumerate(lengths)]
    mean = lambda_loss(t(s), t(y), torch.tensor(mask), weighting=weighting, k=k, sigma=1.5)
    assert mean.item() == pytest.approx(sum(refs) / sum(has_pair), rel=1e-10)


def test_mean_reduction_skips_lists_without_pairs():
    s = t([[1.0, 0.5, -0.5], [0.3, 0.1, 0.0]])
    y = t([[0.0, 2.0, 1.0], [1.0, 1.0, 1.0]])  # second list: all labels equal
    m = torch.ones(2, 3, dtype=torch.bool)
    one = lambda_loss(s[:1], y[:1], m[:1]).item()
    assert lambda_loss(s, y, m).item() == pytest.approx(one, rel=1e-12)
    assert lambda_loss(s, y, m, reduction="none")[1].item() == 0.0
    # no list with a pair at all: 0, still differentiable
    sc = s[1:].clone().requires_grad_()
    out = lambda_loss(sc, y[1:], m[1:])
    out.backward()
    assert out.item() == 0.0 and torch.all(sc.grad == 0)


def test_padding_changes_neither_loss_nor_gradients(rng):
    s = rng.normal(size=(3, 5))
    y = rng.integers(0, 3, size=(3, 5)).astype(float)
    mask = np.arange(5)[None] < np.array([[5], [3], [2]])
    base_s = torch.tensor(s, requires_grad=True)
    base = lambda_loss(base_s, t(y), torch.tensor(mask), weighting="ndcgLoss2PP", k=4)
    base.backward()
    # 4 more padded slots per list holding inf / nan scores and huge labels
    pad_s = np.concatenate([s, np.full((3, 4), np.inf)], axis=1)
    pad_s[:, -1] = np.nan
    pad_s[mask.sum(1) < 5, 4] = -np.inf  # padded slots inside the original width too
    pad_y = np.concatenate([y, np.full((3, 4), 1e6)], axis=1)
    pad_mask = np.concatenate([mask, np.zeros((3, 4), dtype=bool)], axis=1)
    wide_s = torch.tensor(pad_s, requires_grad=True)
    wide = lambda_loss(wide_s, t(pad_y), torch.tensor(pad_mask), weighting="ndcgLoss2PP", k=4)
    wide.backward()
    assert wide.item() == pytest.approx(base.item(), rel=1e-12)
    assert torch.isfinite(wide_s.grad).all()
    torch.testing.assert_close(
        wide_s.grad[:, :5][torch.tensor(mask)], base_s.grad[torch.tensor(mask)]
    )
    assert torch.all(wide_s.grad[~torch.tensor(pad_mask)] == 0)


def test_large_corrected_labels_stay_finite_and_exact():
    # IPS-corrected labels up to 4 / 0.01 = 400: 2^400 overflows float32
    y = [400.0, 0.0, 399.0, 3.0]
    s = [0.1, 0.9, -0.3, 0.2]
    ref = brute_force(s, y, weighting="ndcgLoss2PP")  # Python floats hold 2^400
    scores = torch.tensor([s], dtype=torch.float32, requires_grad=True)
    got = lambda_loss(
        scores,
        torch.tensor([y], dtype=torch.float32),
        torch.ones(1, 4, dtype=torch.bool),
        weighting="ndcgLoss2PP",
    )
    got.backward()
    assert math.isfinite(got.item()) and torch.isfinite(scores.grad).all()
    assert got.item() == pytest.approx(ref, rel=1e-5)
    # gains are 2^y - 1 up to a common factor per list
    g = list_gains(t([y]), torch.ones(1, 4, dtype=torch.bool)).numpy()[0]
    assert g[2] / g[0] == pytest.approx(0.5, rel=1e-12)  # 2^399 / 2^400
    g_small = list_gains(t([[3.0, 0.5, 0.0]]), torch.ones(1, 3, dtype=torch.bool))
    np.testing.assert_allclose(g_small.numpy()[0], [7.0, math.sqrt(2) - 1, 0.0], rtol=1e-12)


def test_bf16_scores_are_accepted():
    s = torch.tensor(S3, dtype=torch.bfloat16, requires_grad=True)
    out = lambda_loss(s, torch.tensor(Y3), torch.tensor(M3))
    assert out.dtype == torch.float32
    out.backward()
    assert s.grad.dtype == torch.bfloat16 and torch.isfinite(s.grad.float()).all()


def test_parameter_errors():
    s, y, m = t(S3), t(Y3), torch.tensor(M3)
    with pytest.raises(ParameterError, match="weighting"):
        lambda_loss(s, y, m, weighting="lambdaMART")
    with pytest.raises(ParameterError, match="k"):
        lambda_loss(s, y, m, k=0)
    with pytest.raises(ParameterError, match="gain"):
        lambda_loss(s, y, m, gain="log")
    with pytest.raises(ParameterError, match="reduction"):
        lambda_loss(s, y, m, reduction="max")
    with pytest.raises(ParameterError, match="shapes"):
        lambda_loss(s, y[:, :2], m)


def _allrank_lambda_loss():
    """allRank's lambdaLoss, loaded from its file: the package's loss __init__ imports
    torchvision, which the file itself does not need."""
    allrank = pytest.importorskip("allrank")
    path = f"{allrank.__path__[0]}/models/losses/lambdaLoss.py"
    saved = {
        k: sys.modules.get(k) for k in ("allrank.data.dataset_loading", "allrank.models.losses")
    }
    loading = types.ModuleType("allrank.data.dataset_loading")
    loading.PADDED_Y_VALUE = -1
    losses = types.ModuleType("allrank.models.losses")
    losses.DEFAULT_EPS = 1e-10
    sys.modules.update({"allrank.data.dataset_loading": loading, "allrank.models.losses": losses})
    try:
        spec = importlib.util.spec_from_file_location("_allrank_lambda_loss", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mod.lambdaLoss


@pytest.mark.parametrize(
    "scheme", ["lambdaRank_scheme", "ndcgLoss2_scheme", "ndcgLoss2PP_scheme", "rankNet_scheme"]
)
def test_sum_reduction_matches_allrank(rng, scheme):
    allrank_loss = _allrank_lambda_loss()
    lengths = np.array([9, 5, 3, 1, 9, 7])
    s = torch.tensor(rng.normal(size=(6, 9)))
    y = torch.tensor(rng.integers(0, 5, size=(6, 9)).astype(float))
    mask = torch.arange(9)[None] < torch.tensor(lengths)[:, None]
    y_sentinel = y.masked_fill(~mask, -1.0)  # allRank marks padding with label -1
    ref = allrank_loss(s, y_sentinel, weighing_scheme=scheme, reduction="sum")
    ours = lambda_loss(s, y, mask, weighting=scheme, reduction="sum")
    # allRank computes discounts in float32
    assert ours.item() == pytest.approx(ref.item(), rel=1e-6)


def brute_ndcg(s, y, k):
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:k]
    dcg = sum((2 ** y[i] - 1) / math.log2(r + 2) for r, i in enumerate(order))
    ideal = sorted(y, reverse=True)[:k]
    idcg = sum((2**v - 1) / math.log2(r + 2) for r, v in enumerate(ideal))
    return dcg / idcg if idcg > 0 else None


def test_padded_ndcg_matches_brute_force(rng):
    lengths = [12, 3, 5, 1, 0]
    s = rng.normal(size=(5, 12))
    s[0, 3] = s[0, 7]  # a tie: the earlier slot ranks first
    y = rng.integers(0, 3, size=(5, 12)).astype(float)
    y[2, :5] = 0  # no relevant item: not valid
    mask = np.arange(12)[None] < np.array(lengths)[:, None]
    ndcg, valid = padded_ndcg(t(s), t(y), torch.tensor(mask), k=4)
    for b, n in enumerate(lengths):
        ref = brute_ndcg(list(s[b, :n]), list(y[b, :n]), 4) if n else None
        assert bool(valid[b]) == (ref is not None)
        if ref is not None:
            assert ndcg[b].item() == pytest.approx(ref, rel=1e-12)
        else:
            assert ndcg[b].item() == 0.0


# --------------------------------------------------------------------------- LambdaLoss object


def _brute_force(scores, labels, n, scheme, *, k=None, sigma=1.0, mu=10.0):
    """One list, plain Python over pairs, from the formulas of the module docstring."""
    import math

    s, y = list(map(float, scores[:n])), list(map(float, labels[:n]))
    order = sorted(range(n), key=lambda i: (-s[i], i))
    rank = {i: r + 1 for r, i in enumerate(order)}
    gains = [2**v - 1 for v in y]
    ideal = sorted(gains, reverse=True)[: (k or n)]
    max_dcg = sum(g / math.log2(1 + r) for r, g in enumerate(ideal, start=1))
    G = [g / max_dcg for g in gains]

    def d(r):
        return 0.0 if k is not None and r > k else 1 / math.log2(1 + r)

    def delta(t):
        return 1 / math.log2(1 + t) - 1 / math.log2(2 + t)

    total = 0.0
    for i in range(n):
        for j in range(n):
            if not y[i] > y[j] or (k is not None and min(rank[i], rank[j]) > k):
                continue
            lam = abs(G[i] - G[j]) * abs(d(rank[i]) - d(rank[j]))
            nd2 = delta(abs(rank[i] - rank[j])) * abs(G[i] - G[j])
            w = {
                "lambdaRank": lam,
                "ndcgLoss2": nd2,
                "ndcgLoss2PP": mu * nd2 + lam,
                "rankNet": 1.0,
            }[scheme]
            total += w * math.log2(1 + math.exp(-sigma * (s[i] - s[j])))
    return total


@pytest.mark.parametrize("scheme", ["lambdaRank", "ndcgLoss2", "ndcgLoss2PP", "rankNet"])
@pytest.mark.parametrize("k", [None, 3])
def test_lambda_loss_object_equals_brute_force_per_pair(scheme, k):
    from groupbias.ltr.losses import LambdaLoss

    gen = torch.Generator().manual_seed(7)
    scores = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    labels = torch.randint(0, 4, (3, 6), generator=gen).to(torch.float64)
    lengths = [6, 4, 5]
    mask = torch.arange(6)[None, :] < torch.tensor(lengths)[:, None]
    loss = LambdaLoss(weighting=scheme, k=k, sigma=1.5, mu=3.0, reduction="none")
    got = loss(scores, labels, mask)
    want = [
        _brute_force(scores[b], labels[b], n, scheme, k=k, sigma=1.5, mu=3.0)
        for b, n in enumerate(lengths)
    ]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9)


@pytest.mark.parametrize(
    "field, value",
    [
        ("weighting", "listNet"),
        ("weighting", "lambdaRank_scheme"),
        ("k", 0),
        ("sigma", 0),
        ("mu", -1),
        ("gain", "exp"),
        ("eps", 0),
        ("reduction", "max"),
    ],
)
def test_lambda_loss_object_names_the_bad_field(field, value):
    from groupbias.ltr.losses import LambdaLoss

    with pytest.raises(ParameterError) as info:
        LambdaLoss(**{field: value})
    assert info.value.name == field
