"""A key that has no effect under the chosen options is refused naming the option that would
use it (``estimator.bias_boot`` without ``estimator.bias_correction=bootstrap`` was accepted
and ignored); with that option the same key is accepted and reaches its object."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from experiments.clicks import ClickLogKeys
from groupbias.app.cli import CONFIG_DIR
from groupbias.app.config import build_setup
from groupbias.app.preflight import check_command_line
from groupbias.core.errors import ConfigError
from groupbias.estimate.estimators import KSEstimator

#: (experiment, key with a valid value, the option's setting that uses it)
CASES = [
    ("table1", "estimator.bias_boot=20", "estimator.bias_correction=bootstrap"),
    ("table1", "estimator.bias_beta_std=0.1", "estimator.bias_correction=bootstrap"),
    ("table1", "estimator.confidence=0.8", "estimator.bootstrap=20"),
    ("table1", "estimator.auto_sizes=[1,10]", "estimator.cluster_size=auto"),
    ("table1", "estimator.auto_boot=5", "estimator.cluster_size=auto"),
    ("table1", "estimator.jitter_scale=gap", "estimator.jitter=0.5"),
    ("clicks", "experiment.continuation=0.3", "experiment.user_model=cascade"),
    ("drift", "experiment.continuation=0.3", "experiment.user_model=cascade"),
    ("clicks", "experiment.logging_noise=0.5", "experiment.logging=noisy_relevance"),
    ("clicks", "experiment.labeled_fraction=0.3", "experiment.logging=ranker"),
    ("clicks", "experiment.intervention_rate=0.3", "experiment.intervention=swap"),
]
#: what turns each case's option off
OFF = {
    "estimator.bias_correction": "none",
    "estimator.bootstrap": "0",
    "estimator.cluster_size": "null",
    "estimator.jitter": "0",
    "experiment.user_model": "pbm",
    "experiment.logging": "ranker",
    "experiment.intervention": "none",
}


def test_every_dependent_key_is_tested():
    declared = {f"estimator.{k}" for k in KSEstimator.DEPENDENT_KEYS}
    declared |= {f"experiment.{k}" for k in ClickLogKeys.DEPENDENT_KEYS}
    assert declared == {key.split("=")[0] for _, key, _ in CASES}


@pytest.mark.parametrize("experiment, given, option", CASES)
def test_a_key_without_the_option_that_uses_it_is_refused(experiment, given, option, tmp_path):
    key, name = given.split("=")[0], option.split("=")[0]
    off = f"{name}={OFF[name]}"
    if option.endswith("=ranker"):  # logging=ranker is the default's opposite here
        off = f"{name}=noisy_attractiveness"
    base = [f"experiment={experiment}", f"paths.runs={tmp_path}"]
    with pytest.raises(ConfigError) as info:
        check_command_line([*base, off, given])
    assert info.value.key == key
    assert f"unused: it takes effect only with {name}" in info.value.message
    assert name in info.value.hint
    # with the option that uses it: accepted, and the value reaches the object
    over = [*base, option, given]
    assert check_command_line(over) == 1
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=over)
    setup, exp = build_setup(cfg, overridden=[o.split("=")[0] for o in over])
    obj = setup.estimator if key.startswith("estimator.") else exp
    value = getattr(obj, key.split(".")[1])
    assert str(value).replace(" ", "").strip("()[]") == given.split("=")[1].strip("[]")


def test_the_issue_command_is_refused_at_the_cli(tmp_path):
    exe = Path(sys.executable).with_name("groupbias")
    args = [str(exe), "experiment=table1", "estimator.bias_boot=100", f"paths.runs={tmp_path}"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.startswith(
        "groupbias: error: estimator.bias_boot: unused: it takes effect only with "
        "estimator.bias_correction=bootstrap"
    )
    assert not any(tmp_path.iterdir())
