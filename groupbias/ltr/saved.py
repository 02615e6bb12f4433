"""Reading a saved ranker back (``ranker.json`` + ``model.pt``), and where it scores.

Every way the two files can be wrong is a :class:`~groupbias.core.errors.DataFormatError`
naming the file, what is wrong and what to do: an empty or cut file, a ``ranker.json`` that
is not UTF-8 JSON or lacks a key, a ``model.pt`` that is not a ``state_dict`` of tensors (a
file holding other Python objects is refused by ``torch.load(weights_only=True)`` without
running any of it), and weights that do not fit the model ``ranker.json`` describes (other
keys, other shapes, another feature width). A folder without the files, a device that is not
present and a bad ``on_device`` are :class:`~groupbias.core.errors.ParameterError` naming
the argument.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from ..core.errors import DataFormatError, ParameterError
from ..core.validation import is_integer
from .model import ContextScorer, make_scorer

#: the keys ``ranker.json`` must hold
INFO_KEYS = ("model_cfg", "n_features", "normalize")
#: what to do about a damaged or mismatched saved ranker
RETRAIN = (
    "retrain the ranker (the same command rebuilds it), or copy model.pt and ranker.json "
    "together from one ranker's folder"
)
#: how many key names a message lists
_SHOWN = 3


def ranker_folder(directory) -> Path:
    """The folder holding ``model.pt`` and ``ranker.json``: ``directory`` itself or its
    ``ranker/`` (a condition's folder of a run)."""
    d = Path(directory)
    if not (d / "ranker.json").exists() and (d / "ranker" / "ranker.json").exists():
        d = d / "ranker"
    for name in ("model.pt", "ranker.json"):
        if not (d / name).is_file():
            raise ParameterError(
                "directory",
                f"a folder holding {name}",
                str(d),
                fix="wrong folder? give a condition's folder of a run "
                "(<run folder>/models/<dataset>/beta<β>/<condition>) or its ranker/; "
                "`groupbias-report where <the run's overrides>` prints the run folder, and "
                "gb.load_ranker(run_folder, condition=..., beta=...) finds it in there",
            )
    return d


def condition_folder(run, condition, beta, dataset) -> Path:
    """The folder of one ranker of a run: ``<run>/models/<dataset>/<beta<β> | full>/
    <condition>``. ``beta`` is left out for ``condition="full"``; ``dataset`` (the folder's
    name or the dataset's title, ``TREC 2020`` = ``TREC_2020``) where the run trained on
    several."""
    models = Path(run) / "models"
    if condition is None:
        raise ParameterError("condition", "a condition: full, biased or corrected", None)
    if not models.is_dir():
        raise ParameterError(
            "directory",
            "a run folder holding models/ (one that trained rankers)",
            str(run),
            fix="`groupbias-report where <the run's overrides>` prints the run folder",
        )
    if condition == "full":
        step = "full"
    elif beta is None:
        raise ParameterError("beta", f"the β of the {condition} ranker (e.g. 0.8)", None)
    else:
        step = None
    found = [
        c
        for d in sorted(models.iterdir())
        if d.is_dir() and (dataset is None or _same_name(d.name, dataset))
        for s in sorted(d.iterdir())
        if s.is_dir() and (s.name == step if step else _beta_of(s.name) == _as_float(beta))
        for c in [s / str(condition)]
        if c.is_dir()
    ]
    if len(found) == 1:
        return found[0]
    held = sorted(str(p.relative_to(models)) for p in models.glob("*/*/*") if p.is_dir())
    what = "no ranker" if not found else "several rankers"
    name = "dataset" if found else "condition"
    raise ParameterError(
        name,
        f"one ranker of the run ({what} for condition={condition!r}, beta={beta!r}, "
        f"dataset={dataset!r}; models/ holds {', '.join(held) or 'nothing'})",
        dataset if found else condition,
    )


def _same_name(folder: str, dataset: str) -> bool:
    return folder == re.sub(r"[^A-Za-z0-9_.-]+", "_", str(dataset)).strip("_")


def _as_float(x) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _beta_of(name: str) -> float | None:
    return _as_float(name[4:]) if name.startswith("beta") else None


def read_info(path: Path) -> dict:
    """``ranker.json``, checked: a JSON object with :data:`INFO_KEYS`."""
    raw = path.read_bytes()
    if not raw.strip():
        raise DataFormatError(path, None, f"empty file: the ranker was not saved whole; {RETRAIN}")
    try:
        info = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            path, None, f"not UTF-8 text (byte {exc.start}): not a ranker.json; {RETRAIN}"
        ) from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            path, exc.lineno, f"not JSON ({exc.msg}, column {exc.colno}): cut or edited; {RETRAIN}"
        ) from None
    if not isinstance(info, dict):
        raise DataFormatError(
            path, None, f"expected a JSON object, got {type(info).__name__}; {RETRAIN}"
        )
    missing = [k for k in INFO_KEYS if k not in info]
    if missing:
        raise DataFormatError(path, None, f"missing key(s) {', '.join(missing)}; {RETRAIN}")
    n = info["n_features"]
    if not is_integer(n) or n < 1:
        raise DataFormatError(
            path, None, f"expected a positive integer, got {n!r}; {RETRAIN}", field="n_features"
        )
    if info["normalize"] not in (None, "zscore"):
        raise DataFormatError(
            path, None, f"expected 'zscore' or null, got {info['normalize']!r}", field="normalize"
        )
    return info


def build_scorer(path: Path, info: Mapping) -> ContextScorer:
    """The scorer ``ranker.json`` (``path``) describes, without weights yet: built on torch's
    ``meta`` device, so a configuration of any size allocates nothing and the global RNG
    draws nothing (:func:`load_weights` puts the saved tensors in)."""
    try:
        with torch.device("meta"):
            return make_scorer(info["model_cfg"], n_features=info["n_features"])
    except (ParameterError, TypeError, ValueError, RuntimeError) as exc:
        raise DataFormatError(
            path, None, f"not a model configuration: {exc}; {RETRAIN}", field="model_cfg"
        ) from None


def read_state(path: Path) -> dict[str, torch.Tensor]:
    """``model.pt``: a ``state_dict`` of tensors, loaded with ``weights_only=True``."""
    if path.stat().st_size == 0:
        raise DataFormatError(path, None, f"empty file (0 bytes): the save was cut; {RETRAIN}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        global_ = re.search(r"(?i)unsupported (?:global:? )?global (\S+)", str(exc))
        raise _not_weights(
            path,
            f"refused {global_.group(1)}" if global_ else "not a pickle of tensors",
            "; its Python objects were not run (torch.load(weights_only=True)): never load "
            "it otherwise",
        ) from None
    except (EOFError, RuntimeError, ValueError, OSError, AttributeError, IndexError) as exc:
        raise _not_weights(path, _first_line(exc)) from None
    if not isinstance(state, Mapping) or not all(
        isinstance(v, torch.Tensor) for v in state.values()
    ):
        raise DataFormatError(
            path, None, f"expected a state_dict of tensors, got {type(state).__name__}; {RETRAIN}"
        )
    return dict(state)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__


def _not_weights(path: Path, why: str, more: str = "") -> DataFormatError:
    return DataFormatError(
        path, None, f"not a torch file of weights (cut or damaged: {why}){more}; {RETRAIN}"
    )


def load_weights(scorer: ContextScorer, state: Mapping, path: Path, info: Mapping) -> None:
    """Put ``state`` (from ``model.pt`` at ``path``) into ``scorer`` after checking that its
    keys and shapes are the ones the model of ``ranker.json`` has."""
    want = scorer.state_dict()
    missing = [k for k in want if k not in state]
    extra = [k for k in state if k not in want]
    if missing or extra:
        parts = [
            f"{what} {', '.join(keys[:_SHOWN])}{' ...' if len(keys) > _SHOWN else ''}"
            for what, keys in (("lacks", missing), ("has unknown", extra))
            if keys
        ]
        raise DataFormatError(
            path,
            None,
            f"the weights do not belong to the model in ranker.json: it {' and '.join(parts)}; "
            + RETRAIN,
        )
    for key, tensor in want.items():
        got = tuple(state[key].shape)
        if got != tuple(tensor.shape):
            raise DataFormatError(path, None, _shape_message(key, got, tuple(tensor.shape), info))
    scorer.load_state_dict({k: v.to(want[k].dtype) for k, v in state.items()}, assign=True)


def _shape_message(key: str, got: tuple, want: tuple, info: Mapping) -> str:
    n = info["n_features"]
    if len(got) == len(want) == 2 and got[0] == want[0] and want[1] == n:
        return (
            f"feature width {got[1]} in the weights, ranker.json says {n} (n_features): the "
            f"files come from different rankers; {RETRAIN}"
        )
    return (
        f"weight {key!r} has shape {list(got)}, the model in ranker.json needs {list(want)} "
        f"(another model_cfg or n_features); {RETRAIN}"
    )


def scoring_device(device, default: torch.device) -> torch.device:
    """``device`` (None: ``default``) as a torch device that is present on this machine."""
    if device is None:
        return default
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ParameterError(
            "device", "a torch device such as 'cpu', 'cuda', 'cuda:1' or 'mps'", device
        ) from None
    mps = getattr(torch.backends, "mps", None)
    present = {
        "cpu": True,
        "cuda": torch.cuda.is_available()
        and (dev.index is None or dev.index < torch.cuda.device_count()),
        "mps": mps is not None and mps.is_available(),
    }
    if dev.type not in present:
        raise ParameterError("device", "'cpu', 'cuda[:index]' or 'mps'", device)
    if not present[dev.type]:
        found = torch.cuda.device_count() if dev.type == "cuda" else 0
        raise ParameterError(
            "device",
            f"a device present on this machine ({str(dev)!r} is not; CUDA devices found: {found})",
            device,
            fix="score on device='cpu' (or leave device out)",
        )
    return dev


def on_device_choice(on_device) -> bool | str:
    """``predict``'s ``on_device``: True, False, or None / ``"auto"``."""
    if on_device is None or on_device == "auto":
        return "auto"
    if isinstance(on_device, (bool, np.bool_)):
        return bool(on_device)
    raise ParameterError("on_device", "true, false, 'auto' or None", on_device)
