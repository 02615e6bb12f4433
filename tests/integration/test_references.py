"""Every dotted name ``groupbias.x.y.Name`` written in the docs (docs/*.md, README.md,
CONTRIBUTING.md) and in the docstrings of groupbias/, data_loaders/ and experiments/ names
something that exists: a module, or an attribute (dataclass fields included) reached from
one. Entry-point groups declared in pyproject.toml are names too. A rename that leaves a
stale reference behind fails here, naming the file and the reference."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: ``groupbias.`` followed by dotted identifiers, not inside a path or a longer name
REFERENCE = re.compile(r"(?<![\w./-])groupbias(?:\.\w+)+")


def _texts():
    docs = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", REPO / "CONTRIBUTING.md"]
    for path in docs:
        if path.is_file():
            yield str(path.relative_to(REPO)), path.read_text()
    for pkg in ("groupbias", "data_loaders", "experiments"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
                if isinstance(node, kinds) and (doc := ast.get_docstring(node, clean=False)):
                    yield f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 1)}", doc


def _has(obj, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    # a dataclass field without a default, or an annotated attribute, is no class attribute
    if dataclasses.is_dataclass(obj) and attr in {f.name for f in dataclasses.fields(obj)}:
        return True
    return isinstance(obj, type) and any(
        attr in getattr(k, "__annotations__", {}) for k in obj.__mro__
    )


def resolves(reference: str) -> bool:
    """True when the longest importable prefix of ``reference`` has the rest as attributes."""
    parts = reference.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not _has(obj, attr):
                return False
            obj = getattr(obj, attr, None)
        return True
    return False


def _entry_point_groups() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return set(project.get("entry-points", {}))


def test_the_resolver_tells_names_from_stale_ones():
    assert resolves("groupbias.estimate.beta_estimate.BetaEstimate.beta_hat_per_query")  # a field
    assert resolves("groupbias.core.memory.release_free_memory")
    assert not resolves("groupbias.app.runs.release_free_memory")
    assert not resolves("groupbias.estimate.ks.Estimator")
    assert not resolves("groupbias.no_such_stage.name")


def test_every_dotted_reference_resolves():
    allowed = _entry_point_groups()
    stale = sorted(
        {
            f"{where.split(':')[0]}: {ref}"
            for where, text in _texts()
            for ref in (m.group(0).rstrip(".") for m in REFERENCE.finditer(text))
            if ref not in allowed and not resolves(ref)
        }
    )
    assert not stale, "\n".join(stale)
