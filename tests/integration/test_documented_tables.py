"""The documented tables of numbers equal a fresh run (experiments/docs_tables.py): the
deterministic rows of docs/table1_trec.md are recomputed here (a few seconds); every row,
the Monte-Carlo evaluations included, by ``python -m experiments.docs_tables --check``."""

from __future__ import annotations

import pytest

from experiments import docs_tables as T


@pytest.mark.realdata
def test_the_deterministic_rows_of_table1_equal_a_fresh_run(trec_root, tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPBIAS_TREC_FAIR", str(trec_root))
    documented = T.documented(T.DOC.read_text())
    assert set(documented) == set(T.SPLITS)
    fresh = T.fresh_blocks({"deterministic"}, tmp_path)
    diffs = [d for s in T.SPLITS for d in T.differences(documented[s], fresh[s], {"deterministic"})]
    assert diffs == []
    for split in T.SPLITS:  # the comparison saw every deterministic row: 2 datasets a split
        assert documented[split].count("| deterministic |") == 2


def test_an_edited_number_or_mark_is_found():
    """The check itself: a documented number one unit off beyond the tolerance, or a
    significance mark that differs, is reported; an equal block is not."""
    block = T.documented(T.DOC.read_text())["train"]
    assert T.differences(block, block) == []
    line = next(x for x in block.splitlines() if x.startswith("| deterministic |"))
    cells = T.cells(line)
    moved = cells.copy()
    moved[3] = f"{float(cells[3].rstrip('*')) + 0.002:.3f}" + (
        "*" if cells[3].endswith("*") else ""
    )
    edited = block.replace(line, "| " + " | ".join(moved) + " |", 1)
    assert len(T.differences(edited, block)) == 1
    starred = cells.copy()
    starred[4] = cells[4].rstrip("*") if cells[4].endswith("*") else cells[4] + "*"
    edited = block.replace(line, "| " + " | ".join(starred) + " |", 1)
    assert len(T.differences(edited, block)) == 1
