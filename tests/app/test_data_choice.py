"""A run reads exactly the data its configuration and folder name say: a ``dataset.*`` or
``grouping`` key that cannot reach an experiment's own dataset list is refused naming it
(it used to swap the listed TREC data for the composed synthetic dataset, silently, in a
folder named after TREC), and ``dataset=<name>`` does not sit beside the list it replaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from groupbias.app.cli import CONFIG_DIR, run
from groupbias.app.config import build_setup
from groupbias.app.preflight import check_command_line
from groupbias.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = sorted(p.stem for p in (REPO / "configs" / "experiment").glob("*.yaml"))
#: the text datasets of the retrieval experiments; the others take ranking datasets
TEXT = {"fair_qr", "retrieval_fairness"}


def _compose(overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def _lists_data(node) -> bool:
    """An ``experiment`` node that lists datasets of its own (``experiment.datasets`` or the
    paper's ``experiment.setups``)."""
    return bool(node.get("datasets")) or node.get("setups") == "paper"


def _with_a_list() -> list[str]:
    """Every experiment that :func:`_lists_data`, read from its file
    (``configs/experiment/*.yaml`` sets the whole ``experiment`` node; at collection, so no
    Hydra composition: 15 of them took 2.5 s in every xdist worker)."""
    out = []
    for name in EXPERIMENTS:
        text = (REPO / "configs" / "experiment" / f"{name}.yaml").read_text(encoding="utf-8")
        if _lists_data(yaml.safe_load(text)["experiment"]):
            out.append(name)
    return out


LISTED = _with_a_list()


def _other_list(experiment: str) -> list[str]:
    """A dataset list other than the experiment's default one."""
    over = [
        "experiment.datasets=[grep_biasir]"
        if experiment in TEXT
        else "experiment.datasets=[trec2020]"
    ]
    if experiment in ("impact", "fig7"):
        over.append("experiment.setups=listed")
    return over


def test_the_experiments_with_a_list_are_found():
    composed = [n for n in EXPERIMENTS if _lists_data(_compose([f"experiment={n}"]).experiment)]
    assert composed == LISTED  # the files' nodes are the composed ones
    assert {"table1", "table2", "clicks", "drift", "estimator_robustness", "impact", "fig7"} | (
        TEXT
    ) <= set(LISTED)


@pytest.mark.parametrize("experiment", LISTED)
@pytest.mark.parametrize(
    "override", ["dataset.params.n_queries=60", "grouping.min_two_group_queries=5"]
)
def test_a_data_key_that_misses_every_listed_dataset_is_refused(experiment, override, tmp_path):
    args = [
        f"experiment={experiment}",
        *_other_list(experiment),
        override,
        f"paths.runs={tmp_path}",
    ]
    with pytest.raises(ConfigError) as info:
        check_command_line(args)
    key = override.split("=")[0]
    assert info.value.key == key
    assert "unused" in info.value.message and "synthetic" in info.value.message
    assert "dataset=" in info.value.hint
    # the experiment's default list is no more reachable than the one given
    with pytest.raises(ConfigError) as info:
        check_command_line([f"experiment={experiment}", override, f"paths.runs={tmp_path}"])
    assert info.value.key == key
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("experiment", LISTED)
def test_a_chosen_dataset_beside_the_list_it_replaces_is_refused(experiment, tmp_path):
    chosen = "dataset=grep_biasir" if experiment in TEXT else "dataset=trec2019"
    args = [f"experiment={experiment}", *_other_list(experiment), chosen, f"paths.runs={tmp_path}"]
    with pytest.raises(ConfigError) as info:
        check_command_line(args)
    assert info.value.key == "experiment.datasets"
    assert "replaces" in info.value.message


@pytest.mark.parametrize("experiment", sorted(set(LISTED) - TEXT))
def test_a_data_key_reaches_a_list_of_only_the_composed_dataset(experiment):
    """``experiment.datasets=[synthetic] dataset.params.n_queries=60``: the list names the
    composed dataset and nothing else, so the key applies to it."""
    over = ["experiment.datasets=[synthetic]", "dataset.params.n_queries=60"]
    if experiment in ("impact", "fig7"):
        over.append("experiment.setups=listed")
    cfg = _compose([f"experiment={experiment}", *over])
    keys = [o.split("=")[0] for o in over]
    setup, exp = build_setup(cfg, data_from_command_line=True, overridden=keys)
    assert setup.dataset.name == "synthetic" and setup.dataset.params["n_queries"] == 60
    # without the command line's choice (a library caller) the key would be ignored: refused
    with pytest.raises(ConfigError) as info:
        build_setup(cfg, data_from_command_line=False, overridden=keys)
    assert info.value.key == "dataset.params.n_queries"


def _groupbias(args, cwd):
    env = {
        **os.environ,
        "GROUPBIAS_TREC_FAIR": str(REPO.parent / "shared" / "data" / "trec-fair"),
    }
    exe = Path(sys.executable).with_name("groupbias")
    return subprocess.run(
        [str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # two runs of the command
def test_the_command_never_stores_synthetic_data_under_a_trec_name(tmp_path):
    res = _groupbias(
        ["experiment=table1", "experiment.datasets=[trec2020]", "dataset.params.draws=blocked"],
        tmp_path,
    )
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr.startswith("groupbias: error: dataset.params.draws: unused")
    assert "Traceback" not in res.stderr and not (tmp_path / "runs").exists()
    # the list of only the composed dataset: the run reads it with the key applied, and the
    # stored inputs and the table name it
    res = _groupbias(
        [
            "experiment=table1",
            "experiment.datasets=[synthetic]",
            "dataset.params.n_queries=60",
            "bias.betas=[0.8]",
        ],
        tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (meta,) = (tmp_path / "runs" / "table1").rglob("meta.json")
    inputs = json.loads(meta.read_text())["inputs"]
    assert [i["dataset"]["name"] for i in inputs] == ["synthetic"]
    assert inputs[0]["dataset"]["params"]["n_queries"] == 60
    assert "\nsynthetic " in res.stdout


def test_a_library_run_with_data_keys_that_miss_the_list_is_refused(tmp_path):
    cfg = _compose(
        [
            "experiment=table1",
            f"paths.runs={tmp_path}",
            "experiment.datasets=[trec2020]",
            "dataset.params.n_queries=60",
        ]
    )
    with pytest.raises(ConfigError) as info:
        run(
            cfg,
            data_overridden=True,
            overridden=["experiment.datasets", "dataset.params.n_queries"],
        )
    assert info.value.key == "dataset.params.n_queries"
    assert not any(tmp_path.iterdir())
