"""Slave-law node (orbit): seed 001 Eq. (3) on the delayed master command, driving the motion table.

Topics (relative names):

* in  ``orbit/teleop/f_m`` (WrenchStamped) and ``orbit/teleop/x_vir`` (PoseStamped): the
  master force and virtual-arm pose, as delivered by the link (header stamp = send time on
  earth). A command is stale when ``now - stamp - delay_s > command_timeout_s``; then the
  slave is commanded **zero velocity** (and the condition is logged and counted).
* in  ``ft/wrench`` (WrenchStamped, our F/T driver on the slave wrist): ``f_s``. Expressed in
  the end-effector frame (``ft_frame:=end_effector``, rotated to the base with the current
  pose), in the flange axes (``ft_frame:=flange``: a sensor mounted on the flange, rotated with
  the measured flange pose; needs ``slave_robot``) or already in the base (``ft_frame:=base``); ``ft_sign`` makes it the wrench the slave
  applies to the payload (Eq. 3's sign). A stale wrist wrench also means zero velocity.
* in  ``joint_states`` (sensor_msgs/JointState, with ``slave_robot`` set): the slave robot's
  measured joints. ``x_s`` and ``v_s`` of Eq. (3) are their forward kinematics
  (:class:`hil_teleop.slave_measurement.MeasuredSlave`, the motion table's URDF): the end
  effector sits ``ee_in_flange_xyz`` from the flange (the wrist F/T frame, where the grip is),
  with axes parallel to the base at the first measurement. Joint states older than
  ``joint_states_timeout_s`` (or none yet) mean zero velocity. With ``slave_robot:=none``
  (no robot: the grip-contact simulator of ``grip_contact_node``) ``x_s`` is the integral of the
  command and ``v_s = v_s,c`` (Appendix A), starting at ``x_s0``.
* out ``table/pose_cmd`` (PoseStamped, base frame): the commanded pose, integrated from
  ``v_s,c`` in fixed steps ``dt = 1/rate_hz``, as many as are due on the node clock
  (:class:`hil_common.pacing.StepPacer`; under ``use_sim_time`` the lab twin's ``/clock``, from
  its first message: inputs that arrive before it are ignored) -- the velocity interface of a position-controlled
  robot; with a robot, the flange pose that puts the end effector there (for the motion table in
  ``command_frame:=base``), starting at the measured pose; ``table/twist_cmd`` (TwistStamped):
  the velocity as a body twist (feed-forward);
* out ``slave/x_s`` (PoseStamped): ``x_s`` (measured, with a robot) for the downlink (display on earth);
* out ``teleop/slave_terms`` (Float64MultiArray, 30 values): ``v_s,c, v_s,r``, force feedback,
  coupling, damping terms (world-aligned), for recording and plots.

The node holds no physics: :class:`hil_teleop.slave_law.SlaveLaw` computes Eq. (3). It takes and sends its
messages as serialized bytes (``raw=True``, the codecs of :mod:`hil_common.cdr`, checked against rclpy's own
serializer): rclpy's Python messages took about a seventh of the node's CPU (docs/performance.md, issue 17).
"""

from __future__ import annotations

import sys

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hil_common.cdr import (CdrError, Float64ArrayEncoder, JointStateReader, PoseStampedEncoder, TwistStampedEncoder,
                            decode_pose_stamped, decode_wrench_stamped)
from hil_common.conversions import pose_from_xyzquat, pose_xyzquat, seconds_of, stamp_of_seconds
from hil_common.params import ParameterError
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_teleop.coordinates import body_twist, pose_from_x, x_from_pose
from hil_teleop.delay_line import HeldCommand
from hil_teleop.node_params import GAIN_PARAMS, gains_from
from hil_common.pacing import StepPacer
from hil_teleop.slave_law import SlaveLaw, SlaveSide
from hil_teleop.slave_measurement import MeasuredSlave

PARAMS = GAIN_PARAMS + [
    Param('delay_s', 5.0, 'Nominal one-way delay earth -> orbit [s]', min=0.0, max=600.0),
    Param('command_timeout_s', 0.5, 'A master command later than delay + this is stale -> zero velocity [s]',
          min=1e-3),
    Param('wrench_timeout_s', 0.1, 'A wrist wrench older than this is stale -> zero velocity [s]', min=1e-3),
    Param('rate_hz', 500.0, 'Control rate (1/dt of Eq. 2) [Hz]', min=1.0, max=10000.0),
    Param('x_s0', [1.0, 0.0, 0.5, 0.0, 0.0, 0.0], 'Initial end-effector position [x y z roll pitch yaw] [m, rad]',
          length=6),
    Param('ft_frame', 'end_effector', 'Frame of the wrist wrench', choices=('end_effector', 'flange', 'base')),
    Param('slave_robot', 'none', "Slave robot model whose joint_states give x_s, v_s ('none': integrate the command)",
          choices=('none', 'ur10e', 'kr120r2500pro')),
    Param('ee_in_flange_xyz', [0.0, 0.0, 0.0], 'End effector (grip point, wrist F/T frame) in the flange frame [m]',
          length=3),
    Param('joint_states_timeout_s', 0.1, 'Joint states older than this are stale -> zero velocity [s]', min=1e-3),
    Param('ft_sign', 1.0, 'Multiplies the wrist wrench so it is the wrench applied to the payload',
          check=lambda v: None if v in (1.0, -1.0) else 'must be 1.0 or -1.0'),
    Param('base_frame', 'slave_base', 'Frame id of the slave base'),
]


class SlaveLawNode(Node):
    def __init__(self):
        super().__init__('slave_law')
        p = declare_parameters(self, PARAMS)
        self.side = SlaveSide(SlaveLaw(gains_from(p)), pose_from_x(p.x_s0))   # commanded end-effector pose
        self.dt = 1.0 / p.rate_hz
        self.held_f_m = HeldCommand(p.delay_s, p.command_timeout_s)
        self.held_x_vir = HeldCommand(p.delay_s, p.command_timeout_s)
        self.held_wrench = HeldCommand(0.0, p.wrench_timeout_s)
        self.ft_frame = p.ft_frame
        self.ft_sign = p.ft_sign
        self.kin, self.slave = None, None
        if p.slave_robot != 'none':
            from hil_motion_table.kinematics_helpers import make_kinematics
            self.kin = make_kinematics(p.slave_robot)
            self.ee_in_flange_xyz = p.ee_in_flange_xyz
            self.held_joints = HeldCommand(0.0, p.joint_states_timeout_s)
            self.read_joints = JointStateReader(self.kin.joint_names)
            self.create_subscription(JointState, 'joint_states', self.on_joint_states, 10, raw=True)
        elif self.ft_frame == 'flange':
            raise ParameterError("parameter 'ft_frame': 'flange' needs slave_robot (the measured flange pose)")
        self.measured = None
        self.v_s_c = np.zeros(6)
        self.rejected = 0
        self.stale_ticks = 0
        self.create_subscription(WrenchStamped, 'orbit/teleop/f_m', self.on_f_m, 10, raw=True)
        self.create_subscription(PoseStamped, 'orbit/teleop/x_vir', self.on_x_vir, 10, raw=True)
        self.create_subscription(WrenchStamped, 'ft/wrench', self.on_wrench, 10, raw=True)
        self.pub_pose = self.create_publisher(PoseStamped, 'table/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'table/twist_cmd', 10)
        self.pub_x_s = self.create_publisher(PoseStamped, 'slave/x_s', 10)
        self.pub_terms = self.create_publisher(Float64MultiArray, 'teleop/slave_terms', 10)
        self.encode_pose, self.encode_x_s = PoseStampedEncoder(p.base_frame), PoseStampedEncoder(p.base_frame)
        self.encode_twist = TwistStampedEncoder('slave_end_effector')
        self.encode_terms = Float64ArrayEncoder(30)
        self.pacer = None          # from the first tick with a clock (use_sim_time: the first /clock)
        self.create_timer(self.dt, self.tick)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _reject(self, what: str, exc: Exception):
        self.rejected += 1
        self.get_logger().warn(f'rejected {what}: {exc} ({self.rejected} so far)', throttle_duration_sec=1.0)

    def on_f_m(self, buf):
        if self._now() <= 0.0:     # the lab twin's /clock has not arrived yet (use_sim_time)
            return
        try:
            sec, nanosec, _, f = decode_wrench_stamped(buf)
        except CdrError as exc:
            return self._reject('f_m', exc)
        if not np.all(np.isfinite(f)):
            return self._reject('f_m', ValueError('non-finite'))
        self.held_f_m.update(seconds_of(sec, nanosec), f)

    def on_x_vir(self, buf):
        if self._now() <= 0.0:
            return
        try:
            sec, nanosec, _, values = decode_pose_stamped(buf)
            x = x_from_pose(pose_from_xyzquat(values))
        except ValueError as exc:          # (CdrError and InputError are ValueErrors)
            return self._reject('x_vir', exc)
        self.held_x_vir.update(seconds_of(sec, nanosec), x)

    def on_wrench(self, buf):
        if self._now() <= 0.0:
            return
        try:
            w = decode_wrench_stamped(buf)[3]
        except CdrError as exc:
            return self._reject('wrist wrench', exc)
        if not np.all(np.isfinite(w)):
            return self._reject('wrist wrench', ValueError('non-finite'))
        self.held_wrench.update(self._now(), self.ft_sign * w)

    def on_joint_states(self, buf):
        if self._now() <= 0.0:
            return
        try:
            q, qd = self.read_joints(buf)
        except CdrError as exc:
            return self._reject('joint_states', exc)
        if q is None or qd is None:
            return self._reject('joint_states', ValueError('missing joints, velocities or non-finite values'))
        if self.slave is None:                      # end-effector axes parallel to the base at the start
            self.slave = MeasuredSlave.aligned_at(self.kin, q, self.ee_in_flange_xyz)
            self.side.pose_ee_cmd = self.slave.pose(q)
        self.held_joints.update(self._now(), (q, qd))

    def _measure(self, now):
        """``(x_s, v_s, rotation of the F/T frame)`` measured, or ``None`` when stale / not yet."""
        joints = self.held_joints.get(now)
        if joints is None:
            return None
        m = self.slave.measure(*joints)
        return m.x_s, m.v_s, self.kin.forward(joints[0]).rotation if self.ft_frame == 'flange' else m.pose_ee_in_base.rotation

    def tick(self):
        now = self._now()
        if now <= 0.0:
            return
        if self.pacer is None:
            self.pacer = StepPacer(self.dt, now, max_catch_up=int(1.0 / self.dt))
        f_m, x_vir, wrench = self.held_f_m.get(now), self.held_x_vir.get(now), self.held_wrench.get(now)
        measured = self._measure(now) if self.kin is not None else None
        if self.kin is not None and measured is None:
            self.pacer.due(now)                     # no robot measurement: hold, publish nothing
            self.stale_ticks += 1
            self.get_logger().warn('slave joint states missing or stale: holding', throttle_duration_sec=2.0)
            return
        if wrench is None:
            f_m = None                           # cannot feel the payload: hold still
            f_s = np.zeros(6)
        elif self.ft_frame == 'base':
            f_s = wrench
        else:
            r = self.side.pose_ee_cmd.rotation if measured is None else measured[2]
            f_s = np.concatenate((r @ wrench[:3], r @ wrench[3:]))
        n = self.pacer.due(now)
        for _ in range(n):                          # fixed dt, catching up on late timer callbacks
            x_s = x_from_pose(self.side.pose_ee_cmd) if measured is None else measured[0]
            try:                                    # v_s measured (FK of the joint states), else v_s ~= v_s,c
                cmd = self.side.step(f_m, x_vir, x_s, f_s, self.dt, None if measured is None else measured[1])
            except ValueError as exc:
                self._reject('input', exc)
                return
            v = cmd.v_s_c
        if n == 0:
            return
        if cmd.stale:
            self.stale_ticks += 1
            self.get_logger().warn('master command or wrist wrench stale: zero velocity', throttle_duration_sec=2.0)
        sec, nanosec = stamp_of_seconds(self.pacer.step_time(self.pacer.steps_done))   # the last step's time
        if measured is None:
            pose = self.encode_pose(sec, nanosec, pose_xyzquat(self.side.pose_ee_cmd))
            twist = body_twist(self.side.pose_ee_cmd, v)
            self.pub_pose.publish(pose)
            self.pub_x_s.publish(pose)
        else:
            flange = self.slave.flange_pose(self.side.pose_ee_cmd)
            twist = self.slave.pose_ee_in_flange.act(pin.Motion(body_twist(self.side.pose_ee_cmd, v))).vector
            self.pub_pose.publish(self.encode_pose(sec, nanosec, pose_xyzquat(flange)))
            self.pub_x_s.publish(self.encode_x_s(sec, nanosec, pose_xyzquat(pose_from_x(measured[0]))))
        self.pub_twist.publish(self.encode_twist(sec, nanosec, twist))
        self.pub_terms.publish(self.encode_terms(np.concatenate(
            (v, cmd.v_s_r, cmd.force_feedback, cmd.coupling, cmd.damping))))


def main(args=None) -> int:
    return run_node(SlaveLawNode, 'slave_law', args)


if __name__ == '__main__':
    sys.exit(main())
