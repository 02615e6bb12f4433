"""Hash every stored record of every experiment at tiny scale, on the synthetic dataset and on
real TREC Fair data: a refactoring that changes no result prints the same lines before and
after it.

    python tests/record_hashes.py [--out hashes.txt] [--only table1,drift]
    python tests/record_hashes.py --dump before/      # the records themselves, one JSON a case
    python tests/record_hashes.py --compare before/   # largest difference per case against them

One line per (experiment, data): the number of records and the SHA-256 (16 hex digits) of
their canonical JSON (sorted keys, floats as ``repr``), then one line with the hash of all
lines. TREC Fair is looked up as the tests do (``$GROUPBIAS_TREC_FAIR`` or
``../shared/data/trec-fair``); without it only the synthetic lines are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# the composed dataset's size, for experiments without a list of their own; those with one
# read `synthetic` at its defaults (a `dataset.*` key would not reach the list: refused)
TINY_SYNTH = ["dataset.params.n_queries=60", "dataset.params.list_size=[4,20]"]
TINY_TRAIN = [
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "model.fc_model.sizes=[16]",
    "model.transformer.d_ff=16",
]
TINY_CLICKS = ["experiment.sessions=[3000]", "experiment.repetitions=1", *TINY_TRAIN]
TINY_DRIFT = [
    "experiment.sessions=20000",
    "experiment.window=2000",
    "experiment.half_life=1000",
    "experiment.bins=20",
]
SYNTH_60 = "[{dataset: synthetic, params: {n_queries: 60, list_size: [4,20]}}]"

#: (experiment, data label, overrides, data chosen on the command line)
CASES = [
    (
        "demo",
        "synthetic",
        [
            *TINY_SYNTH,
            *TINY_TRAIN,
            "experiment.repetitions=1",
            "experiment.ltr_betas=[0.8]",
            "bias.betas=[1.0,0.8]",
        ],
        False,
    ),
    (
        "demo",
        "trec2020",
        [
            "dataset=trec2020",
            *TINY_TRAIN,
            "experiment.repetitions=1",
            "experiment.ltr_betas=[0.8]",
            "bias.betas=[0.8]",
        ],
        True,
    ),
    ("table1", "synthetic", ["experiment.datasets=[synthetic]"], False),
    ("table1", "trec", ["experiment.datasets=[trec2019,trec2020]"], False),
    (
        "table1",
        "trec2020-policy",
        [
            "experiment.datasets=[trec2020]",
            "evaluation=policy",
            "evaluation.samples=20",
            "evaluation.epochs=20",
        ],
        False,
    ),
    (
        "table1",
        "trec2020-paper_code",
        [
            "experiment.datasets=[trec2020]",
            "evaluation=paper_code",
            "evaluation.samples=20",
            "evaluation.epochs=20",
        ],
        False,
    ),
    (
        "table1",
        "synthetic-metrics",
        [
            "experiment.datasets=[synthetic]",
            "experiment.metrics=[ndcg@10,rho_dtr,delta_eel,awrf,"
            "texfair,{name:cwex,alpha:0.2,key:cwex@0.2},arab,nfairr]",
            "experiment.correlations=[[awrf,texfair]]",
        ],
        False,
    ),
    (
        "table2",
        "synthetic",
        [*TINY_TRAIN, "experiment.datasets=[synthetic]", "bias.betas=[0.7]"],
        False,
    ),
    (
        "table2",
        "trec2020",
        [
            *TINY_TRAIN,
            "experiment.datasets=[trec2020]",
            "bias.betas=[0.7]",
            "experiment.metrics=[ndcg@10,rho_dtr,delta_eel,awrf]",
        ],
        False,
    ),
    (
        "impact",
        "synthetic",
        [
            *TINY_TRAIN,
            "experiment.setups=listed",
            "experiment.datasets=[synthetic]",
            "bias.betas=[1.0,0.8,0.6]",
        ],
        False,
    ),
    (
        "impact",
        "trec2020",
        [
            *TINY_TRAIN,
            "experiment.setups=listed",
            "experiment.datasets=[trec2020]",
            "bias.betas=[1.0,0.6]",
        ],
        False,
    ),
    (
        "fig7",
        "synthetic",
        ["experiment.setups=listed", "experiment.datasets=[synthetic]"],
        False,
    ),
    (
        "fig7",
        "trec",
        ["experiment.setups=listed", "experiment.datasets=[trec2019,trec2020]"],
        False,
    ),
    (
        "ablation_cluster_size",
        "synthetic",
        [*TINY_SYNTH, "experiment.repetitions=1", "experiment.cluster_sizes=[1,10,500,1000]"],
        False,
    ),
    (
        "ablation_cluster_size",
        "trec2019",
        ["dataset=trec2019", "experiment.repetitions=1", "experiment.cluster_sizes=[1,10,100]"],
        True,
    ),
    (
        "ablation_clustering",
        "synthetic",
        [
            *TINY_SYNTH,
            "experiment.repetitions=1",
            "experiment.cluster_sizes=[1,40]",
            "experiment.beta_stds=[0.3]",
        ],
        False,
    ),
    (
        "ablation_clustering",
        "trec2020",
        [
            "dataset=trec2020",
            "experiment.repetitions=1",
            "experiment.cluster_sizes=[1,40]",
            "experiment.beta_stds=[0.3]",
        ],
        True,
    ),
    (
        "estimator_robustness",
        "synthetic",
        [
            "experiment.repetitions=1",
            "experiment.ratios=[1.0,0.6]",
            "experiment.betas=[0.8]",
            "experiment.fig9_stds=[0.3]",
            "experiment.datasets=[synthetic]",
        ],
        False,
    ),
    (
        "estimator_robustness",
        "trec2019",
        [
            "experiment.repetitions=1",
            "experiment.ratios=[1.0,0.8]",
            "experiment.betas=[0.8]",
            "experiment.fig9_stds=[0.3]",
            "experiment.datasets=[trec2019]",
        ],
        False,
    ),
    ("clicks", "synthetic", [*TINY_CLICKS, f"experiment.datasets={SYNTH_60}"], False),
    ("clicks", "trec2020", [*TINY_CLICKS, "experiment.datasets=[trec2020]"], False),
    ("drift", "synthetic", [*TINY_DRIFT, f"experiment.datasets={SYNTH_60}"], False),
    ("drift", "trec2020", [*TINY_DRIFT, "experiment.datasets=[trec2020]"], False),
    ("theory", "closed-form", ["experiment.n_queries=300", "bias.betas=[1.0,0.8,0.6]"], False),
]


def canonical(records) -> str:
    return json.dumps(records, sort_keys=True, separators=(",", ":"), default=repr)


def _leaves(value, path=""):
    """(path, leaf) of every number and string in a record tree."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}/{i}")
    else:
        yield path, value


def largest_difference(before, after) -> tuple[float, str]:
    """The largest relative difference |a - b| / max(1, |b|) between two record lists
    (inf where the structure, a string or an integer differs), and where it is."""
    left, right = dict(_leaves(before)), dict(_leaves(after))
    if left.keys() != right.keys():
        return float("inf"), f"keys differ: {sorted(left.keys() ^ right.keys())[:3]}"
    worst, where = 0.0, ""
    for key, b in left.items():
        a = right[key]
        if isinstance(b, float) and isinstance(a, float):
            if b != b and a != a:  # both NaN
                continue
            diff = abs(a - b) / max(1.0, abs(b))
        else:
            diff = 0.0 if a == b else float("inf")
        if diff > worst:
            worst, where = diff, key
    return worst, where


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def trec_root() -> Path | None:
    env = os.environ.get("GROUPBIAS_TREC_FAIR")
    cand = Path(env) if env else REPO.parent / "shared" / "data" / "trec-fair"
    return cand if (cand / "ppg").is_dir() else None


def run_case(experiment, overrides, data_overridden, runs) -> list:
    from hydra import compose, initialize_config_dir

    from groupbias.app.cli import CONFIG_DIR, run

    over = [f"experiment={experiment}", f"paths.runs={runs}", *overrides]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=over)
    keys = [o.split("=", 1)[0] for o in over]
    return run(cfg, data_overridden=data_overridden, overridden=keys)["records"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the lines to this file")
    ap.add_argument("--only", help="comma-separated experiments")
    ap.add_argument("--dump", help="write each case's records as JSON into this folder")
    ap.add_argument("--compare", help="print each case's largest difference to a --dump folder")
    args = ap.parse_args(argv)
    root = trec_root()
    if root is not None:
        os.environ["GROUPBIAS_TREC_FAIR"] = str(root)
    only = set(args.only.split(",")) if args.only else None
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (experiment, label, overrides, data_overridden) in enumerate(CASES):
            if only and experiment not in only:
                continue
            if root is None and label.startswith("trec"):
                continue
            runs = Path(tmp) / str(i)
            with open(os.devnull, "w") as sink:
                stdout, sys.stdout = sys.stdout, sink
                try:
                    records = run_case(experiment, overrides, data_overridden, runs)
                finally:
                    sys.stdout = stdout
            line = f"{experiment:22s} {label:22s} {len(records):5d} {digest(canonical(records))}"
            name = f"{i:02d}_{experiment}_{label}.json"
            if args.dump:
                Path(args.dump).mkdir(parents=True, exist_ok=True)
                Path(args.dump, name).write_text(canonical(records))
            if args.compare:
                before = json.loads(Path(args.compare, name).read_text())
                worst, where = largest_difference(before, json.loads(canonical(records)))
                line += f"  largest relative difference {worst:.3g} {where}"
            print(line, flush=True)
            lines.append(line)
    total = f"{'all':45s} {len(lines):5d} {digest(chr(10).join(lines))}"
    print(total)
    if args.out:
        Path(args.out).write_text("\n".join([*lines, total]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
