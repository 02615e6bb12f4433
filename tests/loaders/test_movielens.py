import math

import numpy as np
import pytest

from data_loaders.movielens import load_movielens
from groupbias.core.errors import DataFormatError, MissingFilesError, ParameterError

# (user, movie, rating) in scrambled file order; user 1 rates 10, 20, 30; user 2 rates 20,
# 40; user 3 rates 40
RATINGS = [(2, 40, 2), (1, 20, 3), (1, 10, 5), (3, 40, 4), (2, 20, 1), (1, 30, 4)]
PLAIN_META = (
    "movie_id,country,gross\n"
    "10,USA,250000000\n"
    '20,France|USA,"$5,000,000"\n'  # first country France; $5M
    "30,United States,0\n"
)  # gross 0 = unknown; movie 40 absent


def write_dat(d, rows=RATINGS, name="ratings.dat"):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text("".join(f"{u}::{m}::{r}::97830{i}\n" for i, (u, m, r) in enumerate(rows)))
    return d / name


def write_udata(d, rows=RATINGS):
    d.mkdir(parents=True, exist_ok=True)
    (d / "u.data").write_text(
        "".join(f"{u}\t{m}\t{r}\t8812{i}\n" for i, (u, m, r) in enumerate(rows))
    )
    return d / "u.data"


def write_csv(d, rows=RATINGS):
    d.mkdir(parents=True, exist_ok=True)
    (d / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n"
        + "".join(f"{u},{m},{r},11{i}\n" for i, (u, m, r) in enumerate(rows))
    )
    return d / "ratings.csv"


@pytest.fixture
def plain_meta(tmp_path):
    p = tmp_path / "meta.csv"
    p.write_text(PLAIN_META)
    return p


@pytest.mark.parametrize("writer", [write_dat, write_udata, write_csv])
def test_country_grouping_each_format(tmp_path, plain_meta, writer):
    path = writer(tmp_path / "ml")
    d = load_movielens(path.parent, metadata=plain_meta, grouping="country")
    # movie 40 has no metadata -> dropped; user 3 is left empty -> dropped
    assert list(d.query_ids) == [1, 2]
    np.testing.assert_array_equal(d.qptr, [0, 3, 4])
    np.testing.assert_array_equal(d.item_ids, [10, 20, 30, 20])
    np.testing.assert_allclose(d.labels, [5 / 5, 3 / 5, 4 / 5, 1 / 5])
    np.testing.assert_array_equal(d.groups, [0, 1, 0, 1])  # France first -> non-US
    m = d.meta
    assert m["movies_without_metadata"] == 1 and m["ratings_without_metadata"] == 2
    assert m["users_dropped_empty"] == 1
    assert m["movies_affected"] == 1 and m["movies_non_affected"] == 2
    # popularity: movie 10 rated once, movie 20 twice -> log(2), log(3)
    np.testing.assert_allclose(d.features[:2, 0], [math.log(2), math.log(3)], rtol=1e-6)
    assert d.label_max == 1.0


def test_box_office_and_missing_policies(tmp_path, plain_meta):
    path = write_dat(tmp_path / "ml")
    bo = load_movielens(path, metadata=plain_meta, grouping="box_office")
    # gross: 10 -> $250M (high), 20 -> $5M (low), 30 -> 0 (unknown), 40 -> absent
    np.testing.assert_array_equal(bo.item_ids, [10, 20, 20])
    np.testing.assert_array_equal(bo.groups, [0, 1, 1])
    assert bo.meta["movies_without_metadata"] == 2
    low = load_movielens(path, metadata=plain_meta, grouping="box_office", box_office_threshold=1e6)
    np.testing.assert_array_equal(low.groups, [0, 0, 0])
    aff = load_movielens(path, metadata=plain_meta, grouping="country", missing="affected")
    assert list(aff.query_ids) == [1, 2, 3]
    np.testing.assert_array_equal(aff.groups, [0, 1, 0, 1, 1, 1])
    non = load_movielens(path, metadata=plain_meta, grouping="country", missing="non_affected")
    np.testing.assert_array_equal(non.groups, [0, 1, 0, 1, 0, 0])
    plain = load_movielens(path, grouping=None)
    assert plain.groups is None and plain.n_items == 6


def test_release_year_from_movies_file(tmp_path, plain_meta):
    path = write_dat(tmp_path / "ml")
    (path.parent / "movies.dat").write_text(
        "10::Toy Story (1995)::Animation\n20::Heat: The Sequel (1996)::Action\n"
        "30::No Year::Drama\n",
        encoding="latin-1",
    )
    d = load_movielens(path, metadata=plain_meta)
    np.testing.assert_array_equal(d.features[:, 1], [1995, 1996, 0, 1996])
    assert d.meta["year_source"] == "movies.dat"


def test_half_star_ratings(tmp_path):
    p = write_csv(tmp_path / "ml", rows=[(1, 10, 3.5), (1, 20, 0.5)])
    d = load_movielens(p, grouping=None)
    np.testing.assert_allclose(d.labels, [0.7, 0.1])


def test_the_movies_dataset_metadata(tmp_path):
    ml = write_dat(tmp_path / "ml")
    tmd = tmp_path / "tmd"
    tmd.mkdir()
    (tmd / "movies_metadata.csv").write_text(
        "adult,id,imdb_id,original_title,production_countries,revenue\n"
        "False,862,tt0114709,Toy Story,"
        "\"[{'iso_3166_1': 'US', 'name': 'United States of America'}]\",373554033\n"
        "False,8844,tt0113497,Jumanji,\"[{'iso_3166_1': 'FR', 'name': 'France'}, "
        "{'iso_3166_1': 'US', 'name': 'United States of America'}]\",12000000\n"
        " - shifted row,1997-08-20,0,broken,,\n"
        "False,555,tt0000555,No Country,[],0\n"
    )
    (tmd / "links.csv").write_text(
        "movieId,imdbId,tmdbId\n10,0114709,862\n20,9999999,8844\n30,0000555,555\n40,0000001,\n"
    )
    co = load_movielens(ml, metadata=tmd / "movies_metadata.csv", grouping="country")
    # 10 -> US (imdb join), 20 -> FR first (tmdb fallback), 30 -> [] unknown, 40 unknown
    np.testing.assert_array_equal(co.item_ids, [10, 20, 20])
    np.testing.assert_array_equal(co.groups, [0, 1, 1])
    assert co.meta["metadata_rows_skipped"] == 1
    assert co.meta["metadata_format"] == "the-movies-dataset"
    bo = load_movielens(ml, metadata=tmd, grouping="box_office")
    np.testing.assert_array_equal(bo.groups, [0, 1, 1])  # $373.6M high, $12M low
    (tmd / "links.csv").unlink()
    with pytest.raises(MissingFilesError, match="links.csv"):
        load_movielens(ml, metadata=tmd, grouping="country")


@pytest.mark.parametrize(
    "text, line, field",
    [
        ("1::10::5::1\n1::x::3::2\n", 2, "MovieID"),
        ("1::10::5::1\n\n2::10::6::3\n", 3, "Rating"),
        ("1::10::5::1\n1:20:3:2\n", 2, "separator"),
    ],
)
def test_dat_format_errors(tmp_path, text, line, field):
    p = tmp_path / "ratings.dat"
    p.write_text(text)
    with pytest.raises(DataFormatError) as exc:
        load_movielens(p, grouping=None)
    assert (exc.value.line, exc.value.field) == (line, field)


def test_other_format_errors(tmp_path, plain_meta):
    u = tmp_path / "u.data"
    u.write_text("1\t10\t5\t1\n2\t10\tfive\t1\n")
    with pytest.raises(DataFormatError) as exc:
        load_movielens(u, grouping=None)
    assert (exc.value.line, exc.value.field) == (2, "rating")
    c = tmp_path / "r.csv"
    c.write_text("user,movieId,rating\n1,2,3\n")
    with pytest.raises(DataFormatError, match="userId"):
        load_movielens(c, grouping=None)
    bad_meta = tmp_path / "m.csv"
    bad_meta.write_text("film,land\n10,USA\n")
    ok = write_dat(tmp_path / "ml")
    with pytest.raises(DataFormatError, match="unknown metadata layout"):
        load_movielens(ok, metadata=bad_meta)
    with pytest.raises(ParameterError, match="grouping"):
        load_movielens(ok, metadata=plain_meta, grouping="genre")


def test_paths_env_and_missing(tmp_path, plain_meta, monkeypatch):
    ml = write_dat(tmp_path / "ml", name="ratings.txt")  # sniffed from content
    monkeypatch.setenv("GROUPBIAS_MOVIELENS", str(ml))
    monkeypatch.setenv("GROUPBIAS_MOVIELENS_META", str(plain_meta))
    assert load_movielens().meta["format"] == "dat"
    monkeypatch.delenv("GROUPBIAS_MOVIELENS_META")
    with pytest.raises(MissingFilesError, match="GROUPBIAS_MOVIELENS_META"):
        load_movielens()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MissingFilesError, match="ratings.dat.*u.data.*ratings.csv"):
        load_movielens(empty, grouping=None)


# ---- silent corruptions that must raise (or be read right) ------------------------------------
@pytest.mark.parametrize("writer", [write_dat, write_udata, write_csv])
def test_duplicate_rating_names_both_lines(tmp_path, writer):
    # user 1 rates movie 20 on data record 2 and again on record 5 (same or another rating)
    rows = RATINGS[:4] + [(1, 20, 1)] + RATINGS[4:]
    p = writer(tmp_path / "ml", rows=rows)
    offset = 1 if writer is write_csv else 0  # the CSV header is line 1
    with pytest.raises(DataFormatError) as exc:
        load_movielens(p, grouping=None)
    e = exc.value
    assert e.path == str(p) and e.line == 5 + offset
    assert f"first on line {2 + offset}" in str(e) and "user 1" in str(e) and "movie 20" in str(e)


@pytest.mark.parametrize(
    "name, text, line, field",
    [
        ("ratings.dat", "1::10::5::1\n1::20::3\n", 2, "Timestamp"),
        ("ratings.dat", "1::10::5::1\n1::20::3::\n", 2, "Timestamp"),
        ("u.data", "1\t10\t5\t1\n1\t20\t3\n", 2, "timestamp"),
        ("ratings.csv", "userId,movieId,rating,timestamp\n1,10,5,1\n1,20,3\n", 3, "timestamp"),
    ],
)
def test_rating_without_timestamp_is_rejected(tmp_path, name, text, line, field):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(DataFormatError) as exc:
        load_movielens(p, grouping=None)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(p), line, field)


def test_udata_header_line_is_skipped(tmp_path):
    p = tmp_path / "u.data"
    p.write_text("user_id\titem_id\trating\ttimestamp\n1\t10\t5\t881250949\n2\t10\t3\t881250950\n")
    d = load_movielens(p, grouping=None)
    np.testing.assert_array_equal(d.query_ids, [1, 2])
    np.testing.assert_allclose(d.labels, [1.0, 0.6])
    # errors after a header still name the file line
    p.write_text("user\titem\trating\ttimestamp\n1\t10\t5\t1\n2\t10\tsix\t2\n")
    with pytest.raises(DataFormatError) as exc:
        load_movielens(p, grouping=None)
    assert (exc.value.line, exc.value.field) == (3, "rating")
    # a corrupt first data line is not mistaken for a header
    p.write_text("x\t10\t5\t1\n2\t10\t3\t2\n")
    with pytest.raises(DataFormatError) as exc:
        load_movielens(p, grouping=None)
    assert (exc.value.line, exc.value.field) == (1, "user")


def test_conflicting_plain_metadata_rows_raise(tmp_path):
    ml = write_dat(tmp_path / "ml")
    meta = tmp_path / "meta.csv"
    meta.write_text(PLAIN_META + "40,USA,1000\n20,Italy,5000000\n")
    with pytest.raises(DataFormatError) as exc:
        load_movielens(ml, metadata=meta, grouping="country")
    e = exc.value
    assert (e.line, e.field) == (6, "movie_id") and "line 3" in str(e) and "Italy" in str(e)
    # an identical repeat is harmless
    meta.write_text(PLAIN_META + '20,France|USA,"$5,000,000"\n')
    d = load_movielens(ml, metadata=meta, grouping="country")
    np.testing.assert_array_equal(d.item_ids, [10, 20, 30, 20])


def _tmd(tmp_path, metadata_rows, links_rows):
    tmd = tmp_path / "tmd"
    tmd.mkdir(exist_ok=True)
    (tmd / "movies_metadata.csv").write_text(
        "id,imdb_id,production_countries,revenue\n" + "".join(r + "\n" for r in metadata_rows)
    )
    (tmd / "links.csv").write_text(
        "movieId,imdbId,tmdbId\n" + "".join(r + "\n" for r in links_rows)
    )
    return tmd


def test_conflicting_movies_dataset_rows_raise(tmp_path):
    ml = write_dat(tmp_path / "ml")
    us = "\"[{'iso_3166_1': 'US'}]\""
    fr = "\"[{'iso_3166_1': 'FR'}]\""
    tmd = _tmd(tmp_path, [f"862,tt0114709,{us},100", f"862,tt0114709,{fr},100"], ["10,0114709,862"])
    with pytest.raises(DataFormatError) as exc:
        load_movielens(ml, metadata=tmd, grouping="country")
    e = exc.value
    assert e.path == str(tmd / "movies_metadata.csv") and e.line == 3 and "line 2" in str(e)
    # the same movieId mapped twice in links.csv, to different films
    tmd = _tmd(tmp_path, [f"862,tt0114709,{us},100"], ["10,0114709,862", "20,1", "10,0000002,5"])
    with pytest.raises(DataFormatError) as exc:
        load_movielens(ml, metadata=tmd, grouping="country")
    e = exc.value
    assert e.path == str(tmd / "links.csv") and e.line == 4 and "line 2" in str(e)


def test_missing_metadata_and_links_say_how_to_pass_them(tmp_path, monkeypatch):
    ml = write_dat(tmp_path / "ml")
    monkeypatch.delenv("GROUPBIAS_MOVIELENS_META", raising=False)
    for metadata in (None, tmp_path / "nowhere.csv"):
        with pytest.raises(MissingFilesError) as exc:
            load_movielens(ml, metadata=metadata, grouping="country")
        msg = str(exc.value)
        assert "GROUPBIAS_MOVIELENS_META" in msg and "dataset.params.metadata" in msg
    us = "\"[{'iso_3166_1': 'US'}]\""
    tmd = _tmd(tmp_path, [f"862,tt0114709,{us},100"], ["10,0114709,862"])
    (tmd / "links.csv").unlink()
    with pytest.raises(MissingFilesError) as exc:
        load_movielens(ml, metadata=tmd, grouping="country")
    assert "links.csv" in str(exc.value) and "dataset.params.links=" in str(exc.value)
    # a directory where a file is expected
    with pytest.raises(MissingFilesError, match="is a directory") as exc:
        load_movielens(ml, metadata=tmd, links=tmd, grouping="country")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MissingFilesError, match="is a directory"):
        load_movielens(ml, metadata=empty, grouping="country")
