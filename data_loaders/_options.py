"""Checks the datasets' options classes share (each class sits beside its loader; the
registry of datasets, :mod:`data_loaders.registry`, names them)."""

from __future__ import annotations

from groupbias.core.errors import ParameterError


def flag(name: str, value) -> None:
    """``value`` is a bool (``true`` / ``false`` in a config)."""
    if not isinstance(value, bool):
        raise ParameterError(name, "true or false", value)


def optional_path(name: str, value) -> None:
    """``value`` is a path (a string) or None."""
    if value is not None and not isinstance(value, str):
        raise ParameterError(name, "a path (string) or null", value)
