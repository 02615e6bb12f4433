"""The one ranking-data type every loader returns.

Storage is flat: items of all queries are concatenated, and ``qptr`` holds the query
offsets, so the items of query ``i`` are ``qptr[i]:qptr[i+1]``. Per-query access is a zero-copy
view (:meth:`RankingData.query`). Padded tensors belong to the LTR code (``groupbias.ltr``).

Conventions
-----------
- ``groups``: 1 = affected group, 0 = non-affected; values in [0, 1] are membership
  probabilities of the affected group. ``None`` until a grouping step sets it.
- ``labels``: graded relevance (e.g. 0..4) or continuous scores in [0, 1] (IIT-JEE marks,
  MovieLens normalized ratings); ``label_max`` records the top of the scale.
- ``feature_ids``: the dataset's own feature numbers (Yahoo! 1..700, MSLR 1..136), so a
  sensitive feature can be named as in the paper.
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from ..core.errors import DataError, ParameterError
from ..core.validation import all_finite, all_integral, identifiers


class QueryView(NamedTuple):
    """Zero-copy views of one query's items."""

    query_id: object
    features: np.ndarray
    labels: np.ndarray
    groups: np.ndarray | None
    item_ids: np.ndarray | None


#: read-only feature matrices already found finite (by id, with a weak reference to tell a
#: reused id apart): copies of a dataset that share its matrix are not scanned again
_FINITE: dict[int, weakref.ref] = {}


def _finite_features(feats: np.ndarray) -> bool:
    """``all_finite(feats)``, remembered for read-only matrices (cached and memory-mapped
    data: nothing can change them after the check)."""
    known = _FINITE.get(id(feats))
    if known is not None and known() is feats:
        return True
    if not all_finite(feats):
        return False
    if not feats.flags.writeable:
        key = id(feats)

        def forget(_ref, k: int = key) -> None:
            _FINITE.pop(k, None)

        try:
            _FINITE[key] = weakref.ref(feats, forget)
        except TypeError:  # not weakly referenceable: checked every time
            pass
    return True


@dataclass(frozen=True, eq=False)
class RankingData:
    """Flat ranking data of one split.

    Attributes
    ----------
    features : float32 [n_items, n_features]
    labels : float64 [n_items]
    qptr : int64 [n_queries + 1], ``qptr[0] == 0``, non-decreasing, ``qptr[-1] == n_items``
    query_ids : [n_queries] (ints or strings)
    feature_ids : int64 [n_features], the dataset's feature numbers
    item_ids : [n_items] or None
    groups : float64 [n_items] in [0, 1] (1 = affected) or None
    label_max : top of the label scale (used by ``label / label_max`` relevance)
    name : a short description, e.g. ``"mslr-web30k/Fold1/train"``
    """

    features: np.ndarray
    labels: np.ndarray
    qptr: np.ndarray
    query_ids: np.ndarray
    feature_ids: np.ndarray | None = None
    item_ids: np.ndarray | None = None
    groups: np.ndarray | None = None
    label_max: float | None = None
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        who = self.name or "RankingData"
        feats = np.asarray(self.features)
        if feats.ndim != 2:
            raise DataError(
                f"{who}: features must be 2-D [n_items, n_features], got shape {feats.shape}"
            )
        feats = feats.astype(np.float32, copy=False)
        if not _finite_features(feats):
            raise DataError(
                f"{who}: features hold NaN or infinite values; impute or drop them first"
            )
        object.__setattr__(self, "features", feats)
        n = feats.shape[0]
        labels = np.asarray(self.labels, dtype=np.float64)
        if labels.shape != (n,):
            raise DataError(
                f"{who}: labels has shape {labels.shape}, expected ({n},) to match features"
            )
        if not all_finite(labels):
            bad = int(np.flatnonzero(~np.isfinite(labels))[0])
            raise DataError(f"{who}: label {labels[bad]!r} of item {bad} is not a finite number")
        object.__setattr__(self, "labels", labels)
        self._set_offsets(who, n)
        self._set_optional(who, n, feats.shape[1])

    def _set_offsets(self, who: str, n: int) -> None:
        qptr = np.asarray(self.qptr)
        # compared, never subtracted: offsets that wrapped around int64 pass np.diff checks
        if (
            qptr.ndim != 1
            or qptr.size < 1
            or not np.issubdtype(qptr.dtype, np.integer)
            or (qptr.dtype == np.uint64 and int(qptr.max()) >= 2**63)
        ):
            raise DataError(f"{who}: qptr must be 1-D integer offsets (int64)")
        qptr = qptr.astype(np.int64, copy=False)
        if qptr[0] != 0 or qptr[-1] != n or bool(np.any(qptr[1:] < qptr[:-1])):
            raise DataError(
                f"{who}: qptr must start at 0, be non-decreasing and end at n_items={n}"
            )
        object.__setattr__(self, "qptr", qptr)
        qids = self._ids(who, "query_ids", self.query_ids)
        if qids.shape != (qptr.size - 1,):
            raise DataError(f"{who}: query_ids has {qids.size} entries for {qptr.size - 1} queries")
        object.__setattr__(self, "query_ids", qids)

    @staticmethod
    def _ids(who: str, name: str, values) -> np.ndarray:
        """An id column as integers or strings (:func:`~groupbias.core.validation.identifiers`:
        never floats, which merge ids above 2**53)."""
        a = np.asarray(values)
        if a.size == 0:
            return a.astype(np.int64)
        if a.dtype.kind == "O" and not any(isinstance(v, (float, np.floating)) for v in a.flat):
            return a  # Python ints and strings: kept as they are
        if a.dtype.kind in "iuUS":  # already integers or text: kept as they are
            return a
        try:
            return identifiers(name, a)
        except ParameterError as exc:
            raise DataError(f"{who}: {exc}") from None

    def _set_optional(self, who: str, n: int, n_features: int) -> None:
        if self.feature_ids is None:
            object.__setattr__(self, "feature_ids", np.arange(1, n_features + 1, dtype=np.int64))
        else:
            fids = np.asarray(self.feature_ids, dtype=np.int64)
            if fids.shape != (n_features,):
                raise DataError(
                    f"{who}: feature_ids has {fids.size} entries for {n_features} feature columns"
                )
            object.__setattr__(self, "feature_ids", fids)
        if self.item_ids is not None:
            iids = self._ids(who, "item_ids", self.item_ids)
            if iids.shape != (n,):
                raise DataError(f"{who}: item_ids has shape {iids.shape}, expected ({n},)")
            object.__setattr__(self, "item_ids", iids)
        if self.groups is not None:
            g = np.asarray(self.groups, dtype=np.float64)
            if g.shape != (n,):
                raise DataError(f"{who}: groups has shape {g.shape}, expected ({n},)")
            if np.any(~np.isfinite(g)) or np.any((g < 0) | (g > 1)):
                raise DataError(
                    f"{who}: groups must lie in [0, 1] "
                    "(1 = affected, 0 = non-affected, fractions = probabilities)"
                )
            object.__setattr__(self, "groups", g)

    def __repr__(self) -> str:
        """Sizes and dtypes only (the dataclass default would print every array)."""

        def kind(a) -> str:
            return "None" if a is None else str(np.asarray(a).dtype)

        return (
            f"RankingData(name={self.name!r}, n_queries={self.n_queries}, "
            f"n_items={self.n_items}, features={kind(self.features)}[{self.n_items}, "
            f"{self.n_features}], labels={kind(self.labels)}, groups={kind(self.groups)}, "
            f"item_ids={kind(self.item_ids)}, label_max={self.label_max!r})"
        )

    # ---- sizes -------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return int(self.qptr.size - 1)

    @property
    def n_items(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def list_sizes(self) -> np.ndarray:
        """Items per query, int64 [n_queries]."""
        return np.diff(self.qptr)

    @property
    def grade_spacing(self) -> float | None:
        """Spacing of the relevance grades on the P(R) scale: ``1/L`` for integer labels
        0..L with L >= 1 (``L`` = ``label_max``, else the largest label; 1 for binary
        labels), None for continuous labels or none at all. Estimators with
        ``jitter_scale="grade"`` put their tie-breaking noise on this spacing."""
        lab = self.labels
        if lab.size == 0 or not all_integral(lab):
            return None
        top = float(self.label_max or lab.max())
        return 1.0 / top if top >= 1 else None

    def query_index(self) -> np.ndarray:
        """Query index (0..n_queries-1) of every item, int64 [n_items]."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), self.list_sizes)

    # ---- access ------------------------------------------------------------------------
    def query(self, i: int) -> QueryView:
        """Zero-copy views of query ``i``'s items (negative indices count from the end)."""
        if not -self.n_queries <= i < self.n_queries:
            raise IndexError(f"query index {i} out of range for {self.n_queries} queries")
        i %= self.n_queries
        s, e = int(self.qptr[i]), int(self.qptr[i + 1])
        return QueryView(
            self.query_ids[i],
            self.features[s:e],
            self.labels[s:e],
            None if self.groups is None else self.groups[s:e],
            None if self.item_ids is None else self.item_ids[s:e],
        )

    def feature(self, feature_id: int) -> np.ndarray:
        """Column of the feature with dataset number ``feature_id`` (a view)."""
        ids = np.asarray(self.feature_ids)
        hit = np.flatnonzero(ids == int(feature_id))
        if hit.size == 0:
            raise DataError(
                f"{self.name or 'RankingData'}: no feature with id {feature_id}; "
                f"ids range {int(ids.min())}..{int(ids.max())}"
            )
        return self.features[:, int(hit[0])]

    # ---- derived data ------------------------------------------------------------------
    def with_groups(self, groups: np.ndarray, **meta) -> RankingData:
        """A copy (sharing arrays) with ``groups`` set; ``meta`` is merged into ``.meta``."""
        return replace(self, groups=groups, meta={**self.meta, **meta})

    def with_labels(self, labels: np.ndarray) -> RankingData:
        return replace(self, labels=labels)

    def subset(self, query_indices: np.ndarray) -> RankingData:
        """The queries ``query_indices`` (in that order), copied into a new flat layout."""
        qi = np.asarray(query_indices, dtype=np.int64)
        sizes = self.list_sizes[qi]
        qptr = np.zeros(qi.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=qptr[1:])
        # item positions: for each chosen query, its range in the source
        starts = np.repeat(self.qptr[qi] - qptr[:-1], sizes)
        items = np.arange(qptr[-1], dtype=np.int64) + starts
        return self._with_items(items, qptr, self.query_ids[qi])

    def _with_items(self, items, qptr: np.ndarray, query_ids) -> RankingData:
        """A copy holding the items ``items`` (indices or a mask) laid out by ``qptr``."""
        return replace(
            self,
            features=self.features[items],
            labels=self.labels[items],
            qptr=qptr,
            query_ids=query_ids,
            item_ids=None if self.item_ids is None else self.item_ids[items],
            groups=None if self.groups is None else self.groups[items],
        )

    def keep_items(self, keep) -> RankingData:
        """The items where ``keep`` (bool [n_items]) holds, in order; queries left empty are
        dropped."""
        k = np.asarray(keep, dtype=bool)
        counts = np.zeros(self.n_queries, dtype=np.int64)
        nonempty = self.list_sizes > 0
        if k.size:
            counts[nonempty] = np.add.reduceat(k.astype(np.int64), self.qptr[:-1][nonempty])
        kept = counts > 0
        qptr = np.concatenate(([0], np.cumsum(counts[kept]))).astype(np.int64)
        return self._with_items(k, qptr, self.query_ids[kept])

    def content_digest(self) -> str:
        """SHA-256 (hex) of every array (features, labels, offsets, ids, groups): the
        fingerprint of data whose loader declares no source files."""
        h = hashlib.sha256()
        for name in (
            "features",
            "labels",
            "qptr",
            "query_ids",
            "feature_ids",
            "item_ids",
            "groups",
        ):
            a = getattr(self, name)
            h.update(name.encode())
            if a is None:
                continue
            a = np.asarray(a)
            if a.dtype.kind == "O":
                h.update(repr(a.tolist()).encode())
                continue
            h.update(f"{a.dtype.str}{a.shape}".encode())
            step = max(1, (1 << 22) // max(1, a[:1].size))  # rows per block, C order
            for s in range(0, a.shape[0], step):
                h.update(np.ascontiguousarray(a[s : s + step]).data)
        return h.hexdigest()

    def summary(self) -> dict:
        """Sizes, label histogram and (if grouped) group statistics, as plain Python values."""
        sizes = self.list_sizes
        out = {
            "name": self.name,
            "n_queries": self.n_queries,
            "n_items": self.n_items,
            "n_features": self.n_features,
            "list_size_min": int(sizes.min()) if sizes.size else 0,
            "list_size_mean": float(sizes.mean()) if sizes.size else 0.0,
            "list_size_max": int(sizes.max()) if sizes.size else 0,
            "label_mean": float(self.labels.mean()) if self.n_items else float("nan"),
        }
        if self.groups is not None and self.n_items:
            g = self.groups
            qi = self.query_index()
            n_aff = np.bincount(qi, weights=g, minlength=self.n_queries)
            n_non = np.bincount(qi, weights=1.0 - g, minlength=self.n_queries)
            aff_share = float(g.mean())
            mu_a = float((g * self.labels).sum() / max(g.sum(), 1e-12))
            mu_n = float(((1 - g) * self.labels).sum() / max((1 - g).sum(), 1e-12))
            out.update(
                {
                    "affected_share": aff_share,
                    "mean_label_affected": mu_a,
                    "mean_label_non_affected": mu_n,
                    "utility_ratio": mu_a / mu_n if mu_n > 0 else float("inf"),
                    "queries_with_both_groups": int(np.sum((n_aff > 0) & (n_non > 0))),
                }
            )
        return out
