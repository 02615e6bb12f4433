"""The Monte-Carlo engine of Plackett–Luce policies: exposure sums over sampled rankings.

Sampling (``device="cpu"``). A ranking is the ascending order of the keys ``E_i / p_i``
(``E_i = -log u_i`` i.i.d. exponential, ``p_i ∝ exp(s_i)``: an exponential race, the same
law as Gumbel-max, one logarithm per draw). The uniforms are 32 raw bits each of a 64-bit
generator, turned into the midpoints of ``2^22`` equal cells of ``(0, 1)`` by mantissa fill
(no division; ``-log u ≤ 15.9``): each is within ``2^-23`` of an exact uniform draw, which
moves a ranking probability by about ``2^-19`` at most. The keys are float32 with the
item's column packed into the lowest mantissa bits and sorted as int32 (one SIMD sort, no
argsort): two keys closer than ``2^-(23 - bits)`` of their magnitude (``bits =
ceil(log2(width))``, ``2^-16`` for 120 items) are ordered by column instead of by value, a
bias far below the Monte-Carlo error. Lists over 1024 items, and blocks whose logits spread
over more than 60 (where ``1 / p`` would leave float32), use float64 keys and an argsort
(Gumbel keys ``log E_i - s_i`` for the latter).

The draws run in steps of ``batch_items`` values (default ``2^17``) and in tasks of 16
steps; task ``t`` of block ``b`` draws from its own generator, ``SFC64(SeedSequence(seed,
spawn_key=(b, t)))``, so the tasks run on ``workers`` threads started for the call and the
same ``seed`` (and ``batch_items``) gives bit-identical exposures whatever their number.
From ``10^8`` sampled values of one block (backend ``auto``; always under ``numba``), the
sums over the sorted keys run in a compiled loop (:mod:`groupbias._fast.plackett_luce_loops`)
on the same keys, summed in another order: the two paths agree within the equality
contract (1e-12 relative), not bit for bit.

Devices. ``"cpu"`` is the path above; ``"torch"`` (torch on the CPU), ``"cuda"`` (torch on
the GPU) and ``"auto"`` (``"cuda"`` when ``torch.cuda.is_available()``, else ``"cpu"``)
sample with torch instead: float32 exponentials, keys ``E_i / p_i`` (or ``log E_i - s_i``),
``argsort`` and ``scatter`` on the device, in steps of ``batch_items`` values (default
``2^24``), from a torch generator seeded from ``seed``; they agree with the CPU in
distribution. Torch is imported only when a torch device is asked for.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError
from .backend import compiled
from .rows import PaddedBlock, padded_blocks
from .threads import cores, in_parallel

__all__ = [
    "DEVICES",
    "NUMPY_STEP",
    "TORCH_STEP",
    "monte_carlo_exposure",
    "resolve_device",
    "sample_ranks",
]

#: where the Monte-Carlo draws run (see the module docstring)
DEVICES = ("cpu", "torch", "cuda", "auto")
#: widest padded block sampled with packed float32 keys
PACKED_WIDTH = 1024
#: values drawn per step: numpy (cache-sized) and torch (one device kernel per pass)
NUMPY_STEP = 1 << 17
TORCH_STEP = 1 << 24
#: steps per task (one generator and one thread per task)
_TASK_STEPS = 16
#: sampled values of one block from which the compiled loops serve under backend "auto"
#: (importing numba once per process costs what they save on about this many values)
LOOPS_MIN_KEYS = 100_000_000
#: smallest exponential draw of the torch path (keeps log E finite)
_TORCH_TINY = 2.0**-40
#: exponential race (one logarithm per draw) when every logit of a block is at most this
#: far below its row's maximum (exp(60) stays far inside float32)
_RACE_SPREAD = 60.0
#: 1 / p of padding slots in the race (they come last)
_RACE_PAD = 1e36


def _sampled_blocks(qptr: np.ndarray, exact_max: int) -> list[PaddedBlock]:
    """The padded blocks of the queries longer than ``exact_max``."""
    out = []
    for b in padded_blocks(qptr):
        keep = b.sizes > exact_max
        if keep.all():
            out.append(b)
        elif keep.any():
            out.append(b.subset(keep))
    return out


def monte_carlo_exposure(
    logits: np.ndarray,
    qptr: np.ndarray,
    table: np.ndarray,
    out: tuple[np.ndarray, np.ndarray],
    *,
    exact_max: int,
    samples: int,
    seed: int,
    device: str = "cpu",
    workers: int | None = None,
    batch_items: int = NUMPY_STEP,
) -> None:
    """Expected slot weight of every item of the queries longer than ``exact_max`` under
    the Plackett–Luce policies of ``logits``, from ``samples`` rankings per query: writes the
    means and their standard errors into ``out = (mean, stderr)`` (float64 [n_items] each).
    ``table[j]``: the weight of slot ``j`` (rank ``j + 1``); ``device``: ``"cpu"`` (numpy,
    on ``workers`` threads, default the cores), ``"torch"`` or ``"cuda"`` (resolved, see
    :func:`resolve_device`)."""
    mean, stderr = out
    for block_no, b in enumerate(_sampled_blocks(qptr, exact_max)):
        values, race = block_values(b, logits)
        tab = table[: b.width].astype(np.float32)  # weight of slot j: rank j + 1
        if device == "cpu":
            n = workers or cores()
            acc, acc2 = _numpy_sums(values, race, tab, (seed, block_no), samples, n, batch_items)
        else:
            args = (values, b.valid, race, tab, samples, _torch_seed(seed, block_no), device)
            acc, acc2 = torch_exposure_sums(*args, batch_items)
        m = np.divide(acc, samples, out=acc)
        var = np.divide(acc2, samples, out=acc2)
        var -= m * m
        np.maximum(var, 0.0, out=var)
        se = np.sqrt(np.divide(var, max(samples - 1, 1), out=var), out=var)
        b.unpad(m, mean)
        b.unpad(se, stderr)


def sample_ranks(
    logits: np.ndarray, qptr: np.ndarray, n_samples: int, draw, batch_items: int
) -> np.ndarray:
    """``n_samples`` rankings of every query: the 1-based rank of every item in each, int32
    [n_samples, n_items], from the raw 64-bit words ``draw(n)``."""
    out = np.empty((n_samples, int(qptr[-1])), dtype=np.int32)
    for b in padded_blocks(qptr):
        w = b.width
        values, race = block_values(b, logits)
        index, valid = b.index(), b.valid
        rank = np.broadcast_to(np.arange(1, w + 1, dtype=np.int32), (1, 1, w))
        for r0, rows_b, s0, s_b in sample_steps(values.shape[0], w, n_samples, batch_items):
            sl = slice(r0, r0 + rows_b)
            cols = sample_slots(values[sl], s_b, draw, race=race)
            ranks = np.empty(cols.shape, dtype=np.int32)
            np.put_along_axis(ranks, cols, np.broadcast_to(rank, cols.shape), 2)
            out[s0 : s0 + s_b, index[sl][valid[sl]]] = ranks[:, valid[sl]]
    return out


def _numpy_sums(values, race: bool, tab, seed_key, samples, workers, step):
    """Sums over the samples of the slot weights of every item, and of their squares
    (float64 [rows, width] each): tasks of ``_TASK_STEPS`` steps, each with its own
    generator (``SeedSequence(seed, spawn_key=(block, task))``), on up to ``workers``
    threads started for the call, each taking the next task not yet taken."""
    seed, block_no = seed_key
    rows, w = values.shape
    packed = race and w <= PACKED_WIDTH
    loops = compiled("plackett_luce_loops", samples * rows * w, LOOPS_MIN_KEYS) if packed else None
    per_task = max(1, _TASK_STEPS * step // (w * samples))
    starts = range(0, rows, per_task)
    acc = np.zeros((rows, w))
    acc2 = np.zeros((rows, w))

    def task(t: int) -> None:  # fills its own rows of acc and acc2
        sl = slice(starts[t], starts[t] + per_task)
        draw = np.random.SFC64(np.random.SeedSequence(seed, spawn_key=(block_no, t))).random_raw
        _sums(values[sl], race, tab, samples, draw, step, (acc[sl], acc2[sl]), loops)

    order = iter(range(len(starts)))  # each runner takes the next task not yet taken

    def runner() -> None:
        for t in order:
            task(t)

    in_parallel([runner] * max(1, min(workers, len(starts))))
    return acc, acc2


def _sums(values, race: bool, tab, n_samples: int, draw, step: int, sums, loops) -> None:
    """Adds to ``sums = (acc, acc2)`` (float64 [rows, width] each) the sums over
    ``n_samples`` rankings of the slot weight ``tab[slot]`` of every item of the rows of
    ``values``, and of its square; ``draw(n)``: ``n`` raw 64-bit words; ``loops``: the
    compiled loop (packed race keys only) or None."""
    rows, w = values.shape
    acc, acc2 = sums
    for r0, rows_b, _, s_b in sample_steps(rows, w, n_samples, step):
        part = values[r0 : r0 + rows_b]
        out, out2 = acc[r0 : r0 + rows_b], acc2[r0 : r0 + rows_b]
        if loops is not None:
            keys, low = _sorted_race_keys(part, s_b, draw)
            loops.accumulate(keys, low, tab, out, out2)
            continue
        cols = sample_slots(part, s_b, draw, race=race)
        ex = np.empty(cols.shape, dtype=np.float32)  # the item of slot j gets tab[j]
        np.put_along_axis(ex, cols, np.broadcast_to(tab, cols.shape), axis=2)
        out += ex.sum(axis=0, dtype=np.float64)
        out2 += np.square(ex, out=ex).sum(axis=0, dtype=np.float64)


def _torch_seed(seed: int, block_no: int) -> int:
    state = np.random.SeedSequence(seed, spawn_key=(block_no,)).generate_state(2)
    return int(state[0]) << 31 | int(state[1]) >> 1


def resolve_device(device: str) -> str:
    """``"cpu"`` (numpy), ``"torch"`` (torch on the CPU) or ``"cuda"``; torch is imported
    only for the torch devices."""
    if device == "cpu":
        return device
    import torch

    if device == "torch":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ParameterError("device", "'auto', 'torch' or 'cpu' (no GPU is present)", device)
    return "cpu"


def block_values(block, scores: np.ndarray) -> tuple[np.ndarray, bool]:
    """What the keys of one padded block are made from, and whether they race.

    Race (every logit at most ``_RACE_SPREAD`` below its row's maximum): ``-1 / p`` as
    float32, ``p = exp(logit - max)`` (padding ``-_RACE_PAD``); the keys are ``E · (1 / p)``.
    Otherwise: ``max - logit`` as float64 (padding 100 beyond the row's smallest logit); the
    keys are ``log E + max - logit``, the negated Gumbel-max scores."""
    base = block.padded(scores, np.nan).astype(np.float64)
    valid = block.valid
    top = np.nanmax(base, axis=1, keepdims=True)
    low = np.nanmin(base, axis=1, keepdims=True)
    if np.all(low - top >= -_RACE_SPREAD):
        return np.where(valid, -np.exp(top - base), -_RACE_PAD).astype(np.float32), True
    return np.where(valid, top - base, top - low + 100.0), False


def sample_steps(rows: int, width: int, n_samples: int, step: int):
    """The steps ``(r0, rows_b, s0, s_b)`` of ``n_samples`` draws of ``rows`` rows of
    ``width`` values: whole rows (all samples) while one fits in ``step`` values, else one
    row and part of its samples."""
    per_row = n_samples * width
    if per_row <= step:
        rows_per = step // per_row
        for r0 in range(0, rows, rows_per):
            yield r0, min(rows_per, rows - r0), 0, n_samples
        return
    s_per = max(1, step // width)
    for r0 in range(rows):
        for s0 in range(0, n_samples, s_per):
            yield r0, 1, s0, min(s_per, n_samples - s0)


def _low_bits(w: int) -> np.int32:
    """The lowest mantissa bits that hold a column of ``w``."""
    return np.int32((1 << max(1, (w - 1).bit_length())) - 1)


def _sorted_race_keys(values: np.ndarray, n_samples: int, draw):
    """Race keys of the rows of ``values`` (``-1 / p``, float32 [m, w]), sorted: int32
    [n_samples, m, w] with the column in the bits ``low`` (returned too). ``u`` is the
    midpoint ``(2k + 1) · 2^-23`` of one of ``2^22`` cells of (0, 1) (mantissa fill of
    [1, 2), minus 1: exact); ``log u · values = E / p > 0``, so int32 order is float order."""
    m, w = values.shape
    n = n_samples * m * w
    bits = draw((n + 1) // 2).view(np.uint32)[:n].reshape(n_samples, m, w)
    low = _low_bits(w)
    bits >>= np.uint32(9)
    bits |= np.uint32(0x3F800001)
    u = bits.view(np.float32)
    np.subtract(u, np.float32(1.0), out=u)
    np.log(u, out=u)
    np.multiply(u, values, out=u)
    keys = bits.view(np.int32)
    keys &= ~low
    keys |= np.arange(w, dtype=np.int32)  # column in the lowest mantissa bits
    keys = bits.view(np.int32)
    keys.sort(axis=2)
    return keys, low


def sample_slots(values: np.ndarray, n_samples: int, draw, *, race: bool) -> np.ndarray:
    """PL rankings of the rows of ``values`` [m, w] (see :func:`block_values`): the column
    of the item in every slot, int [n_samples, m, w] (slot ``j`` has rank ``j + 1``), drawn
    from the raw 64-bit words ``draw(n)``."""
    m, w = values.shape
    if w > PACKED_WIDTH or not race:  # float64 keys, argsort
        raw = draw((n_samples, m, w))
        e = -np.log(((raw >> np.uint64(11)) + 0.5) * 2.0**-53)  # exponential
        keys = e * -values if race else np.log(e) + values
        return np.argsort(keys, axis=2, kind="stable")
    keys, low = _sorted_race_keys(values, n_samples, draw)
    keys &= low
    return keys


def torch_exposure_sums(
    values, valid, race: bool, tab, n_samples: int, seed: int, device, step: int
):
    """:func:`_numpy_sums` with torch on ``device`` (``"torch"``: the CPU), from a torch
    generator seeded with ``seed``."""
    import torch

    dev = torch.device("cpu" if device == "torch" else device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    vals = torch.as_tensor(values, device=dev).float()
    pad = torch.as_tensor(~valid, device=dev)
    weights = torch.as_tensor(tab, device=dev)
    rows, w = values.shape
    acc = torch.zeros((rows, w), dtype=torch.float64, device=dev)
    acc2 = torch.zeros((rows, w), dtype=torch.float64, device=dev)
    for r0, rows_b, _, s_b in sample_steps(rows, w, n_samples, step):
        part = vals[r0 : r0 + rows_b]
        e = torch.empty((s_b, rows_b, w), device=dev).exponential_(generator=gen)
        e.clamp_(min=_TORCH_TINY)
        keys = e.mul_(-part) if race else e.log_().add_(part)
        keys.masked_fill_(pad[r0 : r0 + rows_b], float("inf"))
        order = torch.argsort(keys, dim=2)
        ex = torch.empty_like(keys).scatter_(2, order, weights.expand(s_b, rows_b, w))
        acc[r0 : r0 + rows_b] += ex.sum(dim=0, dtype=torch.float64)
        acc2[r0 : r0 + rows_b] += ex.square_().sum(dim=0, dtype=torch.float64)
    return acc.cpu().numpy(), acc2.cpu().numpy()
