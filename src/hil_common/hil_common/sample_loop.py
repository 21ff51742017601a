"""A compiled sample loop in a thread of its own, beside the node's executor (issue 17's loop, docs/performance.md).

A hot path whose samples need no Python runs them in one compiled call that waits on its own rcl wait set
(:mod:`hil_common.rcl_io`: its inputs on subscriptions no executor waits on) and returns only when it must:

* when its **stop guard condition** was triggered (:data:`STOPPED`): the executor's callbacks that touch the state the
  loop changes (a timer, the fault input, a reset service) run inside :meth:`LoopThread.paused`, which triggers it,
  waits for the loop to return, runs the callback, and lets the loop enter again: the loop and those callbacks never
  run at once, and the loop needs no lock of its own;
* with an **event** (a positive code): a sample it does not run (a hold, a rejected input, ...). ``on_event(code)`` then
  runs in the loop's thread, in Python, also never beside a paused callback, and the loop enters again;
* after an **rcl error** (a negative code, ``-(rcl's return)``): the thread ends, and the node's ``check`` timer raises
  it in the executor (:class:`hil_common.errors.StartError`), so the node stops with the error and a non-zero exit;
  so does an exception of ``on_event``.

Why a thread of its own, measured in the twenty-third session: the loop in the thread that spins the node, turning
rclpy's executor between its samples, cost more than the executor's own dispatch (``EventsExecutor.spin_once(0)``:
about 47 us of CPU with nothing to run). In a thread of its own the executor waits in its own thread and costs nothing
between the samples.

Plain threading and rclpy's guard condition: the loop function, its arguments and its events are the caller's.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from typing import Callable

from hil_common.errors import StartError

#: the loop's return: its stop guard condition was triggered (a pause or the stop)
STOPPED = 0
#: how often the node's timer looks whether the loop's thread failed
CHECK_PERIOD_S = 0.1


class LoopThread:
    """Run ``loop(*args)`` (compiled, without the GIL) in a thread of ``node``'s, entering it again each time it
    returns :data:`STOPPED` or an event, until :meth:`stop`.

    ``make_args(stop_guard_pointer)`` gives the loop's arguments, given the address of the rcl guard condition it must
    wait on beside its inputs and return :data:`STOPPED` for. ``on_event(code)`` handles a positive return.
    ``before_entry()``, if given, runs in the loop's thread before each entry (never beside a paused callback): new
    arguments for the loop (the state it steps may have moved), or None to keep them. The loop is loaded (compiled the
    first time) by :meth:`load` or :meth:`start`, on a stop already asked for, before the thread starts.
    """

    def __init__(self, node, loop: Callable, make_args: Callable[[int], tuple], on_event: Callable[[int], None],
                 name: str = 'sample_loop', before_entry: Callable[[], tuple | None] | None = None):
        from rclpy.guard_condition import GuardCondition

        self.node, self.loop, self.on_event, self.before_entry = node, loop, on_event, before_entry
        self.stop_guard = GuardCondition(None, None, context=node.context)     # on no executor: the loop's
        self.args = make_args(int(self.stop_guard.handle.pointer))
        self.name = name
        self._state = threading.Condition()
        self._pauses = 0               # paused() calls waiting or running
        self._inside = False           # the loop (or on_event) runs
        self._stopping = False
        self.error: BaseException | None = None
        self.entries = 0               # times the loop was entered
        self.events = 0
        self._loaded = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._check = node.create_timer(CHECK_PERIOD_S, self.check)

    def load(self) -> None:
        """Load the loop now (compiled the first time, else from Numba's cache), not in its thread: called on its stop
        guard triggered, it must return :data:`STOPPED` at once."""
        self.stop_guard.trigger()
        code = self.loop(*self.args)
        if code != STOPPED:
            raise StartError(f'{self.name}: the loop did not return on its stop guard condition (returned {code})')
        self._loaded = True

    def start(self) -> None:
        """Start the loop's thread (:meth:`load` first, if it was not)."""
        if not self._loaded:
            self.load()
        self._thread.start()

    def check(self) -> None:
        """Raise the loop thread's failure (the node's timer calls this: the error reaches the executor)."""
        if self.error is not None:
            raise StartError(f'{self.name}: the sample loop failed: {self.error}') from self.error

    @contextmanager
    def paused(self):
        """The loop not running (nor ``on_event``) while the block runs: for the executor's callbacks that touch the
        loop's state. In the loop's own thread (``on_event``) the loop is not running anyway: the block just runs."""
        if threading.current_thread() is self._thread:
            yield
            return
        with self._state:
            self._pauses += 1
            self.stop_guard.trigger()
            while self._inside:
                self._state.wait()
        try:
            yield
        finally:
            with self._state:
                self._pauses -= 1
                self._state.notify_all()

    def wrap(self, callback: Callable) -> Callable:
        """``callback`` run :meth:`paused` (for a timer, a subscription or a service of the node)."""
        @functools.wraps(callback)          # keeps the signature rclpy inspects (message, or message and info)
        def paused_callback(*args):
            with self.paused():
                return callback(*args)
        return paused_callback

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Stop the loop and wait for its thread; False if it did not end within ``timeout_s``."""
        with self._state:
            self._stopping = True
            self.stop_guard.trigger()
            self._state.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._check.cancel()
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            while True:
                with self._state:
                    while self._pauses and not self._stopping:
                        self._state.wait()
                    if self._stopping:
                        return
                    self._inside = True
                try:
                    self.entries += 1
                    if self.before_entry is not None:
                        args = self.before_entry()
                        if args is not None:
                            self.args = args
                    code = self.loop(*self.args)
                    if code < 0:
                        raise StartError(f'rcl error {-code}')
                    if code > STOPPED:
                        self.events += 1
                        self.on_event(code)
                finally:
                    with self._state:
                        self._inside = False
                        self._state.notify_all()
        except BaseException as exc:     # noqa: BLE001 - handed to the executor by check()
            self.error = exc
