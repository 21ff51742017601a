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


def lab_seconds(node) -> Callable[[], float]:
    """``now()`` in seconds on the lab's clock: ROS time under ``use_sim_time``, else monotonic."""
    if not uses_sim_time(node):
        return time.monotonic
    clock = node.get_clock()
    return lambda: clock.now().nanoseconds * 1e-9


__all__ = ['lab_seconds', 'uses_sim_time']
