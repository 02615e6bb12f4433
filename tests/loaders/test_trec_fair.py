import json

import numpy as np
import pytest

from data_loaders.trec_fair import load_trec_fair_ppg, load_trec_fair_track
from groupbias.core.errors import DataFormatError, MissingFilesError, ParameterError

# ---------------------------------------------------------------------------------------
# tiny files in the track's exact layout
# ---------------------------------------------------------------------------------------
SAMPLE = [
    {
        "qid": 7,
        "query": "fair ranking",
        "frequency": 0.1,
        "documents": [
            {"doc_id": "p1", "relevance": 1},
            {"doc_id": "p2", "relevance": 0},
            {"doc_id": "p3", "relevance": 1},
        ],
    },
    {
        "qid": 9,
        "query": "exposure",
        "frequency": 0.2,
        "documents": [
            {"doc_id": "p4", "relevance": 0},
            {"doc_id": "p5", "relevance": 1},
            {"doc_id": "p6", "relevance": 0},
        ],
    },
    {"qid": 3, "query": "bias", "frequency": 0.3, "documents": [{"doc_id": "p5", "relevance": 0}]},
]
PAPERS_2020 = """paper_sha,paper_title,paper_year,paper_venue,n_citations,n_key_citations
p1,Title one,2015.0,Venue,10.0,
p2,"Title, two",2010.0,,3.0,1.0
p3,Title three,,,0.0,
p5,Title five,2001.0,,7.0,
p6,Title six,2002.0,,8.0,
"""
# authors: 1 H, 2 L, 3 L, 4 H; author 9 is unknown; p5's second author id is empty
PAPER_AUTHORS = """paper_sha,corpus_author_id,position
p1,2,1
p1,1,2
p2,1,2
p2,3,1
p3,3,1
p3,2,2
p3,4,3
p4,4,1
p5,9,1
p5,,2
p6,9,1
p6,1,2
"""
AUTHORS_2020 = """corpus_author_id,name,num_citations,num_papers,i10,h_index,h_class
1,A. One,500,40,20,25,H
2,B. Two,10,3,0,2,L
3,C. Three,5,2,0,1,L
4,D. Four,900,80,50,40,H
"""


def write_track(root, year=2020, sample=SAMPLE):
    d = root / str(year)
    d.mkdir(parents=True)
    name = (
        "TREC-Fair-Ranking-training-sample.json"
        if year == 2020
        else "fair-TREC-training-sample.json"
    )
    (d / name).write_text("".join(json.dumps(s) + "\n" for s in sample))
    (d / "corpus-subset-for-queries.papers.csv").write_text(PAPERS_2020)
    (d / "corpus-subset-for-queries.paper_authors.csv").write_text(PAPER_AUTHORS)
    (d / "corpus-subset-for-queries.authors.csv").write_text(AUTHORS_2020)
    if year == 2019:
        # level >= 4 is high: authors 1 (5) and 4 (7) high, 2 (1) and 3 (3) low
        (d / "fair-TREC-sample-author-groups.csv").write_text("author_id,gid\n1,5\n2,1\n3,3\n4,7\n")
    return d / name


@pytest.mark.parametrize("year", [2019, 2020])
def test_track_first_author_rule(tmp_path, year):
    write_track(tmp_path, year)
    d = load_trec_fair_track(tmp_path, year)
    # query 3 holds only p5 (no known author) -> empty -> dropped; p5, p6 dropped in query 9
    assert list(d.query_ids) == [7, 9]
    np.testing.assert_array_equal(d.qptr, [0, 3, 4])
    assert list(d.item_ids) == ["p1", "p2", "p3", "p4"]
    # first authors (by position): p1 -> 2 (L), p2 -> 3 (L), p3 -> 3 (L), p4 -> 4 (H)
    np.testing.assert_array_equal(d.groups, [1, 1, 1, 0])
    np.testing.assert_array_equal(d.labels, [1, 0, 1, 0])
    m = d.meta
    assert m["documents_without_known_group"] == 3  # p5 twice, p6
    assert m["queries_dropped_empty"] == 1
    assert m["documents_without_metadata"] == 1  # p4
    assert m["pairs_in_sample"] == 7 and m["relevant_in_sample"] == 3
    # features: n_citations, n_key_citations, paper_year, n_authors; missing -> 0
    np.testing.assert_array_equal(
        d.features, [[10, 0, 2015, 2], [3, 1, 2010, 2], [0, 0, 0, 3], [0, 0, 0, 1]]
    )


def test_track_author_rules_and_unknown_policy(tmp_path):
    write_track(tmp_path)
    none_high = load_trec_fair_track(tmp_path, 2020, author_rule="none_high")
    # p6 has one known author (1, H): known -> kept with group 0
    assert list(none_high.item_ids) == ["p1", "p2", "p3", "p4", "p6"]
    np.testing.assert_array_equal(none_high.groups, [0, 0, 0, 0, 0])
    majority = load_trec_fair_track(tmp_path, 2020, author_rule="majority")
    # p1: 1 L vs 1 H (tie: not affected); p3: 2 L vs 1 H
    np.testing.assert_array_equal(majority.groups, [0, 0, 1, 0, 0])
    frac = load_trec_fair_track(tmp_path, 2020, author_rule="fraction")
    np.testing.assert_allclose(frac.groups, [1 / 2, 1 / 2, 2 / 3, 0, 0])
    aff = load_trec_fair_track(tmp_path, 2020, unknown="affected")
    assert list(aff.query_ids) == [7, 9, 3]
    np.testing.assert_array_equal(aff.groups, [1, 1, 1, 0, 1, 1, 1])
    non = load_trec_fair_track(tmp_path, 2020, unknown="non_affected")
    np.testing.assert_array_equal(non.groups, [1, 1, 1, 0, 0, 0, 0])
    with pytest.raises(ParameterError, match="author_rule"):
        load_trec_fair_track(tmp_path, 2020, author_rule="last")
    with pytest.raises(ParameterError, match="year"):
        load_trec_fair_track(tmp_path, 2018)


def test_track_2019_level_threshold(tmp_path):
    write_track(tmp_path, 2019)
    # level >= 2 makes author 3 (level 3) high too: p2 and p3 first authors are author 3
    d = load_trec_fair_track(tmp_path, 2019, high_level=2)
    np.testing.assert_array_equal(d.groups, [1, 0, 0, 0])


def test_track_format_errors(tmp_path):
    bad = [dict(SAMPLE[0]), dict(SAMPLE[1])]
    bad[1] = {**bad[1], "documents": [{"doc_id": "p4", "relevance": 2}]}
    write_track(tmp_path, 2020, bad)
    with pytest.raises(DataFormatError) as exc:
        load_trec_fair_track(tmp_path, 2020)
    assert exc.value.line == 2 and exc.value.field == "relevance"

    other = tmp_path / "other"
    path = write_track(other, 2020)
    path.write_text(json.dumps(SAMPLE[0]) + "\n{not json\n")
    with pytest.raises(DataFormatError, match="line 2.*invalid JSON"):
        load_trec_fair_track(other, 2020)
    path.write_text(json.dumps(SAMPLE[0]) + "\n" + json.dumps(SAMPLE[0]) + "\n")
    with pytest.raises(DataFormatError, match="appears twice"):
        load_trec_fair_track(other, 2020)

    (other / "2020" / "corpus-subset-for-queries.authors.csv").unlink()
    with pytest.raises(MissingFilesError, match="authors.csv"):
        load_trec_fair_track(other, 2020)


def test_track_bad_h_class(tmp_path):
    write_track(tmp_path)
    (tmp_path / "2020" / "corpus-subset-for-queries.authors.csv").write_text(
        AUTHORS_2020.replace(",25,H", ",25,X")
    )
    with pytest.raises(DataFormatError) as exc:
        load_trec_fair_track(tmp_path, 2020)
    assert exc.value.line == 2 and exc.value.field == "h_class"


# ---------------------------------------------------------------------------------------
# ppg files
# ---------------------------------------------------------------------------------------
PPG_HEADER = "sensitive_attribute,session,score,feature_1,feature_2,feature_3\n"


def write_ppg(root, text, year=2019, split="train"):
    d = root / "ppg" / str(year)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{split}.csv").write_text(PPG_HEADER + text)


def test_ppg_small(tmp_path):
    write_ppg(tmp_path, "H,5,1,0.5,1,2\nL,5,0,1.5,1,2\nL,8,1,2.5,0,1\n")
    d = load_trec_fair_ppg(tmp_path, 2019, "train")
    assert list(d.query_ids) == [5, 8]
    np.testing.assert_array_equal(d.qptr, [0, 2, 3])
    np.testing.assert_array_equal(d.groups, [0, 1, 1])
    np.testing.assert_array_equal(d.labels, [1, 0, 1])
    np.testing.assert_array_equal(d.features[:, 0], [0.5, 1.5, 2.5])
    np.testing.assert_array_equal(d.feature_ids, [1, 2, 3])
    assert not d.meta["sessions_regrouped"]


def test_ppg_non_contiguous_sessions_grouped_stably(tmp_path):
    write_ppg(tmp_path, "H,5,1,0,0,0\nL,7,0,1,0,0\nL,5,0,2,0,0\nH,7,1,3,0,0\nH,5,0,4,0,0\n")
    d = load_trec_fair_ppg(tmp_path, 2019)
    assert list(d.query_ids) == [5, 7] and d.meta["sessions_regrouped"]
    np.testing.assert_array_equal(d.features[:, 0], [0, 2, 4, 1, 3])


@pytest.mark.parametrize(
    "text, line, field",
    [
        ("H,5,1,0,0,0\nM,5,0,1,0,0\n", 3, "sensitive_attribute"),
        ("H,5,1,0,0,0\nL,5,0,x,0,0\n", 3, "feature_1"),
        ("H,5,1,0,0,0\nL,5.5,0,1,0,0\n", 3, "session"),
        ("H,5,1,0,0,0\nL,5,,1,0,0\n", 3, "score"),
        ("H,5,1,0,0,0\nL,5,1.5,1,0,0\n", 3, "score"),  # a grade that is not whole
        ("H,5,1,0,0,0\n\nL,5,0.25,1,0,0\n", 4, "score"),
    ],
)
def test_ppg_format_errors(tmp_path, text, line, field):
    write_ppg(tmp_path, text)
    with pytest.raises(DataFormatError) as exc:
        load_trec_fair_ppg(tmp_path, 2019)
    assert exc.value.line == line and exc.value.field == field


def test_ppg_missing_file(tmp_path, monkeypatch):
    with pytest.raises(MissingFilesError, match="ppg/2020/test.csv"):
        load_trec_fair_ppg(tmp_path, 2020, "test")
    monkeypatch.delenv("GROUPBIAS_TREC_FAIR", raising=False)
    with pytest.raises(MissingFilesError, match="GROUPBIAS_TREC_FAIR"):
        load_trec_fair_ppg(None, 2020)
    with pytest.raises(ParameterError, match="split"):
        load_trec_fair_ppg(tmp_path, 2020, "valid")


# ---------------------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------------------
def _both(d):
    qi = d.query_index()
    a = np.bincount(qi, weights=d.groups, minlength=d.n_queries)
    n = np.bincount(qi, weights=1 - d.groups, minlength=d.n_queries)
    return int(np.sum((a > 0) & (n > 0)))


@pytest.mark.realdata
@pytest.mark.parametrize(
    "year, split, rows, queries, both",
    [
        (2019, "train", 2672, 632, 386),
        (2019, "test", 4298, 635, None),
        (2020, "train", 4694, 200, 191),
        (2020, "test", 4677, 200, None),
    ],
)
def test_ppg_real_counts(trec_root, year, split, rows, queries, both):
    d = load_trec_fair_ppg(trec_root, year, split)
    assert (d.n_items, d.n_queries, d.n_features) == (rows, queries, 25)
    assert np.unique(d.query_ids).size == queries
    if both is not None:
        assert _both(d) == both
    assert set(np.unique(d.labels)) == {0.0, 1.0}


@pytest.mark.realdata
def test_ppg_real_file_with_one_fractional_grade_is_refused(trec_root, tmp_path):
    """One grade 1 -> 1.5 in TREC Fair 2020's train file: it was read silently (label_max
    1.5); now the line and the value are named."""
    lines = (trec_root / "ppg" / "2020" / "train.csv").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if i and line.split(",")[2] == "1")
    cells = lines[at].split(",")
    lines[at] = ",".join([*cells[:2], "1.5", *cells[3:]])
    (tmp_path / "ppg" / "2020").mkdir(parents=True)
    (tmp_path / "ppg" / "2020" / "train.csv").write_text("".join(lines))
    with pytest.raises(DataFormatError) as exc:
        load_trec_fair_ppg(tmp_path, 2020, "train")
    assert exc.value.line == at + 1 and exc.value.field == "score"
    assert "'1.5'" in str(exc.value) and "train.csv" in str(exc.value)


@pytest.mark.realdata
@pytest.mark.parametrize(
    "year, queries, pairs, relevant", [(2019, 652, 4641, 2241), (2020, 200, 4826, 757)]
)
def test_track_real_sample_counts(trec_root, year, queries, pairs, relevant):
    d = load_trec_fair_track(trec_root, year, unknown="non_affected")
    assert (d.n_queries, d.n_items, int(d.labels.sum())) == (queries, pairs, relevant)
    assert d.meta["queries_in_sample"] == queries and d.meta["pairs_in_sample"] == pairs


@pytest.mark.realdata
def test_track_2020_first_author_equals_ppg_train(trec_root):
    """The first-author h_class rule with unknowns dropped rebuilds ppg/2020/train.csv:
    the same documents, relevance and groups per query, in the same order."""
    ppg = load_trec_fair_ppg(trec_root, 2020, "train")
    track = load_trec_fair_track(trec_root, 2020)
    assert (track.n_items, track.n_queries, _both(track)) == (4694, 200, 191)
    pos = {q: i for i, q in enumerate(ppg.query_ids)}
    for i, q in enumerate(track.query_ids):
        a, b = track.query(i), ppg.query(pos[q])
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.groups, b.groups)


@pytest.mark.realdata
def test_track_2019_levels_agree_with_ppg(trec_root):
    ppg = load_trec_fair_ppg(trec_root, 2019, "train")
    track = load_trec_fair_track(trec_root, 2019)
    pos = {q: i for i, q in enumerate(ppg.query_ids)}
    agree = total = 0
    for i, q in enumerate(track.query_ids):
        a = track.query(i)
        if q in pos and np.array_equal(a.labels, ppg.query(pos[q]).labels):
            agree += int(np.sum(a.groups == ppg.query(pos[q]).groups))
            total += a.labels.size
    assert total > 2000 and agree / total > 0.98


def test_track_qid_as_number_or_string_is_one_query(tmp_path):
    # 7 and "7" are the same query: the second is the existing "appears twice" error
    sample = [dict(SAMPLE[0]), {**SAMPLE[1], "qid": "7"}]
    path = write_track(tmp_path, 2020, sample)
    with pytest.raises(DataFormatError, match="appears twice") as exc:
        load_trec_fair_track(tmp_path, 2020)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(path), 2, "qid")
    # string qids of digits load as the same int ids as numeric ones
    sample = [{**SAMPLE[0], "qid": "7"}, {**SAMPLE[1], "qid": " 9"}, dict(SAMPLE[2])]
    write_track(tmp_path / "b", 2020, sample)
    d = load_trec_fair_track(tmp_path / "b", 2020)
    assert d.query_ids.dtype == np.int64 and list(d.query_ids) == [7, 9]
    np.testing.assert_array_equal(d.qptr, [0, 3, 4])
    # a qid that is not a number keeps every id a string
    sample = [{**SAMPLE[0], "qid": "q7"}, dict(SAMPLE[1]), dict(SAMPLE[2])]
    write_track(tmp_path / "c", 2020, sample)
    assert list(load_trec_fair_track(tmp_path / "c", 2020).query_ids) == ["q7", "9"]
