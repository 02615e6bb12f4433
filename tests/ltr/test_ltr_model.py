"""Self-attention scorer: parity with allRank's make_model, masking, config validation."""

import copy

import pytest
import torch

from groupbias.core.errors import ParameterError
from groupbias.ltr.allrank_compat import allrank_to_scorer_state, load_allrank_weights
from groupbias.ltr.model import make_scorer

allrank_model = pytest.importorskip("allrank.models.model")
allrank_config = pytest.importorskip("allrank.config")

N_FEATURES = 12


def _cfg(pe=None, fc=True, transformer=True):
    return {
        "fc_model": {"sizes": [32, 16], "input_norm": True, "activation": "ReLU", "dropout": 0.1}
        if fc
        else None,
        "transformer": {"N": 2, "d_ff": 24, "h": 4, "positional_encoding": pe, "dropout": 0.1}
        if transformer
        else None,
        "post_model": {"output_activation": "Tanh", "d_output": 2},
    }


def _allrank(cfg, n_features):
    c = copy.deepcopy(cfg)  # allRank's FCModel inserts into `sizes`
    tr = None
    if c["transformer"]:
        tr = allrank_config.TransformerConfig(**c["transformer"])
        if tr.positional_encoding:
            tr.positional_encoding = allrank_config.PositionalEncoding(**tr.positional_encoding)
    return allrank_model.make_model(c["fc_model"], tr, c["post_model"], n_features=n_features)


def _batch(seed, lengths, width, n_features=N_FEATURES, zero_padding=True):
    g = torch.Generator().manual_seed(seed)
    x = 3 * torch.randn(len(lengths), width, n_features, generator=g)
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    if zero_padding:
        x[~mask] = 0.0
    positions = torch.arange(width).expand(len(lengths), -1).clone()
    return x, mask, positions


def _zero_ln_eps(*models):
    """allRank adds eps to the std, torch's LayerNorm to the variance; with eps 0 in both the
    weight mapping is exact, which isolates everything else."""
    for m in models:
        for mod in m.modules():
            if type(mod).__name__ == "LayerNorm" and hasattr(mod, "a_2"):
                mod.eps = 0.0
            elif isinstance(mod, torch.nn.LayerNorm) and mod.normalized_shape[0] != N_FEATURES:
                mod.eps = 0.0


_FIXED = {"strategy": "fixed", "max_indices": 10}
_LEARNED = {"strategy": "learned", "max_indices": 10}


@pytest.mark.parametrize(
    "pe, fc, transformer",
    [
        (None, True, True),
        (_FIXED, True, True),
        (_LEARNED, True, True),
        (None, False, True),
        (_FIXED, False, True),
        (None, True, False),
    ],
)
def test_parity_with_allrank(pe, fc, transformer):
    n_features = N_FEATURES if fc else 8  # without the fc block d_model = n_features
    cfg = _cfg(pe, fc=fc, transformer=transformer)
    if not fc:
        cfg["transformer"]["h"] = 2
    torch.manual_seed(1)
    ar = _allrank(cfg, n_features).eval()
    ours = make_scorer(cfg, n_features=n_features).eval()
    load_allrank_weights(ours, ar.state_dict())
    # lengths include a full list, a single item, and lists longer than max_indices
    # padded slots hold non-constant junk: with eps 0, allRank's layer norm of an all-zero
    # padded row is 0/0, and its NaN values would leak through the masked attention (0 * nan)
    x, mask, pos = _batch(0, [12, 7, 1, 3, 12], 12, n_features, zero_padding=False)
    with torch.no_grad():
        ref = ar.score(x, ~mask, pos)  # allRank's mask: True = padded
        got = ours(x, mask, pos)
    # default epsilons: the two layer-norm formulas differ by ~1e-6 / std
    torch.testing.assert_close(got[mask], ref[mask], atol=1e-4, rtol=1e-4)
    _zero_ln_eps(ar, ours)
    with torch.no_grad():
        ref = ar.score(x, ~mask, pos)
        got = ours(x, mask, pos)
    torch.testing.assert_close(got[mask], ref[mask], atol=1e-5, rtol=1e-5)
    # padded items: ours are exactly 0 (allRank's are arbitrary)
    assert torch.all(got[~mask] == 0)


def test_allrank_mslr_example_config_is_reused_as_is():
    # the model section of allRank's MSLR-WEB30K example config
    cfg = {
        "fc_model": {"sizes": [144], "input_norm": False, "activation": None, "dropout": 0.0},
        "transformer": {"N": 2, "d_ff": 384, "h": 1, "positional_encoding": None, "dropout": 0.1},
        "post_model": {"output_activation": "Sigmoid", "d_output": 1},
    }
    frozen = copy.deepcopy(cfg)
    scorer = make_scorer(cfg, n_features=136)
    assert cfg == frozen  # not mutated
    ar = _allrank(cfg, 136)
    mapped = allrank_to_scorer_state(ar.state_dict())
    assert set(mapped) == set(scorer.state_dict())
    for k, v in scorer.state_dict().items():
        assert mapped[k].shape == v.shape, k


def test_padding_width_and_batch_mates_do_not_change_scores():
    torch.manual_seed(0)
    scorer = make_scorer(_cfg(), n_features=N_FEATURES).eval()
    x, mask, _ = _batch(3, [5, 2], 5)
    wide_x = torch.cat([x, 100 * torch.randn(2, 7, N_FEATURES)], dim=1)  # junk in padding
    wide_mask = torch.cat([mask, torch.zeros(2, 7, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        a = scorer(x, mask)
        b = scorer(wide_x, wide_mask)
        alone = scorer(x[1:], mask[1:])
    torch.testing.assert_close(b[:, :5][mask], a[mask], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(alone[0, :2], a[1, :2], atol=1e-6, rtol=1e-6)
    assert torch.all(b[~wide_mask] == 0)


def test_all_padded_row_is_finite_and_gradients_flow():
    torch.manual_seed(0)
    scorer = make_scorer(_cfg(), n_features=N_FEATURES).train()
    x, mask, _ = _batch(4, [4, 0, 2], 4)
    out = scorer(x, mask)
    assert torch.isfinite(out).all()
    out[mask].sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in scorer.parameters() if p.grad is not None)


def test_batch_input_norm_uses_real_items_only():
    cfg = _cfg()
    cfg["fc_model"]["input_norm"] = "batch"
    cfg["transformer"]["dropout"] = 0.0
    cfg["fc_model"]["dropout"] = 0.0
    torch.manual_seed(0)
    scorer = make_scorer(cfg, n_features=N_FEATURES).train()
    x, mask, _ = _batch(5, [6, 3], 6)
    junk = x.clone()
    junk[~mask] = 1e3
    torch.testing.assert_close(scorer(junk, mask)[mask], scorer(x, mask)[mask])


def test_no_input_block_and_no_encoder():
    cfg = {
        "fc_model": None,
        "transformer": None,
        "post_model": {"output_activation": None, "d_output": 1},
    }
    scorer = make_scorer(cfg, n_features=3)
    w = scorer.output.linear.weight.detach()[0]
    b = scorer.output.linear.bias.detach()[0]
    x = torch.tensor([[[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]])
    mask = torch.tensor([[True, True]])
    # a linear scorer: s = w . x + b
    torch.testing.assert_close(scorer(x, mask)[0], x[0] @ w + b)


@pytest.mark.parametrize(
    "bad, field",
    [
        (
            {
                "transformer": {
                    "N": 1,
                    "d_ff": 8,
                    "h": 3,
                    "positional_encoding": None,
                    "dropout": 0.0,
                }
            },
            "transformer.h",
        ),
        (
            {"fc_model": {"sizes": [8], "input_norm": False, "activation": "Relu", "dropout": 0}},
            "fc_model.activation",
        ),
        (
            {"fc_model": {"sizes": [8], "input_norm": "group", "activation": None, "dropout": 0}},
            "input_norm",
        ),
        (
            {
                "transformer": {
                    "N": 1,
                    "d_ff": 8,
                    "h": 1,
                    "dropout": 0.0,
                    "positional_encoding": {"strategy": "rotary", "max_indices": 5},
                }
            },
            "strategy",
        ),
        ({"encoder": {}}, "model_cfg"),
        ({"fc_model": {"sizes": [8], "layers": 2}}, "fc_model"),
    ],
)
def test_config_errors_name_the_field(bad, field):
    cfg = {
        "fc_model": {"sizes": [8], "input_norm": False, "activation": None, "dropout": 0.0},
        "transformer": None,
        "post_model": {"output_activation": None, "d_output": 1},
    }
    cfg.update(bad)
    with pytest.raises(ParameterError, match=field):
        make_scorer(cfg, n_features=4)
