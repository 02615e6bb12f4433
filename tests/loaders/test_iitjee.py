import numpy as np
import pytest

from data_loaders.iitjee import load_iitjee
from groupbias.core.errors import DataFormatError, MissingFilesError

HEADER = "REGST_NO,NAME,category,sub_category,GENDER,PIN_RES,PARENT_NAM,math,phys,chem,mark"
NAMES = [
    "Anjali Sharma",
    "Ravi Kumar",
    "Suresh Iyer",
    "Meena Das",
    "Kavita Rao",
    "Arjun Nair",
    "Priya Singh",
    "Vikram Joshi",
    "Lata Menon",
    "Rahul Gupta",
    "Deepa Pillai",
    "Amit Verma",
    "Sunita Reddy",
]
PARENTS = [f"Parent Of {n}" for n in NAMES]
# (regst, category, gender, pin, math, phys, chem, mark); marks span 0..100
ROWS = [
    ("1001", "GE", "F", "110001", 40, 30, 10, 80),  # GE|110001 kept: F .8, M .2, M .5
    ("1002", "GE", "M", "110001", 10, 5, 5, 20),
    ("1003", "GE", "M", "110001", 20, 20, 10, 50),
    ("1004", "GE", "F", "110002", 30, 20, 10, 60),  # GE|110002 dropped: women only
    ("1005", "GE", "F", "110002", 20, 10, 10, 40),
    ("1006", "OBC", "M", "110001", 60, 20, 20, 100),  # OBC|110001 kept: gender " f "
    ("1007", "OBC", " f ", "110001", 0, 0, 0, 0),
    ("1008", "OBC", "M", "110002", 20, 20, 10, 50),  # OBC|110002 dropped: .5 and .5
    ("1009", "OBC", "F", "110002", 20, 20, 10, 50),
    ("1010", "SC", "F", "560001", 30, 30, 10, 70),  # SC|560001 dropped: none < .5
    ("1011", "SC", "M", "560001", 30, 30, 30, 90),
    ("1012", "GE", "X", "110001", 10, 10, 10, 30),  # unknown gender: dropped, counted
    ("1013", "ST", "Female", "012345", 5, 5, 0, 10),  # ST|012345 kept (PIN keeps its 0)
]
ROWS.append(("1014", "ST", "male", "012345", 40, 40, 15, 95))
NAMES.append("Kiran Bose")
PARENTS.append("Parent Of Kiran Bose")


def write_csv(path, rows=ROWS, header=HEADER):
    lines = [header]
    for (reg, cat, g, pin, m, p, c, mark), name, parent in zip(rows, NAMES, PARENTS):
        lines.append(f"{reg},{name},{cat},{cat}1,{g},{pin},{parent},{m},{p},{c},{mark}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_filtering_groups_labels(tmp_path):
    data = load_iitjee(write_csv(tmp_path / "jee.csv"))
    # queries sorted by (category, PIN); items in file order
    assert list(data.query_ids) == ["GE|110001", "OBC|110001", "ST|012345"]
    np.testing.assert_array_equal(data.list_sizes, [3, 2, 2])
    assert list(data.item_ids) == ["1001", "1002", "1003", "1006", "1007", "1013", "1014"]
    # marks min 0, max 100 over the whole table -> mark / 100
    np.testing.assert_allclose(data.labels, [0.8, 0.2, 0.5, 1.0, 0.0, 0.1, 0.95])
    np.testing.assert_array_equal(data.groups, [1, 0, 0, 0, 1, 1, 0])
    assert data.label_max == 1.0
    # features: math min 0 max 60, phys 0..40, chem 0..30 (whole table, incl. dropped rows)
    np.testing.assert_allclose(data.features[0], [40 / 60, 30 / 40, 10 / 30, 0.8], rtol=1e-6)
    m = data.meta
    assert m["dropped_unknown_gender"] == 1 and m["unknown_gender_codes"] == {"X": 1}
    assert m["queries_before_filter"] == 6  # GE|1, GE|2, OBC|1, OBC|2, SC, ST
    assert m["rows_read"] == 14
    assert m["n_female"] == 3 and m["n_male"] == 4


def test_no_personal_names_anywhere(tmp_path):
    data = load_iitjee(write_csv(tmp_path / "jee.csv"))
    blob = " ".join(
        [
            repr(data.meta),
            " ".join(map(str, data.item_ids)),
            " ".join(map(str, data.query_ids)),
            data.name,
        ]
    )
    for name in NAMES + PARENTS:
        assert name not in blob
        assert name.split()[0] not in blob
    assert data.features.dtype == np.float32 and data.item_ids.dtype == object


def test_path_from_directory_and_env(tmp_path, monkeypatch):
    write_csv(tmp_path / "iitjee2009.csv")
    assert load_iitjee(tmp_path).n_queries == 3
    monkeypatch.setenv("GROUPBIAS_IITJEE", str(tmp_path / "iitjee2009.csv"))
    assert load_iitjee().n_items == 7
    monkeypatch.delenv("GROUPBIAS_IITJEE")
    with pytest.raises(MissingFilesError, match="GROUPBIAS_IITJEE"):
        load_iitjee()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MissingFilesError, match="iitjee2009.csv"):
        load_iitjee(empty)


def test_bad_mark_is_reported_with_line_and_field(tmp_path):
    rows = list(ROWS)
    rows[3] = ("1004", "GE", "F", "110002", 30, 20, 10, "abs")
    p = write_csv(tmp_path / "jee.csv", rows)
    with pytest.raises(DataFormatError) as exc:
        load_iitjee(p)
    assert exc.value.line == 5 and exc.value.field == "mark"  # header + 4th record
    assert "abs" in str(exc.value)
    data = load_iitjee(p, bad_rows="drop")
    assert data.meta["dropped_bad_rows"] == 1
    assert data.n_queries == 3


def test_missing_column_and_header_case(tmp_path):
    p = write_csv(tmp_path / "jee.csv", header=HEADER.replace("GENDER", "SEX"))
    with pytest.raises(DataFormatError, match="GENDER") as exc:
        load_iitjee(p)
    assert exc.value.line == 1
    q = write_csv(tmp_path / "lower.csv", header=HEADER.lower())
    assert load_iitjee(q).n_queries == 3
