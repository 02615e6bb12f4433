"""The knob of the fast paths: ``backend = auto | numpy | numba``.

* ``numpy``: every primitive runs its numpy passes;
* ``numba``: every primitive that has compiled loops runs them (numba, a dependency of
  the package, must import);
* ``auto`` (the default): the compiled loops where numba is installed and the call is
  large enough for them to pay, the numpy passes otherwise.

The knob is read from :func:`use_backend` (a context: the ``backend`` config key of a run
sets it for the run) or else from the ``GROUPBIAS_BACKEND`` environment variable. Nothing
else changes the path a call takes: not what ran before, not what is already imported.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from types import ModuleType

from ..core.errors import ParameterError
from ..core.io import env_value
from ..core.validation import choice

__all__ = ["BACKENDS", "ENV_VAR", "backend", "compiled", "use_backend"]

BACKENDS = ("auto", "numpy", "numba")
ENV_VAR = "GROUPBIAS_BACKEND"

_chosen: ContextVar[str | None] = ContextVar("groupbias_backend", default=None)


def backend() -> str:
    """The backend in force: the innermost :func:`use_backend`, else ``$GROUPBIAS_BACKEND``,
    else ``"auto"``."""
    value = _chosen.get()
    if value is not None:
        return value
    return choice(ENV_VAR, (env_value(ENV_VAR) or "auto").strip(), BACKENDS)


@contextmanager
def use_backend(name: str) -> Iterator[str]:
    """Run the body with backend ``name`` (one of :data:`BACKENDS`); the one found before is
    in force again afterwards. Context-local: other threads and tasks keep theirs."""
    token = _chosen.set(choice("backend", name, BACKENDS))
    try:
        yield name
    finally:
        _chosen.reset(token)


@cache
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def compiled(module: str, size: int, min_size: int) -> ModuleType | None:
    """The compiled loops ``groupbias._fast.<module>`` when they serve a call of ``size``
    items (or rows), else None (the numpy passes): always under ``numba``, never under
    ``numpy``, from ``min_size`` on under ``auto`` where numba is installed."""
    chosen = backend()
    if chosen == "numpy":
        return None
    if chosen == "auto" and (size < min_size or not _numba_installed()):
        return None
    if not _numba_installed():
        raise ParameterError(
            "backend",
            "'auto' or 'numpy' where numba is not installed",
            "numba",
            fix="install numba (pip install numba) or use backend=auto",
        )
    return importlib.import_module(f"{__package__}.{module}")
