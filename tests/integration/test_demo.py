"""The first five minutes: the demo through the real command prints short lines of its own
only (no Lightning banner, no dependency notice, our warnings shown), its figure has one panel
per metric and regime with full information, biased and corrected, and the README opens with
that figure."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from experiments.demo import FIGURE, FIGURE_TITLE, Demo

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"
#: a shrunk demo: 60 queries, 2-epoch rankers, 2 repetitions, β = 1.0 and 0.6 in the LTR part
TINY = [
    "dataset.params.n_queries=60",
    "dataset.params.list_size=[4,20]",
    "trainer.max_epochs=2",
    "model.fc_model.sizes=[16]",
    "model.transformer.d_ff=16",
    "experiment.repetitions=2",
    "experiment.ltr_betas=[1.0,0.6]",
    "bias.betas=[1.0,0.8,0.6]",
]
THIRD_PARTY = re.compile(r"lightning|GPU available|TPU available|💡|litlogger|Warning:", re.I)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The shrunk demo through the real command, with a plugin that warns once: the
    completed process and the folder it wrote (runs/demo, as plain `groupbias` does)."""
    tmp_path = tmp_path_factory.mktemp("demo")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "warns_once.py").write_text(
        "import warnings\n"
        "from groupbias.core.errors import GroupBiasWarning\n"
        "warnings.warn('an estimator assumption does not hold', GroupBiasWarning)\n"
    )
    path = os.pathsep.join(filter(None, [str(plugins), os.environ.get("PYTHONPATH")]))
    res = subprocess.run(
        [
            str(Path(sys.executable).with_name("groupbias")),
            *TINY,
            f"paths.runs={tmp_path / 'runs'}",
            "hydra.run.dir=runs/demo",  # the folder plain `groupbias` writes to
            "+plugins=[warns_once]",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res, tmp_path / "runs" / "demo"


@pytest.mark.slow  # demo_run: the shrunk demo's command, about 9 s
def test_demo_command_prints_short_lines_of_its_own_and_our_warnings(demo_run):
    res, demo_dir = demo_run
    out = res.stdout.splitlines()
    assert max(len(s) for s in out) <= 100, max(out, key=len)
    assert not [s for s in out if THIRD_PARTY.search(s)]
    steps = [s for s in out if s.startswith("[groupbias] step ")]
    # one line per step with n/total and its time: full information and 3 β (tabular), full
    # and 2 β (LTR); the time left after every step but the last
    assert [s.split()[2] for s in steps] == [f"{n}/7" for n in range(1, 8)], steps
    # (the calibrated model's until a ranker's epoch is measured, and said to be)
    left = r"(; (about|roughly) \S+ (s|min|h) left)"
    assert all(re.search(rf": \d+\.\d s{left}?$", s) for s in steps), steps
    assert "left" in steps[0] and "left" not in steps[-1]
    assert "[groupbias] step 6/7 LTR, β = 1.0 (2 rankers)" in res.stdout  # biased = full at β = 1
    assert "── β = 0.6 ──" in res.stdout and "NDCG@10 ↑" in res.stdout
    # stderr: our warnings (the plugin's, and any the estimator's diagnostics raise on this
    # tiny dataset), one line each, and nothing else
    err = res.stderr.splitlines()
    assert "groupbias: warning: an estimator assumption does not hold" in err
    assert all(s.startswith("groupbias: warning") for s in err), err
    assert "this run trains" not in res.stderr  # far below warn_after_s: no warning of length

    (metrics,) = demo_dir.rglob("metrics.json")
    run_dir = metrics.parent
    for name in (f"{FIGURE}.png", f"{FIGURE}.pdf", "tabular.md", "ltr.csv", "ltr.tex"):
        assert (run_dir / name).is_file(), name
    assert "β = 0.6 / NDCG@10 ↑ / B" in (run_dir / "tabular.md").read_text()
    assert Image.open(run_dir / f"{FIGURE}.png").info["Title"].startswith(FIGURE_TITLE)
    _check_figure(json.loads(metrics.read_text())["records"])


@pytest.mark.slow  # demo_run: the shrunk demo's command, about 9 s
def test_demo_tables_and_figure_show_the_same_numbers(demo_run):
    """Every table cell is the mean over the repetitions that the figure draws at that β,
    its ± the figure's band; the printed legend names every column."""
    res, demo_dir = demo_run
    (metrics,) = demo_dir.rglob("metrics.json")
    records = json.loads(metrics.read_text())["records"]
    demo = Demo(repetitions=2, ltr_betas=[1.0, 0.6])
    fig = demo.figure(records)
    panels = {(ax.get_title().split(":")[0], ax.get_title().split(": ")[1]): ax for ax in fig.axes}
    checked = 0
    for regime, table in zip(("tabular regime", "LTR regime"), demo.tables(records)):
        numbers = table.attrs["numbers"]
        for _, cell in numbers[
            numbers["metric"].isin(["ndcg@10", "rho_dtr", "delta_eel"])
        ].iterrows():
            label = {"ndcg@10": "NDCG@10 ↑", "rho_dtr": "ρ(DTR) ↑", "delta_eel": "Δ(EEL) ↓"}
            ax = panels[(regime, label[cell["metric"]])]
            line = {ln.get_label(): ln for ln in ax.get_lines()}
            name = {"full": "full information"}.get(cell["condition"], cell["condition"])
            xs, ys = list(line[name].get_xdata()), line[name].get_ydata()
            x = 0.6 if cell["beta"] is None or np.isnan(cell["beta"]) else cell["beta"]
            assert ys[xs.index(x)] == pytest.approx(cell["value"], abs=1e-12)
            assert cell["n"] == 2 and np.isfinite(cell["sd"])
            checked += 1
    assert checked >= 12
    assert "mean over 2 repetitions (or seeds); ± s.d. in the saved tables" in " ".join(
        res.stdout.split()
    )
    assert "null β̂ the same estimator on data simulated without bias" in " ".join(
        res.stdout.split()
    )


@pytest.mark.slow  # demo_run: the shrunk demo's command, about 9 s
def test_report_aggregates_the_demo_folder(demo_run, tmp_path):
    """`groupbias-report runs/demo`: the repetitions become mean ± s.d. with n (the demo's
    own numbers), numbers in records.parquet and summary.parquet, tables as views."""
    import pandas as pd

    from groupbias.reporting.aggregate import main as report_main

    _, demo_dir = demo_run
    assert report_main([str(demo_dir), "--out", str(tmp_path)]) == 0
    records = pd.read_parquet(tmp_path / "records.parquet")
    summary = pd.read_parquet(tmp_path / "summary.parquet")
    raw = json.loads(next(demo_dir.rglob("metrics.json")).read_text())["records"]
    assert len(records) == len(raw) and set(records["repetition"]) == {0, 1}
    want = [
        r["value"]
        for r in raw
        if (r["regime"], r["metric"], r["condition"], r["beta"])
        == ("ltr", "rho_dtr", "corrected", 0.6)
    ]
    got = summary[
        (summary["regime"] == "ltr")
        & (summary["metric"] == "rho_dtr")
        & (summary["condition"] == "corrected")
        & (summary["beta"] == 0.6)
    ]
    assert len(got) == 1 and got["n"].iloc[0] == 2
    assert got["mean"].iloc[0] == pytest.approx(np.mean(want), abs=1e-12)
    assert got["sd"].iloc[0] == pytest.approx(np.std(want, ddof=1), abs=1e-12)
    md = (tmp_path / "table_ltr.md").read_text()
    assert f"{np.mean(want):.3f} ± {np.std(want, ddof=1):.3f}" in md
    assert (tmp_path / "table_tabular.tex").is_file() and (tmp_path / "summary.md").is_file()


def _on_a_terminal(args, cwd: Path, err: Path) -> tuple[int, str]:
    """Run the command with standard output on a pseudo-terminal of 100 × 24 (stderr into
    ``err``): its exit status and everything it drew."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with open(err, "w") as stderr:
        proc = subprocess.Popen(args, cwd=cwd, stdout=slave, stderr=stderr, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=600), out.decode(errors="replace")


@pytest.mark.slow  # the shrunk demo's command on a terminal, about 9 s
@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_on_a_terminal_the_run_draws_its_bar_of_steps_and_warns_when_long(tmp_path):
    """A live bar of the whole run (n/7 steps) with Lightning's bar of each ranker under it,
    the step lines above; ``warn_after_s=0`` makes even this run warn of its length first."""
    exe = str(Path(sys.executable).with_name("groupbias"))
    args = [exe, *TINY, f"paths.runs={tmp_path / 'runs'}", "warn_after_s=0"]
    code, out = _on_a_terminal(args, tmp_path, tmp_path / "err.txt")
    err = (tmp_path / "err.txt").read_text()
    assert code == 0, err[-3000:]
    assert "groupbias demo: 7/7 steps |" in out and "groupbias demo: 0/7 steps |" in out
    assert "Epoch 1:" in out  # Lightning's bar of a ranker (2 epochs), inside the run's
    assert "[groupbias] step 7/7 LTR, β = 0.6 (4 rankers): " in out
    assert "Traceback" not in out + err
    assert "groupbias: warning: this run trains 8 rankers × 2 epochs on 48 queries" in err


def _check_figure(records):
    fig = Demo().figure(records)
    assert len(fig.axes) == 6  # NDCG@10, ρ(DTR), Δ(EEL) × tabular, LTR
    for ax in fig.axes:
        labels = sorted(line.get_label() for line in ax.get_lines())
        assert labels == ["biased", "corrected", "full information"], ax.get_title()
    tab_ndcg, ltr_ndcg = fig.axes[0], fig.axes[3]
    assert "tabular" in tab_ndcg.get_title() and "NDCG@10" in tab_ndcg.get_title()
    assert list(tab_ndcg.get_lines()[1].get_xdata()) == [1.0, 0.8, 0.6]
    assert list(ltr_ndcg.get_lines()[1].get_xdata()) == [1.0, 0.6]
    # tabular full information is the truth: NDCG@10 = 1; at β = 1 biased = full information
    lines = {line.get_label(): line for line in tab_ndcg.get_lines()}
    assert np.allclose(lines["full information"].get_ydata(), 1.0)
    assert np.isclose(lines["biased"].get_ydata()[0], 1.0)
    lines = {line.get_label(): line for line in ltr_ndcg.get_lines()}
    assert np.isclose(lines["biased"].get_ydata()[0], lines["full information"].get_ydata()[0])


def test_at_beta_one_the_biased_labels_are_the_full_information_ones():
    """Why the demo does not train a biased ranker at β = 1: its labels are the true ones."""
    from hydra import compose, initialize_config_dir

    from experiments.common import Entry, load, rng_for
    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.config import build_setup
    from groupbias.pipelines.ltr import training_labels

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=TINY[:2])
    setup, _ = build_setup(cfg)
    splits = load(Entry(setup.dataset, setup.grouping, "dataset"))
    for beta, same in ((1.0, True), (0.9, False)):
        labels, vlabels, *_ = training_labels(
            splits,
            beta=beta,
            bias=setup.bias,
            estimator=setup.estimator,
            rng=rng_for(0, "t"),
            beta_std=0.0,
        )
        for lab in (labels, vlabels):
            assert np.array_equal(lab["biased"], lab["full"]) is same


def test_readme_opens_with_the_demo_figure():
    readme = (REPO / "README.md").read_text()
    first = re.search(r"!\[[^\]]*\]\(([^)\s]+)\)", readme)
    assert first is not None and first.group(1) == f"docs/figures/{FIGURE}.png"
    assert first.start() < readme.index("\n## ")  # above the first section
    png = REPO / first.group(1)
    assert png.read_bytes()[:8] == PNG
    title = Image.open(png).info["Title"]  # written by the demo (save_figure)
    assert title.startswith(f"{FIGURE_TITLE} (synthetic data; mean ± s.d. over 3 repetitions")
