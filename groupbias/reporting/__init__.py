"""Reporting: paper-layout tables (CSV, Markdown, LaTeX) and plots."""

from .tables import paper_table, save_table, table_to_latex, table_to_markdown

__all__ = ["paper_table", "save_table", "table_to_latex", "table_to_markdown"]
