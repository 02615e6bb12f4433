"""LTR regime (paper §3.1, §6.1): context-aware self-attention scorer trained with LambdaLoss.

- :mod:`.padding`: flat arrays + qptr <-> padded ``[B, L, f]`` tensors with a boolean mask
- :mod:`.model`: the scorer, configured with allRank's model schema (:func:`make_scorer`)
- :mod:`.losses`: LambdaLoss family and padded NDCG@k
- :mod:`.normalization`: z-score within query
- :mod:`.datamodule`, :mod:`.module`, :mod:`.train`: Lightning data, training and
  :func:`train_ranker` with a :class:`RankerRecipe` (model, loss, optimizer, scheduler,
  trainer, batching)
"""

from .datamodule import BatchSpec
from .losses import CounterfactualLambdaLoss, LambdaLoss, lambda_loss, padded_ndcg
from .model import ContextScorer, ScorerSpec, make_scorer
from .normalization import zscore_within_queries
from .padding import PaddedBatch, from_padded, pad_segments, to_padded
from .train import RankerRecipe, TrainedRanker, TrainerSpec, train_ranker

__all__ = [
    "BatchSpec",
    "ContextScorer",
    "CounterfactualLambdaLoss",
    "LambdaLoss",
    "PaddedBatch",
    "RankerRecipe",
    "ScorerSpec",
    "TrainedRanker",
    "TrainerSpec",
    "from_padded",
    "lambda_loss",
    "make_scorer",
    "pad_segments",
    "padded_ndcg",
    "to_padded",
    "train_ranker",
    "zscore_within_queries",
]
