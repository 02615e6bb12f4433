"""Optional compiled loops (numba, the ``fast`` extra): when a stage uses them.

A stage whose hot path has a compiled twin of its numpy passes (the same bits) keeps one
:class:`CompiledLoops` for it: the loops load (importing numba and the module, about half
a second once per process) when a call is large enough to pay for that, or whenever they
are loaded already; ``use("never" | "always" | "auto")`` overrides the choice (tests
compare both paths). Without numba every call takes the numpy passes.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from .validation import choice, integer

__all__ = ["LOOP_MODES", "CompiledLoops"]

#: "auto" (the loops when numba is installed and they pay), "never" (numpy passes only),
#: "always" (the loops whenever numba is installed)
LOOP_MODES = ("auto", "never", "always")


class CompiledLoops:
    """The compiled loops of module ``module`` (a dotted name), used from ``min_size``
    items or rows on in mode "auto"."""

    def __init__(self, module: str, min_size: int) -> None:
        self.module = module
        self.min_size = integer("min_size", min_size, low=0)
        self.mode = "auto"
        self._loaded: ModuleType | None = None  # once imported (then no import call)

    def use(self, mode: str) -> str:
        """Set the mode (:data:`LOOP_MODES`); returns the previous one."""
        previous, self.mode = self.mode, choice("mode", mode, LOOP_MODES)
        return previous

    def serving(self, size: int) -> ModuleType | None:
        """The loops' module when it serves a call of ``size`` items or rows, else None
        (mode "never", a small call before they are loaded, or numba not installed)."""
        if self.mode == "never":
            return None
        if self._loaded is not None:
            return self._loaded
        if self.mode == "auto" and size < self.min_size and self.module not in sys.modules:
            return None
        try:
            self._loaded = importlib.import_module(self.module)
        except ImportError:  # numba is not installed: the numpy passes
            return None
        return self._loaded
