"""Facility emulator node: the lab side of seed 003 Fig. 5 (robot and contact) in place of the CISAS lab.

It closes the docking node's loop through topics, so the graph of ``cisas_docking.launch.py``
runs end to end without hardware, with :class:`hil_docking.facility_rule.EmulatedRobot` (the
same robot the lockstep mission runner uses):

* in ``chaser/pose_cmd`` (PoseStamped) and ``chaser/twist_cmd`` (TwistStamped): the commanded
  relative state ``[dr; dv]`` (paired by their header stamps);
* out ``facility/robot_pose_lvlh`` (PoseStamped): the robot's mock-up position, which the ideal
  robot reaches the loop delay ``Delta`` (``facility.loop_delay_s``) after the command's stamp;
  stamped with that time;
* out ``facility/ft/wrench`` (WrenchStamped, LVLH-aligned lab axes): the lumped contact
  ``f_L = k_L x + b_L x'`` (Eqs. 16-18) of the realised motion, as the force of the target
  mock-up on the chaser mock-up (``-f_L n``); same stamp.

The delay is pure and known, so each sample is published as soon as its command arrives,
stamped with the time the robot realises it; the docking node never uses a sample before its
stamp. The loop delay is therefore exactly ``Delta`` on the simulated timeline whenever a round
trip through DDS takes less than ``Delta``; a sample that comes later is a deadline miss the
docking node counts. Commands that arrive after their realisation time are counted here too
(``late_commands``, logged at shutdown and every 5 s while it grows).
"""

from __future__ import annotations

import sys

from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node

from hil_common.conversions import seconds_to_stamp
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_docking.facility_rule import EmulatedRobot
from hil_docking.scenario import load_docking_scenario

PARAMS = [
    Param('scenario_file', '', 'Docking scenario YAML; empty: the installed cisas_docking.yaml (the facility '
          'contact and the loop delay are read from it)'),
    Param('frame_id', 'target_lvlh', 'Frame of the published pose and wrench (LVLH-aligned lab axes at the port)'),
]


class FacilityEmulatorNode(Node):
    def __init__(self):
        super().__init__('facility_emulator')
        p = declare_parameters(self, PARAMS)
        self.scenario = load_docking_scenario(p.scenario_file or None)
        self.robot = EmulatedRobot(self.scenario)
        self.frame_id = p.frame_id
        self.axis = self.robot.axis
        self._poses: dict[int, tuple] = {}
        self._twists: dict[int, tuple] = {}
        self._last_done_ns = -1
        self.late_commands = 0
        self.pub_pose = self.create_publisher(PoseStamped, 'facility/robot_pose_lvlh', 100)
        self.pub_wrench = self.create_publisher(WrenchStamped, 'facility/ft/wrench', 100)
        self.create_subscription(PoseStamped, 'chaser/pose_cmd', self.on_pose, 100)
        self.create_subscription(TwistStamped, 'chaser/twist_cmd', self.on_twist, 100)
        lumped = self.robot.lumped
        self.get_logger().info(f'emulated CISAS facility: ideal robot delayed {self.robot.delay_s * 1e3:g} ms, '
                               f'k_L = {lumped.stiffness_n_m:g} N/m, b_L = {lumped.damping_ns_m:g} N s/m')

    @staticmethod
    def _key(header) -> int:
        return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec

    def on_pose(self, msg: PoseStamped) -> None:
        q = msg.pose.position
        self._pair(self._key(msg.header), self._poses, (q.x, q.y, q.z), self._twists)

    def on_twist(self, msg: TwistStamped) -> None:
        v = msg.twist.linear
        self._pair(self._key(msg.header), self._twists, (v.x, v.y, v.z), self._poses)

    def _pair(self, key: int, mine: dict, value: tuple, other: dict) -> None:
        if key <= self._last_done_ns:
            return
        if key not in other:
            mine[key] = value
            return
        half = other.pop(key)
        position, velocity = (value, half) if mine is self._poses else (half, value)
        for table in (self._poses, self._twists):          # older halves will never be paired
            for stale in [k for k in table if k < key]:
                del table[stale]
        self._last_done_ns = key
        self.realise(key * 1e-9, (*position, *velocity))

    def realise(self, command_stamp_s: float, state) -> None:
        position, _, f_l = self.robot.realise(state)
        t_s = command_stamp_s + self.robot.delay_s
        if self.get_clock().now().nanoseconds * 1e-9 > t_s:
            self.late_commands += 1
            self.get_logger().warning(f'{self.late_commands} commands arrived after their realisation time',
                                      throttle_duration_sec=5.0)
        pose = PoseStamped()
        seconds_to_stamp(t_s, pose.header.stamp)
        pose.header.frame_id = self.frame_id
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in position)
        pose.pose.orientation.w = 1.0
        wrench = WrenchStamped()
        wrench.header = pose.header
        f = -f_l * self.axis
        wrench.wrench.force.x, wrench.wrench.force.y, wrench.wrench.force.z = (float(v) for v in f)
        self.pub_pose.publish(pose)
        self.pub_wrench.publish(wrench)

    def close(self) -> None:
        self.get_logger().info(f'late_commands: {self.late_commands}')


def main(args=None) -> int:
    return run_node(FacilityEmulatorNode, 'facility_emulator', args)


if __name__ == '__main__':
    sys.exit(main())
