"""``groupbias-report where``: the run folder a ``groupbias`` command line writes, whatever
its overrides.

    groupbias-report where experiment=table2 dataset=trec2020
    # runs/table2/dataset=trec2020
    groupbias-report where -m experiment=table1 seed=0,1,2    # one line per job

It takes the command line's overrides as they were given (the same ``paths.runs`` and
``GROUPBIAS_RUNS``), names nothing it does not make (:func:`groupbias.app.preflight.run_folders`),
and prints one folder per line on stdout; a folder that is not there yet is said on stderr.
"""

from __future__ import annotations

import sys

from ..app.preflight import run_folders

USAGE = (
    "usage: groupbias-report where [-m] OVERRIDE ...\n\n"
    "Print the run folder that `groupbias [-m] OVERRIDE ...` writes (one line per job of a\n"
    "sweep), e.g. `groupbias-report where experiment=table2 dataset=trec2020` prints\n"
    "runs/table2/dataset=trec2020. Give the overrides (and GROUPBIAS_RUNS) as the command had."
)


def where_command(argv: list[str]) -> int:
    """Print the run folder of every job of ``groupbias <argv>``; returns 0."""
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    for folder in run_folders(argv):
        print(folder)
        if not folder.is_dir():
            print(f"groupbias-report: note: {folder} is not there yet", file=sys.stderr)
    return 0
