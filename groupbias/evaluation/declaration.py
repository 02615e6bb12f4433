"""One declaration per metric, beside its function: everything else about a metric (the
catalogue of names, the tables' labels, the reason an external run's measure is undefined,
whether it is a related-work measure) is derived from it.

:func:`metric_info` is the declaration, a decorator on the metric's function::

    @metric_info(name="success", aliases=("Success", "success_{k}", "hit_rate"),
                 label="Success", needs=("labels",),
                 undefined="no judged query holds a relevant document")
    def success(scores, labels, *, qptr, k=None, ...): ...

- ``name``: the registered name (the catalogue's canonical name); ``aliases``: the names
  other tools give the measure (ir_measures ``P``, trec_eval ``P_{k}``, ranx
  ``precision``), their case ignored; an alias ending in ``_{k}`` is trec_eval's form with
  the cutoff in the name (``P_10`` = ``precision@10``; ``P.10`` as ``-m`` writes it too);
- ``label``: the name in tables (``"NDCG"``: ``ndcg@10:affected`` is shown as
  ``NDCG@10 affected ↑``, the arrow from ``direction``);
- ``needs``: the fields of :class:`~groupbias.evaluation.catalog.EvalSpec` the metric
  reads (:data:`NEEDS`; ``"judgments"``: which documents the qrels judge, known for an
  external run only);
- ``undefined``: why a query can have no value (said when no query has one);
- ``related_work``: a measure of the related work (:mod:`~groupbias.evaluation.fairness`);
- ``direction``, ``default_k``, ``groups``, ``ranked``: which way it is better, the cutoff
  without ``@k``, the ``:group`` suffixes it accepts, and whether it gets a ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import ParameterError
from ..core.validation import check_k, choice

__all__ = ["GROUPS", "DIRECTIONS", "NEEDS", "MetricInfo", "metric_info", "info_of"]

#: which items' relevance a metric counts: all, or one group's
GROUPS = ("all", "affected", "non_affected")
#: which way a metric is better: larger, smaller, or closer to 0 (signed bias measures)
DIRECTIONS = ("higher", "lower", "zero")
#: what a metric may read: the EvalSpec fields, and which documents are judged
NEEDS = ("labels", "relevance", "groups", "membership", "judgments")
#: the arrow a table label ends with, by direction
ARROWS = {"higher": "↑", "lower": "↓", "zero": "→0"}
#: how a table names the groups of ``:group``
GROUP_WORDS = {"all": "", "affected": " affected", "non_affected": " non-affected"}
#: an undefined measure's reason when its declaration gives none
UNDEFINED = "the measure is undefined on every list"


@dataclass(frozen=True)
class MetricInfo:
    """A metric's declaration (the module docstring)."""

    name: str | None = None
    aliases: tuple[str, ...] = ()
    label: str | None = None
    needs: tuple[str, ...] = ()
    undefined: str = UNDEFINED
    related_work: bool = False
    direction: str = "higher"
    default_k: int | None = None
    groups: tuple[str, ...] = GROUPS
    ranked: bool = False
    bounds: tuple[float | None, float | None] = (None, None)

    def table_label(self, k: str | None, group: str) -> str | None:
        """``label[@k][ group] arrow``; None without a label."""
        if self.label is None:
            return None
        cut = f"@{k}" if k is not None else ""
        return f"{self.label}{cut}{GROUP_WORDS[group]} {ARROWS[self.direction]}"


def _texts(name: str, values) -> tuple[str, ...]:
    """A list of non-empty strings, as a tuple."""
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise ParameterError(name, "a list of names", values)
    for v in values:
        if not isinstance(v, str) or not v:
            raise ParameterError(name, "non-empty strings", v)
    return tuple(values)


def metric_info(
    *,
    name: str | None = None,
    aliases: Sequence[str] = (),
    label: str | None = None,
    needs: Sequence[str] = (),
    undefined: str = UNDEFINED,
    related_work: bool = False,
    default_k: int | None = None,
    groups: Sequence[str] = GROUPS,
    ranked: bool = False,
    direction: str = "higher",
    bounds: tuple[float | None, float | None] = (None, None),
):
    """Decorator declaring a metric (the module docstring): sets ``fn.info`` (a
    :class:`MetricInfo`) and, as before, ``fn.default_k``, ``fn.groups``, ``fn.ranked``
    and ``fn.direction``. Undecorated user metrics get :class:`MetricInfo`'s defaults
    (no cutoff, every group, the score array, higher is better)."""
    for key, text in (("name", name), ("label", label)):
        if text is not None and (not isinstance(text, str) or not text):
            raise ParameterError(key, "a non-empty string or None", text)
    if not isinstance(undefined, str) or not undefined:
        raise ParameterError("undefined", "a sentence saying why", undefined)
    for alias in _texts("aliases", aliases):
        if "{k}" in alias[:-4] or ("{k}" in alias and not alias.endswith("_{k}")):
            raise ParameterError("aliases", "{k} only at the end, after '_' (P_{k})", alias)
    for flag, value in (("ranked", ranked), ("related_work", related_work)):
        if not isinstance(value, bool):
            raise ParameterError(flag, "True or False", value)
    lo, hi = bounds
    if lo is not None and hi is not None and not lo < hi:
        raise ParameterError("bounds", "(lowest, highest) with lowest < highest", bounds)
    info = MetricInfo(
        name=name,
        aliases=_texts("aliases", aliases),
        label=label,
        needs=tuple(choice("needs", n, NEEDS) for n in _texts("needs", needs)),
        undefined=undefined,
        related_work=related_work,
        direction=choice("direction", direction, DIRECTIONS),
        default_k=check_k(default_k, "default_k"),
        groups=tuple(choice("groups", g, GROUPS) for g in groups),
        ranked=ranked,
        bounds=(lo, hi),
    )

    def mark(fn):
        fn.info = info
        fn.default_k, fn.groups, fn.ranked, fn.direction = (
            info.default_k,
            info.groups,
            info.ranked,
            info.direction,
        )
        return fn

    return mark


def info_of(fn) -> MetricInfo:
    """The declaration of the metric function ``fn``: ``fn.info``, else the defaults (and
    the attributes ``default_k``, ``groups``, ``ranked``, ``direction`` where set)."""
    info = getattr(fn, "info", None)
    if isinstance(info, MetricInfo):
        return info
    return MetricInfo(
        direction=getattr(fn, "direction", "higher"),
        default_k=getattr(fn, "default_k", None),
        groups=tuple(getattr(fn, "groups", GROUPS)),
        ranked=getattr(fn, "ranked", False),
    )
