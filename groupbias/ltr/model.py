"""Context-aware self-attention scorer (the LTR model of paper §6.1, after Pobrotyn et al. 2020).

Architecture (``x``: float32 ``[B, L, f]``, ``mask``: bool ``[B, L]``, True = real item)::

    input block   x <- InputNorm(x);  for each size: x <- Dropout(Act(Linear(x)))
    encoder       (optional positional encoding)
                  N times:  x <- x + Dropout(MHA(LN(x), key_mask=mask))
                            x <- x + Dropout(W2 Dropout(ReLU(W1 LN(x))))
                  x <- LN(x)
    output        s <- OutAct(Linear(x))  (summed over the last axis when d_output > 1)

Multi-head self-attention runs over the items of one list
(``torch.nn.functional.scaled_dot_product_attention``) with padded items masked as keys, so
no real item attends to padding. Padded items are never computed: the position-wise layers
(input block, projections, feed-forward, layer norms, output) run on the real items packed
into ``[n_real, d]``, and only queries, keys and values are unpacked into ``[B, h, L, d_k]``
(zeros at padded slots) for the attention. The returned scores of padded items are exactly 0:
they carry no meaning, and the loss and the metrics select real items with the mask.

Configuration follows allRank's model schema, so an allRank ``model`` config dict is reused
as is::

    {"fc_model": {"sizes": [144], "input_norm": false, "activation": "ReLU", "dropout": 0.0},
     "transformer": {"N": 2, "d_ff": 384, "h": 1, "positional_encoding": null, "dropout": 0.1},
     "post_model": {"output_activation": null, "d_output": 1}}

``fc_model`` and ``transformer`` may be null (no input block / no encoder). Beyond allRank,
``input_norm`` also takes ``"layer"`` (= true) and ``"batch"`` (batch normalization over the
real items of the batch). No positional encoding by default; ``{"strategy": "fixed" |
"learned", "max_indices": M}`` adds one over the items' positions in their flat segment.

Differences from allRank's implementation (after
:func:`groupbias.ltr.allrank_compat.load_allrank_weights`, scores of real items agree to 1e-4,
and to 1e-5 with the layer-norm epsilons set to 0): layer normalization is
``torch.nn.LayerNorm`` (biased variance, eps 1e-6 inside the square root) where allRank divides
by the unbiased standard deviation plus 1e-6 — the weight mapping rescales the gain by
``sqrt((d-1)/d)``; query/key/value projections are one fused linear layer; allRank's mask
convention is True = padded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..core.errors import ParameterError
from ..core.validation import choice, integer, real, sequence

LN_EPS = 1e-6
_MODEL_KEYS = ("fc_model", "transformer", "post_model")
_FC_KEYS = {"sizes", "input_norm", "activation", "dropout"}
_TR_KEYS = {"N", "d_ff", "h", "positional_encoding", "dropout"}
_POST_KEYS = {"output_activation", "d_output"}


def _activation(name: str | None, field: str) -> nn.Module:
    if name is None:
        return nn.Identity()
    cls = getattr(torch.nn.modules.activation, str(name), None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ParameterError(
            field,
            "null or the name of a torch.nn activation class (e.g. 'ReLU', 'Tanh', 'Sigmoid')",
            name,
        )
    return cls()


class InputBlock(nn.Module):
    """allRank's ``fc_model``: optional input normalization, then Linear -> activation ->
    dropout for every size in ``sizes``. Input [B, L, n_features] -> [B, L, sizes[-1]]."""

    def __init__(
        self, n_features: int, *, sizes, input_norm=False, activation=None, dropout=0.0
    ) -> None:
        super().__init__()
        sizes = [int(s) for s in (sizes or [])]
        if any(s < 1 for s in sizes):
            raise ParameterError("fc_model.sizes", "positive layer sizes", sizes)
        if input_norm in (True, "layer"):
            self.norm_kind: str | None = "layer"
            self.input_norm: nn.Module = nn.LayerNorm(n_features)
        elif input_norm == "batch":
            self.norm_kind = "batch"
            self.input_norm = nn.BatchNorm1d(n_features)
        elif input_norm in (False, None):
            self.norm_kind = None
            self.input_norm = nn.Identity()
        else:
            raise ParameterError(
                "fc_model.input_norm", "true/false, 'layer' or 'batch'", input_norm
            )
        dims = [n_features, *sizes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.activation = _activation(activation, "fc_model.activation")
        self.dropout = nn.Dropout(float(dropout or 0.0))
        self.output_size = dims[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: the real items, packed [n, n_features] (batch norm statistics are thus
        taken over real items only)."""
        x = self.input_norm(x)
        for layer in self.layers:
            x = self.dropout(self.activation(layer(x)))
        return x


class FixedPositionalEncoding(nn.Module):
    """Sinusoidal encoding: ``x * sqrt(d) + pe[position]``; padded slots and positions beyond
    ``max_indices`` use a zero row."""

    def __init__(self, d_model: int, max_indices: int) -> None:
        super().__init__()
        pe = torch.zeros(max_indices + 1, d_model)
        pos = torch.arange(max_indices, dtype=torch.float32)[:, None]
        div = torch.exp(
            torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model)
        )
        pe[:max_indices, 0::2] = torch.sin(pos * div)
        pe[:max_indices, 1::2] = torch.cos(pos * div)[:, : d_model // 2]
        self.register_buffer("pe", pe)
        self.pad_index = max_indices

    def forward(self, x, positions):
        """``x`` [n, d] packed real items, ``positions`` int64 [n]."""
        return math.sqrt(self.pe.shape[1]) * x + self.pe[positions.clamp(max=self.pad_index)]


class LearnedPositionalEncoding(nn.Module):
    """Learned encoding: ``x * sqrt(d) + E[position]``, one extra row for padding/overflow."""

    def __init__(self, d_model: int, max_indices: int) -> None:
        super().__init__()
        self.pe = nn.Embedding(max_indices + 1, d_model, padding_idx=max_indices)
        self.pad_index = max_indices

    def forward(self, x, positions):
        """``x`` [n, d] packed real items, ``positions`` int64 [n]."""
        return math.sqrt(self.pe.embedding_dim) * x + self.pe(positions.clamp(max=self.pad_index))


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: self-attention and feed-forward, each with a residual."""

    def __init__(self, d_model: int, *, h: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.h = h
        self.d_k = d_model // h
        self.dropout_p = float(dropout)
        self.norm_attn = nn.LayerNorm(d_model, eps=LN_EPS)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm_ff = nn.LayerNorm(d_model, eps=LN_EPS)
        self.ff_in = nn.Linear(d_model, d_ff)
        self.ff_out = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(self.dropout_p)

    def forward(self, x: torch.Tensor, layout: _Layout) -> torch.Tensor:
        """``x``: packed real items [n, d]."""
        qkv = layout.unpack(self.qkv(self.norm_attn(x)))  # [B * L, 3 d]
        q, k, v = (
            qkv.view(layout.batch, layout.width, 3, self.h, self.d_k)
            .permute(2, 0, 3, 1, 4)
            .unbind(0)
        )  # [B, h, L, d_k] each
        a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=layout.attn_mask, dropout_p=self.dropout_p if self.training else 0.0
        )
        a = layout.pack(a.transpose(1, 2).reshape(layout.batch * layout.width, -1))
        x = x + self.dropout(self.out(a))
        ff = self.ff_out(self.dropout(F.relu(self.ff_in(self.norm_ff(x)))))
        return x + self.dropout(ff)


class _Layout:
    """Where the packed real items sit in the padded batch ([B, L], row-major)."""

    def __init__(self, mask: torch.Tensor) -> None:
        self.batch, self.width = mask.shape
        if bool(mask.all()):
            self.index = None  # no padding: packing is a reshape
            self.attn_mask = None
        else:
            self.index = mask.reshape(-1).nonzero().squeeze(1)
            # key mask; rows without a real item attend to all their slots (never read)
            keys = mask | ~mask.any(dim=1, keepdim=True)
            self.attn_mask = keys[:, None, None, :]

    def pack(self, flat: torch.Tensor) -> torch.Tensor:
        """[B * L, ...] -> [n_real, ...]"""
        return flat if self.index is None else flat.index_select(0, self.index)

    def unpack(self, packed: torch.Tensor) -> torch.Tensor:
        """[n_real, ...] -> [B * L, ...] with zeros at padded slots"""
        if self.index is None:
            return packed
        out = packed.new_zeros((self.batch * self.width, *packed.shape[1:]))
        return out.index_copy(0, self.index, packed)


class Encoder(nn.Module):
    """``N`` encoder blocks and a final layer norm; optional positional encoding first."""

    def __init__(
        self,
        d_model: int,
        *,
        N: int,
        d_ff: int,
        h: int,
        dropout: float,
        positional_encoding: Mapping | None = None,
    ) -> None:
        super().__init__()
        if int(N) < 1:
            raise ParameterError("transformer.N", "a positive number of blocks", N)
        if int(h) < 1 or d_model % int(h):
            raise ParameterError(
                "transformer.h",
                f"a divisor of the model width {d_model}",
                h,
                fix="choose fc_model.sizes[-1] divisible by h",
            )
        if int(d_ff) < 1:
            raise ParameterError("transformer.d_ff", "a positive width", d_ff)
        self.position: nn.Module | None = None
        if positional_encoding:
            strategy = positional_encoding.get("strategy")
            max_indices = int(positional_encoding.get("max_indices") or 0)
            if max_indices < 1:
                raise ParameterError(
                    "transformer.positional_encoding.max_indices",
                    "a positive integer",
                    positional_encoding.get("max_indices"),
                )
            if strategy == "fixed":
                self.position = FixedPositionalEncoding(d_model, max_indices)
            elif strategy == "learned":
                self.position = LearnedPositionalEncoding(d_model, max_indices)
            else:
                raise ParameterError(
                    "transformer.positional_encoding.strategy", "'fixed' or 'learned'", strategy
                )
        self.blocks = nn.ModuleList(
            EncoderBlock(d_model, h=int(h), d_ff=int(d_ff), dropout=float(dropout or 0.0))
            for _ in range(int(N))
        )
        self.norm = nn.LayerNorm(d_model, eps=LN_EPS)

    def forward(
        self, x: torch.Tensor, layout: _Layout, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x``: packed real items [n, d]; ``positions``: their positions, int64 [n]."""
        if self.position is not None:
            if positions is None:
                positions = layout.pack(
                    torch.arange(layout.width, device=x.device).repeat(layout.batch)
                )
            x = self.position(x, positions)
        for block in self.blocks:
            x = block(x, layout)
        return self.norm(x)


class OutputBlock(nn.Module):
    """allRank's ``post_model``: Linear to ``d_output``, activation, sum over outputs."""

    def __init__(self, d_model: int, *, d_output: int = 1, output_activation=None) -> None:
        super().__init__()
        if int(d_output) < 1:
            raise ParameterError("post_model.d_output", "a positive integer", d_output)
        self.d_output = int(d_output)
        self.linear = nn.Linear(d_model, self.d_output)
        self.activation = _activation(output_activation, "post_model.output_activation")

    def forward(self, x):
        return self.activation(self.linear(x)).sum(-1)


class ContextScorer(nn.Module):
    """Scores every item of a padded batch in the context of its list.

    ``forward(features [B, L, f], mask bool [B, L], positions int64 [B, L] | None)`` returns
    float scores ``[B, L]``; padded slots score exactly 0 (ignore them: use the mask).
    """

    def __init__(
        self, input_block: InputBlock | None, encoder: Encoder | None, output: OutputBlock
    ) -> None:
        super().__init__()
        self.input_block = input_block
        self.encoder = encoder
        self.output = output

    def forward(
        self, features: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        b, n, f = features.shape
        layout = _Layout(mask.to(torch.bool))
        x = layout.pack(features.reshape(b * n, f))
        if self.input_block is not None:
            x = self.input_block(x)
        if self.encoder is not None:
            pos = None if positions is None else layout.pack(positions.reshape(-1))
            x = self.encoder(x, layout, pos)
        return layout.unpack(self.output(x)).view(b, n)


def _section(cfg: Mapping, key: str, allowed: set[str]) -> dict | None:
    sec = cfg.get(key)
    if sec is None:
        return None
    if not isinstance(sec, Mapping):
        raise ParameterError(f"model.{key}", "a mapping or null", type(sec).__name__)
    unknown = set(sec) - allowed
    if unknown:
        raise ParameterError(f"model.{key}", f"keys among {sorted(allowed)}", sorted(unknown))
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in sec.items()}


def make_scorer(model_cfg: Mapping, *, n_features: int) -> ContextScorer:
    """Build the scorer from an allRank-style model config (see the module docstring).

    Weight matrices get Glorot-uniform initialization (separately for the query, key and value
    blocks of the fused projection), as allRank's ``make_model`` does; biases and norms keep
    PyTorch's defaults. The global torch RNG draws the weights: seed it (e.g. inside
    ``torch.random.fork_rng()``) for reproducible initialization. ``model_cfg`` is not mutated.
    """
    if not isinstance(model_cfg, Mapping):
        raise ParameterError(
            "model_cfg",
            "a mapping with keys fc_model, transformer, post_model",
            type(model_cfg).__name__,
        )
    unknown = set(model_cfg) - set(_MODEL_KEYS)
    if unknown:
        raise ParameterError("model_cfg", f"keys among {list(_MODEL_KEYS)}", sorted(unknown))
    if int(n_features) < 1:
        raise ParameterError("n_features", "a positive integer", n_features)
    fc = _section(model_cfg, "fc_model", _FC_KEYS)
    tr = _section(model_cfg, "transformer", _TR_KEYS)
    post = _section(model_cfg, "post_model", _POST_KEYS) or {}
    input_block = InputBlock(int(n_features), **fc) if fc else None
    d_model = input_block.output_size if input_block is not None else int(n_features)
    encoder = None
    if tr:
        missing = {"N", "d_ff", "h"} - set(tr)
        if missing:
            raise ParameterError("model.transformer", "keys N, d_ff and h", sorted(missing))
        encoder = Encoder(
            d_model,
            N=tr["N"],
            d_ff=tr["d_ff"],
            h=tr["h"],
            dropout=tr.get("dropout") or 0.0,
            positional_encoding=tr.get("positional_encoding"),
        )
    scorer = ContextScorer(input_block, encoder, OutputBlock(d_model, **post))
    _glorot_init(scorer)
    return scorer


def _glorot_init(scorer: ContextScorer) -> None:
    for name, p in scorer.named_parameters():
        if p.dim() < 2:
            continue
        if name.endswith("qkv.weight"):
            with torch.no_grad():
                for block in p.chunk(3, dim=0):
                    nn.init.xavier_uniform_(block)
        else:
            nn.init.xavier_uniform_(p)


def _check_section(name: str, sec, checks: Mapping[str, object]) -> dict | None:
    """A model section (mapping or None) whose every key has a valid value."""
    if sec is None:
        return None
    if not isinstance(sec, Mapping):
        raise ParameterError(name, "a mapping or null", sec)
    for key, value in sec.items():
        if key not in checks:
            raise ParameterError(f"{name}.{key}", "a key among " + ", ".join(checks), key)
        checks[key](f"{name}.{key}", value)  # type: ignore[operator]
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in sec.items()}


def _positive_int(name, value):
    integer(name, value, low=1)


def _dropout(name, value):
    if value is not None:
        real(name, value, low=0.0, high=1.0, high_open=True)


def _activation_name(name, value):
    _activation(value, name)


def _sizes(name, value):
    sequence(
        name,
        value,
        lambda n, s: integer(n, s, low=1, what="positive layer sizes"),
        what="a list of positive layer sizes",
        allow_empty=True,
    )


def _input_norm(name, value):
    if value not in (True, False, None, "layer", "batch"):
        raise ParameterError(name, "true/false, 'layer' or 'batch'", value)


def _positional(name, value):
    if value is None:
        return
    if not isinstance(value, Mapping) or set(value) - {"strategy", "max_indices"}:
        raise ParameterError(name, "null or {strategy: fixed|learned, max_indices: M}", value)
    choice(f"{name}.strategy", value.get("strategy"), ("fixed", "learned"))
    integer(f"{name}.max_indices", value.get("max_indices"), low=1)


_SECTION_CHECKS = {
    "fc_model": {
        "sizes": _sizes,
        "input_norm": _input_norm,
        "activation": _activation_name,
        "dropout": _dropout,
    },
    "transformer": {
        "N": _positive_int,
        "d_ff": _positive_int,
        "h": _positive_int,
        "positional_encoding": _positional,
        "dropout": _dropout,
    },
    "post_model": {"output_activation": _activation_name, "d_output": _positive_int},
}


@dataclass(frozen=True)
class ScorerSpec:
    """The attention scorer of a run (the ``model`` config group), in allRank's model schema
    (module docstring); ``build(n_features)`` makes a freshly initialized
    :class:`ContextScorer`. Every key of every section is checked when the spec is made."""

    fc_model: Mapping | None = None
    transformer: Mapping | None = None
    post_model: Mapping | None = None

    def __post_init__(self) -> None:
        for name in _MODEL_KEYS:
            sec = _check_section(name, getattr(self, name), _SECTION_CHECKS[name])
            object.__setattr__(self, name, sec)
        if self.transformer is not None:
            missing = [k for k in ("N", "d_ff", "h") if k not in self.transformer]
            if missing:
                raise ParameterError(
                    f"transformer.{missing[0]}", "a value (N, d_ff and h are required)", None
                )
            width = (self.fc_model or {}).get("sizes") or [None]
            h = int(self.transformer["h"])
            if width[-1] is not None and width[-1] % h:
                raise ParameterError(
                    "transformer.h",
                    f"a divisor of the model width {width[-1]}",
                    h,
                    fix="choose fc_model.sizes[-1] divisible by h",
                )

    def as_dict(self) -> dict:
        """The allRank-style model config."""
        return {k: getattr(self, k) for k in _MODEL_KEYS}

    def build(self, n_features: int) -> ContextScorer:
        return make_scorer(self.as_dict(), n_features=n_features)
