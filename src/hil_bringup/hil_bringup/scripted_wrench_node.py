"""Scripted wrench source: publishes a rectangular push as geometry_msgs/WrenchStamped.

A stand-in for an F/T sensor in demos and tests of the client-only graph: publishes on
``client/ft/wrench`` (sensor frame) at ``rate_hz``; the wrench is ``force_n``/``torque_nm``
during ``[start_s, start_s + duration_s)`` after the node starts and zero otherwise.
"""

from __future__ import annotations

import sys

from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node

from hil_common.conversions import wrench_to_msg
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node

PARAMS = [
    Param('rate_hz', 1000.0, 'Publication rate [Hz]', min=1.0, max=10000.0),
    Param('force_n', [0.0, 0.0, 10.0], 'Force in the sensor frame during the push [N]', length=3),
    Param('torque_nm', [0.0, 0.0, 0.0], 'Torque in the sensor frame during the push [N m]', length=3),
    Param('start_s', 1.0, 'Push start, after node start [s]', min=0.0),
    Param('duration_s', 1.0, 'Push duration [s]', min=0.0),
    Param('frame_id', 'client_ft_sensor', 'Frame id of the published wrench'),
]


class ScriptedWrench(Node):
    def __init__(self):
        super().__init__('scripted_wrench')
        p = declare_parameters(self, PARAMS)
        self.push = list(p.force_n) + list(p.torque_nm)
        self.window = (p.start_s, p.start_s + p.duration_s)
        self.t0 = self.get_clock().now().nanoseconds
        self.msg = WrenchStamped()
        self.msg.header.frame_id = p.frame_id
        self.pub = self.create_publisher(WrenchStamped, 'client/ft/wrench', 10)
        self.create_timer(1.0 / p.rate_hz, self.tick)

    def tick(self):
        now = self.get_clock().now()
        t = (now.nanoseconds - self.t0) * 1e-9
        wrench_to_msg(self.push if self.window[0] <= t < self.window[1] else [0.0] * 6, self.msg.wrench)
        self.msg.header.stamp = now.to_msg()
        self.pub.publish(self.msg)


def main(args=None) -> int:
    return run_node(ScriptedWrench, 'scripted_wrench', args)


if __name__ == '__main__':
    sys.exit(main())
