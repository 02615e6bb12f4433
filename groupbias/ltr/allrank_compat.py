"""Weight mapping from allRank's ``LTRModel`` (``allrank.models.model.make_model``) to
:class:`groupbias.ltr.model.ContextScorer` built from the same model config.

Only tensors are read (a ``state_dict``); allRank itself is not imported here.

Mapping (allRank key -> ours):

- ``input_layer.input_norm.*`` -> ``input_block.input_norm.*``
- ``input_layer.layers.{i}.*`` -> ``input_block.layers.{i}.*``
- ``encoder.layers.{n}.self_attn.linears.{0,1,2}.*`` -> ``encoder.blocks.{n}.qkv.*``
  (query, key and value stacked along the output axis)
- ``encoder.layers.{n}.self_attn.linears.3.*`` -> ``encoder.blocks.{n}.out.*``
- ``encoder.layers.{n}.feed_forward.w_1/w_2.*`` -> ``encoder.blocks.{n}.ff_in/ff_out.*``
- ``encoder.layers.{n}.sublayer.{0,1}.norm.a_2/b_2`` ->
  ``encoder.blocks.{n}.norm_attn/norm_ff.weight/bias``; ``encoder.norm.*`` -> ``encoder.norm.*``
- ``encoder.position.pe`` (buffer) or ``encoder.position.pe.weight`` -> ``encoder.position.…``
- ``output_layer.w_1.*`` -> ``output.linear.*``

allRank normalizes by the unbiased standard deviation, ``a (x - m) / (std_unbiased + 1e-6) +
b``; ours by ``sqrt(var_biased + 1e-6)``. With ``std_unbiased = sqrt(d / (d - 1)) *
std_biased`` the gains map as ``weight = a * sqrt((d - 1) / d)`` and the outputs then agree up
to the epsilon terms (relative difference ~1e-6 / std).
"""

from __future__ import annotations

import math
import re

import torch

from ..core.errors import ParameterError
from .model import ContextScorer


def allrank_to_scorer_state(allrank_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Translate an allRank ``LTRModel.state_dict()`` into a ``ContextScorer`` state dict."""
    out: dict[str, torch.Tensor] = {}
    qkv: dict[tuple[int, str], dict[int, torch.Tensor]] = {}
    for key, value in allrank_state.items():
        value = value.detach().clone()
        m = re.fullmatch(r"input_layer\.(input_norm|layers\.\d+)\.(.+)", key)
        if m:
            out[f"input_block.{m.group(1)}.{m.group(2)}"] = value
            continue
        m = re.fullmatch(r"encoder\.layers\.(\d+)\.self_attn\.linears\.(\d)\.(weight|bias)", key)
        if m:
            n, j, kind = int(m.group(1)), int(m.group(2)), m.group(3)
            if j == 3:
                out[f"encoder.blocks.{n}.out.{kind}"] = value
            else:
                qkv.setdefault((n, kind), {})[j] = value
            continue
        m = re.fullmatch(r"encoder\.layers\.(\d+)\.feed_forward\.(w_1|w_2)\.(weight|bias)", key)
        if m:
            name = "ff_in" if m.group(2) == "w_1" else "ff_out"
            out[f"encoder.blocks.{m.group(1)}.{name}.{m.group(3)}"] = value
            continue
        m = re.fullmatch(r"encoder\.layers\.(\d+)\.sublayer\.(\d)\.norm\.(a_2|b_2)", key)
        if m:
            norm = "norm_attn" if m.group(2) == "0" else "norm_ff"
            out.update(_norm(f"encoder.blocks.{m.group(1)}.{norm}", m.group(3), value))
            continue
        m = re.fullmatch(r"encoder\.norm\.(a_2|b_2)", key)
        if m:
            out.update(_norm("encoder.norm", m.group(1), value))
            continue
        m = re.fullmatch(r"encoder\.position\.(pe|pe\.weight)", key)
        if m:
            out[f"encoder.position.{m.group(1)}"] = value
            continue
        m = re.fullmatch(r"output_layer\.w_1\.(weight|bias)", key)
        if m:
            out[f"output.linear.{m.group(1)}"] = value
            continue
        raise ParameterError("allrank_state", "keys of an allRank LTRModel state dict", key)
    for (n, kind), parts in qkv.items():
        if sorted(parts) != [0, 1, 2]:
            raise ParameterError(
                "allrank_state",
                f"query, key and value projections (linears.0-2) of block {n}",
                sorted(parts),
            )
        out[f"encoder.blocks.{n}.qkv.{kind}"] = torch.cat([parts[0], parts[1], parts[2]], dim=0)
    return out


def _norm(prefix: str, which: str, value: torch.Tensor) -> dict[str, torch.Tensor]:
    if which == "b_2":
        return {f"{prefix}.bias": value}
    d = value.numel()
    scale = math.sqrt((d - 1) / d) if d > 1 else 1.0
    return {f"{prefix}.weight": value * scale}


def load_allrank_weights(scorer: ContextScorer, allrank_state: dict[str, torch.Tensor]) -> None:
    """Copy allRank weights into ``scorer`` (built from the same config); strict key match."""
    scorer.load_state_dict(allrank_to_scorer_state(allrank_state), strict=True)
