"""Peak memory of :func:`groupbias.estimate.ks.estimate_beta` stays bounded as the data grow.

Each case runs in a fresh subprocess: generated graded scores (queries of 20 items, half of
the items affected, zeros included), then one ``estimate_beta`` call. The increase is the
peak resident set (``VmHWM``; ``ru_maxrss`` where /proc is missing) minus the resident set
once the input is built; the returned ``ks_curve`` (float64 [n_clusters, n_grid], part of
the API) is reported apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BOUND_MB = 600  # working memory of the search (chunks + sorted samples), any input size
GROWTH = 1.30  # 2M items vs 1M items

SCRIPT = r"""
import json, resource, sys
import numpy as np
from groupbias.estimate.ks import estimate_beta

n, cs = int(sys.argv[1]), int(sys.argv[2])
size = 20
rng = np.random.default_rng(0)
n_q = n // size
qptr = np.arange(0, n_q * size + 1, size)
groups = (rng.random(n_q * size) < 0.5).astype(np.float64)
a = rng.integers(0, 5, n_q * size) / 4.0
a *= np.where(groups == 1, np.repeat(np.clip(rng.normal(0.8, 0.1, n_q), 0.01, 1.0), size), 1.0)


def rss_mb():
    try:  # resident set now (the generation above may have peaked higher)
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_mb():
    # VmHWM, not ru_maxrss: a child started by fork + exec inherits the parent's ru_maxrss,
    # so a large test process would count as this script's peak
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


base = rss_mb()
est = estimate_beta(a, groups, qptr=qptr, rng=np.random.default_rng(1), cluster_size=cs)
peak = peak_mb()
print(json.dumps({"increase": peak - base, "output": est.ks_curve.nbytes / 2**20}))
"""


def peak_increase(n_items: int, cluster_size: int) -> dict:
    root = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    )
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(n_items), str(cluster_size)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB and /proc: Linux only")
def test_peak_memory_bounded_and_flat_for_clusters_of_ten():
    # clusters of 10 queries (~80 positive scores per group): the branch-and-bound path over
    # thousands of clusters, where the grid chunks used to grow with the data
    one = peak_increase(1_000_000, 10)
    two = peak_increase(2_000_000, 10)
    for got in (one, two):
        assert got["increase"] - got["output"] < BOUND_MB, (one, two)
    assert two["increase"] <= GROWTH * one["increase"], (one, two)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB and /proc: Linux only")
def test_peak_memory_bounded_per_query():
    # one cluster per query (100k clusters): the all-pairs path; the returned curves
    # (100k x 100 floats, 76 MB) are part of the result, the rest is bounded
    got = peak_increase(2_000_000, 1)
    assert got["increase"] - got["output"] < BOUND_MB, got
