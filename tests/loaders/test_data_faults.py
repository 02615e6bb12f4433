"""Error lines of the shared CSV reader (data_loaders._tables): pandas numbers rows, the
errors must name file lines, line 1 included."""

from __future__ import annotations

import pytest

from data_loaders._tables import numeric_column, read_table
from data_loaders.movielens import load_movielens
from groupbias.core.errors import DataFormatError


@pytest.mark.parametrize(
    "text, kwargs, line",
    [
        ('a,"b\n1,2\n', {}, 1),  # unclosed quote opening on line 1 (pandas: "row 0")
        ('a,b\n"x\ny",1\n\n2,"3\n', {}, 5),  # "row 3": a two-line field and a blank line before
        ("a,b\n\n1,2\n3,4,5\n", {}, 4),  # "line 4" (rows) is line 4 here
        ('a,b\n"x\ny",1\n3,4,5\n', {}, 4),  # "line 3" (rows) is file line 4
        ("1,2\n3,4,5\n", {"header": None}, 2),
        ("1\t2\t3\t4\t5\n6\t7\t8\t9\n", {"header": None, "sep": "\t", "names": [0, 1, 2, 3]}, 1),
        ("a,b\n1,2,3\n4,5\n", {}, 2),  # one field too many: pandas would make it the index
    ],
)
def test_read_table_errors_name_the_file_line(tmp_path, text, kwargs, line):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(DataFormatError) as exc:
        read_table(p, **kwargs)
    assert exc.value.path == str(p) and exc.value.line == line


def test_bad_value_on_line_one(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("x,1\n2,3\n")
    df = read_table(p, header=None)
    with pytest.raises(DataFormatError) as exc:
        numeric_column(df, 0, p, header=False)
    assert (exc.value.line, exc.value.field) == (1, "0")


def test_udata_extra_field_on_line_one_is_not_an_index(tmp_path):
    # pandas would take the 5-field first line as index + 4 columns, shifting every value
    p = tmp_path / "u.data"
    p.write_text("1\t10\t5\t881250949\t7\n2\t10\t3\t881250950\n")
    with pytest.raises(DataFormatError) as exc:
        load_movielens(p, grouping=None)
    assert exc.value.line == 1
