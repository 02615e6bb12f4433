"""Every fenced block of README.md and docs/*.md runs as written, or is listed here as not
runnable by nature (program output, tables, formulas, config excerpts, signatures), with the
reason; a block that is neither fails, so a new block must run or be listed. A JSON config
excerpt must build the class it configures (:data:`CONFIGS`).

Python blocks run in a fresh namespace with a temporary folder as working directory, holding
the files the documents name (TREC run, qrels and group files, a click log, term lists), and
the data found through the environment variables of docs/datasets.md; a block whose comment
names a `groupbias ...` command reads that command's run, which runs first. Shell blocks are
read line by line: ``make`` targets must exist (running them would start the suite
recursively), benchmark scripts must exist and take the flags given (benchmarks are
measurements: ``make bench``), every ``groupbias`` command line must pass the command's own
check (every job's config composes and builds, no data read; a GPU trainer is checked with
``trainer.accelerator=cpu`` on a machine without CUDA) and ``groupbias-report`` subcommands must
take the flags given. The ``slow`` tests then run the ``groupbias`` and ``groupbias-report``
commands end to end at a tiny scale: with ``GROUPBIAS_DOCS_TINY=1`` (set by the tests) the
overrides of :data:`TINY` for the command's experiment are appended unless the command sets the
key itself (:data:`TINY_PYTHON` for Python blocks), and the run folder is moved to the one the
command as written names, so later commands find the documented paths. Commands on licensed
data that is absent (MSLR, Yahoo!) or on a GPU that is absent are skipped with the reason. An
LLM server a block starts (``vllm serve``, ``ollama serve``) is replaced by a local HTTP server
on 127.0.0.1 that answers the OpenAI chat API.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import trec_fair_root

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))]

#: a block is known by its document and the start of its first line
KEY_CHARS = 30

#: "document: start of the first line" -> why the block is not run
NOT_RUNNABLE = {
    # the layout of folders and files
    "docs/architecture.md: data_loaders/           real f": "the package folders, one line each",
    "docs/data_svmlight.md: <label> qid:<query id> <featur": "a file format",
    "docs/data_svmlight.md: <cache root>/ranking/<key>/{fe": "a folder layout",
    "docs/datasets.md: REGST_NO, NAME, category, sub_": "a CSV header",
    "docs/datasets.md: <root>/2019/fair-TREC-training": "a folder layout",
    "docs/retrieval.md: TextCollection ──BM25Index.sea": "a diagram",
    "docs/ltr.md: input block   x <- InputNorm(x": "pseudo-code of the model",
    # call signatures with `...` for the options
    "docs/fairness_metrics.md: metric(scores, *, qptr, member": "call signatures",
    "docs/metrics.md: metric(scores, labels, *, qptr": "call signatures",
    # formulas
    "docs/fairness_metrics.md: E_g  = Σ_{r ≤ k} v_r · a_{d_r,": "formulas",
    "docs/fairness_metrics.md: p(G_i | q, k) = Σ_{r ≤ k} v_r": "formulas",
    "docs/fairness_metrics.md: ω(d) = 1": "formulas",
    "docs/fairness_metrics.md: Exposure_c = Σ_{r ≤ k, d_r ∈ c": "formulas",
    'docs/fairness_metrics.md: mag^g(d): "tc" M_g(d),  "tf" l': "formulas",
    "docs/metrics.md: DCG@k  = Σ_i w(i) · gain(l_i)": "formulas",
    "docs/metrics.md: U_g = Σ_i w_g(i) · rel_i": "a formula",
    "docs/metrics.md: r = (X_A / X_N) / (U_A / U_N),": "a formula",
    "docs/metrics.md: ε*_i = (1/c) Σ_{r = a+1}^{a+c}": "a formula",
    "docs/metrics.md: Δ(EEL)_q = ‖ [Ẽ_A, Ẽ_N] − [E*_": "a formula",
    # commands on files the reader brings (a BM25 run and the text of Grep-BiasIR):
    # tests/reporting/test_external_runs.py runs the same two commands on such files
    "docs/interop.md: groupbias-report export grep_b": "needs the reader's run and corpus",
    # what the command prints (tests/app/test_progress.py and test_demo.py check it)
    "docs/ltr.md: [groupbias] step 5/7 LTR, full": "the progress lines a run prints",
    "docs/ltr.md: groupbias: warning: this run t": "the warning a long run prints",
    # a benchmark's command followed by the timings it printed
    "docs/fairness_metrics.md: .venv/bin/python benchmarks/fa": "a benchmark and its output",
}

#: "document: start of the first line" -> the test (in tests/integration/) that runs it
RUN_ELSEWHERE = {
    "docs/extending.md: # file: my_extensions.py": "test_extending.py",
    "docs/extending.md: import numpy as np": "test_extending.py",
    "docs/extending.md: # file: top_share.py": "test_extending.py",
    "docs/extending.md: # file: test_top_share.py": "test_extending.py",
    "docs/extending.md: # file: myconfigs/dataset/toy.": "test_extending.py",
    "docs/extending.md: # file: myconfigs/estimator/me": "test_extending.py",
    "docs/extending.md: # @package _global_": "test_extending.py",
    "docs/extending.md: PYTHONPATH=. groupbias --confi": "test_extending.py",
    "README.md: import numpy as np": "test_readme.py",
}

#: with GROUPBIAS_DOCS_TINY=1: experiment -> overrides appended unless the command sets the key
TINY = {
    "table1": ["experiment.datasets=[trec2019]", "bias.betas=[0.8]"],
    "table2": [
        "experiment.datasets=[trec2020]",
        "bias.betas=[0.8]",
        "trainer.max_epochs=1",
        "trainer.threads=1",
        "model.fc_model.sizes=[16]",
        "model.transformer.d_ff=16",
    ],
    "ablation_cluster_size": ["experiment.repetitions=1", "experiment.cluster_sizes=[1,10]"],
    "gender_labels": [],
    "fair_qr": [],
}

#: with GROUPBIAS_DOCS_TINY=1 and a learned-policy evaluation: fewer epochs and samples
TINY_POLICY = ["evaluation.epochs=5", "evaluation.samples=100"]

#: with GROUPBIAS_DOCS_TINY=1: Python block key -> (as written, run as)
TINY_PYTHON = {
    "docs/ltr.md: import functools, torch": [
        ("max_epochs=30", "max_epochs=1"),
        ('precision="bf16-mixed"', 'precision="32-true"'),
    ],
}

#: JSON config excerpts ("document: start of the first line") -> the class they configure
CONFIGS = {'docs/ltr.md: {"fc_model":    {"sizes": [144': "groupbias.ltr.ScorerSpec"}

#: first words of a shell command line, after ``VAR=value`` prefixes
PROGRAMS = (
    "groupbias",
    "groupbias-report",
    "python",
    ".venv/bin/python",
    ".venv/bin/groupbias",
    "/usr/bin/time",
    "make",
    "export",
    "vllm",
    "ollama",
)


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    text: str

    @property
    def key(self) -> str:
        first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
        return f"{self.doc}: {first[:KEY_CHARS].rstrip()}"

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def fenced_blocks() -> list[Block]:
    """Every fenced block of the documents, in order."""
    found = []
    for doc in DOCS:
        lines = (REPO / doc).read_text().split("\n")
        i = 0
        while i < len(lines):
            m = re.match(r"^\s*(`{3,}|~{3,})\s*(\S*)", lines[i])
            if not m:
                i += 1
                continue
            fence, lang = m.groups()
            j = i + 1
            while j < len(lines) and lines[j].strip() != fence:
                j += 1
            found.append(Block(doc, i + 1, lang, "\n".join(lines[i + 1 : j]) + "\n"))
            i = j + 1
    return found


def command_lines(text: str) -> list[list[str]]:
    """The block's commands as argument lists (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n", " ", text)
    return [words for ln in joined.splitlines() if (words := shlex.split(ln, comments=True))]


def _program(words: list[str]) -> str:
    rest = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
    return rest[0] if rest else ""


def kind(block: Block) -> str:
    """python | shell | transcript | config | listed | elsewhere | unclassified"""
    if block.key in NOT_RUNNABLE:
        return "listed"
    if block.key in RUN_ELSEWHERE:
        return "elsewhere"
    if block.lang == "python":
        return "python"
    if block.lang == "json" and block.key in CONFIGS:
        return "config"
    if block.lang == "" and block.key.split(": ", 1)[1].startswith("$ "):
        return "transcript"
    if block.lang in ("", "bash", "sh", "shell"):
        try:
            cmds = command_lines(block.text)
        except ValueError:
            return "unclassified"
        if cmds and all(_program(c) in PROGRAMS for c in cmds):
            return "shell"
    return "unclassified"


BLOCKS = fenced_blocks()


def _of(k: str) -> list[Block]:
    return [b for b in BLOCKS if kind(b) == k]


def test_every_block_is_run_or_listed():
    unclassified = [f"{b.id} ({b.lang or 'untyped'}): {b.key}" for b in _of("unclassified")]
    assert not unclassified, "run these blocks or list them in NOT_RUNNABLE:\n" + "\n".join(
        unclassified
    )
    keys = {b.key for b in BLOCKS}
    stale = [k for k in (*NOT_RUNNABLE, *RUN_ELSEWHERE) if k not in keys]
    assert not stale, f"listed blocks no document holds: {stale}"
    for key, test in RUN_ELSEWHERE.items():
        doc = key.split(": ", 1)[0]
        text = (REPO / "tests" / "integration" / test).read_text()
        assert Path(doc).name in text, f"{test} does not read {doc}"
    assert len(_of("python")) >= 8 and len(_of("shell")) >= 10


# --------------------------------------------------------------------------- the set-up


def _shared_data(monkeypatch) -> None:
    """Point the loaders at ../shared/data where a variable is not set (docs/datasets.md)."""
    for env, rel in (
        ("GROUPBIAS_TREC_FAIR", "trec-fair"),
        ("GROUPBIAS_GREP_BIASIR", "grep-biasir"),
        ("GROUPBIAS_GENDER_WORDLIST", "rekabsaz-gender/wordlist_genderspecific.txt"),
    ):
        path = REPO.parent / "shared" / "data" / rel
        if env not in os.environ and path.exists():
            monkeypatch.setenv(env, str(path))


def _trec_files(folder: Path) -> None:
    """The files docs/interop.md names: three runs, qrels, and groups labelled L / H."""
    import numpy as np

    import groupbias as gb

    data = gb.load_dataset("synthetic", split="test", n_queries=40)
    rng = np.random.default_rng(0)
    for name, noise in (("bm25", 1.0), ("dense", 0.5), ("fair", 2.0)):
        gb.write_run(
            folder / f"{name}.run", data.labels + noise * rng.random(len(data.labels)), data
        )
    gb.write_qrels(folder / "test.qrels", data)
    gb.write_groups(folder / "groups01", data)
    rows = [ln.rsplit(" ", 1) for ln in (folder / "groups01").read_text().splitlines()]
    text = "".join(f"{item} {'L' if g == '1' else 'H'}\n" for item, g in rows)
    (folder / "test.groups").write_text(text)
    _click_log(folder / "my_clicks.parquet")
    (folder / "female.txt").write_text("she\nher\nwomen\n")  # docs/fairness_metrics.md
    (folder / "male.txt").write_text("he\nhis\nmen\n")
    for name in ("results.test", "results.trunc", "qrels.test", "qrels.rel_level"):
        (folder / name).write_bytes((REPO / "tests" / "data" / "trec_eval" / name).read_bytes())


def _click_log(path: Path) -> None:
    """docs/clicks.md's own click log: 200 simulated sessions on the synthetic train split."""
    import numpy as np

    import groupbias as gb
    from groupbias.simulate.clicks import simulate_click_log, write_click_log

    data = gb.load_dataset("synthetic", split="train")
    rel = data.labels / data.label_max
    rng = np.random.default_rng(0)
    log = simulate_click_log(
        rel, data.groups, qptr=data.qptr, logging_scores=rel, n_sessions=200, rng=rng, beta_mean=0.8
    )
    write_click_log(path, log.log)


@pytest.fixture(scope="module")
def shared_runs(tmp_path_factory) -> Path:
    """One runs/ folder for the module: a command run twice (two documents show it) is run
    once, as the second run would only find the first complete."""
    return tmp_path_factory.mktemp("runs")


#: commands run into ``shared_runs`` (per process)
DONE: set[tuple[str, ...]] = set()


@pytest.fixture
def doc_cwd(tmp_path, monkeypatch, shared_runs) -> Path:
    """A fresh working folder holding the files the documents name, data found as documented,
    and the module's runs/."""
    _shared_data(monkeypatch)
    monkeypatch.delenv("GROUPBIAS_RUNS", raising=False)
    monkeypatch.setenv("GROUPBIAS_DOCS_TINY", "1")
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.chdir(tmp_path)
    _trec_files(tmp_path)
    (tmp_path / "runs").symlink_to(shared_runs, target_is_directory=True)
    return tmp_path


# --------------------------------------------------------------------------- Python blocks


#: Python blocks that train a ranker: over a few seconds
SLOW_PYTHON = (
    "docs/ltr.md: import functools, torch",
    "docs/ltr.md: import groupbias as gb",
    "docs/interop.md: # the conditions of the run `g",
)


def _params(blocks: list[Block], slow: tuple[str, ...] = ()) -> list:
    mark = [pytest.mark.slow]
    return [pytest.param(b, id=b.id, marks=mark if b.key in slow else ()) for b in blocks]


@pytest.mark.parametrize("block", _params(_of("python"), SLOW_PYTHON))
def test_python_block_runs(block, doc_cwd, monkeypatch):
    from groupbias.core.registry import METRICS

    if re.search(r"GROUPBIAS_TREC_FAIR|trec20|`groupbias ", block.text) and not trec_fair_root():
        pytest.skip("TREC Fair data absent: set GROUPBIAS_TREC_FAIR")
    METRICS._load_builtins()
    monkeypatch.setattr(METRICS, "_items", dict(METRICS._items))  # a block may register one
    for written in re.findall(r"^#.*`(groupbias [^`]+)`", block.text, flags=re.M):
        _prerequisite(shlex.split(written), doc_cwd)  # the command whose run the block reads
    code = block.text
    for written, run_as in TINY_PYTHON.get(block.key, []):
        assert written in code, f"{block.id}: {written!r} is gone; update TINY_PYTHON"
        code = code.replace(written, run_as)
    namespace: dict = {"__name__": "__doc_block__"}
    exec(compile(code, block.id, "exec"), namespace)
    assert len(namespace) > 2  # it defined or imported something


@pytest.mark.parametrize("block", _of("config"), ids=lambda b: b.id)
def test_config_excerpt_builds(block):
    import importlib

    module, name = CONFIGS[block.key].rsplit(".", 1)
    cfg = json.loads(block.text)
    built = getattr(importlib.import_module(module), name)(**cfg)  # strict: raises on a bad key
    assert type(built).__name__ == name


# --------------------------------------------------------------------------- shell blocks

MODULES = {"groupbias": "groupbias.app.cli", "groupbias-report": "groupbias.reporting.aggregate"}


def commands(block: Block) -> list[tuple[dict, list[str]]]:
    """``(environment prefix, words)`` of every command of a shell block (``&&`` splits)."""
    found = []
    for words in command_lines(block.text):
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            head, words = words[:cut], words[cut + 1 :]
            env = {}
            while head and re.match(r"^[A-Z_]+=", head[0]):
                name, value = head.pop(0).split("=", 1)
                env[name] = value
            if head[:2] == ["/usr/bin/time", "-v"]:
                head = head[2:]
            head[0] = head[0].removeprefix(".venv/bin/")
            found.append((env, head))
    return found


def argv(words: list[str]) -> list[str]:
    """The command run with this checkout's code and interpreter."""
    if words[0] in MODULES:
        return [sys.executable, "-m", MODULES[words[0]], *words[1:]]
    assert words[0] == "python", words
    return [sys.executable, *words[1:]]


def tiny(args: list[str]) -> list[str]:
    """``args`` with :data:`TINY`'s overrides of its experiment (and of a learned-policy
    evaluation: :data:`TINY_POLICY`) that it does not set."""
    if os.environ.get("GROUPBIAS_DOCS_TINY") != "1":
        return args
    exp = next((a.split("=", 1)[1] for a in args if a.startswith("experiment=")), "demo")
    extra = TINY.get(exp, [])
    if {"evaluation=policy", "evaluation=paper_code"} & set(args):
        extra = [*extra, *TINY_POLICY]
    given = {a.lstrip("+").split("=", 1)[0] for a in args}
    if "dataset" in given:  # the command's dataset replaces the experiment's list
        given.add("experiment.datasets")
    return [*args, *(o for o in extra if o.split("=", 1)[0] not in given)]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _flags(words: list[str]) -> list[str]:
    return [w for w in words if w.startswith("--")]


def _check_command(env: dict, words: list[str]) -> None:
    """What a command needs, checked without running it (see the module docstring)."""
    prog = words[0]
    if prog == "make":
        makefile = (REPO / "Makefile").read_text()
        for target in words[1:]:
            assert re.search(rf"^{target}:", makefile, flags=re.M), f"no make target {target}"
    elif prog == "export":
        name, value = words[1].split("=", 1)
        assert name.startswith("GROUPBIAS_") and (REPO / value).exists(), words
    elif prog in ("groupbias", "groupbias-report") and (words[1:2] == ["-h"] or not words[1:]):
        pass
    elif prog == "groupbias":
        from groupbias.app.preflight import check_command_line

        args = words[1:]
        if {"trainer=gpu", "trainer=ddp"} & set(args) and not _cuda():
            args.append("trainer.accelerator=cpu")  # the rest of the command still checked
        assert check_command_line(args) >= 1
    elif prog in ("groupbias-report", "python"):
        script = words[1] if prog == "python" else None
        if script:
            assert (REPO / script).is_file(), script
        sub = [w for w in words[1:2] if w in ("compare", "evaluate")]
        head = argv([prog, *(sub if not script else [str(REPO / script)])])
        res = subprocess.run([*head, "--help"], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        for flag in _flags(words):
            name = re.escape(flag.split("=")[0])
            assert re.search(rf"{name}(?![\w-])", res.stdout), (
                f"{' '.join(words)}: {flag} not in --help"
            )
    else:
        assert prog in ("vllm", "ollama"), words  # an LLM server: a local one in the runs


def _checked_by_a_process(block: Block) -> int:
    """How many commands of the block :func:`_check_command` starts a process or composes
    Hydra configs for (three or more: over a few seconds)."""
    return sum(w[0] in ("groupbias", "groupbias-report", "python") for _, w in commands(block))


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=b.id, marks=[pytest.mark.slow] if _checked_by_a_process(b) >= 3 else [])
        for b in _of("shell")
    ],
)
def test_shell_block_commands_check(block, doc_cwd):
    checked = commands(block)
    assert checked
    for env, words in checked:
        _check_command(env, words)


@pytest.mark.slow  # a fresh groupbias process
def test_transcript_prints_what_the_doc_shows(doc_cwd):
    for block in _of("transcript"):
        lines = block.text.strip().splitlines()
        res = subprocess.run(
            argv(shlex.split(lines[0][2:])), capture_output=True, text=True, timeout=300
        )
        shown = (res.stdout + res.stderr).strip().splitlines()
        assert res.returncode != 0 or not res.stderr
        assert shown[: len(lines) - 1] == lines[1:], block.id


# --------------------------------------------------------------------------- the runs


def _llm_answer(request):
    """An OpenAI-compatible chat answer: a gender label for a document, else keywords."""
    from werkzeug import Response

    prompt = request.get_json()["messages"][-1]["content"]
    if "Document: " in prompt:
        words = set(prompt.rsplit("Document: ", 1)[1].lower().split())
        label = (
            "Female" if words & {"she", "her"} else "Male" if words & {"he", "his"} else "Neutral"
        )
    else:
        label = "Refined keywords: fair ranking exposure"
    body = {"choices": [{"message": {"content": label}}]}
    return Response(json.dumps(body), content_type="application/json")


def _absent(args: list[str], env: dict) -> str | None:
    """Why a command cannot run here (licensed data or a GPU absent), else None."""
    for name, var in (("mslr", "GROUPBIAS_MSLR"), ("yahoo", "GROUPBIAS_YAHOO")):
        if f"dataset={name}" in args and var not in env:
            return f"dataset={name}: set {var}"
    if ({"trainer=gpu", "trainer=ddp"} & set(args)) and not _cuda():
        return "a GPU trainer without CUDA"
    if trec_fair_root() is None:
        return "TREC Fair data absent: set GROUPBIAS_TREC_FAIR"
    return None


def _as_written(runs: Path, written: list[str], ran: list[str]) -> None:
    """Move a tiny run's folder to the one the command as written names, so that the block's
    later commands find the paths the document shows (sweeps keep their folders)."""
    from groupbias.app.preflight import run_dirname

    exp = next(a.split("=", 1)[1] for a in written if a.startswith("experiment="))
    src, dst = runs / exp / run_dirname(ran), runs / exp / run_dirname(written)
    if "-m" in written or src == dst:
        return
    dst.mkdir(parents=True, exist_ok=True)
    for child in src.iterdir():
        child.rename(dst / child.name)
    src.rmdir()


def _run_block(block: Block, cwd: Path, server) -> list[str]:
    """Run the block's groupbias and groupbias-report commands; the reasons of those skipped."""
    env, skipped = dict(os.environ), []
    for prefix, words in commands(block):
        prog, args = words[0], words[1:]
        if prog == "export":
            name, value = args[0].split("=", 1)
            env[name] = str((REPO / value).resolve())  # the documents run from the checkout
        if prog not in MODULES:
            continue  # make targets, benchmarks and LLM servers: checked above, or the server
        args = [re.sub(r"http://127\.0\.0\.1:\d+/v1", server.url_for("/v1"), a) for a in args]
        reason = _absent(args, env) if prog == "groupbias" else None
        if reason:
            skipped.append(f"{' '.join(words)}: {reason}")
            continue
        _run([prog, *args], cwd, {**env, **prefix})
    return skipped


def _run(words: list[str], cwd: Path, env: dict) -> None:
    """Run a groupbias or groupbias-report command (groupbias ones tiny, once per module)."""
    prog, args = words[0], words[1:]
    ran = tiny(args) if prog == "groupbias" else args
    data = str(Path(env.get("GROUPBIAS_TREC_FAIR", "-")).resolve())
    if prog == "groupbias" and (key := (*words, data)) in DONE:
        return
    res = subprocess.run(argv([prog, *ran]), env=env, cwd=cwd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(words)}\n{res.stderr[-3000:]}"
    if prog == "groupbias":
        _as_written(cwd / "runs", args, ran)
        DONE.add(key)


def _prerequisite(words: list[str], cwd: Path) -> None:
    """Run the command a Python block names as the source of what it reads."""
    _run(words, cwd, dict(os.environ))


def _runs_something(block: Block) -> bool:
    return any(words[0] in MODULES for _, words in commands(block))


@pytest.mark.slow
@pytest.mark.parametrize(
    "block", [b for b in _of("shell") if _runs_something(b)], ids=lambda b: b.id
)
def test_shell_block_runs_at_a_tiny_scale(block, doc_cwd):
    from pytest_httpserver import HTTPServer

    with HTTPServer(host="127.0.0.1", threaded=True) as server:
        server.expect_request("/v1/chat/completions").respond_with_handler(_llm_answer)
        skipped = _run_block(block, doc_cwd, server)
    if not skipped:  # the run folders the block's comments name are there
        for path in re.findall(r"#[^\n]*?\b(runs/[^\s,;)]+)", block.text):
            assert (doc_cwd / path).is_dir(), f"{block.id}: {path} not written"
    if skipped and len(skipped) == len([w for _, w in commands(block) if w[0] in MODULES]):
        pytest.skip("; ".join(skipped))
