"""Where the shared data sets are, and the fresh runs the tables are drawn from."""

from __future__ import annotations

import contextlib
from pathlib import Path

from groupbias.core.io import env_value

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


def data_root(name: str, env: str, probe: str) -> Path | None:
    """A shared data set: ``$env`` or ``../shared/data/<name>``, if ``probe`` is in it."""
    value = env_value(env)
    cand = Path(value) if value is not None else SHARED / name
    return cand if (cand / probe).exists() else None


def trec_root() -> Path | None:
    return data_root("trec-fair", "GROUPBIAS_TREC_FAIR", "ppg")


#: the shared data sets: (folder, environment variable, a path inside that must exist)
DATA = {
    "trec-fair": ("trec-fair", "GROUPBIAS_TREC_FAIR", "ppg"),
    "grep-biasir": ("grep-biasir", "GROUPBIAS_GREP_BIASIR", "queries.csv"),
    "gender-wordlist": (
        "rekabsaz-gender/wordlist_genderspecific.txt",
        "GROUPBIAS_GENDER_WORDLIST",
        "",
    ),
}


class Runs:
    """Fresh runs in a scratch folder, each configuration run once per process (two tables
    drawn from one run, e.g. Table 1's policy rows and their p-values, share it)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.done: dict[tuple, tuple[dict, Path]] = {}

    def experiment(self, *overrides: str) -> tuple[dict, Path]:
        """``groupbias <overrides>`` in-process: its metrics (records) and run folder."""
        from hydra import compose, initialize_config_dir

        from groupbias.app.cli import CONFIG_DIR, run

        key = tuple(overrides)
        if key in self.done:
            return self.done[key]
        out = self.root / f"run{len(self.done)}"
        over = [*overrides, f"paths.runs={self.root}", "progress=false"]
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = compose(config_name="config", overrides=over)
        out.mkdir(parents=True)
        with open(out / "stdout.txt", "w") as log, contextlib.redirect_stdout(log):
            metrics = run(  # what the command prints goes to stdout.txt
                cfg,
                out,
                data_overridden=any(o.startswith("dataset=") for o in over),
                overridden=[o.split("=")[0] for o in over],
            )
        self.done[key] = (metrics, out)
        return self.done[key]
