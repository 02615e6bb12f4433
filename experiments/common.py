"""Helpers shared by the experiment entries: dataset configs by name, seeded generators,
and "skip what is not on this machine" for licensed datasets."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

from data_loaders import DataError, RankingData
from data_loaders.registry import load_grouped
from groupbias.cli import CONFIG_DIR

log = logging.getLogger("groupbias")


def dataset_config(name: str) -> dict:
    """``configs/dataset/<name>.yaml`` resolved (environment variables included)."""
    path = Path(CONFIG_DIR) / "dataset" / f"{name}.yaml"
    if not path.exists():
        avail = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise DataError(f"experiment.datasets: unknown dataset {name!r}; available: {avail}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def entries(cfg: DictConfig) -> list[tuple[dict, dict]]:
    """(dataset config, grouping config) for every entry of ``experiment.datasets``; an
    empty or missing list means the composed ``dataset``/``grouping`` of the run."""
    items = cfg.experiment.get("datasets") or []
    if not items:
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


def rng_for(seed: int, *keys) -> np.random.Generator:
    """An independent generator for (seed, keys...): the same keys give the same stream in
    every process, so runs are reproducible and order-independent."""
    h = hashlib.sha256(repr(keys).encode()).digest()
    words = [int.from_bytes(h[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))


def bias_kw(cfg: DictConfig) -> dict:
    """Simulation keywords of the pipelines from the ``bias`` config group."""
    return dict(beta_std=float(cfg.bias.beta_std), variant=cfg.bias.variant,
                modes=None if cfg.bias.modes is None else [float(m) for m in cfg.bias.modes],
                beta_min=float(cfg.bias.beta_min), relevance_mode=cfg.bias.relevance)


def estimator_kw(cfg: DictConfig) -> dict:
    """Estimator keywords of the pipelines from the ``estimator`` config group."""
    cs = cfg.estimator.cluster_size
    return dict(cluster_size=None if cs is None else int(cs),
                grid_step=float(cfg.estimator.grid_step),
                zero_policy=cfg.estimator.zero_policy, jitter=bool(cfg.estimator.jitter))


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
