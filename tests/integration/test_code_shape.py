"""The shape of the code: one folder per stage (the layering itself is import-linter's
contract in pyproject.toml, run by `make lint`) and one test folder per stage, the flat API
kept, one function per metric, no module reaching into another's private names, no two
modules importing each other, validation written once, and no function over 60 lines or
module over 700 lines without a reason written beside it, in every package of the repository
(the library, the dataset loaders, the paper's artifacts and the maintainers' tools)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: every folder of our code the shape rules cover: the library, the dataset loaders, the
#: paper's artifacts and the maintainers' tools
PACKAGES = ("groupbias", "data_loaders", "experiments", "tools")
MAX_LINES = 60
#: a comment on the ``def`` line or in the three lines above it: ``# long: <reason>``
REASON = re.compile(r"#\s*long:\s*\S")


def _modules(*packages):
    for pkg in packages:
        for path in sorted((REPO / pkg).rglob("*.py")):
            yield path, ast.parse(path.read_text(), filename=str(path))


#: the flat API of ``import groupbias as gb`` (``evaluate_per_query`` became
#: ``gb.evaluate(..., reduce=None)``; every other name is kept, TREC interop added)
PUBLIC_NAMES = {
    "BetaEstimate", "BuiltinGrouping", "CalibratedKSEstimator", "ConfigError", "DataError",
    "DataFormatError", "DatasetInfo", "DatasetSpec", "Estimator", "GroupBias", "GroupBiasError",
    "GroupingError", "KSEstimator", "MissingFilesError", "ParameterError", "QueryView",
    "RankingData", "ShrinkageEstimator", "Simulation", "attractiveness_from_clicks",
    "bootstrap_interval", "correct_with_estimate", "draw_query_beta", "estimate_beta",
    "evaluate", "fairness", "ips_correct", "ks_curves", "load_dataset", "metrics",
    "register_dataset", "registry", "relevance_from_labels", "simulate_attractiveness",
    "simulate_clicks", "simulate_group_bias", "theory",
    # TREC files and external runs (docs/interop.md)
    "GroupFile", "Qrels", "TrecRun", "item_ids_of", "read_groups", "read_qrels", "read_run",
    "write_groups", "write_qrels", "write_run", "evaluate_run",
    # trained rankers (groupbias.ltr.train, imported on first use: docs/ltr.md)
    "TrainedRanker", "load_ranker", "train_ranker",
    # results as DataFrames (groupbias.reporting.frames, imported on first use)
    "load_results", "per_query_results",
}  # fmt: skip
#: the stages, in pipeline order (pyproject's import-linter contract checks the layering;
#: docs/architecture.md and CONTRIBUTING.md list them)
STAGES = (
    "core", "_fast", "data", "simulate", "estimate", "rank", "retrieval", "evaluation", "ltr",
    "pipelines", "app", "reporting",
)  # fmt: skip
#: test folders that are not a stage: the dataset loaders' tests and the cross-stage suites
OTHER_TEST_DIRS = ("loaders", "integration")


def test_the_flat_api_keeps_its_names():
    import groupbias as gb

    assert set(gb.__all__) == PUBLIC_NAMES
    assert all(hasattr(gb, name) for name in gb.__all__)


def test_importing_the_flat_api_loads_no_torch():
    code = "import sys, groupbias; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_package_is_one_folder_per_stage():
    tracked = subprocess.run(
        ["git", "ls-files", "groupbias"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {Path(p).parts[1] for p in tracked}
    packages = top - {"__init__.py", "py.typed"}
    assert packages == set(STAGES), (
        f"not a stage: {sorted(packages - set(STAGES))}; "
        f"missing stage: {sorted(set(STAGES) - packages)}"
    )


def test_the_tests_are_one_folder_per_stage():
    """tests/<stage>/ mirrors groupbias/<stage>/; anything else is a loader or cross-stage
    suite."""
    tracked = subprocess.run(
        ["git", "ls-files", "tests"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {Path(p).parts[1] for p in tracked if len(Path(p).parts) > 2}
    assert folders - {*STAGES, *OTHER_TEST_DIRS} == set()


def test_the_layers_contract_lists_the_stages_in_order():
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["type"] == "layers")["layers"]
    assert layers == [f"groupbias.{s}" for s in reversed(STAGES)]


#: a module over this many lines states why at its top: ``# long: <reason>`` in the first 40
MAX_MODULE_LINES = 700


def test_no_long_module_without_a_reason():
    long = []
    for path in sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")):
        lines = path.read_text().splitlines()
        if len(lines) > MAX_MODULE_LINES and not REASON.search("\n".join(lines[:40])):
            long.append(f"{path.relative_to(REPO)} ({len(lines)} lines)")
    assert not long, "\n".join(long)


def test_one_public_function_per_metric():
    """No ``*_per_query`` twin and no one-line mean wrapper in the evaluation package: each
    metric is one function whose ``reduce`` says what comes back."""
    twins, wrappers = [], []
    for path, tree in _modules("groupbias/evaluation"):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_per_query"):
                twins.append(f"{path.name}:{node.lineno} {node.name}")
            if (
                isinstance(node, ast.FunctionDef)
                and not node.name.startswith("_")
                and len(node.body) <= 2
                and "nanmean" in ast.unparse(node.body[-1])
            ):
                wrappers.append(f"{path.name}:{node.lineno} {node.name}")
    assert not twins and not wrappers


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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(name: str, path: Path, tree: ast.Module, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``tree`` imports anywhere (top level, inside functions,
    under ``TYPE_CHECKING``), relative imports resolved; ``from pkg import sub`` counts as
    importing the submodule ``pkg.sub`` (a name of ``pkg``'s ``__init__``: ``pkg``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # a name inside a module: that module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def test_no_two_modules_import_each_other():
    """Not even lazily: a function-level import that closes a cycle still ties the two
    modules together (the shared piece belongs in a third module both can import)."""
    trees = {_module_name(path): (path, tree) for path, tree in _modules(*PACKAGES)}
    known = set(trees)
    imports = {n: _imported_modules(n, p, t, known) for n, (p, t) in trees.items()}
    pairs = sorted(
        f"{a} <-> {b}"
        for a, targets in imports.items()
        for b in targets
        if a < b and a in imports[b]
    )
    assert not pairs, "\n".join(pairs)


def test_the_import_resolution_sees_relative_and_lazy_imports():
    known = {"pkg", "pkg.a", "pkg.sub", "pkg.sub.b"}
    tree = ast.parse(
        "from . import a\n"
        "def f():\n"
        "    from ..a import name\n"
        "    import pkg.sub.b.thing\n"
        "    from .. import helper\n"
    )
    got = _imported_modules("pkg.sub.c", REPO / "pkg" / "sub" / "c.py", tree, known)
    assert got == {"pkg.sub", "pkg.a", "pkg.sub.b", "pkg"}
    init = ast.parse("from .a import x\nfrom . import sub\n")
    assert _imported_modules("pkg", REPO / "pkg" / "__init__.py", init, known) == {
        "pkg.a",
        "pkg.sub",
    }


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


def test_the_shape_rules_cover_every_package_of_the_repository():
    """A new top-level package (a folder with an ``__init__.py``) joins PACKAGES, so that the
    size, import and exception rules reach it too."""
    tracked = subprocess.run(
        ["git", "ls-files", "*/__init__.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {Path(p).parts[0] for p in tracked if len(Path(p).parts) == 2} == set(PACKAGES)


def test_no_long_function_without_a_reason():
    long = []
    for path, tree in _modules(*PACKAGES):
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
