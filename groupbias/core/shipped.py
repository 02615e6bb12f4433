"""The two packages shipped beside groupbias, ``data_loaders`` (the built-in datasets) and
``experiments`` (the paper's artifacts), and how they are imported.

Both are top-level packages, in the repository and in the wheel (configs, docs and users'
code name them ``data_loaders.mslr``, ``experiments.table1``). A folder of the same name in
the current directory, or on ``PYTHONPATH``, would otherwise come first on ``sys.path``
and be imported instead of ours. :func:`import_shipped` imports ours from the folder that
holds this ``groupbias`` package (the repository root, or ``site-packages``), whatever comes
first on the path; where another package of that name is already imported in the process,
it refuses with both paths, so neither silently replaces the other. The built-in dataset
registry and the command line import them through it (docs/architecture.md).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from .errors import ConfigError

__all__ = ["SHIPPED", "ROOT", "import_shipped"]

#: the top-level packages that ship with groupbias
SHIPPED = ("data_loaders", "experiments")
#: the folder that holds ``groupbias/`` and the shipped packages
ROOT = Path(__file__).resolve().parents[2]


def _origin(module: ModuleType) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve().parent if file else None


def import_shipped(name: str) -> ModuleType:
    """groupbias's own package ``name`` (one of :data:`SHIPPED`), imported from :data:`ROOT`.

    Raises :class:`~groupbias.core.errors.ConfigError` when another package of that name
    is already imported, or when ours is missing beside groupbias."""
    if name not in SHIPPED:
        raise ValueError(f"not a shipped package: {name!r}")  # internal: callers name them
    ours = ROOT / name
    loaded = sys.modules.get(name)
    if loaded is not None:
        if _origin(loaded) == ours:
            return loaded
        raise ConfigError(
            name,
            f"a package named {name!r} from {_origin(loaded) or 'an unknown place'} is already "
            f"imported, and groupbias needs its own ({ours})",
            hint=f"rename your '{name}' package, or import groupbias before it",
        )
    spec = importlib.machinery.PathFinder.find_spec(name, [str(ROOT)])
    if spec is None or spec.loader is None:
        raise ConfigError(
            name,
            f"groupbias's package {name!r} is missing beside it in {ROOT}",
            hint="reinstall groupbias (pip install --force-reinstall groupbias)",
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
