"""Grip-contact simulator node: the orbit-side physics between slave arm and payload, in place of the lab.

In seed 001's HIL the slave arm grips a grip on the payload motion table and the F/T sensors
measure the contact. This node closes that loop in simulation through topics, so the ROS
graph (slave law -> slave pose, payload admittance -> payload pose) runs end to end:

* in  ``slave/table/pose_cmd`` (PoseStamped, slave base) and ``slave/table/twist_cmd``
  (TwistStamped, end-effector body twist): the slave end effector (Appendix A: it tracks its
  command);
* in  ``payload/table/pose_cmd`` (PoseStamped) and ``payload/table/twist_cmd``: ``g_c`` and
  ``V_c`` of the payload admittance (zero nominal, so ``g_payload = g_0 g_c``), grip at the CoM;
* out ``slave/ft/wrench`` (WrenchStamped, frame ``slave_base``): the wrench the slave applies to
  the payload, base axes (slave law ``ft_frame:=base``);
* out ``payload/ft/wrench`` (WrenchStamped, frame ``payload_com``): the same wrench in payload
  body axes about its CoM (client admittance with ``pose_sensor_in_client`` = identity).

The wrench is :class:`hil_teleop.slave_side.GripContact` (the spring-damper of the lockstep
runner), published at ``rate_hz``. Until the first poses arrive the initial ones are used.
"""

from __future__ import annotations

import sys

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node

from hil_common.conversions import pose_from_msg, twist_from_msg, wrench_to_msg
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_teleop.coordinates import pose_from_x, world_velocity
from hil_teleop.slave_side import GripContact

PARAMS = [
    Param('x_grip_0', [1.0, 0.0, 0.5, 0.0, 0.0, 0.0], 'Grip (payload CoM) at start, slave base [m, rad]', length=6),
    Param('contact_k', [2e4, 2e4, 2e4, 2e3, 2e3, 2e3], 'Grip stiffness [N/m, N m/rad]', length=6, min=0.0),
    Param('contact_d', [2e2, 2e2, 2e2, 2e1, 2e1, 2e1], 'Grip damping [N s/m, N m s/rad]', length=6, min=0.0),
    Param('rate_hz', 500.0, 'Wrench publication rate [Hz]', min=1.0, max=10000.0),
]


class GripContactNode(Node):
    def __init__(self):
        super().__init__('grip_contact')
        p = declare_parameters(self, PARAMS)
        self.contact = GripContact(p.contact_k, p.contact_d)
        self.pose_payload_0 = pose_from_x(p.x_grip_0)
        self.pose_ee, self.twist_ee = pin.SE3(self.pose_payload_0), np.zeros(6)
        self.pose_c, self.twist_c = pin.SE3.Identity(), np.zeros(6)
        self.rejected = 0
        self.create_subscription(PoseStamped, 'slave/table/pose_cmd', self._pose('pose_ee'), 10)
        self.create_subscription(TwistStamped, 'slave/table/twist_cmd', self._twist('twist_ee'), 10)
        self.create_subscription(PoseStamped, 'payload/table/pose_cmd', self._pose('pose_c'), 10)
        self.create_subscription(TwistStamped, 'payload/table/twist_cmd', self._twist('twist_c'), 10)
        self.pub_slave = self.create_publisher(WrenchStamped, 'slave/ft/wrench', 10)
        self.pub_payload = self.create_publisher(WrenchStamped, 'payload/ft/wrench', 10)
        self.msg_slave, self.msg_payload = WrenchStamped(), WrenchStamped()
        self.msg_slave.header.frame_id, self.msg_payload.header.frame_id = 'slave_base', 'payload_com'
        self.create_timer(1.0 / p.rate_hz, self.tick)

    def _pose(self, attr):
        def on_pose(msg):
            try:
                setattr(self, attr, pose_from_msg(msg.pose))
            except ValueError as exc:
                self.rejected += 1
                self.get_logger().warn(f'rejected {attr}: {exc}', throttle_duration_sec=1.0)
        return on_pose

    def _twist(self, attr):
        def on_twist(msg):
            v = twist_from_msg(msg.twist)
            if np.all(np.isfinite(v)):
                setattr(self, attr, v)
            else:
                self.rejected += 1
        return on_twist

    def tick(self):
        pose_payload = self.pose_payload_0 * self.pose_c
        wrench = self.contact.wrench(self.pose_ee, world_velocity(self.pose_ee, self.twist_ee),
                                     pose_payload, world_velocity(pose_payload, self.twist_c))
        rt = pose_payload.rotation.T
        stamp = self.get_clock().now().to_msg()
        self.msg_slave.header.stamp = self.msg_payload.header.stamp = stamp
        wrench_to_msg(wrench, self.msg_slave.wrench)
        wrench_to_msg(np.concatenate((rt @ wrench[:3], rt @ wrench[3:])), self.msg_payload.wrench)
        self.pub_slave.publish(self.msg_slave)
        self.pub_payload.publish(self.msg_payload)


def main(args=None) -> int:
    return run_node(GripContactNode, 'grip_contact', args)


if __name__ == '__main__':
    sys.exit(main())
