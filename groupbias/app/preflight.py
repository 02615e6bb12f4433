"""What the ``groupbias`` command checks before Hydra creates anything.

:func:`check_command_line` reads the overrides the way Hydra will, expands a ``-m`` sweep into
its jobs, composes the configuration of every job and builds every object of it
(:func:`~groupbias.app.config.build_setup`: no data is read), and checks that the run folders
lie inside a writable ``paths.runs``. The first problem of any job is a
:class:`~groupbias.core.errors.ConfigError` naming the override or key, with a suggestion
(``did you mean estimator.cluster_size?``), so that a bad value in the middle of a sweep stops
the command before its first job runs, and no run folder is made for a rejected command.

:func:`run_dirname` names a run folder after its overrides: flat and shell-safe (no ``/``,
brackets, commas or spaces; overrides joined by ``__``), at most :data:`MAX_DIRNAME` bytes
(longer names are cut and end with a digest of the whole), and different overrides give
different names (a name that had to be changed ends with a digest). The full overrides are in
the folder's ``.hydra/overrides.yaml`` and ``meta.json``.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import os
import re
import resource
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import ConfigError
from .command import CONFIG_DIR, data_chosen

__all__ = [
    "check_command_line",
    "run_folders",
    "run_dirname",
    "RUN_DIR_EXCLUDED",
    "MAX_DIRNAME",
    "split_args",
]

#: override keys that never name a run folder (where to write, how to launch, how verbose)
RUN_DIR_EXCLUDED = (
    "experiment",
    "launcher",
    "paths.runs",
    "progress",
    "warn_after_s",
    "report",
)
#: longest run folder name in bytes (file systems allow 255)
MAX_DIRNAME = 120
#: characters a folder name keeps; any other becomes ``_`` (brackets are dropped)
_SAFE = re.compile(r"[^A-Za-z0-9._=+~-]")
#: the flags of Hydra that take no value and leave the overrides to us
_OUR_FLAGS = ("-m", "--multirun")
#: free space (bytes) a run folder's disk needs before anything is written
MIN_FREE = 1 << 20
#: smallest file size limit (bytes, ``ulimit -f``) the command starts under
MIN_FILE_SIZE = 64 << 10
#: a plain folder name for ``experiment.name``
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def run_dirname(task_overrides: Sequence[str]) -> str:
    """The run folder name of the task overrides ``key=value`` (see the module docstring);
    ``""`` when every override is excluded (:data:`RUN_DIR_EXCLUDED`)."""
    kept = []
    for ov in task_overrides:
        key = str(ov).split("=", 1)[0]
        if key.lstrip("+~") in RUN_DIR_EXCLUDED or key.lstrip("+~").startswith("hydra."):
            continue
        kept.append(str(ov))
    kept.sort(key=lambda o: o.split("=", 1)[0].lstrip("+~"))
    if not kept:
        return ""
    tokens, changed = [], False
    for ov in kept:
        plain = ov.replace("[", "").replace("]", "").replace(",", "_")
        safe = _SAFE.sub("_", plain)
        changed |= safe != plain or ov.startswith(("-", "."))
        tokens.append(safe)
    name = "__".join(tokens)
    whole = "\n".join(kept)
    if len(name.encode()) > MAX_DIRNAME:
        name = name[: MAX_DIRNAME - 12].rstrip("_") + "-" + _digest(whole)
    elif changed:
        name = name + "-" + _digest(whole)
    return name


def split_args(args: Sequence[str]) -> tuple[bool, list[str]] | None:
    """``(multirun, overrides)`` of a command line, or None when it carries other Hydra flags
    (``--cfg job``, ``--info``, ``-cn``...): those go to Hydra unchecked."""
    multirun = False
    overrides = []
    for a in args:
        if a in _OUR_FLAGS:
            multirun = True
        elif a.startswith("-") and not a.startswith("--=") and "=" not in a.split("-", 1)[0]:
            return None
        else:
            overrides.append(a)
    return multirun, overrides


def _jobs(overrides: Sequence[str], multirun: bool) -> list[list[str]]:
    """The override lists of the jobs: one, or the product of the sweeps with ``-m``."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException, OverrideParseException

    parser = OverridesParser.create()
    axes: list[list[str]] = []
    for text in overrides:
        try:
            (ov,) = parser.parse_overrides([text])
        except (OverrideParseException, HydraException) as exc:
            lines = [
                re.sub(r" expecting \{.*\}", "", ln).strip()
                for ln in str(exc).splitlines()
                if re.search(r"[A-Za-z]", ln)
                and "hydra.cc" not in ln
                and not ln.startswith("Error parsing")
            ]
            raise ConfigError(
                text,
                "cannot read this override (" + (lines[0] if lines else "syntax error") + ")",
                hint="write key=value, a list as key=[a,b], a string with commas in quotes "
                "(key='a,b'), a sweep as key=a,b with -m",
            ) from None
        key = ov.get_key_element()
        if not ov.key_or_group:
            raise ConfigError(text, "no key before '='", hint="write key=value")
        if ov.is_sweep_override():
            if not multirun:
                raise ConfigError(
                    ov.key_or_group,
                    f"{text!r} is a sweep over several values, which needs -m (--multirun)",
                    hint=f"run `groupbias -m ... {text}`, or give one value (a list as "
                    f"{ov.key_or_group}=[a,b])",
                )
            axes.append([f"{key}={v}" for v in ov.sweep_string_iterator()])
        else:
            axes.append([text])
    return [list(job) for job in itertools.product(*axes)] or [[]]


#: config options renamed to the name their object is registered under: the old name's error
#: names the new one
RENAMED_OPTIONS = {"estimator/amortized": "ks"}


def _group_options(group: str) -> list[str]:
    d = Path(CONFIG_DIR) / group
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def _suggest(word: str, choices: Sequence[str]) -> str:
    """``did you mean <choice>?`` for the choice whose last part is closest to the last part
    of ``word`` (``estimator.clustr_size`` -> ``estimator.cluster_size``), else ``""``."""
    leaves = {str(c).rsplit(".", 1)[-1]: str(c) for c in choices}
    close = difflib.get_close_matches(word.rsplit(".", 1)[-1], list(leaves), n=1, cutoff=0.75)
    return f"did you mean {leaves[close[0]]}?" if close else ""


def _keys_at(job: list[str], failing: str, key: str) -> list[str]:
    """The dotted keys beside ``key`` in the configuration of ``job`` without ``failing``."""
    from hydra import compose
    from omegaconf import DictConfig, OmegaConf

    parent = key.rsplit(".", 1)[0] if "." in key else ""
    try:
        cfg = compose(config_name="config", overrides=[o for o in job if o != failing])
    except Exception:  # noqa: BLE001 - another override fails too: no suggestion
        return []
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if not isinstance(node, DictConfig):
        return []
    names = [str(k) for k in node.keys() if str(k) != "_target_"]
    return [f"{parent}.{k}" if parent else k for k in names]


def _composition_error(exc: Exception, job: list[str]) -> ConfigError:
    """Hydra's composition errors as one line naming the key, with a suggestion."""
    from hydra.errors import MissingConfigException

    text = str(exc)
    if isinstance(exc, MissingConfigException):
        missing = exc.missing_cfg_file or ""
        group, _, option = missing.partition("/")
        options = list(exc.options or _group_options(group))
        tip = _suggest(option, options)
        if missing in RENAMED_OPTIONS:
            tip = f"did you mean {RENAMED_OPTIONS[missing]}? (the new name of {option})"
        return ConfigError(
            group or "config",
            f"no option {option!r}; the options are {', '.join(options)}",
            hint=tip or f"see `groupbias --help` for what each {group} does",
        )
    m = re.search(r"Could not override '([^']+)'", text)
    if m:
        key = m.group(1)
        failing = next((o for o in job if o.split("=", 1)[0].lstrip("+~") == key), key)
        keys = _keys_at(job, failing, key)
        tip = _suggest(key, keys)
        if key == "dataset.root" and "dataset.root" not in keys:
            tip = (
                "the chosen dataset reads no files; choose the dataset as well "
                "(dataset=<name> dataset.root=<folder>) or set its environment variable"
            )
        if not tip and not keys:  # a map that lists no keys (a loader's keywords, say)
            tip = f"+{key}=... adds a key the config does not list"
        shown = ", ".join(k.rsplit(".", 1)[-1] for k in keys)
        return ConfigError(
            key,
            "unknown key" + (f"; the keys here are {shown}" if shown else ""),
            hint=tip or "`groupbias --cfg job` (with the same overrides) lists every key",
        )
    m = re.search(r"An item is already at '([^']+)'", text)
    if m:
        key = m.group(1)
        return ConfigError(
            key, "already set: '+' adds a key that is not there", hint=f"write {key}=..."
        )
    first = next((ln for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return ConfigError("config", first, hint="see `groupbias --help`")


def _check_folder(cfg, job: list[str]) -> None:
    """``paths.runs`` a writable folder (or creatable), ``experiment.name`` a plain folder
    name, and the run folder inside ``paths.runs``."""
    runs = cfg.paths.runs
    if not isinstance(runs, str) or not runs.strip():
        raise ConfigError(
            "paths.runs",
            f"expected a folder, got {runs!r}",
            hint="set paths.runs=<folder> (or GROUPBIAS_RUNS=<folder>); the default is runs",
        )
    name = cfg.experiment.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            "experiment.name",
            f"expected a plain folder name (letters, digits, '_', '.', '-'), got {name!r}",
            hint="run folders stay inside paths.runs; choose another place with paths.runs",
        )
    keys = [o.split("=", 1)[0].lstrip("+~") for o in job]
    placed = {k: o.split("=", 1)[1] for k, o in zip(keys, job, strict=True) if "=" in o}
    for key in ("hydra.run.dir", "hydra.sweep.dir"):
        if key in placed and "${" not in placed[key]:  # the user placed the folder
            check_writable(Path(placed[key]).expanduser(), key=key)
    if any(k.startswith("hydra.") for k in keys):
        return  # Hydra's folders: checked above where given as plain paths
    target = Path(runs).expanduser() / name / run_dirname(job)
    if not target.resolve().is_relative_to(Path(runs).expanduser().resolve()):
        raise ConfigError("experiment.name", f"{name!r} leads outside paths.runs")
    check_writable(target, key="paths.runs")


def check_writable(folder: Path, *, key: str = "paths.runs") -> None:
    """Refuse a folder that cannot be made or written: a file on its path, or the deepest
    existing folder read-only for us (named, with what to do)."""
    env = " (or GROUPBIAS_RUNS=<folder>)" if key == "paths.runs" else ""
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(
            key,
            f"{probe} is a file, not a folder",
            hint=f"choose a folder: {key}=<folder>{env}",
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(
            key,
            f"cannot write in {probe} (read-only or not ours)",
            hint=f"choose a writable folder: {key}=<folder>{env}",
        )
    # what Hydra writes before the run starts (its config files, the log) needs this much;
    # later failures of a full disk or a size limit are reported by the command itself
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    if free < MIN_FREE:
        raise ConfigError(
            key,
            f"the disk holding {probe} has {free // 1024} KiB free",
            hint=f"free space there, or choose another folder: {key}=<folder>",
        )
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY and soft < MIN_FILE_SIZE:
        raise ConfigError(
            "ulimit -f",
            f"files are limited to {soft} bytes; a run writes files of several KiB and more",
            hint="raise the limit (ulimit -f unlimited), then run the same command",
        )


def check_command_line(args: Sequence[str]) -> int:
    """Check the command line (see the module docstring); returns the number of jobs
    checked (0 when the command line carries Hydra flags left to Hydra)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from ..core.errors import GroupBiasError
    from .config import build_setup

    split = split_args(args)
    if split is None:
        return 0
    multirun, overrides = split
    jobs = _jobs(overrides, multirun)
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        for job in jobs:
            try:
                cfg = compose(config_name="config", overrides=job)
            except (HydraException, OmegaConfBaseException, ValueError) as exc:
                raise _composition_error(exc, job) from None
            keys = [o.split("=", 1)[0].lstrip("+~") for o in job]
            _check_folder(cfg, job)
            try:
                build_setup(cfg, data_from_command_line=data_chosen(keys), overridden=keys)
            except GroupBiasError:
                raise
    return len(jobs)


def run_folders(args: Sequence[str]) -> list[Path]:
    """The run folder of every job of the command line ``groupbias <args>`` (``-m``: each
    job of the sweep), as the command makes it: ``paths.runs/<experiment.name>/<run_dirname
    of the overrides>``, or the ``hydra.run.dir`` / ``hydra.sweep.dir`` the line places it
    in. Nothing is built or made; a line Hydra cannot read is a :class:`ConfigError`."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    split = split_args(args)
    if split is None:
        raise ConfigError(
            " ".join(a for a in args if a.startswith("-")),
            "Hydra flags other than -m / --multirun place no run",
            hint="give the overrides of the groupbias command line",
        )
    multirun, overrides = split
    folders = []
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        for job in _jobs(overrides, multirun):
            placed = dict(o.split("=", 1) for o in job if o.startswith("hydra.") and "=" in o)
            key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
            try:
                cfg = compose(
                    config_name="config", overrides=[o for o in job if not o.startswith("hydra.")]
                )
            except (HydraException, OmegaConfBaseException, ValueError) as exc:
                raise _composition_error(exc, job) from None
            if key in placed:
                base = Path(placed[key])
                folders.append(base / run_dirname(job) if multirun else base)
            else:
                folders.append(Path(cfg.paths.runs) / cfg.experiment.name / run_dirname(job))
    return folders
