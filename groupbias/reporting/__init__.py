"""Reporting: paper-layout tables (Markdown, LaTeX, terminal text, numeric CSV), plots, and
systems compared side by side (:mod:`~groupbias.reporting.compare`), results as pandas
DataFrames (:mod:`~groupbias.reporting.frames`)."""

from .compare import Comparison, compare, compare_runs
from .frames import load_results, per_query_results
from .tables import paper_table, save_table, table_to_latex, table_to_markdown
from .terminal import table_to_text

__all__ = [
    "Comparison",
    "compare",
    "compare_runs",
    "load_results",
    "per_query_results",
    "paper_table",
    "save_table",
    "table_to_latex",
    "table_to_markdown",
    "table_to_text",
]
