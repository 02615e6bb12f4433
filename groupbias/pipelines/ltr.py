"""General LTR regime (paper §3.1, §6.3, Table 2).

For one dataset + grouping + β, the attention LambdaRank ranker is trained three times on
the training split (validation split for early stopping), each time on other labels:

- ``full``: full information, the true relevance;
- ``biased``: simulated attractiveness ``β_q P(R)`` for the affected group;
- ``corrected``: IPS-corrected attractiveness ``a / β̂`` with β̂ estimated on the training
  split (amortized KS, the configured clusters).

Training labels are put back on the grade scale (multiplied by ``label_max``) so the
LambdaLoss gain ``2^l − 1`` sees grades for full information and the corresponding real
values otherwise. The validation split gets its own simulated attractiveness (users are
biased there too) and is corrected with the mean β̂ of the training clusters. Each model
ranks the *test* split, which is evaluated against true labels: NDCG@10 overall and per
group, ρ(DTR) and Δ(EEL) of the ranking, with paired tests of corrected and full against
biased. Models, predictions (also as a TREC run file) and metrics go into ``out_dir``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data import RankingData

from ..correction import ips_correct
from ..errors import ParameterError
from ..estimation import default_grid, estimate_beta
from ..io import write_npz_atomic, write_text_atomic
from .evaluation import (EvalSpec, correlation_records, eel_thresholds, ranking_metrics,
                         records_for)
from .tabular import _group_threshold, grade_spacing, simulate

CONDITIONS = ("full", "biased", "corrected")


def write_trec_run(path: str | Path, scores: np.ndarray, data: RankingData, *,
                   tag: str = "groupbias") -> Path:
    """Write ``qid Q0 docno rank score tag`` lines (TREC run format) atomically.

    Item ids are the dataset's (``data.item_ids``) or ``<qid>_<index in query>``; ranks start
    at 1 and ties keep the original order.
    """
    from ..segments import ranks_within

    ranks = ranks_within(scores, data.qptr)
    qidx = data.query_index()
    qids = np.asarray(data.query_ids)[qidx].astype(str)
    if data.item_ids is not None:
        docs = np.asarray(data.item_ids).astype(str)
    else:
        pos = np.arange(data.n_items) - data.qptr[qidx]
        docs = np.char.add(np.char.add(qids, "_"), pos.astype(str))
    order = np.lexsort((ranks, qidx))
    lines = [f"{q} Q0 {d} {r} {s:.6f} {tag}" for q, d, r, s in
             zip(qids[order], docs[order], ranks[order], np.asarray(scores)[order])]
    return write_text_atomic(path, "\n".join(lines) + "\n")


@dataclass
class LTRResult:
    beta: float
    beta_hat: np.ndarray
    per_query: dict[str, dict[str, np.ndarray]]
    records: list[dict] = field(default_factory=list)
    predictions: dict[str, np.ndarray] = field(default_factory=dict)


def run_ltr(splits: Mapping[str, RankingData], *, beta: float, model_cfg: Mapping,
            trainer_cfg: Mapping, beta_std: float = 0.1, variant: str = "normal", modes=None,
            beta_min: float = 0.01, relevance_mode: str = "auto",
            cluster_size: int | None = None, grid_step: float = 0.01,
            zero_policy: str = "exclude", jitter: bool = True, jitter_scale: str = "grade",
            k: int = 10, conditions=CONDITIONS, rng: np.random.Generator, seed: int = 0,
            out_dir: str | Path, dataset: str | None = None, fairness=(),
            correlations=()) -> LTRResult:
    """Train full / biased / corrected rankers and evaluate them on the test split.

    ``fairness``: related-work metrics to add (see :data:`groupbias.fairness.METRICS`);
    ``correlations``: metric pairs whose per-query Pearson correlation is recorded."""
    for need in ("train", "test"):
        if need not in splits:
            raise ParameterError("splits", "train and test splits", sorted(splits))
    train, test = splits["train"], splits["test"]
    valid = splits.get("valid")
    for name, d in splits.items():
        if d.groups is None:
            raise ParameterError(f"splits[{name!r}].groups", "a grouped split", None)
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        raise ParameterError("conditions", f"a subset of {CONDITIONS}", list(conditions))
    out = Path(out_dir)
    sim_kw = dict(beta=beta, beta_std=beta_std, variant=variant, modes=modes,
                  beta_min=beta_min, relevance_mode=relevance_mode)
    # one relevance scale for every split: the data's label_max, else the largest label
    scale = float(train.label_max or max(float(d.labels.max(initial=0.0))
                                         for d in splits.values()) or 1.0)
    sim_kw["label_max"] = scale
    sim_tr = simulate(train, rng=rng, **sim_kw)
    est = estimate_beta(sim_tr.attractiveness, train.groups, train.qptr,
                        cluster_size=cluster_size, grid=default_grid(grid_step),
                        zero_policy=zero_policy, jitter=0.5 if jitter else 0.0,
                        jitter_scale=grade_spacing(train, jitter_scale),
                        group_threshold=_group_threshold(train.groups), rng=rng)
    finite = est.beta_hat[np.isfinite(est.beta_hat)]
    beta_hat_global = float(finite.mean()) if finite.size else 1.0
    labels = {"full": sim_tr.relevance * scale,
              "biased": sim_tr.attractiveness * scale,
              "corrected": ips_correct(sim_tr.attractiveness, train.groups, train.qptr,
                                       beta_hat_per_query=est.beta_hat_per_query) * scale}
    vlabels = {c: None for c in CONDITIONS}
    if valid is not None:
        sim_va = simulate(valid, rng=rng, **sim_kw)
        vlabels = {"full": sim_va.relevance * scale,
                   "biased": sim_va.attractiveness * scale,
                   "corrected": ips_correct(
                       sim_va.attractiveness, valid.groups, valid.qptr,
                       beta_hat_per_query=np.full(valid.n_queries, beta_hat_global)) * scale}
    from ..ltr.train import train_ranker
    from ..simulation import relevance_from_labels

    tcfg = dict(trainer_cfg)
    rel_test = relevance_from_labels(
        test.labels, label_max=scale,
        mode="graded" if relevance_mode == "auto" else relevance_mode)
    spec = EvalSpec(labels=test.labels, relevance=rel_test, groups=test.groups,
                    qptr=test.qptr, thresholds=eel_thresholds(test.labels, scale),
                    k=k, fairness=tuple(fairness))
    per_query, preds = {}, {}
    for cond in conditions:
        ranker = train_ranker(train, valid, train_labels=labels[cond],
                              valid_labels=vlabels[cond], model_cfg=model_cfg,
                              trainer_cfg=tcfg.get("lightning"), data_cfg=tcfg.get("data"),
                              loss_cfg=tcfg.get("loss"), optim_cfg=tcfg.get("optimizer"),
                              seed=seed, out_dir=out / cond)
        scores = ranker.predict(test)
        preds[cond] = scores
        per_query[cond] = ranking_metrics(scores, spec)
        write_npz_atomic(out / cond / "test_scores.npz", scores=scores)
        write_trec_run(out / cond / "test.run", scores, test, tag=f"groupbias-{cond}")
    base = {"dataset": dataset or train.name, "regime": "ltr", "beta": float(beta),
            "beta_std": float(beta_std), "variant": variant,
            "cluster_size": None if cluster_size is None else int(cluster_size)}
    records = records_for(per_query, base=base)
    records += correlation_records(per_query, correlations, base=base)
    for r in records:
        if r["condition"] == "full":
            r["beta"] = None
    records.append({**base, "metric": "beta_hat", "condition": "estimate",
                    "value": beta_hat_global, "n_clusters": int(est.beta_hat.size)})
    return LTRResult(beta=float(beta), beta_hat=est.beta_hat, per_query=per_query,
                     records=records, predictions=preds)
