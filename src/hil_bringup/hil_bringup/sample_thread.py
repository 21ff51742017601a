"""What the fused hot paths' sample threads share (rclpy; issue 17): one definition for the client's and the servicer's.

``servicer_hot_path_node.SampleThread`` and ``client_hot_path_node.ClientSampleThread`` each run their node's samples
in a compiled loop in a thread of the node (:class:`hil_common.sample_loop.LoopThread`). :class:`CompiledSampleThread`
is what they have in common: the wait set the loop waits on (its input subscription, no executor's, and the loop's
stop guard condition), the lab's and the node's clocks, under ``use_sim_time`` the loop's own ``/clock`` subscription
and wait (``servicer_sample_loop._sim_time``) and the node's time as the loop reads it (:meth:`clock_ns`), the events'
and entries' Python (counted, timed), the stop and its line, the release of the rcl objects. A subclass makes its
loop's arguments (:meth:`arguments`), names its counts (:meth:`loop_counts`) and frees what it adds
(:meth:`release`).
"""

from __future__ import annotations

import re
import time
from typing import Callable

import numpy as np

from hil_bringup import servicer_sample_loop as sl
from hil_common import rcl_io
from hil_common.errors import StartError
from hil_common.lab_clock import uses_sim_time
from hil_common.polled import PolledSubscription
from hil_common.sample_loop import LoopThread


class CompiledSampleThread:
    """The shared part of a hot path's sample thread on ``node`` (whose ``on_loop_event(code)`` handles the loop's
    events and ``loop_arguments()`` runs before each entry), named ``name``, its loop waiting on ``input_handle`` (an
    rclpy subscription handle no executor waits on); ``t0_ns``: the node's start on its clock (``clocks[C_T0]``).
    A subclass builds its own part, then calls :meth:`start_loop`."""

    def __init__(self, node, name: str, events: dict[int, str], input_handle, t0_ns: int = 0):
        from rclpy.clock import Clock, ClockType
        from rosgraph_msgs.msg import Clock as ClockMessage

        self.node, self.name = node, name
        self._input_pointer = int(input_handle.pointer)
        self.wait_set = rcl_io.WaitSet(node.context, 1, 1)
        # the lab's clock (the steady one on the wall clock; under use_sim_time it times the wait for a /clock only)
        # and the node's (ROS time)
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.sim = uses_sim_time(node)
        self._node_clock = node.get_clock().handle
        self.clocks = np.array([int(self._steady.handle.pointer), int(self._node_clock.pointer), int(t0_ns),
                                int(self.sim)], dtype=np.int64)
        # under use_sim_time the twin's /clock, taken by the loop before each sample (servicer_sample_loop._sim_time;
        # best effort, as rclpy's time source reads it: it takes from any /clock writer)
        self.newest = np.zeros(sl.N_SIM, dtype=np.int64)
        self.clock_in = PolledSubscription(node, ClockMessage, '/clock', 10, raw=True, best_effort=True) \
            if self.sim else None
        self.clock_wait_set = rcl_io.WaitSet(node.context, 1, 1) if self.sim else None
        self._clock_message = rcl_io.SerializedMessage()
        self._clock_scratch = np.zeros(1, dtype=np.int64)
        self.clock_ns()                 # (its compiled call loaded now, not in a callback)
        self.events = events
        self.counts = dict.fromkeys(events.values(), 0)
        self._stopped = False
        self.python_s = 0.0             # CPU time of the thread's Python: the events and the entries
        self.thread: LoopThread | None = None

    def start_loop(self, loop: Callable) -> None:
        """The loop's thread made and its compiled loop loaded (compiled the first time), not in the thread."""
        self.thread = LoopThread(self.node, loop, self._first_arguments, self._on_event, self.name,
                                 before_entry=self._before_entry)
        self.thread.load()

    def _first_arguments(self, stop_guard: int) -> tuple:
        self.waiting = (self.wait_set.words, np.array([self._input_pointer], dtype=np.int64),
                        np.array([stop_guard], dtype=np.int64), self.wait_set.ready, 200_000_000)
        # on the wall clock the loop reads none of these (arrays of the same types: one compiled loop for both)
        clock_in = np.array([int(self.clock_in.handle.pointer) if self.sim else 0], dtype=np.int64)
        words = self.clock_wait_set.words if self.sim else np.zeros_like(self.wait_set.words)
        self.sim_args = (clock_in, self._clock_message.words, np.zeros(64, dtype=np.uint64), self.newest, words,
                         clock_in, np.array([stop_guard], dtype=np.int64), np.zeros(2, dtype=np.int64))
        return self.arguments(None)

    def arguments(self, state) -> tuple:
        """The loop's arguments on ``state`` (None: not entered). The subclass's."""
        raise NotImplementedError

    def loop_counts(self) -> str:
        """The loop's counts for the stop line. The subclass's."""
        raise NotImplementedError

    def clock_ns(self) -> int:
        """The node's clock [ns] as the loop reads it under ``use_sim_time`` (``servicer_sample_loop.sim_clock_ns``: the
        newest of the ROS clock and the ``/clock`` the loop took; the node's Python reads it so). Raises
        :class:`hil_common.errors.StartError` after an rcl error."""
        ns = int(sl.sim_clock_ns(self.clocks[sl.C_NODE], self.newest, self._clock_scratch))
        if ns < 0:
            raise StartError(f'{self.name}: rcl could not read the node\'s clock')
        return ns

    def _on_event(self, code: int) -> None:
        t0 = time.thread_time()
        self.counts[self.events.get(code, str(code))] += 1
        try:
            self.node.on_loop_event(code)
        finally:
            self.python_s += time.thread_time() - t0

    def _before_entry(self) -> tuple | None:
        t0 = time.thread_time()
        try:
            return self.node.loop_arguments()
        finally:
            self.python_s += time.thread_time() - t0

    def after_stop(self) -> None:
        """What the subclass does once its loop stopped (in the stopping thread)."""

    def stop(self) -> str:
        """Stop the loop (once); its counts, as the node's stop line gives them."""
        if not self._stopped:
            self._stopped = True
            if not self.thread.stop():
                self.node.get_logger().error(f'{self.name}: the compiled loop did not stop')
            if self.thread.error is not None:
                self.node.get_logger().error(f'{self.name}: the compiled loop ended: {self.thread.error}')
            self.after_stop()
        newest = self.newest
        events = ', '.join(f'{name} {n}' for name, n in self.counts.items() if n)
        clock = '' if not self.sim else (
            f', /clock: {int(newest[sl.S_WAITED])} samples waited for one as new as their stamp, '
            f'{int(newest[sl.S_LATE])} of them in vain, {int(newest[sl.S_MALFORMED])} malformed')
        return (f'; in a thread: {self.loop_counts()}, entered {self.thread.entries} times, events: {events or "none"}, '
                f'{self.python_s * 1e3:.0f} ms of CPU in its Python{clock}')

    def release(self) -> bool:
        """The loop's rcl objects freed (after :meth:`stop`, if its thread ended): False if it had not."""
        if self.thread._thread.is_alive():
            return False
        self.wait_set.release()
        self._clock_message.release()
        if self.sim:
            self.clock_wait_set.release()
            self.clock_in.destroy()
        return True


def counts_reader(samples: str) -> Callable[[str], tuple[int, int, int, int, int] | None]:
    """A reader of a hot path node's line at its stop (``<samples>: N, M of them in one compiled call ... in a
    thread: K samples ... commands: C, held H``): ``(N, M, K, C, H)`` (K 0 without the thread), or None without that
    line (the node did not stop cleanly)."""
    line = re.compile(re.escape(samples) + r': (\d+), (\d+) of them in one compiled call'
                      r'(?:.*in a thread: (\d+) samples)?.*commands: (\d+), held (\d+)')

    def read(log: str) -> tuple[int, int, int, int, int] | None:
        match = line.search(log)
        return None if match is None else tuple(int(v or 0) for v in match.groups())
    return read
