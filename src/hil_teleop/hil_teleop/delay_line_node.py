"""Delay-line node: the earth<->orbit link of seed 001 Fig. 1, one :class:`DelayLine` per topic.

Channels (relative names; remap in the launch file):

* uplink (earth -> orbit, ``uplink_delay_s``): ``teleop/f_m`` (WrenchStamped) ->
  ``orbit/teleop/f_m``; ``teleop/x_vir`` (PoseStamped) -> ``orbit/teleop/x_vir``;
* downlink (orbit -> earth, ``downlink_delay_s``): ``slave/joint_states`` (JointState) ->
  ``earth/slave/joint_states``; ``slave/ft/wrench`` (WrenchStamped) ->
  ``earth/slave/ft/wrench``; ``slave/x_s`` (PoseStamped) -> ``earth/slave/x_s``.

A message enters the line when it reaches this node (node clock: under ``use_sim_time`` the lab
twin's ``/clock``, so the delay is simulated time; a message that arrives before the first
``/clock`` is dropped and counted, as its entry time is unknown) and leaves, unchanged
(headers keep their send stamps, which the receiver uses for staleness), once due: as the serialized bytes that
arrived (``raw=True`` subscriptions, published as they are; the node never builds a Python message, which cost
about a third of its CPU, docs/performance.md). Order is
preserved, memory is bounded by ``capacity`` per channel, jitter and drops are optional and
seeded. ``delay_line/queue_length`` (std_msgs/Int32MultiArray) reports the messages in
flight per channel, in the order above, at ``report_hz``.
"""

from __future__ import annotations

import sys

from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Int32MultiArray

from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_teleop.delay_line import DelayLine

# (name, message type, input topic, output topic, direction)
CHANNELS = [
    ('f_m', WrenchStamped, 'teleop/f_m', 'orbit/teleop/f_m', 'uplink'),
    ('x_vir', PoseStamped, 'teleop/x_vir', 'orbit/teleop/x_vir', 'uplink'),
    ('joint_states', JointState, 'slave/joint_states', 'earth/slave/joint_states', 'downlink'),
    ('wrench', WrenchStamped, 'slave/ft/wrench', 'earth/slave/ft/wrench', 'downlink'),
    ('x_s', PoseStamped, 'slave/x_s', 'earth/slave/x_s', 'downlink'),
]

PARAMS = [
    Param('uplink_delay_s', 5.0, 'One-way delay earth -> orbit [s]', min=0.0, max=600.0),
    Param('downlink_delay_s', 5.0, 'One-way delay orbit -> earth [s]', min=0.0, max=600.0),
    Param('jitter_s', 0.0, 'Extra delay, uniform in [0, jitter_s] (order is kept) [s]', min=0.0, max=60.0),
    Param('drop_probability', 0.0, 'Probability that a message is lost [-]', min=0.0, max=0.99),
    Param('capacity', 100000, 'Messages in flight per channel, at most (a full line drops and counts)', min=1,
          max=10_000_000),
    Param('release_hz', 1000.0, 'Rate at which due messages are released [Hz]', min=1.0, max=10000.0),
    Param('report_hz', 2.0, 'Rate of the queue-length report [Hz]', min=0.01, max=100.0),
    Param('seed', 0, 'Seed of the jitter/drop generator', min=0),
]


class DelayLineNode(Node):
    def __init__(self):
        super().__init__('delay_line')
        p = declare_parameters(self, PARAMS)
        self.lines = []
        for i, (name, msg_type, topic_in, topic_out, direction) in enumerate(CHANNELS):
            line = DelayLine(p[f'{direction}_delay_s'], capacity=p.capacity, jitter_s=p.jitter_s,
                             drop_probability=p.drop_probability, seed=p.seed + i)
            pub = self.create_publisher(msg_type, topic_out, 100)
            self.create_subscription(msg_type, topic_in, self._sender(line), 100, raw=True)
            self.lines.append((name, line, pub))
        self.before_clock = 0      # messages received before the node clock read a time (use_sim_time)
        self.pub_queue = self.create_publisher(Int32MultiArray, 'delay_line/queue_length', 10)
        self.create_timer(1.0 / p.release_hz, self.release)
        self.create_timer(1.0 / p.report_hz, self.report)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _sender(self, line):
        def on_message(msg):
            now = self._now()
            if now <= 0.0:         # the lab twin's /clock has not arrived yet (use_sim_time)
                self.before_clock += 1
                return
            line.send(now, msg)
        return on_message

    def release(self):
        now = self._now()
        if now <= 0.0:
            return
        for _, line, pub in self.lines:
            for _, msg in line.receive(now):
                pub.publish(msg)

    def report(self):
        self.pub_queue.publish(Int32MultiArray(data=[line.queue_length for _, line, _ in self.lines]))
        lost = {name: (line.stats.dropped, line.stats.overflows) for name, line, _ in self.lines
                if line.stats.dropped or line.stats.overflows}
        if lost:
            self.get_logger().info(f'dropped/overflowed so far: {lost}', throttle_duration_sec=10.0)


def main(args=None) -> int:
    return run_node(DelayLineNode, 'delay_line', args)


if __name__ == '__main__':
    sys.exit(main())
