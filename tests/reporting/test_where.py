"""`groupbias-report where <overrides>` prints the folder the `groupbias` command with those
overrides wrote (issue 41 item 5: documented paths broke as soon as an override was used)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupbias.app.preflight import run_folders
from groupbias.core.errors import ConfigError
from groupbias.reporting.aggregate import main as report_main

REPO = Path(__file__).resolve().parents[2]
TINY = ["experiment=theory", "experiment.n_queries=200", "bias.betas=[1.0,0.8,0.6]"]


def _env(**extra) -> dict:
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


def _run(module: str, args: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, env=_env(**env), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return res


@pytest.mark.slow  # two groupbias processes
def test_where_prints_the_folders_the_command_wrote(tmp_path):
    for multirun, args in (([], TINY), (["-m"], [*TINY, "seed=1,2"])):
        _run("groupbias.app.cli", [*multirun, *args], tmp_path, GROUPBIAS_RUNS="out")
        res = _run(
            "groupbias.reporting.aggregate", ["where", *multirun, *args], tmp_path,
            GROUPBIAS_RUNS="out",
        )  # fmt: skip
        folders = res.stdout.split()
        assert len(folders) == (2 if multirun else 1) and not res.stderr
        for folder in folders:
            assert (tmp_path / folder / "meta.json").is_file(), folder
            assert folder.startswith("out/theory/")
    made = {p.parent.relative_to(tmp_path) for p in tmp_path.rglob("meta.json")}
    assert len(made) == 3  # nothing else written


def test_where_follows_paths_runs_and_names_no_folder_it_would_not_make(tmp_path, capsys):
    assert run_folders(["experiment=table2", "dataset=trec2020"]) == [
        Path("runs/table2/dataset=trec2020")
    ]
    assert run_folders(["experiment=table2"]) == [Path("runs/table2")]
    assert run_folders([f"paths.runs={tmp_path}", "experiment=table1", "seed=4"]) == [
        tmp_path / "table1" / "seed=4"
    ]
    assert run_folders(["hydra.run.dir=/x/y", "seed=4"]) == [Path("/x/y")]
    assert report_main(["where", "experiment=table2", "dataset=trec2020"]) == 0
    out, err = capsys.readouterr()
    assert out == "runs/table2/dataset=trec2020\n" and "not there yet" in err
    with pytest.raises(ConfigError, match="sweep"):
        run_folders(["seed=1,2"])
    assert report_main(["where", "experiment=bogus"]) == 2
    assert "groupbias-report: error: experiment: no option 'bogus'" in capsys.readouterr().err
