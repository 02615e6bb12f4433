"""Evaluation: every metric as one function, metrics by name, evaluation protocols, paired
tests and the closed forms of §4.

- :mod:`~groupbias.evaluation.metrics`: NDCG@k, ρ(DTR), Δ(EEL) (tabular and ranking forms);
- :mod:`~groupbias.evaluation.fairness`: the related-work metrics (AWRF, TExFAIR, NFaiRR,
  CWEx, ARaB, ...);
- :mod:`~groupbias.evaluation.exposure`: position, expected, target and group exposure;
  the grades EEL compares;
- :mod:`~groupbias.evaluation.inputs`: the input checks and the ``reduce`` every metric
  shares;
- :mod:`~groupbias.evaluation.declaration`: each metric's one declaration (name, aliases,
  label, what it needs, why it can be undefined, direction);
- :mod:`~groupbias.evaluation.catalog`: metrics by name (``"ndcg@10:affected"``), the
  table of built-in metrics, :class:`EvalSpec` and :func:`compute_metrics`;
- :mod:`~groupbias.evaluation.protocol`: deterministic and stochastic (policy) evaluation;
  :mod:`~groupbias.evaluation.fair_exposure`: the fair-exposure policy learner;
- :mod:`~groupbias.evaluation.stats`: paired tests; :mod:`~groupbias.evaluation.theory`:
  Theorems 4.1–4.3; :func:`evaluate`: scores on a dataset, by metric names.
"""

from .catalog import DEFAULT_METRICS, EvalSpec, compute_metrics, eel_thresholds, metric_keys
from .evaluate import evaluate
from .protocol import DETERMINISTIC, EvaluationProtocol

__all__ = [
    "DEFAULT_METRICS",
    "DETERMINISTIC",
    "EvalSpec",
    "EvaluationProtocol",
    "compute_metrics",
    "eel_thresholds",
    "evaluate",
    "metric_keys",
]
