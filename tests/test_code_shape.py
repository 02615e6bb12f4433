"""The shape of the code: the core never imports the loaders, no module reaches into another's
private names, validation is written once, and no function in groupbias/ runs over 60 lines
without a reason written beside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("groupbias", "data_loaders", "experiments")
MAX_LINES = 60
#: a comment on the ``def`` line or in the three lines above it: ``# long: <reason>``
REASON = re.compile(r"#\s*long:\s*\S")


def _modules(*packages):
    for pkg in packages:
        for path in sorted((REPO / pkg).rglob("*.py")):
            yield path, ast.parse(path.read_text(), filename=str(path))


def test_core_never_imports_the_loaders_or_experiments():
    bad = []
    for path, tree in _modules("groupbias"):
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            bad += [
                f"{path.relative_to(REPO)}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] in ("data_loaders", "experiments")
            ]
    assert not bad


def test_no_module_imports_private_names_of_another():
    bad = []
    for path, tree in _modules(*PACKAGES, "tests", "benchmarks"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                bad += [
                    f"{path.relative_to(REPO)}:{node.lineno} {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not bad


def test_one_exception_root():
    import groupbias.core.errors as E

    ours = [
        cls
        for cls in vars(E).values()
        if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == E.__name__
    ]
    errors = {c for c in ours if not issubclass(c, Warning)}
    warns = {c for c in ours if issubclass(c, Warning)}
    assert errors and all(issubclass(c, E.GroupBiasError) for c in errors)
    # and one warning root, which the command always shows
    assert warns and all(issubclass(c, E.GroupBiasWarning) for c in warns)
    assert issubclass(E.AssumptionWarning, E.GroupBiasWarning)
    for path, tree in _modules(*PACKAGES):
        if path.name == "errors.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", getattr(b, "attr", ""))
                in ("Exception", "ValueError", "Warning", "UserWarning", "RuntimeWarning")
                for b in node.bases
            ):
                # private control-flow signals inside one module are fine; errors users see
                # derive from GroupBiasError, warnings from GroupBiasWarning
                assert node.name.startswith("_"), f"{path.name}: {node.name}"


def test_validation_helpers_are_written_once():
    helper = re.compile(r"^\s*def _(vector|choice|real|number|check_positive|generator)\(", re.M)
    idiom = re.compile(r"isinstance\(\w+, bool\) or not isinstance\(\w+, (numbers|int|\()")
    bad = []
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            text = path.read_text()
            bad += [
                f"{path.relative_to(REPO)}: {m.group(0).strip()}"
                for m in [*helper.finditer(text), *idiom.finditer(text)]
            ]
    assert not bad


def test_no_long_function_without_a_reason():
    long = []
    for path, tree in _modules("groupbias"):
        lines = path.read_text().splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            n = node.end_lineno - first + 1
            around = " ".join(lines[max(first - 4, 0) : node.lineno])
            if n > MAX_LINES and not REASON.search(around):
                long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "\n".join(long)


def test_the_assumption_check_is_handed_its_simulation():
    # the estimate stage never simulates: the pipelines run the null simulation and hand it
    # to Diagnostics.check, whose module may name simulate's types for the type checker only
    path = REPO / "groupbias" / "estimate" / "diagnostics.py"
    tree = ast.parse(path.read_text())
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            typing_only |= {id(n) for n in ast.walk(node)}
    runtime = [
        f"{node.lineno}: {node.module}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and "simulate" in (node.module or "")
        and id(node) not in typing_only
    ]
    assert not runtime
