"""``groupbias --help`` (or ``groupbias help``): what the command runs, in plain words.

The experiments and datasets are listed from the config tree (each option's description is
the first comment paragraph of its YAML file, the environment variable its data is read from
is the one that comment names); the defaults of the most used keys are read from the composed
default configuration, so the text follows the configs.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

#: the most used keys beyond the group choices, with what they do
COMMON_KEYS = (
    ("bias.betas", "group underestimation factors β to simulate (1.0: no bias)"),
    ("bias.beta_std", "per-query noise σ_β around β"),
    ("estimator.cluster_size", "queries per cluster of the amortized β̂ (null: one cluster)"),
    ("trainer.max_epochs", "training epochs of the LTR ranker"),
    ("batching.batch_size", "queries per optimizer step"),
    ("seed", "seed of every simulation and ranker"),
    ("paths.runs", "folder of the run directories (or set GROUPBIAS_RUNS)"),
    ("verbose", "true: full tracebacks, info lines on the console"),
)
#: group choices worth naming beside the experiments and datasets
COMMON_CHOICES = (
    ("grouping=feature grouping.feature_id=N", "groups by a feature of the data"),
    ("evaluation=policy", "judge scores as learned Plackett-Luce policies (expected exposure)"),
    ("trainer=gpu", "train on a GPU (trainer=ddp: several)"),
    ("launcher=submitit_local", "each sweep job its own process (launcher=slurm: a cluster)"),
)
USAGE = (
    ("groupbias", "the demo on built-in synthetic data (well under a minute)"),
    ("groupbias experiment=NAME KEY=VALUE ...", "one run; its folder: runs/NAME/<overrides>/"),
    ("groupbias -m KEY=A,B ...", "a sweep: one run per combination"),
    ("groupbias --cfg job [KEY=VALUE ...]", "print the composed configuration, run nothing"),
    ("groupbias --hydra-help", "Hydra's own options"),
    ("groupbias-report DIR ...", "tables and figures from finished runs"),
)
WIDTH = 100
#: the end of a sentence: a full stop, question or exclamation mark before a space or the end
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def describe(path: Path) -> tuple[str, str | None]:
    """The first comment paragraph of a config file (without ``@package`` lines and example
    command lines, up to its last full sentence) and the ``GROUPBIAS_*`` variable its
    comments name, if any."""
    words: list[str] = []
    env = None
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        found = re.search(r"\bGROUPBIAS_[A-Z_]+", text)
        env = env or (found.group(0) if found else None)
        if text.startswith("@package") or not text:
            continue
        if line.startswith("#   ") or text.startswith(("Point ", "groupbias ")):
            words.append("\0")  # the paragraph ends at an example or a setup note
            continue
        words.append(text)
    first = " ".join(words).split("\0")[0].strip()
    ends = [m.end() for m in _SENTENCE_END.finditer(first)]
    if ends and ends[-1] < len(first):  # a lead-in to an example ("For example") is dropped
        first = first[: ends[-1]]
    return first, env


def _rows(rows, *, key_width: int) -> list[str]:
    out = []
    for key, text in rows:
        lead = f"  {key}".ljust(key_width)
        if len(lead) > key_width:  # a long key gets a line of its own
            out.append(lead.rstrip())
            lead = " " * key_width
        out += textwrap.wrap(
            text, WIDTH, initial_indent=lead, subsequent_indent=" " * key_width
        ) or [lead.rstrip()]
    return out


def option_rows(config_dir: Path, group: str) -> list[tuple[str, str]]:
    """``(option, description [VARIABLE])`` of every config file of ``group``."""
    rows = []
    for path in sorted((config_dir / group).glob("*.yaml")):
        text, env = describe(path)
        rows.append((path.stem, text + (f" [{env}]" if env else "")))
    return rows


def _defaults(config_dir: Path) -> dict[str, object]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        cfg = compose(config_name="config")
    return {key: OmegaConf.select(cfg, key, default=None) for key, _ in COMMON_KEYS}


def _value(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)) or type(v).__name__ == "ListConfig":
        return "[" + ",".join(_value(x) for x in v) + "]"
    return str(v)


def help_text(config_dir: str | Path) -> str:
    """The text of ``groupbias --help`` for the config tree at ``config_dir``."""
    config_dir = Path(config_dir)
    defaults = _defaults(config_dir)
    groups = sorted(p.name for p in config_dir.iterdir() if p.is_dir() and any(p.glob("*.yaml")))
    out = [
        "groupbias: group membership bias in unbiased learning to rank. Simulates group bias,",
        "estimates β with the amortized Kolmogorov-Smirnov search, corrects it (IPS), and",
        "evaluates NDCG@10, ρ(DTR) and Δ(EEL); each run writes its config and results to a folder.",
        "",
        "Usage",
        *_rows(USAGE, key_width=42),
        "",
        "Experiments (experiment=NAME)",
        *_rows(option_rows(config_dir, "experiment"), key_width=26),
        "",
        "Datasets (dataset=NAME; [VARIABLE]: the environment variable pointing at its files)",
        *_rows(option_rows(config_dir, "dataset"), key_width=26),
        "",
        "Most used keys (KEY=VALUE; the value plain `groupbias` runs with)",
        *_rows(
            [(f"{k}={_value(defaults[k])}", text) for k, text in COMMON_KEYS]
            + list(COMMON_CHOICES),
            key_width=42,
        ),
        "",
        *textwrap.wrap(
            "Config groups (GROUP=OPTION, options in configs/GROUP/): "
            + ", ".join(groups)
            + ". Every key of a run: groupbias --cfg job. More: README.md and docs/.",
            WIDTH,
        ),
    ]
    return "\n".join(out) + "\n"
