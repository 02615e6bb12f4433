"""Text collections of real data: Grep-BiasIR (gender) and TREC Fair 2019 / 2020 as text
(authors' h-index groups H / L), as :class:`~groupbias.data.text.TextCollection`.

Grep-BiasIR (Krieg et al., CHIIR 2023; ``$GROUPBIAS_GREP_BIASIR``): ``queries.csv`` (117
queries) and seven ``queries-documents_<Category>.csv`` files (names with spaces and ``&``;
quoted CSV with commas, curly quotes, non-ASCII text). Every document row belongs to one
query (one relevant and one non-relevant document, each in a male, female and neutral
version): 702 documents. A document's text is ``doc_title`` + ``document`` (seed 002 labels
both; ``text`` chooses either alone). Labels: ``gender`` (the human ``content_gender``:
``M`` / ``F`` / ``N``), ``stereotype`` (``exp_stereotype``: ``female`` / ``male`` / ``""``
for no annotation agreement), ``category``. Five rows say ``both`` (4) or ``botrh`` (1), a
typo of it: the ``both`` policy decides, never a guess: ``"unknown"`` (default; ``gender``
is ``""``, so these documents are left out of label agreement and counted, but stay in the
corpus), ``"neutral"`` (seed 002's annotation guideline: a document about both genders
equally is Neutral) or ``"raise"``. Any other value is an error naming the file and line.

TREC Fair as text (``$GROUPBIAS_TREC_FAIR``): the documents are the corpus subset's papers
(``paper_title``, ``paper_venue``, ``paper_year`` joined with spaces), the queries and
judgements the training sample's; label ``h_class`` is ``L`` / ``H`` from the authors'
h-index group (:func:`data_loaders.trec_fair.paper_groups`, ``author_rule``; ``""`` when
no author is known). Judged documents absent from the corpus subset cannot be retrieved:
their judgements are dropped and counted in ``meta``.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from groupbias.core.errors import DataFormatError, ParameterError
from groupbias.core.validation import choice, integer
from groupbias.data.text import TextCollection

from . import trec_fair
from ._lazy import pandas as pd
from ._options import optional_path
from ._tables import read_table, require_files, resolve_path

ENV_VAR = "GROUPBIAS_GREP_BIASIR"
CATEGORIES = (
    "Appearance",
    "Career",
    "Child Care",
    "Cognitive Capabilities",
    "Domestic Work",
    "Physical Capabilities",
    "Sex & Relationship",
)
GREP_FILES = ("queries.csv", *(f"queries-documents_{c}.csv" for c in CATEGORIES))
BOTH_POLICIES = ("unknown", "neutral", "raise")
_GENDER = {"M": "M", "F": "F", "N": "N"}
_BOTH = ("both", "botrh")
#: the text of a Grep-BiasIR document: which columns, joined with a space
TEXT_FIELDS = {
    "title+document": ("doc_title", "document"),
    "document": ("document",),
    "title": ("doc_title",),
}
_DOC_COLUMNS = ("q_id", "d_id", "relevant", "doc_title", "document", "content_gender")


def _csv_rows(path: Path, required) -> list[tuple[int, dict]]:
    """``(line, row)`` of a quoted CSV file, every ``required`` column present."""
    out = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or ())]
        if missing:
            raise DataFormatError(path, 1, "missing column", field=missing[0])
        start = reader.line_num + 1
        for row in reader:
            out.append((start, row))
            start = reader.line_num + 1
    return out


def _gender(value: str, both: str, path: Path, line: int) -> str:
    v = value.strip()
    if v.upper() in _GENDER:
        return _GENDER[v.upper()]
    if v.lower() in _BOTH:
        if both == "raise":
            raise DataFormatError(
                path,
                line,
                f"content_gender {v!r} (both genders): choose both='unknown' or 'neutral'",
                field="content_gender",
            )
        return "" if both == "unknown" else "N"
    raise DataFormatError(
        path, line, f"content_gender {v!r}: expected M, F, N or both", field="content_gender"
    )


def _stereotype(value: str) -> str:
    v = value.strip().lower()
    return "female" if v == "towards female" else "male" if v == "towards male" else ""


def load_grep_biasir(
    root: str | os.PathLike | None = None, *, both: str = "unknown", text: str = "title+document"
):
    """Grep-BiasIR as a :class:`TextCollection` (module docstring); ``root``: the folder of
    the CSV files (``$GROUPBIAS_GREP_BIASIR`` if None); ``text``: a document's text is
    ``"title+document"`` (default), ``"document"`` or ``"title"`` (:data:`TEXT_FIELDS`)."""
    both = choice("both", both, BOTH_POLICIES)
    fields = TEXT_FIELDS[choice("text", text, tuple(TEXT_FIELDS))]
    base = resolve_path(root, env=ENV_VAR, expected=list(GREP_FILES), what="Grep-BiasIR")
    require_files(base, list(GREP_FILES), hint=f"point {ENV_VAR} at the Grep-BiasIR folder")
    qpath = base / "queries.csv"
    qrows = _csv_rows(qpath, ("q_id", "query"))
    qpos = {}
    for line, r in qrows:
        qid = r["q_id"].strip()
        if qid in qpos:
            raise DataFormatError(qpath, line, f"q_id {qid!r} repeats", field="q_id")
        qpos[qid] = len(qpos)
    ids, texts, labels, qi, di, grades, seen = [], [], [], [], [], [], {}
    n_both = 0
    for cat in CATEGORIES:
        path = base / f"queries-documents_{cat}.csv"
        for line, r in _csv_rows(path, _DOC_COLUMNS):
            did = r["d_id"].strip()
            if did in seen:
                raise DataFormatError(path, line, f"d_id {did!r} repeats {seen[did]}", field="d_id")
            seen[did] = f"{path.name}, line {line}"
            qid = r["q_id"].strip()
            if qid not in qpos:
                raise DataFormatError(path, line, f"q_id {qid!r} not in queries.csv", field="q_id")
            rel = r["relevant"].strip()
            if rel not in ("0", "1"):
                raise DataFormatError(
                    path, line, f"relevant {rel!r}: expected 0 or 1", field="relevant"
                )
            n_both += r["content_gender"].strip().lower() in _BOTH
            gender = _gender(r["content_gender"], both, path, line)
            ids.append(did)
            texts.append(" ".join(r[f].strip() for f in fields))
            labels.append((gender, _stereotype(r.get("exp_stereotype", "")), cat))
            qi.append(qpos[qid])
            di.append(len(ids) - 1)
            grades.append(float(rel))
    lab = np.array(labels, dtype=object).reshape(-1, 3)
    return TextCollection(
        doc_ids=np.array(ids, dtype=object),
        texts=tuple(texts),
        query_ids=np.array(list(qpos), dtype=object),
        queries=tuple(r["query"].strip() for _, r in qrows),
        qrels=sparse.csr_matrix((grades, (qi, di)), shape=(len(qpos), len(ids))),
        doc_labels={"gender": lab[:, 0], "stereotype": lab[:, 1], "category": lab[:, 2]},
        name="Grep-BiasIR",
        meta={"both_policy": both, "both_rows": n_both, "source": str(base)},
    )


def load_trec_fair_text(
    root: str | os.PathLike | None, year: int, *, author_rule: str = "first", high_level: int = 4
) -> TextCollection:
    """TREC Fair ``year`` (2019 / 2020) as text with ``h_class`` labels (module
    docstring)."""
    if author_rule not in ("first", "none_high", "majority"):
        raise ParameterError("author_rule", "'first', 'none_high' or 'majority'", author_rule)
    high_level = integer("high_level", high_level, low=0)
    y = int(year)
    base = resolve_path(
        root, env=trec_fair.ENV_VAR, expected=trec_fair.files_for(y), what="TREC Fair data"
    )
    ydir = base / str(y) if (base / str(y)).is_dir() else base
    require_files(ydir, trec_fair.files_for(y), hint="the TREC Fair sample and corpus subset")
    ppath = ydir / trec_fair.PAPERS
    papers = read_table(ppath, dtype=str, keep_default_na=False, na_values=[""])
    for col in ("paper_sha", "paper_title"):
        if col not in papers.columns:
            raise DataFormatError(ppath, 1, "missing column", field=col)
    papers["paper_sha"] = papers["paper_sha"].str.strip()
    papers = papers.drop_duplicates("paper_sha")
    year_text = papers.get("paper_year", pd.Series("", index=papers.index)).fillna("")
    year_text = year_text.str.replace(r"\.0$", "", regex=True)
    text = (
        papers["paper_title"].fillna("")
        + " "
        + papers.get("paper_venue", pd.Series("", index=papers.index)).fillna("")
        + " "
        + year_text
    ).str.strip()
    doc_ids = papers["paper_sha"].to_numpy(dtype=object)
    group, _ = trec_fair.paper_groups(ydir, y, author_rule, high_level)
    g = group.reindex(doc_ids).to_numpy(dtype=np.float64)
    h_class = np.where(np.isnan(g), "", np.where(g >= 0.5, "L", "H")).astype(object)
    pairs, qorder = trec_fair.read_sample(ydir / trec_fair.SAMPLE_FILE[y])
    queries = trec_fair.sample_queries(ydir / trec_fair.SAMPLE_FILE[y])
    dpos = pd.Index(doc_ids)
    d = dpos.get_indexer(pairs["doc_id"])
    known = d >= 0
    qcode = pd.Index(qorder).get_indexer(pairs["qid"])
    qrels = sparse.csr_matrix(
        (pairs["relevance"].to_numpy()[known], (qcode[known], d[known])),
        shape=(len(qorder), doc_ids.size),
    )
    return TextCollection(
        doc_ids=doc_ids,
        texts=tuple(text.tolist()),
        query_ids=np.array([str(q) for q in qorder], dtype=object),
        queries=tuple(queries[q] for q in qorder),
        qrels=qrels,
        doc_labels={"h_class": h_class},
        name=f"TREC {y} (text)",
        meta={
            "judgements_without_text": int((~known).sum()),
            "relevant_without_text": int(pairs["relevance"].to_numpy()[~known].sum()),
            "documents_without_group": int((h_class == "").sum()),
            "author_rule": author_rule,
        },
    )


@dataclass(frozen=True)
class GrepBiasirOptions:
    """Grep-BiasIR as a text collection (``load_grep_biasir``)."""

    both: str = "unknown"
    text: str = "title+document"

    def __post_init__(self) -> None:
        choice("both", self.both, BOTH_POLICIES)
        choice("text", self.text, tuple(TEXT_FIELDS))

    def load(self, root, split: str):
        return load_grep_biasir(root, both=self.both, text=self.text)


@dataclass(frozen=True)
class TrecTextOptions:
    """TREC Fair as a text collection (``load_trec_fair_text``)."""

    year: int
    author_rule: str = "first"
    high_level: int = 4

    def __post_init__(self) -> None:
        choice("year", str(self.year), ("2019", "2020"))
        choice("author_rule", self.author_rule, ("first", "none_high", "majority"))
        integer("high_level", self.high_level, low=0)

    def load(self, root, split: str):
        return load_trec_fair_text(
            root, self.year, author_rule=self.author_rule, high_level=self.high_level
        )


@dataclass(frozen=True)
class TextFilesOptions:
    """A user's text collection from files (``groupbias.data.text.load_text_collection``):
    ``corpus`` (collection.tsv or .jsonl), ``queries`` (queries.tsv or TREC topics),
    ``qrels`` (TREC qrels), ``groups`` (an item -> group file, or null) stored as the
    document label ``group_label``; relative paths are taken below ``root`` when given."""

    corpus: str | None = None
    queries: str | None = None
    qrels: str | None = None
    groups: str | None = None
    group_label: str = "group"
    unknown_docs: str = "raise"
    topic_field: str = "title"

    def __post_init__(self) -> None:
        for name in ("corpus", "queries", "qrels"):
            if not isinstance(getattr(self, name), str):
                raise ParameterError(name, "a file path", getattr(self, name))
        optional_path("groups", self.groups)
        if not isinstance(self.group_label, str) or not self.group_label:
            raise ParameterError("group_label", "a label name", self.group_label)
        choice("unknown_docs", self.unknown_docs, ("raise", "skip"))
        choice("topic_field", self.topic_field, ("title", "desc", "narr"))

    def load(self, root, split: str):
        from groupbias.data.text import load_text_collection

        def at(path):
            return None if path is None else os.path.join(root or "", path)

        return load_text_collection(
            at(self.corpus),
            at(self.queries),
            at(self.qrels),
            groups=at(self.groups),
            group_label=self.group_label,
            unknown_docs=self.unknown_docs,
            topic_field=self.topic_field,
        )
