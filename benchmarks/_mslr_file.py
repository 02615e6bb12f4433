"""An MSLR-WEB30K-sized SVMlight file, written fast enough to generate for a benchmark.

Every line has the same byte layout ``<grade> qid:<qqqqqq> 1:<vvv> 2:<vvv> ... 136:<vvv>``
(zero-padded qids and three-digit feature values), so a chunk of lines is a ``uint8`` matrix
filled column by column with numpy: no Python loop over lines or values. Grades follow
MSLR's distribution; features 1-20 carry the grade plus noise, the rest are uniform noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_FEATURES = 136
GRADE_P = (0.52, 0.32, 0.13, 0.02, 0.01)


def _layout() -> tuple[bytes, list[int]]:
    """The line template and the byte offset of every feature's first value digit."""
    parts, offsets = [b"0 qid:000000"], []
    pos = len(parts[0])
    for j in range(1, N_FEATURES + 1):
        head = b" %d:" % j
        offsets.append(pos + len(head))
        parts.append(head + b"000")
        pos += len(head) + 3
    parts.append(b"\n")
    return b"".join(parts), offsets


def _digits(out: np.ndarray, start: int, values: np.ndarray, width: int) -> None:
    for k in range(width):
        out[:, start + width - 1 - k] = 48 + (values // 10**k) % 10


def write_mslr_file(
    path: str | Path, n_queries: int, list_size: int = 120, *, seed: int = 0, chunk: int = 100_000
) -> Path:
    """Write ``n_queries`` queries of ``list_size`` lines each to ``path`` and return it."""
    template, offsets = _layout()
    row = np.frombuffer(template, dtype=np.uint8)
    rng = np.random.default_rng(seed)
    n = n_queries * list_size
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for s in range(0, n, chunk):
            m = min(chunk, n - s)
            block = np.repeat(row[None, :], m, axis=0)
            grades = rng.choice(5, size=m, p=GRADE_P)
            block[:, 0] = 48 + grades
            qid = (np.arange(s, s + m) // list_size) + 1
            _digits(block, 6, qid, 6)
            values = rng.integers(0, 1000, size=(m, N_FEATURES))
            values[:, :20] = np.minimum(999, values[:, :20] // 5 + 150 * grades[:, None])
            for j, off in enumerate(offsets):
                _digits(block, off, values[:, j], 3)
            fh.write(block.tobytes())
    return path


def write_mslr_folder(root: str | Path, n_queries: int, list_size: int = 120) -> Path:
    """``root/Fold1/{train,vali,test}.txt``: train of ``n_queries`` queries, small vali/test."""
    root = Path(root)
    write_mslr_file(root / "Fold1" / "train.txt", n_queries, list_size, seed=0)
    for i, split in enumerate(("vali", "test"), start=1):
        write_mslr_file(root / "Fold1" / f"{split}.txt", 50, list_size, seed=i)
    return root
