"""The rough training-time estimate and its warning: a big configuration warns, a tiny one
does not (neither is trained here)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from experiments.common import warn_if_long
from groupbias.app.command import CONFIG_DIR
from groupbias.app.config import build_setup
from groupbias.core.errors import GroupBiasWarning
from groupbias.ltr import training_time


class Lists:
    """Only the shape of a split: ``features`` and ``qptr`` (no values are read)."""

    def __init__(self, queries: int, per_query: int, features: int) -> None:
        self.qptr = np.arange(queries + 1) * per_query
        self.features = np.broadcast_to(np.float32(0), (queries * per_query, features))


def _setup(*overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["experiment=table2", *overrides])
    return build_setup(cfg)[0]


def test_a_big_run_warns_with_its_size_and_a_rough_time():
    setup = _setup("trainer.max_epochs=30", "trainer.threads=2")
    big = {"train": Lists(9_600, 120, 136), "valid": Lists(2_400, 120, 136)}
    est = training_time.training_cost(setup.recipe, big["train"], big["valid"], rankers=5)
    assert est.queries == 12_000 and est.features == 136 and est.threads == 2
    assert est.seconds > 3600  # hours, not minutes, on 2 threads
    with pytest.warns(GroupBiasWarning) as caught:
        warn_if_long(setup, big, rankers=5, title="MSLR")
    (msg,) = [str(w.message) for w in caught]
    assert msg.startswith("this run trains 5 rankers × 30 epochs on 12,000 queries of MSLR")
    assert "expect roughly" in msg and "on 2 CPU cores" in msg and "trainer=gpu" in msg
    assert "warn_after_s" in msg


def test_a_tiny_run_or_a_null_threshold_does_not_warn():
    setup = _setup("trainer.max_epochs=2")
    tiny = {"train": Lists(40, 10, 20)}
    assert training_time.training_cost(setup.recipe, tiny["train"], rankers=3).seconds < 60
    big = {"train": Lists(9_600, 120, 136)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_long(setup, tiny, rankers=3)
        warn_if_long(replace(setup, warn_after_s=None), big, rankers=5)


def test_the_estimate_grows_with_data_epochs_rankers_and_shrinks_with_threads():
    recipe = _setup("trainer.max_epochs=10", "trainer.threads=1").recipe
    data = Lists(1_000, 50, 40)
    base = training_time.training_cost(recipe, data, rankers=1).seconds
    more = [
        training_time.training_cost(recipe, Lists(2_000, 50, 40), rankers=1).seconds,
        training_time.training_cost(recipe, Lists(1_000, 50, 80), rankers=1).seconds,
        training_time.training_cost(recipe, data, rankers=3).seconds,
        training_time.training_cost(
            replace(recipe, trainer=replace(recipe.trainer, max_epochs=20)), data, rankers=1
        ).seconds,
    ]
    assert all(m > base for m in more)
    two = replace(recipe, trainer=replace(recipe.trainer, threads=2))
    assert training_time.training_cost(two, data, rankers=1).seconds < base
