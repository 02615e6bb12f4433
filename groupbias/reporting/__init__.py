"""Reporting: paper-layout tables (CSV, Markdown, LaTeX, terminal text) and plots."""

from .tables import paper_table, save_table, table_to_latex, table_to_markdown
from .terminal import table_to_text

__all__ = ["paper_table", "save_table", "table_to_latex", "table_to_markdown", "table_to_text"]
