import numpy as np
import pytest

from data_loaders.grouping import group_by_feature
from data_loaders.synthetic import (
    SENSITIVE_FEATURE_ID,
    SENSITIVE_THRESHOLD,
    grade_distributions,
    make_synthetic,
    make_synthetic_splits,
)
from groupbias.core.errors import ParameterError

pytestmark = pytest.mark.reproducibility


def _same(a, b):
    return (
        np.array_equal(a.features, b.features)
        and np.array_equal(a.labels, b.labels)
        and np.array_equal(a.qptr, b.qptr)
        and np.array_equal(a.groups, b.groups)
    )


def test_reproducible_by_seed_and_generator():
    a = make_synthetic(n_queries=30, seed=0)
    b = make_synthetic(n_queries=30, seed=0)
    c = make_synthetic(n_queries=30, seed=1)
    d = make_synthetic(n_queries=30, rng=np.random.default_rng(0))
    assert _same(a, b) and _same(a, d)
    assert not _same(a, c)


def test_shapes_sizes_and_labels():
    data = make_synthetic(n_queries=50, list_size=(5, 9), n_features=8, n_grades=3, seed=2)
    assert data.n_queries == 50 and data.n_features == 8
    assert data.list_sizes.min() >= 5 and data.list_sizes.max() <= 9
    assert set(np.unique(data.labels)) <= {0.0, 1.0, 2.0}
    assert data.label_max == 2.0
    assert data.features.dtype == np.float32
    np.testing.assert_array_equal(data.feature_ids, np.arange(1, 9))


def test_affected_share_exact_and_sensitive_feature_threshold():
    data = make_synthetic(n_queries=80, affected_share=0.3, seed=5)
    n = data.n_items
    assert data.groups.sum() == round(0.3 * n)
    x = data.feature(SENSITIVE_FEATURE_ID)
    np.testing.assert_array_equal((x < SENSITIVE_THRESHOLD).astype(float), data.groups)
    # the paper's "mean" threshold recovers the same groups (share inside (0.125, 0.875))
    g = group_by_feature(data.with_groups(None), SENSITIVE_FEATURE_ID, threshold="mean")
    np.testing.assert_array_equal(g.groups, data.groups)


@pytest.mark.parametrize("ratio", [0.5, 1.0, 1.4])
def test_utility_ratio_is_achieved(ratio):
    data = make_synthetic(n_queries=1500, utility_ratio=ratio, seed=11)
    aff = data.groups == 1
    achieved = data.labels[aff].mean() / data.labels[~aff].mean()
    assert achieved == pytest.approx(ratio, rel=0.06)
    assert data.meta["utility_ratio_achieved"] == pytest.approx(achieved)


def test_grade_distributions_hand_values():
    p, pa = grade_distributions(5, 1.0)
    # p(k) ∝ 2^-k over 0..4: (16, 8, 4, 2, 1) / 31
    np.testing.assert_allclose(p, np.array([16, 8, 4, 2, 1]) / 31)
    np.testing.assert_allclose(pa, p, atol=1e-9)  # ratio 1: no tilt
    mu = (0 * 16 + 1 * 8 + 2 * 4 + 3 * 2 + 4 * 1) / 31  # = 26/31
    _, pa2 = grade_distributions(5, 0.5)
    assert np.arange(5) @ pa2 == pytest.approx(0.5 * mu)
    assert pa2.sum() == pytest.approx(1.0)


def test_informative_features_correlate_with_labels():
    data = make_synthetic(n_queries=200, seed=4, n_features=10, n_informative=3)
    r = [np.corrcoef(data.feature(f), data.labels)[0, 1] for f in range(1, 11)]
    assert r[1] > 0.5 and r[1] > r[2] > r[3] > 0.2  # features 2..4, noise rising
    assert max(abs(v) for v in r[4:]) < 0.1  # pure noise features


def test_splits():
    sp = make_synthetic_splits(n_queries=100, seed=3, list_size=[4, 8])
    assert list(sp) == ["train", "valid", "test"]
    assert [sp[k].n_queries for k in sp] == [60, 20, 20]
    ids = np.concatenate([sp[k].query_ids for k in sp])
    assert np.unique(ids).size == 100
    assert sp["valid"].name == "synthetic/valid"
    again = make_synthetic_splits(n_queries=100, seed=3, list_size=[4, 8])
    assert _same(sp["test"], again["test"])
    two = make_synthetic_splits(n_queries=10, seed=0, fractions={"a": 0.5, "b": 0.5})
    assert [two[k].n_queries for k in two] == [5, 5]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(), "rng/seed"),
        (dict(seed=1, rng=np.random.default_rng(1)), "rng/seed"),
        (dict(seed=-1), "seed"),
        (dict(seed=0, affected_share=1.0), "affected_share"),
        (dict(seed=0, utility_ratio=0.0), "utility_ratio"),
        (dict(seed=0, utility_ratio=10.0), "utility_ratio"),
        (dict(seed=0, list_size=(5, 2)), "list_size"),
        (dict(seed=0, n_features=1), "n_features"),
        (dict(seed=0, n_grades=1), "n_grades"),
        (dict(seed=0, n_queries=0), "n_queries"),
    ],
)
def test_parameter_errors(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        make_synthetic(**kwargs)


def test_split_fraction_errors():
    with pytest.raises(ParameterError, match="fractions"):
        make_synthetic_splits(seed=0, fractions={"train": 0.5, "test": 0.2})


def test_features_are_one_float64_draw_per_column_block_rounded_to_float32(monkeypatch):
    # the generator draws in row blocks; the values are those of one draw of every row
    # (the documented model with one generator), whatever the block
    import data_loaders.synthetic as syn

    kw = dict(n_queries=40, list_size=(3, 9), n_features=7, n_informative=2, seed=5)
    monkeypatch.setattr(syn, "_DRAW_VALUES", 10)  # blocks of one row
    small = make_synthetic(**kw)
    monkeypatch.setattr(syn, "_DRAW_VALUES", 1 << 30)  # one block
    one = make_synthetic(**kw)
    np.testing.assert_array_equal(small.features, one.features)
    # independent reconstruction of the stream, in the order of the module docstring
    g = np.random.default_rng(5)
    sizes = g.integers(3, 10, size=40)
    n = int(sizes.sum())
    aff = np.zeros(n, bool)
    aff[g.permutation(n)[: round(0.3 * n)]] = True
    g.random(n)  # the labels' uniforms
    f0 = np.where(aff, g.uniform(0.0, 0.2, n), g.uniform(0.8, 1.0, n))
    inf = one.labels[:, None] + np.linspace(0.5, 2.0, 2) * g.standard_normal((n, 2))
    noise = g.standard_normal((n, 4))
    expect = np.column_stack([f0, inf, noise]).astype(np.float32)
    np.testing.assert_array_equal(one.features, expect)
    assert one.features.dtype == np.float32


def test_splits_are_the_queries_of_one_dataset_in_order():
    parts = make_synthetic_splits(n_queries=30, list_size=(2, 6), n_features=4, seed=2)
    whole = make_synthetic(n_queries=30, list_size=(2, 6), n_features=4, seed=2)
    np.testing.assert_array_equal(
        np.concatenate([p.features for p in parts.values()]), whole.features
    )
    start = 0
    for p in parts.values():
        ref = whole.subset(np.arange(start, start + p.n_queries))
        np.testing.assert_array_equal(p.qptr, ref.qptr)
        np.testing.assert_array_equal(p.labels, ref.labels)
        np.testing.assert_array_equal(p.groups, ref.groups)
        np.testing.assert_array_equal(p.query_ids, ref.query_ids)
        start += p.n_queries


def test_blocked_draws_keep_the_stream_before_the_normals_and_the_model():
    kw = dict(n_queries=400, list_size=(5, 60), n_features=12, n_informative=3, seed=9)
    seq = make_synthetic(**kw)
    blk = make_synthetic(**kw, draws="blocked")
    again = make_synthetic(**kw, draws="blocked")
    assert _same(blk, again)
    # sizes, groups, labels and the sensitive feature come from the one generator, as before
    np.testing.assert_array_equal(blk.qptr, seq.qptr)
    np.testing.assert_array_equal(blk.groups, seq.groups)
    np.testing.assert_array_equal(blk.labels, seq.labels)
    np.testing.assert_array_equal(blk.features[:, 0], seq.features[:, 0])
    assert blk.features.dtype == np.float32
    assert not np.array_equal(blk.features[:, 1:], seq.features[:, 1:])
    # informative feature j is label + s_j N(0, 1); the rest N(0, 1) (scipy's normal)
    from scipy import stats

    scales = np.linspace(0.5, 2.0, 3)
    for j, s in enumerate(scales):
        z = (blk.features[:, 1 + j].astype(np.float64) - blk.labels) / s
        assert stats.kstest(z, "norm").pvalue > 1e-3
    noise = blk.features[:, 4:].astype(np.float64).ravel()
    assert stats.kstest(noise, "norm").pvalue > 1e-3


def test_draws_is_checked():
    with pytest.raises(ParameterError, match="draws"):
        make_synthetic(seed=0, draws="parallel")


def test_draws_key_reaches_the_generator_from_the_config(tmp_path):
    import groupbias as gb
    from groupbias.app.preflight import check_command_line
    from groupbias.core.errors import ConfigError

    kw = dict(n_queries=30, list_size=[4, 9], n_features=6)
    seq = gb.load_dataset("synthetic", split="train", **kw)
    blk = gb.load_dataset("synthetic", split="train", draws="blocked", **kw)
    np.testing.assert_array_equal(blk.labels, seq.labels)
    assert not np.array_equal(blk.features[:, 1:], seq.features[:, 1:])
    with pytest.raises(ConfigError) as info:
        check_command_line([f"paths.runs={tmp_path}", "dataset.params.draws=fast"])
    assert info.value.key == "dataset.params.draws" and "'blocked'" in str(info.value)
