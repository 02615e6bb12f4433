"""What the ``groupbias`` command prints: dependencies' deprecation notices are silenced,
groupbias's own warnings always show, in one line on stderr."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from groupbias.app.cli import configure_warnings
from groupbias.core.errors import GroupBiasWarning


class AssumptionWarning(GroupBiasWarning):
    """A subclass, as a module of groupbias may define one."""


def _emit(category, message, module):
    warnings.warn_explicit(message, category, f"/{module.replace('.', '/')}.py", 7, module=module)


def test_dependency_notices_are_silenced_and_ours_are_not():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # a setting that shows everything
        configure_warnings()
        _emit(FutureWarning, "LeafSpec is deprecated", "pytorch_lightning.utilities._pytree")
        _emit(DeprecationWarning, "old torch api", "torch.utils._pytree")
        _emit(PendingDeprecationWarning, "hydra will change", "hydra.core.utils")
        # the same categories raised in our own code stay visible: we have to fix those
        _emit(FutureWarning, "our own future change", "groupbias.evaluation.metrics")
        # a dependency's other warnings are not touched
        _emit(UserWarning, "a user warning from lightning", "pytorch_lightning.trainer")
    assert [str(w.message) for w in shown] == [
        "our own future change",
        "a user warning from lightning",
    ]


def test_our_warnings_show_as_one_line_even_where_warnings_are_ignored(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. PYTHONWARNINGS=ignore
        configure_warnings()
        warnings.warn("β̂ rests on too few affected items", GroupBiasWarning, stacklevel=1)
        warnings.warn("the KS minimum is flat", AssumptionWarning, stacklevel=1)
        warnings.warn("not ours", UserWarning, stacklevel=1)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "groupbias: warning: β̂ rests on too few affected items",
        "groupbias: warning (AssumptionWarning): the KS minimum is flat",
    ]


def test_help_lists_experiments_datasets_and_the_most_used_keys():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.usage import COMMON_KEYS, help_text

    text = help_text(CONFIG_DIR)
    lines = text.splitlines()
    assert max(len(s) for s in lines) <= 100
    configs = Path(CONFIG_DIR)
    for group in ("experiment", "dataset"):
        names = sorted(p.stem for p in (configs / group).glob("*.yaml"))
        assert len(names) >= 8
        for name in names:  # each option is a row: its name, then what it is
            assert any(re.match(rf"  {name} +\S", s) for s in lines), name
    assert re.search(r"  synthetic +Embedded synthetic LTR data \(no download\)", text)
    assert re.search(r"  mslr +MSLR-WEB30K .*\n.*\[GROUPBIAS_MSLR\]", text)
    assert "  table1                  Table 1: tabular regime" in text
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config")
    absent = object()
    for key, _ in COMMON_KEYS:  # every key named exists, and the value shown is the real one
        value = OmegaConf.select(cfg, key, default=absent)
        assert value is not absent, key
    assert "  seed=0 " in text and f"  trainer.max_epochs={cfg.trainer.max_epochs} " in text


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_help_through_the_command():
    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.usage import help_text

    exe = Path(sys.executable).with_name("groupbias")
    procs = [  # the three commands at once: each is mostly the interpreter's start
        subprocess.Popen(
            [str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for args in (["--help"], ["help"], ["experiment=table1", "-h"])
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        assert out == help_text(CONFIG_DIR)
        assert "Powered by Hydra" not in out


def test_verbose_lets_the_console_handler_show_info_lines(tmp_path):
    import logging

    from groupbias.app.cli import show_info_on_console

    root = logging.getLogger()
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    logfile = logging.FileHandler(tmp_path / "cli.log")
    logfile.setLevel(logging.WARNING)
    root.addHandler(console)
    root.addHandler(logfile)
    try:
        show_info_on_console()
        assert console.level == logging.INFO
        assert logfile.level == logging.WARNING  # the log file keeps its own setting
    finally:
        root.removeHandler(console)
        root.removeHandler(logfile)
        logfile.close()


def _parser_texts(argv_list):
    """The description and epilog of every ``groupbias-report`` parser, from its --help."""
    import contextlib
    import io

    from groupbias.reporting.aggregate import main

    texts = {}
    for argv in argv_list:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        # the paragraphs between the usage and the arguments, and the last one (the epilog)
        paragraphs = [p for p in out.getvalue().strip().split("\n\n") if p.strip()]
        for p in paragraphs[1:]:
            if not p.lstrip().startswith(("positional arguments", "options", "optional")):
                texts[f"{' '.join(argv)}: {p.split()[0]}"] = " ".join(p.split())
    return texts


def test_every_help_text_ends_in_a_full_sentence():
    # before: `groupbias --help` listed text_files as "... group_label. For example" and
    # `groupbias-report --help` said "... into tidy results, tables and"
    from groupbias.app.cli import CONFIG_DIR
    from groupbias.app.usage import option_rows

    texts = {}
    for group in ("experiment", "dataset"):
        for name, text in option_rows(Path(CONFIG_DIR), group):
            texts[f"{group}={name}"] = re.sub(r" \[GROUPBIAS_[A-Z_]+\]$", "", text)
    texts.update(
        _parser_texts(
            [["--help"], ["evaluate", "--help"], ["compare", "--help"], ["export", "--help"]]
        )
    )
    assert len(texts) > 20
    unfinished = {k: v[-40:] for k, v in texts.items() if not re.search(r"[.!?]$", v)}
    assert not unfinished


@pytest.mark.parametrize(
    "before, shown",
    [
        # a step line cut short (once: "…: runninggroupbias: interrupted")
        ("[groupbias] step 1/6 x: running", "[groupbias] step 1/6 x: running\n"),
        # a bar drawn over its line with \r
        (
            "\rgroupbias demo: 3/7 steps |███   | 00:12",
            "\rgroupbias demo: 3/7 steps |███   | 00:12\n",
        ),
        # a finished line, and a line a bar cleared: nothing added
        ("[groupbias] step 1/6 x: done\n", "[groupbias] step 1/6 x: done\n"),
        ("\r" + " " * 40 + "\r", "\r" + " " * 40 + "\r"),
    ],
)
def test_the_interrupted_message_starts_a_line_of_its_own(monkeypatch, before, shown):
    """On a terminal stdout and stderr share the screen: after Ctrl-C the one line
    ``groupbias: interrupted`` starts a line of its own whatever stdout left mid-line, and
    no empty line is added where nothing was."""
    import io

    from groupbias.app.cli import QuietPipe, report_failure

    screen = io.StringIO()
    monkeypatch.setattr(sys, "stdout", QuietPipe(screen))
    monkeypatch.setattr(sys, "stderr", screen)
    print(before, end="")
    assert report_failure(KeyboardInterrupt()) == 130
    assert screen.getvalue() == shown + "groupbias: interrupted; the same command resumes\n"
