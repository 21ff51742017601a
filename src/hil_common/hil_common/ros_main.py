"""The one ``main`` of every node: network profile, init, parameter errors, clean shutdown.

``run_node(factory, name)`` applies the loopback-only DDS profile (unless
``HIL_NETWORK=lab``) before ``rclpy.init``, builds the node with ``factory()``, turns a
:class:`hil_common.params.ParameterError` into a one-line message naming the parameter
and exit code 2, runs ``start(node)`` if given (e.g. lifecycle autostart; a false result
ends with exit code 1), spins on ``executor_factory()`` (default :func:`node_executor`), and on
Ctrl-C or SIGTERM calls ``node.close()`` if the node has one and ends the process (its DDS
entities are not destroyed one by one: Fast DDS sometimes hung there; the process's end frees them). An error
raised by a callback after the signal already shut the context down is part of the
shutdown, not a crash, and is not reported. A Ctrl-C at any moment, also while the node is
being built or shut down, ends with exit code 0 and no traceback (also one that lands while
rclpy converts a received message, see :func:`hil_common.interrupts.interrupt_received`) (imports before ``run_node``
are covered by :func:`hil_common.interrupts.quiet_interrupts` in the package ``__init__``).
"""

from __future__ import annotations

import faulthandler
import functools
import os
import signal
import sys
import threading
from typing import Callable

from hil_common.errors import ConfigError
from hil_common.lab_clock import uses_sim_time
from hil_common.interrupts import Interrupted, interrupt_received, note_interrupts_from_now_on
from hil_common.kernel_loads import KernelLoads, report as report_kernel_loads
from hil_common.network import apply_network_profile, describe
from hil_common.params import ParameterError

INTERRUPTS = (KeyboardInterrupt, Interrupted)
#: Longest wait of a node's executor before it looks whether a signal shut its context down.
IDLE_WAKE_S = 0.5


def _ignore_sigint() -> None:
    """While shutting down, a second Ctrl-C must not interrupt the clean-up."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


#: Consecutive failed takes after which the node gives up (see run_node).
MAX_FAILED_TAKES = 100


def failed_take(exc: BaseException) -> bool:
    """Whether ``exc`` is rclpy failing to convert a message it took from a subscription."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return '_take_subscription' in frames and 'to Python object' in str(exc)


def failed_conversion(exc: BaseException | None) -> bool:
    """Whether ``exc`` is pybind11 failing to convert a message for rclpy (any executor; the events
    executor takes in C++, so no Python frame names the take)."""
    return isinstance(exc, RuntimeError) and 'to Python object' in str(exc)


#: How long a failed conversion waits for the shutdown that may have caused it [s].
SHUTDOWN_GRACE_S = 1.0


def shutting_down(rclpy, wait: bool, poll_s: float = 0.01) -> bool:
    """Whether the process is being shut down (a signal noted, or the context down); with ``wait``,
    whether that happens within :data:`SHUTDOWN_GRACE_S`."""
    import time

    deadline = time.monotonic() + (SHUTDOWN_GRACE_S if wait else 0.0)
    while True:
        if not rclpy.ok() or interrupt_received():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


def guarded(tick, context):
    """Run ``tick()``; an exception while ``context`` is shutting down (a publish racing the signal that
    shut it down) is ignored: that is the shutdown, not a crash."""
    try:
        tick()
    except Exception:  # noqa: BLE001 - re-raised unless the context is already shut down
        if context.ok():
            raise


def _shutdown_tolerant(callback, context):
    @functools.wraps(callback)          # keeps the signature rclpy inspects (message, or message and info)
    def wrapper(*args):
        guarded(lambda: callback(*args), context)     # timer and subscription callbacks return nothing
    wrapper.shutdown_tolerant = True
    return wrapper


def tolerate_shutdown(node) -> None:
    """Wrap the node's timer and subscription callbacks as :func:`guarded` runs a tick.

    rclpy's handler shuts the context down on SIGINT or SIGTERM from its own thread, while a callback
    may be running. That callback's next publish then fails ("publisher's context is invalid"), and
    the events executor logged it as ``[FATAL] Exception in 'timers' callback`` with the callback's
    frames at every stop of a launch graph, though the node exited 0. Callbacks created later (while
    spinning) are not wrapped.
    """
    for entity in (*node.timers, *node.subscriptions):
        if not getattr(entity.callback, 'shutdown_tolerant', False):
            entity.callback = _shutdown_tolerant(entity.callback, node.context)


def _destroy(node) -> None:
    close = getattr(node, 'close', None)
    if callable(close):
        close()
    node.destroy_node()


#: ``HIL_EXECUTOR=single`` makes every process of ours spin rclpy's SingleThreadedExecutor (the fallback
#: if the events executor or our wait-set executor misbehaves on some install); unset or ``events``:
#: :func:`node_executor` chooses.
EXECUTOR_ENV = 'HIL_EXECUTOR'


def node_executor(node, context=None):
    """The executor a process of ours spins ``node`` with.

    rclpy's ``EventsExecutor`` (C++, ``rclpy.experimental``) costs about a quarter of the CPU per
    message of its ``SingleThreadedExecutor``: 42 against 166 us per message for 20 raw
    subscriptions at 2000 messages/s on this machine (``docs/performance.md``), and a 100 Hz graph
    of ours receives thousands per second. Its timers keep the wall-clock period (p99 4.06 ms
    for 4 ms), but not simulated time: a 100 Hz timer on ``/clock`` fired 142 times per
    simulated second. So a node on the simulated clock (``use_sim_time``) waits on an rcl wait set,
    whose timers follow ``/clock``, as does the node that publishes it (the lab twin, whose barrier
    waits on the stack's answers: with the events executor two twin tests on the simulated clock
    failed in one CI run, a teleop pull recorded 3.58 s long instead of 4 s). That executor is
    :class:`hil_common.wait_set_executor.WaitSetExecutor`, which keeps its wait set between waits
    (rclpy's ``SingleThreadedExecutor`` rebuilds it before every wait: 65-90 % of those nodes' CPU).
    ``HIL_EXECUTOR=single``: rclpy's ``SingleThreadedExecutor`` for every node.
    """
    context = context if context is not None else node.context
    choice = executor_choice()
    if choice == 'single':
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor(context=context)
    if not uses_sim_time(node) and not getattr(node, 'publishes_clock', False):
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:          # an rclpy without it: the portable executor
            pass
        else:
            return EventsExecutor(context=context)
    from hil_common.wait_set_executor import WaitSetExecutor

    return WaitSetExecutor(context=context)


def executor_choice() -> str:
    """``HIL_EXECUTOR``: 'events' (unset: the default, :func:`node_executor` chooses) or 'single'."""
    choice = os.environ.get(EXECUTOR_ENV, 'events')
    if choice not in ('events', 'single'):
        raise ConfigError(f"{EXECUTOR_ENV} must be 'events' or 'single', got {choice!r}")
    return choice


PROFILE_ENV = 'HIL_PROFILE_DIR'


def _start_profile():
    """With ``HIL_PROFILE_DIR`` set, a ``cProfile`` of this node's thread from here to its stop (a measuring aid,
    docs/performance.md: the profiler itself costs about as much again as the profiled Python)."""
    if not os.environ.get(PROFILE_ENV):
        return None
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    return profile


def _dump_profile(profile, name: str) -> None:
    if profile is None:
        return
    profile.disable()
    path = os.path.join(os.environ[PROFILE_ENV], f'{name}.{os.getpid()}.prof')
    try:
        profile.dump_stats(path)
        print(f'{name}: profile written to {path}', file=sys.stderr, flush=True)
    except OSError as exc:
        print(f'{name}: profile not written to {path}: {exc}', file=sys.stderr, flush=True)


def _end_process(code: int) -> None:
    """End the process now with ``code``, its output flushed, and no destructor run: a node's DDS entities are left
    to the process's end (Fast DDS sometimes never returned from deleting them; the peers see the participant
    leave by its lease)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_node(factory: Callable[[], object], name: str, args=None, *,
             executor_factory: Callable[[], object] | None = None,
             start: Callable[[object], bool] | None = None) -> int:
    apply_network_profile()
    # A node that does not stop when asked is sent SIGUSR1 before it is killed
    # (hil_common.ros_testing.dump_stacks): its log then shows where every thread hung.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    import rclpy
    from rclpy.executors import ExternalShutdownException, ShutdownException, SingleThreadedExecutor

    # rclpy's own handlers turn SIGINT and SIGTERM (what a launcher sends) into a context
    # shutdown that wakes the executor, even while it waits with nothing to do. From here on
    # our quiet handler only notes a SIGINT (no exception raised inside rclpy's code).
    note_interrupts_from_now_on()
    rclpy.init(args=args)
    try:
        node = factory()
    except ParameterError as exc:
        print(f'{name}: invalid parameter: {exc}', file=sys.stderr, flush=True)
        # as a node stopped by a signal ends (below): an F/T driver printed its parameter error and had not exited
        # 20 s later, once, in a fresh-clone suite at 4db7b34 (where it hung was not recorded)
        _end_process(2)
    except INTERRUPTS:
        _ignore_sigint()
        rclpy.try_shutdown()
        return 0
    except Exception:  # noqa: BLE001
        # a Ctrl-C while the node was being built: rclpy's handler shut the context down, so
        # creating the next entity failed (RCLError); that is the shutdown, not a crash
        if not interrupt_received() and rclpy.ok():
            raise
        _ignore_sigint()
        rclpy.try_shutdown()
        return 0
    if interrupt_received():         # Ctrl-C while the node was being built
        _ignore_sigint()
        _destroy(node)
        rclpy.try_shutdown()
        return 0
    executor = None
    code = 0
    ended_by_shutdown = False
    profile = _start_profile()
    kernel_loads = None
    try:
        node.get_logger().info(describe())
        tolerate_shutdown(node)
        executor = executor_factory() if executor_factory is not None else node_executor(node)
        executor.add_node(node)
        if start is not None and not start(node):
            code = 1
        else:
            if start is not None:
                tolerate_shutdown(node)      # what start() created (a lifecycle node's configure)
            # With rclpy 7.1.5, executor.spin() of a node with nothing to do sometimes stays in its
            # wait after SIGTERM shut the context down (seen about one time in three; probably the
            # wake-up lands before the shutdown). So the wait looks every IDLE_WAKE_S whether the
            # context is still up (test_ros_main.test_a_mostly_idle_node_stops_promptly_on_sigterm).
            kernel_loads = KernelLoads()       # built and started: a kernel loaded from here on stalls a callback
            failed_takes = 0
            while executor.context.ok():
                try:
                    executor.spin_once(timeout_sec=IDLE_WAKE_S)
                    failed_takes = 0
                except RuntimeError as exc:
                    # rclpy (7.1) under heavy load sometimes fails to convert a taken message
                    # ("Unable to convert call argument '0' to Python object", inside
                    # _take_subscription; also ros/joint_state_publisher#117): that message is lost,
                    # not the node. Logged, and the node goes on; a take that keeps failing ends it.
                    if not failed_take(exc) or not rclpy.ok() or interrupt_received() \
                            or failed_takes >= MAX_FAILED_TAKES:
                        raise
                    failed_takes += 1
                    node.get_logger().error(f'a received message could not be taken and is lost: {exc}')
            ended_by_shutdown = True
    except (*INTERRUPTS, ExternalShutdownException, ShutdownException):
        ended_by_shutdown = True
    except Exception:  # noqa: BLE001
        # A callback that was running when the signal shut the context down fails on its
        # next publish: that is the shutdown, not a crash. So is a SIGINT whose handler raised
        # inside rclpy's message conversion (it surfaces as a RuntimeError from
        # take_message). Anything else is re-raised.
        # A conversion that failed because the signal landed in it can be seen before rclpy's handler has
        # shut the context down (seen with the events executor at the end of live runs on a loaded
        # machine: exit 1 and a traceback): such a failure waits for the shutdown to follow.
        if not shutting_down(rclpy, failed_conversion(sys.exc_info()[1])):
            raise
        ended_by_shutdown = True
    finally:
        _ignore_sigint()
        _dump_profile(profile, name)
        late = report_kernel_loads(name, kernel_loads)
        if late:
            print(late, file=sys.stderr, flush=True)
        close = getattr(node, 'close', None)
        if callable(close):
            close()
        if executor is not None:
            executor.shutdown()
        if ended_by_shutdown:
            # Stopped by a signal (what launch sends): the node's own resources are closed above. Its DDS
            # entities are left to the process's end: Fast DDS sometimes never returned from deleting them
            # here (rclpy destroy_node -> destroy_when_not_in_use; obsw_controller SIGKILLed after 13 s in
            # a wall-clock load test, its stack dumped by ros_testing.dump_stacks), and the peers see the
            # participant leave by its lease. The process ends now, with its exit code, and no destructor
            # runs that could hang the same way.
            _end_process(code)
        node.destroy_node()
        rclpy.try_shutdown()
    return code
