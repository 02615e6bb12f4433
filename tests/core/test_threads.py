"""groupbias.core.threads: calls in parallel on kept threads, and the switch interval."""

import sys
import threading
import time

import pytest

from groupbias.core.threads import SHORT_SWITCH_INTERVAL, in_parallel, short_switch_interval


def test_in_parallel_returns_results_in_order_and_runs_the_first_call_here():
    here = threading.get_ident()
    calls = [lambda i=i: (i, threading.get_ident()) for i in range(4)]
    out = in_parallel(calls)
    assert [i for i, _ in out] == [0, 1, 2, 3]
    assert out[0][1] == here
    assert all(t != here for _, t in out[1:])


def test_in_parallel_runs_the_calls_at_the_same_time():
    """Two calls that each wait for the other end only if they run together."""
    barrier = threading.Barrier(2, timeout=10)
    assert in_parallel([barrier.wait, barrier.wait]) is not None


def test_in_parallel_waits_for_every_call_before_raising():
    ended = []

    def slow():
        time.sleep(0.05)
        ended.append("slow")
        return 1

    def failing():
        raise ValueError("first call")

    with pytest.raises(ValueError, match="first call"):
        in_parallel([failing, slow])
    assert ended == ["slow"]  # the pool's call had ended when the error came out


def test_an_error_of_a_pool_call_is_raised():
    def failing():
        raise KeyError("second")

    with pytest.raises(KeyError, match="second"):
        in_parallel([lambda: 0, failing])


def test_in_parallel_inside_a_pool_call_runs_its_calls_in_turn():
    """A call on a pool thread that asks for more parallel calls gets them one after the
    other on its own thread (the pool's threads could all be waiting: no deadlock)."""

    def inner():
        me = threading.get_ident()
        return [t == me for t in in_parallel([threading.get_ident, threading.get_ident])]

    out = in_parallel([lambda: None, inner, inner])
    assert out[1:] == [[True, True], [True, True]]


def test_short_switch_interval_sets_and_puts_back_the_interval():
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.004)
        with short_switch_interval():
            assert sys.getswitchinterval() == pytest.approx(SHORT_SWITCH_INTERVAL)
            with short_switch_interval():  # nested: still short, put back only at the end
                pass
            assert sys.getswitchinterval() == pytest.approx(SHORT_SWITCH_INTERVAL)
        assert sys.getswitchinterval() == pytest.approx(0.004)
        sys.setswitchinterval(1e-5)  # already shorter: left as it is
        with short_switch_interval():
            assert sys.getswitchinterval() == pytest.approx(1e-5)
        assert sys.getswitchinterval() == pytest.approx(1e-5)
    finally:
        sys.setswitchinterval(before)


def test_overlapping_sections_of_two_threads_put_back_the_first_interval():
    before = sys.getswitchinterval()
    inside, leave = threading.Event(), threading.Event()

    def other():
        with short_switch_interval():
            inside.set()
            leave.wait(10)

    try:
        sys.setswitchinterval(0.003)
        t = threading.Thread(target=other)
        t.start()
        inside.wait(10)
        with short_switch_interval():  # starts while the other thread's section runs
            pass
        assert sys.getswitchinterval() == pytest.approx(SHORT_SWITCH_INTERVAL)
        leave.set()
        t.join(10)
        assert sys.getswitchinterval() == pytest.approx(0.003)
    finally:
        sys.setswitchinterval(before)


def test_a_forked_child_runs_parallel_calls_on_threads_of_its_own():
    """The pool's threads are not copied into a forked child: it makes a pool of its own
    (with the parent's, its calls would wait for ever)."""
    import multiprocessing as mp

    in_parallel([lambda: 0, lambda: 1])  # the parent's pool exists
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(in_parallel, ([_one, _two],)).get(timeout=60)
    assert got == [1, 2]


def _one():
    return 1


def _two():
    return 2


def test_parallel_calls_from_several_threads_at_once_all_end():
    """Threads of the caller that each ask for parallel calls at the same time share the
    kept threads; every call runs once and every caller gets its own results."""
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
            logits, q, samples=50, exact_max=0, seed=seed, threads=2, batch_items=2000
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
