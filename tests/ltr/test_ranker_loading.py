"""Reading a saved ranker back: every damaged or mismatched file, a device that is not here
and a bad ``on_device`` are typed errors naming the file or argument and what to do
(before: EOFError, JSONDecodeError, KeyError, UnicodeDecodeError, UnpicklingError, torch's
state_dict RuntimeError, AssertionError)."""

import json
import os
import pickle
import shutil

import numpy as np
import pytest
import torch

import groupbias as gb
from groupbias.core.errors import DataFormatError, GroupBiasError, ParameterError
from groupbias.data.ranking_data import RankingData
from groupbias.ltr.model import make_scorer
from groupbias.ltr.train import TrainedRanker

TINY = {
    "fc_model": {"sizes": [8], "input_norm": False, "activation": "ReLU", "dropout": 0.0},
    "transformer": {"N": 1, "d_ff": 16, "h": 2, "positional_encoding": None, "dropout": 0.0},
    "post_model": {"output_activation": None, "d_output": 1},
}
F = 5


def _ranker(n_features=F, cfg=TINY) -> TrainedRanker:
    torch.manual_seed(0)
    return TrainedRanker(make_scorer(cfg, n_features=n_features), cfg, n_features, "zscore")


def _data(rng, f=F) -> RankingData:
    qptr = np.array([0, 6, 10, 17])
    x = rng.normal(size=(17, f)).astype(np.float32)
    return RankingData(x, rng.integers(0, 3, 17).astype(float), qptr, np.arange(3))


@pytest.fixture
def saved(tmp_path):
    return _ranker().save(tmp_path / "ranker")


def _info(d):
    return json.loads((d / "ranker.json").read_text())


def _refused(d, *patterns, file="ranker.json"):
    """The load fails with a DataFormatError naming ``file`` and matching ``patterns``, and
    saying what to do."""
    with pytest.raises(DataFormatError) as err:
        gb.load_ranker(d)
    msg = str(err.value)
    assert str(d / file) in msg, msg
    for p in patterns:
        assert p in msg, msg
    assert "retrain" in msg or "expected" in msg, msg
    return msg


def test_a_saved_ranker_loads_and_scores_as_saved(saved, rng):
    data = _data(rng)
    np.testing.assert_array_equal(gb.load_ranker(saved).predict(data), _ranker().predict(data))


def test_an_empty_model_file(saved):
    (saved / "model.pt").write_bytes(b"")
    _refused(saved, "empty", file="model.pt")


@pytest.mark.parametrize("cut", [0.5, 0.1])
def test_a_cut_model_file(saved, cut):
    raw = (saved / "model.pt").read_bytes()
    (saved / "model.pt").write_bytes(raw[: int(len(raw) * cut)])
    _refused(saved, "not a torch file of weights", file="model.pt")


def test_a_model_file_of_random_bytes(saved):
    (saved / "model.pt").write_bytes(np.random.default_rng(0).bytes(4096))
    _refused(saved, "not a torch file", file="model.pt")


class _Payload:
    """A pickle that would create a file when loaded without weights_only."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (os.mkdir, (self.target,))


def test_a_malicious_pickle_is_refused_without_running_it(saved, tmp_path):
    target = tmp_path / "pwned"
    with open(saved / "model.pt", "wb") as fh:
        pickle.dump({"w": _Payload(target)}, fh, protocol=2)
    _refused(saved, "refused posix.mkdir", "not run", "weights_only=True", file="model.pt")
    assert not target.exists()
    torch.save({"w": _Payload(target)}, saved / "model.pt")  # torch's own zip format
    _refused(saved, "refused posix.mkdir", "not run", file="model.pt")
    assert not target.exists()


def test_a_model_file_that_is_not_a_state_dict(saved):
    torch.save([torch.zeros(2)], saved / "model.pt")
    _refused(saved, "state_dict of tensors", file="model.pt")
    torch.save({"a": 1}, saved / "model.pt")
    _refused(saved, "state_dict of tensors", file="model.pt")


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", "empty"),
        ('{"model_cfg": {"fc_model": ', "not JSON"),
        ("model_cfg = 1", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('"a string"', "JSON object"),
    ],
)
def test_a_damaged_config(saved, text, pattern):
    (saved / "ranker.json").write_text(text)
    _refused(saved, pattern)


def test_a_cut_config_names_the_line(saved):
    raw = (saved / "ranker.json").read_text()
    (saved / "ranker.json").write_text(json.dumps(_info(saved), indent=1)[: len(raw) // 2])
    msg = _refused(saved, "not JSON")
    assert ", line " in msg


def test_a_config_that_is_not_utf8(saved):
    (saved / "ranker.json").write_bytes(b'{"model_cfg": "\xff\xfe"}')
    _refused(saved, "not UTF-8")


@pytest.mark.parametrize("key", ["model_cfg", "n_features", "normalize"])
def test_a_config_without_a_key(saved, key):
    info = _info(saved)
    del info[key]
    (saved / "ranker.json").write_text(json.dumps(info))
    _refused(saved, "missing key", key)


@pytest.mark.parametrize(
    "key, value, pattern",
    [
        ("n_features", "5", "n_features"),
        ("n_features", 0, "n_features"),
        ("normalize", "minmax", "normalize"),
        ("model_cfg", {"fc_model": {"bogus": 1}}, "model_cfg"),
        ("model_cfg", [1], "model_cfg"),
    ],
)
def test_a_config_value_that_cannot_be(saved, key, value, pattern):
    (saved / "ranker.json").write_text(json.dumps({**_info(saved), key: value}))
    _refused(saved, pattern)


def test_weights_of_another_model(saved, tmp_path):
    other = {**TINY, "transformer": {**TINY["transformer"], "d_ff": 32}}
    shutil.copy(_ranker(cfg=other).save(tmp_path / "other") / "model.pt", saved / "model.pt")
    _refused(saved, "shape", "[32", "model_cfg", file="model.pt")


def test_weights_with_other_keys(saved):
    state = torch.load(saved / "model.pt", weights_only=True)
    state["extra.weight"] = state.pop(next(iter(state)))
    torch.save(state, saved / "model.pt")
    _refused(saved, "lacks", "has unknown extra.weight", file="model.pt")


def test_a_changed_feature_count(saved):
    (saved / "ranker.json").write_text(json.dumps({**_info(saved), "n_features": 7}))
    _refused(saved, "feature width 5 in the weights, ranker.json says 7", file="model.pt")


def test_a_changed_model_config(saved):
    cfg = {**TINY, "fc_model": {**TINY["fc_model"], "sizes": [12]}}
    (saved / "ranker.json").write_text(json.dumps({**_info(saved), "model_cfg": cfg}))
    _refused(saved, "shape", file="model.pt")


def test_a_folder_without_a_ranker_says_wrong_folder(tmp_path):
    with pytest.raises(ParameterError, match="wrong folder.*groupbias-report where"):
        gb.load_ranker(tmp_path)


def test_a_device_that_is_not_here_is_refused_by_name(saved, rng, monkeypatch):
    ranker, data = gb.load_ranker(saved), _data(rng)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device in ("cuda", "cuda:0", torch.device("cuda")):
        with pytest.raises(ParameterError, match=r"^device: .*'cuda.*' is not.*device='cpu'"):
            ranker.predict(data, device=device)
    for device in ("bogus", "cuda:x", 3.5, "meta"):
        with pytest.raises(ParameterError, match="^device: "):
            ranker.predict(data, device=device)
    np.testing.assert_array_equal(ranker.predict(data, device="cpu"), ranker.predict(data))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_gpu_index_beyond_the_present_ones(saved, rng):
    with pytest.raises(ParameterError, match="^device: "):
        gb.load_ranker(saved).predict(_data(rng), device=f"cuda:{torch.cuda.device_count()}")


def test_on_device_takes_true_false_auto_only(saved, rng):
    ranker, data = gb.load_ranker(saved), _data(rng)
    want = ranker.predict(data)
    for ok in (True, False, None, "auto", np.bool_(True)):
        np.testing.assert_array_equal(ranker.predict(data, on_device=ok), want)
    for bad in ("yes", "false", 1, 0, 2.0, "cuda"):
        with pytest.raises(ParameterError, match="^on_device: expected true, false, 'auto'"):
            ranker.predict(data, on_device=bad)
    with pytest.raises(ParameterError, match="^batch_size"):
        ranker.predict(data, batch_size=0)


def test_another_feature_width_says_both(saved, rng):
    with pytest.raises(ParameterError, match="feature width 7, the ranker expects 5"):
        gb.load_ranker(saved).predict(_data(rng, f=7))


def test_every_failure_is_a_groupbias_error():
    assert issubclass(DataFormatError, GroupBiasError)
    assert issubclass(ParameterError, GroupBiasError)


def _run_folder(tmp_path, datasets=("TREC_2020",)):
    run = tmp_path / "runs" / "table2" / "dataset=trec2020"
    for i, ds in enumerate(datasets):
        for sub, cond in (("full", "full"), ("beta0.8", "biased"), ("beta0.8", "corrected")):
            _ranker(cfg={**TINY, "fc_model": {**TINY["fc_model"], "sizes": [8 + 2 * i]}}).save(
                run / "models" / ds / sub / cond / "ranker"
            )
    return run


def test_a_ranker_found_in_its_run_folder(tmp_path, rng):
    run, data = _run_folder(tmp_path), _data(rng)
    corrected = run / "models" / "TREC_2020" / "beta0.8" / "corrected"
    want = gb.load_ranker(corrected).predict(data)
    for beta in (0.8, "0.8", 0.80):
        got = gb.load_ranker(run, condition="corrected", beta=beta).predict(data)
        np.testing.assert_array_equal(got, want)
    assert gb.load_ranker(run, condition="full").n_features == F
    with pytest.raises(ParameterError, match="^beta"):
        gb.load_ranker(run, condition="corrected")
    with pytest.raises(ParameterError, match="^condition.*beta0.8/corrected"):
        gb.load_ranker(run, condition="corrected", beta=0.6)
    with pytest.raises(ParameterError, match="^directory.*groupbias-report where"):
        gb.load_ranker(tmp_path, condition="corrected", beta=0.8)


def test_a_run_of_several_datasets_needs_the_dataset(tmp_path):
    run = _run_folder(tmp_path, datasets=("TREC_2019", "TREC_2020"))
    with pytest.raises(ParameterError, match="^dataset.*several rankers"):
        gb.load_ranker(run, condition="biased", beta=0.8)
    one = gb.load_ranker(run, condition="biased", beta=0.8, dataset="TREC 2020")
    assert one.model_cfg["fc_model"]["sizes"] == [10]


def test_loading_allocates_nothing_for_the_config_and_leaves_the_rng(saved):
    cfg = {**TINY, "transformer": {**TINY["transformer"], "d_ff": 10**9}}  # 32 GB of weights
    (saved / "ranker.json").write_text(json.dumps({**_info(saved), "model_cfg": cfg}))
    _refused(saved, "shape", f"{10**9}", file="model.pt")
    (saved / "ranker.json").write_text(json.dumps({**_info(saved), "model_cfg": TINY}))
    before = torch.get_rng_state()
    ranker = gb.load_ranker(saved)
    assert torch.equal(torch.get_rng_state(), before)  # no initialization drawn
    assert {p.device.type for p in ranker.scorer.parameters()} == {"cpu"}
    assert {p.dtype for p in ranker.scorer.parameters()} == {torch.float32}
