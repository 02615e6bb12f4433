"""SVMlight parser: exact values against an independent line-by-line reference, every
error kind with its line and field, chunk boundaries, threads, fuzzing, and the cache."""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_loaders import cache as cache_mod
from data_loaders import svmlight as svm
from data_loaders.svmlight import load_svmlight, parse_svmlight, read_svmlight
from groupbias._fast import use_backend
from groupbias.core.errors import DataFormatError, MissingFilesError, ParameterError

# ---- independent reference ------------------------------------------------------------------
# The documented grammar, written directly with str methods (no shared code with the parser).
_NUM = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def reference(text: str, n_features: int | None, base: int = 1, qid_required: bool = True):
    """(features float32, labels, qids, line numbers) of a valid file."""
    labels, qids, rows, lines = [], [], [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
        toks = line.split("#")[0].split()
        if not toks:
            continue
        labels.append(float(toks[0]))
        rest = toks[1:]
        if rest and rest[0].startswith("qid:"):
            qids.append(int(rest[0][4:]))
            rest = rest[1:]
        else:
            assert not qid_required
            qids.append(-1)
        row = {}
        for t in rest:
            f, v = t.split(":")
            row[int(f)] = float(v)
        rows.append(row)
        lines.append(lineno)
    width = (
        n_features
        if n_features is not None
        else max([f for r in rows for f in r] + [base - 1]) - base + 1
    )
    X = np.zeros((len(rows), width), dtype=np.float32)
    for i, r in enumerate(rows):
        for f, v in r.items():
            X[i, f - base] = v
    return X, np.array(labels), np.array(qids), np.array(lines)


def write(tmp_path: Path, data: bytes | str, name: str = "f.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def check_same(path: Path, text: str, n_features, base=1, qid="required", **kw):
    rows = read_svmlight(path, n_features=n_features, feature_id_base=base, qid=qid, **kw)
    X, y, q, lines = reference(text, n_features, base, qid == "required")
    np.testing.assert_array_equal(rows.features, X)
    np.testing.assert_array_equal(rows.labels, y)
    np.testing.assert_array_equal(rows.qids, q)
    np.testing.assert_array_equal(rows.line_numbers, lines)
    assert rows.features.dtype == np.float32 and rows.labels.dtype == np.float64
    assert rows.qids.dtype == np.int64
    return rows


# ---- exact values and conventions ---------------------------------------------------------
def test_values_spellings_comments_blank_lines(tmp_path):
    text = (
        "2 qid:1 1:3 2:0 3:2.5 4:-1.25 5:.5 6:5. 7:+7 8:-0.000001 # docid = 7\n"
        "# a comment line\n"
        "\n"
        "0 qid:1 2:1e-05 3:1.5E+3 4:0.12345678901234567 5:123456789012345678\n"
        "1 qid:7 8:65535 1:0.666667 6:-12.2345\n"
    )
    p = write(tmp_path, text)
    rows = check_same(p, text, 8)
    # hand-checked values: 1e-05 -> float32(1e-5); 1.5E+3 = 1500; feature 8 of row 3
    assert rows.features[1, 1] == np.float32(1e-5)
    assert rows.features[1, 2] == 1500.0
    assert rows.features[2, 7] == 65535.0
    assert rows.line_numbers.tolist() == [1, 4, 5]


def test_crlf_tabs_spaces_and_missing_final_newline(tmp_path):
    text = "1\tqid:3  1:0.5   3:-2   \r\n  0 qid:3 2:7\r\n\r\n2 qid:4 3:1"
    p = write(tmp_path, text)
    rows = check_same(p, text, 3)
    assert rows.n_lines == 4
    np.testing.assert_array_equal(rows.features, [[0.5, 0, -2], [0, 7, 0], [0, 0, 1]])


def test_stable_feature_ids_all_columns_present(tmp_path):
    # Yahoo!-like: ids 1..700, only a few present; column of id k is k - 1
    text = "0 qid:1 4:0.5 426:0.21 700:1\n1 qid:1 10:0.25\n"
    p = write(tmp_path, text)
    data = parse_svmlight(p, n_features=700)
    assert data.features.shape == (2, 700)
    np.testing.assert_array_equal(data.feature_ids, np.arange(1, 701))
    np.testing.assert_array_equal(data.feature(426), [np.float32(0.21), 0])
    assert data.features[0, 425] == np.float32(0.21)
    assert np.count_nonzero(data.features) == 4


def test_n_features_none_and_zero_base(tmp_path):
    text = "1 qid:1 10:1 2:3\n"
    p = write(tmp_path, text)
    rows = read_svmlight(p)
    assert rows.features.shape == (1, 10)  # up to the largest id, 10
    rows0 = read_svmlight(p, feature_id_base=0)
    assert rows0.features.shape == (1, 11)  # ids 0..10
    assert rows0.feature_ids[0] == 0 and rows0.features[0, 10] == 1


def test_unsorted_feature_ids_are_valid(tmp_path):
    text = "1 qid:1 3:1 1:2 2:3\n"
    p = write(tmp_path, text)
    check_same(p, text, 3)


def test_queries_qptr_and_ids(tmp_path):
    text = "1 qid:10 1:1\n0 qid:10 1:2\n2 qid:3 1:3\n1 qid:99 1:4\n0 qid:99 1:5\n"
    data = parse_svmlight(write(tmp_path, text), n_features=1)
    np.testing.assert_array_equal(data.qptr, [0, 2, 3, 5])
    np.testing.assert_array_equal(data.query_ids, [10, 3, 99])
    assert data.query_ids.dtype == np.int64
    np.testing.assert_array_equal(data.item_ids, [1, 2, 3, 4, 5])


def test_long_qids_and_long_lines(tmp_path):
    # qid beyond 8 digits; a line far longer than the chunk
    many = " ".join(f"{j}:{j * 0.5}" for j in range(1, 2001))
    text = f"1 qid:12345678901 {many}\n0 qid:12345678901 3:1\n"
    p = write(tmp_path, text)
    rows = check_same(p, text, 2000, chunk_bytes=1024)
    assert rows.qids[0] == 12345678901


def test_chunk_boundaries_and_workers_agree(tmp_path, rng, monkeypatch):
    lines = []
    for i in range(3000):
        feats = " ".join(
            f"{j}:{rng.normal():.5f}"
            for j in sorted(rng.choice(np.arange(1, 31), size=rng.integers(0, 8), replace=False))
        )
        lines.append(f"{rng.integers(0, 5)} qid:{i // 7} {feats}".rstrip())
    text = "\n".join(lines) + "\n"
    p = write(tmp_path, text)
    monkeypatch.setattr(svm, "_slow_chunk", None)  # the compiled loop only
    monkeypatch.setenv("GROUPBIAS_BACKEND", "numba")
    a = check_same(p, text, 30, chunk_bytes=1024, workers=1)
    b = read_svmlight(p, n_features=30, chunk_bytes=4096, workers=2)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.line_numbers, b.line_numbers)


def decimal_tokens(rng, n: int) -> list[str]:
    """``n`` plain decimals: 1..14 digits, a point anywhere (or none), a sign on some."""
    toks = []
    for _ in range(n):
        digits = "".join(rng.choice(list("0123456789"), size=rng.integers(1, 15)))
        cut = rng.integers(0, len(digits) + 1)
        t = digits[:cut] + ("." if rng.random() < 0.7 else "") + digits[cut:]
        if rng.random() < 0.3:
            t = rng.choice(["-", "+"]) + t
        if t.strip("+-") == ".":
            t = t.replace(".", "0.")
        toks.append(t)
    return toks


def test_decimal_decoder_matches_float(tmp_path, rng, monkeypatch):
    # many spellings through the compiled loop: lengths 1..16, signs, points anywhere
    toks = decimal_tokens(rng, 4000)
    text = "".join(f"0 qid:1 1:{t}\n" for t in toks)
    monkeypatch.setattr(svm, "_slow_chunk", None)  # the compiled loop only
    monkeypatch.setenv("GROUPBIAS_BACKEND", "numba")
    rows = read_svmlight(write(tmp_path, text), n_features=1)
    expect = np.array([float(t) for t in toks], dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(rows.features[:, 0], expect)
    # labels keep float64 precision
    text = "".join(f"{t} qid:1\n" for t in toks)
    rows = read_svmlight(write(tmp_path, text, "l.txt"), n_features=0)
    np.testing.assert_array_equal(rows.labels, [float(t) for t in toks])


# ---- errors ---------------------------------------------------------------------------------
GOOD = "1 qid:1 1:0.5 2:1\n0 qid:1 2:3\n"


@pytest.mark.parametrize(
    "bad_line, field, words",
    [
        ("1 qid:2 1:abc", "feature 1", "not a number"),
        ("1 qid:2 1:nan", "feature 1", "non-finite"),
        ("1 qid:2 2:inf", "feature 2", "non-finite"),
        ("1 qid:2 2:-inf", "feature 2", "non-finite"),
        ("1 qid:2 1:1e999", "feature 1", "infinity"),
        ("1 qid:2 1:1.2.3", "feature 1", "not a number"),
        ("1 qid:2 1:0x1A", "feature 1", "not a number"),
        ("1 qid:2 1:1_0", "feature 1", "not a number"),
        ("1 qid:2 1:", "feature 1", "not a number"),
        ("1 qid:2 1: 2", "feature 1", "not a number"),
        ("1 qid:2 1 :2", "token 3", "feature id"),
        ("1 qid:2 1:2:3", "token 3", "feature id"),
        ("1 qid:2 :2", "token 3", "feature id must be"),
        ("1 qid:2 1.5:2", "token 3", "feature id must be"),
        ("1 qid:2 1:1 1:2", "token 4", "duplicate feature id 1"),
        ("1 qid:2 2:1 1:2 2:3", "token 5", "duplicate feature id 2"),
        ("1 qid:2 3:1", "token 3", "out of range 1..2"),
        ("1 qid:2 0:1", "token 3", "out of range"),
        ("1 1:2", "qid", "missing 'qid"),
        ("1", "qid", "missing 'qid"),
        ("1 qid:x 1:2", "qid", "non-negative integer"),
        ("1 qid:-3 1:2", "qid", "non-negative integer"),
        ("1 qid:2 1:1 qid:3", "token 4", "second token"),
        ("x qid:2 1:2", "label", "not a number"),
        ("nan qid:2 1:2", "label", "non-finite"),
        ("1 qid:2 1:1\x01", "feature 1", "not a number"),
    ],
)
def test_errors_name_file_line_and_field(tmp_path, bad_line, field, words):
    text = GOOD + "# comment\n" + bad_line + "\n" + GOOD.replace("qid:1", "qid:3")
    p = write(tmp_path, text)
    with pytest.raises(DataFormatError) as ei:
        parse_svmlight(p, n_features=2)
    e = ei.value
    assert e.path == str(p) and e.line == 4 and e.field == field
    assert words in str(e) and str(p) in str(e) and "line 4" in str(e)


def test_error_line_numbers_across_chunks(tmp_path):
    lines = [f"{i % 5} qid:{i // 10} 1:{i}.5 2:7" for i in range(5000)]
    lines[4321] = "1 qid:432 1:oops"
    p = write(tmp_path, "\n".join(lines) + "\n")
    for workers in (1, 2):
        with pytest.raises(DataFormatError) as ei:
            read_svmlight(p, n_features=2, chunk_bytes=2048, workers=workers)
        assert ei.value.line == 4322 and ei.value.field == "feature 1"


def test_non_contiguous_qid(tmp_path):
    text = "1 qid:5 1:1\n0 qid:6 1:1\n\n2 qid:5 1:1\n"
    with pytest.raises(DataFormatError) as ei:
        parse_svmlight(write(tmp_path, text), n_features=1)
    assert ei.value.line == 4 and ei.value.field == "qid"
    assert "qid 5 reappears" in str(ei.value) and "line 1" in str(ei.value)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "   \r\n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(DataFormatError, match="no data lines") as ei:
        parse_svmlight(write(tmp_path, text))
    assert ei.value.line is None


def test_missing_file_and_bad_options(tmp_path):
    with pytest.raises(MissingFilesError, match="nope.txt"):
        parse_svmlight(tmp_path / "nope.txt")
    p = write(tmp_path, GOOD)
    with pytest.raises(ParameterError, match="qid"):
        read_svmlight(p, qid="sometimes")
    with pytest.raises(ParameterError, match="feature_id_base"):
        read_svmlight(p, feature_id_base=-1)
    with pytest.raises(ParameterError, match="n_features"):
        read_svmlight(p, n_features=2.5)
    with pytest.raises(ParameterError, match="workers"):
        read_svmlight(p, workers=0)


# ---- fuzzing ----------------------------------------------------------------------------------
def _value_spellings(v: float, draw, fast_only: bool = False) -> str:
    kind = draw(st.sampled_from([1, 3, 4, 5] if fast_only else range(7)))
    if kind == 0:
        return repr(v)
    if kind == 1:
        return f"{v:.6f}"
    if kind == 2:
        return f"{v:g}"  # may use an exponent
    if kind == 3:
        return str(int(v))
    if kind == 4:
        s = f"{abs(v):.3f}".lstrip("0")  # '.5' style
        return ("-" if v < 0 else "") + (s if s not in ("", ".000") else "0")
    if kind == 5:
        return f"{int(abs(v))}."  # '5.' style
    return f"{v:.17f}"  # longer than 16 characters


@st.composite
def valid_files(draw, fast_only=False):
    base = draw(st.sampled_from([0, 1]))
    nf = draw(st.integers(1, 12))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    sep = st.sampled_from([" ", " ", "\t", "  "])
    out = []
    n_queries = draw(st.integers(1, 6))
    qids = draw(
        st.lists(
            st.integers(0, 10 ** (7 if fast_only else 10)),
            min_size=n_queries,
            max_size=n_queries,
            unique=True,
        )
    )
    for q in qids:
        for _ in range(draw(st.integers(1, 5))):
            if draw(st.integers(0, 9)) == 0:
                out.append(draw(st.sampled_from(["", "# comment: 1:2 qid:9", "   "])))
            ids = draw(st.lists(st.integers(base, base + nf - 1), unique=True, max_size=nf))
            if fast_only:  # the compiled loop takes ids in increasing order
                ids.sort()
            toks = [draw(st.sampled_from(["0", "1", "4", "2.5", "-1", "3."])), f"qid:{q}"]
            for f in ids:
                v = draw(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
                toks.append(f"{f}:{_value_spellings(v, draw, fast_only)}")
            line = "".join(t + draw(sep) for t in toks[:-1]) + toks[-1]
            if draw(st.booleans()):
                line = draw(sep) + line + draw(sep)
            if draw(st.integers(0, 5)) == 0:
                line += " # trailing comment 3:4"
            out.append(line)
    text = eol.join(out) + (eol if draw(st.booleans()) else "")
    return text, nf, base


@pytest.mark.parametrize("loop", [False, True])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_files(), st.sampled_from([1024, 1 << 20]), st.sampled_from([1, 2]))
def test_fuzz_valid_files_round_trip(tmp_path_factory, loop, case, chunk, workers):
    # loop: the compiled loop first (numba), the line-by-line parser where it declines
    text, nf, base = case
    if not any(line.split("#")[0].strip() for line in text.split("\n")):
        return
    p = write(tmp_path_factory.mktemp("v"), text)
    with use_backend("numba" if loop else "numpy"):
        check_same(p, text, nf, base, chunk_bytes=chunk, workers=workers)
    data = parse_svmlight(p, n_features=nf, feature_id_base=base)
    assert data.n_items == len(reference(text, nf, base)[1])


@pytest.mark.parametrize("dense", [True, False])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_files(fast_only=True))
def test_fuzz_compiled_loop_alone(tmp_path_factory, dense, case):
    """The plain spelling is parsed by the compiled loop without the line-by-line parser:
    into dense rows with ``n_features``, as triples without."""
    text, nf, base = case
    if not any(line.split("#")[0].strip() for line in text.split("\n")):
        return
    p = write(tmp_path_factory.mktemp("f"), text)
    orig = svm._slow_chunk

    def refuse(*a, **k):
        raise AssertionError("line-by-line path used")

    svm._slow_chunk = refuse
    try:
        with use_backend("numba"):
            check_same(p, text, nf if dense else None, base, chunk_bytes=1024, workers=1)
    finally:
        svm._slow_chunk = orig


BAD_VALUES = [
    "abc",
    "nan",
    "inf",
    "-inf",
    "1.2.3",
    "",
    "--1",
    "0x1A",
    "1_0",
    "1e",
    "1e999",
    ".",
    "-",
    "+-1",
    "1-2",
    "1..2",
    "é",
    "1 e5",
]


@st.composite
def corrupted_files(draw):
    text, nf, base = draw(valid_files())
    lines = text.replace("\r\n", "\n").split("\n")
    data_lines = [i for i, line in enumerate(lines) if line.split("#")[0].strip()]
    if not data_lines:
        return None
    i = draw(st.sampled_from(data_lines))
    toks = lines[i].split("#")[0].split()
    kind = draw(st.integers(0, 7))
    if kind == 0:
        toks.append(f"{base}:{draw(st.sampled_from(BAD_VALUES))}")
        toks = [t for t in toks if not t.startswith(f"{base}:") or t == toks[-1]]
    elif kind == 1:
        toks = [toks[0]] + toks[2:]  # no qid
    elif kind == 2:
        toks += [f"{base}:1", f"{base}:2"]  # duplicate id
        toks = [
            t for j, t in enumerate(toks) if not (t.startswith(f"{base}:") and j < len(toks) - 2)
        ]
    elif kind == 3:
        toks.append(f"{base + nf + draw(st.integers(0, 5))}:1")  # id too large
    elif kind == 4:
        if base == 0:
            return None
        toks.append("0:1")  # id below the base
    elif kind == 5:
        toks[0] = draw(st.sampled_from(["x", "nan", "1.2.3", "--1"]))  # bad label
    elif kind == 6:
        toks.append(draw(st.sampled_from(["3 :4", "3::4", ":4", "2.5:1", "qid:4"])))
    else:
        toks[1] = draw(st.sampled_from(["qid:", "qid:-1", "qid:1.5", "qid:x"]))
    lines[i] = " ".join(toks)
    return "\n".join(lines), nf, base, i + 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted_files(), st.sampled_from([1024, 1 << 20]))
def test_fuzz_corruptions_raise_with_line(tmp_path_factory, case, chunk):
    if case is None:
        return
    text, nf, base, line = case
    p = write(tmp_path_factory.mktemp("c"), text)
    with pytest.raises(DataFormatError) as ei:
        read_svmlight(p, n_features=nf, feature_id_base=base, chunk_bytes=chunk)
    assert ei.value.line == line and ei.value.path == str(p)


def test_reappearing_qid_fuzz(tmp_path, rng):
    for _ in range(20):
        q = rng.permutation(50)[: rng.integers(2, 8)]
        sizes = rng.integers(1, 5, q.size)
        qids = np.repeat(q, sizes)
        j = rng.integers(sizes[0], qids.size)  # a line after the first query
        if qids[j] == q[0]:
            continue
        qids[j] = q[0]
        # the first line where a qid comes back after a different one
        runs = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
        seen, expect = set(), None
        for r in runs:
            if qids[r] in seen:
                expect = r + 1
                break
            seen.add(qids[r])
        text = "".join(f"0 qid:{x} 1:1\n" for x in qids)
        if expect is None:  # joined the first query: still valid
            assert parse_svmlight(write(tmp_path, text), n_features=1).n_items == qids.size
            continue
        with pytest.raises(DataFormatError) as ei:
            parse_svmlight(write(tmp_path, text), n_features=1)
        assert ei.value.line == expect


# ---- cache ------------------------------------------------------------------------------------
def _mslr_like(path: Path, n_lines: int, rng) -> Path:
    vals = rng.integers(0, 40, (n_lines, 136)).astype(str)
    lines = [
        f"{rng.integers(0, 5)} qid:{i // 50} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row))
        for i, row in enumerate(vals)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cache_round_trip_reload_speed_and_no_pickle(tmp_path, rng):
    p = _mslr_like(tmp_path / "train.txt", 4000, rng)
    cdir = tmp_path / "cache"
    t0 = time.perf_counter()
    a = load_svmlight(p, n_features=136, label_max=4, cache_dir=cdir)
    t_parse = time.perf_counter() - t0
    assert a.meta["cache"] == "stored"
    t_reload = []
    for _ in range(3):
        t0 = time.perf_counter()
        b = load_svmlight(p, n_features=136, label_max=4, cache_dir=cdir)
        t_reload.append(time.perf_counter() - t0)
    assert b.meta["cache"] == "hit"
    assert min(t_reload) < t_parse / 3
    for name in ("features", "labels", "qptr", "query_ids", "feature_ids", "item_ids"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not getattr(b, name).flags.writeable
    assert isinstance(
        np.load(Path(b.meta["cache_dir"]) / "features.npy", mmap_mode="r", allow_pickle=False),
        np.memmap,
    )
    assert b.name == a.name and b.label_max == 4 and b.meta["n_lines"] == 4000
    entries = [d for d in (cdir / "ranking").iterdir()]
    assert len(entries) == 1 and not entries[0].name.startswith(".")
    man = json.loads((entries[0] / "manifest.json").read_text())
    assert man["source"]["path"] == str(p.resolve()) and man["arrays"]["features"]["shape"] == [
        4000,
        136,
    ]


def test_cache_stores_features_column_major(tmp_path, rng):
    """Each feature column is one contiguous run of features.npy (read here from the raw
    bytes, independently of numpy's loader), so reading a column pages in that column only;
    the mapped matrix is Fortran-ordered and equal to the parse; rows still work (LTR)."""
    from groupbias.ltr.datamodule import as_flat_lists

    p = _mslr_like(tmp_path / "train.txt", 700, rng)
    cdir = tmp_path / "cache"
    parsed = load_svmlight(p, n_features=136, cache_dir=cdir)
    hit = load_svmlight(p, n_features=136, cache_dir=cdir)
    assert hit.meta["cache"] == "hit"
    assert hit.features.flags.f_contiguous and not hit.features.flags.c_contiguous
    np.testing.assert_array_equal(hit.features, parsed.features)
    raw = (Path(hit.meta["cache_dir"]) / "features.npy").read_bytes()
    header_len = int.from_bytes(raw[8:10], "little") + 10  # .npy version 1.0 header
    assert b"'fortran_order': True" in raw[:header_len]
    n = hit.n_items
    for j in (0, 57, 135):
        start = header_len + j * n * 4
        column = np.frombuffer(raw[start : start + n * 4], dtype="<f4")
        np.testing.assert_array_equal(column, parsed.features[:, j])
    rows = as_flat_lists(hit, name="train", normalize=None)
    assert rows.features.flags.c_contiguous
    np.testing.assert_array_equal(rows.features, parsed.features)


def test_cache_entry_in_the_wrong_memory_order_is_rebuilt(tmp_path, rng):
    p = _mslr_like(tmp_path / "train.txt", 200, rng)
    cdir = tmp_path / "cache"
    a = load_svmlight(p, n_features=136, cache_dir=cdir)
    f = Path(load_svmlight(p, n_features=136, cache_dir=cdir).meta["cache_dir"]) / "features.npy"
    with open(f, "wb") as fh:  # same dtype and shape, but row-major
        np.save(fh, np.ascontiguousarray(a.features), allow_pickle=False)
    with pytest.warns(UserWarning, match="order|digest"):
        b = load_svmlight(p, n_features=136, cache_dir=cdir)
    assert b.meta["cache"] == "stored"
    np.testing.assert_array_equal(b.features, a.features)
    assert load_svmlight(p, n_features=136, cache_dir=cdir).features.flags.f_contiguous


def test_cache_detects_changed_source(tmp_path):
    p = write(tmp_path, "1 qid:1 1:0.5\n0 qid:1 1:2\n")
    cdir = tmp_path / "cache"
    a = load_svmlight(p, n_features=1, cache_dir=cdir)
    st0 = p.stat()
    # same size, same mtime: only the content fingerprint differs
    p.write_text("1 qid:1 1:0.7\n0 qid:1 1:2\n")
    os.utime(p, ns=(st0.st_atime_ns, st0.st_mtime_ns))
    b = load_svmlight(p, n_features=1, cache_dir=cdir)
    assert b.meta["cache"] == "stored" and b.features[0, 0] == np.float32(0.7)
    # a changed mtime alone also re-parses
    os.utime(p, ns=(st0.st_atime_ns, st0.st_mtime_ns + 10**9))
    c = load_svmlight(p, n_features=1, cache_dir=cdir)
    assert c.meta["cache"] == "stored"
    assert load_svmlight(p, n_features=1, cache_dir=cdir).meta["cache"] == "hit"
    # entries of older versions are removed; other options get their own entry
    assert len(list((cdir / "ranking").iterdir())) == 1
    load_svmlight(p, n_features=3, cache_dir=cdir)
    assert len(list((cdir / "ranking").iterdir())) == 2
    assert a.features[0, 0] == np.float32(0.5)


def test_cache_dir_from_environment_at_call_time(tmp_path, monkeypatch):
    p = write(tmp_path, GOOD)
    monkeypatch.setenv("GROUPBIAS_CACHE", str(tmp_path / "envcache"))
    d = load_svmlight(p, n_features=2)
    assert Path(d.meta["cache_dir"]).is_relative_to(tmp_path / "envcache")
    assert cache_mod.cache_root() == tmp_path / "envcache"
    monkeypatch.delenv("GROUPBIAS_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_mod.cache_root() == tmp_path / "home" / ".cache" / "groupbias"
    assert load_svmlight(p, n_features=2, cache=False).meta.get("cache") is None


def test_cache_write_failure_leaves_nothing(tmp_path, monkeypatch):
    p = write(tmp_path, GOOD)
    cdir = tmp_path / "cache"

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(cache_mod.np, "save", boom)
    with pytest.warns(UserWarning, match="could not write"):
        d = load_svmlight(p, n_features=2, cache_dir=cdir)
    assert d.n_items == 2
    assert list((cdir / "ranking").iterdir()) == []  # no entry, no temporary dir


def test_cache_corrupt_entry_is_rebuilt(tmp_path):
    p = write(tmp_path, GOOD)
    cdir = tmp_path / "cache"
    d = load_svmlight(p, n_features=2, cache_dir=cdir)
    (Path(d.meta["cache_dir"]) / "labels.npy").write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="unreadable cache entry"):
        e = load_svmlight(p, n_features=2, cache_dir=cdir)
    assert e.meta["cache"] == "stored"
    np.testing.assert_array_equal(e.labels, [1, 0])
    assert math.isclose(float(e.features[0, 0]), 0.5)


def test_progress_bar_counts_every_byte(tmp_path, monkeypatch):
    import tqdm

    from data_loaders.svmlight import read_svmlight

    seen = {}

    class Recorder:
        def __init__(self, *, total, desc, **kw):
            seen.update(total=total, desc=desc, done=0, closed=False)

        def update(self, n):
            seen["done"] += n

        def close(self):
            seen["closed"] = True

    monkeypatch.setattr(tqdm, "tqdm", Recorder)
    p = tmp_path / "p.txt"
    p.write_text("".join(f"{i % 3} qid:{i // 4} 1:0.5 3:{i}\n" for i in range(5000)))
    rows = read_svmlight(p, chunk_bytes=4096, progress=True)
    assert rows.features.shape == (5000, 3)
    size = p.stat().st_size
    assert seen == {"total": size, "desc": "parsing p.txt", "done": size, "closed": True}
    seen.clear()
    read_svmlight(p, chunk_bytes=4096)  # small file, not a terminal: no bar
    assert seen == {}


# ---- overflow and huge ids ------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad_line, field",
    [
        ("1 qid:2 1:1e39", "feature 1"),  # finite as a double, infinite as float32
        ("1 qid:2 2:-3.5e38", "feature 2"),
        ("1 qid:2 1:340282356779733661637539395458142568448", "feature 1"),  # 2**128 - 2**103
        ("1e39 qid:2 1:1", "label"),
    ],
)
def test_float32_overflow_is_an_error(tmp_path, bad_line, field):
    text = GOOD + bad_line + "\n"
    p = write(tmp_path, text)
    for chunk in (1024, 1 << 20):
        with pytest.raises(DataFormatError) as ei:
            read_svmlight(p, n_features=2, chunk_bytes=chunk)
        e = ei.value
        assert (e.path, e.line, e.field) == (str(p), 3, field)
        assert "float32" in str(e)


def test_largest_float32_still_loads(tmp_path):
    # 3.4028234e38 rounds to the largest float32, (2 - 2**-23) * 2**127
    p = write(tmp_path, "1 qid:1 1:3.4028234e38 2:-3.4028234e38\n")
    f = parse_svmlight(p, n_features=2).features
    big = np.float32((2 - 2**-23) * 2.0**127)
    assert f[0, 0] == big and f[0, 1] == -big


@pytest.mark.parametrize(
    "bad_line, nf, field, words",
    [
        ("1 qid:12345678901234567890 1:2", 2, "qid", "2**63 - 1"),
        ("1 qid:12345678901234567890 1:2", None, "qid", "2**63 - 1"),
        ("1 qid:2 12345678901234567890:2", None, "token 3", "out of range 1..100000"),
        ("1 qid:2 12345678901234567890:2", 2, "token 3", "out of range 1..2"),
    ],
)
def test_twenty_digit_ids_are_format_errors(tmp_path, bad_line, nf, field, words):
    p = write(tmp_path, GOOD + bad_line + "\n")
    with pytest.raises(DataFormatError) as ei:
        parse_svmlight(p, n_features=nf)
    e = ei.value
    assert (e.path, e.line, e.field) == (str(p), 3, field) and words in str(e)


def test_huge_feature_id_without_n_features_is_refused(tmp_path):
    # one stray id 99,999,999 would make every row 381 MiB wide
    p = write(tmp_path, GOOD + "1 qid:3 1:1 99999999:2\n")
    with pytest.raises(DataFormatError) as ei:
        parse_svmlight(p)
    e = ei.value
    assert (e.line, e.field) == (3, "token 4")
    assert "out of range 1..100000" in str(e) and "n_features" in str(e)
    # the largest id allowed, and explicit n_features lifts the limit
    p = write(tmp_path, "1 qid:3 100000:2\n")
    assert parse_svmlight(p).features.shape == (1, 100_000)
    p = write(tmp_path, "1 qid:3 100001:2\n")
    assert parse_svmlight(p, n_features=100_001).features[0, -1] == 2.0


def test_cache_detects_edit_in_the_middle_with_same_size_and_mtime(tmp_path):
    # 10,000 lines (~190 KiB): the edited line lies far from the first and last 64 KiB
    lines = [f"{i % 5} qid:{i // 10} 1:0.25 2:{i}" for i in range(10_000)]
    p = write(tmp_path, "\n".join(lines) + "\n")
    assert p.stat().st_size > 3 * 64 * 1024
    cdir = tmp_path / "cache"
    a = load_svmlight(p, n_features=2, cache_dir=cdir)
    assert a.meta["cache"] == "stored" and a.features[5000, 0] == np.float32(0.25)
    st0 = p.stat()
    lines[5000] = lines[5000].replace("1:0.25", "1:0.75")  # same length
    p.write_text("\n".join(lines) + "\n")
    os.utime(p, ns=(st0.st_atime_ns, st0.st_mtime_ns))
    assert (p.stat().st_size, p.stat().st_mtime_ns) == (st0.st_size, st0.st_mtime_ns)
    b = load_svmlight(p, n_features=2, cache_dir=cdir)
    assert b.meta["cache"] == "stored"
    assert b.features[5000, 0] == np.float32(0.75) and b.features[4999, 0] == np.float32(0.25)
    assert load_svmlight(p, n_features=2, cache_dir=cdir).meta["cache"] == "hit"


# ---- the compiled loop (numba, backend numba) --------------------------------------------------
@pytest.fixture
def loop_on(monkeypatch):
    """Every parse tries the compiled loop first; ``calls`` counts the chunks it took."""
    loops = importlib.import_module("groupbias._fast.svmlight_loops")
    monkeypatch.setenv("GROUPBIAS_BACKEND", "numba")
    calls = {"taken": 0, "declined": 0}
    parse = loops.parse_chunk

    def counted(*args):
        ok, rows, pairs = parse(*args)
        calls["taken" if ok else "declined"] += 1
        return ok, rows, pairs

    monkeypatch.setattr(loops, "parse_chunk", counted)
    return calls


def test_compiled_loop_takes_plain_files_and_matches_the_line_parser(tmp_path, rng, loop_on):
    # plain decimals with signs, points anywhere, comments, blank lines, CRLF, ids skipped
    toks = decimal_tokens(rng, 3000)
    lines = [f"{t} qid:{i // 7} 1:{t} 3:{toks[-i]}" for i, t in enumerate(toks)]
    lines[5] = "# a comment line"
    lines[9] = ""
    lines[11] += " # trailing 4:5"
    text = "\r\n".join(lines) + "\n"
    p = write(tmp_path, text)
    rows = check_same(p, text, 3, chunk_bytes=4096)
    assert loop_on["taken"] > 0 and loop_on["declined"] == 0
    with use_backend("numpy"):
        plain = read_svmlight(p, n_features=3, chunk_bytes=4096)
    for field in ("features", "labels", "qids", "line_numbers"):
        np.testing.assert_array_equal(getattr(rows, field), getattr(plain, field))


@pytest.mark.parametrize(
    "line",
    ["1 qid:2 1:1e3", "1 qid:2 2:1 1:3", "1 qid:2 1:12345678901234567890", "1e1 qid:2 1:1"],
)
def test_compiled_loop_declines_other_spellings(tmp_path, loop_on, line):
    # exponents, unordered ids and long mantissas go through the line-by-line parser
    text = GOOD + line + "\n"
    check_same(write(tmp_path, text), text, 2)
    assert loop_on["declined"] == 1


@pytest.mark.parametrize("bad_line, field", [("1 qid:2 1:abc", "feature 1"), ("1 1:2", "qid")])
def test_compiled_loop_leaves_errors_to_the_line_parser(tmp_path, loop_on, bad_line, field):
    p = write(tmp_path, GOOD + bad_line + "\n")
    with pytest.raises(DataFormatError) as ei:
        parse_svmlight(p, n_features=2)
    assert ei.value.line == 3 and ei.value.field == field
