"""What :mod:`groupbias.app.cli` and :mod:`groupbias.app.preflight` both read: where the config
tree is (:data:`CONFIG_DIR`), which command-line keys choose the data (:func:`data_chosen`),
and the ``groupbias_env`` resolver the config tree reads environment variables with
(registered on import). The command imports the check; neither imports the other back."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from ..core.io import env_value

__all__ = ["CONFIG_DIR", "data_chosen"]

#: ``${groupbias_env:NAME,default}``: ``$NAME``, or ``default`` where it is unset or empty
#: (``${oc.env:...}`` would give '' for ``NAME=``; an empty variable means unset everywhere)
OmegaConf.register_new_resolver(
    "groupbias_env", lambda name, default=None: env_value(name) or default, replace=True
)


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


def data_chosen(keys) -> bool:
    """True when the keys set on the command line choose a dataset or grouping
    (``dataset=...``, ``grouping.feature_id=...``): then they replace an experiment's
    dataset list, where :func:`groupbias.app.config.build_setup` allows it (``dataset=<name>``,
    or a list of only the composed dataset); elsewhere such a key is refused."""
    return any(k.split(".")[0] in ("dataset", "grouping") for k in keys)
