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


def trec_fair_root() -> Path | None:
    env = os.environ.get("GROUPBIAS_TREC_FAIR")
    cand = Path(env) if env else REPO.parent / "shared" / "data" / "trec-fair"
    return cand if (cand / "ppg").is_dir() else None


@pytest.fixture
def trec_root() -> Path:
    root = trec_fair_root()
    if root is None:
        pytest.skip(
            "TREC Fair data not found: set GROUPBIAS_TREC_FAIR or place it at "
            "../shared/data/trec-fair"
        )
    return root


def grep_biasir_root() -> Path | None:
    env = os.environ.get("GROUPBIAS_GREP_BIASIR")
    cand = Path(env) if env else REPO.parent / "shared" / "data" / "grep-biasir"
    return cand if (cand / "queries.csv").is_file() else None


@pytest.fixture
def grep_root() -> Path:
    root = grep_biasir_root()
    if root is None:
        pytest.skip(
            "Grep-BiasIR not found: set GROUPBIAS_GREP_BIASIR or place it at "
            "../shared/data/grep-biasir"
        )
    return root


@pytest.fixture
def gender_wordlist() -> Path:
    env = os.environ.get("GROUPBIAS_GENDER_WORDLIST")
    cand = (
        Path(env)
        if env
        else REPO.parent / "shared" / "data" / "rekabsaz-gender" / "wordlist_genderspecific.txt"
    )
    if not cand.is_file():
        pytest.skip(
            "gender word list not found: set GROUPBIAS_GENDER_WORDLIST or place it at "
            "../shared/data/rekabsaz-gender/wordlist_genderspecific.txt"
        )
    return cand


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
