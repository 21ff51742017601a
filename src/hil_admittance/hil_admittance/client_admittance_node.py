"""Client admittance node: a thin ROS shell over :class:`hil_dynamics.client.ClientAdmittance`.

Topics (relative names, so a launch file can namespace or remap them):

* in  ``client/ft/wrench`` (geometry_msgs/WrenchStamped): the client F/T wrench in the
  sensor frame (``wrench_frame_id``: a wrench in another frame is refused and counted);
  transformed to the client CoM through the constant
  ``pose_sensor_in_client`` (seed 004 §III-A). The newest sample is held between ticks
  (zero-order hold); a stale or missing stream is treated as zero wrench, so the
  relative command stays put (seed 004 Eq. 11 unforced) and the condition is logged.
* out ``client/table/pose_cmd`` (geometry_msgs/PoseStamped): ``g_c``, the client CoM in the
  nominal frame, for the motion-table node.
* out ``client/table/twist_cmd`` (geometry_msgs/TwistStamped): ``V_c`` (body twist), the
  velocity feed-forward for the motion table.
* out ``client/state`` (nav_msgs/Odometry): ``g_t = g_n g_c`` and ``V_t = V_c + Delta V_c``
  (Eq. 23) in the orbit frame; the twist is the body twist (Odometry's child frame).
* in  ``client/table/twist_measured`` (geometry_msgs/TwistStamped, optional): the mock-up's
  measured body twist relative to the nominal frame (``Ṽ_c``, what the table realised); while
  none is fresh the commanded one stands in (Assumption 1).
* out ``client/passivity`` (std_msgs/Float64MultiArray): the passivity observer of the port
  (:class:`hil_dynamics.passivity.PassivityController`, seed 004 Eqs. 26-28, §VI):
  ``[E_obs, E_port, E_integration, E_dissipated, beta]`` [J, 1/s]; with
  ``passivity_control`` the damping ``-beta M_t V_c`` is added to the measured wrench.

* out ``client/admittance/status`` (diagnostic_msgs/DiagnosticStatus), service
  ``client/admittance/reset``: whether the node keeps up with its clock
  (:class:`hil_common.overload.OverloadGuard`; :mod:`hil_admittance.overload_status`), and WARN
  while it integrates without a measured wrench: before the first ``client/ft/wrench`` sample
  (logged when it comes) and while the stream is stale.

The policy is :class:`hil_admittance.client_side.ClientSide`: Eq. (11) in fixed steps of
``1/rate_hz`` on the node clock (a late timer callback runs the steps that are due, beyond
``max_catch_up`` they are dropped and counted), the wrench's freshness, one mission clock, and
the hold while the node cannot keep up. One set of messages is published per callback, stamped
with the time of its last step. The node holds no physics and no policy.
"""

from __future__ import annotations

import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from std_msgs.msg import Float64MultiArray
from rclpy.node import Node
from rclpy.time import Time

from hil_common.conversions import pose_to_msg, twist_from_msg, twist_to_msg, wrench_from_msg, xyz_rpy_to_pose
from hil_common.lab_clock import MISSION_EPOCH_PARAM, mission_epoch, uses_sim_time
from hil_common.overload import WARN, overload_guard, overload_params
from hil_common.params import Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_admittance import rebase_topic
from hil_admittance.client_side import ClientSide
from hil_admittance.overload_status import OverloadStatus
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.passivity import ClientPort
from hil_dynamics.rebase import load_kernels as load_rebase_kernels
from hil_dynamics.rigid_body import RigidBody

PARAMS = [
    Param('mass_kg', 7828.0, 'Client mass M_t [kg]', min=1e-6),
    Param('inertia_com_kgm2', [17023.0, 0.0, 0.0, 0.0, 129112.0, 0.0, 0.0, 0.0, 124826.0],
          'Client inertia about the CoM in body axes, row-major 3x3 [kg m^2]', length=9),
    Param('twist_client_body_0', [0.0, 0.0, 0.0, 0.0, -0.04363323129985824, 0.0],
          'Initial body twist V_t(0) = V_n(0) [m/s, rad/s], linear first', length=6),
    Param('pose_sensor_in_client_xyz_rpy', [-2.9, 0.0, 0.0, 0.0, 0.0, 0.0],
          'Constant pose of the F/T sensor frame in the client CoM frame [m, rad]', length=6),
    Param('rate_hz', 1000.0, 'Integration and publication rate [Hz]', min=1.0, max=10000.0),
    Param('wrench_timeout_s', 0.05, 'A wrench older than this is treated as zero [s]', min=0.0),
    Param('wrench_frame_id', '', "Expected frame_id of client/ft/wrench (the F/T driver's sensor_frame): a wrench "
          "in another frame is refused and counted; '' accepts any (an empty frame_id is always accepted)"),
    Param('max_catch_up', 20, 'Most steps run in one late timer callback; more are dropped and counted', min=1, max=1000),
    Param('orbit_frame', 'orbit', 'Frame id of the orbit (inertial) frame'),
    Param('nominal_frame', 'client_nominal', 'Frame id of the nominal frame g_n'),
    Param('client_frame', 'client_com', 'Frame id of the client CoM body frame'),
    Param('passivity_control', False, 'Passivity controller on (seed 004 §VI): dissipate the energy the loop '
          'creates with a damping -beta M_t V_c; off: observe only'),
    Param(*MISSION_EPOCH_PARAM),
    *overload_params('client/admittance/reset'),
    Param('passivity_max_rate_per_s', 100.0, 'Largest damping rate beta of the passivity controller [1/s] '
          '(keep it below rate_hz / 2)', min=0.0, max=10000.0),
]


def build_rule(values: dict):
    """The rule object and the sensor transform from validated parameter values."""
    try:
        body = RigidBody(values['mass_kg'], np.array(values['inertia_com_kgm2']).reshape(3, 3))
    except ValueError as exc:
        raise ParameterError(f"parameter 'inertia_com_kgm2': {exc}") from exc
    return ClientAdmittance(body, values['twist_client_body_0']), xyz_rpy_to_pose(values['pose_sensor_in_client_xyz_rpy'])


class ClientAdmittanceNode(Node):
    """Plumbing around :class:`hil_admittance.client_side.ClientSide` (which holds the policy)."""

    def __init__(self):
        super().__init__('client_admittance')
        p = declare_parameters(self, PARAMS)
        rule, pose_sensor_in_client = build_rule(p)
        self.frames = (p.orbit_frame, p.nominal_frame, p.client_frame)
        self.wrench_frame_id = p.wrench_frame_id
        self.refused_frame = 0
        self.rejected_reported = 0
        self.overruns_reported = 0
        # Passivity observer/controller of the port (hil_dynamics.passivity).
        port = ClientPort(rule, p.passivity_max_rate_per_s, enabled=p.passivity_control)
        self.overload = overload_guard(p, 1.0 / p.rate_hz, uses_sim_time(self))
        self.epoch_s = mission_epoch(self, p.mission_epoch_s)
        self.side_args = (port, pose_sensor_in_client, 1.0 / p.rate_hz, p.wrench_timeout_s, p.max_catch_up)
        # Seconds since the first clock reading (absolute epoch seconds would lose sub-microsecond
        # precision); under use_sim_time that is the lab twin's first /clock, so the side is built then.
        self.t0_ns = None
        self.side: ClientSide | None = None
        load_rebase_kernels()      # what the side, built in a callback, follows a re-basing plan with: loaded now
        self.create_subscription(WrenchStamped, 'client/ft/wrench', self.on_wrench, 10)
        self.create_subscription(TwistStamped, 'client/table/twist_measured', self.on_twist_measured, 10)
        rebase_topic.subscribe_rebase_plan(self, lambda plan, now: self.side.set_rebase_plan(plan, now),
                                           lambda t: t - self.t0_ns * 1e-9, self._now_s)
        self.pub_pose = self.create_publisher(PoseStamped, 'client/table/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'client/table/twist_cmd', 10)
        self.pub_state = self.create_publisher(Odometry, 'client/state', 10)
        self.pub_passivity = self.create_publisher(Float64MultiArray, 'client/passivity', 10)
        self.status = OverloadStatus(self, self.overload, 'client/admittance', 'client_admittance',
                                     override=self.wrench_status)
        self.msg_pose, self.msg_twist, self.msg_state = PoseStamped(), TwistStamped(), Odometry()
        self.msg_passivity = Float64MultiArray()
        self.msg_pose.header.frame_id = self.frames[1]
        self.msg_twist.header.frame_id = self.frames[2]
        self.msg_state.header.frame_id, self.msg_state.child_frame_id = self.frames[0], self.frames[2]
        self.create_timer(1.0 / p.rate_hz, self.tick)

    def _now_s(self) -> float | None:
        """Seconds on the node clock since its first reading; None before the clock runs (use_sim_time)."""
        now_ns = self.get_clock().now().nanoseconds
        if now_ns <= 0:
            return None
        if self.side is None:
            self.t0_ns = now_ns
            self.side = ClientSide(*self.side_args, epoch_s=None if self.epoch_s is None else
                                   self.epoch_s - now_ns * 1e-9, overload=self.overload)
        return (now_ns - self.t0_ns) * 1e-9

    def on_wrench(self, msg):
        now_s = self._now_s()
        if now_s is None:           # no /clock yet (use_sim_time)
            return
        frame = msg.header.frame_id
        if self.wrench_frame_id and frame and frame != self.wrench_frame_id:
            self.refused_frame += 1
            self.get_logger().warn(f"refused a wrench in frame '{frame}' (expected '{self.wrench_frame_id}'; "
                                   f'{self.refused_frame} so far)', throttle_duration_sec=1.0)
            return
        first = self.side.wrench_com.stamp_s is None
        if not self.side.set_wrench_sensor(wrench_from_msg(msg.wrench), now_s):
            self.get_logger().warn(f'rejected non-finite wrench ({self.side.rejected} so far)', throttle_duration_sec=1.0)
        elif first:
            self.get_logger().info(f'client wrench stream began ({now_s:.3f} s after the node clock started)')
            self.status.publish()

    def wrench_status(self):
        """(WARN, why) while the Eq. (11) steps run without a measured wrench: before the first sample
        of ``client/ft/wrench`` and while it is stale (older than ``wrench_timeout_s``); else None."""
        if self.side is None or self.side.wrench_com.stamp_s is None:
            return WARN, 'no client/ft/wrench yet: integrating unforced'
        if self.side.stale:
            return WARN, 'client/ft/wrench stale: integrating with zero wrench'
        return None

    def on_twist_measured(self, msg):
        now_s = self._now_s()
        if now_s is not None:
            self.side.set_twist_measured(twist_from_msg(msg.twist), now_s)

    def tick(self):
        now_s = self._now_s()
        if now_s is None:          # the lab twin's /clock has not arrived yet (use_sim_time)
            return
        was_stale = self.side.stale
        out = self.side.tick(now_s)
        self.status.after_tick()
        pacer = self.side.pacer
        if pacer.overruns > self.overruns_reported:
            self.overruns_reported = pacer.overruns
            self.get_logger().warn(f'{pacer.overruns} admittance steps dropped so far (host overloaded)',
                                   throttle_duration_sec=1.0)
        if out is None:
            return
        if out.stale_began:
            self.get_logger().warn('client wrench stream is stale: integrating with zero wrench')
        if self.side.stale != was_stale:
            if was_stale:
                self.get_logger().info('client wrench stream fresh again')
            self.status.publish()
        state = out.state
        stamp = Time(nanoseconds=self.t0_ns + int(round(out.step_time_s * 1e9))).to_msg()
        self.msg_pose.header.stamp = self.msg_twist.header.stamp = self.msg_state.header.stamp = stamp
        pose_to_msg(state.pose_client_in_nominal, self.msg_pose.pose)
        twist_to_msg(out.twist_table_cmd, self.msg_twist.twist)
        g_t, v_t = state.absolute()
        pose_to_msg(g_t, self.msg_state.pose.pose)
        twist_to_msg(v_t, self.msg_state.twist.twist)
        self.pub_pose.publish(self.msg_pose)
        self.pub_twist.publish(self.msg_twist)
        self.pub_state.publish(self.msg_state)
        self.msg_passivity.data = self.side.port.out.as_list()
        self.pub_passivity.publish(self.msg_passivity)


def main(args=None) -> int:
    return run_node(ClientAdmittanceNode, 'client_admittance', args)


if __name__ == '__main__':
    sys.exit(main())
