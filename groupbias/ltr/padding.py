"""The one conversion between flat ranking arrays and padded tensors.

Flat layout (as in :class:`groupbias.data.ranking_data.RankingData`): the items of all queries are
concatenated; the items of query ``i`` are ``qptr[i]:qptr[i+1]``.

Padded layout (what the scorer and the loss see): ``features`` float32 ``[B, L, f]``,
``labels`` float32 ``[B, L]`` and a boolean ``mask`` ``[B, L]`` with **True = real item**. Row
``b`` holds one list; its real items fill the first slots ``0..n_b-1`` in their flat order and
the rest is padding (features and labels 0). Padding is told apart by the mask only: labels
carry no sentinel value, so any non-negative real label (IPS-corrected labels included) is a
valid label.

Because real items form a prefix of every row, ``padded[mask]`` (row-major) lists the real
items in exactly the order they were gathered; :func:`from_padded` relies on that.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ..core.errors import ParameterError
from ..core.validation import check_qptr


class PaddedBatch(NamedTuple):
    """Padded lists.

    features : float32 [B, L, f], 0 at padded slots
    labels : float32 [B, L] (0 at padded slots) or None
    mask : bool [B, L], True = real item
    positions : int64 [B, L], the item's position inside its query's flat segment
        (0-based; used only by positional encodings), 0 at padded slots
    items : int64 [n_real], the flat index of every real slot, in row-major slot order
    """

    features: torch.Tensor
    labels: torch.Tensor | None
    mask: torch.Tensor
    positions: torch.Tensor
    items: torch.Tensor


def _checked_rows(sizes, items, list_size):
    """Row sizes and items as int64, and the pad width."""
    sizes = np.asarray(sizes, dtype=np.int64)
    items = np.asarray(items, dtype=np.int64)
    if sizes.ndim != 1 or np.any(sizes < 0) or int(sizes.sum()) != items.size:
        raise ParameterError(
            "sizes",
            f"non-negative row sizes summing to len(items)={items.size}",
            f"sizes summing to {int(sizes.sum()) if sizes.size else 0}",
        )
    width = max(int(sizes.max()) if sizes.size else 0, 1)
    if list_size is not None:
        if int(list_size) < width:
            raise ParameterError(
                "list_size",
                f"an integer >= the longest list ({width})",
                list_size,
                fix="raise list_size or sample slates first",
            )
        width = int(list_size)
    return sizes, items, width


def _slots(items, sizes, qstarts, list_size):
    """Where each item goes: (items, row, col, mask, positions) of the padded rows of
    :func:`pad_segments`."""
    sizes, items, width = _checked_rows(sizes, items, list_size)
    n_rows = sizes.size
    starts = np.zeros(n_rows, dtype=np.int64)
    if n_rows:
        np.cumsum(sizes[:-1], out=starts[1:])
    row = np.repeat(np.arange(n_rows, dtype=np.int64), sizes)
    col = np.arange(items.size, dtype=np.int64) - starts[row]
    mask = np.zeros((n_rows, width), dtype=bool)
    mask[row, col] = True
    pos = np.zeros((n_rows, width), dtype=np.int64)
    if qstarts is None:
        pos[row, col] = col
    else:
        pos[row, col] = items - np.asarray(qstarts, dtype=np.int64)[row]
    return items, row, col, mask, pos


def pad_segments(
    features: np.ndarray,
    labels: np.ndarray | None,
    items: np.ndarray,
    sizes: np.ndarray,
    qstarts: np.ndarray | None = None,
    *,
    list_size: int | None = None,
) -> PaddedBatch:
    """Gather ``items`` (flat indices, grouped in consecutive runs of ``sizes``) into padded rows.

    Parameters
    ----------
    features : [n_items, f] array; labels : [n_items] or None
    items : int64 [sum(sizes)], the flat items of row 0, then of row 1, ...
    sizes : int64 [B], items per row (0 allowed: an all-padding row)
    qstarts : int64 [B] or None, flat start of each row's query (for ``positions``);
        when None, positions are the slot index within the row
    list_size : pad width; default ``max(sizes)`` (at least 1). Must be ``>= max(sizes)``.
    """
    items, row, col, mask, pos = _slots(items, sizes, qstarts, list_size)
    feats = np.asarray(features)
    x = np.zeros((*mask.shape, feats.shape[1]), dtype=np.float32)
    x[row, col] = feats[items]
    y = None
    if labels is not None:
        y_np = np.zeros(mask.shape, dtype=np.float32)
        y_np[row, col] = np.asarray(labels)[items]
        y = torch.from_numpy(y_np)
    return PaddedBatch(
        torch.from_numpy(x),
        y,
        torch.from_numpy(mask),
        torch.from_numpy(pos),
        torch.from_numpy(items),
    )


class PaddedIndex(NamedTuple):
    """Padded lists as indices only, for gathering on the device (:func:`gather_padded`).

    rows : int64 [B, L], the flat index of the item in each slot (0 at padded slots)
    mask, positions, items : as in :class:`PaddedBatch`
    """

    rows: torch.Tensor
    mask: torch.Tensor
    positions: torch.Tensor
    items: torch.Tensor


def pad_index(
    items: np.ndarray,
    sizes: np.ndarray,
    qstarts: np.ndarray | None = None,
    *,
    list_size: int | None = None,
) -> PaddedIndex:
    """The slots of :func:`pad_segments` (same arguments, no features) as a
    :class:`PaddedIndex`: ``gather_padded(features, index.rows, index.mask)`` is then
    ``pad_segments(features, ...).features``, bit for bit."""
    items, row, col, mask, pos = _slots(items, sizes, qstarts, list_size)
    rows = np.zeros(mask.shape, dtype=np.int64)
    rows[row, col] = items
    return PaddedIndex(
        torch.from_numpy(rows),
        torch.from_numpy(mask),
        torch.from_numpy(pos),
        torch.from_numpy(items),
    )


def gather_padded(values: torch.Tensor, rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``values[rows]`` ([n, ...] -> [B, L, ...]) with +0.0 at the padded slots (``mask``
    False), on ``values``' device and in its dtype; no host sync (no boolean indexing)."""
    out = values.index_select(0, rows.reshape(-1)).reshape(*rows.shape, *values.shape[1:])
    keep = mask.reshape(*mask.shape, *([1] * (values.dim() - 1)))
    return out.masked_fill_(~keep, 0)


def to_padded(
    features: np.ndarray,
    labels: np.ndarray | None,
    qptr: np.ndarray,
    *,
    queries: np.ndarray | None = None,
    list_size: int | None = None,
) -> PaddedBatch:
    """Padded tensors of whole queries (one row per query).

    Parameters
    ----------
    features : [n_items, f]; labels : [n_items] or None; qptr : int64 [n_queries + 1]
    queries : indices of the queries to take, in row order (default: all queries)
    list_size : pad width (default: the longest chosen list)

    Returns a :class:`PaddedBatch`; ``from_padded(batch.features, batch.mask)`` gives back
    ``features[batch.items]``, which is ``features`` itself when all queries are taken in order.
    """
    feats = np.asarray(features)
    if feats.ndim != 2:
        raise ParameterError("features", "a 2-D array [n_items, n_features]", feats.shape)
    qptr = check_qptr(qptr, feats.shape[0])
    if labels is not None and np.shape(labels) != (feats.shape[0],):
        raise ParameterError("labels", f"shape ({feats.shape[0]},)", np.shape(labels))
    if queries is None:
        qi = np.arange(qptr.size - 1, dtype=np.int64)
    else:
        qi = np.asarray(queries, dtype=np.int64)
        if qi.ndim != 1 or (qi.size and (qi.min() < 0 or qi.max() >= qptr.size - 1)):
            raise ParameterError("queries", f"indices in [0, {qptr.size - 1})", queries)
    sizes = qptr[qi + 1] - qptr[qi]
    starts = qptr[qi]
    out_starts = np.zeros(qi.size, dtype=np.int64)
    if qi.size:
        np.cumsum(sizes[:-1], out=out_starts[1:])
    items = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(starts - out_starts, sizes)
    return pad_segments(feats, labels, items, sizes, starts, list_size=list_size)


def from_padded(
    values: torch.Tensor | np.ndarray, mask: torch.Tensor | np.ndarray
) -> torch.Tensor | np.ndarray:
    """The real slots of padded ``values`` ([B, L, ...]) as a flat array ([n_real, ...]).

    The order is row-major, i.e. the order of :attr:`PaddedBatch.items`. Works on torch
    tensors (differentiable) and numpy arrays alike.
    """
    if isinstance(values, torch.Tensor):
        m = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)
        return values[m.to(device=values.device, dtype=torch.bool)]
    return np.asarray(values)[np.asarray(mask, dtype=bool)]
