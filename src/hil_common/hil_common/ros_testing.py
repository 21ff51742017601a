"""Helpers for tests and demos that drive real nodes over DDS (loopback profile).

* :func:`node_executable` finds an executable the way launch_ros does
  (``<prefix>/lib/<package>/<executable>``);
* :func:`start_node` / :func:`stop_process` run it as a subprocess with ROS arguments and
  collect its output on exit (SIGTERM, then SIGKILL after a timeout). A started node dies
  with its parent: it gets SIGTERM when the thread that started it dies (Linux
  ``PR_SET_PDEATHSIG``, so start nodes from a thread that lives as long as they should, e.g.
  the main thread), even by SIGKILL, and it runs in its own process group, so the terminal's
  Ctrl-C reaches only the parent, which stops its nodes in order;
* :func:`stop_processes` stops a set of them (SIGINT as launch does, then SIGTERM, SIGKILL),
  and :func:`signals_deferred` holds SIGINT/SIGTERM while a shutdown runs, so another
  Ctrl-C cannot cut it short and leave nodes running;
* :func:`test_node` is a context manager giving an rclpy node and executor in their own
  context, torn down cleanly;
* :func:`spin_until` spins until a predicate holds or a timeout passes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from hil_common.errors import ConfigError

PR_SET_PDEATHSIG = 1          # linux/prctl.h
_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM):
    """A ``preexec_fn``: the child gets ``sig`` when its parent dies (also when the parent died first).

    It also gives the child the default SIGINT: a demo started as a background job (``./dev demo &``
    from a script, ``nohup``) has SIGINT ignored, which its children would inherit, and a node that
    ignores SIGINT does not stop when the demo asks it to (``stop_process``): it would be killed
    after the timeout, its recording unfinished.
    """
    libc = _libc()                # loaded before the fork: the child only calls into it

    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent_pid:    # the parent died between fork and prctl
            os.kill(os.getpid(), sig)
    return preexec


def node_executable(package: str, executable: str) -> Path:
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package)) / 'lib' / package / executable


def start_node(package: str, executable: str, *params: str, capture: bool = True,
               ros_args: tuple[str, ...] = (), log=None) -> subprocess.Popen:
    """Start ``<prefix>/lib/<package>/<executable> --ros-args -p <param> ... <ros_args>``.

    ``ros_args`` are passed as they are, e.g. ``('-r', '__ns:=/client')``. ``log``: an open
    file that receives the node's output (for long runs, where a pipe nobody reads would fill
    and block the node); otherwise ``capture`` pipes it for :func:`stop_process`.
    """
    args = [str(node_executable(package, executable)), '--ros-args']
    for p in params:
        args += ['-p', p]
    args += list(ros_args)
    out = log if log is not None else (subprocess.PIPE if capture else subprocess.DEVNULL)
    return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
                            preexec_fn=die_with_parent(os.getpid()), process_group=0)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL whatever is left in the node's process group (processes it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def stop_process(proc: subprocess.Popen, timeout_s: float = 10.0) -> str:
    """Terminate, wait, kill if needed; return what it printed."""
    with signals_deferred():
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        _kill_group(proc)
    return out or ''


@contextlib.contextmanager
def signals_deferred(signals=(signal.SIGINT, signal.SIGTERM)):
    """Hold ``signals`` while the body (a shutdown that must finish) runs.

    A held signal is not delivered afterwards (the process is already shutting down, and what
    follows, e.g. closing a bag, must run too); the body gets the list of held signals. Only
    the main thread can change handlers; elsewhere the body runs unprotected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    received: list[int] = []
    previous = {}
    for sig in signals:
        previous[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if received:
            print(f'[shutdown] {len(received)} signal(s) held until the shutdown finished', file=sys.stderr, flush=True)


def stop_processes(procs, timeout_s: float = 10.0, first=signal.SIGINT) -> None:
    """Stop every process: ``first`` (SIGINT, as launch does) to all, then SIGTERM and SIGKILL to
    stragglers, and SIGKILL to what is left of their process groups. SIGINT/SIGTERM to this
    process are held until all are stopped (:func:`signals_deferred`)."""
    procs = list(procs)
    with signals_deferred():
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(first)
        deadline = time.monotonic() + timeout_s
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=3.0)
                except subprocess.TimeoutExpired:
                    dump_stacks(proc)
                    proc.kill()
                    proc.wait()
            _kill_group(proc)


#: The signal on which a node (:func:`hil_common.ros_main.run_node`) prints every thread's stack.
STACK_DUMP_SIGNAL = signal.SIGUSR1


def dump_stacks(proc: subprocess.Popen, wait_s: float = 1.0) -> None:
    """Before a hung process is killed: ask it for every thread's Python stack (into its log), so
    the report says where it hung. A process that did not register the signal dies of it, which is
    what was about to happen anyway."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(STACK_DUMP_SIGNAL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)


#: the executors a test's or bench's node can spin (``test_node``'s ``executor_kind``)
EXECUTOR_KINDS = ('waitset', 'single', 'events')


def executor_maker(kind: str):
    """The executor class (or rclpy's factory) of ``kind``: 'waitset' our
    :class:`hil_common.wait_set_executor.WaitSetExecutor`, 'single' rclpy's ``SingleThreadedExecutor``, 'events'
    rclpy's ``EventsExecutor``; called with ``context=``."""
    if kind == 'events':
        from rclpy.experimental import EventsExecutor

        return EventsExecutor
    if kind == 'single':
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor
    if kind == 'waitset':
        from hil_common.wait_set_executor import WaitSetExecutor

        return WaitSetExecutor
    raise ConfigError(f'executor kind must be one of {", ".join(EXECUTOR_KINDS)}, got {kind!r}')


@contextlib.contextmanager
def test_node(name: str, executor_kind: str = 'waitset'):
    """``with test_node('probe') as (node, executor): ...`` in a private rclpy context.

    ``executor_kind`` 'waitset' (the default): :class:`hil_common.wait_set_executor.WaitSetExecutor`, an rcl wait
    set as rclpy's ``SingleThreadedExecutor`` waits on (so its timers follow ``/clock``), kept between waits: the
    demos' and tests' nodes that pace simulated-clock runs (pushes, the master's pull) by their own ``spin_once``
    loop need such an executor (with the events executor two such tests failed in one run); with
    ``HIL_EXECUTOR=single``, rclpy's ``SingleThreadedExecutor`` instead. 'single': rclpy's
    ``SingleThreadedExecutor``. 'events': rclpy's ``EventsExecutor``, about a quarter of the CPU per message
    (:func:`hil_common.ros_main.node_executor`), for a node that only watches and records a graph."""
    import rclpy

    from hil_common.ros_main import executor_choice

    if executor_kind == 'waitset' and executor_choice() == 'single':
        executor_kind = 'single'
    make = executor_maker(executor_kind)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(name, context=ctx)
    executor = make(context=ctx)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        ctx.try_shutdown()


test_node.__test__ = False  # not a pytest test, despite its name


def spin_until(executor, predicate, timeout_s: float, period_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=period_s)
        if predicate():
            return True
    return False


#: Overload thresholds for the stall tests: a 0.6 s stall is twice the hold threshold, and a busy machine's
#: timer jitter (tens of ms beside a running graph) still counts as on time, so the node can recover.
STALL_THRESHOLDS = {'overload_warn_late_s': 0.1, 'overload_hold_late_s': 0.3, 'overload_mean_late_s': 0.1}


def stall_node(proc: subprocess.Popen, executor, statuses: list, seconds: float = 0.6):
    """What a saturated machine does to a node: its process gets no CPU for ``seconds`` (SIGSTOP). ``statuses``
    collects ``(level, message, values)`` of its overload status; returns the first ERROR one after the stall."""
    import time

    n = len(statuses)
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(seconds)
    os.kill(proc.pid, signal.SIGCONT)
    assert spin_until(executor, lambda: any(s[0] == 2 for s in statuses[n:]), 5.0), statuses[-3:]
    return next(s for s in statuses[n:] if s[0] == 2)


class FreeTwinClock:
    """A probe's stand-in for the lab twin stepping on its own (before a robot's first command it waits for nobody):
    :meth:`step` moves the simulated time on by ``period_s`` and returns it as a ``builtin_interfaces/Time`` for the
    step's stamps; the caller publishes the step's measurements with it, then :meth:`publish` sends ``/clock``
    (``clock_topic``, remappable) as the twin does."""

    def __init__(self, node, period_s: float, start_s: float = 10.0, clock_topic: str = '/clock'):
        from rosgraph_msgs.msg import Clock

        self.period_s, self.t = float(period_s), float(start_s)
        self.msg = Clock()
        self.pub = node.create_publisher(Clock, clock_topic, 10)

    def step(self):
        self.t += self.period_s
        sec = int(self.t)
        self.msg.clock.sec, self.msg.clock.nanosec = sec, int(round((self.t - sec) * 1e9))
        return self.msg.clock

    def publish(self) -> None:
        self.pub.publish(self.msg)


def stall_while_the_twin_steps(proc: subprocess.Popen, executor, twin: FreeTwinClock, outputs: list, more: int,
                               sim_seconds: float = 0.3, times: int = 2) -> None:
    """A node held up while the twin steps on (a busy start-up): its process stopped (SIGSTOP) while the probe's
    ``twin`` steps ``sim_seconds`` of simulated time on (its executor spun: judged on the simulated timeline, however
    slowly a busy machine runs the probe), ``times`` times; after each, ``more`` new ``outputs`` (the node's
    commands) must come."""
    for _ in range(times):
        os.kill(proc.pid, signal.SIGSTOP)
        t_stop = twin.t
        try:
            went_on = spin_until(executor, lambda: twin.t - t_stop >= sim_seconds, 30.0)
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert went_on, (twin.t, t_stop)
        n = len(outputs)
        assert spin_until(executor, lambda: len(outputs) > n + more, 10.0), (proc.poll(), len(outputs) - n)


def throttle_node(proc: subprocess.Popen, stall_s: float, run_s: float, seconds: float):
    """What a machine busy with other work does to a node: its process gets no CPU for ``stall_s`` of
    every ``stall_s + run_s`` (SIGSTOP, SIGCONT), for ``seconds``, in a thread (the caller spins its
    executor meanwhile). Returns the thread; the process runs again when it ends."""
    import threading
    import time

    def send(sig) -> None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:       # it ended meanwhile (e.g. a failed test's teardown stopped it)
            pass

    def duty():
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end and proc.poll() is None:
                send(signal.SIGSTOP)
                time.sleep(stall_s)
                send(signal.SIGCONT)
                time.sleep(run_s)
        finally:
            if proc.poll() is None:
                send(signal.SIGCONT)

    thread = threading.Thread(target=duty, daemon=True)
    thread.start()
    return thread
