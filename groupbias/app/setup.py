"""What a run is made of: the objects built from its config groups (:mod:`groupbias.app.config`).

An experiment (``experiments/``) receives a :class:`Setup` and its own settings object; it
composes library calls only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..data.datasets import DatasetSpec, Grouping
from ..estimate.diagnostics import Diagnostics
from ..estimate.estimators import Estimator
from ..evaluation.protocol import EvaluationProtocol
from ..simulate.group_bias import GroupBias

__all__ = ["Setup", "Experiment"]


@dataclass(frozen=True)
class Setup:
    """The built config groups of one run.

    ``dataset``/``grouping``: the composed dataset and its sensitive attribute (experiments
    over several datasets list their own in ``experiment.datasets``; a dataset chosen on the
    command line, ``data_from_command_line``, replaces that list); ``bias``: the group-bias
    model; ``estimator``: the β estimator; ``diagnostics``: the assumption checks run beside
    it; ``evaluation``: how scores are evaluated (:mod:`groupbias.evaluation.protocol`); ``recipe``:
    the ranker's model, loss, optimizer, scheduler, trainer and batching
    (:class:`groupbias.ltr.train.RankerRecipe`; None for an experiment whose
    ``trains_ranker`` is false); ``backend``: the fast paths' knob the run computes under
    (``auto | numpy | numba``, :mod:`groupbias._fast`); ``warn_after_s``: a run whose rankers
    are estimated to train longer than this many seconds warns before it trains
    (:mod:`groupbias.ltr.training_time`; None: never).
    """

    seed: int
    progress: bool
    dataset: DatasetSpec
    grouping: Grouping
    bias: GroupBias
    estimator: Estimator
    recipe: Any
    data_from_command_line: bool = False
    backend: str = "auto"
    warn_after_s: float | None = 180.0
    diagnostics: Diagnostics = Diagnostics()
    evaluation: EvaluationProtocol = field(default_factory=EvaluationProtocol)


class Experiment(Protocol):
    """An experiment config object (``configs/experiment/*.yaml``, ``_target_`` a class of
    ``experiments/``): ``run`` computes result records into the run directory, ``present``
    prints and plots them. An experiment may also say how many steps (``run_dir.step``) its run
    makes, ``planned_steps(setup) -> int``: the command then shows ``step n/total`` and the
    time left (:mod:`groupbias.app.progress`). An experiment that runs its own list of
    datasets says so in ``dataset_list``: ``(key, ((name, plain), ...))``, the config key of
    the list and each entry's dataset name, ``plain`` when the entry is only that name (None:
    it runs the composed ``dataset``); :func:`groupbias.app.config.build_setup` then refuses
    ``dataset.*`` and ``grouping`` keys that would not reach the list."""

    name: str

    def run(self, setup: Setup, run_dir) -> dict: ...

    def present(self, setup: Setup, metrics: dict, run_dir) -> None: ...
