"""Opt-in latency trace of a fused hot path: the stamp of the F/T sample each robot command came from.

A robot command (``std_msgs/Float64MultiArray``, ros2_control's forward command controllers) has
no header, so a measurement cannot tell from a command which sample it was computed from. With
``trace_sample_stamps`` the hot path publishes, right after each command and in the same callback,
a ``std_msgs/Header`` whose stamp is that sample's ``header.stamp`` on ``<prefix>/hot_path/trace``.
A measuring node that stamped its samples with its send time then has the end-to-end latency of
every sample (sample published -> trace received), without detecting anything in the commands;
``bench/bench_envisat.py`` uses it for the servicer, whose commands' own variations hide a force
pulse. Off by default (the launch files): it costs one publish per sample.
"""

from __future__ import annotations

from std_msgs.msg import Header

from hil_common.cdr import encode_header
from hil_common.params import Param

TRACE_PARAM = Param('trace_sample_stamps', False, 'Publish, right after each robot command, the stamp of the F/T '
                    'sample it was computed from (std_msgs/Header on <side>/hot_path/trace), for latency '
                    'measurements; one extra publish per sample')


class SampleTrace:
    """The trace publisher of one hot path node (a no-op when ``enabled`` is false)."""

    def __init__(self, node, topic: str, enabled: bool):
        self.pub = node.create_publisher(Header, topic, 100) if enabled else None

    def publish(self, sec: int, nanosec: int) -> None:
        """After the command computed from the sample stamped ``sec``, ``nanosec`` (sent as raw CDR)."""
        if self.pub is not None:
            self.pub.publish(encode_header(sec, nanosec))
