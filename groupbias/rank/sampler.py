"""The Monte-Carlo engine of Plackett–Luce policies: exposure sums over sampled rankings.

Sampling (``device="cpu"``). A ranking is the ascending order of the keys ``E_i / p_i``
(``E_i = -log u_i`` i.i.d. exponential, ``p_i ∝ exp(s_i)``: an exponential race, the same
law as Gumbel-max, one logarithm per draw). The uniforms are 32 raw bits each of a 64-bit
generator, turned into the midpoints of ``2^22`` equal cells of ``(0, 1)`` by mantissa
fill (no division; ``-log u ≤ 15.9``): each is within ``2^-23`` of an exact uniform draw,
which moves a ranking probability by about ``2^-19`` at most. The logarithm is a float32
series (:func:`log32`) within ``2^-22`` (relative) of the exact one on every uniform that
can be drawn (numpy's float32 ``log``: ``2^-21.8``). The keys are float32 with the
item's column packed into the lowest mantissa bits and sorted as int32 (one SIMD sort, no
argsort): two keys closer than ``2^-(23 - bits)`` of their magnitude (``bits =
ceil(log2(width))``, ``2^-16`` for 120 items) are ordered by column instead of by value, a
bias far below the Monte-Carlo error. Lists over 1024 items, and blocks whose logits spread
over more than 60 (where ``1 / p`` would leave float32), use float64 keys and an argsort
(Gumbel keys ``log E_i - s_i`` for the latter).

The draws run in steps of ``batch_items`` values (default ``2^17``: 512 KiB of keys, the
L2 cache of one core, where the passes over them stay) and in tasks of 16 steps; task
``t`` of block ``b`` draws from its own generator, ``SFC64(SeedSequence(seed,
spawn_key=(b, t)))``, so the tasks run on ``threads`` threads (numpy and the compiled
loops release the GIL; the calling thread and threads kept for the process, each taking
the next task, with short GIL time slices: :mod:`groupbias.core.threads`) and the same
``seed`` (and ``batch_items``) gives bit-identical exposures whatever the number of
threads. When numba is
installed (the ``fast`` extra) and one exposure samples at least ``10^8`` values (or the
loops are already loaded: :func:`load_kernels`), :mod:`groupbias.rank.compiled` replaces
the generator, the elementwise passes and the scatter of the slot weights with compiled
loops that compute the same bits (same generator words, same float32 arithmetic, same
summation order); the sort stays numpy's.

Devices. ``device="cpu"`` (default) is the numpy path above; ``"torch"`` (torch on the
CPU), ``"cuda"`` (torch on the GPU) and ``"auto"`` (``"cuda"`` when
``torch.cuda.is_available()``, else ``"cpu"``) sample with torch instead: float32
exponentials, keys ``E_i / p_i`` (or ``log E_i - s_i``), ``argsort`` and ``scatter`` on the
device, in steps of ``batch_items`` values (default ``2^24``), from a torch generator seeded
from ``seed``. Torch draws other random numbers than numpy, so the two devices agree in
distribution, not bit for bit. Torch is imported only when a torch device is asked for.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..core.errors import ParameterError
from ..core.threads import in_parallel, short_switch_interval

__all__ = [
    "DEVICES",
    "NUMPY_STEP",
    "TORCH_STEP",
    "resolve_device",
    "block_values",
    "sample_steps",
    "sample_slots",
    "exposure_sums",
    "torch_exposure_sums",
    "monte_carlo_exposure",
    "compiled_kernels",
    "load_kernels",
    "log32",
    "LOG32_OFFSET",
    "LOG32_ATANH",
    "LN2",
]

#: where the Monte-Carlo draws run (see the module docstring)
DEVICES = ("cpu", "torch", "cuda", "auto")
#: widest padded block sampled with packed float32 keys
_PACKED_WIDTH = 1024
#: values drawn per step: numpy (cache-sized) and torch (one device kernel per pass)
NUMPY_STEP = 1 << 17
TORCH_STEP = 1 << 24
#: steps per task (one generator and one thread per task)
_TASK_STEPS = 16
#: sampled values of one exposure from which the compiled kernels are loaded (loading them,
#: about 0.7 s once per process, costs what they save on about 10^8 values); once loaded,
#: they serve every size
_COMPILED_MIN = 100_000_000
_KERNELS_MODULE = "groupbias.rank.compiled"
#: the float32 logarithm (:func:`log32`): range split at √½, atanh series coefficients
LOG32_OFFSET = 0x3F3504F3
LOG32_ATANH = (2.0, 2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0)
LN2 = 0.6931471805599453
#: smallest exponential draw of the torch path (keeps log E finite)
_TORCH_TINY = 2.0**-40
#: exponential race (one logarithm per draw) when every logit of a block is at most this
#: far below its row's maximum (exp(60) stays far inside float32)
_RACE_SPREAD = 60.0
#: 1 / p of padding slots in the race (they come last)
_RACE_PAD = 1e36


def monte_carlo_exposure(
    logits: np.ndarray,
    blocks,
    table: np.ndarray,
    out: tuple[np.ndarray, np.ndarray],
    *,
    samples: int,
    seed: int,
    device: str = "cpu",
    threads: int = 1,
    batch_items: int = NUMPY_STEP,
) -> None:
    """Expected slot weight of every item of the padded ``blocks`` (:class:`~groupbias.rank.
    ranking.PaddedBlock`) under the Plackett–Luce policies of ``logits``, from ``samples``
    rankings per query: writes the means and their standard errors into ``out = (mean,
    stderr)`` (float64 [n_items] each) at the blocks' items. ``table[j]``: the weight of
    slot ``j`` (rank ``j + 1``); ``device``: ``"cpu"`` (numpy, on ``threads`` threads),
    ``"torch"`` or ``"cuda"`` (resolved, see :func:`resolve_device`)."""
    mean, stderr = out
    spare: list[StepBuffers] = []  # reused by the blocks' tasks (tab: table[:width])
    kernels = None
    keys = samples * sum(b.rows.size * b.width for b in blocks)
    if device == "cpu" and (keys >= _COMPILED_MIN or _KERNELS_MODULE in sys.modules):
        kernels = compiled_kernels()
    for block_no, b in enumerate(blocks):
        w = b.width
        values, race = block_values(b, logits)
        tab = table[:w].astype(np.float32)  # weight of slot j: rank j + 1
        if device == "cpu":
            use = kernels if race and w <= _PACKED_WIDTH else None
            acc, acc2 = _numpy_sums(
                values, race, tab, (seed, block_no), samples, threads, batch_items, use, spare
            )
        else:
            acc, acc2 = torch_exposure_sums(
                values,
                b.valid,
                race,
                tab,
                samples,
                _torch_seed(seed, block_no),
                device,
                batch_items,
            )
        m = np.divide(acc, samples, out=acc)
        var = np.divide(acc2, samples, out=acc2)
        var -= m * m
        np.maximum(var, 0.0, out=var)
        se = np.sqrt(np.divide(var, max(samples - 1, 1), out=var), out=var)
        b.unpad(m, mean)
        b.unpad(se, stderr)


def _numpy_sums(values, race: bool, tab, seed_key, samples, threads, step, kernels, spare):
    """Sums over the samples of the slot weights of every item, and of their squares
    (float64 [rows, width] each): tasks of ``_TASK_STEPS`` steps, each with its own
    generator (``SeedSequence(seed, spawn_key=(block, task))``), on up to ``threads``
    threads (``kernels``: see :func:`exposure_sums`); a task takes its
    :class:`StepBuffers` from the list ``spare`` (or new ones) and puts them back."""
    seed, block_no = seed_key
    rows, w = values.shape
    per_task = max(1, _TASK_STEPS * step // (w * samples))
    starts = range(0, rows, per_task)
    acc = np.zeros((rows, w))
    acc2 = np.zeros((rows, w))

    def task(t: int) -> None:  # fills its own rows of acc and acc2
        sl = slice(starts[t], starts[t] + per_task)
        bitgen = np.random.SFC64(np.random.SeedSequence(seed, spawn_key=(block_no, t)))
        draw = bitgen.random_raw if kernels is None else kernels.SFC64Stream(bitgen).random_raw
        try:
            work = spare.pop()  # atomic: one task's buffers at a time
        except IndexError:
            work = StepBuffers()
        sums = (acc[sl], acc2[sl])
        exposure_sums(values[sl], race, tab, samples, draw, step, sums, kernels, work)
        spare.append(work)

    if threads == 1 or len(starts) == 1:
        for t in range(len(starts)):
            task(t)
        return acc, acc2
    order = iter(range(len(starts)))  # each runner takes the next task not yet taken

    def runner() -> None:
        for t in order:
            task(t)

    with short_switch_interval():
        in_parallel([runner] * min(threads, len(starts)))
    return acc, acc2


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


def compiled_kernels():
    """:mod:`groupbias.rank.compiled` when numba is installed, else ``None``."""
    try:
        from . import compiled
    except ImportError:
        return None
    return compiled


def load_kernels() -> bool:
    """Load the compiled loops of the CPU sampler now (about 0.7 s once per process;
    compiled on first use, about 5 s once per machine, then cached on disk), so that they
    serve every later exposure whatever its size (otherwise an exposure loads them from
    ``10^8`` sampled values on). ``False`` when numba is not installed (the numpy passes,
    same results)."""
    kernels = compiled_kernels()
    if kernels is None:
        return False
    bits = np.zeros((1, 1, 2), dtype=np.uint32)
    kernels.SFC64Stream(np.random.SFC64(0)).random_raw(1)
    kernels.race_keys(bits, np.full((1, 2), -1.0, dtype=np.float32), np.int32(1))
    ones = np.ones(2, dtype=np.float32)
    kernels.accumulate(
        bits.view(np.int32), np.int32(1), ones, ones, np.zeros((1, 2)), np.zeros((1, 2))
    )
    return True


def exposure_sums(
    values, race: bool, tab, n_samples: int, draw, step: int, sums, kernels, work=None
):
    """Adds to ``sums = (acc, acc2)`` (float64 [rows, width] each) the sums over
    ``n_samples`` rankings of the slot weight ``tab[slot]`` of every item of the rows of
    ``values``, and of its square (summed per step from 0 in sample order, then added).
    ``draw(n)``: ``n`` raw 64-bit words; ``kernels`` (:mod:`groupbias.rank.compiled`, for
    packed race keys only, or ``None``): the same bits in compiled loops; ``work``: the
    :class:`StepBuffers` of the numpy passes (default: new ones)."""
    rows, w = values.shape
    acc, acc2 = sums
    tab2 = np.square(tab)
    work = StepBuffers() if work is None else work
    for r0, rows_b, _, s_b in sample_steps(rows, w, n_samples, step):
        part = values[r0 : r0 + rows_b]
        out, out2 = acc[r0 : r0 + rows_b], acc2[r0 : r0 + rows_b]
        if kernels is not None:
            keys, low = _sorted_race_keys(part, s_b, draw, kernels)
            kernels.accumulate(keys, low, tab, tab2, out, out2)
            continue
        cols = sample_slots(part, s_b, draw, race=race, work=work)
        offsets, weights = work.scatter(cols.shape, tab, cols.dtype)
        flat, ex = work.scatter_arrays(cols.shape)
        if offsets.dtype == cols.dtype == np.int32:  # packed keys: add in int32, then widen
            np.copyto(flat, np.add(cols, offsets, out=cols))
        else:
            np.add(cols, offsets, out=flat)
        ex.ravel()[flat.ravel()] = weights  # item of slot j gets tab[j]
        out += ex.sum(axis=0, dtype=np.float64)
        out2 += np.square(ex, out=ex).sum(axis=0, dtype=np.float64)


class StepBuffers:
    """The memory that the numpy passes of one thread reuse from step to step (a new array
    of a step's size costs the page faults of its first writes, more than most passes
    over it): one block of 12 bytes a value, holding first the logarithm's three float32
    scratch arrays and then, once the keys are sorted, the flat slot indices (int64) and
    the slot weights (float32) of the scatter (with the keys, under 2 MiB, one core's L2
    cache, at the default step); and per step shape the row offsets and the tiled weights
    (``tab`` is the same for every step of one shape: one set per exposure and thread)."""

    def __init__(self) -> None:
        self._block = np.empty(0, dtype=np.uint8)
        self._scatter: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def _part(self, shape: tuple, start: int, dtype) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` at byte ``start · 4 · size`` of the block."""
        n = math.prod(shape)
        if self._block.size < 12 * n:
            self._block = np.empty(12 * n, dtype=np.uint8)
        size = n * np.dtype(dtype).itemsize
        return self._block[4 * n * start : 4 * n * start + size].view(dtype).reshape(shape)

    def scratch(self, shape: tuple) -> list[np.ndarray]:
        """The three float32 scratch arrays of :func:`log32`."""
        return [self._part(shape, i, np.float32) for i in range(3)]

    def scatter_arrays(self, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """The flat slot indices (int64) and the slot weights (float32) of one step, over
        the scratch arrays (their contents undefined)."""
        return self._part(shape, 0, np.int64), self._part(shape, 2, np.float32)

    def scatter(self, shape: tuple, tab: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
        """Flat offsets of the rows of a step of ``shape`` ([samples, rows, 1], of the
        columns' ``dtype`` where it holds them all, else int64) and the slot weights
        ``tab`` tiled over them."""
        key = (shape, dtype)
        if key not in self._scatter:
            s_b, rows_b, w = shape
            offsets = (np.arange(s_b * rows_b, dtype=np.int64) * w).reshape(s_b, rows_b, 1)
            if s_b * rows_b * w <= np.iinfo(dtype).max:
                offsets = offsets.astype(dtype)
            self._scatter[key] = (offsets, np.tile(tab, s_b * rows_b))
        return self._scatter[key]


def _low_bits(w: int) -> np.int32:
    """The lowest mantissa bits that hold a column of ``w``."""
    return np.int32((1 << max(1, (w - 1).bit_length())) - 1)


def _sorted_race_keys(values: np.ndarray, n_samples: int, draw, kernels=None, work=None):
    """Race keys of the rows of ``values`` (``-1 / p``, float32 [m, w]), sorted: int32
    [n_samples, m, w] with the column in the bits ``low`` (returned too)."""
    m, w = values.shape
    n = n_samples * m * w
    bits = draw((n + 1) // 2).view(np.uint32)[:n].reshape(n_samples, m, w)
    low = _low_bits(w)
    if kernels is not None:
        kernels.race_keys(bits, values, low)
    else:
        _race_keys(bits, values, low, None if work is None else work.scratch(bits.shape))
    keys = bits.view(np.int32)
    keys.sort(axis=2)
    return keys, low


def _race_keys(bits: np.ndarray, values: np.ndarray, low: np.int32, scratch=None) -> None:
    """Raw 32-bit words [n_samples, m, w] → in place, as int32, the race keys ``log u ·
    values`` (``values = -1 / p``: ``E / p > 0``, so int32 order is float order) with the
    column in the bits ``low``. ``u`` is the midpoint ``(2k + 1) · 2^-23`` of one of
    ``2^22`` cells of (0, 1) (mantissa fill of [1, 2), minus 1: exact). ``scratch``: see
    :func:`log32`."""
    bits >>= np.uint32(9)
    bits |= np.uint32(0x3F800001)
    u = bits.view(np.float32)
    np.subtract(u, np.float32(1.0), out=u)
    log_u = log32(u, scratch)  # over u: the bits
    np.multiply(log_u, values, out=log_u)
    keys = bits.view(np.int32)
    keys &= ~low
    keys |= np.arange(bits.shape[2], dtype=np.int32)  # column in the lowest mantissa bits


def log32(u: np.ndarray, scratch=None) -> np.ndarray:
    """Natural logarithm of float32 ``u > 0`` (normal), in float32 operations only:
    ``u = 2^k · m`` with ``m`` in ``[√½, √2)``, ``log m = 2 atanh(t)``, ``t = (m - 1) /
    (m + 1)``, by its series to ``t^7`` (``|t| < 0.172``: truncation below ``2^-23``).
    Largest relative error on the sampled uniforms: ``2^-22`` (numpy's float32 log:
    ``2^-21.8``); :func:`groupbias.rank.compiled.race_keys` repeats it operation for
    operation. The result is written over ``u`` (and returned); ``scratch``: three float32
    arrays of ``u``'s size that it may overwrite (default: new ones)."""
    a, b, c = scratch if scratch is not None else [np.empty_like(u) for _ in range(3)]
    ub = u.view(np.int32)
    k = np.subtract(ub, np.int32(LOG32_OFFSET), out=a.view(np.int32))
    k >>= np.int32(23)
    ub -= np.left_shift(k, np.int32(23), out=b.view(np.int32))  # u is now m
    f = np.subtract(u, np.float32(1.0), out=u)
    t = np.add(f, np.float32(2.0), out=c)
    np.divide(f, t, out=t)
    z = np.multiply(t, t, out=f)  # f is no longer needed
    p = np.multiply(z, np.float32(LOG32_ATANH[3]), out=b)
    p += np.float32(LOG32_ATANH[2])
    p *= z
    p += np.float32(LOG32_ATANH[1])
    p *= z
    p += np.float32(LOG32_ATANH[0])
    p *= t
    out = np.multiply(k, np.float32(LN2), out=u, dtype=np.float32, casting="unsafe")
    out += p  # float32(k) (exact) · LN2 + p
    return out


def sample_slots(values: np.ndarray, n_samples: int, draw, *, race: bool, work=None) -> np.ndarray:
    """PL rankings of the rows of ``values`` [m, w] (see :func:`block_values`): the column
    of the item in every slot, int [n_samples, m, w] (slot ``j`` has rank ``j + 1``), drawn
    from the raw 64-bit words ``draw(n)``; ``work``: :class:`StepBuffers` to reuse."""
    m, w = values.shape
    if w > _PACKED_WIDTH or not race:  # float64 keys, argsort
        raw = draw((n_samples, m, w))
        e = -np.log(((raw >> np.uint64(11)) + 0.5) * 2.0**-53)  # exponential
        keys = e * -values if race else np.log(e) + values
        return np.argsort(keys, axis=2, kind="stable")
    keys, low = _sorted_race_keys(values, n_samples, draw, work=work)
    keys &= low
    return keys


def torch_exposure_sums(
    values, valid, race: bool, tab, n_samples: int, seed: int, device, step: int
):
    """:func:`exposure_sums` with torch on ``device`` (``"torch"``: the CPU)."""
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
