"""Modules imported on first use.

pandas (with pyarrow) adds ~80 MB to a process before it holds any data; the loaders of
tabular files need it, the SVMlight loaders (Yahoo!, MSLR) and grouping by a feature do not.
``from ._lazy import pandas as pd`` keeps the loader code as written (``pd.read_csv``...)
while pandas is imported by the first attribute access.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for the module ``name``; the first attribute access imports it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r} ({state})>"


pandas = LazyModule("pandas")
