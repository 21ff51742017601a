"""Example OBSW controller node: a thin ROS shell over :class:`hil_admittance.obsw.ObswController`.

This is the *controller-under-test slot* of seed 004 Fig. 7: replace it with any node that
reads the same topics and publishes the same commands (the launch file's ``controller_package``
/ ``controller_executable`` arguments).

Topics (relative names):

* in  ``client/state``, ``servicer/state`` (nav_msgs/Odometry): the absolute states of
  Eq. (23) in the orbit frame (pose; body twist);
* in  ``servicer_arm/joint_states`` (sensor_msgs/JointState): the arm's ``q, dq``;
* out ``servicer/base_wrench_cmd`` (geometry_msgs/WrenchStamped): ``F_b``, base body frame;
* out ``servicer_arm/torque_cmd`` (std_msgs/Float64MultiArray): ``tau``;
* out ``servicer/gripper_cmd`` (std_msgs/Bool): close the gripper;
* out ``obsw/phase`` (std_msgs/String, transient-local): the phase, on every change.

The inputs are read at each tick, newest value only (:meth:`hil_common.polled.PolledSubscription.take_latest`,
their receipt time the tick's): the node wakes for its ticks, not for each message (the arm's joints come at
1 kHz). If an input is missing or older than ``input_timeout_s`` the controller does not run and
commands zero (a silent OBSW: thrusters off, arm limp); the condition is logged. So does a node that
cannot keep up (``obsw/status``, ``obsw/reset``: :class:`hil_common.overload.OverloadGuard`, off on
the simulated clock). The policy is :class:`hil_admittance.obsw_side.ObswSide`.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String

from hil_admittance.node_common import arm_joints
from hil_common.ros_main import guarded
from hil_admittance.obsw import ObswController, ObswGains
from hil_admittance.obsw_side import ObswSide
from hil_admittance.overload_status import OverloadStatus
from hil_common.lab_clock import uses_sim_time
from hil_common.overload import overload_guard, overload_params
from hil_common.conversions import pose_from_msg, twist_from_msg, wrench_to_msg, xyz_rpy_to_pose
from hil_common.params import REQUIRED, Param, ParameterError, declare_parameters
from hil_common.polled import PolledSubscription
from hil_common.ros_main import run_node
from hil_dynamics.servicer import ServicerModel

PHASE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _gain_params() -> list[Param]:
    """One parameter per :class:`ObswGains` field, named ``gains.<field>``."""
    out = []
    for f in dataclasses.fields(ObswGains):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if np.ndim(default):
            out.append(Param(f'gains.{f.name}', [float(v) for v in default], f'ObswGains.{f.name}', min=0.0,
                             length=len(default)))
        else:
            out.append(Param(f'gains.{f.name}', float(default), f'ObswGains.{f.name}', min=0.0))
    return out


PARAMS = [
    Param('urdf_xml', REQUIRED, 'On-board servicer URDF (root link at the base CoM)', type='str'),
    Param('ee_frame', 'lbr_flange', 'EE (flange) frame of the URDF'),
    Param('pose_tool_in_flange_xyz_rpy', [0.0, 0.0, 0.15, 0.0, 0.0, 0.0], 'Gripper tool frame on the flange', length=6),
    Param('pose_grasp_in_client_xyz_rpy', [-2.9, 0.0, 0.0, 0.0, 0.0, 0.0], 'Grasp fixture in the client CoM frame', length=6),
    Param('pose_tool_at_grasp_in_grasp_xyz_rpy', [0.0, 0.0, 0.0, 0.0, 1.5707963267948966, 0.0],
          'Tool pose in the fixture frame at closure', length=6),
    Param('pose_base_in_client_desired_xyz_rpy', [-4.8, -0.2, 1.1, 0.0, 1.5707963267948966, 0.0],
          'Synchronisation set point g_bt* (base in client)', length=6),
    Param('q_hold', [0.0, 0.4, 0.0, -1.6, 0.0, -1.5, 0.0], 'Joint angles held during synchronisation [rad]'),
    Param('joint_names', [], 'Arm joint names in URDF order (empty: the URDF order)', type='str[]'),
    Param('rate_hz', 1000.0, 'OBSW rate [Hz]', min=1.0, max=10000.0),
    Param('input_timeout_s', 0.1, 'Inputs older than this stop the controller [s]', min=0.0),
    Param('base_frame', 'servicer_base_com', 'Frame id of F_b'),
    *overload_params('obsw/reset'),
    *_gain_params(),
]


def build_controller(values: dict) -> ObswController:
    try:
        model = ServicerModel(values['urdf_xml'], values['ee_frame'])
    except Exception as exc:  # noqa: BLE001 - URDF parser errors come in several types
        raise ParameterError(f"parameter 'urdf_xml': {exc}") from exc
    kwargs = {}
    for f in dataclasses.fields(ObswGains):
        value = values[f'gains.{f.name}']
        kwargs[f.name] = np.array(value) if isinstance(value, (list, tuple)) else value
    try:
        gains = ObswGains(**kwargs)
    except ValueError as exc:
        raise ParameterError(f"parameter 'gains.{str(exc).split()[0]}': {exc}") from exc
    if len(values['q_hold']) != model.n:
        raise ParameterError(f"parameter 'q_hold': expected {model.n} angles, got {len(values['q_hold'])}")
    return ObswController(model, xyz_rpy_to_pose(values['pose_tool_in_flange_xyz_rpy']),
                          xyz_rpy_to_pose(values['pose_grasp_in_client_xyz_rpy']),
                          xyz_rpy_to_pose(values['pose_tool_at_grasp_in_grasp_xyz_rpy']),
                          xyz_rpy_to_pose(values['pose_base_in_client_desired_xyz_rpy']), values['q_hold'], gains)


class ObswControllerNode(Node):
    def __init__(self):
        super().__init__('obsw_controller')
        p = declare_parameters(self, PARAMS)
        self.rule = build_controller(p)
        self.joint_names = list(p.joint_names) or list(self.rule.model.joint_names)
        if len(self.joint_names) != self.rule.model.n:
            raise ParameterError(f"parameter 'joint_names': expected {self.rule.model.n} names")
        self.base_frame = p.base_frame
        self.overload = overload_guard(p, 1.0 / p.rate_hz, uses_sim_time(self))
        self.side = ObswSide(self.rule, p.rate_hz, p.input_timeout_s, self.overload)
        self.silent_reported = ''
        # Read at each tick, newest value only (the arm's joints come at 1 kHz, the states at the admittances'
        # decimated rate): no wake-up per message (hil_common.polled)
        self.inputs = (PolledSubscription(self, Odometry, 'client/state', 1, raw=False),
                       PolledSubscription(self, Odometry, 'servicer/state', 1, raw=False),
                       PolledSubscription(self, JointState, 'servicer_arm/joint_states', 1, raw=False))
        self.pub_wrench = self.create_publisher(WrenchStamped, 'servicer/base_wrench_cmd', 10)
        self.pub_tau = self.create_publisher(Float64MultiArray, 'servicer_arm/torque_cmd', 10)
        self.pub_grip = self.create_publisher(Bool, 'servicer/gripper_cmd', 10)
        self.pub_phase = self.create_publisher(String, 'obsw/phase', PHASE_QOS)
        self.phase = None
        self.status = OverloadStatus(self, self.overload, 'obsw', 'obsw_controller')
        self.create_timer(1.0 / p.rate_hz, self.tick)

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_state(self, which: str, msg, now_s: float):
        try:
            pose, twist = pose_from_msg(msg.pose.pose), twist_from_msg(msg.twist.twist)
        except ValueError:
            self.side.rejected += 1     # one count of refused inputs (ObswSide.rejected)
            return
        self.side.set_state(which, pose, twist, now_s)      # a non-finite one is counted there

    def on_joints(self, msg, now_s: float):
        joints = arm_joints(msg, self.joint_names)
        if joints is None:
            self.side.rejected += 1     # one count of refused inputs (ObswSide.rejected)
            return
        self.side.set_joints(*joints, now_s)

    def tick(self):
        guarded(self._tick, self.context)

    def take_inputs(self, now_s: float) -> None:
        """The newest states and joints since the last tick, received at ``now_s``."""
        client, servicer, joints = (subscription.take_latest() for subscription in self.inputs)
        if client is not None:
            self._on_state('client', client, now_s)
        if servicer is not None:
            self._on_state('servicer', servicer, now_s)
        if joints is not None:
            self.on_joints(joints, now_s)

    def destroy_node(self):
        for subscription in self.inputs:
            subscription.destroy()
        return super().destroy_node()

    def _tick(self):
        now_s = self._now_s()
        self.take_inputs(now_s)
        out = self.side.tick(now_s)
        self.status.after_tick()
        if out is None:
            return
        if out.silent != self.silent_reported:
            if out.silent:
                self.get_logger().warn(f'OBSW silent (commanding zero): {out.silent}')
            self.silent_reported = out.silent
        if out.phase is not None and out.phase != self.phase:
            self.phase = out.phase
            self.get_logger().info(f'phase {out.phase} at t = {self._now_s() - self.side.t0_s:.3f} s')
            self.pub_phase.publish(String(data=out.phase))
        msg = WrenchStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.base_frame
        wrench_to_msg(out.wrench_base_com, msg.wrench)
        self.pub_wrench.publish(msg)
        self.pub_tau.publish(Float64MultiArray(data=[float(v) for v in out.tau_arm]))
        if out.close_gripper is not None:
            self.pub_grip.publish(Bool(data=bool(out.close_gripper)))


def main(args=None) -> int:
    return run_node(ObswControllerNode, 'obsw_controller', args)


if __name__ == '__main__':
    sys.exit(main())
