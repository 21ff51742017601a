"""Slave-law node (orbit): seed 001 Eq. (3) on the delayed master command, driving the motion table.

Topics (relative names):

* in  ``orbit/teleop/f_m`` (WrenchStamped) and ``orbit/teleop/x_vir`` (PoseStamped): the
  master force and virtual-arm pose, as delivered by the link (header stamp = send time on
  earth). A command is stale when ``now - stamp - delay_s > command_timeout_s``; then the
  slave is commanded **zero velocity** (and the condition is logged and counted).
* in  ``ft/wrench`` (WrenchStamped, our F/T driver on the slave wrist): ``f_s``. Expressed in
  the end-effector frame (``ft_frame:=end_effector``, rotated to the base with the current
  pose) or already in the base (``ft_frame:=base``); ``ft_sign`` makes it the wrench the slave
  applies to the payload (Eq. 3's sign). A stale wrist wrench also means zero velocity.
* out ``table/pose_cmd`` (PoseStamped, base frame): ``x_s``, the slave end effector, integrated
  from ``v_s,c`` (Appendix A: ``v_s ~= v_s,c``) in fixed steps ``dt = 1/rate_hz``, as many as
  are due on the node clock (:class:`hil_common.pacing.StepPacer`), for the motion-table node;
  ``table/twist_cmd`` (TwistStamped): the same velocity as a body twist (feed-forward);
* out ``slave/x_s`` (PoseStamped): ``x_s`` for the downlink (display on earth);
* out ``teleop/slave_terms`` (Float64MultiArray, 30 values): ``v_s,c, v_s,r``, force feedback,
  coupling, damping terms (world-aligned), for recording and plots.

The node holds no physics: :class:`hil_teleop.slave_law.SlaveLaw` computes Eq. (3).
"""

from __future__ import annotations

import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray

from hil_common.conversions import (pose_from_msg, pose_to_msg, seconds_to_stamp, stamp_to_seconds, twist_to_msg,
                                    wrench_from_msg)
from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_teleop.coordinates import advance_pose_world, body_twist, pose_from_x, x_from_pose
from hil_teleop.delay_line import HeldCommand
from hil_teleop.node_params import GAIN_PARAMS, gains_from
from hil_common.pacing import StepPacer
from hil_teleop.slave_law import SlaveLaw

PARAMS = GAIN_PARAMS + [
    Param('delay_s', 5.0, 'Nominal one-way delay earth -> orbit [s]', min=0.0, max=600.0),
    Param('command_timeout_s', 0.5, 'A master command later than delay + this is stale -> zero velocity [s]',
          min=1e-3),
    Param('wrench_timeout_s', 0.1, 'A wrist wrench older than this is stale -> zero velocity [s]', min=1e-3),
    Param('rate_hz', 500.0, 'Control rate (1/dt of Eq. 2) [Hz]', min=1.0, max=10000.0),
    Param('x_s0', [1.0, 0.0, 0.5, 0.0, 0.0, 0.0], 'Initial end-effector position [x y z roll pitch yaw] [m, rad]',
          length=6),
    Param('ft_frame', 'end_effector', 'Frame of the wrist wrench', choices=('end_effector', 'base')),
    Param('ft_sign', 1.0, 'Multiplies the wrist wrench so it is the wrench applied to the payload',
          check=lambda v: None if v in (1.0, -1.0) else 'must be 1.0 or -1.0'),
    Param('base_frame', 'slave_base', 'Frame id of the slave base'),
]


class SlaveLawNode(Node):
    def __init__(self):
        super().__init__('slave_law')
        p = declare_parameters(self, PARAMS)
        self.law = SlaveLaw(gains_from(p))
        self.dt = 1.0 / p['rate_hz']
        self.held_f_m = HeldCommand(p['delay_s'], p['command_timeout_s'])
        self.held_x_vir = HeldCommand(p['delay_s'], p['command_timeout_s'])
        self.held_wrench = HeldCommand(0.0, p['wrench_timeout_s'])
        self.ft_in_ee = p['ft_frame'] == 'end_effector'
        self.ft_sign = p['ft_sign']
        self.pose = pose_from_x(p['x_s0'])
        self.v_s_c = np.zeros(6)
        self.rejected = 0
        self.stale_ticks = 0
        self.create_subscription(WrenchStamped, 'orbit/teleop/f_m', self.on_f_m, 10)
        self.create_subscription(PoseStamped, 'orbit/teleop/x_vir', self.on_x_vir, 10)
        self.create_subscription(WrenchStamped, 'ft/wrench', self.on_wrench, 10)
        self.pub_pose = self.create_publisher(PoseStamped, 'table/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'table/twist_cmd', 10)
        self.pub_x_s = self.create_publisher(PoseStamped, 'slave/x_s', 10)
        self.pub_terms = self.create_publisher(Float64MultiArray, 'teleop/slave_terms', 10)
        self.msg_pose, self.msg_twist = PoseStamped(), TwistStamped()
        self.msg_pose.header.frame_id = p['base_frame']
        self.msg_twist.header.frame_id = 'slave_end_effector'
        self.pacer = StepPacer(self.dt, self._now(), max_catch_up=int(1.0 / self.dt))
        self.create_timer(self.dt, self.tick)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _reject(self, what: str, exc: Exception):
        self.rejected += 1
        self.get_logger().warn(f'rejected {what}: {exc} ({self.rejected} so far)', throttle_duration_sec=1.0)

    def on_f_m(self, msg):
        f = wrench_from_msg(msg.wrench)
        if not np.all(np.isfinite(f)):
            return self._reject('f_m', ValueError('non-finite'))
        self.held_f_m.update(stamp_to_seconds(msg.header.stamp), f)

    def on_x_vir(self, msg):
        try:
            x = x_from_pose(pose_from_msg(msg.pose))
        except ValueError as exc:
            return self._reject('x_vir', exc)
        self.held_x_vir.update(stamp_to_seconds(msg.header.stamp), x)

    def on_wrench(self, msg):
        w = wrench_from_msg(msg.wrench)
        if not np.all(np.isfinite(w)):
            return self._reject('wrist wrench', ValueError('non-finite'))
        self.held_wrench.update(self._now(), self.ft_sign * w)

    def tick(self):
        now = self._now()
        f_m, x_vir, wrench = self.held_f_m.get(now), self.held_x_vir.get(now), self.held_wrench.get(now)
        if wrench is None:
            f_m = None                           # cannot feel the payload: hold still
            f_s = np.zeros(6)
        else:
            r = self.pose.rotation
            f_s = np.concatenate((r @ wrench[:3], r @ wrench[3:])) if self.ft_in_ee else wrench
        n = self.pacer.due(now)
        for _ in range(n):                          # fixed dt, catching up on late timer callbacks
            try:
                cmd = self.law.command(f_m, x_vir, x_from_pose(self.pose), f_s)
            except ValueError as exc:
                self._reject('input', exc)
                return
            v = cmd.v_s_c
            self.law.observe_velocity(v)                              # Appendix A: v_s ~= v_s,c
            self.pose = advance_pose_world(self.pose, v, self.dt)
        if n == 0:
            return
        if cmd.stale:
            self.stale_ticks += 1
            self.get_logger().warn('master command or wrist wrench stale: zero velocity', throttle_duration_sec=2.0)
        for m in (self.msg_pose, self.msg_twist):     # stamped with the time of the last step
            seconds_to_stamp(self.pacer.step_time(self.pacer.steps_done), m.header.stamp)
        pose_to_msg(self.pose, self.msg_pose.pose)
        twist_to_msg(body_twist(self.pose, v), self.msg_twist.twist)
        self.pub_pose.publish(self.msg_pose)
        self.pub_x_s.publish(self.msg_pose)
        self.pub_twist.publish(self.msg_twist)
        self.pub_terms.publish(Float64MultiArray(data=np.concatenate(
            (v, cmd.v_s_r, cmd.force_feedback, cmd.coupling, cmd.damping)).tolist()))


def main(args=None) -> int:
    return run_node(SlaveLawNode, 'slave_law', args)


if __name__ == '__main__':
    sys.exit(main())
