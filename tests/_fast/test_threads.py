"""groupbias._fast.threads: calls in parallel on threads started for one call, from several
callers at once; the policy sampler's exposures keep their bits when computed at once."""

from __future__ import annotations

import threading

import pytest

from groupbias._fast.threads import in_parallel

pytestmark = pytest.mark.reproducibility


def test_parallel_calls_from_several_threads_at_once_all_end():
    """Threads of the caller that each ask for parallel calls at the same time: every call
    runs once and every caller gets its own results."""
    start = threading.Barrier(4, timeout=10)
    results: dict[int, list] = {}

    def caller(i: int) -> None:
        start.wait()
        results[i] = in_parallel([lambda j=j: (i, j) for j in range(3)])

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert results == {i: [(i, 0), (i, 1), (i, 2)] for i in range(4)}


def test_policy_exposures_computed_by_two_threads_at_once_keep_their_bits():
    import numpy as np

    from groupbias.rank.plackett_luce import PlackettLuce

    rng = np.random.default_rng(3)
    q = np.arange(0, 121 * 40, 121)
    logits = rng.normal(size=int(q[-1]))

    def exposure(seed: int) -> np.ndarray:
        p = PlackettLuce(
            logits, q, samples=50, exact_max=0, seed=seed, workers=2, batch_items=2000
        )  # 8 tasks, taken by the two threads of each call
        return p.expected_exposure().mean

    want = {seed: exposure(seed) for seed in (1, 2)}
    got: dict[int, np.ndarray] = {}
    start = threading.Barrier(2, timeout=10)

    def run(seed: int) -> None:
        start.wait()
        got[seed] = exposure(seed)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for seed in (1, 2):
        np.testing.assert_array_equal(got[seed], want[seed])


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_in_order_keeps_the_order_and_draws_items_lazily(workers):
    """Results come back in the items' order whatever finishes first, and at most
    ``workers`` + 1 items are drawn ahead of the consumer (a buffer it hands back is
    reused)."""
    import time

    from groupbias._fast.threads import in_order

    drawn: list[int] = []

    def items():
        for i in range(10):
            drawn.append(i)
            yield i

    def work(i: int) -> int:
        time.sleep(0.002 * (10 - i))  # later items finish first
        return i * i

    got = []
    for item, result in in_order(work, items(), workers=workers):
        assert len(drawn) - item <= (1 if workers == 1 else workers + 1)
        got.append((item, result()))
    assert got == [(i, i * i) for i in range(10)]


def test_in_order_hands_each_error_to_its_item_and_joins_on_close():
    from groupbias._fast.threads import in_order

    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i == 2:
            raise ValueError("bad item 2")
        return i

    before = threading.active_count()
    gen = in_order(work, range(100), workers=2)
    assert [r() for _, r in (next(gen), next(gen))] == [0, 1]
    _, result = next(gen)
    with pytest.raises(ValueError, match="bad item 2"):
        result()
    gen.close()  # early stop: the pool is shut down, nothing more is drawn
    assert len(started) <= 6
    assert threading.active_count() == before


def test_as_they_finish_yields_in_completion_order_and_drops_the_queue_on_close():
    """Results come as calls end (the slow first item last); closing early returns at once,
    the queued calls never start and only those in flight finish."""
    import time

    from groupbias._fast.threads import as_they_finish

    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        time.sleep(1.0 if i == 0 else 0.01)
        return i

    order = [item for item, result in as_they_finish(work, range(4), workers=4) if result() >= 0]
    assert order[-1] == 0 and sorted(order) == [0, 1, 2, 3]

    def slow(i: int) -> int:  # item 1 ends at once, the others take a second
        started.append(i)
        time.sleep(0.0 if i == 1 else 1.0)
        return i

    started.clear()
    gen = as_they_finish(slow, range(50), workers=2)
    first, _ = next(gen)
    t0 = time.monotonic()
    gen.close()
    assert first == 1 and time.monotonic() - t0 < 0.5  # no wait for the calls in flight
    time.sleep(1.5)
    assert {0, 1} <= set(started) <= {0, 1, 2}  # the queue was dropped: 3..49 never started
