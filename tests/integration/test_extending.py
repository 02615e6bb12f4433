"""docs/extending.md works as written: its files are written, its metric's test passes, its
Python blocks run in order and its command line runs the new experiment with the new
dataset, estimator and metric."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "extending.md").read_text()
BLOCKS = re.findall(r"```(python|yaml|bash)\n(.*?)```", DOC, flags=re.S)


@pytest.mark.slow  # the documented command runs the new experiment in a fresh process
def test_extending_doc_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {}
    commands = []
    for lang, code in BLOCKS:
        marker = [ln for ln in code.splitlines()[:2] if ln.startswith("# file: ")]
        if marker:  # (a yaml package header, when present, must stay the first line)
            target = tmp_path / marker[0][len("# file: ") :].strip()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(code)
        elif lang == "python":
            exec(compile(code, "extending.md", "exec"), namespace)
        elif lang == "bash":
            commands.append(code.strip())
    assert (tmp_path / "my_extensions.py").exists() and commands
    # the metric's own test, as the doc writes it (a test file beside the metric's file)
    (test_file,) = list(tmp_path.glob("test_*.py"))
    tests = importlib.import_module(test_file.stem)
    ran = [getattr(tests, n)() for n in dir(tests) if n.startswith("test_")]
    assert ran
    (command,) = commands
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "GROUPBIAS_RUNS": str(tmp_path / "runs")}
    args = command.split()[1:]  # drop "PYTHONPATH=." (set in env above)
    exe = Path(sys.executable).with_name(args[0])
    res = subprocess.run(
        [str(exe), *args[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "beta=0.8 corrected: NDCG@10" in res.stdout
    (metrics,) = list((tmp_path / "runs" / "beta_sweep").rglob("metrics.json"))
    assert "affected_top_share@10" in metrics.read_text()
