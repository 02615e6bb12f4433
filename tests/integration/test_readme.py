"""The README's examples work: its Python snippet runs on the real TREC data, and every
experiment, config group option and make target it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


@pytest.mark.realdata
def test_library_snippet_runs(trec_root, capsys, monkeypatch):
    (code,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))  # where the README says
    exec(compile(code, "README", "exec"), {})
    out = capsys.readouterr().out.split("\n")
    biased = float(out[0].split()[1])
    corrected = float(out[1].split()[1])
    assert 0 < biased < corrected <= 1


def test_named_configs_exist():
    cfg = REPO / "configs"
    for group, name in re.findall(
        r"\b(experiment|dataset|trainer|launcher|grouping)=(\w+)", README
    ):
        assert (cfg / group / f"{name}.yaml").exists(), f"{group}={name}"
    for target in re.findall(r"make\s+([\w-]+)", README):
        assert re.search(rf"^{target}:", (REPO / "Makefile").read_text(), flags=re.M), target
