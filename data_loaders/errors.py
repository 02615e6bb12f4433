"""Typed errors raised by the data layer.

Every error names what was wrong and where (file, line, field), so a user can fix the input
without reading the loader's source.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


class DataError(ValueError):
    """Base class of every data-layer error (a ``ValueError``)."""


class DataFormatError(DataError):
    """A data file is malformed: the message names the file, the 1-based line and the field.

    Attributes
    ----------
    path, line, field:
        Where the problem is; ``line`` is 1-based and ``None`` when the problem is not tied
        to one line (e.g. an empty file).
    """

    def __init__(self, path: str | os.PathLike | None, line: int | None, message: str,
                 *, field: str | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = self.path or "<input>"
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


class MissingFilesError(DataError, FileNotFoundError):
    """Expected data files are absent; the message lists what was expected where."""

    def __init__(self, directory: str | os.PathLike, expected: Iterable[str], *,
                 hint: str | None = None) -> None:
        self.directory = str(directory)
        self.expected = list(expected)
        msg = (f"missing data file(s) in {self.directory!r}: expected "
               + ", ".join(repr(e) for e in self.expected))
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class GroupingError(DataError):
    """A grouping cannot be built (unknown attribute, one-group data, bad threshold...)."""
