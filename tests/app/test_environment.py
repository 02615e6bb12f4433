"""An empty ``GROUPBIAS_*`` variable means unset, everywhere: ``GROUPBIAS_BACKEND=`` is
``auto`` (it was refused), ``GROUPBIAS_RUNS=`` is ``runs`` (it was refused), and a dataset's
empty variable is named in the missing-data error, which says no folder was searched (it
said "missing data file(s) in '.'" even where '.' held the files)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import groupbias as gb
from groupbias.app.cli import CONFIG_DIR
from groupbias.app.config import build_setup
from groupbias.app.preflight import check_command_line
from groupbias.core.errors import ConfigError, MissingFilesError
from groupbias.data.datasets import DATASETS

REPO = Path(__file__).resolve().parents[2]
#: each variable the code reads, and the test below that empties it
TESTED = {
    "GROUPBIAS_BACKEND": "test_an_empty_backend_variable_is_auto",
    "GROUPBIAS_RUNS": "test_an_empty_runs_variable_is_the_default_folder",
    "GROUPBIAS_CACHE": "test_an_empty_cache_variable_is_the_default_cache",
    "GROUPBIAS_GENDER_WORDLIST": "test_an_empty_word_list_variable_is_missing_by_its_key",
    "GROUPBIAS_LLM_API_KEY": "test_an_empty_api_key_variable_falls_back",
    "GROUPBIAS_MOVIELENS_META": "test_an_empty_metadata_variable_is_named",
    # the datasets' own variables (DatasetInfo.env_var)
    **{
        v: "test_an_empty_dataset_variable_is_named_and_no_folder_is_searched"
        for v in (
            "GROUPBIAS_YAHOO",
            "GROUPBIAS_MSLR",
            "GROUPBIAS_LIGHTGBM",
            "GROUPBIAS_IITJEE",
            "GROUPBIAS_TREC_FAIR",
            "GROUPBIAS_MOVIELENS",
            "GROUPBIAS_GREP_BIASIR",
        )
    },
}


def _compose(overrides=()):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_every_variable_the_code_reads_is_tested_empty():
    found = set()
    for folder in ("groupbias", "data_loaders", "experiments", "configs"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".yaml"):
                found |= set(re.findall(r"GROUPBIAS_[A-Z_]*[A-Z]", path.read_text()))
    assert found == set(TESTED)


def test_an_empty_backend_variable_is_auto(monkeypatch):
    from groupbias._fast import backend

    monkeypatch.setenv("GROUPBIAS_BACKEND", "")
    assert backend() == "auto"
    setup, _ = build_setup(_compose(["experiment=table1"]))
    assert setup.backend == "auto"
    monkeypatch.setenv("GROUPBIAS_BACKEND", "numpy")
    assert build_setup(_compose(["experiment=table1"]))[0].backend == "numpy"


def test_an_empty_runs_variable_is_the_default_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GROUPBIAS_RUNS", "")
    assert _compose().paths.runs == "runs"
    assert check_command_line(["experiment=table1"]) == 1
    # the key itself set empty is still refused
    with pytest.raises(ConfigError, match="paths.runs: expected a folder, got ''"):
        check_command_line(["experiment=table1", "paths.runs="])


def test_an_empty_cache_variable_is_the_default_cache(monkeypatch):
    from data_loaders.cache import cache_root

    monkeypatch.setenv("GROUPBIAS_CACHE", "")
    assert cache_root() == Path.home() / ".cache" / "groupbias"


def test_an_empty_word_list_variable_is_missing_by_its_key(monkeypatch):
    from experiments.retrieval_common import wordlist

    monkeypatch.setenv("GROUPBIAS_GENDER_WORDLIST", "")
    with pytest.raises(ConfigError) as info:
        wordlist(None)
    assert info.value.key == "experiment.wordlist" and "GROUPBIAS_GENDER_WORDLIST" in str(
        info.value
    )


def test_an_empty_api_key_variable_falls_back(monkeypatch):
    from groupbias.retrieval.llm import ChatEndpoint

    monkeypatch.setenv("GROUPBIAS_LLM_API_KEY", "")
    monkeypatch.setenv("OPENAI_API_KEY", "k2")
    endpoint = ChatEndpoint(base_url="http://127.0.0.1:1/v1", model="m")
    assert endpoint.key == "k2"


def test_an_empty_metadata_variable_is_named(monkeypatch, tmp_path):
    from data_loaders.movielens import load_movielens

    (tmp_path / "u.data").write_text("1\t1\t5\t881250949\n")
    monkeypatch.setenv("GROUPBIAS_MOVIELENS_META", "")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingFilesError) as info:
        load_movielens(tmp_path / "u.data", grouping="country")
    assert info.value.unset == "GROUPBIAS_MOVIELENS_META"
    assert "$GROUPBIAS_MOVIELENS_META is empty" in str(info.value)
    assert "in '.'" not in str(info.value)


VARIABLES = {n: DATASETS.get(n).env_var for n in DATASETS.names() if DATASETS.get(n).env_var}


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_an_empty_dataset_variable_is_named_and_no_folder_is_searched(name, monkeypatch, tmp_path):
    variable = VARIABLES[name]
    monkeypatch.chdir(tmp_path)
    shared = REPO.parent / "shared" / "data" / "trec-fair" / "ppg"
    if variable == "GROUPBIAS_TREC_FAIR" and shared.is_dir():
        shutil.copytree(shared, tmp_path / "ppg")  # the files are in '.', which is not searched
    for state, setting in (("is empty", ""), ("is not set", None)):
        if setting is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, setting)
        with pytest.raises(MissingFilesError) as info:
            gb.load_dataset(name)
        message = str(info.value)
        assert info.value.unset == variable, message
        assert f"no folder searched, ${variable} {state}" in message
        assert "in '.'" not in message
