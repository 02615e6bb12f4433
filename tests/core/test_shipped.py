"""groupbias imports its own ``data_loaders`` and ``experiments`` (groupbias.core.shipped),
whatever folder of those names comes first on ``sys.path``; a foreign package of that name
already imported is refused with both paths. Each case runs in a fresh interpreter whose
``sys.path`` starts with a user's project folder holding its own packages of those names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path):
    """A user's folder with its own ``data_loaders`` and ``experiments`` packages that fail
    when imported (so using them instead of ours cannot pass unnoticed)."""
    for name in ("data_loaders", "experiments"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ImportError('the user project {name}')\n"
        )
    return tmp_path


def _python(project: Path, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), str(REPO)])}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True
    )


def test_the_builtin_datasets_come_from_our_loaders(project):
    out = _python(
        project,
        "import groupbias as gb\n"
        "d = gb.load_dataset('synthetic', split='train', n_queries=5)\n"
        "import data_loaders\n"  # now the one groupbias imported
        "print(d.qptr.size > 1)\n"
        "print(data_loaders.__file__)\n",
    )
    assert out.returncode == 0, out.stderr
    n, where = out.stdout.split()
    assert n == "True"
    assert Path(where).resolve() == REPO / "data_loaders" / "__init__.py"


def test_the_experiments_come_from_ours(project):
    out = _python(
        project,
        "from groupbias.core.shipped import import_shipped\n"
        "m = import_shipped('experiments')\n"
        "import experiments.table1 as t\n"
        "print(t.__file__)\n",
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve() == REPO / "experiments" / "table1.py"


def test_a_foreign_package_already_imported_is_refused_naming_both(tmp_path):
    (tmp_path / "data_loaders").mkdir()
    (tmp_path / "data_loaders" / "__init__.py").write_text("MINE = True\n")
    out = _python(
        tmp_path,
        "import data_loaders\n"  # the user's, imported first
        "import groupbias as gb\n"
        "from groupbias.core.errors import ConfigError\n"
        "try:\n"
        "    gb.load_dataset('synthetic', split='train', n_queries=5)\n"
        "except ConfigError as e:\n"
        "    print(e)\n"
        "print(data_loaders.MINE)\n",  # and the user's own stays theirs
    )
    assert out.returncode == 0, out.stderr
    message, mine = out.stdout.strip().splitlines()
    assert message.startswith("data_loaders: a package named 'data_loaders' from ")
    assert str(tmp_path / "data_loaders") in message
    assert str(REPO / "data_loaders") in message
    assert "rename your 'data_loaders' package" in message
    assert mine == "True"
