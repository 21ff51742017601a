"""The one clock a node judges time by: the lab's.

On a real facility that is the monotonic clock of the computer (never the system time, which
NTP may step). With the lab twin in the loop the twin owns time: it steps the physics, publishes
``/clock`` and every node runs with ``use_sim_time``, so the whole graph lives on the twin's
simulated timeline. A machine that cannot keep up then slows the timeline down instead of
making inputs look stale, and the loop's delays are those of the simulated lab (the twin
counts the steps it had to take without the stack's answer as misses).

:func:`lab_seconds` gives a node that one clock, as a callable returning seconds. Freshness
checks, rate limits and integration steps use it; message stamps use ``node.get_clock()``,
which is the same ROS time under ``use_sim_time``.
"""

from __future__ import annotations

import time
from typing import Callable


def uses_sim_time(node) -> bool:
    """The node runs on ``/clock`` (rclpy's own ``use_sim_time`` parameter)."""
    return bool(node.has_parameter('use_sim_time') and node.get_parameter('use_sim_time').value)


def clock_ns(node) -> Callable[[], int]:
    """The node clock's ``now()`` in integer nanoseconds (ROS time: ``/clock`` under ``use_sim_time``), read from
    rclpy's clock handle: ``Clock.now()`` builds and checks an rclpy ``Time`` around the same reading, which made it
    four times the reading's cost (8.3 us against 2.0 us on the fifteenth session's slow day); the hot paths read it
    several times a sample."""
    handle = node.get_clock().handle
    return lambda: handle.get_now().nanoseconds


def lab_seconds(node) -> Callable[[], float]:
    """``now()`` in seconds on the lab's clock: ROS time under ``use_sim_time``, else monotonic."""
    if not uses_sim_time(node):
        return time.monotonic
    handle = node.get_clock().handle
    return lambda: handle.get_now().nanoseconds * 1e-9


def joint_states_depth(node) -> int:
    """How many joint states a node keeps waiting (KEEP_LAST). Under ``use_sim_time``: 500, 2 s of a 250 Hz robot.
    With their stamps as their times (:func:`measurement_seconds`) a hold-up of the node shorter than that shows no
    gap between them (a freshness watch holds for a gap longer than its timeout,
    :class:`hil_common.freshness.InputWatch`). On the wall clock they are timed by their arrival, so older ones
    would add nothing: 10."""
    return 500 if uses_sim_time(node) else 10


def measurement_seconds(node) -> Callable[[float], float]:
    """When a measurement stamped ``stamp_s`` (ROS time, s) was taken, on :func:`lab_seconds`' clock.

    Under ``use_sim_time`` it is the stamp: the twin stamps its outputs with its simulated time, the graph's one
    clock. A node that fell behind while the twin stepped on (the twin waits for no robot before its first command)
    then judges the measurements queued for it by when they were taken, not by when it got to them: by arrival they
    would look as old as its own hold-up. On the wall clock it is the arrival (now, monotonic): a robot driver stamps
    on its own host's clock, which need not agree with this one. A stamp that is not a positive finite time falls
    back to the arrival."""
    now = lab_seconds(node)
    if not uses_sim_time(node):
        return lambda stamp_s: now()
    return lambda stamp_s: stamp_s if 0.0 < stamp_s < float('inf') else now()


#: The parameter of every node that integrates a part of the mission relative to the nominal
#: (the admittances): the ROS time of the mission's t = 0, so that nodes started at different
#: instants integrate one nominal (seed 004 Eqs. 4, 23). Declared with hil_common.params.Param.
MISSION_EPOCH_PARAM = ('mission_epoch_s', -1.0,
                       "ROS time [s] of the mission's t = 0, shared by the graph's simulation nodes (the lab twin's "
                       'simulated time under use_sim_time, the system time otherwise): at its first step the node '
                       'moves its nominal (Eq. 4) on from it, holding its body on its start pose relative to the '
                       "nominal, so all nodes integrate the same nominal. -1: the node's own first step")


def mission_epoch(node, value: float) -> float | None:
    """The validated ``mission_epoch_s`` (ROS time, s), or None (-1: each node's own start). Raises
    :class:`hil_common.params.ParameterError` naming it when it is negative but not -1."""
    from hil_common.params import ParameterError

    value = float(value)
    if value == -1.0:
        return None
    if not value >= 0.0:
        raise ParameterError(f"parameter 'mission_epoch_s': {value} must be >= 0, or -1 for the node's own start")
    return value


def ros_to_lab_seconds(node, ros_s: float) -> float:
    """A ROS time [s] on :func:`lab_seconds`' clock (the same under ``use_sim_time``; on the wall clock the
    monotonic clock's reading at that system time)."""
    if uses_sim_time(node):
        return ros_s
    return ros_s - (node.get_clock().now().nanoseconds * 1e-9 - time.monotonic())


__all__ = ['MISSION_EPOCH_PARAM', 'joint_states_depth', 'lab_seconds', 'measurement_seconds', 'mission_epoch',
           'ros_to_lab_seconds', 'uses_sim_time']
