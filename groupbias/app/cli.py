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

import errno
import functools
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from omegaconf import DictConfig

from .._fast import use_backend
from .._fast.threads import call_later
from ..core.errors import ConfigError, GroupBiasError, GroupBiasWarning
from ..core.io import writes_files
from ..core.memory import release_free_memory
from ..core.shipped import SHIPPED, import_shipped
from .command import CONFIG_DIR, data_chosen
from .config import build_setup, plain
from .progress import StepProgress
from .runs import Interrupted, run_once, shown_path

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


def _register_resolvers() -> None:
    """``${groupbias_dirname:${hydra.overrides.task}}``: the run folder name of a job
    (:func:`groupbias.app.preflight.run_dirname`), used by ``hydra.run.dir`` and
    ``hydra.sweep.subdir`` in ``configs/config.yaml``."""
    from omegaconf import OmegaConf

    from .preflight import run_dirname

    OmegaConf.register_new_resolver(
        "groupbias_dirname", lambda task: run_dirname(list(task)), replace=True
    )


_register_resolvers()


def resolve_run_dir(cfg: DictConfig) -> Path:
    """The run directory: Hydra's output dir inside an app, else ``paths.runs/<name>``."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # not inside a Hydra app (tests calling run() directly)
        return Path(cfg.paths.runs) / str(cfg.experiment.name)


def command_line_overrides() -> list[str]:
    """The overrides of the command line (of this job of a sweep); empty outside a Hydra
    app."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return [str(o) for o in HydraConfig.get().overrides.task]
    except ValueError:  # not inside a Hydra app
        return []


def command_line_keys() -> list[str]:
    """The keys the command line overrides (``trainer.max_epochs=3`` -> ``trainer.max_epochs``;
    empty outside a Hydra app)."""
    return [o.split("=", 1)[0].lstrip("+~") for o in command_line_overrides()]


def data_from_command_line() -> bool:
    """:func:`data_chosen` of this command line's overrides."""
    return data_chosen(command_line_keys())


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
    with use_backend(setup.backend), step_progress(setup, experiment) as progress:
        metrics, skipped = run_once(
            out,
            container,
            functools.partial(experiment.run, setup),
            seed=setup.seed,
            overrides=command_line_overrides(),
            progress=progress,
        )
    if skipped:
        log.info("run already complete, results loaded from %s", out)
        print(f"[groupbias] already complete: {shown_path(out)} (delete metrics.json to re-run)")
    release_free_memory()
    with use_backend(setup.backend):
        experiment.present(setup, metrics, out)
    return metrics


def step_progress(setup, experiment) -> StepProgress:
    """Where the run's steps report (:mod:`groupbias.app.progress`): the experiment's
    planned count of steps (its ``planned_steps(setup)``, when it has one) and the rankers of
    each (its ``planned_rankers(setup)``), the live bar where standard output is a terminal
    and ``progress`` is true, and the run's ``warn_after_s``."""
    plan = getattr(experiment, "planned_steps", None)
    total = plan(setup) if plan is not None else None
    rankers = getattr(experiment, "planned_rankers", None)
    bar = setup.progress and sys.stdout.isatty()
    return StepProgress(
        total,
        rankers=rankers(setup) if rankers is not None else None,
        title=str(getattr(experiment, "name", "")),
        bar=bar,
        warn_after_s=setup.warn_after_s,
    )


def show_info_on_console() -> None:
    """Let the console handlers Hydra installed show info lines too (``verbose=true``)."""
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:
            handler.setLevel(logging.INFO)


#: the hint under an error that names a key or file
HINT = (
    "see docs/ (configuration, datasets) or run `groupbias --help`; every key is listed with "
    "`groupbias --cfg job`"
)
#: exit codes: an expected error, and an interruption (128 + the signal)
EXIT_ERROR = 2


#: seconds after which a signal that came during a finalizer is delivered again
REDELIVER_S = 0.05


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signum)


def _redeliver(unraisable) -> None:
    """``sys.unraisablehook`` of the command: an interruption raised where Python prints and
    drops exceptions (a finalizer or a weakref callback, run by the garbage collector
    anywhere) is not lost: the same signal is sent again a moment later, when the run is
    most likely back in its own code. Anything else goes to Python's hook."""
    exc = unraisable.exc_value
    if isinstance(exc, (Interrupted, KeyboardInterrupt)):
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        call_later(REDELIVER_S, os.kill, os.getpid(), signum)
        return
    sys.__unraisablehook__(unraisable)


def install_signal_handlers() -> None:
    """The command's handling of signals (the ``groupbias`` process only): SIGTERM and
    SIGHUP unwind the run as Ctrl-C does, and an interruption that comes while a finalizer
    runs is delivered again (:func:`_redeliver`)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)
    sys.unraisablehook = _redeliver


def _quiet_teardown() -> None:
    """The command's work and report are done, stored or refused: from here on (while Hydra,
    torch, Lightning and Python shut down) SIGINT, SIGTERM and SIGHUP are ignored. There is
    nothing left to stop: a signal would otherwise report a finished run as interrupted, or
    end the process by the signal (exit -15)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def run_interruptible(prog: str, body: Callable[[], int], *, again: str) -> int:
    """Run ``body`` (a command's work; returns its exit code) with the command's handling of
    signals (:func:`install_signal_handlers`, then :func:`_quiet_teardown`): Ctrl-C, SIGTERM
    or SIGHUP print one line ``<prog>: interrupted; <again>`` and give 128 + the signal (130,
    143, 129), no traceback. For a console script's process only: it changes the process's
    signal handlers for good."""
    install_signal_handlers()
    try:
        return body()
    except (KeyboardInterrupt, Interrupted) as exc:
        print(f"{prog}: interrupted; {again}", file=sys.stderr, flush=True)
        return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
    finally:
        _quiet_teardown()


class QuietPipe:
    """A stdout that turns quiet when its reader goes away (``groupbias | head``): the run
    goes on, its remaining output is dropped instead of ending in a BrokenPipeError. It
    knows whether its last line is unfinished (:attr:`mid_line`)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._line = ""  # the end of the last line written, "" after a newline

    @property
    def mid_line(self) -> bool:
        r"""Whether the last line written has text and no newline yet (a progress bar drawn
        with ``\r``, a line printed without its end); a line a bar cleared (``\r``, spaces,
        ``\r``) has none."""
        drawn = [part for part in self._line.split("\r") if part]
        return bool(drawn) and bool(drawn[-1].strip())

    def write(self, text: str) -> int:
        _, newline, tail = text.rpartition("\n")
        self._line = (tail if newline else self._line + text)[-256:]
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())  # also for the final flush at exit
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def os_error_hint(exc: OSError) -> str:
    """What to do about an OS error while writing results."""
    code = exc.errno
    if code == errno.ENOSPC:
        return (
            "free space on that disk, or write elsewhere with paths.runs=<folder>; the same "
            "command then resumes"
        )
    if code == errno.EFBIG:
        return "a file size limit is set (ulimit -f): raise it, then the same command resumes"
    if code in (errno.EROFS, errno.EACCES, errno.EPERM):
        return "choose a writable folder with paths.runs=<folder> (or GROUPBIAS_RUNS=<folder>)"
    if code in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return "a file stands where a folder belongs: choose another paths.runs"
    return "check the path, then run the same command again: finished steps are kept"


def report_failure(exc: BaseException, cfg=None) -> int:
    """Print the one-line form of an expected failure; returns the exit code."""
    if isinstance(exc, (KeyboardInterrupt, Interrupted)):
        if getattr(sys.stdout, "mid_line", False):  # a bar or line was cut short: end it
            print(file=sys.stdout, flush=True)
        print("groupbias: interrupted; the same command resumes", file=sys.stderr, flush=True)
        return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else ""
        what = exc.strerror or str(exc)
        print(f"groupbias: error: {where}{': ' if where else ''}{what}", file=sys.stderr)
        print(f"groupbias: hint: {os_error_hint(exc)}", file=sys.stderr, flush=True)
        return EXIT_ERROR
    hint = getattr(exc, "hint", None)
    if isinstance(exc, ConfigError) and hint:  # the error's own hint on the hint line
        print(f"groupbias: error: {exc.key}: {exc.message}", file=sys.stderr)
    else:
        print(f"groupbias: error: {exc}", file=sys.stderr)
    print(f"groupbias: hint: {hint or HINT}", file=sys.stderr, flush=True)
    return EXIT_ERROR


def _loud(cfg=None) -> bool:
    verbose = cfg is not None and cfg.get("verbose") is True
    return verbose or os.environ.get("HYDRA_FULL_ERROR") == "1" or "verbose=true" in sys.argv


def main() -> None:  # pragma: no cover - exercised through the console script
    args = sys.argv[1:]
    if args[:1] == ["help"] or "--help" in args or "-h" in args:
        from .usage import help_text

        print(help_text(CONFIG_DIR), end="")
        return
    if writes_files():
        sys.stdout = QuietPipe(sys.stdout)
    else:  # a worker of a distributed run: rank 0 prints (and writes) every result
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
        warnings.simplefilter("ignore")
    logging.raiseExceptions = False  # a full disk under cli.log: no logging tracebacks
    install_signal_handlers()
    configure_warnings()
    # Lightning, imported by the check below, adds its own console handler when the root
    # logger has none yet; Hydra configures the handlers (console + cli.log) later
    logging.getLogger().addHandler(logging.NullHandler())
    try:
        from .preflight import check_command_line

        for name in SHIPPED:  # the configs' _target_s name them: ours, whatever the cwd holds
            import_shipped(name)
        check_command_line(args)  # every job's config and folder, before Hydra makes any
    except (GroupBiasError, OSError, KeyboardInterrupt, Interrupted) as exc:
        if _loud():
            raise
        sys.exit(report_failure(exc))
    import hydra

    @hydra.main(config_path=CONFIG_DIR, config_name="config", version_base="1.3")
    def _app(cfg: DictConfig) -> None:
        if cfg.get("verbose") is True:
            show_info_on_console()
        try:
            run(cfg)
        except (GroupBiasError, OSError, KeyboardInterrupt, Interrupted) as exc:
            if _loud(cfg):
                raise
            sys.exit(report_failure(exc, cfg))
        finally:
            _quiet_teardown()

    try:
        _app()
    except (OSError, KeyboardInterrupt, Interrupted) as exc:  # in Hydra, around the run
        if _loud():
            raise
        sys.exit(report_failure(exc))
    finally:
        _quiet_teardown()


if __name__ == "__main__":  # pragma: no cover
    main()
