"""The built wheel is self-contained: it carries the Hydra configs and every package the CLI
imports, and ``groupbias`` runs from an installed wheel outside the source tree.

The slow test builds the wheel offline (``pip wheel --no-build-isolation --no-index``) from a
copy of the source tree, installs it with ``--no-deps`` into a fresh virtualenv whose only
view of the dependencies is a ``.pth`` line naming this interpreter's site-packages (plain
directory lines are added to ``sys.path``; the ``.pth`` files inside that directory, such as
the editable-install finder of ``pip install -e``, are not processed), and runs the console
script from an empty working directory with ``PYTHONPATH`` unset.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.reporting.test_every_experiment import answer_prompt

REPO = Path(__file__).resolve().parents[2]
CODE_ROOTS = ("groupbias", "data_loaders", "experiments")
# top-level entries of the checkout that are not needed to build the wheel
_SKIP_TOP = {
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "runs",
    "outputs",
    "multirun",
    "lightning_logs",
    ".pytest_cache",
    ".hypothesis",
    ".cache",
    ".mypy_cache",
    ".ruff_cache",
}
# small demo: (candidate keys, value); the first key the composed config has is overridden
DEMO_SHRINK = [
    (("dataset.params.n_queries",), "60"),
    (("dataset.params.list_size",), "[4,20]"),
    (("trainer.max_epochs", "trainer.lightning.max_epochs"), "2"),
    (("model.fc_model.sizes",), "[16]"),
    (("model.transformer.d_ff",), "16"),
    (("experiment.repetitions",), "1"),
    (("experiment.ltr_betas",), "[0.8]"),
    (("bias.betas",), "[0.8]"),
]


def _setuptools_cfg() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _source_packages() -> set[str]:
    """Dotted names of the directories under the code roots that hold Python files."""
    found = set()
    for root in CODE_ROOTS:
        for py in (REPO / root).rglob("*.py"):
            if "__pycache__" not in py.parts:
                found.add(".".join(py.parent.relative_to(REPO).parts))
    return found


def test_package_list_covers_source_tree():
    """pyproject lists packages explicitly (configs/ is remapped): none may be forgotten."""
    cfg = _setuptools_cfg()
    listed = set(cfg["packages"]) - set(cfg.get("package-dir", {}))
    missing = _source_packages() - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    assert cfg["package-dir"]["groupbias.configs"] == "configs"
    assert (REPO / "configs" / "config.yaml").is_file()


def _demo_overrides() -> list[str]:
    """Overrides that shrink the demo, for the keys this checkout's configs have."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        cfg = compose(config_name="config")
    absent = object()
    out = []
    for keys, value in DEMO_SHRINK:
        key = next(
            (k for k in keys if OmegaConf.select(cfg, k, default=absent) is not absent), None
        )
        if key is not None:
            out.append(f"{key}={value}")
    return out


def _copy_source(dst: Path) -> Path:
    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n == "__pycache__" or n.endswith((".egg-info", ".pyc"))}
        if Path(directory) == REPO:
            skip |= {n for n in names if n in _SKIP_TOP or (REPO / n / "pyvenv.cfg").exists()}
        return skip

    shutil.copytree(REPO, dst, ignore=ignore)
    return dst


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
        f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    )
    return proc


@pytest.mark.soak
@pytest.mark.slow
def test_installed_wheel_runs_outside_source_tree(tmp_path):
    # 1. build offline from a copy (build/ and *.egg-info stay out of the checkout, and stale
    #    build/lib files cannot leak into the wheel)
    src = _copy_source(tmp_path / "src")
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip"]
    offline = ["-q", "--no-deps", "--no-index"]
    _run([*pip, "wheel", *offline, "--no-build-isolation", "-w", dist, src])
    (wheel,) = dist.glob("groupbias-*.whl")

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    want = {
        f"groupbias/configs/{p.relative_to(REPO / 'configs').as_posix()}"
        for p in (REPO / "configs").rglob("*.yaml")
    }
    want |= {
        p.relative_to(REPO).as_posix()
        for root in CODE_ROOTS
        for p in (REPO / root).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    want |= {"groupbias/py.typed", "groupbias/configs/config.yaml"}
    assert not want - names, f"missing from the wheel: {sorted(want - names)}"
    assert not any(n.startswith(("configs/", "tests/")) for n in names)

    # 2. fresh virtualenv; the wheel installed before the dependencies become visible
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    vpy = venv / "bin" / "python"
    _run([*pip, "--python", vpy, "install", *offline, wheel])
    purelib = Path(
        _run(
            [vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env={}
        ).stdout.strip()
    )
    dev_sites = [s for s in site.getsitepackages() if Path(s).is_dir()]
    (purelib / "_groupbias_test_deps.pth").write_text("".join(f"{s}\n" for s in dev_sites))

    # 3. empty working directory, PYTHONPATH unset, the fresh venv first on PATH
    work = tmp_path / "work"
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "GROUPBIAS_RUNS")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONNOUSERSITE"] = "1"

    def in_work(*args: str) -> subprocess.CompletedProcess:
        return _run(list(args), cwd=work, env=env, timeout=300)

    # (a) the installed copy is imported, its configs found, the source tree not on sys.path
    probe = (
        "import os, sys, groupbias, groupbias.app.cli as c\n"
        "print(groupbias.__file__)\n"
        "print(c.CONFIG_DIR)\n"
        "print(any('__editable__' in m for m in sys.modules))\n"
        f"print(any(os.path.realpath(p or '.') == {str(REPO)!r} for p in sys.path))\n"
    )
    out = in_work(str(vpy), "-c", probe).stdout.split("\n")
    pkg_file, config_dir, editable, repo_on_path = (Path(out[0]), Path(out[1]), out[2], out[3])
    assert pkg_file.resolve().is_relative_to(venv.resolve()), pkg_file
    assert config_dir.resolve() == (pkg_file.parent / "configs").resolve()
    assert (config_dir / "config.yaml").is_file()
    assert not pkg_file.resolve().is_relative_to(REPO)
    assert editable == "False" and repo_on_path == "False"

    # (b) the demo (shrunk) through the installed console script
    script = venv / "bin" / "groupbias"
    assert str(vpy) in script.read_text()[:500]  # shebang: the fresh interpreter
    in_work(str(script), *_demo_overrides())
    demo = [
        p for p in (work / "runs" / "demo").rglob("metrics.json") if (p.parent / ".hydra").is_dir()
    ]
    assert len(demo) == 1, sorted(str(p.relative_to(work)) for p in work.rglob("*"))

    # (c) Table 1 on the synthetic dataset
    in_work(str(script), "experiment=table1", "dataset=synthetic")
    assert (work / "runs" / "table1" / "dataset=synthetic" / "metrics.json").is_file()
    assert (work / "runs" / "table1" / "dataset=synthetic" / "table1.md").is_file()

    # (d) every experiment that needs no LLM endpoint, from the installed console script, in a
    #     user's project folder that holds packages of its own named `experiments` and
    #     `data_loaders`, first on sys.path (PYTHONPATH): groupbias imports its own
    #     (groupbias.core.shipped), and the user's are never run
    project = tmp_path / "project"
    for name in ("experiments", "data_loaders"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(f"raise ImportError('user {name}')\n")
    shared = REPO.parent / "shared" / "data"
    user_env = {**env, "PYTHONPATH": str(project)}
    if (shared / "grep-biasir").is_dir():
        user_env["GROUPBIAS_GREP_BIASIR"] = str(shared / "grep-biasir")
        user_env["GROUPBIAS_GENDER_WORDLIST"] = str(
            shared / "rekabsaz-gender" / "wordlist_genderspecific.txt"
        )
    with HTTPServer(host="127.0.0.1", threaded=True) as server:  # the LLM endpoint
        server.expect_request("/v1/chat/completions").respond_with_handler(answer_prompt)
        llm = (
            f"{{base_url: '{server.url_for('/v1')}', model: tiny, concurrency: 2, "
            f"cache_dir: '{tmp_path / 'llm-cache'}'}}"
        )
        for experiment, overrides in EVERY_EXPERIMENT.items():
            needs_text = experiment in TEXT_EXPERIMENTS
            if needs_text and "GROUPBIAS_GREP_BIASIR" not in user_env:
                continue  # Grep-BiasIR absent: the retrieval experiments cannot run
            args = [o.replace("{llm}", llm) for o in overrides]
            _run(
                [script, f"experiment={experiment}", *args], cwd=project, env=user_env, timeout=300
            )
            stored = list((project / "runs" / experiment).rglob("metrics.json"))
            assert stored, f"{experiment}: no metrics.json under {project / 'runs' / experiment}"
        if "GROUPBIAS_GREP_BIASIR" in user_env:
            assert server.log  # gender_labels and fair_qr asked the endpoint


_TINY = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]
_TRAIN = [
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "model.fc_model.sizes=[8]",
    "model.transformer.d_ff=8",
]
_SYNTH_60 = "[{dataset: synthetic, params: {n_queries: 60, list_size: [4,20]}}]"
#: the experiments that read Grep-BiasIR (gender_labels and fair_qr also ask an LLM endpoint:
#: a real HTTP server on 127.0.0.1 answers them)
TEXT_EXPERIMENTS = ("bias_aware_prf", "retrieval_fairness", "gender_labels", "fair_qr")
#: every experiment besides demo and table1 (run above), tiny ({llm}: the local endpoint)
EVERY_EXPERIMENT = {
    "table2": ["experiment.datasets=[synthetic]", "bias.betas=[0.7]", *_TINY, *_TRAIN],
    "impact": ["experiment.setups=listed", "experiment.datasets=[synthetic]",
               "bias.betas=[1.0,0.6]", *_TINY, *_TRAIN],
    "fig7": ["experiment.setups=listed", "experiment.datasets=[synthetic]", *_TINY],
    "ablation_cluster_size": ["experiment.repetitions=1", "experiment.cluster_sizes=[1,10]",
                              *_TINY],
    "ablation_clustering": ["experiment.repetitions=1", "experiment.cluster_sizes=[1,40]",
                            "experiment.beta_stds=[0.3]", *_TINY],
    "estimator_robustness": ["experiment.repetitions=1", "experiment.ratios=[1.0]",
                             "experiment.betas=[0.8]", "experiment.fig9_stds=[0.3]",
                             "experiment.datasets=[synthetic]", *_TINY],
    "theory": ["experiment.n_queries=100", "bias.betas=[1.0,0.8]"],
    "clicks": ["experiment.sessions=[2000]", "experiment.repetitions=1",
               f"experiment.datasets={_SYNTH_60}", *_TRAIN],
    "drift": ["experiment.sessions=20000", "experiment.window=2000",
              "experiment.half_life=1000", "experiment.bins=20",
              f"experiment.datasets={_SYNTH_60}"],
    "bias_aware_prf": ["experiment.lambdas=[0.0,1.0]", "experiment.biases=[tf]",
                       "experiment.bm25.depth=50"],
    "retrieval_fairness": ["experiment.datasets=[grep_biasir]",
                           "experiment.fair_qr.max_iterations=1", "experiment.bm25.depth=50"],
    "gender_labels": ["+experiment.llm={llm}"],
    "fair_qr": ["experiment.datasets=[grep_biasir]", "experiment.fair_qr.max_iterations=1",
                "experiment.llm={llm}", "experiment.bm25.depth=50"],
}  # fmt: skip
