"""The ``groupbias`` command: a Hydra app over ``configs/``.

``run(cfg)`` is the testable core (compose the config with ``hydra.compose`` and call it);
``main`` is the thin ``@hydra.main`` wrapper installed as the console script. Every config
group is built into an object first (:func:`groupbias.app.config.build_setup`: a key that is
unknown or invalid stops the run before any data is read, naming the key); the experiment
object (``experiment._target_``, a class in ``experiments/``) then does the work; its result
records are written into the run directory (see :mod:`groupbias.app.runs`), and a complete run
is skipped when the same configuration is run again. Expected errors (bad config values,
missing data) print one line and exit with status 2.

What the command prints is ours: stdout carries the experiment's own lines and tables; the
console log handler (``hydra.job_logging`` in ``configs/config.yaml``) shows warnings and
errors on stderr (``verbose=true``: also info lines such as Lightning's banners, which always go
to the run's ``cli.log``); deprecation notices that dependencies raise about their own code are
ignored (:func:`configure_warnings`), and :class:`~groupbias.core.errors.GroupBiasWarning` is always
shown, as one line on stderr.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from ..core.errors import GroupBiasError, GroupBiasWarning
from .config import build_setup, plain
from .runs import release_free_memory, run_once, shown_path

log = logging.getLogger("groupbias")

#: top-level packages of the dependencies whose notices about their own deprecated or changing
#: API are noise to a groupbias user (the dependency's code, not the user's, has to change)
QUIET_PACKAGES = (
    "torch",
    "pytorch_lightning",
    "lightning",
    "lightning_fabric",
    "lightning_utilities",
    "torchmetrics",
    "hydra",
    "omegaconf",
    "submitit",
    "hydra_plugins",
    "matplotlib",
    "pandas",
    "numpy",
    "scipy",
    "tqdm",
    "yaml",
)
#: the categories of such notices
QUIET_CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


_shown_by_python = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """``warnings.showwarning`` of the command: a GroupBiasWarning is one plain line on
    stderr; anything else goes to the display it replaced."""
    if issubclass(category, GroupBiasWarning):
        kind = "" if category is GroupBiasWarning else f" ({category.__name__})"
        print(f"groupbias: warning{kind}: {message}", file=file or sys.stderr, flush=True)
        return
    _shown_by_python(message, category, filename, lineno, file, line)


def configure_warnings() -> None:
    """Warning filters of the ``groupbias`` command: deprecation and future notices raised
    inside :data:`QUIET_PACKAGES` are ignored; every :class:`GroupBiasWarning` is shown (each
    distinct message once per place, whatever other filters say)."""
    pattern = "(" + "|".join(QUIET_PACKAGES) + r")(\.|$)"
    for category in QUIET_CATEGORIES:
        warnings.filterwarnings("ignore", category=category, module=pattern)
    warnings.filterwarnings("default", category=GroupBiasWarning)
    warnings.showwarning = _show_warning


def _find_config_dir() -> str:
    """The Hydra config tree: ``groupbias/configs/`` in an installed wheel (pyproject maps the
    repository's ``configs/`` there), else ``configs/`` beside the package (source checkout or
    editable install)."""
    package = Path(__file__).resolve().parents[1]
    candidates = (package / "configs", package.parent / "configs")
    for cand in candidates:
        if (cand / "config.yaml").is_file():
            return str(cand)
    return str(candidates[0])  # missing: Hydra reports "Primary config directory not found"


CONFIG_DIR = _find_config_dir()


def resolve_run_dir(cfg: DictConfig) -> Path:
    """The run directory: Hydra's output dir inside an app, else ``paths.runs/<name>``."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # not inside a Hydra app (tests calling run() directly)
        return Path(cfg.paths.runs) / str(cfg.experiment.name)


def command_line_keys() -> list[str]:
    """The keys the command line overrides (``trainer.max_epochs=3`` -> ``trainer.max_epochs``;
    empty outside a Hydra app)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        task = HydraConfig.get().overrides.task
    except ValueError:  # not inside a Hydra app
        return []
    return [o.split("=", 1)[0].lstrip("+~") for o in task]


def data_from_command_line() -> bool:
    """True when the command line chose a dataset or grouping (``dataset=...``,
    ``grouping.feature_id=...``): then it replaces an experiment's dataset list."""
    return any(k.split(".")[0] in ("dataset", "grouping") for k in command_line_keys())


def run(
    cfg: DictConfig,
    run_dir: str | os.PathLike | None = None,
    *,
    data_overridden: bool | None = None,
    overridden: Sequence[str] | None = None,
) -> dict:
    """Build every config group, then run the experiment (or load its complete result).

    ``overridden``: the keys set on the command line (default: Hydra's task overrides)."""
    if data_overridden is None:
        data_overridden = data_from_command_line()
    keys = command_line_keys() if overridden is None else list(overridden)
    setup, experiment = build_setup(cfg, data_from_command_line=data_overridden, overridden=keys)
    container = plain(cfg)
    container.pop("hydra", None)
    out = Path(run_dir) if run_dir is not None else resolve_run_dir(cfg)
    metrics, skipped = run_once(
        out, container, lambda rd: experiment.run(setup, rd), seed=setup.seed
    )
    if skipped:
        log.info("run already complete, results loaded from %s", out)
        print(f"[groupbias] already complete: {shown_path(out)} (delete metrics.json to re-run)")
    release_free_memory()
    experiment.present(setup, metrics, out)
    return metrics


def show_info_on_console() -> None:
    """Let the console handlers Hydra installed show info lines too (``verbose=true``)."""
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:
            handler.setLevel(logging.INFO)


def main() -> None:  # pragma: no cover - exercised through the console script
    args = sys.argv[1:]
    if args[:1] == ["help"] or "--help" in args or "-h" in args:
        from .usage import help_text

        print(help_text(CONFIG_DIR), end="")
        return
    import hydra

    configure_warnings()

    @hydra.main(config_path=CONFIG_DIR, config_name="config", version_base="1.3")
    def _app(cfg: DictConfig) -> None:
        if cfg.get("verbose") is True:
            show_info_on_console()
        try:
            run(cfg)
        except GroupBiasError as exc:
            if cfg.get("verbose") is True or os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(f"groupbias: error: {exc}", file=sys.stderr)
            print(
                "groupbias: hint: see docs/ (configuration, datasets) or run "
                "`groupbias --help`; every key is listed with `groupbias --cfg job`",
                file=sys.stderr,
            )
            sys.exit(2)

    _app()


if __name__ == "__main__":  # pragma: no cover
    main()
