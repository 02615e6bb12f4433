"""Registries: the extension points of groupbias, each mapping a name to an object.

- :data:`ESTIMATORS`: β estimators (``name -> class`` implementing
  :class:`groupbias.estimate.estimators.Estimator`), e.g. ``"ks"``;
- :data:`METRICS`: per-query metrics by name (``"ndcg@10"``, ``"rho_dtr"``, ``"awrf"``...);
- :data:`DATASETS`: datasets by name (:class:`groupbias.data.datasets.DatasetInfo`), filled by
  the modules named in the ``groupbias.data.datasets`` entry-point group (the built-in loaders of
  ``data_loaders`` declare theirs there) the first time a name is looked up.

Registering is one call (or a decorator)::

    from .registry import ESTIMATORS

    @ESTIMATORS.register("my_estimator")
    class MyEstimator: ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Generic, TypeVar

from .errors import ParameterError
from .shipped import SHIPPED, import_shipped

__all__ = ["Registry", "ESTIMATORS", "METRICS", "DATASETS"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> objects of one kind; unknown names raise a :class:`ParameterError` that
    lists the registered ones.

    ``builtins``: ``"module:NAME"``, a mapping of the built-in objects by name, taken into
    the registry on its first use (lookup or registration): the stage that defines them
    owns the table, and the registry, which every stage and every plugin can reach, holds
    no import of it. ``entry_point_group``: modules named in this ``importlib.metadata``
    entry-point group are imported on the first lookup (they register their objects when
    imported), so packages can extend a registry without groupbias importing them.
    """

    def __init__(
        self, kind: str, *, builtins: str | None = None, entry_point_group: str | None = None
    ) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._builtins = builtins
        self._group = entry_point_group
        self._loaded = entry_point_group is None

    def register(self, name: str, obj: T | None = None, *, replace: bool = False):
        """Register ``obj`` under ``name``; without ``obj``, a decorator that does so."""
        if not isinstance(name, str) or not name:
            raise ParameterError(f"{self.kind} name", "a non-empty string", name)
        self._load_builtins()

        def add(o: T) -> T:
            if name in self._items and not replace and self._items[name] is not o:
                raise ParameterError(
                    f"{self.kind} name",
                    "a name not registered yet",
                    name,
                    fix="pass replace=True to override it",
                )
            self._items[name] = o
            return o

        return add if obj is None else add(obj)

    def _load_builtins(self) -> None:
        if self._builtins is None:
            return
        module, _, attr = self._builtins.partition(":")
        self._builtins = None
        table = getattr(importlib.import_module(module), attr)
        for name, obj in table.items():
            self._items.setdefault(name, obj)

    def _load_plugins(self) -> None:
        self._load_builtins()
        if self._loaded:
            return
        self._loaded = True
        if self._group is None:
            return
        for ep in metadata.entry_points(group=self._group):
            top = ep.module.partition(".")[0]
            if top in SHIPPED:  # ours, not a folder of that name first on sys.path
                import_shipped(top)
            ep.load()

    def get(self, name: str) -> T:
        """The object registered as ``name``."""
        if name not in self._items:
            self._load_plugins()
        if name not in self._items:
            known = ", ".join(sorted(self._items))
            raise ParameterError(
                self.kind,
                f"one of {known}" if known else "a registered name (none registered)",
                name,
            )
        return self._items[name]

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load_plugins()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


ESTIMATORS: Registry[Callable] = Registry("estimator")
METRICS: Registry[Callable] = Registry(
    "metric", builtins="groupbias.evaluation.catalog:BUILTIN_METRICS"
)
DATASETS: Registry = Registry("dataset", entry_point_group="groupbias.datasets")
