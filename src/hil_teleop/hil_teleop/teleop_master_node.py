"""Teleop master node (earth): operator force ``f_m`` and the virtual arm/payload, seed 001 Eqs. (1), (4)-(10).

Source of ``f_m`` (parameter ``source``):

* ``ft``: ``master/ft/wrench`` (WrenchStamped, our F/T driver on the master stylus),
  :func:`hil_teleop.master.force_from_wrench` with ``ft_deadband``;
* ``joy``: ``joy`` (sensor_msgs/Joy), :func:`hil_teleop.master.force_from_joy`;
* ``scripted``: :class:`hil_teleop.master.ScriptedOperator` from ``scripted_pushes``
  (flat ``[start_s, end_s, fx, fy, fz, tx, ty, tz] * n``, times from node start).

An input older than ``input_timeout_s`` counts as zero force. The node advances
:class:`hil_teleop.virtual.VirtualEnvironment` by fixed steps of ``1/rate_hz``, as many as are
due on the node clock (:class:`hil_common.pacing.StepPacer`), from the first instant that clock
reads a time (under ``use_sim_time`` the lab twin's first ``/clock``: the scripted pushes' times
count from there), and publishes (relative names):

* ``teleop/f_m`` (WrenchStamped) and ``teleop/x_vir`` (PoseStamped, base frame): the uplink;
* ``teleop/virtual_payload/pose`` (PoseStamped) and ``teleop/f_vir`` (WrenchStamped): for display.
"""

from __future__ import annotations

import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import Joy

from hil_common.conversions import pose_to_msg, seconds_to_stamp, wrench_from_msg, wrench_to_msg
from hil_common.params import Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_teleop.coordinates import pose_from_x
from hil_teleop.master import Push, ScriptedOperator, force_from_joy, force_from_wrench
from hil_teleop.node_params import GAIN_PARAMS, gains_from
from hil_common.pacing import StepPacer
from hil_teleop.virtual import VirtualContact, VirtualEnvironment, VirtualPayload

PARAMS = GAIN_PARAMS + [
    Param('source', 'scripted', 'Where f_m comes from', choices=('scripted', 'ft', 'joy')),
    Param('scripted_pushes', [2.0, 22.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0],
          'Scripted operator: [start_s, end_s, fx, fy, fz, tx, ty, tz] * n [s, N, N m]',
          check=lambda v: None if len(v) % 8 == 0 else 'needs a multiple of 8 numbers'),
    Param('scripted_ramp_s', 2.0, 'Raised-cosine edge of every scripted push [s]', min=0.0),
    Param('scripted_start_subscribers', 1,
          "The scripted operator's time zero waits until teleop/f_m has this many subscribers (the uplink's "
          'delay line; more with recorders that must see the whole script; 0: start at the first tick)', min=0),
    Param('ft_deadband', [0.2, 0.2, 0.2, 0.02, 0.02, 0.02], 'Master F/T deadband [N, N m]', length=6, min=0.0,
          tunable=True),
    Param('joy_axis_map', [1, 0, -1, -1, -1, 3], 'Joy axis for each f_m component (-1: unused)', length=6, min=-1),
    Param('joy_scale', [2.0, 2.0, 2.0, 0.2, 0.2, 0.2], 'f_m at full joy deflection [N, N m]', length=6, tunable=True),
    Param('joy_deadband', 0.05, 'Joy deadband on the normalised axis', min=0.0, max=1.0, tunable=True),
    Param('input_timeout_s', 0.2, 'An F/T or joy input older than this counts as zero [s]', min=1e-3),
    Param('payload_mass_kg', 4500.0, 'Virtual payload mass m (Eq. 8) [kg]', min=1e-3),
    Param('payload_inertia_kgm2', [4875.0, 0.0, 0.0, 0.0, 4875.0, 0.0, 0.0, 0.0, 3000.0],
          'Virtual payload inertia tensor I about its CoM, body axes, row-major [kg m^2] (Eq. 8)', length=9),
    Param('contact_k_t', [2e4, 2e4, 2e4, 2e3, 2e3, 2e3], 'Virtual contact stiffness K_t (Eq. 7)', length=6, min=0.0),
    Param('contact_d_t', [2e2, 2e2, 2e2, 2e1, 2e1, 2e1], 'Virtual contact damping D_t (Eq. 7)', length=6, min=0.0),
    Param('x0', [1.0, 0.0, 0.5, 0.0, 0.0, 0.0], 'Initial arm/payload grip position [m, rad]', length=6),
    Param('rate_hz', 500.0, 'Virtual environment rate (1/dt) [Hz]', min=1.0, max=10000.0),
    Param('base_frame', 'slave_base', 'Frame id of the (virtual) slave base'),
]


def build_environment(p) -> VirtualEnvironment:
    gains = gains_from(p)
    try:
        payload = VirtualPayload(p.payload_mass_kg, np.array(p.payload_inertia_kgm2).reshape(3, 3), x0=p.x0)
    except ValueError as exc:
        raise ParameterError(f"parameter 'payload_inertia_kgm2': {exc}") from exc
    return VirtualEnvironment(gains, payload, VirtualContact(p.contact_k_t, p.contact_d_t), 1.0 / p.rate_hz)


def build_operator(p) -> ScriptedOperator:
    flat = p.scripted_pushes
    try:
        return ScriptedOperator([Push(flat[i], flat[i + 1], tuple(flat[i + 2:i + 8]), p.scripted_ramp_s)
                                 for i in range(0, len(flat), 8)])
    except ValueError as exc:
        raise ParameterError(f"parameter 'scripted_pushes': {exc}") from exc


class TeleopMasterNode(Node):
    def __init__(self):
        super().__init__('teleop_master')
        p = declare_parameters(self, PARAMS, on_set=self._on_set)
        self.p = p
        self.env = build_environment(p)
        self.operator = build_operator(p) if p.source == 'scripted' else None
        self.timeout_ns = int(p.input_timeout_s * 1e9)
        self.input = np.zeros(6)
        self.input_ns = None
        self.rejected = 0
        if p.source == 'ft':
            self.create_subscription(WrenchStamped, 'master/ft/wrench', self.on_wrench, 10)
        elif p.source == 'joy':
            self.create_subscription(Joy, 'joy', self.on_joy, 10)
        depth = 100                 # a catch-up burst of samples (tick) is queued, not overwritten
        self.pub_f_m = self.create_publisher(WrenchStamped, 'teleop/f_m', depth)
        self.pub_x_vir = self.create_publisher(PoseStamped, 'teleop/x_vir', depth)
        self.pub_payload = self.create_publisher(PoseStamped, 'teleop/virtual_payload/pose', depth)
        self.pub_f_vir = self.create_publisher(WrenchStamped, 'teleop/f_vir', depth)
        self.msgs = (WrenchStamped(), PoseStamped(), PoseStamped(), WrenchStamped())
        for m in self.msgs:
            m.header.frame_id = p.base_frame
        self.t0_ns = None          # the first tick with a clock (0 under use_sim_time before the first /clock)
        self.pacer = None
        self.create_timer(self.env.dt, self.tick)

    def _on_set(self, name: str, value) -> None:
        """A tunable parameter (dead bands, joy scale) set at run time applies from the next input."""
        self.p = self.p.replace(**{name: value})

    def _accept(self, f):
        self.input = f
        self.input_ns = self.get_clock().now().nanoseconds

    def _reject(self, exc):
        self.rejected += 1
        self.get_logger().warn(f'rejected master input: {exc} ({self.rejected} so far)', throttle_duration_sec=1.0)

    def on_wrench(self, msg):
        try:
            self._accept(force_from_wrench(wrench_from_msg(msg.wrench), deadband=self.p.ft_deadband))
        except ValueError as exc:
            self._reject(exc)

    def on_joy(self, msg):
        try:
            self._accept(force_from_joy(msg.axes, self.p.joy_axis_map, self.p.joy_scale, self.p.joy_deadband))
        except ValueError as exc:
            self._reject(exc)

    def f_m(self, now_ns: int, t_step_s: float) -> np.ndarray:
        if self.operator is not None:
            return self.operator(t_step_s - self.t0_ns * 1e-9)
        if self.input_ns is None or now_ns - self.input_ns > self.timeout_ns:
            return np.zeros(6)
        return self.input

    def tick(self):
        now = self.get_clock().now()
        if now.nanoseconds <= 0:       # the lab twin's /clock has not arrived yet (use_sim_time)
            return
        if self.pacer is None:
            if self.operator is not None and \
                    self.pub_f_m.get_subscription_count() < self.p.scripted_start_subscribers:
                # a script started before its uplink is connected loses its start (a late-matched reader
                # never receives the samples sent before): the operator waits for the link
                self.get_logger().info(
                    f'the scripted operator waits for {self.p.scripted_start_subscribers} subscriber(s) of '
                    f'teleop/f_m ({self.pub_f_m.get_subscription_count()} so far)', throttle_duration_sec=2.0)
                return
            self.t0_ns = now.nanoseconds
            self.pacer = StepPacer(self.env.dt, self.t0_ns * 1e-9, max_catch_up=int(1.0 / self.env.dt))
        n = self.pacer.due(now.nanoseconds * 1e-9)
        if n == 0:
            return
        first = self.pacer.steps_done - n + 1
        m_f_m, m_x_vir, m_payload, m_f_vir = self.msgs
        for k in range(first, first + n):          # catch up on late timer callbacks (fixed dt) ...
            f_m = self.f_m(now.nanoseconds, self.pacer.step_time(k))
            s = self.env.step(f_m)
            # ... and send every step's uplink sample, stamped with its step's time: a late callback
            # delays samples, it does not drop them (under load a whole 0.3 s of the operator's pull
            # went missing at its start when only the last step of a catch-up was sent)
            for m in self.msgs:
                seconds_to_stamp(self.pacer.step_time(k), m.header.stamp)
            wrench_to_msg(f_m, m_f_m.wrench)
            pose_to_msg(pose_from_x(s.x_vir), m_x_vir.pose)
            pose_to_msg(pose_from_x(s.x_t), m_payload.pose)
            wrench_to_msg(s.f_vir, m_f_vir.wrench)
            self.pub_f_m.publish(m_f_m)
            self.pub_x_vir.publish(m_x_vir)
            self.pub_payload.publish(m_payload)
            self.pub_f_vir.publish(m_f_vir)


def main(args=None) -> int:
    return run_node(TeleopMasterNode, 'teleop_master', args)


if __name__ == '__main__':
    sys.exit(main())
