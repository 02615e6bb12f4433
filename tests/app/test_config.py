"""Configs cannot be silently ignored: every config file of every group composes and builds,
every leaf key reaches the object that uses it (a bogus value for it fails naming that very
key), unknown keys fail naming the key, and the loss a run trains with is the one its config
names."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from experiments.common import Entry, load
from groupbias.app.cli import CONFIG_DIR, run
from groupbias.app.config import CONFIG_GROUPS, HYDRA_KEYS, build_setup
from groupbias.core.errors import ConfigError

CONFIGS = Path(CONFIG_DIR)
#: groups whose options are files; the launcher group sets Hydra's own keys only
OPTION_GROUPS = [g for g in CONFIG_GROUPS if (CONFIGS / g).is_dir()]
BOGUS = ("bogus!", -7, 12345.5, [1, "x"], {"x": 1})


def _compose(overrides=()):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    from groupbias.app.config import plain

    out = plain(cfg)
    out.pop("hydra", None)
    return out


def _options(group):
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


def _leaves(node, prefix):
    """(path, key list) of every scalar / list / empty-mapping leaf below ``node``."""
    if isinstance(node, dict) and node:
        for k, v in node.items():
            if k in HYDRA_KEYS:
                continue
            yield from _leaves(v, prefix + [k])
    elif isinstance(node, list) and any(isinstance(x, dict) for x in node):
        for i, v in enumerate(node):  # e.g. experiment.datasets: names and mappings
            yield from _leaves(v, prefix + [i])
    else:
        yield prefix


def _dotted(path):
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _set(cfg, path, value):
    node = cfg
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _build_and_load(cfg, load_data=False):
    setup, experiment = build_setup(cfg)
    if load_data and cfg["dataset"].get("name") == "synthetic":  # options are used when loading
        load(Entry(setup.dataset, setup.grouping, "dataset"))
    return setup, experiment


CASES = [(g, o) for g in OPTION_GROUPS for o in _options(g)]


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_config_file_builds_and_every_key_reaches_its_consumer(group, option, monkeypatch):
    if group == "trainer" and option in ("gpu", "ddp"):
        import torch

        # these files ask for a GPU, refused where none is present
        # (tests/integration/test_hostile_inputs.py); here the keys are judged as if one were
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    cfg = _compose([f"{group}={option}"])
    load_data = group == "dataset"
    _build_and_load(cfg, load_data)  # the file as shipped builds
    node = cfg.get(group) or {}
    silent = []
    for path in _leaves(node, [group]):
        key = _dotted(path)
        for value in BOGUS:
            bad = copy.deepcopy(cfg)
            _set(bad, path, value)
            try:
                _build_and_load(bad, load_data)
            except ConfigError as exc:
                assert exc.key == key, f"bogus {key}={value!r} blamed {exc.key}: {exc}"
                break
        else:
            silent.append(key)
    assert not silent, f"no bogus value of {silent} was rejected"
    bad = copy.deepcopy(cfg)
    if isinstance(bad.get(group), dict):
        bad[group]["no_such_key"] = 1
        with pytest.raises(ConfigError) as info:
            _build_and_load(bad)
        assert info.value.key == f"{group}.no_such_key"


def test_unknown_top_level_key_and_bad_seed():
    cfg = _compose()
    for key, value, blamed in (
        ("trainr", {}, "trainr"),
        ("seed", -1, "seed"),
        ("seed", "x", "seed"),
        ("progress", "yes", "progress"),
        ("backend", "fast", "backend"),
        ("plugins", ["no_such_module_xyz"], "plugins[0]"),
        ("plugins", "my_module", "plugins"),
        ("warn_after_s", -1, "warn_after_s"),
        ("warn_after_s", "soon", "warn_after_s"),
    ):
        bad = {**cfg, key: value}
        with pytest.raises(ConfigError) as info:
            build_setup(bad)
        assert info.value.key == blamed


@pytest.mark.parametrize(
    "option",
    [o if o == "lambdarank" else pytest.param(o, marks=pytest.mark.slow) for o in _options("loss")],
)  # the default loss in the fast suite, every loss in make test
def test_trained_loss_is_the_configured_one(option, tmp_path, monkeypatch):
    if option != "lambdarank":
        # the demo's tables and figure (60 % of a run, and no part of what the loss is) are
        # drawn once, with the default loss; this is the fast suite's run of Demo.present
        from experiments.demo import Demo

        monkeypatch.setattr(Demo, "present", lambda self, setup, metrics, run_dir: None)
    overrides = [
        f"loss={option}",
        "experiment=demo",
        f"paths.runs={tmp_path}",
        "dataset.params.n_queries=40",
        "dataset.params.list_size=[4,12]",
        "trainer.max_epochs=1",
        "trainer.threads=1",  # one intra-op thread: tiny tensors, and xdist runs 2 workers
        "model.fc_model.sizes=[8]",
        "model.transformer.d_ff=8",
        "model.transformer.h=1",
        "bias.betas=[0.8]",
        "experiment.repetitions=1",
        "experiment.ltr_betas=[0.8]",
    ]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    run(cfg)
    import yaml

    resolved = yaml.safe_load((tmp_path / "demo" / "config.yaml").read_text())["loss"]
    ltr = tmp_path / "demo" / "ltr" / "rep0"
    for where in (ltr / "full", ltr / "beta0.8" / "biased", ltr / "beta0.8" / "corrected"):
        used = json.loads((where / "ranker" / "ranker.json").read_text())["recipe"]["loss"]
        assert used["class"] == resolved["_target_"].rsplit(".", 1)[1]
        for k, v in resolved.items():
            if k != "_target_":
                assert used[k] == v, (where, k, used[k], v)


@pytest.mark.parametrize("value", [0, "two"])
def test_trainer_threads_bogus_value_is_refused_by_name(value):
    cfg = _compose(["trainer.threads=2"])
    assert build_setup(cfg)[0].recipe.trainer.threads == 2
    bad = copy.deepcopy(cfg)
    bad["trainer"]["threads"] = value
    with pytest.raises(ConfigError) as info:
        build_setup(bad)
    assert info.value.key == "trainer.threads"


def test_batching_on_device_reaches_the_recipe_and_refuses_pinning():
    """`batching.on_device` (auto by default) reaches the recipe; pinned host memory with
    batches gathered on the device is refused, naming batching.pin_memory."""
    assert build_setup(_compose())[0].recipe.batching.on_device == "auto"
    for value in (True, False):
        cfg = _compose([f"batching.on_device={str(value).lower()}"])
        assert build_setup(cfg)[0].recipe.batching.on_device is value
    cfg = _compose(["batching.on_device=true", "batching.pin_memory=true"])
    with pytest.raises(ConfigError) as info:
        build_setup(cfg)
    assert info.value.key == "batching.pin_memory"


@pytest.mark.slow  # a whole run: seconds
def test_warn_after_s_reaches_the_setup():
    """`warn_after_s` (top level, a few minutes by default) is read; null: never warn."""
    assert build_setup(_compose())[0].warn_after_s == 180.0
    assert build_setup(_compose(["warn_after_s=600"]))[0].warn_after_s == 600.0
    assert build_setup(_compose(["warn_after_s=null"]))[0].warn_after_s is None


def test_progress_key_reaches_policy_evaluation_and_lightning(capsys):
    """`progress` (top level) is read: policy evaluation reports how far each learned
    policy is, and Lightning's bars follow it; progress=false silences both."""
    import numpy as np

    from groupbias.evaluation.catalog import EvalSpec

    policy = ["experiment=table2", "evaluation=policy", "evaluation.epochs=8"]
    on, _ = build_setup(_compose(policy))
    off, _ = build_setup(_compose([*policy, "progress=false"]))
    assert on.evaluation.progress and on.recipe.trainer.enable_progress_bar
    assert not off.evaluation.progress and not off.recipe.trainer.enable_progress_bar
    lab = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    spec = EvalSpec(lab, lab, np.array([1.0, 0, 0, 1, 1, 0]), np.array([0, 3, 6]))
    spec = EvalSpec(**{**spec.__dict__, "metrics": ("ndcg@10", "delta_eel")})
    on.evaluation.evaluate(lab, spec, regime="tabular")
    lines = [s for s in capsys.readouterr().out.splitlines() if "policy (eel, 2 queries)" in s]
    assert [s.split(": ", 1)[1].split(",")[0] for s in lines] == [
        "epoch 2/8",
        "epoch 4/8",
        "epoch 6/8",
        "epoch 8/8",
    ]
    off.evaluation.evaluate(lab, spec, regime="tabular")
    assert "policy (" not in capsys.readouterr().out


def test_lightning_bars_only_on_a_terminal(monkeypatch):
    import io
    import sys

    from groupbias.ltr.train import TrainerSpec

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a log file, a pipe
    assert TrainerSpec().trainer_kwargs()["enable_progress_bar"] is False
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert TrainerSpec().trainer_kwargs()["enable_progress_bar"] is True
    assert TrainerSpec(enable_progress_bar=False).trainer_kwargs()["enable_progress_bar"] is False


def _targets(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "_target_":
                yield v
            else:
                yield from _targets(v)
    elif isinstance(node, list):
        for v in node:
            yield from _targets(v)


def test_every_target_in_the_config_tree_resolves():
    """Every ``_target_`` of every config file (nested ones included: groupings of dataset
    entries, the estimators of estimator_robustness) names an importable class."""
    import importlib

    import yaml

    found = {}
    for path in sorted(CONFIGS.rglob("*.yaml")):
        for target in _targets(yaml.safe_load(path.read_text())):
            found[target] = path.relative_to(CONFIGS)
    assert len(found) >= 20
    for target, where in found.items():
        module, _, name = target.rpartition(".")
        obj = getattr(importlib.import_module(module), name, None)
        assert callable(obj), f"{where}: {target}"


@pytest.mark.slow  # a whole run: seconds
def test_backend_key_reaches_the_fast_paths_and_meta_json(tmp_path, monkeypatch):
    """``backend`` is in force while the run computes (every call to the fast paths sees
    it), is written to meta.json, and comes from $GROUPBIAS_BACKEND when not given."""
    import importlib

    knob = importlib.import_module("groupbias._fast.backend")

    seen = []
    real = knob.backend
    monkeypatch.setattr(knob, "backend", lambda: seen.append(real()) or seen[-1])
    tiny = ["dataset.params.n_queries=40", "dataset.params.list_size=[4,12]"]
    overrides = ["experiment=table1", "experiment.datasets=[synthetic]", *tiny]
    for name in ("numpy", "numba"):
        seen.clear()
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = compose(config_name="config", overrides=[*overrides, f"backend={name}"])
        out = tmp_path / name
        run(cfg, out, data_overridden=False, overridden=["backend"])
        assert seen and set(seen) == {name}
        assert json.loads((out / "meta.json").read_text())["backend"] == name
    monkeypatch.setenv("GROUPBIAS_BACKEND", "numpy")
    assert _compose()["backend"] == "numpy"
    monkeypatch.delenv("GROUPBIAS_BACKEND")
    assert _compose()["backend"] == "auto"
