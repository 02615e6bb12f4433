"""MovieLens ratings as ranking data with movie groups (paper Sec. 6.1, dataset (iv)).

Users are queries, the movies a user rated are that query's items, and the relevance label is
the normalized rating ``label = rating / 5`` (continuous in (0, 1], ``label_max = 1``; every
MovieLens release uses a 5-star scale, ml-latest with half stars).

Rating files (format detected from the file name, else from the first line):

- ML-1M / ML-10M ``ratings.dat``: ``UserID::MovieID::Rating::Timestamp``
- ML-100K ``u.data``: tab-separated ``user item rating timestamp``
- ml-latest(-small) ``ratings.csv``: header ``userId,movieId,rating,timestamp``

Movie metadata (``metadata=``), one of:

(i) a plain CSV with header ``movie_id,country,gross``: ``country`` is the movie's first
    listed country of origin (when several are given separated by ``|``, ``;`` or ``,`` the
    first is used), ``gross`` the cumulative worldwide gross in US dollars (``$`` and thousands
    separators allowed; empty = unknown).
(ii) "The Movies Dataset" (TMDB metadata for the movies of the full MovieLens release):
    ``movies_metadata.csv`` (columns ``id`` = TMDB id, ``imdb_id``, ``production_countries``,
    ``revenue``) plus ``links.csv`` (``movieId,imdbId,tmdbId``) that maps MovieLens ids;
    ``links.csv`` is looked up as ``links=``, beside the metadata file, then beside the ratings.
    Movies are joined on the IMDb id, falling back to the TMDB id. ``production_countries`` is a
    Python-literal list of dicts (``[{'iso_3166_1': 'US', 'name': '...'}]``); only the first
    ``iso_3166_1`` code is extracted, with a regular expression (nothing is evaluated). Rows
    whose ``id`` is not an integer are skipped and counted in ``meta`` (the public file has a
    few such shifted rows). MovieLens ids are stable across releases, so ``links.csv`` of the
    full release also maps ML-1M / ML-100K ids.

Groupings (``groups = 1`` = affected):

- ``"country"`` ([Co.]): affected = first listed country is not the United States.
- ``"box_office"`` ([BO]): affected = gross < ``box_office_threshold`` (default $100M);
  a gross / revenue of 0 is treated as unknown (TMDB stores unknown revenue as 0).

Movies without the needed metadata follow ``missing``: ``"drop"`` (default) removes their
ratings (users left without ratings are removed), ``"affected"`` / ``"non_affected"`` assign
them a group. Counts are reported in ``meta``.

Features (ids 1..2): 1 = ``log(1 + number of ratings of the movie)`` over the whole ratings
file (popularity); 2 = the movie's release year parsed from the title in the movies file
beside the ratings (``movies.dat``, ``u.item`` or ``movies.csv``), 0 when the file or the
year is absent (``meta["year_source"]`` says which file was used).

The ratings location is ``path`` or ``$GROUPBIAS_MOVIELENS``; metadata is ``metadata`` or
``$GROUPBIAS_MOVIELENS_META``.

Checks: every rating needs its timestamp; a user rating the same movie twice raises (naming
both lines); a ``u.data`` header line of four column names is skipped; metadata rows giving
one movie different values raise (naming both lines), identical repeats are dropped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias.core.errors import DataError, DataFormatError, MissingFilesError, ParameterError
from groupbias.core.io import env_value
from groupbias.core.validation import choice, real
from groupbias.data.ranking_data import RankingData

from ._lazy import pandas as pd
from ._options import optional_path
from ._tables import (
    check_text,
    first_bad,
    id_column,
    numeric_column,
    read_table,
    record_line,
    resolve_path,
)

ENV_VAR = "GROUPBIAS_MOVIELENS"
META_ENV_VAR = "GROUPBIAS_MOVIELENS_META"
RATING_FILES = ("ratings.dat", "u.data", "ratings.csv")
MOVIE_FILES = {"dat": "movies.dat", "tab": "u.item", "csv": "movies.csv"}
MAX_RATING = 5.0
GROUPINGS = ("country", "box_office")
MISSING_POLICIES = ("drop", "affected", "non_affected")
US_NAMES = frozenset({"US", "USA", "U.S.", "U.S.A.", "UNITED STATES", "UNITED STATES OF AMERICA"})
_ISO_RE = r"""['"]iso_3166_1['"]\s*:\s*['"]([A-Za-z]{2})['"]"""
_YEAR_RE = r"\((\d{4})\)\s*$"


# ---------------------------------------------------------------------------------------
# ratings
# ---------------------------------------------------------------------------------------
def _detect_format(path: Path) -> str:
    check_text(path)
    n = path.name.lower()
    if n.endswith(".dat"):
        return "dat"
    if n.endswith(".data") or n.endswith(".tsv"):
        return "tab"
    if n.endswith(".csv"):
        return "csv"
    with open(path, encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    if "::" in first:
        return "dat"
    if "\t" in first:
        return "tab"
    if "," in first:
        return "csv"
    raise DataFormatError(
        path,
        1,
        "cannot tell the ratings format: expected "
        "'UserID::MovieID::Rating::Timestamp', tab-separated "
        "'user item rating timestamp', or CSV 'userId,movieId,rating,...'",
    )


_NAME_RE = r"[A-Za-z_][A-Za-z_ -]*"  # user_id, user id, user-id


def _tab_header(path: Path) -> bool:
    """Whether the first line of a tab-separated ratings file is a header (four column
    names, e.g. ``user_id\titem_id\trating\ttimestamp``), to be skipped."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        cells = fh.readline().rstrip("\r\n").split("\t")
    return len(cells) == 4 and all(re.fullmatch(_NAME_RE, c.strip()) for c in cells)


def _ratings_frame(path: Path, fmt: str):
    """``(df, columns, field names, header, sep, encoding)`` of a ratings file; the columns
    are user, movie, rating, timestamp."""
    if fmt == "dat":
        # "::" split with the fast C parser: separator ":" yields empty fields 1, 3, 5
        df = read_table(
            path,
            sep=":",
            header=None,
            names=list(range(7)),
            keep_default_na=False,
            na_values=[""],
            encoding="latin-1",
        )
        stray = df[[1, 3, 5]].notna().any(axis=1).to_numpy()
        bad = first_bad(stray)
        if bad is not None:
            raise DataFormatError(
                path,
                record_line(path, bad, header=False, sep=":", encoding="latin-1"),
                "expected 'UserID::MovieID::Rating::Timestamp'",
                field="separator",
            )
        return df, (0, 2, 4, 6), ("UserID", "MovieID", "Rating", "Timestamp"), False, ":", "latin-1"
    if fmt == "tab":
        header = _tab_header(path)
        df = read_table(
            path,
            sep="\t",
            header=None,
            skiprows=1 if header else 0,
            names=list(range(4)),
            keep_default_na=False,
            na_values=[""],
        )
        return df, (0, 1, 2, 3), ("user", "item", "rating", "timestamp"), header, "\t", "utf-8"
    df = read_table(path, keep_default_na=False, na_values=[""])
    df.columns = [str(c).strip() for c in df.columns]
    need = ("userId", "movieId", "rating", "timestamp")
    lower = {c.lower(): c for c in df.columns}
    miss = [c for c in need if c.lower() not in lower]
    if miss:
        raise DataFormatError(
            path,
            1,
            "missing column(s) "
            + ", ".join(miss)
            + "; expected header userId,movieId,rating,timestamp",
            field=miss[0],
        )
    return df, tuple(lower[c.lower()] for c in need), need, True, ",", "utf-8"


def _read_ratings(path: Path, fmt: str):
    """``(user, movie, rating, line)`` of a ratings file, validated; ``line(i)`` is the
    1-based file line of rating ``i``. Every rating needs its timestamp; a second rating
    of the same user and movie raises, naming both lines."""
    df, cols, fields, header, sep, enc = _ratings_frame(path, fmt)

    def line(i: int) -> int | None:
        return record_line(path, i, header=header, sep=sep, encoding=enc)

    if len(df) == 0:
        raise DataFormatError(path, None, "no ratings in file")
    out = []
    for c, f in zip(cols, fields):
        where = {"header": header, "sep": sep, "encoding": enc, "field": f}
        if c in cols[:2]:  # user and movie ids: integers read exactly, never via a float
            out.append(id_column(df, c, path, **where))
            continue
        v = numeric_column(df, c, path, **where)
        if f == fields[3]:
            bad = first_bad(v != np.round(v))
            if bad is not None:
                raise DataFormatError(
                    path,
                    line(bad),
                    f"value {df[c].iloc[bad]!r}; expected an integer timestamp",
                    field=f,
                )
            v = v.astype(np.int64)
        out.append(v)
    user, movie, rating = out[:3]
    bad = first_bad((rating <= 0) | (rating > MAX_RATING))
    if bad is not None:
        raise DataFormatError(
            path, line(bad), f"rating {rating[bad]!r} outside (0, {MAX_RATING:g}]", field=fields[2]
        )
    _check_duplicate_ratings(path, user, movie, line, fields[1])
    return user, movie, rating, line


def _check_duplicate_ratings(path: Path, user, movie, line, field: str) -> None:
    """Raise :class:`DataFormatError` naming both lines of the first (user, movie) pair
    rated twice (by the line of its second rating)."""
    order = np.lexsort((movie, user))  # stable: equal pairs stay in file order
    su, sm = user[order], movie[order]
    dup = np.flatnonzero((su[1:] == su[:-1]) & (sm[1:] == sm[:-1]))
    if dup.size == 0:
        return
    k = int(np.argmin(order[dup + 1]))
    first, second = int(order[dup[k]]), int(order[dup[k] + 1])
    l1, l2 = line(first), line(second)
    raise DataFormatError(
        path,
        l2,
        f"user {int(user[second])} rates movie {int(movie[second])} again (first on line "
        f"{l1}); a MovieLens ratings file has one rating per user and movie",
        field=field,
    )


def _movie_years(directory: Path, fmt: str) -> tuple[pd.Series, str | None]:
    """movie id -> release year parsed from titles, from the movies file beside the ratings."""
    path = directory / MOVIE_FILES[fmt]
    if not path.is_file():
        return pd.Series(dtype=np.float64), None
    if fmt == "csv":
        df = read_table(path, dtype=str, keep_default_na=False, na_values=[""])
        if not {"movieId", "title"} <= set(df.columns):
            return pd.Series(dtype=np.float64), None
        ids, titles = df["movieId"], df["title"]
    else:
        sep = "::" if fmt == "dat" else "|"
        with open(path, encoding="latin-1") as fh:
            parts = [ln.rstrip("\r\n").split(sep, 2) for ln in fh if ln.strip()]
        ids = pd.Series([p[0] for p in parts])
        titles = pd.Series([p[1] if len(p) > 1 else "" for p in parts])
    ids = pd.to_numeric(ids, errors="coerce")
    years = pd.to_numeric(titles.fillna("").str.strip().str.extract(_YEAR_RE)[0], errors="coerce")
    ok = ids.notna().to_numpy()
    s = pd.Series(years.to_numpy()[ok], index=ids.to_numpy()[ok].astype(np.int64))
    return s[~s.index.duplicated(keep="first")], path.name


# ---------------------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------------------
def _check_conflicts(path: Path, keys, values: pd.DataFrame, rows, what: str) -> None:
    """Raise :class:`DataFormatError` naming the lines of the first two rows (in file order)
    that give the same ``keys`` different ``values`` (identical repeats are allowed).
    ``rows``: 0-based data record of each row in ``path``."""
    df = values.reset_index(drop=True).astype(object)
    df = df.where(df.notna(), None)
    df["_key"], df["_row"] = np.asarray(keys), np.asarray(rows)
    dups = df[df["_key"].duplicated(keep=False)]
    if dups.empty:
        return
    cols = list(values.columns)
    for _, g in sorted(dups.groupby("_key", sort=False), key=lambda kg: kg[1]["_row"].min()):
        vals = [tuple(r) for r in g[cols].itertuples(index=False)]
        other = next((i for i, v in enumerate(vals) if v != vals[0]), None)
        if other is None:
            continue
        a, b = int(g["_row"].iloc[0]), int(g["_row"].iloc[other])
        la, lb = record_line(path, a), record_line(path, b)
        raise DataFormatError(
            path,
            lb,
            f"conflicting rows for {what} {g['_key'].iloc[0]}: line {la} gives "
            f"{dict(zip(cols, vals[0]))}, line {lb} gives {dict(zip(cols, vals[other]))}",
            field=what,
        )


def _plain_metadata(path: Path, header: list[str]) -> pd.DataFrame:
    lower = {h.lower(): h for h in header}
    df = read_table(path, dtype=str, keep_default_na=False, na_values=[""])
    df.columns = [str(c).strip() for c in df.columns]
    ids = id_column(df, lower["movie_id"], path, field="movie_id")
    country = (
        df[lower["country"]].fillna("").str.split(r"[|;,]", n=1, regex=True).str[0].str.strip()
    )
    gross_raw = df[lower["gross"]].fillna("").str.replace(r"[$,\s]", "", regex=True)
    gross_df = pd.DataFrame({"gross": gross_raw.replace("", np.nan)})
    gross = numeric_column(gross_df, "gross", path, allow_missing=True, field="gross")
    bad = first_bad(gross < 0)
    if bad is not None:
        raise DataFormatError(path, record_line(path, bad), "negative gross", field="gross")
    out = pd.DataFrame(
        {"country": country.replace("", np.nan).to_numpy(), "gross": gross},
        index=ids,
    )
    _check_conflicts(path, out.index, out, np.arange(len(out)), "movie_id")
    return out[~out.index.duplicated(keep="first")]


def _tmd_metadata(path: Path, links_path: Path) -> tuple[pd.DataFrame, int]:
    """The Movies Dataset -> DataFrame indexed by MovieLens id (country code, gross)."""
    need = ["id", "imdb_id", "production_countries", "revenue"]
    md = read_table(
        path,
        usecols=lambda c: c in need,
        dtype=str,
        keep_default_na=False,
        na_values=[""],
        low_memory=False,
    )
    miss = [c for c in need if c not in md.columns]
    if miss:
        raise DataFormatError(path, 1, "missing column(s) " + ", ".join(miss), field=miss[0])
    tmdb = pd.to_numeric(md["id"], errors="coerce")
    valid = (tmdb.notna() & (tmdb == tmdb.round())).to_numpy()
    n_skipped = int((~valid).sum())
    rows = np.flatnonzero(valid)  # data record of each kept row
    md = md[valid]
    tmdb = tmdb[valid].astype(np.int64).to_numpy()
    imdb = pd.to_numeric(
        md["imdb_id"].fillna("").str.strip().str.replace(r"^tt", "", regex=True), errors="coerce"
    ).to_numpy()
    country = md["production_countries"].fillna("").str.extract(_ISO_RE)[0].str.upper()
    revenue = pd.to_numeric(md["revenue"], errors="coerce").to_numpy(dtype=np.float64)
    info = pd.DataFrame({"country": country.to_numpy(), "gross": revenue})

    links = read_table(links_path, dtype=str, keep_default_na=False, na_values=[""])
    links.columns = [str(c).strip() for c in links.columns]
    for col in ("movieId", "imdbId", "tmdbId"):
        if col not in links.columns:
            raise DataFormatError(
                links_path, 1, "missing column; expected header movieId,imdbId,tmdbId", field=col
            )
    ml = id_column(links, "movieId", links_path)
    l_imdb = numeric_column(links, "imdbId", links_path, allow_missing=True)
    l_tmdb = numeric_column(links, "tmdbId", links_path, allow_missing=True)

    has_imdb = np.isfinite(imdb)
    _check_conflicts(path, imdb[has_imdb], info[has_imdb], rows[has_imdb], "imdb_id")
    _check_conflicts(path, tmdb, info, rows, "id")
    links_info = pd.DataFrame({"imdbId": l_imdb, "tmdbId": l_tmdb})
    _check_conflicts(links_path, ml, links_info, np.arange(ml.size), "movieId")
    by_imdb = info.assign(key=imdb).dropna(subset=["key"]).drop_duplicates("key")
    by_imdb = by_imdb.set_index(by_imdb["key"].astype(np.int64))[["country", "gross"]]
    by_tmdb = info.assign(key=tmdb).drop_duplicates("key").set_index("key")[["country", "gross"]]
    a = by_imdb.reindex(np.where(np.isfinite(l_imdb), l_imdb, -1).astype(np.int64))
    b = by_tmdb.reindex(np.where(np.isfinite(l_tmdb), l_tmdb, -1).astype(np.int64))
    hit_a = a["country"].notna().to_numpy() | a["gross"].notna().to_numpy()
    merged = pd.DataFrame(
        {
            "country": np.where(hit_a, a["country"].to_numpy(), b["country"].to_numpy()),
            "gross": np.where(hit_a, a["gross"].to_numpy(), b["gross"].to_numpy()),
        },
        index=ml,
    )
    return merged[~merged.index.duplicated(keep="first")], n_skipped


_META_HINT = (
    "Pass metadata=... (config: dataset.params.metadata=...) or set the environment "
    f"variable {META_ENV_VAR}"
)
_LINKS_HINT = (
    "The Movies Dataset metadata needs links.csv (movieId,imdbId,tmdbId), looked up beside "
    "the metadata and beside the ratings; pass its path as links=... (config: "
    "dataset.params.links=...)"
)


def _find_links(links: Path | None, metadata: Path, ratings_dir: Path) -> Path:
    """The links.csv to use: ``links``, else beside the metadata, else beside the ratings."""
    if links is not None:
        if links.is_dir():
            raise MissingFilesError(
                links,
                ["links.csv"],
                hint=f"links={str(links)!r} is a directory; pass the links.csv file itself "
                "(config: dataset.params.links=.../links.csv)",
            )
        if not links.is_file():
            raise MissingFilesError(links.parent, [links.name], hint=_LINKS_HINT)
        return links
    cands = [metadata.parent / "links.csv", ratings_dir / "links.csv"]
    found = next((c for c in cands if c.is_file()), None)
    if found is None:
        raise MissingFilesError(
            metadata.parent, ["links.csv"], hint=_LINKS_HINT + f"; also looked in {ratings_dir}"
        )
    return found


def _ratings_file(path: str | os.PathLike | None) -> Path:
    """The ratings file: ``path`` (a file, or a folder holding one of
    :data:`RATING_FILES`), else ``$GROUPBIAS_MOVIELENS``."""
    p = resolve_path(path, env=ENV_VAR, expected=list(RATING_FILES), what="MovieLens ratings")
    if p.is_dir():
        found = next((p / f for f in RATING_FILES if (p / f).is_file()), None)
        if found is None:
            raise MissingFilesError(
                p, list(RATING_FILES), hint="any one of these MovieLens rating files"
            )
        return found
    if not p.is_file():
        raise MissingFilesError(p.parent, [p.name])
    return p


def _metadata_header(metadata: Path) -> set[str]:
    return {str(h).strip().lower() for h in read_table(metadata, nrows=0).columns}


def _metadata_files(metadata, links, ratings_dir: Path, grouping: str) -> tuple[Path, Path | None]:
    """The metadata file (``metadata``, a folder holding ``movies_metadata.csv``, else
    ``$GROUPBIAS_MOVIELENS_META``) and, for The Movies Dataset, its ``links.csv``."""
    if metadata is None:
        env = env_value(META_ENV_VAR)
        if env is None:
            raise MissingFilesError(
                "",
                ["movie_id,country,gross CSV or movies_metadata.csv"],
                hint=f"grouping={grouping!r} needs movie metadata. {_META_HINT}",
                unset=META_ENV_VAR,
            )
        metadata = env
    metadata = Path(metadata).expanduser()
    if metadata.is_dir():
        cand = metadata / "movies_metadata.csv"
        if not cand.is_file():
            raise MissingFilesError(
                metadata,
                ["movies_metadata.csv"],
                hint=f"the metadata path {str(metadata)!r} is a directory without "
                "movies_metadata.csv; or pass a CSV file movie_id,country,gross. " + _META_HINT,
            )
        metadata = cand
    if not metadata.is_file():
        raise MissingFilesError(
            metadata.parent, [metadata.name], hint="no such metadata file. " + _META_HINT
        )
    header = _metadata_header(metadata)
    if {"movie_id", "country", "gross"} <= header or "production_countries" not in header:
        return metadata, None  # plain (or unknown: _load_metadata says so)
    links = None if links is None else Path(links).expanduser()
    return metadata, _find_links(links, metadata, ratings_dir)


def movielens_files(
    path=None, *, metadata=None, links=None, grouping: str | None = "country"
) -> dict[str, Path]:
    """The files ``load_movielens`` reads with these arguments, by role: ``ratings``, the
    ``movies`` file of release years beside it (when present), and, with a grouping,
    ``metadata`` and (The Movies Dataset) ``links``."""
    p = _ratings_file(path)
    out = {"ratings": p}
    movies = p.parent / MOVIE_FILES[_detect_format(p)]
    if movies.is_file():
        out["movies"] = movies
    if grouping is not None:
        meta, found = _metadata_files(metadata, links, p.parent, grouping)
        out["metadata"] = meta
        if found is not None:
            out["links"] = found
    return out


def _load_metadata(
    metadata: Path, links: Path | None, ratings_dir: Path
) -> tuple[pd.DataFrame, dict]:
    header = [str(h).strip() for h in read_table(metadata, nrows=0).columns]
    lower = {h.lower() for h in header}
    if {"movie_id", "country", "gross"} <= lower:
        return _plain_metadata(metadata, header), {"metadata_format": "plain"}
    if links is not None:
        df, skipped = _tmd_metadata(metadata, links)
        return df, {
            "metadata_format": "the-movies-dataset",
            "links": str(links),
            "metadata_rows_skipped": skipped,
        }
    raise DataFormatError(
        metadata,
        1,
        "unknown metadata layout: expected a header "
        "movie_id,country,gross or The Movies Dataset movies_metadata.csv",
        field="header",
    )


# ---------------------------------------------------------------------------------------
# long: the public entry point; its docstring documents every parameter
def load_movielens(
    path: str | os.PathLike | None = None,
    *,
    metadata: str | os.PathLike | None = None,
    links: str | os.PathLike | None = None,
    grouping: str | None = "country",
    missing: str = "drop",
    box_office_threshold: float = 100e6,
    name: str | None = None,
) -> RankingData:
    """Load MovieLens ratings: users = queries, rated movies = items, label = rating / 5.

    Parameters
    ----------
    path : ratings file or the dataset folder (``ratings.dat``, ``u.data`` or ``ratings.csv``);
        ``$GROUPBIAS_MOVIELENS`` if None.
    metadata : plain ``movie_id,country,gross`` CSV, or The Movies Dataset
        ``movies_metadata.csv`` (or its folder); ``$GROUPBIAS_MOVIELENS_META`` if None.
    links : ``links.csv`` for The Movies Dataset (default: beside the metadata, then beside
        the ratings).
    grouping : ``"country"`` (affected = first country not US), ``"box_office"`` (affected =
        gross < ``box_office_threshold``), or None for no groups (no metadata needed).
    missing : ``"drop"`` | ``"affected"`` | ``"non_affected"`` for movies without metadata.

    Returns
    -------
    RankingData with queries = users (ascending id), items = movies (ascending id within a
    user), labels float64 = rating / 5, features float32 [n_items, 2] (log popularity,
    release year or 0), item_ids = movie ids, groups per ``grouping``.
    """
    if grouping not in GROUPINGS + (None,):
        raise ParameterError("grouping", "'country', 'box_office' or None", grouping)
    if missing not in MISSING_POLICIES:
        raise ParameterError("missing", " | ".join(MISSING_POLICIES), missing)
    if not (np.isfinite(box_office_threshold) and box_office_threshold > 0):
        raise ParameterError(
            "box_office_threshold", "a positive amount in US dollars", box_office_threshold
        )
    p = _ratings_file(path)
    fmt = _detect_format(p)
    user, movie, rating, _ = _read_ratings(p, fmt)
    n_ratings = user.size

    # popularity over the whole file, release years from the movies file
    movie_uni, movie_inv, movie_cnt = np.unique(movie, return_inverse=True, return_counts=True)
    popularity = np.log1p(movie_cnt)[movie_inv]
    years, year_source = _movie_years(p.parent, fmt)
    year = years.reindex(movie).to_numpy(dtype=np.float64)
    year = np.nan_to_num(year, nan=0.0)

    meta: dict = {
        "source": str(p),
        "format": fmt,
        "ratings_read": int(n_ratings),
        "users_read": int(np.unique(user).size),
        "movies_read": int(movie_uni.size),
        "label": "rating / 5",
        "feature_names": ["log1p_movie_ratings", "release_year"],
        "year_source": year_source,
        "grouping": grouping,
    }

    groups = None
    keep = np.ones(n_ratings, dtype=bool)
    if grouping is not None:
        info, mmeta = _load_metadata(
            *_metadata_files(metadata, links, p.parent, grouping), p.parent
        )
        meta.update(mmeta)
        g_movie = _movie_groups(info.reindex(movie_uni), grouping, box_office_threshold, meta)
        meta["ratings_without_metadata"] = int(np.isnan(g_movie)[movie_inv].sum())
        meta["missing_policy"] = missing
        if missing != "drop":
            g_movie[np.isnan(g_movie)] = 1.0 if missing == "affected" else 0.0
        groups = g_movie[movie_inv]
        keep = ~np.isnan(groups)
        kept_movies = np.isfinite(g_movie)
        meta["movies_affected"] = int((g_movie[kept_movies] == 1).sum())
        meta["movies_non_affected"] = int((g_movie[kept_movies] == 0).sum())
        meta["ratings_affected"] = int((groups[keep] == 1).sum())
        meta["ratings_non_affected"] = int((groups[keep] == 0).sum())

    features = np.column_stack([popularity, year])
    return _by_user(p, user, movie, rating, features, keep, groups, meta, grouping, name)


def _movie_groups(info, grouping: str, box_office_threshold: float, meta: dict) -> np.ndarray:
    """Each movie's group (1 affected, 0 not, NaN without metadata) under ``grouping``, and
    what it means in ``meta``."""
    if grouping == "country":
        country = info["country"].astype(object)
        known = country.notna().to_numpy()
        affected = ~country.fillna("").str.strip().str.upper().isin(US_NAMES).to_numpy()
        meta["sensitive_attribute"] = "first listed country (affected = non-US)"
    else:
        gross = info["gross"].to_numpy(dtype=np.float64)
        known = np.isfinite(gross) & (gross > 0)
        affected = gross < box_office_threshold
        meta["sensitive_attribute"] = (
            f"worldwide gross (affected = below ${box_office_threshold:,.0f})"
        )
        meta["box_office_threshold"] = float(box_office_threshold)
    meta["movies_without_metadata"] = int((~known).sum())
    return np.where(known, affected, np.nan).astype(np.float64)


def _by_user(p, user, movie, rating, features, keep, groups, meta, grouping, name):
    """The kept ratings as :class:`RankingData`: users ascending, movies ascending in each."""
    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((movie[idx], user[idx]))]
    u = user[order]
    if u.size == 0:
        raise DataError(
            f"{p}: no rating left after dropping movies without metadata "
            f"(grouping={grouping!r}); check that the metadata ids match"
        )
    change = np.flatnonzero(u[1:] != u[:-1]) + 1
    qptr = np.concatenate(([0], change, [u.size])).astype(np.int64)
    feats = features[order]
    g = None if groups is None else groups[order]
    meta["users_dropped_empty"] = int(meta["users_read"] - (qptr.size - 1))
    if g is not None:
        qidx = np.repeat(np.arange(qptr.size - 1), np.diff(qptr))
        n_aff = np.bincount(qidx, weights=g, minlength=qptr.size - 1)
        n_non = np.bincount(qidx, weights=1 - g, minlength=qptr.size - 1)
        meta["queries_with_both_groups"] = int(np.sum((n_aff > 0) & (n_non > 0)))
    return RankingData(
        features=feats,
        labels=rating[order] / MAX_RATING,
        qptr=qptr,
        query_ids=u[qptr[:-1]],
        feature_ids=np.array([1, 2]),
        item_ids=movie[order],
        groups=g,
        label_max=1.0,
        name=name or f"movielens/{p.name}" + (f"/{grouping}" if grouping else ""),
        meta=meta,
    )


@dataclass(frozen=True)
class MovielensOptions:
    """MovieLens ratings + metadata (``load_movielens``)."""

    grouping: str
    metadata: str | None = None
    links: str | None = None
    missing: str = "drop"
    box_office_threshold: float = 100e6

    def __post_init__(self) -> None:
        choice("grouping", self.grouping, GROUPINGS)
        optional_path("metadata", self.metadata)
        optional_path("links", self.links)
        choice("missing", self.missing, MISSING_POLICIES)
        real("box_office_threshold", self.box_office_threshold, low=0.0)

    def sources(self, root, split: str) -> dict:
        return movielens_files(
            root, metadata=self.metadata, links=self.links, grouping=self.grouping
        )

    def load(self, root, split: str) -> RankingData:
        return load_movielens(
            root,
            metadata=self.metadata,
            links=self.links,
            grouping=self.grouping,
            missing=self.missing,
            box_office_threshold=self.box_office_threshold,
        )
