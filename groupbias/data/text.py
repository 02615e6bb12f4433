"""Text collections: documents with their text, queries, relevance judgements and document
labels (groups), the input of the retrieval side (:mod:`groupbias.retrieval.bm25`).

A :class:`TextCollection` holds

- ``doc_ids`` / ``texts``: the documents (``docid -> text``);
- ``query_ids`` / ``queries``: the queries (``qid -> text``);
- ``qrels``: graded judgements as a sparse ``[n_queries, n_docs]`` matrix (unjudged = 0);
- ``doc_labels``: named per-document string labels, e.g. ``"gender"`` (``M`` / ``F`` /
  ``N``, human labels of Grep-BiasIR) or ``"h_class"`` (``H`` / ``L``, TREC Fair authors'
  h-index group); ``""`` = unknown.

A retrieval run over it (:class:`Run`: per query the retrieved documents, best first) becomes
the :class:`~groupbias.data.ranking_data.RankingData` every downstream stage takes with
:meth:`TextCollection.ranking_data`.

Readers of the formats users bring (``docs/retrieval.md`` states each):
:func:`read_collection_tsv` (``docid<TAB>text``, MS MARCO style), :func:`read_collection_jsonl`
(one JSON object per line), :func:`read_queries` (``queries.tsv`` or TREC topics),
TREC qrels and run files through :mod:`groupbias.data.trec` (the one reader and writer of
both formats; :func:`judgements_in` maps a qrels file's ids to the collection, :meth:`Run.
to_trec` / :meth:`Run.from_trec` a run's), and :func:`read_item_groups` (an
``item -> group`` file). Every malformed line is a
:class:`~groupbias.core.errors.DataFormatError` naming the file, line and field.
"""

# long: the collection type and the readers and writers of the five text formats it is
# built from are one unit (each reader fills one field of the type)

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import DataFormatError, MissingFilesError, ParameterError
from ..core.validation import check_k, choice
from .ranking_data import RankingData
from .trec import Qrels, TrecRun, read_qrels

__all__ = [
    "TextCollection",
    "Run",
    "read_collection_tsv",
    "read_collection_jsonl",
    "read_queries",
    "judgements_in",
    "read_item_groups",
    "load_text_collection",
    "UNKNOWN_DOCS",
]

#: what a qrels or group line naming a document absent from the corpus does
UNKNOWN_DOCS = ("raise", "skip")


def _lines(path: Path):
    """``(line number, text)`` of a UTF-8 text file (a BOM on line 1 dropped); undecodable
    bytes are an error naming the line."""
    if not path.is_file():
        raise MissingFilesError(path.parent, [path.name])
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(path, lineno, f"not UTF-8 text ({exc.reason})") from None
            if lineno == 1:
                line = line.lstrip("\ufeff")
            yield lineno, line.rstrip("\r\n")


def _unique(path: Path, ids: list[str], lines: list[int], what: str) -> None:
    seen: dict[str, int] = {}
    for i, line in zip(ids, lines):
        if i in seen:
            raise DataFormatError(
                path, line, f"{what} {i!r} repeats line {seen[i]}", field=what.replace(" ", "_")
            )
        seen[i] = line


def read_collection_tsv(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """``(doc_ids, texts)`` of a ``docid<TAB>text`` file (MS MARCO ``collection.tsv``).

    The text is everything after the first tab (tabs inside it are kept as spaces); blank
    lines are skipped. A line without a tab, an empty document id or a repeated id is a
    :class:`DataFormatError` naming the line."""
    p = Path(path)
    ids, texts, where = [], [], []
    for lineno, line in _lines(p):
        if not line.strip():
            continue
        if "\t" not in line:
            raise DataFormatError(
                p, lineno, "expected 'docid<TAB>text', found no tab", field="docid"
            )
        doc, text = line.split("\t", 1)
        if not doc.strip():
            raise DataFormatError(p, lineno, "empty document id", field="docid")
        ids.append(doc.strip())
        texts.append(text.replace("\t", " "))
        where.append(lineno)
    if not ids:
        raise DataFormatError(p, None, "no documents")
    _unique(p, ids, where, "document id")
    return ids, texts


_ID_FIELDS = ("docid", "doc_id", "id", "_id")
_TEXT_FIELDS = ("contents", "text", "body", "abstract")


def read_collection_jsonl(
    path: str | os.PathLike,
    *,
    id_field: str | None = None,
    text_fields: Sequence[str] | None = None,
) -> tuple[list[str], list[str]]:
    """``(doc_ids, texts)`` of a JSON-lines corpus (one object per line, Pyserini's
    ``{"id": ..., "contents": ...}`` included).

    ``id_field``: the id key (default: the first of ``docid``, ``doc_id``, ``id``, ``_id``
    present); ``text_fields``: the keys whose string values are joined with a space
    (default: ``title`` if present, then the first of ``contents``, ``text``, ``body``,
    ``abstract``). A line that is not a JSON object, or lacks the id or every text field,
    is a :class:`DataFormatError` naming the line and field."""
    p = Path(path)
    ids, texts, where = [], [], []
    for lineno, line in _lines(p):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(p, lineno, f"invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(p, lineno, "expected a JSON object per line")
        key = id_field or next((k for k in _ID_FIELDS if k in obj), _ID_FIELDS[0])
        if key not in obj or str(obj[key]).strip() == "":
            raise DataFormatError(p, lineno, "missing document id", field=key)
        fields = list(text_fields) if text_fields else _default_text_fields(obj)
        parts = [obj[f] for f in fields if isinstance(obj.get(f), str)]
        if not parts:
            raise DataFormatError(
                p, lineno, f"no text in any of {fields}", field=fields[0] if fields else None
            )
        ids.append(str(obj[key]).strip())
        texts.append(" ".join(parts))
        where.append(lineno)
    if not ids:
        raise DataFormatError(p, None, "no documents")
    _unique(p, ids, where, "document id")
    return ids, texts


def _default_text_fields(obj: Mapping) -> list[str]:
    body = next((k for k in _TEXT_FIELDS if k in obj), _TEXT_FIELDS[0])
    return (["title"] if "title" in obj else []) + [body]


_TOPIC = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_TAG = re.compile(r"<(num|title|desc|narr)>", re.I)


def _topic_fields(block: str) -> dict[str, str]:
    """The ``num``/``title``/``desc``/``narr`` fields of one ``<top>`` block (TREC topics
    close none of these tags: a field runs to the next tag)."""
    parts = _TAG.split(block)
    out = {}
    for tag, value in zip(parts[1::2], parts[2::2]):
        value = re.sub(r"^\s*(Number|Description|Narrative)\s*:", "", value.strip(), flags=re.I)
        out[tag.lower()] = " ".join(value.split())
    return out


def read_queries(path: str | os.PathLike, *, field: str = "title") -> tuple[list[str], list[str]]:
    """``(query_ids, texts)`` of a ``queries.tsv`` (``qid<TAB>text``) or a TREC topics file
    (``<top> <num> Number: 301 <title> ... </top>``; ``field``: ``"title"`` (default),
    ``"desc"`` or ``"narr"``). Errors name the line (tsv) or the topic number (topics)."""
    p = Path(path)
    field = choice("field", field, ("title", "desc", "narr"))
    if not p.is_file():
        raise MissingFilesError(p.parent, [p.name])
    text = p.read_bytes().decode("utf-8", errors="strict").lstrip("\ufeff")
    if re.search(r"<top>", text, re.I):
        ids, texts = [], []
        for i, block in enumerate(_TOPIC.findall(text)):
            f = _topic_fields(block)
            if not f.get("num"):
                raise DataFormatError(p, None, f"topic {i + 1} has no <num>", field="num")
            if not f.get(field):
                raise DataFormatError(
                    p, None, f"topic {f['num']} has no <{field}> text", field=field
                )
            ids.append(f["num"])
            texts.append(f[field])
        if not ids:
            raise DataFormatError(p, None, "no <top> ... </top> topic")
        return ids, texts
    ids, texts = read_collection_tsv(p)
    return ids, texts


@dataclass(frozen=True)
class QrelsReport:
    """What :func:`judgements_in` skipped (``unknown_docs="skip"``): lines naming a document
    or query absent from the collection, counted."""

    skipped_unknown_doc: int = 0
    skipped_unknown_query: int = 0


def judgements_in(
    qrels: Qrels,
    *,
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    unknown_docs: str = "raise",
    path: str | os.PathLike | None = None,
):
    """The judgements of a qrels file (:func:`groupbias.data.trec.read_qrels`) in a
    collection: ``(query index, doc index, grade)`` as flat int64 / int64 / float64 arrays
    and a :class:`QrelsReport`. A judgement naming a document or query not in the collection:
    ``unknown_docs="raise"`` (default; the error names the file ``path`` and the line) or
    ``"skip"`` (counted in the report, never silently)."""
    unknown_docs = choice("unknown_docs", unknown_docs, UNKNOWN_DOCS)
    qpos = {str(q): i for i, q in enumerate(query_ids)}
    dpos = {str(d): i for i, d in enumerate(doc_ids)}
    qi = np.array([qpos.get(str(q), -1) for q in qrels.query_ids], dtype=np.int64)
    di = np.array([dpos.get(str(d), -1) for d in qrels.item_ids], dtype=np.int64)
    unknown = (qi < 0) | (di < 0)
    if unknown.any() and unknown_docs == "raise":
        i = int(np.flatnonzero(unknown)[0])
        what, name = ("query", qrels.query_ids[i]) if qi[i] < 0 else ("document", qrels.item_ids[i])
        raise DataFormatError(
            path or "qrels",
            i + 1,
            f"{what} {name!r} is not in the collection "
            "(unknown_docs='skip' skips and counts such lines)",
            field="qid" if what == "query" else "docno",
        )
    keep = ~unknown
    report = QrelsReport(int((unknown & (qi >= 0)).sum()), int((qi < 0).sum()))
    return qi[keep], di[keep], qrels.labels[keep], report


def read_item_groups(path: str | os.PathLike) -> dict[str, str]:
    """``{item id: group}`` of an item -> group file: two fields per line separated by a
    tab or a comma (``doc123<TAB>L``); an optional header ``item,group`` / ``docid,group``
    is skipped. A line with another number of fields, an empty field or a repeated item is a
    :class:`DataFormatError` naming the line."""
    p = Path(path)
    out: dict[str, str] = {}
    where: dict[str, int] = {}
    for lineno, line in _lines(p):
        if not line.strip():
            continue
        parts = [s.strip() for s in re.split(r"[\t,]", line)]
        if lineno == 1 and parts and parts[0].lower() in ("item", "docid", "doc_id", "id"):
            continue
        if len(parts) != 2 or not all(parts):
            raise DataFormatError(p, lineno, "expected 'item<TAB>group' (or 'item,group')")
        if parts[0] in out:
            raise DataFormatError(
                p, lineno, f"item {parts[0]!r} repeats line {where[parts[0]]}", field="item"
            )
        out[parts[0]] = parts[1]
        where[parts[0]] = lineno
    if not out:
        raise DataFormatError(p, None, "no item -> group lines")
    return out


@dataclass(frozen=True, eq=False)
class Run:
    """A retrieval run: per query (in the collection's query order) the retrieved documents,
    best first. ``docs`` int64 [n] (document positions in the collection), ``scores``
    float64 [n] (non-increasing within a query), ``qptr`` int64 [n_queries + 1]; ``tag``
    names the system (TREC run tag)."""

    qptr: np.ndarray
    docs: np.ndarray
    scores: np.ndarray
    tag: str = "run"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        q = np.asarray(self.qptr, dtype=np.int64)
        d = np.asarray(self.docs, dtype=np.int64)
        s = np.asarray(self.scores, dtype=np.float64)
        if d.shape != s.shape or d.ndim != 1 or q.ndim != 1 or q[0] != 0 or q[-1] != d.size:
            raise ParameterError("run", "docs and scores of one length, laid out by qptr", d.shape)
        object.__setattr__(self, "qptr", q)
        object.__setattr__(self, "docs", d)
        object.__setattr__(self, "scores", s)

    @property
    def n_queries(self) -> int:
        return int(self.qptr.size - 1)

    def query_index(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), np.diff(self.qptr))

    def ranks(self) -> np.ndarray:
        """1-based rank of every entry within its query."""
        return (
            np.arange(self.docs.size, dtype=np.int64)
            - np.repeat(self.qptr[:-1], np.diff(self.qptr))
            + 1
        )

    def top(self, k: int | None) -> Run:
        """The first ``k`` documents of every query."""
        k = check_k(k)
        if k is None:
            return self
        keep = self.ranks() <= k
        qptr = np.concatenate(([0], np.cumsum(np.minimum(np.diff(self.qptr), k))))
        return Run(qptr, self.docs[keep], self.scores[keep], self.tag, self.meta)

    def to_trec(self, *, query_ids, doc_ids) -> TrecRun:
        """The run with the collection's ids (``query_ids`` / ``doc_ids``), as a TREC run
        file holds it (:meth:`groupbias.data.trec.TrecRun.write` writes it)."""
        return TrecRun(
            np.asarray(query_ids, dtype=object),
            self.qptr,
            np.asarray(doc_ids, dtype=object)[self.docs],
            self.scores,
            self.tag,
        )

    @classmethod
    def from_trec(
        cls, trec: TrecRun, *, query_ids, doc_ids, path: str | os.PathLike | None = None
    ) -> Run:
        """A run read from a TREC run file (:func:`groupbias.data.trec.read_run`) in the
        collection of ``query_ids`` / ``doc_ids``: every query of the collection (none
        retrieved where the file has no line), the documents of a query by score
        (descending; ties in the file's order). A query or document the collection lacks is
        a :class:`DataFormatError` naming the file ``path``."""
        qpos = {str(q): i for i, q in enumerate(query_ids)}
        dpos = {str(d): i for i, d in enumerate(doc_ids)}
        where = path or "run"
        for q in trec.query_ids:
            if str(q) not in qpos:
                raise DataFormatError(where, None, f"{q!r} is not in the collection", field="qid")
        docs = np.array([dpos.get(str(d), -1) for d in trec.item_ids], dtype=np.int64)
        if (docs < 0).any():
            i = int(np.flatnonzero(docs < 0)[0])
            raise DataFormatError(
                where, None, f"{trec.item_ids[i]!r} is not in the collection", field="docno"
            )
        sizes = np.diff(trec.qptr)
        qa = np.repeat(np.array([qpos[str(q)] for q in trec.query_ids], dtype=np.int64), sizes)
        order = np.lexsort((np.arange(qa.size), -trec.scores, qa))
        counts = np.bincount(qa, minlength=len(qpos))
        qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(qptr, docs[order], trec.scores[order], trec.tag)


@dataclass(frozen=True, eq=False)
class TextCollection:
    """Documents, queries, judgements and document labels of one text collection (see the
    module docstring). ``qrels``: scipy CSR float64 ``[n_queries, n_docs]`` of grades."""

    doc_ids: np.ndarray
    texts: tuple[str, ...]
    query_ids: np.ndarray
    queries: tuple[str, ...]
    qrels: Any
    doc_labels: Mapping[str, np.ndarray] = field(default_factory=dict)
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        from scipy import sparse

        ids = np.asarray(self.doc_ids, dtype=object)
        qids = np.asarray(self.query_ids, dtype=object)
        if len(self.texts) != ids.size or len(self.queries) != qids.size:
            raise ParameterError(
                "texts", "one text per document and per query", (len(self.texts), ids.size)
            )
        q = sparse.csr_matrix(self.qrels, dtype=np.float64)
        if q.shape != (qids.size, ids.size):
            raise ParameterError("qrels", f"shape ({qids.size}, {ids.size})", q.shape)
        labels = {}
        for name, lab in self.doc_labels.items():
            a = np.asarray(lab, dtype=object)
            if a.shape != ids.shape:
                raise ParameterError(f"doc_labels[{name!r}]", f"{ids.size} labels", a.shape)
            labels[str(name)] = a
        object.__setattr__(self, "doc_ids", ids)
        object.__setattr__(self, "query_ids", qids)
        object.__setattr__(self, "texts", tuple(self.texts))
        object.__setattr__(self, "queries", tuple(self.queries))
        object.__setattr__(self, "qrels", q)
        object.__setattr__(self, "doc_labels", labels)

    def __repr__(self) -> str:
        """Sizes only (the dataclass default would print every text)."""
        return (
            f"TextCollection(name={self.name!r}, n_docs={len(self.texts)}, "
            f"n_queries={len(self.queries)}, judgements={self.qrels.nnz}, "
            f"doc_labels={sorted(self.doc_labels)})"
        )

    def content_digest(self) -> str:
        """SHA-256 (hex) of the documents, queries, judgements and labels: the fingerprint
        of a collection whose loader declares no source files."""
        h = hashlib.sha256()
        for part in (self.doc_ids.tolist(), list(self.texts), self.query_ids.tolist()):
            h.update(json.dumps(part, ensure_ascii=False).encode())
        h.update(json.dumps(list(self.queries), ensure_ascii=False).encode())
        for a in (self.qrels.indptr, self.qrels.indices, self.qrels.data):
            h.update(np.ascontiguousarray(a).tobytes())
        for name in sorted(self.doc_labels):
            h.update(name.encode())
            h.update(json.dumps(self.doc_labels[name].tolist(), ensure_ascii=False).encode())
        return h.hexdigest()

    @property
    def n_docs(self) -> int:
        return int(self.doc_ids.size)

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    def grades(self, query_index, docs) -> np.ndarray:
        """Judged grade of every (query, document) pair (0 when unjudged), float64."""
        qi = np.asarray(query_index, dtype=np.int64)
        if qi.size == 0:
            return np.zeros(0)
        return np.asarray(self.qrels[qi, np.asarray(docs, dtype=np.int64)]).ravel()

    def label(self, name: str) -> np.ndarray:
        """The document label ``name`` (str [n_docs], ``""`` = unknown)."""
        if name not in self.doc_labels:
            raise ParameterError(
                "label", "one of the collection's labels: " + ", ".join(self.doc_labels), name
            )
        return self.doc_labels[name]

    def membership(self, name: str, classes: Sequence[str]) -> np.ndarray:
        """One-hot float64 ``[n_docs, len(classes)]`` of label ``name``; a document whose
        label is none of ``classes`` (unknown) has a row of zeros."""
        lab = self.label(name)
        out = np.zeros((self.n_docs, len(classes)))
        for j, c in enumerate(classes):
            out[:, j] = lab == c
        return out

    def with_labels(self, **labels) -> TextCollection:
        """A copy with more document labels (str [n_docs] each)."""
        return replace(self, doc_labels={**self.doc_labels, **labels})

    def subset_queries(self, keep) -> TextCollection:
        """The queries where ``keep`` (bool [n_queries]) holds; the documents unchanged."""
        k = np.asarray(keep, dtype=bool)
        return replace(
            self,
            query_ids=self.query_ids[k],
            queries=tuple(q for q, kk in zip(self.queries, k) if kk),
            qrels=self.qrels[np.flatnonzero(k)],
        )

    def ranking_data(self, run: Run, *, k: int | None = None, judged: bool = False) -> RankingData:
        """The top ``k`` of ``run`` as :class:`RankingData`: one item per retrieved document,
        labels the judged grades (0 when unjudged), ``item_ids`` the document positions,
        the one feature column the rank score ``k + 1 − rank`` (strictly decreasing: the run's
        own order, no ties). ``judged=True`` (utility metrics): after the retrieved documents
        every relevant document the top k missed, preceded by non-relevant fillers up to rank
        ``k``, so that an ideal ranking sees every relevant document and the retrieved ones
        keep their ranks (fillers have ``item_ids`` −1; the missed documents keep their
        positions, so that a group target over the relevant documents sees them, and sit
        below rank ``k``, where a top-``k`` metric gives them no exposure)."""
        top = run.top(k)
        if top.n_queries != self.n_queries:
            raise ParameterError("run", f"a run of the {self.n_queries} queries", top.n_queries)
        qi = top.query_index()
        items, qptr = top.docs, top.qptr
        labels = self.grades(qi, items)
        if judged:
            items, labels, qptr = self._completed(top, qi, k)
        sizes = np.diff(qptr)
        rank = np.arange(items.size) - np.repeat(qptr[:-1], sizes) + 1
        depth = int(sizes.max()) if sizes.size else 0
        return RankingData(
            features=(depth + 1 - rank).astype(np.float64)[:, None],
            labels=labels,
            qptr=qptr,
            query_ids=self.query_ids,
            item_ids=items,
            label_max=float(self.qrels.max()) if self.qrels.nnz else 1.0,
            name=f"{self.name}/{run.tag}",
        )

    def _completed(self, top: Run, qi: np.ndarray, k: int | None):
        """Retrieved docs, then fillers to rank k, then the missed relevant documents."""
        rel = self.qrels.tocoo()
        pos = rel.data > 0
        rq, rd, rg = rel.row[pos], rel.col[pos], rel.data[pos]
        n = self.n_docs
        missed = ~np.isin(rq.astype(np.int64) * n + rd, qi * n + top.docs)
        rq, rd, rg = rq[missed], rd[missed], rg[missed]
        n_ret = np.diff(top.qptr)
        fill = np.zeros(self.n_queries, dtype=np.int64)
        if k is not None:
            has_missed = np.bincount(rq, minlength=self.n_queries) > 0
            fill = np.where(has_missed, np.maximum(k - n_ret, 0), 0)
        q_all = np.concatenate([qi, np.repeat(np.arange(self.n_queries), fill), rq])
        d_all = np.concatenate([top.docs, np.full(fill.sum(), -1), rd.astype(np.int64)])
        g_all = np.concatenate([self.grades(qi, top.docs), np.zeros(fill.sum()), rg])
        order = np.argsort(q_all, kind="stable")
        counts = np.bincount(q_all, minlength=self.n_queries)
        qptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return d_all[order], g_all[order], qptr


def load_text_collection(
    corpus: str | os.PathLike,
    queries: str | os.PathLike,
    qrels: str | os.PathLike,
    *,
    groups: str | os.PathLike | None = None,
    group_label: str = "group",
    unknown_docs: str = "raise",
    topic_field: str = "title",
    name: str | None = None,
) -> TextCollection:
    """A :class:`TextCollection` from the files users bring: ``corpus`` (``.jsonl`` /
    ``.json``: :func:`read_collection_jsonl`, else ``docid<TAB>text``), ``queries``
    (:func:`read_queries`), ``qrels`` (TREC qrels; grades below 0 read as 0, as trec_eval
    counts them) and optionally ``groups`` (an item -> group file, stored as the document
    label ``group_label``). Lines naming unknown documents: ``unknown_docs`` (``"raise"`` or
    ``"skip"``; the skips are counted in ``meta``, beside the corpus and queries files)."""
    cpath = Path(corpus)
    if cpath.suffix in (".jsonl", ".json"):
        doc_ids, texts = read_collection_jsonl(cpath)
    else:
        doc_ids, texts = read_collection_tsv(cpath)
    query_ids, query_texts = read_queries(queries, field=topic_field)
    _unique(Path(queries), query_ids, list(range(1, len(query_ids) + 1)), "query id")
    qi, di, g, report = judgements_in(
        read_qrels(qrels),
        doc_ids=doc_ids,
        query_ids=query_ids,
        unknown_docs=unknown_docs,
        path=qrels,
    )
    from scipy import sparse

    matrix = sparse.csr_matrix((g, (qi, di)), shape=(len(query_ids), len(doc_ids)))
    labels, unknown = {}, []
    if groups is not None:
        table = read_item_groups(groups)
        unknown = [i for i in table if i not in set(doc_ids)]
        if unknown and unknown_docs == "raise":
            raise DataFormatError(
                groups, None, f"{len(unknown)} items not in the corpus, e.g. {unknown[0]!r}"
            )
        labels[group_label] = np.array([table.get(d, "") for d in doc_ids], dtype=object)
    return TextCollection(
        doc_ids=np.array(doc_ids, dtype=object),
        texts=tuple(texts),
        query_ids=np.array(query_ids, dtype=object),
        queries=tuple(query_texts),
        qrels=matrix,
        doc_labels=labels,
        name=name or cpath.stem,
        meta={
            "corpus_file": str(cpath),
            "queries_file": str(queries),
            "qrels_skipped_unknown_doc": report.skipped_unknown_doc,
            "qrels_skipped_unknown_query": report.skipped_unknown_query,
            "groups_skipped_unknown_doc": len(unknown),
        },
    )
