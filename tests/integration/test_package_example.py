"""The example of ``help(groupbias)`` (the package docstring) runs as written, and ``dir(gb)``
lists the whole flat API (the names imported on first use too)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import groupbias as gb

REPO = Path(__file__).resolve().parents[2]


def test_dir_lists_every_name_of_the_flat_api_before_torch_is_imported():
    """``dir(gb)`` once left out ``TrainedRanker``, ``load_ranker`` and ``train_ranker``
    (module attributes loaded on first use); listing them imports nothing."""
    code = "import sys, groupbias as gb; print(sorted(dir(gb))); print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.splitlines()
    names = set(eval(out[0]))  # noqa: S307 - a list of names the child printed
    assert set(gb.__all__) <= names
    assert {"TrainedRanker", "load_ranker", "train_ranker"} <= names
    assert out[1] == "False"


def _example() -> str:
    """The indented block after ``::`` in the package docstring."""
    doc = gb.__doc__
    start = doc.index("::\n") + 3
    lines = []
    for line in doc[start:].splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


@pytest.mark.slow
def test_the_package_docstring_example_runs(tmp_path, trec_root, monkeypatch):
    """Every line of the ``help(gb)`` example (once ``rng`` was used before it was
    defined): in a folder holding the files it names — a TREC run, qrels and groups, and
    the run folder of the command its comment names (at a tiny scale)."""
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    monkeypatch.chdir(tmp_path)
    code = _example()
    assert "rng = np.random.default_rng(0)" in code.split("gb.simulate_group_bias")[0]
    test = gb.load_dataset("synthetic", split="test")
    gb.write_run(tmp_path / "bm25.run", test.labels + test.features[:, 0], test)
    gb.write_qrels(tmp_path / "test.qrels", test)
    gb.write_groups(tmp_path / "test.groups", test)
    command = "groupbias experiment=table2 dataset=synthetic"
    assert f"`{command}`" in code
    tiny = ["bias.betas=[0.8]", "trainer.max_epochs=1", "trainer.threads=1",
            "model.fc_model.sizes=[16]", "model.transformer.d_ff=16",
            "hydra.run.dir='runs/table2/dataset=synthetic'"]  # fmt: skip
    exe = Path(sys.executable).with_name("groupbias")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    res = subprocess.run(
        [str(exe), *command.split()[1:], *tiny], capture_output=True, text=True, env=env,
        timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    namespace: dict = {"__name__": "__example__"}
    exec(compile(code, "help(groupbias)", "exec"), namespace)
    scores, data = namespace["scores"], namespace["data"]
    assert scores.shape == (test.n_items,) and scores.dtype.name == "float64"
    assert namespace["est"].beta_hat_per_query.shape == (data.n_queries,)


def test_help_on_a_trained_ranker_describes_every_public_method():
    """``help(gb.TrainedRanker)``: each public method says what it does (``predict`` once
    had no docstring): what it takes and what it returns."""
    import inspect

    methods = [
        name
        for name, value in vars(gb.TrainedRanker).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, classmethod))
    ]
    assert "predict" in methods
    for name in methods:
        assert inspect.getdoc(getattr(gb.TrainedRanker, name)), name
    doc = inspect.getdoc(gb.TrainedRanker.predict)
    assert "qptr" in doc and "float64" in doc and "n_features" in doc
