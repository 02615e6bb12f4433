"""Paper-layout tables for the terminal: grouped headers, aligned numbers, a width limit.

:func:`table_to_text` renders any table whose columns are a MultiIndex (as
:func:`groupbias.reporting.tables.paper_table` builds: block, metric, condition) as plain text:
one header row per column level, each label centred over the columns it spans (the outer level
drawn as ``── β = 0.8 ──``), numbers right-aligned on their last digit with significance
markers hanging to the right, and row labels on the left. Tables wider than ``width`` are
wrapped by outer block (``β = 0.8``, ``β = 0.6``, ...) with the row labels repeated and the
reference blocks (``full information``) repeated beside every part when they fit; a block wider
than ``width`` on its own is split by its second level. It assumes nothing about which columns
a block holds, so extra columns (a flag, another metric) render the same way.
"""

from __future__ import annotations

import math
import re
import textwrap
import unicodedata
from collections.abc import Sequence

import pandas as pd

from ..core.errors import ParameterError
from .tables import legend

#: gap between two columns that differ first at level 0 (blocks), 1, 2, ...
GAPS = (4, 3, 2)
#: outer blocks repeated beside every wrapped part (the reference the others are read against)
PINNED = ("full information",)
#: the ``± s.d.`` of a cell that averages replicates
SPREAD = r" ± [0-9.]+"
NUMBER = re.compile(r"^([+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(.*)$")


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: combining marks take none (the hat of β̂), East Asian
    wide characters two."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _just(text: str, width: int, how: str = ">") -> str:
    pad = max(width - display_width(text), 0)
    if how == "<":
        return text + " " * pad
    if how == ">":
        return " " * pad + text
    return " " * (pad // 2) + text + " " * (pad - pad // 2)


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return str(value)


class _Column:
    """One data column: its header path and cells, split into number and marker parts."""

    def __init__(self, path: tuple[str, ...], values) -> None:
        self.path = path
        cells = [_cell(v) for v in values]
        parts = [NUMBER.match(c) for c in cells]
        self.numeric = any(p is not None for p in parts)
        self.split = [(p.group(1), p.group(2)) if p else (c, "") for p, c in zip(parts, cells)]
        self.num_w = max([display_width(n) for n, _ in self.split] + [0])
        self.mark_w = max([display_width(m) for _, m in self.split] + [0])
        self.width = max(self.num_w + self.mark_w, display_width(path[-1]) if path else 0, 1)

    def body(self, i: int) -> str:
        num, mark = self.split[i]
        if not self.numeric:
            return _just(num, self.width, "^")
        return _just(_just(num, self.num_w) + _just(mark, self.mark_w, "<"), self.width)

    def label(self) -> str:
        text = self.path[-1] if self.path else ""
        if self.numeric and display_width(text) <= self.num_w:
            return _just(_just(text, self.num_w) + " " * self.mark_w, self.width)
        return _just(text, self.width, "^" if not self.numeric else ">")


def _gap(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    level = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a) - 1)
    return GAPS[min(level, len(GAPS) - 1)]


def _spans(cols: Sequence[_Column], level: int) -> list[tuple[int, int]]:
    """Runs ``[start, end)`` of columns sharing their path up to ``level``."""
    out, start = [], 0
    for i in range(1, len(cols) + 1):
        if i == len(cols) or cols[i].path[: level + 1] != cols[start].path[: level + 1]:
            out.append((start, i))
            start = i
    return out


def _span_width(cols: Sequence[_Column], a: int, b: int) -> int:
    return sum(c.width for c in cols[a:b]) + sum(
        _gap(cols[i].path, cols[i + 1].path) for i in range(a, b - 1)
    )


def _widen(cols: Sequence[_Column], levels: int) -> None:
    """Widen columns so that every group label fits over the columns it spans."""
    for level in range(levels - 2, -1, -1):
        for a, b in _spans(cols, level):
            label = cols[a].path[level]
            need = display_width(label) + (4 if level == 0 else 0) - _span_width(cols, a, b)
            for k in range(max(need, 0)):
                cols[a + k % (b - a)].width += 1


def _header_row(cols: Sequence[_Column], level: int) -> str:
    out = ""
    for a, b in _spans(cols, level):
        if a:
            out += " " * _gap(cols[a - 1].path, cols[a].path)
        label, w = cols[a].path[level], _span_width(cols, a, b)
        if level == 0 and label:
            fill = w - display_width(label) - 2
            out += "─" * (fill // 2) + f" {label} " + "─" * (fill - fill // 2)
        else:
            out += _just(label, w, "^")
    return out


def _render(index: Sequence[str], name: str, cols: list[_Column], levels: int) -> list[str]:
    lead = max([display_width(s) for s in [*index, name]])
    _widen(cols, levels)
    rows = [_header_row(cols, lvl) for lvl in range(levels - 1)]
    last = ""
    for i, c in enumerate(cols):
        last += (" " * _gap(cols[i - 1].path, c.path) if i else "") + c.label()
    rows.append(last)
    lines = [_just(name if k == len(rows) - 1 else "", lead, "<") for k in range(len(rows))]
    lines = [(pre + "  " + row).rstrip() for pre, row in zip(lines, rows)]
    lines.append("─" * max(display_width(s) for s in lines))
    for r, label in enumerate(index):
        body = ""
        for i, c in enumerate(cols):
            body += (" " * _gap(cols[i - 1].path, c.path) if i else "") + c.body(r)
        lines.append((_just(label, lead, "<") + "  " + body).rstrip())
    return lines


def _width(lines: Sequence[str]) -> int:
    return max((max(display_width(s), len(s)) for s in lines), default=0)


def _units(cols: list[_Column], index, name, levels, width) -> list[list[_Column]]:
    """The wrapping units: outer blocks, each split by its second level when it is wider than
    ``width`` on its own."""
    units = []
    for a, b in _spans(cols, 0):
        block = cols[a:b]
        if levels > 1 and _width(_render(index, name, _fresh(block), levels)) > width:
            units += [block[x:y] for x, y in _spans(block, 1)]
        else:
            units.append(block)
    return units


def _fresh(cols: Sequence[_Column]) -> list[_Column]:
    """Copies with their natural widths (rendering widens columns in place)."""
    out = []
    for c in cols:
        new = object.__new__(_Column)
        new.__dict__.update(c.__dict__)
        new.width = max(c.num_w + c.mark_w, display_width(c.path[-1]) if c.path else 0, 1)
        out.append(new)
    return out


def _parts(cols, index, name, levels, width, pinned) -> list[list[_Column]]:
    """Group the units into parts that fit ``width``; pinned blocks beside each part when
    they fit, else once, first."""
    ref = [c for c in cols if c.path[0] in pinned]
    rest = [c for c in cols if c.path[0] not in pinned]
    units = _units(rest, index, name, levels, width)

    def fits(group):
        return _width(_render(index, name, _fresh(group), levels)) <= width

    if ref and units and not all(fits(ref + u) for u in units):
        units, ref = [ref, *units], []
    parts: list[list[_Column]] = []
    for unit in units:
        if parts and fits(ref + parts[-1] + unit):
            parts[-1] = parts[-1] + unit
        else:
            parts.append(list(unit))
    return [ref + p for p in parts] or [ref]


def table_to_text(
    table: pd.DataFrame,
    *,
    width: int = 100,
    title: str | None = None,
    alpha: float | None = None,
    note: str | None = None,
    pinned: Sequence[str] = PINNED,
    spread: bool = False,
) -> str:
    """The table as aligned plain text no wider than ``width`` where possible (see module
    docstring); ``title`` above, the :func:`legend` (with ``alpha``: the marker) and ``note``
    below, wrapped to ``width``. Cells that average replicates show their mean (and marker);
    ``spread=True`` keeps their ``± s.d.`` too (the saved tables always have it)."""
    if not isinstance(table, pd.DataFrame):
        raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
    if width < 20:
        raise ParameterError("width", "at least 20 columns", width)
    if not spread:
        table = table.replace(SPREAD, "", regex=True)
    paths = [tuple(str(p) for p in (c if isinstance(c, tuple) else (c,))) for c in table.columns]
    levels = max((len(p) for p in paths), default=1)
    cols = [_Column(p + ("",) * (levels - len(p)), table.iloc[:, j]) for j, p in enumerate(paths)]
    index = [str(i) for i in table.index]
    name = str(table.index.name or "")
    out = textwrap.wrap(title, width) if title else []
    for k, part in enumerate(_parts(cols, index, name, levels, width, tuple(pinned))):
        if k:
            out.append("")
        out += _render(index, name, _fresh(part), levels)
    out += textwrap.wrap(legend(table, alpha, spread=spread), width)
    out += textwrap.wrap(note or "", width)
    return "\n".join(out) + "\n"
