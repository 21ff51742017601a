"""The ROS side of a node's :class:`hil_common.overload.OverloadGuard`: its status topic, its reset
service and its log lines (one definition for the admittance nodes).

* out ``<prefix>/status`` (diagnostic_msgs/DiagnosticStatus) every 0.5 s and on every change of
  level: OK on time, WARN degraded, ERROR holding; the guard's counters as values (``late_ticks``,
  ``dropped_steps``, ``max_late_ms``, ``mean_late_ms``, ``holds``, ``holding``, ``policy``);
* service ``<prefix>/reset`` (std_srvs/Trigger): clears an overload hold (the ``latch`` policy's way out).

``override()`` (optional) returns ``(level, message)`` of another state of the node (the servicer's
latched wrist F/T fault, the client's missing or stale wrench stream), reported instead of the guard's
while it lasts, unless the guard's level is the more severe.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, ContextManager

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from std_srvs.srv import Trigger

from hil_common.overload import OK, OverloadGuard

_LEVELS = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)


class OverloadStatus:
    def __init__(self, node, guard: OverloadGuard, prefix: str, name: str,
                 override: Callable[[], tuple[int, str] | None] | None = None):
        self.node, self.guard, self.override = node, guard, override
        self.reset_also: Callable[[], str] | None = None   # more to reset with the service (its message)
        #: a context its service and its timer's publish run in (the fused servicer hot path pauses its compiled
        #: loop, which steps the guard)
        self.paused: Callable[[], ContextManager] = nullcontext
        self.pub = node.create_publisher(DiagnosticStatus, f'{prefix}/status', 10)
        self.msg = DiagnosticStatus(name=name)
        self.reported = OK
        node.create_service(Trigger, f'{prefix}/reset', self.on_reset)
        node.create_timer(0.5, self.publish)

    def after_tick(self) -> None:
        """Log and publish when the guard's level changed (call after each tick of the rule)."""
        if self.guard.level == self.reported:
            return
        self.reported = self.guard.level
        log, text = self.node.get_logger(), self.guard.message()
        # one call site per severity: rclpy refuses a call site whose severity changes
        if self.guard.holding:
            log.error(text)
        elif self.guard.level:
            log.warn(text)
        else:
            log.info(text)
        self.publish()

    def on_reset(self, request, response):
        with self.paused():
            return self._reset(response)

    def _reset(self, response):
        was = self.guard.holding
        self.guard.reset()
        response.success, response.message = True, 'overload hold cleared' if was else 'no overload hold'
        if self.reset_also is not None:
            response.message += '; ' + self.reset_also()
        self.node.get_logger().info(response.message)
        self.publish()
        return response

    def publish(self) -> None:
        with self.paused():
            self._publish()

    def _publish(self) -> None:
        level, message = self.guard.level, self.guard.message()
        other = self.override() if self.override is not None else None
        if other is not None and other[0] >= level:
            level, message = other
        self.msg.level = _LEVELS[level]
        self.msg.message = message
        self.msg.values = [KeyValue(key=k, value=v) for k, v in self.guard.values().items()]
        self.pub.publish(self.msg)
