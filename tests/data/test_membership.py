"""Tests of groupbias.data.membership: affected-group and term-based membership matrices, and
term-list files (typed errors naming file and line). Counts are checked by hand and, on the
real TREC Fair titles, against a per-document ``collections.Counter`` loop."""

from __future__ import annotations

import collections
import math
import re

import numpy as np
import pandas as pd
import pytest

from groupbias.core.errors import DataFormatError, MissingFilesError, ParameterError
from groupbias.data.membership import (
    TermMembership,
    affected_group,
    load_term_list,
    load_term_lists,
    membership_from_groups,
    term_membership,
    tokenize,
)


def test_affected_group_crisp_and_fractional():
    # crisp memberships: exactly the ones, whatever the threshold
    assert affected_group([1, 0, 1, 0]).tolist() == [True, False, True, False]
    assert affected_group(np.array([True, False]), None).tolist() == [True, False]
    # fractional memberships split at 0.5 by default, at the given threshold otherwise
    g = [0.9, 0.5, 0.49, 0.0, 1.0]
    assert affected_group(g).tolist() == [True, True, False, False, True]
    assert affected_group(g, 0.95).tolist() == [False, False, False, False, True]


def test_affected_group_refusals():
    with pytest.raises(ParameterError, match="groups.*binary") as exc:
        affected_group([0.9, 0.1], None)  # a caller that takes crisp groups only
    assert "group_threshold=0.5" in str(exc.value)
    with pytest.raises(ParameterError, match="groups.*length 3"):
        affected_group([1, 0], n=3)
    with pytest.raises(ParameterError, match="groups.*in \\[0, 1\\]"):
        affected_group([1.5, 0.2])
    with pytest.raises(ParameterError, match="group_threshold"):
        affected_group([0.9, 0.1], 0.0)


def test_tokenize():
    assert tokenize("Women's Health-Care, 2020!") == ["women", "s", "health", "care", "2020"]
    assert tokenize("") == []
    assert tokenize("Ärztin und Arzt") == ["ärztin", "und", "arzt"]


def test_membership_from_groups():
    m = membership_from_groups(np.array([1.0, 0.0, 0.25]))
    np.testing.assert_array_equal(m, [[1.0, 0.0], [0.0, 1.0], [0.25, 0.75]])
    assert m.dtype == np.float64
    assert membership_from_groups(np.array([True, False])).tolist() == [[1, 0], [0, 1]]
    for bad in (np.array([0.5, 1.5]), np.array([np.nan]), np.zeros((2, 2))):
        with pytest.raises(ParameterError, match="groups"):
            membership_from_groups(bad)


def test_load_term_list_normalizes(tmp_path):
    p = tmp_path / "female.txt"
    p.write_bytes(
        "\ufeffShe\n\n# pronouns and nouns\nher\n  Woman  \nshe\nMÄDCHEN\n".encode("utf-8")
    )
    assert load_term_list(p) == ("she", "her", "woman", "mädchen")
    lists = load_term_lists({"f": p, "m": _write(tmp_path / "m.txt", "he\nhim\n")})
    assert list(lists) == ["f", "m"] and lists["m"] == ("he", "him")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "content, line, match",
    [
        ("he\nhim,m\n", 2, "one term per line"),
        ("he\nson\tm\n", 2, "one term per line"),
        ("he\n\nhealth care\n", 3, "not a single word token"),
        ("he\nco-author\n", 2, "not a single word token"),
        ("# only a comment\n\n", None, "no terms"),
        ("", None, "no terms"),
    ],
)
def test_load_term_list_errors_name_file_and_line(tmp_path, content, line, match):
    p = _write(tmp_path / "terms.txt", content)
    with pytest.raises(DataFormatError, match=match) as info:
        load_term_list(p)
    assert info.value.path == str(p)
    assert info.value.line == line
    if line is not None:
        assert f"line {line}" in str(info.value)


def test_load_term_list_bad_bytes_and_missing_file(tmp_path):
    p = tmp_path / "bin.txt"
    p.write_bytes(b"he\n\xff\xfe\n")
    with pytest.raises(DataFormatError, match="UTF-8") as info:
        load_term_list(p)
    assert info.value.line == 2
    with pytest.raises(MissingFilesError, match="absent.txt"):
        load_term_list(tmp_path / "absent.txt")
    with pytest.raises(ParameterError, match="paths"):
        load_term_lists({})


def test_term_membership_counts_by_hand():
    texts = [
        "She told her son: he is late.",  # f: she, her (2); m: son, he (2)
        "He and HE",  # m: 2
        None,  # missing text
        float("nan"),  # missing text (pandas)
        "nothing to see",  # no group term
        "parent parents",
    ]  # 'parent' listed for both groups
    lists = {"f": ["she", "her", "parent"], "m": ["he", "son", "parent"]}
    tm = term_membership(texts, lists)
    assert isinstance(tm, TermMembership) and tm.group_names == ("f", "m")
    np.testing.assert_array_equal(tm.counts, [[2, 2], [0, 2], [0, 0], [0, 0], [0, 0], [1, 1]])
    np.testing.assert_array_equal(tm.lengths, [7, 3, 0, 0, 3, 2])
    np.testing.assert_allclose(
        tm.membership, [[0.5, 0.5], [0, 1], [0, 0], [0, 0], [0, 0], [0.5, 0.5]]
    )
    # term exposure M / |d|: 2/7, 2/3, 1/2
    np.testing.assert_allclose(
        tm.term_exposure, [[2 / 7, 2 / 7], [0, 2 / 3], [0, 0], [0, 0], [0, 0], [0.5, 0.5]]
    )
    np.testing.assert_array_equal(tm.representative, [True, True, False, False, False, True])
    # a pandas Series of texts and an empty collection work too
    tm2 = term_membership(pd.Series(texts, dtype=object), lists)
    np.testing.assert_array_equal(tm2.counts, tm.counts)
    empty = term_membership([], lists)
    assert empty.counts.shape == (0, 2) and empty.lengths.shape == (0,)
    # another tokenizer: whitespace tokens keep punctuation, so 'late.' and 'son:' stay whole
    ws = term_membership(texts[:2], lists, tokenizer=lambda t: t.lower().split())
    np.testing.assert_array_equal(ws.counts, [[2, 1], [0, 2]])  # 'son:' is not 'son'
    np.testing.assert_array_equal(ws.lengths, [7, 3])


@pytest.mark.parametrize(
    "texts, lists, match",
    [
        ("one string", {"f": ["she"]}, "texts"),
        (["ok", 3], {"f": ["she"]}, r"texts\[1\]"),
        (["ok"], {}, "term_lists"),
        (["ok"], {"f": "she"}, "term_lists"),
        (["ok"], {"f": []}, "at least one term"),
        (["ok"], {"f": ["health care"]}, "single word"),
    ],
)
def test_term_membership_bad_input(texts, lists, match):
    with pytest.raises(ParameterError, match=match):
        term_membership(texts, lists)


@pytest.mark.realdata
def test_term_counts_on_trec_fair_titles_match_counter_loop(trec_root):
    papers = pd.read_csv(
        trec_root / "2020" / "corpus-subset-for-queries.papers.csv",
        usecols=["paper_title"],
        dtype=str,
        keep_default_na=False,
    )
    titles = papers["paper_title"].tolist()[:3000]
    lists = {
        "life": ["cancer", "patients", "clinical", "disease", "cell", "cells"],
        "computing": ["learning", "network", "networks", "data", "algorithm"],
    }
    tm = term_membership(titles, lists)
    for i, t in enumerate(titles):  # independent per-title count
        c = collections.Counter(re.findall(r"\w+", t.lower()))
        assert tm.lengths[i] == sum(c.values())
        for g, terms in enumerate(lists.values()):
            assert tm.counts[i, g] == sum(c[w] for w in terms)
    assert tm.counts[:, 0].sum() > 20 and tm.counts[:, 1].sum() > 20
    assert math.isclose(tm.membership[tm.representative].sum(axis=1).min(), 1.0)
