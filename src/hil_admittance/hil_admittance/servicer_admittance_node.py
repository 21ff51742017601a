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
  differencing ``dq`` between samples);
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
* out ``servicer/passivity`` (Float64MultiArray): the passivity observer of the table port
  (``V_s`` against the generalised base wrench ``J_b^T F_e``; seed 004 Eqs. 26-28, §VI):
  ``[E_obs, E_port, E_integration (not observed here: 0), E_dissipated, beta]``; with
  ``passivity_control`` the damping ``-beta M_b V_s`` is added to ``F_b``.

Missing or stale OBSW commands count as zero (the OBSW is silent: the spacecraft coasts);
malformed inputs are counted and dropped. The node holds no physics.
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
from std_msgs.msg import Float64MultiArray

from hil_admittance.node_common import arm_joints, guarded
from hil_common.conversions import pose_to_msg, twist_from_msg, twist_to_msg, wrench_from_msg, xyz_rpy_to_pose
from hil_common.params import REQUIRED, Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_dynamics.passivity import PassivityController
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import transform_wrench
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


class ServicerAdmittanceNode(Node):
    def __init__(self):
        super().__init__('servicer_admittance')
        p = declare_parameters(self, PARAMS)
        self.adm, self.ff, self.pose_sensor_in_ee = build_rules(p)
        n = self.adm.model.n
        names = list(p.joint_names) or list(self.adm.model.joint_names)
        if len(names) != n:
            raise ParameterError(f"parameter 'joint_names': expected {n} names, got {len(names)}")
        self.joint_names = names
        self.dt = 1.0 / p.rate_hz
        self.timeout_ns = int(p.input_timeout_s * 1e9)
        self.wrench_frame_id = p.wrench_frame_id
        self.frames = (p.orbit_frame, p.nominal_frame, p.base_frame)
        self.pose_start_inv = self.adm.state.pose_base_in_nominal.inverse() if p.table_pose_from_start else None
        self.n = n
        self.q = self.dq = None
        self.ddq = np.zeros(n)
        self.last_js_ns = None
        self.inputs = {'wrench_ee': [np.zeros(6), None], 'wrench_base_com': [np.zeros(6), None],
                       'tau_obsw': [np.zeros(n), None]}
        self.rejected = 0
        self.fault = False
        self.holding_reported = False
        self.create_subscription(WrenchStamped, 'servicer/ft/wrench', self.on_ft, 10)
        self.create_subscription(DiagnosticStatus, 'servicer/ft/fault', self.on_fault, FAULT_QOS)
        self.create_subscription(JointState, 'servicer_arm/joint_states', self.on_joints, 10)
        self.create_subscription(WrenchStamped, 'servicer/base_wrench_cmd', self.on_base_wrench, 10)
        self.create_subscription(Float64MultiArray, 'servicer_arm/torque_cmd', self.on_tau, 10)
        self.pub_pose = self.create_publisher(PoseStamped, 'servicer/table/pose_cmd', 10)
        self.pub_twist = self.create_publisher(TwistStamped, 'servicer/table/twist_cmd', 10)
        self.pub_effort = self.create_publisher(Float64MultiArray, 'servicer_arm/forward_effort_controller/commands', 10)
        self.pub_state = self.create_publisher(Odometry, 'servicer/state', 10)
        # Passivity observer/controller of the table port (hil_dynamics.passivity); M_b at the start pose.
        self.passivity = PassivityController(self.adm.model.mass_matrix(np.zeros(n))[:6, :6],
                                             p['passivity_max_rate_per_s'], enabled=p['passivity_control'])
        self.twist_measured, self.last_twist_ns = np.zeros(6), None
        self.create_subscription(TwistStamped, 'servicer/table/twist_measured', self.on_twist_measured, 10)
        self.pub_passivity = self.create_publisher(Float64MultiArray, 'servicer/passivity', 10)
        self.passivity_out = None
        self.msg_pose, self.msg_twist, self.msg_state = PoseStamped(), TwistStamped(), Odometry()
        self.msg_pose.header.frame_id = self.frames[1]
        self.msg_twist.header.frame_id = self.frames[2]
        self.msg_state.header.frame_id, self.msg_state.child_frame_id = self.frames[0], self.frames[2]
        self.create_timer(self.dt, self.tick)

    # -- inputs --------------------------------------------------------------------------
    def _now_ns(self) -> int:
        return self.get_clock().now().nanoseconds

    def _reject(self, what: str) -> None:
        self.rejected += 1
        self.get_logger().warn(f'rejected {what} ({self.rejected} so far)', throttle_duration_sec=1.0)

    def _store(self, key: str, value: np.ndarray, size: int) -> None:
        if value.shape != (size,) or not np.all(np.isfinite(value)):
            self._reject(f'{key} {value.tolist()}')
            return
        self.inputs[key] = [value, self._now_ns()]

    def on_ft(self, msg):
        frame = msg.header.frame_id
        if self.wrench_frame_id and frame and frame != self.wrench_frame_id:
            self._reject(f"wrist wrench in frame '{frame}' (expected '{self.wrench_frame_id}')")
            return
        wrench = wrench_from_msg(msg.wrench)
        if np.all(np.isfinite(wrench)):
            wrench = transform_wrench(self.pose_sensor_in_ee, wrench)
        self._store('wrench_ee', wrench, 6)

    def on_base_wrench(self, msg):
        self._store('wrench_base_com', wrench_from_msg(msg.wrench), 6)

    def on_tau(self, msg):
        self._store('tau_obsw', np.asarray(msg.data, dtype=float), self.n)

    def on_fault(self, msg):
        latched = msg.level >= DiagnosticStatus.ERROR
        if latched != self.fault:
            self.get_logger().warn(f'wrist F/T fault {"latched: holding" if latched else "cleared: resuming"}: {msg.message}')
        self.fault = latched

    def on_joints(self, msg):
        joints = arm_joints(msg, self.joint_names)
        if joints is None:
            self._reject('joint state without the arm joints, or non-finite')
            return
        q, dq = joints
        now = self._now_ns()
        if self.dq is not None and self.last_js_ns is not None and now > self.last_js_ns:
            self.ddq = (dq - self.dq) / ((now - self.last_js_ns) * 1e-9)
        self.q, self.dq, self.last_js_ns = q, dq, now

    def on_twist_measured(self, msg):
        twist = twist_from_msg(msg.twist)
        if np.all(np.isfinite(twist)):
            self.twist_measured, self.last_twist_ns = twist, self._now_ns()

    def _passivity_wrench(self, s, wrench_ee: np.ndarray, now: int) -> np.ndarray:
        """Observe the table port over the coming step; the damping to add to ``F_b`` (seed 004 §VI)."""
        v_cmd = s.twist_base_rel_body
        fresh = self.last_twist_ns is not None and now - self.last_twist_ns <= self.timeout_ns
        jac_b = self.adm.model.ee_jacobian(self.q)[:, :6]
        self.passivity_out = self.passivity.update(self.twist_measured if fresh else v_cmd, v_cmd, jac_b.T @ wrench_ee,
                                                   self.dt)
        return self.passivity_out.wrench_pc

    def _fresh(self, key: str, now: int) -> np.ndarray:
        value, stamp = self.inputs[key]
        return value if stamp is not None and now - stamp <= self.timeout_ns else np.zeros_like(value)

    # -- the rule --------------------------------------------------------------------------
    def tick(self):
        guarded(self._tick, self.context)

    def _tick(self):
        if self.q is None:
            return                                   # no arm state yet: nothing to command
        now = self._now_ns()
        s = self.adm.state
        vn_dot = self.adm.nominal_acceleration(s.twist_nominal_body)
        if self.fault:
            # Hold: the table keeps its last pose, the arm gets only its gravity compensation.
            if not self.holding_reported:
                self.holding_reported = True
            twist_cmd = np.zeros(6)
            tau_q = -self.ff.gravity_torque(s.pose_base_in_nominal, self.q)
        else:
            self.holding_reported = False
            try:
                wrench_ee = self._fresh('wrench_ee', now)
                wrench_pc = self._passivity_wrench(s, wrench_ee, now)
                s = self.adm.step(self.dt, self.q, self.dq, self.ddq, self._fresh('wrench_base_com', now) + wrench_pc,
                                  wrench_ee)
                tau_q = self.ff.torques(self._fresh('tau_obsw', now), self.q, self.dq, s.pose_base_in_nominal,
                                        s.twist_base_rel_body, s.twist_nominal_body, vn_dot).tau_q
            except ValueError as exc:
                self._reject(str(exc))
                return
            twist_cmd = s.twist_base_rel_body
        stamp = self.get_clock().now().to_msg()
        self.msg_pose.header.stamp = self.msg_twist.header.stamp = self.msg_state.header.stamp = stamp
        pose_cmd = s.pose_base_in_nominal if self.pose_start_inv is None else self.pose_start_inv * s.pose_base_in_nominal
        pose_to_msg(pose_cmd, self.msg_pose.pose)
        twist_to_msg(twist_cmd, self.msg_twist.twist)
        g_b, v_b = s.absolute()
        pose_to_msg(g_b, self.msg_state.pose.pose)
        twist_to_msg(v_b, self.msg_state.twist.twist)
        self.pub_pose.publish(self.msg_pose)
        self.pub_twist.publish(self.msg_twist)
        self.pub_state.publish(self.msg_state)
        self.pub_effort.publish(Float64MultiArray(data=[float(v) for v in tau_q]))
        if self.passivity_out is not None:
            self.pub_passivity.publish(Float64MultiArray(data=self.passivity_out.as_list()))


def main(args=None) -> int:
    return run_node(ServicerAdmittanceNode, 'servicer_admittance', args)


if __name__ == '__main__':
    sys.exit(main())
