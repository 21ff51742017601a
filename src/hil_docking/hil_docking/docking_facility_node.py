"""Docking facility node: one :class:`hil_docking.facility_rule.DockingFacility` tick per control period.

Topics (relative names; remap in the launch file). Vectors are in the LVLH-aligned lab axes,
positions relative to the target's docking port:

* in ``facility/ft/wrench`` (geometry_msgs/WrenchStamped): the processed F/T wrench, i.e. the
  force of the target mock-up on the chaser mock-up. The facility force along the docking axis
  is ``f_L = -F . n``;
* in ``facility/robot_pose_lvlh`` (geometry_msgs/PoseStamped): the measured position of the
  chaser mock-up (the robot's forward kinematics). The rule differences it by the header
  stamps (the receive time when the stamp is zero) for the rate;
* out ``chaser/pose_cmd`` (PoseStamped) and ``chaser/twist_cmd`` (TwistStamped): the simulated
  relative state ``[dr; dv]``, which the motion table makes the robot reproduce;
* out ``facility/virtual_wrench`` (WrenchStamped): ``f_V`` on the chaser mock-up.

The scenario YAML is the single source of truth (``scenario_file``; empty: the installed
``cisas_docking.yaml``). ``compensation`` may override its ``facility.compensation``. The
clock starts with the first robot pose. Until then the node publishes the initial command and
does not step. After that it runs the steps due on the node clock every
``facility.control_period_s`` (:class:`hil_common.pacing.StepPacer`: a late timer catches up,
at most ``max_catch_up`` steps per callback, beyond which steps are dropped and counted). A
robot pose older than ``pose_timeout_s`` stops the steps; they resume, without catching up,
when the pose is fresh again.
"""

from __future__ import annotations

import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node

from hil_common.pacing import StepPacer
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_docking.contact import COMPENSATIONS
from hil_docking.facility_rule import DockingFacility
from hil_docking.scenario import load_docking_scenario

PARAMS = [
    Param('scenario_file', '', 'Docking scenario YAML; empty: the installed cisas_docking.yaml'),
    Param('compensation', '', 'Override of facility.compensation (empty: the scenario value)',
          choices=('',) + COMPENSATIONS),
    Param('frame_id', 'target_lvlh', 'Frame of the published commands (LVLH-aligned lab axes at the port)'),
    Param('pose_timeout_s', 0.1, 'The node stops ticking while the robot pose is older than this [s]', min=0.001,
          max=10.0),
    Param('max_catch_up', 20, 'Steps a late timer callback may catch up, at most', min=1, max=10000),
]


class DockingFacilityNode(Node):
    def __init__(self):
        super().__init__('docking_facility')
        p = declare_parameters(self, PARAMS)
        self.scenario = load_docking_scenario(p.scenario_file or None)
        self.rule = DockingFacility(self.scenario, p.compensation or None)
        self.frame_id, self.pose_timeout_s, self.max_catch_up = p.frame_id, p.pose_timeout_s, p.max_catch_up
        self.pacer: StepPacer | None = None
        self.axis = self.rule.axis
        self.force_facility_n = 0.0
        self.robot_position: np.ndarray | None = None
        self.pose_time_s: float | None = None
        self.pose_stamp_s: float | None = None
        self.pub_pose = self.create_publisher(PoseStamped, 'chaser/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'chaser/twist_cmd', 10)
        self.pub_virtual = self.create_publisher(WrenchStamped, 'facility/virtual_wrench', 10)
        self.create_subscription(WrenchStamped, 'facility/ft/wrench', self.on_wrench, 10)
        self.create_subscription(PoseStamped, 'facility/robot_pose_lvlh', self.on_pose, 10)
        self.create_timer(self.scenario.control_period_s, self.tick)
        self.get_logger().info(
            f'{self.scenario.name}: m = {self.rule.mass_kg:g} kg, k_V = {self.rule.gains.stiffness_n_m:.4g} N/m, '
            f'b_V = {self.rule.gains.damping_ns_m:.4g} N s/m ({self.rule.compensation}), '
            f'm_min = {self.rule.m_min_kg:.3g} kg')

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        self.force_facility_n = -float(np.array([f.x, f.y, f.z]) @ self.axis)

    def on_pose(self, msg: PoseStamped) -> None:
        q = msg.pose.position
        self.robot_position = np.array([q.x, q.y, q.z])
        self.pose_time_s = self._now()
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.pose_stamp_s = stamp if stamp > 0.0 else self.pose_time_s

    def tick(self) -> None:
        now = self._now()
        fresh = self.pose_time_s is not None and now - self.pose_time_s <= self.pose_timeout_s
        if not fresh:
            self.pacer = None                     # hold; resume without catching up
        elif self.pacer is None:
            self.pacer = StepPacer(self.scenario.control_period_s, now, max_catch_up=self.max_catch_up)
        else:
            overruns = self.pacer.overruns
            for _ in range(self.pacer.due(now)):
                self.rule.step(self.force_facility_n, self.robot_position, sample_time_s=self.pose_stamp_s)
            if self.pacer.overruns > overruns:
                self.get_logger().warning(f'{self.pacer.overruns} steps dropped so far (late timer)',
                                          throttle_duration_sec=5.0)
        self.publish(self.rule.state_lvlh)

    def publish(self, state) -> None:
        stamp = self.get_clock().now().to_msg()
        pose = PoseStamped()
        pose.header.stamp, pose.header.frame_id = stamp, self.frame_id
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in state[0:3])
        pose.pose.orientation.w = 1.0
        self.pub_pose.publish(pose)
        twist = TwistStamped()
        twist.header = pose.header
        twist.twist.linear.x, twist.twist.linear.y, twist.twist.linear.z = (float(v) for v in state[3:6])
        self.pub_twist.publish(twist)
        virtual = WrenchStamped()
        virtual.header = pose.header
        f = -self.rule.last_force_virtual_n * self.axis
        virtual.wrench.force.x, virtual.wrench.force.y, virtual.wrench.force.z = (float(v) for v in f)
        self.pub_virtual.publish(virtual)


def main(args=None) -> int:
    return run_node(DockingFacilityNode, 'docking_facility', args)


if __name__ == '__main__':
    sys.exit(main())
