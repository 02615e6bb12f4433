"""Item-group membership matrices for :mod:`groupbias.evaluation.fairness`.

A membership matrix is float64 ``[n_items, n_groups]``, non-negative; row ``i`` is item
``i``'s association with every group, and a row of zeros means no association (unknown
group, or no group-representative term). Two sources:

* :func:`membership_from_groups`: the affected-group vector of :class:`RankingData`
  (1 = affected, 0 = non-affected, fractions = probabilities) as the two columns
  ``[affected, non-affected]``.

:func:`affected_group` is the crisp split of that vector that the β estimators compare: the
affected sample ``A_A`` and the non-affected sample ``A_N`` of Eq. (14); :func:`utility_ratio`
compares the two groups' mean relevance (their merit).
* :func:`term_membership`: term-based association from item text and per-group term lists
  (Rekabsaz & Schedl 2020; Abolghasemi et al. 2024): ``M^G(d) = sum_{t in V_G} tf(t, d)``
  counted on word tokens (:func:`tokenize`). Term lists are plain-text files, one term per
  line (:func:`load_term_list`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import DataFormatError, MissingFilesError, ParameterError
from ..core.validation import real

__all__ = [
    "tokenize",
    "membership_from_groups",
    "affected_group",
    "AFFECTED_SPLIT",
    "utility_ratio",
    "load_term_list",
    "load_term_lists",
    "TermMembership",
    "term_membership",
]

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Word tokens of ``text``: lower-cased maximal runs of Unicode word characters
    (letters, digits, underscore), so ``"Women's health-care"`` gives ``["women", "s",
    "health", "care"]``."""
    return _TOKEN.findall(text.lower())


def membership_from_groups(groups) -> np.ndarray:
    """``[g_i, 1 − g_i]`` for every item: float64 [n_items, 2], column 0 = affected,
    column 1 = non-affected. ``groups`` float [n_items] in [0, 1] (1 = affected, 0 =
    non-affected, a fraction = probability of being affected)."""
    g = np.asarray(groups)
    if g.ndim != 1 or not (np.issubdtype(g.dtype, np.number) or g.dtype == bool):
        raise ParameterError(
            "groups",
            "a 1-D numeric array of affected-group memberships",
            f"shape {g.shape}, dtype {g.dtype}",
        )
    g = g.astype(np.float64)
    if not np.all(np.isfinite(g)) or (g.size and (g.min() < 0 or g.max() > 1)):
        raise ParameterError(
            "groups",
            "finite values in [0, 1] (1 = affected, 0 = non-affected)",
            "values outside [0, 1] or NaN",
        )
    return np.stack([g, 1.0 - g], axis=1)


#: fractional memberships ``g >= AFFECTED_SPLIT`` count as affected (more likely affected than not)
AFFECTED_SPLIT = 0.5


def affected_group(groups, group_threshold: float | None = AFFECTED_SPLIT, *, n=None) -> np.ndarray:
    """Bool [n_items]: the items of the affected group ``A_A`` (the rest form ``A_N``).

    ``groups``: memberships in [0, 1] (1 = affected, 0 = non-affected, a fraction = the
    probability of being affected); ``n``: the length they must have (None: any). Crisp 0/1
    memberships: ``g == 1``. Fractional memberships: ``g >= group_threshold`` (default
    :data:`AFFECTED_SPLIT`); ``group_threshold=None`` refuses them (a caller that wants
    crisp groups only). Errors name ``groups`` or ``group_threshold``."""
    gr = np.asarray(groups)
    numeric = np.issubdtype(gr.dtype, np.number) or gr.dtype == bool
    if gr.ndim != 1 or (n is not None and gr.size != n) or not numeric:
        raise ParameterError(
            "groups",
            "a numeric array" + ("" if n is None else f" of length {n}"),
            f"shape {gr.shape}, dtype {gr.dtype}",
        )
    gr = gr.astype(np.float64, copy=False)
    binary = bool(np.all((gr == 0) | (gr == 1)))
    if not binary and (not np.all(np.isfinite(gr)) or gr.min() < 0 or gr.max() > 1):
        raise ParameterError(
            "groups", "memberships in [0, 1] (1 = affected)", "values outside [0, 1] or NaN"
        )
    if group_threshold is None:
        if not binary:
            raise ParameterError(
                "groups",
                "binary memberships (0 or 1)",
                "fractional memberships",
                fix=f"pass group_threshold={AFFECTED_SPLIT} to split them",
            )
        return gr == 1
    t = real("group_threshold", group_threshold, low=0.0, high=1.0, low_open=True)
    return gr >= t


def utility_ratio(relevance: np.ndarray, affected: np.ndarray) -> float:
    """Mean relevance of the affected items / of the non-affected items (NaN with one
    group only)."""
    if not affected.any() or affected.all():
        return float("nan")
    n_a = np.count_nonzero(affected)
    s_a = float(np.sum(relevance, where=affected))  # masked sums: no copies of the groups
    mu_n = float(np.sum(relevance, where=~affected)) / (affected.size - n_a)
    return s_a / n_a / mu_n if mu_n > 0 else float("inf")


def _check_term(term: str) -> str | None:
    """The normalized term, or None when it is not exactly one token."""
    key = term.strip().lower()
    return key if tokenize(key) == [key] else None


def load_term_list(path: str | os.PathLike) -> tuple[str, ...]:
    """Read one group's representative terms: a UTF-8 text file with one term per line.

    Terms are lower-cased; blank lines and lines starting with ``#`` are skipped; repeated
    terms are kept once. Every term must be a single word token (:func:`tokenize`), since
    documents are matched token by token. Errors name the file and line:
    :class:`MissingFilesError` when the file is absent, :class:`DataFormatError` for
    undecodable bytes, a line with a comma or tab (a ``term,group`` table: split it into
    one file per group), a multi-token term, or a file with no term."""
    p = Path(path)
    if not p.is_file():
        raise MissingFilesError(
            p.parent, [p.name], hint="a term list: a text file with one term per line"
        )
    terms: list[str] = []
    seen: set[str] = set()
    for lineno, raw in enumerate(p.read_bytes().splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataFormatError(p, lineno, f"not UTF-8 text ({exc.reason})") from None
        if lineno == 1:
            line = line.lstrip("\ufeff")
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "," in line or "\t" in line:
            raise DataFormatError(
                p,
                lineno,
                f"expected one term per line, got {line!r}; a "
                "'term,group' table must be split into one file per "
                "group",
            )
        key = _check_term(line)
        if key is None:
            raise DataFormatError(
                p,
                lineno,
                f"{line!r} is not a single word token "
                f"(tokens: {tokenize(line)}); terms are matched against "
                "the word tokens of the text",
            )
        if key not in seen:
            seen.add(key)
            terms.append(key)
    if not terms:
        raise DataFormatError(
            p, None, "no terms (the file is empty or has only blank and comment lines)"
        )
    return tuple(terms)


def load_term_lists(paths: Mapping[str, str | os.PathLike]) -> dict[str, tuple[str, ...]]:
    """``{group name: terms}`` from ``{group name: term-list file}`` (see
    :func:`load_term_list`); the order of the groups is the order of ``paths``."""
    if not isinstance(paths, Mapping) or not paths:
        raise ParameterError("paths", "a non-empty mapping {group name: term-list file}", paths)
    return {str(name): load_term_list(path) for name, path in paths.items()}


@dataclass(frozen=True)
class TermMembership:
    """Term-based group association of items.

    Attributes
    ----------
    group_names : tuple[str, ...], the groups (membership columns), in term-list order.
    counts : float64 [n_items, n_groups], ``M^G(d) = sum_{t in V_G} tf(t, d)``: the raw
        magnitudes of ARaB (TC / TF / Boolean) and of the NFaiRR reference (``tau=1``).
    lengths : int64 [n_items], ``|d|``: the number of tokens of the item's text (0 when the
        text is missing).
    """

    group_names: tuple[str, ...]
    counts: np.ndarray
    lengths: np.ndarray

    @property
    def membership(self) -> np.ndarray:
        """Row-normalized counts ``M^G(d) / sum_x M^x(d)`` (rows sum to 1; rows of zeros for
        items without any group term): probabilistic association for AWRF, CWEx, NFaiRR."""
        rows = self.counts.sum(axis=1, keepdims=True)
        return np.divide(self.counts, rows, out=np.zeros_like(self.counts), where=rows > 0)

    @property
    def term_exposure(self) -> np.ndarray:
        """``M^G(d) / |d|`` = ``sum_{t in V_G} p_o(t | d)``: the per-item share of group terms
        whose rank-weighted sum is TExFAIR's term exposure (Abolghasemi et al. 2024, Eq. 8–9)."""
        lengths = self.lengths[:, None].astype(np.float64)
        return np.divide(self.counts, lengths, out=np.zeros_like(self.counts), where=lengths > 0)

    @property
    def representative(self) -> np.ndarray:
        """bool [n_items]: the item contains at least one group term (RBDF's ``S_R``)."""
        return self.counts.sum(axis=1) > 0


def _texts(texts) -> list[str]:
    import pandas as pd  # imported where used: pandas is large

    if isinstance(texts, (str, bytes)) or not isinstance(texts, (Sequence, np.ndarray, pd.Series)):
        raise ParameterError(
            "texts",
            "a sequence of item texts (str, or None / NaN for a missing text)",
            type(texts).__name__,
        )
    out = []
    for i, t in enumerate(texts):
        if t is None or (isinstance(t, float) and math.isnan(t)):
            out.append("")
        elif isinstance(t, str):
            out.append(t)
        else:
            raise ParameterError(
                f"texts[{i}]", "a str, or None / NaN for a missing text", type(t).__name__
            )
    return out


def _term_lists(term_lists) -> dict[str, tuple[str, ...]]:
    if not isinstance(term_lists, Mapping) or not term_lists:
        raise ParameterError(
            "term_lists", "a non-empty mapping {group name: terms}", type(term_lists).__name__
        )
    out = {}
    for name, terms in term_lists.items():
        if isinstance(terms, str) or not isinstance(terms, Iterable):
            raise ParameterError(
                f"term_lists[{name!r}]", "an iterable of terms", type(terms).__name__
            )
        keys = []
        for t in terms:
            key = _check_term(t) if isinstance(t, str) else None
            if key is None:
                raise ParameterError(f"term_lists[{name!r}]", "single word tokens", t)
            keys.append(key)
        if not keys:
            raise ParameterError(f"term_lists[{name!r}]", "at least one term", "no terms")
        out[str(name)] = tuple(dict.fromkeys(keys))
    return out


def term_membership(
    texts, term_lists: Mapping[str, Iterable[str]], *, tokenizer=None
) -> TermMembership:
    """Count every group's terms in every item's text.

    ``texts``: one text per item (None or NaN = missing: no tokens, no association).
    ``term_lists``: ``{group name: terms}`` (e.g. from :func:`load_term_lists`); a term
    listed for several groups counts for each. Texts are tokenized once (``tokenizer``, a
    function text → tokens; default :func:`tokenize`); the counting is vectorized over all
    tokens. Returns a
    :class:`TermMembership` whose ``membership`` / ``term_exposure`` / ``counts`` feed the
    metrics of :mod:`groupbias.evaluation.fairness`."""
    docs = _texts(texts)
    lists = _term_lists(term_lists)
    n = len(docs)
    tokens: list[str] = []
    lengths = np.zeros(n, dtype=np.int64)
    split = tokenize if tokenizer is None else tokenizer
    for i, text in enumerate(docs):
        toks = split(text)
        lengths[i] = len(toks)
        tokens.extend(toks)
    doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
    import pandas as pd

    codes, vocab = pd.factorize(pd.Series(tokens, dtype=object))
    vocab = pd.Index(vocab)
    counts = np.zeros((n, len(lists)), dtype=np.float64)
    for g, terms in enumerate(lists.values()):
        hit = vocab.isin(terms)
        if codes.size:
            counts[:, g] = np.bincount(doc, weights=hit[codes].astype(np.float64), minlength=n)
    return TermMembership(group_names=tuple(lists), counts=counts, lengths=lengths)
