"""TREC Fair Ranking 2019 / 2020 (paper Sec. 6.1, datasets (ii)-(iii)).

Two forms of the same academic-search data (Semantic Scholar Open Research Corpus):

:func:`load_trec_fair_ppg`
    The preprocessed files ``ppg/{year}/{train,test}.csv`` (columns ``sensitive_attribute``
    H/L, ``session``, ``score``, ``feature_1..feature_25``), the form used for the paper's
    "TREC 2019" / "TREC 2020" rows. Queries are sessions; ``groups = 1`` for L (low h-index).

:func:`load_trec_fair_track`
    The track's own training sample (one JSON object per line: ``qid``, ``query``,
    ``frequency``, ``documents`` [{``doc_id``, ``relevance``}]) joined with the corpus subset
    ``corpus-subset-for-queries.{papers,paper_authors,authors}.csv``; groups are derived from
    the authors' h-index class.

Author groups (track form)
--------------------------
- 2020: ``authors.csv`` column ``h_class`` (``H`` = high, ``L`` = low h-index).
- 2019: ``authors.csv`` has no h-index (all zeros); the track's
  ``fair-TREC-sample-author-groups.csv`` assigns each author an ordinal level ``gid`` 1..7
  (the mean number of papers per author grows with ``gid``). An author is *high* iff
  ``gid >= high_level`` (default 4). With the first-author rule this split reproduces the H/L
  labels of ``ppg/2019/train.csv`` for 99% of the documents that can be matched to it, and
  the 2020 ``h_class`` first-author rule reproduces ``ppg/2020/train.csv`` exactly.
- Authors missing from the group source (or with an empty author id) are *unknown*.

A paper's group from its authors (``author_rule``):

- ``"first"`` (default): the group of the first-listed author (smallest ``position``);
  unknown when that author is unknown.
- ``"none_high"``: affected iff no known author is high.
- ``"majority"``: affected iff strictly more known authors are low than high.
- ``"fraction"``: membership probability = (#low) / (#known) among the paper's authors.

Papers with no known author (and documents absent from the corpus subset) get no group; the
``unknown`` policy decides: ``"drop"`` (default; the documents are removed, queries left empty
are removed) or ``"affected"`` / ``"non_affected"``. Counts are in ``meta``.

Features (track form, ids 1..4): ``n_citations``, ``n_key_citations``, ``paper_year``, number
of authors; missing values are 0 (per-feature counts of missing values in
``meta["missing_feature_values"]``; 2020 has no ``n_key_citations`` at all). Labels are the
binary relevance (``label_max = 1``).

The root is ``root`` or ``$GROUPBIAS_TREC_FAIR``: the folder holding ``2019/``, ``2020/`` and
``ppg/`` (a year folder itself is accepted too).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from groupbias.core.errors import DataError, DataFormatError, ParameterError
from groupbias.core.validation import choice, integer, is_integer
from groupbias.data.ranking_data import RankingData

from ._lazy import pandas as pd
from ._tables import (
    check_text,
    first_bad,
    id_column,
    numeric_column,
    read_table,
    record_line,
    require_files,
    resolve_path,
)

ENV_VAR = "GROUPBIAS_TREC_FAIR"
YEARS = (2019, 2020)
SAMPLE_FILE = {
    2019: "fair-TREC-training-sample.json",
    2020: "TREC-Fair-Ranking-training-sample.json",
}
PAPERS = "corpus-subset-for-queries.papers.csv"
PAPER_AUTHORS = "corpus-subset-for-queries.paper_authors.csv"
AUTHORS = "corpus-subset-for-queries.authors.csv"
GROUPS_2019 = "fair-TREC-sample-author-groups.csv"
AUTHOR_RULES = ("first", "none_high", "majority", "fraction")
UNKNOWN_POLICIES = ("drop", "affected", "non_affected")
TRACK_FEATURES = ("n_citations", "n_key_citations", "paper_year", "n_authors")


def _check_year(year) -> int:
    try:
        y = int(year)
    except (TypeError, ValueError):
        y = None
    if y not in YEARS:
        raise ParameterError("year", "2019 or 2020", year)
    return y


def files_for(year: int) -> list[str]:
    names = [SAMPLE_FILE[year], PAPERS, PAPER_AUTHORS]
    names.append(GROUPS_2019 if year == 2019 else AUTHORS)
    return names


def track_files(root: str | os.PathLike | None, year: int) -> dict[str, Path]:
    """The files ``load_trec_fair_track(root, year)`` reads (:func:`files_for`), by name, in
    the year folder under ``root`` (else ``$GROUPBIAS_TREC_FAIR``); raises
    :class:`MissingFilesError` listing the absent ones."""
    y = _check_year(year)
    base = resolve_path(root, env=ENV_VAR, expected=files_for(y), what="TREC Fair data")
    ydir = _year_dir(base, y)
    require_files(
        ydir,
        files_for(y),
        hint="the TREC Fair Ranking training sample and corpus subset of that year",
    )
    return {name: ydir / name for name in files_for(y)}


def _year_dir(root: Path, year: int) -> Path:
    if (root / str(year)).is_dir():
        return root / str(year)
    if (root / SAMPLE_FILE[year]).is_file():
        return root
    return root / str(year)


# ---------------------------------------------------------------------------------------
# preprocessed (ppg) files
# ---------------------------------------------------------------------------------------
_FEATURE_RE = re.compile(r"^feature_(\d+)$")


def ppg_file(root: str | os.PathLike | None, year: int, split: str) -> Path:
    """The preprocessed file ``load_trec_fair_ppg(root, year, split)`` reads:
    ``ppg/{year}/{split}.csv`` under ``root`` (else ``$GROUPBIAS_TREC_FAIR``), or
    ``{year}/{split}.csv``, or ``{split}.csv``; :class:`MissingFilesError` when absent."""
    y = _check_year(year)
    if split not in ("train", "test"):
        raise ParameterError("split", "'train' or 'test'", split)
    rel = f"ppg/{y}/{split}.csv"
    base = resolve_path(root, env=ENV_VAR, expected=[rel], what="TREC Fair data")
    for cand in (base / "ppg" / str(y), base / str(y), base):
        if (cand / f"{split}.csv").is_file():
            return cand / f"{split}.csv"
    require_files(base, [rel], hint=f"set {ENV_VAR} to the folder holding ppg/")
    raise AssertionError("unreachable")  # require_files raised


def load_trec_fair_ppg(
    root: str | os.PathLike | None, year: int, split: str = "train", *, name: str | None = None
) -> RankingData:
    """Load ``ppg/{year}/{split}.csv`` (TREC Fair Ranking, preprocessed form).

    Queries are the ``session`` values, items the rows; ``labels = score`` (binary relevance,
    ``label_max = 1``; a score that is not a whole grade is refused naming its line),
    ``features = feature_1..feature_K`` (feature ids 1..K),
    ``groups = 1`` where ``sensitive_attribute == "L"`` (low h-index, affected) and 0 for
    ``"H"``. Row order is kept; the rows of a session are contiguous in the published files,
    and if they are not, sessions are grouped stably (in order of first appearance, rows in
    file order) and ``meta["sessions_regrouped"]`` is True.

    Real-data sizes: 2019 train 2,672 rows / 632 queries (386 with both groups), test 4,298 /
    635; 2020 train 4,694 / 200 (191 with both groups), test 4,677 / 200.
    """
    y = _check_year(year)
    path = ppg_file(root, y, split)
    cols, fcols = _ppg_columns(path)
    df = read_table(path, dtype=str, keep_default_na=False, na_values=[""])
    df.columns = cols
    if len(df) == 0:
        raise DataFormatError(path, None, "no data rows after the header")
    groups = _ppg_groups(df, path)
    # integer ids read exactly (sessions 10**30 + s stay distinct: as text beyond int64)
    session = id_column(df, "session", path, big="text")
    labels = _ppg_labels(df, path)
    feats = np.column_stack([numeric_column(df, c, path) for _, c in fcols])
    order = _sessions_together(session)
    regrouped = order is not None
    if regrouped:
        session, labels, feats, groups = session[order], labels[order], feats[order], groups[order]
    runs = np.flatnonzero(session[1:] != session[:-1]) + 1
    qptr = np.concatenate(([0], runs, [session.size])).astype(np.int64)
    data = RankingData(
        features=feats,
        labels=labels,
        qptr=qptr,
        query_ids=session[qptr[:-1]],
        feature_ids=np.array([k for k, _ in fcols], dtype=np.int64),
        groups=groups,
        label_max=1.0 if labels.max() <= 1 else float(labels.max()),
        name=name or f"trec-fair-{y}/ppg/{split}",
        meta={
            "source": str(path),
            "sessions_regrouped": bool(regrouped),
            "sensitive_attribute": "authors' h-index group (affected = L)",
        },
    )
    return data


def _ppg_columns(path: Path) -> tuple[list[str], list[tuple[int, str]]]:
    """The header's column names (stripped) and its ``(k, "feature_k")`` columns in order of
    ``k``; :class:`DataFormatError` when a required column is missing."""
    header = read_table(path, nrows=0).columns
    cols = [str(c).strip() for c in header]
    missing = [c for c in ("sensitive_attribute", "session", "score") if c not in cols]
    fcols = sorted((int(m.group(1)), c) for c in cols if (m := _FEATURE_RE.match(c)))
    if missing or not fcols:
        need = missing or ["feature_1"]
        raise DataFormatError(
            path,
            1,
            "missing column(s) " + ", ".join(need) + "; expected "
            "sensitive_attribute, session, score, feature_1..feature_K",
            field=need[0],
        )
    return cols, fcols


def _ppg_groups(df: pd.DataFrame, path: Path) -> np.ndarray:
    """1.0 where ``sensitive_attribute`` is L (low h-index, affected), 0.0 where H."""
    attr = df["sensitive_attribute"].fillna("").str.strip().str.upper()
    bad = first_bad(~attr.isin(["H", "L"]).to_numpy())
    if bad is not None:
        raise DataFormatError(
            path,
            record_line(path, bad),
            f"value {df['sensitive_attribute'].iloc[bad]!r}; expected H or L",
            field="sensitive_attribute",
        )
    return (attr == "L").to_numpy(dtype=np.float64)


def _ppg_labels(df: pd.DataFrame, path: Path) -> np.ndarray:
    """The ``score`` column; a negative or fractional grade is refused naming its line."""
    labels = numeric_column(df, "score", path)
    bad = first_bad((labels < 0) | (labels != np.floor(labels)))  # whole grades only
    if bad is not None:
        raise DataFormatError(
            path,
            record_line(path, bad),
            f"relevance {df['score'].iloc[bad]!r}; expected a whole grade 0, 1, 2, ...",
            field="score",
        )
    return labels


def _sessions_together(session: np.ndarray) -> np.ndarray | None:
    """None when the rows of each session are contiguous; else the stable row order that
    groups them (sessions in order of first appearance, rows in file order)."""
    runs = np.flatnonzero(session[1:] != session[:-1]) + 1
    uniq, first_pos = np.unique(session, return_index=True)
    if runs.size + 1 == uniq.size:
        return None
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first_pos, kind="stable")] = np.arange(uniq.size)
    return np.argsort(rank[np.searchsorted(uniq, session)], kind="stable")


# ---------------------------------------------------------------------------------------
# the track's JSON + corpus subset
# ---------------------------------------------------------------------------------------
def _read_sample(path: Path) -> tuple[pd.DataFrame, list]:
    """(qid, doc_id, relevance) rows of the training-sample JSON lines in file order, and the
    query ids in file order."""
    qids, docs, rels, qorder = [], [], [], []
    seen: dict = {}  # normalized qid -> line
    check_text(path)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            obj = _sample_object(raw, path, lineno)
            qid = _normalize_qid(obj["qid"], path, lineno)
            if qid in seen:
                raise DataFormatError(
                    path,
                    lineno,
                    f"qid {obj['qid']!r} appears twice (as {qid!r} on line {seen[qid]})",
                    field="qid",
                )
            seen[qid] = lineno
            listed = _sample_documents(obj, path, lineno)
            qorder.append(qid)
            qids += [qid] * len(listed)
            docs += [doc for doc, _ in listed]
            rels += [rel for _, rel in listed]
    if not qorder:
        raise DataFormatError(path, None, "no queries in file")
    # some qids are not numbers, or not int64 ones (2**70): all strings
    if not all(isinstance(q, int) and -(2**63) <= q < 2**63 for q in qorder):
        qids, qorder = [str(q) for q in qids], [str(q) for q in qorder]
    return pd.DataFrame({"qid": qids, "doc_id": docs, "relevance": rels}), qorder


def _sample_object(raw: bytes, path: Path, lineno: int) -> dict:
    """One line of the training sample as its JSON object, with ``qid`` and ``documents``."""
    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        obj = json.loads(line)
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            path, lineno, f"not valid UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, lineno, f"invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise DataFormatError(
            path, lineno, "JSON nested too deeply to read (expected one flat object)"
        ) from None
    except ValueError as exc:  # a number of over 4300 digits
        raise DataFormatError(path, lineno, f"unreadable JSON value ({exc})") from None
    if not isinstance(obj, dict):
        raise DataFormatError(path, lineno, "expected a JSON object per line")
    for key in ("qid", "documents"):
        if key not in obj:
            raise DataFormatError(path, lineno, "missing key", field=key)
    return obj


def _sample_documents(obj: dict, path: Path, lineno: int) -> list[tuple[str, float]]:
    """``(doc_id, relevance)`` of one query's ``documents`` in listed order; a relevance
    other than 0 or 1, or a document listed twice, is refused."""
    documents = obj["documents"]
    if not isinstance(documents, list):
        raise DataFormatError(path, lineno, "expected a list", field="documents")
    listed: dict = {}  # doc id -> its index in the list
    out = []
    for j, d in enumerate(documents):
        if not isinstance(d, dict) or "doc_id" not in d or "relevance" not in d:
            raise DataFormatError(
                path, lineno, f"document {j} needs doc_id and relevance", field="documents"
            )
        r = d["relevance"]
        if isinstance(r, bool) or r not in (0, 1):
            raise DataFormatError(
                path, lineno, f"document {j}: relevance {r!r}, expected 0 or 1", field="relevance"
            )
        doc = str(d["doc_id"])
        if doc in listed:  # a document twice in one list would count twice
            raise DataFormatError(
                path,
                lineno,
                f"document {doc!r} is listed twice for qid {obj['qid']!r} (documents "
                f"{listed[doc]} and {j})",
                field="documents",
            )
        listed[doc] = j
        out.append((doc, float(r)))
    return out


def read_sample(path: Path) -> tuple[pd.DataFrame, list]:
    """(qid, doc_id, relevance) rows of a training-sample JSON-lines file, and its query
    ids in file order (qids normalized as :func:`load_trec_fair_track` reads them)."""
    return _read_sample(path)


def sample_queries(path: Path) -> dict:
    """``{qid: query text}`` of a training-sample JSON-lines file (``""`` when a line has
    no ``query``)."""
    out = {}
    qids = _read_sample(path)[1]
    with open(path, encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    for qid, obj in zip(qids, lines):
        query = obj.get("query", "")
        out[qid] = query if isinstance(query, str) else ""
    return out


_INT_QID = re.compile(r"\s*[+-]?[0-9]+\s*")


def _normalize_qid(qid, path: Path, lineno: int) -> int | str:
    """The query id as one canonical value: JSON ``5438`` and ``"5438"`` are both the int
    5438 (a string of decimal digits, with optional sign and surrounding spaces, is read as
    an int); other strings are kept as they are."""
    if is_integer(qid):
        return int(qid)
    if isinstance(qid, str):  # at most 19 digits before int(): longer ones stay strings
        return int(qid) if _INT_QID.fullmatch(qid) and len(qid.strip()) <= 20 else qid
    raise DataFormatError(path, lineno, f"qid {qid!r} is not an integer or string", field="qid")


def _author_high(ydir: Path, year: int, high_level: int) -> pd.Series:
    """Series author_id -> True (high h-index) / False (low); absent = unknown."""
    if year == 2020:
        path = ydir / AUTHORS
        a = read_table(
            path,
            usecols=lambda c: c in ("corpus_author_id", "h_class"),
            dtype=str,
            keep_default_na=False,
            na_values=[""],
        )
        for col in ("corpus_author_id", "h_class"):
            if col not in a.columns:
                raise DataFormatError(path, 1, "missing column", field=col)
        ids = id_column(a, "corpus_author_id", path)
        cls = a["h_class"].fillna("").str.strip().str.upper()
        bad = first_bad(~cls.isin(["H", "L", ""]).to_numpy())
        if bad is not None:
            raise DataFormatError(
                path,
                record_line(path, bad),
                f"value {cls.iloc[bad]!r}; expected H or L",
                field="h_class",
            )
        known = (cls != "").to_numpy()
        s = pd.Series((cls == "H").to_numpy()[known], index=ids[known])
    else:
        path = ydir / GROUPS_2019
        g = read_table(path, dtype=str, keep_default_na=False, na_values=[""])
        for col in ("author_id", "gid"):
            if col not in g.columns:
                raise DataFormatError(path, 1, "missing column", field=col)
        ids = id_column(g, "author_id", path)
        gid = numeric_column(g, "gid", path)
        s = pd.Series(gid >= high_level, index=ids)
    return s[~s.index.duplicated(keep="first")]


def paper_groups(
    ydir: Path, year: int, author_rule: str, high_level: int
) -> tuple[pd.Series, pd.Series]:
    """``(group, n_authors)`` of every paper of ``paper_authors.csv`` in the year folder
    ``ydir``: the paper's affected-group membership under ``author_rule`` (1 = low h-index,
    0 = high, a fraction for ``"fraction"``, NaN = no known author) and its number of
    authors, both indexed by paper sha."""
    y = year
    # a string ("4") would meet the group levels in numpy (UFuncTypeError)
    high_level = integer("high_level", high_level, low=0)
    apath = ydir / PAPER_AUTHORS
    pa = read_table(apath, dtype=str, keep_default_na=False, na_values=[""])
    for col in ("paper_sha", "corpus_author_id", "position"):
        if col not in pa.columns:
            raise DataFormatError(apath, 1, "missing column", field=col)
    aid = id_column(pa, "corpus_author_id", apath, allow_missing=True)
    pos = numeric_column(pa, "position", apath)
    high = _author_high(ydir, y, high_level)
    aid_known = pa["corpus_author_id"].notna().to_numpy()
    status = np.full(aid.size, np.nan)  # 1 = low, 0 = high, nan = unknown
    hit = pd.Series(high).reindex(np.where(aid_known, aid, -1).astype(np.int64))
    found = hit.notna().to_numpy() & aid_known
    status[found] = np.where(hit.to_numpy()[found].astype(bool), 0.0, 1.0)
    auth = pd.DataFrame({"paper": pa["paper_sha"].str.strip(), "pos": pos, "low": status})
    n_authors = auth.groupby("paper", sort=False).size()
    known = auth.dropna(subset=["low"])
    agg = known.groupby("paper", sort=False)["low"].agg(["sum", "count"])
    if author_rule == "first":
        firsts = auth.sort_values(["paper", "pos"], kind="stable").drop_duplicates("paper")
        paper_group = firsts.set_index("paper")["low"]
    elif author_rule == "none_high":
        paper_group = (agg["sum"] == agg["count"]).astype(np.float64)
    elif author_rule == "majority":
        paper_group = (agg["sum"] > agg["count"] - agg["sum"]).astype(np.float64)
    else:
        paper_group = agg["sum"] / agg["count"]
    return paper_group, n_authors


# long: the public entry point; its docstring documents every parameter
def load_trec_fair_track(
    root: str | os.PathLike | None,
    year: int,
    *,
    author_rule: str = "first",
    unknown: str = "drop",
    high_level: int = 4,
    name: str | None = None,
) -> RankingData:
    """Load the TREC Fair Ranking training sample with author h-index groups.

    Parameters
    ----------
    root : folder holding ``2019/`` and ``2020/`` (or the year folder); ``$GROUPBIAS_TREC_FAIR``
        if None.
    year : 2019 or 2020.
    author_rule : ``"first"`` | ``"none_high"`` | ``"majority"`` | ``"fraction"`` (module
        docstring); ``groups`` is 1 for affected (low h-index) papers.
    unknown : ``"drop"`` | ``"affected"`` | ``"non_affected"``: papers without a known author.
    high_level : 2019 only: an author is high iff the track's group level ``gid >= high_level``.

    Returns
    -------
    RankingData: queries in file order, documents in listed order; features float32
    [n_items, 4] = (n_citations, n_key_citations, paper_year, n_authors); labels = relevance
    (0/1); item_ids = doc_id. ``meta`` counts documents without metadata, without known
    authors, dropped documents and queries.

    Real-data sizes before dropping: 2019 652 queries / 4,641 pairs; 2020 200 / 4,826, 757
    relevant.
    """
    y = _check_year(year)
    if author_rule not in AUTHOR_RULES:
        raise ParameterError("author_rule", " | ".join(AUTHOR_RULES), author_rule)
    if unknown not in UNKNOWN_POLICIES:
        raise ParameterError("unknown", " | ".join(UNKNOWN_POLICIES), unknown)
    high_level = integer("high_level", high_level, low=0)
    ydir = track_files(root, y)[SAMPLE_FILE[y]].parent

    pairs, qorder = _read_sample(ydir / SAMPLE_FILE[y])
    pmeta = _paper_metadata(ydir / PAPERS)
    paper_group, n_authors = paper_groups(ydir, y, author_rule, high_level)

    docs = pairs["doc_id"]
    feats_df = pmeta.reindex(docs).assign(n_authors=n_authors.reindex(docs).to_numpy())
    missing_counts = {col: int(feats_df[col].isna().sum()) for col in TRACK_FEATURES}
    groups = paper_group.reindex(docs).to_numpy(dtype=np.float64, copy=True)
    unknown_mask = np.isnan(groups)
    keep = _apply_unknown(groups, unknown_mask, unknown)
    qptr, nonempty = _kept_queries(pairs["qid"].to_numpy(), qorder, keep)
    if qptr[-1] == 0:
        raise DataError(
            f"{ydir}: no document has an author with a known h-index group "
            f"(author_rule={author_rule!r}, unknown={unknown!r})"
        )
    features = feats_df[list(TRACK_FEATURES)].to_numpy(dtype=np.float64)[keep]
    query_ids = np.asarray(qorder, dtype=object if isinstance(qorder[0], str) else np.int64)
    meta = {
        "source": str(ydir),
        "year": y,
        "author_rule": author_rule,
        "unknown_policy": unknown,
        "high_level_2019": high_level if y == 2019 else None,
        "pairs_in_sample": int(len(pairs)),
        "queries_in_sample": len(qorder),
        "relevant_in_sample": int(pairs["relevance"].sum()),
        "documents_without_metadata": int((~docs.isin(pmeta.index).to_numpy()).sum()),
        "documents_without_known_group": int(unknown_mask.sum()),
        "documents_dropped": int((~keep).sum()),
        "queries_dropped_empty": int((~nonempty).sum()),
        "queries_with_both_groups": _with_both_groups(qptr, groups[keep]),
        "feature_names": list(TRACK_FEATURES),
        "missing_feature_values": missing_counts,
        "sensitive_attribute": "authors' h-index group (affected = low)",
    }
    return RankingData(
        features=np.nan_to_num(features, nan=0.0),
        labels=pairs["relevance"].to_numpy()[keep],
        qptr=qptr,
        query_ids=query_ids[nonempty],
        feature_ids=np.arange(1, len(TRACK_FEATURES) + 1),
        item_ids=docs.to_numpy(dtype=object)[keep],
        groups=groups[keep],
        label_max=1.0,
        name=name or f"trec-fair-{y}/track/train",
        meta=meta,
    )


def _apply_unknown(groups: np.ndarray, unknown_mask: np.ndarray, unknown: str) -> np.ndarray:
    """Give the documents of ``unknown_mask`` the group the ``unknown`` policy names (in
    place); returns the mask of documents kept (all but the unknown ones for ``"drop"``)."""
    if unknown == "affected":
        groups[unknown_mask] = 1.0
    elif unknown == "non_affected":
        groups[unknown_mask] = 0.0
    return ~unknown_mask if unknown == "drop" else np.ones(groups.size, dtype=bool)


def _kept_queries(
    qids: np.ndarray, qorder: list, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(qptr, nonempty)``: the query pointers over the kept documents (``qids`` their
    queries, contiguous in ``qorder``'s order) and which of ``qorder`` keep a document."""
    counts = np.bincount(pd.Index(qorder).get_indexer(qids)[keep], minlength=len(qorder))
    nonempty = counts > 0
    qptr = np.zeros(int(nonempty.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[nonempty], out=qptr[1:])
    return qptr, nonempty


def _paper_metadata(path: Path) -> pd.DataFrame:
    """``n_citations``, ``n_key_citations``, ``paper_year`` of each paper of ``papers.csv``
    (NaN where missing or where the file lacks the column), indexed by paper sha (the first
    row of a sha repeated)."""
    papers = read_table(path, dtype=str, keep_default_na=False, na_values=[""])
    if "paper_sha" not in papers.columns:
        raise DataFormatError(path, 1, "missing column", field="paper_sha")
    meta_cols = {}
    for col in ("n_citations", "n_key_citations", "paper_year"):
        if col in papers.columns:
            meta_cols[col] = numeric_column(papers, col, path, allow_missing=True)
        else:
            meta_cols[col] = np.full(len(papers), np.nan)
    pmeta = pd.DataFrame(meta_cols, index=papers["paper_sha"].str.strip())
    return pmeta[~pmeta.index.duplicated(keep="first")]


def _with_both_groups(qptr: np.ndarray, g: np.ndarray) -> int:
    """The number of queries (delimited by ``qptr``) with documents of both groups (``g``:
    the documents' memberships, a fraction counting towards both)."""
    qidx = np.repeat(np.arange(qptr.size - 1), np.diff(qptr))
    n_aff = np.bincount(qidx, weights=g, minlength=qptr.size - 1)
    n_non = np.bincount(qidx, weights=1 - g, minlength=qptr.size - 1)
    return int(np.sum((n_aff > 0) & (n_non > 0)))


@dataclass(frozen=True)
class TrecPpgOptions:
    """TREC Fair Ranking, preprocessed ppg CSVs (``load_trec_fair_ppg``)."""

    year: int

    def __post_init__(self) -> None:
        choice("year", str(self.year), ("2019", "2020"))

    def sources(self, root, split: str) -> dict:
        return {"csv": ppg_file(root, self.year, split)}

    def load(self, root, split: str) -> RankingData:
        return load_trec_fair_ppg(root, year=self.year, split=split)


@dataclass(frozen=True)
class TrecTrackOptions:
    """TREC Fair Ranking, the track's JSON + corpus (``load_trec_fair_track``)."""

    year: int
    author_rule: str = "first"
    unknown: str = "drop"
    high_level: int = 4

    def __post_init__(self) -> None:
        choice("year", str(self.year), ("2019", "2020"))
        choice("author_rule", self.author_rule, AUTHOR_RULES)
        choice("unknown", self.unknown, UNKNOWN_POLICIES)
        integer("high_level", self.high_level, low=0)

    def sources(self, root, split: str) -> dict:
        return track_files(root, self.year)

    def load(self, root, split: str) -> RankingData:
        return load_trec_fair_track(
            root,
            year=self.year,
            author_rule=self.author_rule,
            unknown=self.unknown,
            high_level=self.high_level,
        )
