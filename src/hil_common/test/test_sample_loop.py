"""hil_common.sample_loop on loopback DDS: a compiled loop in a thread of its own takes every sample sent, the node's
callbacks that touch its state run only while it is paused (none of its samples lost meanwhile), its events run in
Python, it stops on request, and a failure of its thread reaches the executor as an error."""

import time

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from numba import njit

from hil_common import rcl_io
from hil_common.errors import StartError
from hil_common.polled import PolledSubscription
from hil_common.ros_testing import spin_until, test_node
from hil_common.sample_loop import STOPPED, LoopThread

EVENT = 1


@njit(cache=True, nogil=True)
def echo_loop(wait_set, waited, guards, ready, wrist, total, count, work):
    """Until the stop guard: every wrench taken adds its force x to ``total[0]`` and one to ``count[0]``, then works
    ``work[0]`` iterations (a sample's computation: the loop is mostly inside a sample, where a callback that did not
    pause it would run beside it); a take with a force y of 7 returns :data:`EVENT` (after its other rows)."""
    message, info, expected, wrenches, stamps, frames, frame_lens, flags, scratch = wrist
    while True:
        ret = rcl_io.wait(wait_set, waited, guards, 100_000_000, ready)
        if ret == rcl_io.RCL_RET_TIMEOUT:
            continue
        if ret != rcl_io.RCL_RET_OK:
            return -ret
        if ready[waited.shape[0]]:
            return STOPPED
        n = rcl_io.take_wrenches(waited[0], message, info, expected, wrenches, stamps, frames, frame_lens, flags,
                                 scratch)
        if n < 0:
            return n
        event = False
        for k in range(n):
            count[0] += 1
            total[0] += wrenches[k, 0]
            event = event or wrenches[k, 1] == 7.0
            x = 0.0
            for i in range(work[0]):
                x += np.sqrt(i + x * 1e-9)
            work[1] = np.int64(x) & 1
        if event:
            return EVENT


@pytest.fixture(params=['single', 'waitset'])
def node(request):
    """A node on loopback and its executor (``hil_common.ros_testing.test_node``: rclpy's SingleThreadedExecutor, our
    WaitSetExecutor with ``waitset``, or rclpy's EventsExecutor with ``events``)."""
    with test_node('sample_loop_test', request.param) as (node, executor):
        yield node, executor


def test_the_loop_takes_every_sample_and_the_callbacks_run_only_while_it_is_paused(node):
    node, executor = node
    wrist = PolledSubscription(node, WrenchStamped, 'sample_loop/wrist', 50)
    stream = rcl_io.WrenchStream(wrist.handle)
    wait_set = rcl_io.WaitSet(node.context, 1, 1)
    total, count = np.zeros(1), np.zeros(1, dtype=np.int64)
    work = np.array([300_000, 0], dtype=np.int64)       # about 1 ms of a sample's work (one core of this machine)

    def make_args(stop_guard):
        return (wait_set.words, np.array([int(wrist.handle.pointer)], dtype=np.int64),
                np.array([stop_guard], dtype=np.int64), wait_set.ready,
                (stream._message.words, stream._info, stream._expected, stream.wrench, stream.stamps, stream.frames,
                 stream.frame_lens, stream.flags, np.zeros(8, dtype=np.uint8)), total, count, work)
    events = []

    def on_event(code):
        with loop.paused():              # in the loop's own thread: it just runs (no deadlock)
            events.append((code, int(count[0])))
    loop = LoopThread(node, echo_loop, make_args, on_event)
    ran, changed_while_paused = [], []

    def reset_like():           # a callback that reads and writes the loop's state, as a reset service does
        c0, t0 = int(count[0]), float(total[0])
        time.sleep(0.001)
        if int(count[0]) != c0 or float(total[0]) != t0:
            changed_while_paused.append((c0, int(count[0])))
        total[0] += 1000.0
        ran.append(c0)
    node.create_timer(0.005, loop.wrap(reset_like))
    pub = node.create_publisher(WrenchStamped, 'sample_loop/wrist', 50)
    deadline = time.monotonic() + 10.0
    while wrist.get_publisher_count() == 0 or pub.get_subscription_count() == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    loop.start()
    sent = 400

    def publish(k):
        m = WrenchStamped()
        m.wrench.force.x, m.wrench.force.y = float(k), 7.0 if k % 50 == 49 else 0.0
        pub.publish(m)
    k = 0
    next_s = time.monotonic()
    deadline = next_s + 60.0
    while k < sent:     # 500 a second, at most 20 ahead of the loop (a slow machine loses none), the executor (and the
        assert time.monotonic() < deadline, (k, int(count[0]), loop.error)  # paused callback) spun between them
        if time.monotonic() >= next_s and k - count[0] < 20:
            publish(k)
            k += 1
            next_s += 0.002
        executor.spin_once(timeout_sec=min(0.002, max(0.0, next_s - time.monotonic())))
    assert spin_until(executor, lambda: count[0] == sent, 20.0), (int(count[0]), loop.error)
    assert loop.stop()
    assert loop.error is None
    assert total[0] == sum(range(sent)) + 1000.0 * len(ran)      # every sample once, every callback's write kept
    assert not changed_while_paused, changed_while_paused[:5]
    assert len(ran) >= 50, len(ran)                               # the callbacks ran beside the samples
    assert len(events) == 8 and all(code == 1 for code, _ in events), events
    assert [c for _, c in events] == sorted(c for _, c in events)
    assert loop.entries > len(ran) / 2                              # entered again after the pauses
    stream.release()
    wait_set.release()
    wrist.destroy()


@pytest.mark.parametrize('node', ['single', 'events'], indirect=True)
@pytest.mark.parametrize('fails_in', ['loop', 'on_event'])
def test_a_failure_of_the_loops_thread_is_raised_in_the_executor(node, fails_in):
    """An rcl error the loop returns, or an exception of ``on_event``, ends its thread; the node's check timer
    raises it (StartError) where the executor spins (both of rclpy's executors ours use), so the node does not run
    on without its loop."""
    node, executor = node
    returns = iter([STOPPED, -7] if fails_in == 'loop' else [STOPPED, EVENT])

    def loop():
        return next(returns)

    def on_event(code):
        raise ValueError(f'event {code} not handled')
    thread = LoopThread(node, loop, lambda guard: (), on_event)
    thread.start()
    with pytest.raises(StartError, match='rcl error 7' if fails_in == 'loop' else 'event 1 not handled'):
        spin_until(executor, lambda: False, 5.0)
    assert thread.stop()


def test_before_entry_gives_each_entry_its_arguments_in_the_loops_thread_and_never_beside_a_paused_callback(node):
    """``before_entry`` runs in the loop's thread before every entry, the first included: the arguments it returns
    are the entry's, None keeps the last ones; it never runs while a paused callback does (it reads the state such a
    callback changes, as the servicer's node makes its loop's arguments from the rule's state)."""
    import threading

    node, executor = node
    codes = iter([STOPPED] + [EVENT] * 5 + [STOPPED] * 1000)    # the load's entry, five events, then pauses
    seen, made, inside_callback, overlaps, threads = [], [], [False], [], set()

    def loop(tag):
        seen.append(tag)
        if len(seen) > 6:
            time.sleep(0.002)       # waiting, as a loop between samples (the pauses' guard ends the wait)
        return next(codes)

    def before_entry():
        threads.add(threading.current_thread().name)
        if inside_callback[0]:
            overlaps.append(len(seen))
        made.append(len(made))
        return None if len(made) % 2 == 0 else (f'args {len(made)}',)      # every other entry keeps the last ones
    thread = LoopThread(node, loop, lambda guard: ('args 0',), lambda code: None, name='before_entry_loop',
                        before_entry=before_entry)

    def callback():
        with thread.paused():
            inside_callback[0] = True
            time.sleep(0.001)
            inside_callback[0] = False
    node.create_timer(0.003, callback)
    thread.start()
    assert spin_until(executor, lambda: len(made) >= 40, 20.0), len(made)
    assert thread.stop()
    assert thread.error is None
    assert seen[0] == 'args 0'                          # the load's entry: make_args' arguments, no before_entry
    entries = seen[1:len(made) + 1]
    # entry k (1-based) ran on what before_entry gave last: itself when k is odd, the entry before's when even
    assert entries == [f'args {k if k % 2 else k - 1}' for k in range(1, len(entries) + 1)], entries[:10]
    assert threads == {'before_entry_loop'}, threads
    assert not overlaps, overlaps
