"""Run directories: resolved config, seed, version, data fingerprints and metrics, written
atomically; resume.

Layout of one run directory::

    config.yaml     the resolved configuration (YAML, written first)
    meta.json       seed, package version and git commit, the command-line overrides,
                    config fingerprint, the data
                    fingerprints (``inputs``), start/end time, status
    steps/*.json    results of completed sub-steps (e.g. one point of a cluster-size grid),
                    each with the data fingerprints it was computed on
    metrics.json    the run's result records, written last: its presence marks completion

A run's identity is its result-relevant configuration, the package version *and the data it
read*: every split loaded through a dataset (:meth:`groupbias.data.datasets.DatasetSpec.load`)
is recorded with the content digests of its files. A run is *complete* when ``metrics.json``
exists, ``meta.json`` carries the same config fingerprint, and every recorded input still
resolves to files with the same digests (a dataset variable pointing elsewhere, an edited file
or a changed ``dataset.root`` make it incomplete, and it is computed again). A finished step
is reused only when its config key matches and every input recorded with it (those loaded
before and during it) is unchanged, so a run killed half-way and resumed on other data never
mixes records of both. Re-running a sweep skips complete runs, and a run killed half-way
re-uses the sub-steps it had finished, so nothing is computed twice and nothing is
half-written.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

from .. import __version__
from ..core.errors import DataFormatError, NothingComputedError
from ..core.io import jsonable, read_json, write_json_atomic, write_text_atomic, writes_files
from ..data.datasets import current_input, recording_inputs
from .progress import StepProgress

#: Config keys that do not change results (where to write, how to launch, how verbose).
NON_RESULT_KEYS = ("paths", "launcher", "hydra", "progress", "warn_after_s", "report")


def config_fingerprint(cfg: Mapping, *, ignore: tuple[str, ...] = NON_RESULT_KEYS) -> str:
    """SHA-256 (16 hex digits) of the canonical JSON of ``cfg`` without ``ignore`` keys."""
    clean = {k: v for k, v in cfg.items() if k not in ignore}
    blob = json.dumps(clean, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: what a step file name keeps as it is; anything else becomes ``_``
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+~-]")


def step_file_stem(name: str) -> str:
    """A step's name as a shell-safe file name: kept when it is one, else with every other
    character replaced by ``_`` and a digest of the name appended (``table2_TREC 2020_full``
    → ``table2_TREC_2020_full-<8 hex>``), so that two names never share a file."""
    safe = _UNSAFE.sub("_", name)
    if safe == name and not name.startswith((".", "-")):
        return name
    return f"{safe.lstrip('.-') or 'step'}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as printed to the user: relative to the working directory when it lies below
    it (``runs/demo``), else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class RunDir:
    """One run's directory (see module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike,
        cfg: Mapping,
        *,
        seed: int | None = None,
        overrides: list[str] | None = None,
        progress: StepProgress | None = None,
    ):
        self.path = Path(path)
        #: where each step reports (``step n/total`` lines, the terminal's bar)
        self.progress = progress if progress is not None else StepProgress()
        self.cfg = dict(cfg)
        self.seed = seed
        self.overrides = list(overrides or [])
        # the package version is part of the identity: a new release recomputes
        self.fingerprint = config_fingerprint({**self.cfg, "_groupbias": __version__})
        #: the data read so far (input key -> record, in load order; see module docstring)
        self.inputs: dict[str, dict] = {}
        self._now: dict[str, dict] = {}  # records recomputed for a check, by key

    def note_input(self, record: Mapping) -> None:
        """Record a split this run has loaded (the callback of ``recording_inputs``)."""
        rec = dict(record)
        self.inputs.pop(rec["key"], None)
        self.inputs[rec["key"]] = rec
        self._now[rec["key"]] = rec

    def _unchanged(self, saved) -> bool:
        """Every input of ``saved`` (a list of records) still has the fingerprint recorded:
        as loaded by this run, else as its dataset resolves now."""
        if not isinstance(saved, list):
            return False
        for rec in saved:
            if not isinstance(rec, Mapping) or "key" not in rec:
                return False
            now = self._now.get(rec["key"])
            if now is None:
                now = self._now[rec["key"]] = current_input(rec)
            if now.get("fingerprint") != rec.get("fingerprint"):
                return False
        return True

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.json"

    def is_complete(self) -> bool:
        """Finished under this fingerprint, with no dataset skipped for missing data (a run
        with skipped datasets is recomputed, reusing its finished steps, so data that has
        appeared since is used)."""
        meta = self.path / "meta.json"
        if not (self.metrics_path.exists() and meta.exists()):
            return False
        try:
            m = read_json(meta)
            skipped = read_json(self.metrics_path).get("skipped")
        except (OSError, json.JSONDecodeError, AttributeError):
            return False
        complete = m.get("fingerprint") == self.fingerprint and m.get("status") == "complete"
        return complete and not skipped and self._unchanged(m.get("inputs"))

    def load_metrics(self) -> dict:
        return read_json(self.metrics_path)

    def start(self) -> None:
        if not writes_files():  # a worker of a distributed run: rank 0 keeps the folder
            return
        self.path.mkdir(parents=True, exist_ok=True)
        remove_leftovers(self.path)
        # records of an earlier run on other data are not this run's: gone until it finishes
        self.metrics_path.unlink(missing_ok=True)
        write_text_atomic(
            self.path / "config.yaml", yaml.safe_dump(self.cfg, sort_keys=False, allow_unicode=True)
        )
        self._meta("running")

    def _meta(self, status: str, **extra) -> None:
        write_json_atomic(
            self.path / "meta.json",
            {
                "status": status,
                "fingerprint": self.fingerprint,
                "seed": self.seed,
                "backend": self.cfg.get("backend", "auto"),
                "groupbias_version": __version__,
                "git_commit": git_commit(),
                "overrides": self.overrides,
                "inputs": list(self.inputs.values()),
                "python": platform.python_version(),
                "host": platform.node(),
                "time": _now(),
                **extra,
            },
        )

    def step(
        self,
        name: str,
        fn: Callable[[], dict],
        *,
        key: Mapping | None = None,
        label: str | None = None,
    ) -> dict:
        """Result of sub-step ``name``: loaded from ``steps/<name>.json`` (the name made
        shell-safe, :func:`step_file_stem`) when it was finished under the same config (and
        ``key``), else computed with ``fn()`` and stored.

        Each step reports to :attr:`progress` (:mod:`groupbias.app.progress`): without
        ``label`` a line when it starts and one when it ends (``step 3/7 name: done in 1.2 s;
        about 40 s left``); with it (short steps) one line when it is done (``step 3/7 <label>:
        1.2 s``); a step loaded from an earlier run is said to be ``reused``."""
        fp = config_fingerprint({"run": self.fingerprint, "key": dict(key or {})}, ignore=())
        p = self.path / "steps" / f"{step_file_stem(name)}.json"
        if p.exists():
            try:
                saved = read_json(p)
                if saved.get("fingerprint") == fp and self._unchanged(saved.get("inputs")):
                    self.progress.reused(label or name, "reused" if label else f"reused from {p}")
                    return saved["result"]
            except (OSError, json.JSONDecodeError, KeyError):
                pass
        self.progress.running(label or name, say=label is None)
        start = time.perf_counter()
        result = fn()
        # the data read before and during the step: a resumed run reuses it only on these
        inputs = list(self.inputs.values())
        write_json_atomic(p, {"fingerprint": fp, "inputs": inputs, "result": result})
        self.progress.finished(label or name, time.perf_counter() - start, short=bool(label))
        return read_json(p)["result"] if writes_files() else _as_stored(result)

    def skip_steps(self, n: int) -> None:
        """``n`` of the steps planned will not run (a dataset whose data is missing)."""
        self.progress.skip_steps(n)

    def finish(self, metrics: Mapping) -> dict:
        write_json_atomic(self.metrics_path, metrics)
        self._meta("complete", finished=_now())
        return read_json(self.metrics_path) if writes_files() else _as_stored(metrics)


def _as_stored(value):
    """``value`` as reading it back from its JSON file gives it (where nothing is written)."""
    return json.loads(json.dumps(jsonable(value), sort_keys=True))


class Interrupted(BaseException):
    """A termination signal (SIGTERM, SIGHUP) received during a run: it unwinds the run as
    Ctrl-C does, so that ``meta.json`` says ``interrupted`` and finished steps are kept."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        super().__init__(signal.Signals(signum).name)


#: what stopped a run, by signal (``meta.json``'s ``error``)
STOPPED_BY = {
    "SIGINT": "interrupted by SIGINT (Ctrl-C)",
    "SIGTERM": "interrupted by SIGTERM (a termination request: kill, a scheduler's time limit "
    "or preemption)",
    "SIGHUP": "interrupted by SIGHUP (its terminal closed)",
}


def stop_reason(exc: BaseException) -> str:
    """Why a run stopped, as ``meta.json`` says it: the signal that interrupted it (Ctrl-C is
    a ``KeyboardInterrupt``), else the exception's type and message."""
    if isinstance(exc, (KeyboardInterrupt, Interrupted)):
        name = str(exc) if isinstance(exc, Interrupted) else "SIGINT"
        return STOPPED_BY.get(name, f"interrupted by {name}")
    return f"{type(exc).__name__}: {exc}"


def run_once(
    path: str | os.PathLike,
    cfg: Mapping,
    fn: Callable[[RunDir], Mapping],
    *,
    seed: int | None = None,
    overrides: list[str] | None = None,
    progress: StepProgress | None = None,
) -> tuple[dict, bool]:
    """Run ``fn(run_dir)`` unless the run is already complete (``overrides``: the command
    line's, recorded in ``meta.json``; ``progress``: where the steps report, its bar drawn
    once the run starts).

    Returns ``(metrics, skipped)``.
    """
    run_dir = RunDir(path, cfg, seed=seed, overrides=overrides, progress=progress)
    if run_dir.is_complete():
        return run_dir.load_metrics(), True
    run_dir.start()
    run_dir.progress.start()
    try:
        with recording_inputs(run_dir.note_input):
            metrics = fn(run_dir)
        if not metrics.get("records"):
            skipped = "; ".join(metrics.get("skipped") or []) or "no records"
            raise NothingComputedError(f"nothing was computed, so nothing is stored ({skipped})")
        if all_undefined(metrics["records"]):
            raise NothingComputedError(
                "every result is undefined (NaN), so nothing is stored; the data cannot "
                "support these metrics (check its labels and groups)"
            )
    except BaseException as exc:  # record why, keep finished steps for the next attempt
        stopped = isinstance(exc, (KeyboardInterrupt, Interrupted))
        try:
            run_dir._meta("interrupted" if stopped else "failed", error=stop_reason(exc)[:2000])
        except OSError:  # a full disk, say: the error itself is what the user must see
            pass
        raise
    return run_dir.finish(metrics), False


@functools.cache
def git_commit() -> str | None:
    """The git commit of the groupbias source, when it runs from a git checkout (None for
    an installed wheel or without git)."""
    src = Path(__file__).resolve().parents[2]
    if not (src / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def all_undefined(records) -> bool:
    """True when every record that has a ``value`` holds None or NaN (and one does)."""
    values = [r["value"] for r in records if isinstance(r, Mapping) and "value" in r]
    return bool(values) and all(
        v is None or (isinstance(v, float) and math.isnan(v)) for v in values
    )


def remove_leftovers(directory: Path) -> list[Path]:
    """Delete the temporary files (``.<name>.<random>.tmp``) that killed atomic writes left
    below ``directory``; returns them."""
    gone = [p for p in directory.rglob(".*.tmp") if p.is_file()]
    for p in gone:
        p.unlink(missing_ok=True)
    return gone


def read_meta(path: Path) -> dict:
    """A run's ``meta.json`` or ``metrics.json``: a JSON object. A truncated, binary,
    list-valued or unreadable file (a directory of that name) is a :class:`DataFormatError`
    naming it."""
    fix = "delete the run folder to recompute it"
    try:
        meta = read_json(path)
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            path,
            exc.lineno,
            f"not valid JSON ({exc.msg}); the file is truncated or damaged: {fix}",
        ) from None
    except UnicodeDecodeError:
        raise DataFormatError(path, None, f"not UTF-8 text (a binary file?): {fix}") from None
    except IsADirectoryError:
        raise DataFormatError(path, None, f"a directory, not a file: {fix}") from None
    except OSError as exc:
        raise DataFormatError(path, None, f"cannot be read ({exc.strerror or exc})") from None
    if not isinstance(meta, dict):
        raise DataFormatError(path, None, f"expected a JSON object, got {type(meta).__name__}")
    return meta


def complete_records(folder: str | os.PathLike) -> list[dict] | None:
    """The result records of the run in ``folder`` when it is complete (``metrics.json``
    beside a ``meta.json`` with status complete), else None (a half-finished run). A
    damaged ``meta.json`` or ``metrics.json`` is a :class:`DataFormatError` naming it."""
    folder = Path(folder)
    meta = folder / "meta.json"
    if not meta.exists() or read_meta(meta).get("status") != "complete":
        return None
    mp = folder / "metrics.json"
    records = read_meta(mp).get("records", [])
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DataFormatError(mp, None, "records: expected a list of JSON objects")
    return records
