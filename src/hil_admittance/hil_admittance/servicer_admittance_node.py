"""Servicer admittance node: a thin ROS shell over the seed 004 servicer rules.

Rules: :class:`hil_dynamics.servicer.ServicerAdmittance` (Eq. 18) and
:class:`hil_dynamics.servicer.ArmFeedForward` (Eq. 22); the absolute state is Eq. (23).

Topics (relative names, so a launch file can namespace or remap them):

* in  ``servicer/ft/wrench`` (geometry_msgs/WrenchStamped): the wrist F/T wrench ``F_e``,
  sensor frame, moved to the arm's EE frame through the constant ``pose_sensor_in_ee``;
* in  ``servicer/ft/fault`` (diagnostic_msgs/DiagnosticStatus, transient-local): while the
  wrist sensor reports a latched fault (level ERROR) the node *holds*: the commanded table
  pose stops moving (zero twist) and the arm gets only its gravity compensation;
* in  ``servicer_arm/joint_states`` (sensor_msgs/JointState): measured ``q, dq`` (``ddq`` by
  differencing ``dq`` between the samples' stamps, :meth:`ServicerSide.set_joints`);
* in  ``servicer/base_wrench_cmd`` (geometry_msgs/WrenchStamped): ``F_b`` from the OBSW,
  base body frame about the base CoM;
* in  ``servicer_arm/torque_cmd`` (std_msgs/Float64MultiArray): ``tau`` from the OBSW;
* out ``servicer/table/pose_cmd`` (PoseStamped) and ``servicer/table/twist_cmd``
  (TwistStamped): ``g_s`` (base CoM in the nominal frame) and ``V_s`` for the motion table;
  with ``table_pose_from_start`` the pose is ``g_s(0)^-1 g_s``, the base motion since the
  start, which a motion table in ``command_frame:=home`` expects;
* out ``servicer_arm/forward_effort_controller/commands`` (Float64MultiArray): ``tau_q`` of
  Eq. (22) for the arm's effort controller;
* out ``servicer/state`` (nav_msgs/Odometry): ``g_b = g_n g_s``, ``V_b`` (Eq. 23, orbit frame,
  body twist).
* in  ``servicer/table/twist_measured`` (TwistStamped, optional): the measured ``Ṽ_s`` of the
  base mock-up relative to the nominal; while none is fresh the commanded one stands in;
* in  ``obsw/phase`` (std_msgs/String, transient-local) and ``client/state`` (Odometry): with
  ``rebase_enabled`` the post-grasp re-basing of the nominal is planned from them
  (:mod:`hil_dynamics.rebase`: ``rebase_after_post_grasp_s`` after the first ``post_grasp``, over
  ``rebase_ramp_s``, starting ``rebase_lead_s`` later);
* out ``nominal/rebase_plan`` (Float64MultiArray, transient-local): that plan
  (:class:`hil_dynamics.rebase.RebasePlan`), which the client's node applies to its nominal as
  this node does to its own, from the same step;
* out ``servicer/passivity`` (Float64MultiArray): the passivity observer of the table port
  (``V_s`` against the generalised base wrench ``J_b^T F_e``; seed 004 Eqs. 26-28, §VI):
  ``[E_obs, E_port, E_integration (not observed here: 0), E_dissipated, beta]``; with
  ``passivity_control`` the damping ``-beta M_b V_s`` is added to ``F_b``.

Missing or stale OBSW commands count as zero (the OBSW is silent: the spacecraft coasts);
malformed inputs are counted and dropped. The node holds no physics and no policy: the
freshness checks, the joint-acceleration differencing, the hold on a fault and the
fixed-step pacing are :class:`hil_admittance.servicer_side.ServicerSide`.
"""

from __future__ import annotations

import sys

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from hil_admittance import rebase_topic
from hil_admittance.node_common import JointPicker
from hil_common.ros_main import guarded
from hil_admittance.overload_status import OverloadStatus
from hil_admittance.servicer_side import NO_ARM_JOINTS, ServicerMessages, ServicerSide
from hil_common.cdr import (CdrError, Float64ArrayEncoder, JointStateDecoder, decode_float64_array, decode_odometry,
                            decode_wrench_stamped)
from hil_common.conversions import (pose_from_msg, pose_from_xyzquat, stamp_to_seconds, twist_from_msg, wrench_from_msg,
                                    xyz_rpy_to_pose)
from hil_common.errors import InputError
from hil_common.lab_clock import MISSION_EPOCH_PARAM, clock_ns, mission_epoch, uses_sim_time
from hil_common.polled import PolledSubscription
from hil_common.overload import ERROR, overload_guard, overload_params
from hil_common.params import REQUIRED, Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_dynamics.passivity import PassivityController
from hil_dynamics.rebase import DEFAULT_LEAD_S, RebaseParams, RebaseSchedule
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerModel

FAULT_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

PARAMS = [
    Param('urdf_xml', REQUIRED, 'Servicer URDF (root link at the base CoM, seed 004 Eq. 12)', type='str'),
    Param('ee_frame', 'lbr_flange', 'EE frame of the URDF where F_e acts'),
    # The client's mass properties and initial twist come from the scenario (scenario.servicer_admittance_parameters),
    # never from defaults that would duplicate client_admittance's.
    Param('nominal_mass_kg', REQUIRED, 'Mass of the client whose unforced motion is the nominal (Eq. 4) [kg]',
          type='float', min=1e-6),
    Param('nominal_inertia_com_kgm2', REQUIRED, 'Client inertia about its CoM, row-major 3x3 [kg m^2]', type='float[]',
          length=9),
    Param('twist_nominal_body_0', REQUIRED, 'V_n(0) = V_t(0) [m/s, rad/s], linear first', type='float[]', length=6),
    Param('pose_base_in_nominal_0_xyz_rpy', [-4.8, -0.2, 1.1, 0.0, 1.5707963267948966, 0.0],
          'g_s(0): base CoM in the nominal frame at t = 0 [m, rad]', length=6),
    Param('twist_base_rel_body_0', [0.0] * 6, 'V_s(0) [m/s, rad/s] (seed 004 §III-C)', length=6),
    Param('pose_nominal_in_lab_xyz_rpy', [0.0, 0.0, 1.5, 0.0, 0.0, 0.0],
          'Lab pose of the nominal frame (where the lab gravity of Eq. 20 acts) [m, rad]', length=6),
    Param('pose_sensor_in_ee_xyz_rpy', [0.0] * 6, 'Constant pose of the wrist F/T frame in the EE frame [m, rad]', length=6),
    Param('gravity_m_s2', 9.80665, 'Lab gravity along lab -z [m/s^2]', min=0.0),
    Param('rate_hz', 1000.0, 'Integration and publication rate [Hz]', min=1.0, max=10000.0),
    Param('input_timeout_s', 0.05, 'F/T or OBSW commands older than this count as zero [s]', min=0.0),
    Param('max_catch_up', 20, 'Most steps run in one late timer callback; more are dropped and counted', min=1, max=1000),
    Param('wrench_frame_id', '', "Expected frame_id of servicer/ft/wrench (the F/T driver's sensor_frame): a wrench "
          "in another frame is refused and counted; '' accepts any (an empty frame_id is always accepted)"),
    Param('joint_names', [], 'Arm joint names in URDF order (empty: the URDF order)', type='str[]'),
    Param('table_pose_from_start', False, 'Publish g_s(0)^-1 g_s (the base motion since the start, for a motion '
          "table in command_frame 'home') instead of g_s"),
    Param('orbit_frame', 'orbit', 'Frame id of the orbit frame'),
    Param('nominal_frame', 'client_nominal', 'Frame id of the nominal frame g_n'),
    Param('base_frame', 'servicer_base_com', 'Frame id of the servicer base CoM body frame'),
    Param('passivity_control', False, 'Passivity controller on (seed 004 §VI): dissipate the energy the loop '
          'creates with a base damping -beta M_b V_s; off: observe only'),
    Param(*MISSION_EPOCH_PARAM),
    *overload_params('servicer/admittance/reset'),
    Param('rebase_enabled', False, 'Re-base the nominal onto the grasped stack after post_grasp (hil_dynamics.rebase)'),
    Param('rebase_after_post_grasp_s', 5.0, 'Settle time between the OBSW entering post_grasp and the plan [s]',
          min=0.0, max=600.0),
    Param('rebase_ramp_s', 10.0, 'Duration of the re-basing ramp [s]', min=0.0, max=600.0),
    Param('rebase_lead_s', DEFAULT_LEAD_S, "Time between making the plan and its start, for it to reach the client's node [s]",
          min=0.0, max=60.0),
    Param('passivity_max_rate_per_s', 100.0, 'Largest damping rate beta of the passivity controller [1/s] '
          '(keep it below rate_hz / 2)', min=0.0, max=10000.0),
]


def _lacks_frame(urdf_xml: str, frame: str) -> bool:
    """True if the URDF parses but has no frame ``frame`` (the error is then ``ee_frame``'s, not the URDF's)."""
    import pinocchio as pin

    try:
        return not pin.buildModelFromXML(urdf_xml).existFrame(frame)
    except Exception:  # noqa: BLE001 - an unparsable URDF is urdf_xml's error
        return False


def build_rules(p):
    """``(ServicerAdmittance, ArmFeedForward, pose_sensor_in_ee)`` from validated parameter values."""
    try:
        model = ServicerModel(p.urdf_xml, p.ee_frame)
    except Exception as exc:  # noqa: BLE001 - URDF parser errors come in several types
        name = 'ee_frame' if _lacks_frame(p.urdf_xml, p.ee_frame) else 'urdf_xml'
        raise ParameterError(f"parameter '{name}': {exc}") from exc
    try:
        body = RigidBody(p.nominal_mass_kg, np.array(p.nominal_inertia_com_kgm2).reshape(3, 3))
    except ValueError as exc:
        raise ParameterError(f"parameter 'nominal_inertia_com_kgm2': {exc}") from exc
    adm = ServicerAdmittance(model, body, p.twist_nominal_body_0, None,
                             xyz_rpy_to_pose(p.pose_base_in_nominal_0_xyz_rpy), p.twist_base_rel_body_0)
    ff = ArmFeedForward(ServicerModel(p.urdf_xml, p.ee_frame),
                        xyz_rpy_to_pose(p.pose_nominal_in_lab_xyz_rpy), p.gravity_m_s2)
    return adm, ff, xyz_rpy_to_pose(p.pose_sensor_in_ee_xyz_rpy)


def build_side(p, overload=None, epoch_s: float | None = None) -> ServicerSide:
    """The node's rule, :class:`ServicerSide`, from validated parameter values: the admittance and
    feed-forward of :func:`build_rules`, the table port's passivity observer/controller (``M_b`` at the
    start pose), the pacing, the re-basing schedule; ``epoch_s`` is the mission's t = 0 on the side's
    clock (None: its first tick). One definition for the node, the fused hot path and their tests."""
    adm, ff, pose_sensor_in_ee = build_rules(p)
    n = adm.model.n
    if p.joint_names and len(p.joint_names) != n:
        raise ParameterError(f"parameter 'joint_names': expected {n} names, got {len(p.joint_names)}")
    passivity = PassivityController(adm.model.mass_matrix(np.zeros(n))[:6, :6], p.passivity_max_rate_per_s,
                                    enabled=p.passivity_control)
    return ServicerSide(adm, ff, pose_sensor_in_ee, 1.0 / p.rate_hz, p.input_timeout_s, passivity,
                        max_catch_up=p.max_catch_up, table_pose_from_start=p.table_pose_from_start,
                        epoch_s=epoch_s, overload=overload,
                        rebase=RebaseSchedule(RebaseParams(True, p.rebase_after_post_grasp_s, p.rebase_ramp_s),
                                              p.rebase_lead_s) if p.rebase_enabled else None)


class ServicerAdmittanceNode(Node):
    """Plumbing around :class:`hil_admittance.servicer_side.ServicerSide` (which holds the policy)."""

    #: the wrist wrench and the arm's joints taken as raw CDR (the fused hot path: its ``on_ft`` decodes)
    raw_inputs = False
    #: the arm's joints, the OBSW's commands and the client's state not waited on by the executor but taken,
    #: as raw CDR, by :meth:`take_inputs`: the fused hot path calls it at each wrist sample (hil_common.polled)
    polled_inputs = False

    def __init__(self, name: str = 'servicer_admittance', params=PARAMS, timer: bool = True,
                 status_prefix: str = 'servicer/admittance'):
        """``name``, ``params``, ``timer`` and ``status_prefix`` let the fused servicer hot path
        (``hil_bringup.servicer_hot_path_node``) reuse this plumbing, driven by the wrist samples."""
        super().__init__(name)
        p = self.p = declare_parameters(self, params)
        # Seconds since start on the node clock (absolute epoch seconds would lose sub-microsecond precision).
        self.clock_ns = clock_ns(self)
        self.t0_ns = self.clock_ns()
        epoch_s = mission_epoch(self, p.mission_epoch_s)
        self.overload = overload_guard(p, 1.0 / p.rate_hz, uses_sim_time(self))
        self.side = build_side(p, self.overload, None if epoch_s is None else epoch_s - self.t0_ns * 1e-9)
        self.joint_names = list(p.joint_names) or list(self.side.adm.model.joint_names)
        self.wrench_frame_id = p.wrench_frame_id
        self.frames = (p.orbit_frame, p.nominal_frame, p.base_frame)
        self.rejected_reported = 0
        self.overruns_reported = 0
        # the fused hot path takes its two 1 kHz inputs as raw CDR (hil_common.cdr: a tenth of a core less)
        self.wrist_in = self.create_subscription(WrenchStamped, 'servicer/ft/wrench', self.on_ft, 10,
                                                 raw=self.raw_inputs)
        self.create_subscription(DiagnosticStatus, 'servicer/ft/fault', self.on_fault, FAULT_QOS)
        self.pick_joints = JointPicker(self.joint_names)
        self.decode_joints = JointStateDecoder()
        # (topic, type, handler of a message, handler of its raw CDR) of the inputs that come at the control rates
        inputs = [('servicer_arm/joint_states', JointState, self.on_joints, self.on_joints_raw),
                  ('servicer/base_wrench_cmd', WrenchStamped, self.on_base_wrench, self.on_base_wrench_raw),
                  ('servicer_arm/torque_cmd', Float64MultiArray, self.on_tau, self.on_tau_raw)]
        if p.rebase_enabled:
            inputs.append(('client/state', Odometry, self.on_client_state, self.on_client_state_raw))
        self.polled = []           # (subscription, raw handler), taken in this order by take_inputs
        for topic, msg_type, on_msg, on_raw in inputs:
            if self.polled_inputs:
                self.polled.append((PolledSubscription(self, msg_type, topic, 10, raw=True), on_raw))
            elif msg_type is JointState and self.raw_inputs:
                self.create_subscription(msg_type, topic, on_raw, 10, raw=True)
            else:
                self.create_subscription(msg_type, topic, on_msg, 10)
        self.create_subscription(TwistStamped, 'servicer/table/twist_measured', self.on_twist_measured, 10)
        if p.rebase_enabled:
            self.create_subscription(String, 'obsw/phase', self.on_phase, FAULT_QOS)
        self.pub_plan = self.create_publisher(Float64MultiArray, rebase_topic.TOPIC, rebase_topic.QOS)
        self.pub_pose = self.create_publisher(PoseStamped, 'servicer/table/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'servicer/table/twist_cmd', 10)
        self.pub_effort = self.create_publisher(Float64MultiArray, 'servicer_arm/forward_effort_controller/commands', 10)
        self.encode_effort = Float64ArrayEncoder(len(self.joint_names))     # published as raw CDR
        self.pub_state = self.create_publisher(Odometry, 'servicer/state', 10)
        self.pub_passivity = self.create_publisher(Float64MultiArray, 'servicer/passivity', 10)
        self.decimation = 1          # publish g_s, V_s, the state and the passivity every n-th output
        self.outputs = 0
        self.status = OverloadStatus(self, self.overload, status_prefix, name,
                                     override=lambda: (ERROR, 'holding: wrist F/T fault latched') if self.side.fault else None)
        self.messages = ServicerMessages(self.frames)     # the decimated messages as raw CDR
        if timer:
            self.create_timer(1.0 / p.rate_hz, self.tick)

    # -- inputs --------------------------------------------------------------------------
    def _now_s(self) -> float:
        return (self.clock_ns() - self.t0_ns) * 1e-9

    def _report_rejections(self) -> None:
        if self.side.rejected > self.rejected_reported:
            self.rejected_reported = self.side.rejected
            self.get_logger().warn(f'rejected {self.side.last_rejection} ({self.side.rejected} so far)',
                                   throttle_duration_sec=1.0)

    def wrong_wrist_frame(self, frame: str) -> str:
        """Why a wrist wrench in ``frame`` is refused ('' if it is not: no frame, or the expected one, or none
        expected)."""
        if self.wrench_frame_id and frame and frame != self.wrench_frame_id:
            return f"wrist wrench in frame '{frame}' (expected '{self.wrench_frame_id}')"
        return ''

    def on_ft(self, msg):
        wrong = self.wrong_wrist_frame(msg.header.frame_id)
        if wrong:
            self.side.reject(wrong)
        else:
            self.side.set_wrench_sensor(wrench_from_msg(msg.wrench), self._now_s())
        self._report_rejections()

    def on_base_wrench(self, msg):
        self.side.set_wrench_base(wrench_from_msg(msg.wrench), self._now_s())
        self._report_rejections()

    def on_tau(self, msg):
        self.side.set_tau(msg.data, self._now_s())
        self._report_rejections()

    def take_inputs(self) -> None:
        """The polled inputs' messages that arrived since the last call (``polled_inputs``), topic by topic,
        each topic's in their order."""
        for subscription, handle in self.polled:
            for buf in subscription.take_all():
                handle(buf)

    def _raw(self, buf, decode, what: str):
        """``decode(buf)``, or None after counting and reporting a malformed ``what``."""
        try:
            return decode(buf)
        except CdrError as exc:
            self.side.reject(f'malformed {what} ({exc})')
            self._report_rejections()
            return None

    def on_base_wrench_raw(self, buf):
        decoded = self._raw(buf, decode_wrench_stamped, 'base wrench command')
        if decoded is not None:
            self.side.set_wrench_base(decoded[3], self._now_s())
            self._report_rejections()

    def on_tau_raw(self, buf):
        tau = self._raw(buf, decode_float64_array, 'torque command')
        if tau is not None:
            self.side.set_tau(tau, self._now_s())
            self._report_rejections()

    def on_client_state_raw(self, buf, now_s: float | None = None):
        """The client's state as raw CDR, received at ``now_s`` (None: now)."""
        decoded = self._raw(buf, decode_odometry, 'client state')
        if decoded is None:
            return
        try:
            pose = pose_from_xyzquat(decoded[4])
        except InputError as exc:
            self.side.reject(f'client state: {exc}')
            self._report_rejections()
            return
        self.side.set_client_state(pose, decoded[5], self._now_s() if now_s is None else now_s)

    def on_fault(self, msg):
        if self.side.set_fault(msg.level >= DiagnosticStatus.ERROR):
            self.get_logger().warn(f'wrist F/T fault {"latched: holding" if self.side.fault else "cleared: resuming"}: '
                                   f'{msg.message}')

    def on_phase(self, msg):
        self.side.set_phase(msg.data, self._now_s())

    def on_joints_raw(self, buf):
        try:
            sec, nanosec, names, position, velocity = self.decode_joints(buf)
        except CdrError as exc:
            self.side.reject(f'malformed joint state ({exc})')
            self._report_rejections()
            return
        self._joints(self.pick_joints(names, position, velocity), sec + nanosec * 1e-9)

    def on_joints(self, msg):
        self._joints(self.pick_joints(msg.name, msg.position, msg.velocity), stamp_to_seconds(msg.header.stamp))

    def _joints(self, joints, stamp_s: float) -> None:
        if joints is None:
            self.side.reject(NO_ARM_JOINTS)
            self._report_rejections()
            return
        self.side.set_joints(*joints, self._now_s(), stamp_s)

    def on_client_state(self, msg):
        self.side.set_client_state(pose_from_msg(msg.pose.pose), twist_from_msg(msg.twist.twist), self._now_s())

    def on_twist_measured(self, msg):
        self.side.set_twist_measured(twist_from_msg(msg.twist), self._now_s())

    def report_dropped_steps(self) -> None:
        """Warn (at most once a second) when the pacer dropped steps since the last report."""
        pacer = self.side.pacer
        if pacer.overruns > self.overruns_reported:
            self.overruns_reported = pacer.overruns
            # how late the tick that dropped them came, on the node's clock (a simulated clock that moved on while the
            # node did not run shows as a late tick too)
            self.get_logger().warn(f'{pacer.overruns} admittance steps dropped so far (host overloaded; the last tick '
                                   f'{1e3 * pacer.last_late_s:.1f} ms after its step on the node\'s clock)',
                                   throttle_duration_sec=1.0)

    def send_effort(self, tau_q) -> None:
        """The arm's effort command (raw CDR through rclpy; the fused hot path may send it from compiled code)."""
        self.pub_effort.publish(self.encode_effort(tau_q))

    # -- the rule --------------------------------------------------------------------------
    def tick(self):
        guarded(self._tick, self.context)

    def _tick(self, now_s: float | None = None):
        out = self.side.tick(self._now_s() if now_s is None else now_s)
        self._report_rejections()
        self.status.after_tick()
        self.report_dropped_steps()
        if out is None:
            return None
        self.publish_output(out)
        return out

    def publish_output(self, out) -> None:
        """The re-basing plan (once), ``tau_q`` every output; ``g_s``, ``V_s``, the state and the
        passivity every ``decimation``-th."""
        if out.rebase_plan is not None:
            plan = out.rebase_plan
            self.pub_plan.publish(rebase_topic.plan_message(plan, self.t0_ns * 1e-9))   # t_start on the ROS clock
            self.get_logger().info(f're-basing the nominal onto the stack: plan published, ramp from t = '
                                   f'{plan.t_start:.3f} s over {plan.ramp_s:g} s (compound {plan.mass_kg:.0f} kg)')
        self.send_effort(out.tau_q)
        self.outputs += 1
        if self.outputs % self.decimation == 0:
            self.publish_decimated(out)

    def publish_decimated(self, out) -> None:
        """``g_s``, ``V_s``, the state and the passivity of the output ``out`` (every ``decimation``-th)."""
        # raw CDR (hil_common.cdr), stamped with the step's time on the ROS clock
        _, _, messages = self.messages.encode(self.t0_ns, out)
        for publisher, message in zip((self.pub_pose, self.pub_twist, self.pub_state, self.pub_passivity), messages):
            publisher.publish(message)


def main(args=None) -> int:
    return run_node(ServicerAdmittanceNode, 'servicer_admittance', args)


if __name__ == '__main__':
    sys.exit(main())
