"""The one exception hierarchy of groupbias.

Every error raised on bad input derives from :class:`GroupBiasError` (a ``ValueError``), and
names what was wrong and where: the parameter, the config key, or the file, line and field.
Every warning groupbias itself emits (a result that may mislead, e.g. a violated estimator
assumption) is a :class:`GroupBiasWarning`; the ``groupbias`` command always shows them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = [
    "GroupBiasError",
    "ParameterError",
    "ArgumentError",
    "ConfigError",
    "NothingComputedError",
    "DataError",
    "DataFormatError",
    "MissingFilesError",
    "GroupingError",
    "GroupBiasWarning",
    "AssumptionWarning",
]


class GroupBiasError(ValueError):
    """Root of every groupbias error (a ``ValueError``)."""


class ParameterError(GroupBiasError):
    """An impossible parameter value; the message names the parameter, what was expected,
    what was given, and (where obvious) the fix."""

    def __init__(self, name: str, expected: str, given, fix: str | None = None) -> None:
        self.name = name
        self.expected = expected
        self.given = given
        self.fix = fix
        msg = f"{name}: expected {expected}, got {given!r}"
        if fix:
            msg += f". {fix}"
        super().__init__(msg)


class ArgumentError(ParameterError, TypeError):
    """A call names a keyword the function does not take, or leaves out one it needs: the
    message names the keyword and the function, with the closest keywords it takes. Also a
    ``TypeError``, the error Python raises for such a call."""

    def __init__(self, name: str, function: str, problem: str, fix: str | None = None) -> None:
        self.name = name
        self.expected = f"a keyword argument of {function}()"
        self.given = problem
        self.fix = fix
        GroupBiasError.__init__(
            self, f"{name}: {problem} of {function}()" + (f". {fix}" if fix else "")
        )


class ConfigError(GroupBiasError):
    """A configuration key is unknown, unused, missing or has an impossible value.

    ``key`` is the full dotted key (e.g. ``loss.weighting``); the message starts with it.
    """

    def __init__(self, key: str, message: str, *, hint: str | None = None) -> None:
        self.key = key
        self.message = message
        self.hint = hint
        super().__init__(f"{key}: {message}" + (f". {hint}" if hint else ""))


class NothingComputedError(GroupBiasError):
    """A run computed no result (every dataset skipped, nothing to evaluate): it is not
    stored as complete and the command exits non-zero."""


class DataError(GroupBiasError):
    """Base class of every data-layer error."""


class DataFormatError(DataError):
    """A data file is malformed: the message names the file, the 1-based line and the field.

    Attributes
    ----------
    path, line, field:
        Where the problem is; ``line`` is 1-based and ``None`` when the problem is not tied
        to one line (e.g. an empty file).
    """

    def __init__(
        self,
        path: str | os.PathLike | None,
        line: int | None,
        message: str,
        *,
        field: str | None = None,
    ) -> None:
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
    """Expected data files are absent; the message lists what was expected where.

    ``unset``: the environment variable that was to name the folder, where it is unset or
    empty and no path was given: then no folder was searched, and the message says so
    (``directory`` is ``""``)."""

    def __init__(
        self,
        directory: str | os.PathLike,
        expected: Iterable[str],
        *,
        hint: str | None = None,
        unset: str | None = None,
    ) -> None:
        self.directory = str(directory)
        self.expected = list(expected)
        self.hint = hint
        self.unset = unset
        files = ", ".join(repr(e) for e in self.expected)
        if unset is not None:
            state = "is empty" if os.environ.get(unset) is not None else "is not set"
            msg = f"missing data file(s) {files}: no folder searched, ${unset} {state}"
        else:
            msg = f"missing data file(s) in {self.directory!r}: expected {files}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class GroupingError(DataError):
    """A grouping cannot be built (unknown attribute, one-group data, bad threshold...)."""


class GroupBiasWarning(UserWarning):
    """Root of every warning groupbias emits: something the user should know about a result
    (e.g. an estimator assumption that does not hold). The ``groupbias`` command shows these
    on stderr as ``groupbias: warning: ...`` while it silences dependencies' notices."""


class AssumptionWarning(GroupBiasWarning):
    """An estimator's assumption fails on the data at hand (e.g. the null check: β̂ far from
    1 on unbiased data); results computed under it are unreliable."""
