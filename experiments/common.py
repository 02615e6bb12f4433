"""Helpers shared by the experiment entries: dataset configs by name, seeded generators,
and "skip what is not on this machine" for licensed datasets."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from groupbias.validation import is_real
from omegaconf import DictConfig, OmegaConf

from groupbias.data import RankingData
from groupbias.errors import DataError
from data_loaders.registry import load_grouped
from groupbias.errors import ParameterError
from groupbias.cli import CONFIG_DIR

log = logging.getLogger("groupbias")


def dataset_config(name: str) -> dict:
    """``configs/dataset/<name>.yaml`` resolved (environment variables included)."""
    path = Path(CONFIG_DIR) / "dataset" / f"{name}.yaml"
    if not path.exists():
        avail = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise DataError(f"experiment.datasets: unknown dataset {name!r}; available: {avail}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def _data_overridden() -> bool:
    """True when the command line chose a dataset or grouping (``dataset=...``,
    ``grouping.feature_id=...``): then it replaces the experiment's dataset list."""
    try:
        from hydra.core.hydra_config import HydraConfig

        task = HydraConfig.get().overrides.task
    except ValueError:  # not inside a Hydra app
        return False
    keys = [o.split("=", 1)[0].lstrip("+~") for o in task]
    return any(k.split(".")[0] in ("dataset", "grouping") for k in keys)


def entries(cfg: DictConfig) -> list[tuple[dict, dict]]:
    """(dataset config, grouping config) pairs to run.

    ``experiment.datasets`` (names, or ``{dataset, name, grouping}`` mappings) when set;
    the composed ``dataset``/``grouping`` groups when the list is empty, or when the command
    line overrides them (``groupbias experiment=table2 dataset=mslr grouping=feature ...``).
    """
    items = cfg.experiment.get("datasets") or []
    if not items or _data_overridden():
        return [(OmegaConf.to_container(cfg.dataset, resolve=True),
                 OmegaConf.to_container(cfg.grouping, resolve=True))]
    out = []
    for it in items:
        it = OmegaConf.to_container(it, resolve=True) if not isinstance(it, (str, dict)) \
            else it
        if isinstance(it, str):
            it = {"dataset": it}
        ds = dataset_config(it["dataset"])
        if it.get("name"):
            ds["name"] = it["name"]
        grouping = it.get("grouping") or {"kind": "builtin"}
        out.append((ds, grouping))
    return out


def load_or_skip(ds: Mapping, grouping: Mapping, *, only=None, skip_missing: bool = True
                 ) -> tuple[dict[str, RankingData] | None, str | None]:
    """Load and group a dataset; when its files are absent and ``skip_missing``, return
    ``(None, reason)`` so an experiment over "every available dataset" goes on."""
    try:
        return load_grouped(ds, grouping, only=only), None
    except (FileNotFoundError, DataError) as exc:
        if not skip_missing or not isinstance(exc, FileNotFoundError):
            raise
        reason = f"{ds.get('name')}: skipped, data not found ({exc})"
        log.warning(reason)
        return None, reason


def available(pairs, cfg: DictConfig, skipped: list, *, only=None):
    """``(dataset config, grouping config, splits)`` for each pair whose data is present
    (``experiment.skip_missing``); the reasons for the skipped ones go into ``skipped``."""
    for ds, grouping in pairs:
        splits, reason = load_or_skip(ds, grouping, only=only,
                                      skip_missing=cfg.experiment.skip_missing)
        if splits is None:
            skipped.append(reason)
            continue
        yield ds, grouping, splits


def rng_for(seed: int, *keys) -> np.random.Generator:
    """An independent generator for (seed, keys...): the same keys give the same stream in
    every process, so runs are reproducible and order-independent."""
    h = hashlib.sha256(repr(keys).encode()).digest()
    words = [int.from_bytes(h[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))


def _number(key: str, value, *, integer: bool = False):
    import numbers

    if not is_real(value) or \
            (integer and not isinstance(value, numbers.Integral)):
        raise ParameterError(key, "an integer" if integer else "a number", value)
    return int(value) if integer else float(value)


def betas(cfg: DictConfig, key: str = "bias.betas") -> list[float]:
    """The list of β values at config ``key`` (validated: numbers in (0, 1])."""
    node = OmegaConf.select(cfg, key)
    if isinstance(node, (int, float)) or node is None or isinstance(node, str):
        raise ParameterError(key, "a list of betas in (0, 1], e.g. [0.8,0.6]", node)
    out = [_number(key, b) for b in node]
    if not out or any(not 0 < b <= 1 for b in out):
        raise ParameterError(key, "a non-empty list of betas in (0, 1]", out)
    return out


def bias_kw(cfg: DictConfig) -> dict:
    """Simulation keywords of the pipelines from the ``bias`` config group."""
    b = cfg.bias
    if b.variant not in ("normal", "two_mode"):
        raise ParameterError("bias.variant", "'normal' or 'two_mode'", b.variant)
    return dict(beta_std=_number("bias.beta_std", b.beta_std), variant=b.variant,
                modes=None if b.modes is None else [_number("bias.modes", m) for m in b.modes],
                beta_min=_number("bias.beta_min", b.beta_min), relevance_mode=b.relevance)


def estimator_kw(cfg: DictConfig) -> dict:
    """Estimator keywords of the pipelines from the ``estimator`` config group."""
    e = cfg.estimator
    cs = e.cluster_size
    if cs is not None:
        cs = _number("estimator.cluster_size", cs, integer=True)
        if cs < 1:
            raise ParameterError("estimator.cluster_size",
                                 "null (one global cluster) or an integer >= 1", cs)
    if not isinstance(e.jitter, bool):
        raise ParameterError("estimator.jitter", "true or false", e.jitter)
    return dict(cluster_size=cs, grid_step=_number("estimator.grid_step", e.grid_step),
                zero_policy=e.zero_policy, jitter=e.jitter,
                jitter_scale=e.get("jitter_scale", "grade"))


def fairness_specs(cfg: DictConfig) -> list:
    """``experiment.fairness_metrics`` as plain names / mappings (empty when unset)."""
    specs = cfg.experiment.get("fairness_metrics") or []
    return OmegaConf.to_container(specs, resolve=True) if not isinstance(specs, list) \
        else list(specs)


def table_metrics(cfg: DictConfig) -> tuple[str, ...]:
    """The metric columns of Tables 1/2: the paper's three plus the configured
    related-work metrics (by their output keys)."""
    keys = [s if isinstance(s, str) else s.get("key", s["name"]) for s in fairness_specs(cfg)]
    return ("ndcg@10", "rho_dtr", "delta_eel", *keys)


def fairness_kw(cfg: DictConfig) -> dict:
    """``fairness`` and ``correlations`` keywords of the pipelines from the experiment."""
    pairs = cfg.experiment.get("correlations") or []
    return dict(fairness=fairness_specs(cfg),
                correlations=[tuple(p) for p in OmegaConf.to_container(pairs, resolve=True)]
                if not isinstance(pairs, list) else [tuple(p) for p in pairs])
