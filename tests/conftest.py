"""Shared fixtures.

Real TREC Fair data is looked up in ``$GROUPBIAS_TREC_FAIR`` or ``../shared/data/trec-fair``
beside the repository; tests marked ``realdata`` skip with the reason when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _shared(env: str, relative: str, marker: str) -> Path | None:
    """``$env`` or ``../shared/data/<relative>`` when it holds ``marker``, else None."""
    value = os.environ.get(env)
    cand = Path(value) if value else REPO.parent / "shared" / "data" / relative
    return cand if (cand / marker).exists() else None


def _required(path: Path | None, what: str, env: str, relative: str) -> Path:
    if path is None:
        pytest.skip(f"{what} not found: set {env} or place it at ../shared/data/{relative}")
    return path


def trec_fair_root() -> Path | None:
    return _shared("GROUPBIAS_TREC_FAIR", "trec-fair", "ppg")


@pytest.fixture
def trec_root() -> Path:
    return _required(trec_fair_root(), "TREC Fair data", "GROUPBIAS_TREC_FAIR", "trec-fair")


@pytest.fixture
def grep_root() -> Path:
    root = _shared("GROUPBIAS_GREP_BIASIR", "grep-biasir", "queries.csv")
    return _required(root, "Grep-BiasIR", "GROUPBIAS_GREP_BIASIR", "grep-biasir")


@pytest.fixture
def gender_wordlist() -> Path:
    path = "rekabsaz-gender/wordlist_genderspecific.txt"
    env = "GROUPBIAS_GENDER_WORDLIST"
    value = os.environ.get(env)
    file = Path(value) if value else REPO.parent / "shared" / "data" / path
    return _required(file if file.is_file() else None, "gender word list", env, path)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _metrics_registered_in_a_test_stay_in_it(monkeypatch):
    """Every test sees the built-in metrics (and plugins) only: a metric a test registers
    (``METRICS.register``, ``register_metric``) is gone after it, so no test depends on the
    order pytest-xdist hands the tests to its workers."""
    from groupbias.core.registry import METRICS

    METRICS.names()  # the built-ins and the entry points' plugins, loaded once
    monkeypatch.setattr(METRICS, "_items", dict(METRICS._items))


@pytest.fixture(autouse=True)
def _progress_context_ends_with_the_test():
    """A run's progress that a test starts and never closes (``StepProgress.start`` without
    ``close``) leaves its context variables set (the run's bar shown, a listener of
    training): put them back after every test, so what a later test on the same xdist worker
    sees does not depend on the order (``tests/ltr/test_bars.py`` once failed so in CI)."""
    import groupbias.core.progress as progress

    shown, listener = progress._SHOWN.get(), progress._LISTENER.get()
    yield
    progress._SHOWN.set(shown)
    progress._LISTENER.set(listener)
