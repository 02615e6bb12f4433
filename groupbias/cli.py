"""The ``groupbias`` command: a Hydra app over ``configs/``.

``run(cfg)`` is the testable core (compose the config with ``hydra.compose`` and call it);
``main`` is the thin ``@hydra.main`` wrapper installed as the console script. The experiment
named by ``experiment.entry`` (a module in ``experiments/``) does the work; its result
records are written into the run directory (see :mod:`groupbias.runs`), and a complete run
is skipped when the same configuration is run again.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .runs import run_once

log = logging.getLogger("groupbias")


def _find_config_dir() -> str:
    """The Hydra config tree: ``groupbias/configs/`` in an installed wheel (pyproject maps the
    repository's ``configs/`` there), else ``configs/`` beside the package (source checkout or
    editable install)."""
    here = Path(__file__).resolve().parent
    candidates = (here / "configs", here.parent / "configs")
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


def run(cfg: DictConfig, run_dir: str | os.PathLike | None = None) -> dict:
    """Run the configured experiment (or load its result when already complete)."""
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    out = Path(run_dir) if run_dir is not None else resolve_run_dir(cfg)
    module = importlib.import_module(str(cfg.experiment.entry))
    metrics, skipped = run_once(out, container, lambda rd: module.run(cfg, rd),
                                seed=int(cfg.seed))
    if skipped:
        log.info("run already complete, results loaded from %s", out)
        print(f"[groupbias] already complete: {out} (delete metrics.json to re-run)")
    if hasattr(module, "present"):
        module.present(cfg, metrics, out)
    return metrics


def main() -> None:  # pragma: no cover - exercised through the console script
    import hydra

    @hydra.main(config_path=CONFIG_DIR, config_name="config", version_base="1.3")
    def _app(cfg: DictConfig) -> None:
        run(cfg)

    _app()


if __name__ == "__main__":  # pragma: no cover
    main()
