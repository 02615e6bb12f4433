"""groupbias: group membership bias in unbiased learning to rank.

Data flows one way: load -> group -> simulate -> estimate -> correct -> train/evaluate ->
report. The whole method is available flat::

    import numpy as np

    import groupbias as gb

    rng = np.random.default_rng(0)
    data = gb.load_dataset("trec2020", split="train")          # grouped RankingData
    sim = gb.simulate_group_bias(data, beta_mean=0.8, rng=rng)
    est = gb.estimate_beta(sim.attractiveness, data.groups, qptr=data.qptr, rng=rng)
    fixed = gb.ips_correct(sim.attractiveness, data.groups, qptr=data.qptr,
                           beta_hat_per_query=est.beta_hat_per_query)
    gb.evaluate(fixed, data, regime="tabular", relevance=sim.relevance)
    gb.evaluate_run("bm25.run", "test.qrels", "test.groups", metrics=["nDCG@10", "rho_dtr"])
    gb.per_query_results("bm25.run", "test.qrels", metrics=["nDCG@10", "map"])  # a DataFrame
    # a ranker that `groupbias experiment=table2 dataset=synthetic` trained (docs/ltr.md;
    # `groupbias-report where experiment=table2 dataset=synthetic` prints its run folder)
    ranker = gb.load_ranker("runs/table2/dataset=synthetic", condition="corrected", beta=0.8)
    gb.load_results("runs/table2")                     # the run folder's records, a DataFrame
    scores = ranker.predict(gb.load_dataset("synthetic", split="test"))

Subpackages, one per stage, each importing only the ones listed before it:
:mod:`~groupbias.core`, :mod:`~groupbias.data`, :mod:`~groupbias.simulate`,
:mod:`~groupbias.estimate`, :mod:`~groupbias.rank`, :mod:`~groupbias.retrieval` (BM25,
feedback, re-ranking, FAIR-QR, gender labels), :mod:`~groupbias.evaluation`,
:mod:`groupbias.ltr` (the attention ranker; imports torch, so it is imported on demand),
:mod:`~groupbias.pipelines` (the two regimes), :mod:`~groupbias.app` (the command) and
:mod:`~groupbias.reporting` (tables, figures, run comparisons). docs/architecture.md is the
map; docs/interop.md the TREC files (runs, qrels, groups) the framework reads and writes.
"""

from .core import registry
from .core.errors import (
    ConfigError,
    DataError,
    DataFormatError,
    GroupBiasError,
    GroupingError,
    MissingFilesError,
    ParameterError,
)
from .data.datasets import BuiltinGrouping, DatasetInfo, DatasetSpec, load_dataset, register_dataset
from .data.ranking_data import QueryView, RankingData
from .data.trec import (
    GroupFile,
    Qrels,
    TrecRun,
    item_ids_of,
    read_groups,
    read_qrels,
    read_run,
    write_groups,
    write_qrels,
    write_run,
)
from .estimate.beta_estimate import BetaEstimate
from .estimate.correction import correct_with_estimate, ips_correct
from .estimate.estimators import (
    CalibratedKSEstimator,
    Estimator,
    KSEstimator,
    ShrinkageEstimator,
    bootstrap_interval,
)
from .estimate.ks import estimate_beta, ks_curves
from .evaluation import fairness, metrics, theory
from .evaluation.evaluate import evaluate, evaluate_run
from .simulate.clicks import attractiveness_from_clicks, simulate_clicks
from .simulate.group_bias import (
    GroupBias,
    Simulation,
    draw_query_beta,
    relevance_from_labels,
    simulate_attractiveness,
    simulate_group_bias,
)

__version__ = "0.1.0"

#: names of :mod:`groupbias.ltr.train`, imported when first used (torch and Lightning load
#: with them)
_LTR_NAMES = ("TrainedRanker", "load_ranker", "train_ranker")
#: names of :mod:`groupbias.reporting.frames` (results as pandas DataFrames), imported when
#: first used (the reporting stage loads the command's configuration code with them)
_FRAME_NAMES = ("load_results", "per_query_results")


def __getattr__(name: str):
    if name in _LTR_NAMES:
        from .ltr import train

        return train.TrainedRanker.load if name == "load_ranker" else getattr(train, name)
    if name in _FRAME_NAMES:
        from .reporting import frames

        return getattr(frames, name)
    raise AttributeError(f"module 'groupbias' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and those imported on first use (``dir(gb)`` lists
    ``TrainedRanker``, ``load_ranker``, ``train_ranker``, ``per_query_results`` and
    ``load_results`` before they are imported)."""
    return sorted({*globals(), *_LTR_NAMES, *_FRAME_NAMES})


__all__ = [
    "BetaEstimate",
    "BuiltinGrouping",
    "CalibratedKSEstimator",
    "ConfigError",
    "DataError",
    "DataFormatError",
    "DatasetInfo",
    "DatasetSpec",
    "Estimator",
    "GroupBias",
    "GroupBiasError",
    "GroupFile",
    "GroupingError",
    "KSEstimator",
    "MissingFilesError",
    "ParameterError",
    "Qrels",
    "QueryView",
    "RankingData",
    "ShrinkageEstimator",
    "Simulation",
    "TrecRun",
    "attractiveness_from_clicks",
    "bootstrap_interval",
    "correct_with_estimate",
    "draw_query_beta",
    "estimate_beta",
    "evaluate",
    "evaluate_run",
    "fairness",
    "ips_correct",
    "item_ids_of",
    "ks_curves",
    "load_dataset",
    "metrics",
    "read_groups",
    "read_qrels",
    "read_run",
    "register_dataset",
    "registry",
    "relevance_from_labels",
    "simulate_attractiveness",
    "simulate_clicks",
    "simulate_group_bias",
    "theory",
    "TrainedRanker",
    "load_ranker",
    "train_ranker",
    "load_results",
    "per_query_results",
    "write_groups",
    "write_qrels",
    "write_run",
]
