"""Motion-table node: a thin rclpy shell over :class:`hil_motion_table.table.MotionTable`.

Topics (relative names; run the node in the robot's namespace, e.g. ``client``):

* in  ``table/pose_cmd`` (geometry_msgs/PoseStamped): commanded flange (platform) pose in
  the table's base frame; with ``command_frame:=home`` the pose ``g`` is the motion of a
  body rigidly attached to the flange (``pose_body_in_flange_xyz_rpy``, e.g. the client CoM
  behind the mock-up) relative to where it is with the table at home, which is what an
  admittance node integrating from the identity produces (seed 004 Eq. 11's ``g_c``):
  ``g_flange = g_home Y g Y^-1`` (:func:`flange_target_from_body_motion`); ``g_home`` is the
  model's home configuration, or with ``home_from_start`` the flange pose at the first
  measured joint states (a table that starts elsewhere, e.g. seed 001's payload table);
* in  ``table/twist_cmd`` (geometry_msgs/TwistStamped, optional): body-twist feed-forward
  for the delay-compensation predictor (used while fresher than ``twist_timeout_s``);
* in  ``joint_states`` (sensor_msgs/JointState): measured joints (seed the IK, tracking error);
* out ``forward_position_controller/commands`` (std_msgs/Float64MultiArray) or
  ``joint_trajectory_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory, one
  point ``trajectory_lead_s`` ahead) -- parameter ``output``;
* out ``table/twist_measured`` (geometry_msgs/TwistStamped): the body's realised twist (body axes,
  ``pose_body_in_flange``) from the measured joint positions and rates, stamped as the joint
  states (``body_twist_from_joints``; the admittances' passivity observers read it);
* out ``table/tracking_error`` (std_msgs/Float64MultiArray): ``[position_error_m,
  angle_error_rad, stamp_s]``, measured versus commanded flange pose at the measurement's
  time stamp (commanded pose interpolated in the recent command history);
* out ``table/status`` (diagnostic_msgs/DiagnosticStatus): ERROR with the fault names while
  holding, WARN with the clamps, OK otherwise; plus counters;
* service ``table/reset`` (std_srvs/Trigger): clear latched faults (refused while joint_states are stale);

Input freshness (:class:`hil_common.freshness.InputWatch`): poses before the first joint state
are counted (``no_measurement``) and nothing is commanded; joint states older than
``joint_states_timeout_s`` hold the command (``stale_measurement``), and with ``auto_recover``
(default) the table commands again once they have been fresh for ``joint_states_recover_s``;
without it the fault latches until ``table/reset``. Each pose is judged after the joint states that
arrived before it (a node that fell behind takes them first). Speed and acceleration limits run on the
node's monotonic clock, never on the message stamps.
* service ``table/reset_statistics`` (std_srvs/Trigger): restart the running tracking
  statistics (RMS and maximum position/angle error) that ``table/status`` reports.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque

import numpy as np
import pinocchio as pin
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from hil_common.conversions import (pose_from_msg, seconds_to_stamp, stamp_to_seconds, twist_from_msg,
                                    twist_to_msg, xyz_rpy_to_pose)
from hil_common.errors import InputError
from hil_common.freshness import InputWatch
from hil_common.params import Param, ParameterError, declare_parameters
from hil_common.lab_clock import joint_states_depth, lab_seconds, measurement_seconds
from hil_common.ros_main import run_node
from hil_motion_table.ik_kernel import body_twist_into
from hil_motion_table.kinematics import HexapodKinematics
from hil_motion_table.kinematics_helpers import (ROBOTS, body_twist_from_joints, flange_target_from_body_motion,
                                                 home_pose, make_kinematics, reorder)
from hil_motion_table.table import MotionTable, TableLimits, home_for_nominal_frame, tracking_error
from hil_dynamics.kernels import pose_array, pose_mul_into
from hil_motion_table.tracking import PoseHistory, TrackingStats


def _box_check(values):
    return None if all(np.isfinite(values)) else 'must be finite'


PARAMS = [
    Param('robot', 'ur10e', 'Robot model of this table', choices=ROBOTS),
    Param('output', 'forward_position', 'Controller to command', choices=('forward_position', 'joint_trajectory')),
    Param('command_frame', 'base', "Frame of table/pose_cmd: 'base', 'home' (relative to the home flange pose) or "
          "'nominal' (the body's pose in the lab's nominal frame, pose_nominal_in_base_xyz_rpy)",
          choices=('base', 'home', 'nominal')),
    Param('pose_nominal_in_base_xyz_rpy', [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
          "With command_frame 'nominal': pose of the nominal frame in the robot's base [m, rad] (the lab "
          'calibration, hil_bringup.facility)', length=6),
    Param('home_from_start', False, "With command_frame 'home': the home pose is the flange pose at the first measured "
          "joint states (the robot's start) instead of the model's home configuration"),
    Param('pose_body_in_flange_xyz_rpy', [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
          "With command_frame 'home': pose of the commanded body in the flange frame [m, rad]", length=6),
    Param('period_s', 0.004, 'Nominal command period [s] (the step of the first command)', min=1e-4, max=0.1),
    Param('trajectory_lead_s', 0.004, 'time_from_start of streamed single-point trajectories [s]', min=1e-4, max=1.0),
    Param('prediction_horizon_s', 0.0, 'Delay compensation: predict the command this far ahead [s] (0 = off)',
          min=0.0, max=1.0),
    Param('twist_timeout_s', 0.05, 'Twist feed-forward older than this is ignored [s]', min=0.0),
    Param('workspace_min', [-3.0, -3.0, -3.0], 'Workspace box lower corner, base frame [m]', length=3),
    Param('workspace_max', [3.0, 3.0, 3.0], 'Workspace box upper corner, base frame [m]', length=3),
    Param('max_linear_speed', 0.5, 'Maximum Cartesian speed of the command [m/s]', min=1e-6),
    Param('max_angular_speed', 1.0, 'Maximum angular speed of the command [rad/s]', min=1e-6),
    Param('sigma_min', 0.02, 'Refuse configurations whose smallest Jacobian singular value is below this',
          min=0.0),
    Param('joint_margin', 0.0, 'Keep this fraction of each joint range as margin', min=0.0, max=0.4),
    Param('joint_states_timeout_s', 0.1, 'Hold with a fault when the newest joint_states is older than this [s]',
          min=1e-3),
    Param('latch_faults', True, 'Hold after a fault until table/reset is called'),
    Param('joint_states_recover_s', 0.5, 'After stale joint_states, command again once they have been fresh this '
          'long [s]', min=0.0, max=60.0),
    Param('auto_recover', True, 'Recover from stale joint_states on its own (else the stale fault latches '
          'until table/reset)'),
    Param('tracking_error_decimation', 1, 'Publish every n-th tracking error (statistics use all)', min=1, max=10000),
]


def limits_from(values: dict) -> TableLimits:
    lo, hi = values['workspace_min'], values['workspace_max']
    if any(a >= b for a, b in zip(lo, hi)):
        raise ParameterError(f"parameter 'workspace_max': {hi} must exceed workspace_min {lo} in every axis")
    return TableLimits(tuple(lo), tuple(hi), values['max_linear_speed'], values['max_angular_speed'],
                       values['sigma_min'], values['joint_margin'], values['joint_states_timeout_s'])


def build_table(values: dict, clock=time.monotonic) -> MotionTable:
    """The table of a node: its speed/acceleration limits run on ``clock`` (the lab's: monotonic, or the
    twin's simulated time, :func:`hil_common.lab_clock.lab_seconds`), never on stamps;
    with ``auto_recover`` stale joint states hold without latching (the node's InputWatch decides)."""
    kin = make_kinematics(values['robot'])
    return MotionTable(kin, limits_from(values), period=values['period_s'],
                       prediction_horizon=values['prediction_horizon_s'], latch_faults=values['latch_faults'],
                       clock=clock, self_clearing=('stale_measurement',) if values.get('auto_recover') else ())


class CommandFrame:
    """How a node turns a commanded body pose (``command_frame``) into the flange target, and the
    body's twist feed-forward into the flange's; one definition for ``motion_table_node`` and the
    fused hot paths (``pose_body_in_flange_xyz_rpy``, ``pose_nominal_in_base_xyz_rpy``, ``home_from_start``)."""

    def __init__(self, p, kin):
        self.kin = kin
        self.pose_body_in_flange = xyz_rpy_to_pose(p.pose_body_in_flange_xyz_rpy)
        self.home = home_pose(kin) if p.command_frame == 'home' else None
        self.home_from_start = p.command_frame == 'home' and p.home_from_start
        if p.command_frame == 'nominal':   # the lab's nominal frame (hil_bringup.facility)
            self.home = home_for_nominal_frame(xyz_rpy_to_pose(p.pose_nominal_in_base_xyz_rpy), self.pose_body_in_flange)
        self._set_home_arrays()
        # a serial robot's measured body twist Y^-1 J_b(q) dq (body_twist_from_joints) with Ad_{Y^-1} built once
        self._ad_body_from_flange = (None if isinstance(kin, HexapodKinematics)
                                     else self.pose_body_in_flange.toActionMatrixInverse())
        self._ad_flange_from_body = self.pose_body_in_flange.toActionMatrix()     # Ad_Y of flange_twist_from_body_twist
        chain = getattr(kin, '_chain', None)      # a serial chain the compiled kinematics take
        #: twist_from_joints' compiled call: the chain, Ad_{Y^-1}, and its work arrays (None: Pinocchio's products)
        self.twist_work = None if self._ad_body_from_flange is None or chain is None else (
            chain, np.ascontiguousarray(self._ad_body_from_flange, dtype=float), np.empty((chain.n + 1, 12)),
            np.empty((6, chain.n)), np.empty(12))
        self._ad_flange_from_body_c = np.ascontiguousarray(self._ad_flange_from_body, dtype=float)   # kernel_args
        self.target_array(pose_array(pin.SE3.Identity()))      # load the compiled product now, not in a first command
        if self.twist_work is not None:                         # and the compiled twist
            self.twist_from_joints(np.zeros(chain.n), np.zeros(chain.n))

    def _set_home_arrays(self) -> None:
        """``home Y`` and ``Y^-1`` of :func:`flange_target_from_body_motion` as 12-arrays (:meth:`target_array`)."""
        self._home_y = None if self.home is None else pose_array(self.home * self.pose_body_in_flange)
        self._y_inv = pose_array(self.pose_body_in_flange.inverse())

    def start(self, q) -> None:
        """The first measured joints (``home_from_start``: the home pose is the flange's there)."""
        if self.home_from_start:
            self.home = self.kin.forward(q)
            self._set_home_arrays()

    def target(self, pose: pin.SE3) -> pin.SE3:
        """The flange target for a commanded body pose."""
        return pose if self.home is None else flange_target_from_body_motion(self.home, self.pose_body_in_flange, pose)

    def target_array(self, pose: np.ndarray) -> np.ndarray:
        """:meth:`target` on 12-array poses (:func:`hil_dynamics.kernels.pose_array` layout): ``home Y g Y^-1`` in two
        compiled products (``pose`` itself when there is no home)."""
        if self._home_y is None:
            return pose
        partial, out = np.empty(12), np.empty(12)
        pose_mul_into(self._home_y, pose, partial)
        pose_mul_into(partial, self._y_inv, out)
        return out

    def kernel_args(self) -> tuple:
        """:meth:`target_array` and :meth:`twist` for a compiled caller: ``(has_home, home Y, Y^-1, Ad_Y)`` (the
        arrays unused without a home; ``hil_bringup.servicer_hot_path_kernel``)."""
        home = self._home_y is not None
        return home, (self._home_y if home else self._y_inv), self._y_inv, self._ad_flange_from_body_c

    def twist(self, twist_body):
        """The flange's twist feed-forward for the body's (identity in ``command_frame`` 'base')."""
        if self.home is None:
            return twist_body
        # flange_twist_from_body_twist(Y, V) = Ad_Y V, with Ad_Y built once
        return self._ad_flange_from_body @ np.asarray(twist_body, dtype=float)

    def twist_from_joints(self, q, dq, measured=None):
        """The body's realised twist from measured joints (``body_twist_from_joints``; a serial chain's in one
        compiled call, :func:`hil_motion_table.ik_kernel.body_twist_into`, which the fused servicer hot path's
        compiled joints take too)."""
        work = self.twist_work
        if work is not None:
            chain, ad, poses, jac, scratch = work
            q, dq = np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(dq, dtype=float)
            if q.shape != (chain.n,) or dq.shape != q.shape:
                raise InputError(f'twist_from_joints: {chain.n} joint positions and as many rates expected')
            out = np.empty(6)
            if not body_twist_into(chain.placements, chain.kind, chain.axis, chain.frame_placement, ad, q, dq, poses,
                                   jac, scratch, out):
                out[:] = scratch[6:]            # not finite: as computed (the caller refuses it)
            return out
        if self._ad_body_from_flange is not None:      # serial: Y^-1 J_b(q) dq, as body_twist_from_joints
            return self._ad_body_from_flange @ (self.kin.jacobian_body(q) @ np.asarray(dq, dtype=float))
        return body_twist_from_joints(self.kin, q, dq, self.pose_body_in_flange, measured)


class MotionTableNode(Node):
    def __init__(self):
        super().__init__('motion_table')
        p = declare_parameters(self, PARAMS)
        self.lab_now = lab_seconds(self)    # monotonic, or the twin's simulated time (use_sim_time)
        self.measured_at = measurement_seconds(self)     # a joint state's time: its stamp under use_sim_time
        self.table = build_table(p, clock=self.lab_now)
        self.kin = self.table.kin
        self.names = tuple(self.kin.joint_names)
        self.output = p.output
        self.lead = p.trajectory_lead_s
        self.decimation = p.tracking_error_decimation
        self.twist_timeout = p.twist_timeout_s
        self.frame = CommandFrame(p, self.kin)
        self.history = PoseHistory(horizon_s=0.5)
        self.pending = deque()
        self.tracking = TrackingStats()
        self.q_measured, self.q_measured_at = None, 0.0
        # nothing is judged before the first joint state; stale ones hold until fresh for joint_states_recover_s
        self.joints = InputWatch('joint_states', p.joint_states_timeout_s, recover_after_s=p.joint_states_recover_s,
                                 auto_recover=p.auto_recover)
        self.twist_ff, self.twist_stamp = None, None
        self.counters = {'bad_pose': 0, 'bad_joint_states': 0, 'no_measurement': 0}
        self.last_status = None
        self.create_subscription(PoseStamped, 'table/pose_cmd', self.on_pose, 10)
        self.create_subscription(TwistStamped, 'table/twist_cmd', self.on_twist, 10)
        self.joints_in = self.create_subscription(JointState, 'joint_states', self.on_joint_states,
                                                  joint_states_depth(self))
        if self.output == 'forward_position':
            self.pub_cmd = self.create_publisher(Float64MultiArray, 'forward_position_controller/commands', 10)
        else:
            self.pub_cmd = self.create_publisher(JointTrajectory, 'joint_trajectory_controller/joint_trajectory', 10)
        self.pub_error = self.create_publisher(Float64MultiArray, 'table/tracking_error', 10)
        self.pub_twist_measured = self.create_publisher(TwistStamped, 'table/twist_measured', 10)
        self.pub_status = self.create_publisher(DiagnosticStatus, 'table/status', 10)
        self.create_service(Trigger, 'table/reset', self.on_reset)
        self.create_service(Trigger, 'table/reset_statistics', self.on_reset_statistics)
        self.create_timer(0.5, self.publish_status)

    # -- callbacks ----------------------------------------------------------------------
    def on_joint_states(self, msg: JointState) -> None:
        if self.lab_now() <= 0.0:      # the lab twin's /clock has not arrived yet (use_sim_time)
            return
        q = reorder(msg.name, msg.position, self.names)
        if q is None:
            self.counters['bad_joint_states'] += 1
            return
        self.q_measured = q
        self.q_measured_at = self.measured_at(stamp_to_seconds(msg.header.stamp))
        self.joints.sample(self.q_measured_at)
        if not self.table.initialized:
            self.table.initialize(q)
            self.frame.start(q)
        try:
            measured = self.table.measured_pose(q)
        except ValueError:
            self.counters['bad_joint_states'] += 1
            return
        # the realised body twist (the passivity observers' measured port twist, seed 004 Eq. 28)
        dq = reorder(msg.name, msg.velocity, self.names) if len(msg.velocity) == len(msg.name) else None
        if dq is not None and np.all(np.isfinite(dq)):
            twist = TwistStamped()
            twist.header.stamp = msg.header.stamp
            twist_to_msg(self.frame.twist_from_joints(q, dq, measured), twist.twist)
            self.pub_twist_measured.publish(twist)
        # evaluated once the command history covers the measurement's stamp
        self.pending.append((stamp_to_seconds(msg.header.stamp), measured))
        self.publish_tracking_errors()

    def publish_tracking_errors(self) -> None:
        while self.pending:
            t, measured = self.pending[0]
            if self.history.latest is not None and t > self.history.latest and len(self.pending) < 50:
                return  # the command for this instant has not arrived yet
            self.pending.popleft()
            commanded = self.history.at(t)
            if commanded is not None:
                position, angle = tracking_error(commanded, measured)
                self.tracking.add(position, angle)
                if self.tracking.n % self.decimation == 0:
                    self.pub_error.publish(Float64MultiArray(data=[position, angle, t]))

    def on_twist(self, msg: TwistStamped) -> None:
        twist = twist_from_msg(msg.twist)
        if np.all(np.isfinite(twist)):
            self.twist_ff, self.twist_stamp = twist, stamp_to_seconds(msg.header.stamp)

    def take_arrived_joint_states(self) -> None:
        """Run :meth:`on_joint_states` on the joint states that have arrived but wait behind this pose in the
        executor. A node held up (a busy machine's start-up) takes the newest ``/clock`` first (rclpy's clock
        subscription keeps one) and its queued joint states after the pose: judged in that order they would look
        as old as the hold-up, and the table would hold for a stale measurement it has in fact received. The
        executor, finding the queue empty, skips them."""
        sub = self.joints_in
        with sub.handle:
            for _ in range(2 * sub.qos_profile.depth):
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
                if taken is None:
                    return
                self.on_joint_states(taken[0])

    def on_pose(self, msg: PoseStamped) -> None:
        self.take_arrived_joint_states()
        if self.q_measured is None:
            self.counters['no_measurement'] += 1
            return
        try:
            pose = pose_from_msg(msg.pose)
        except ValueError:
            self.counters['bad_pose'] += 1
            pose = pin.SE3(np.eye(3), np.full(3, np.nan))  # the rule reports and holds
        pose = self.frame.target(pose)
        t = stamp_to_seconds(msg.header.stamp)
        twist = None
        if self.twist_stamp is not None and abs(t - self.twist_stamp) <= self.twist_timeout:
            twist = self.frame.twist(self.twist_ff)
        # The limits run on the table's own clock (the lab's, build_table), never on the message
        # stamps: a wrong stamp or a replay must not loosen them.
        now = self.lab_now()
        self.joints.update(now)
        age = now - self.q_measured_at if self.joints.usable else math.inf   # recovering: still holding
        out = self.table.step(pose, q_measured=self.q_measured, twist_ff_body=twist, measurement_age=age)
        if np.all(np.isfinite(pose.translation)):
            self.history.add(t, pose)
            self.publish_tracking_errors()
        self.publish_command(out.q_command, msg.header.stamp)
        status = (out.faults, out.clamps, self.table.latched_faults)
        if status != self.last_status:
            self.last_status = status
            self.publish_status()

    def publish_command(self, q, stamp) -> None:
        if self.output == 'forward_position':
            self.pub_cmd.publish(Float64MultiArray(data=[float(v) for v in q]))
            return
        msg = JointTrajectory()
        msg.header.stamp = stamp
        msg.joint_names = list(self.names)
        point = JointTrajectoryPoint(positions=[float(v) for v in q])
        seconds_to_stamp(self.lead, point.time_from_start)
        msg.points = [point]
        self.pub_cmd.publish(msg)

    def publish_status(self) -> None:
        msg = DiagnosticStatus(name=f'{self.get_namespace().strip("/") or "table"}/motion_table',
                               hardware_id=self.kin.__class__.__name__)
        faults = self.table.latched_faults or (self.last_status[0] if self.last_status else ())
        clamps = self.last_status[1] if self.last_status else ()
        if faults:
            msg.level, msg.message = DiagnosticStatus.ERROR, 'holding: ' + ', '.join(faults)
            if 'stale_measurement' in faults:
                msg.message += f' ({self.joints.describe(self.lab_now())})'
        elif clamps:
            msg.level, msg.message = DiagnosticStatus.WARN, 'clamped: ' + ', '.join(clamps)
        else:
            msg.level, msg.message = DiagnosticStatus.OK, 'tracking'
        counts = {**self.table.stats.fault_counts, **{f'clamp_{k}': v for k, v in self.table.stats.clamp_counts.items()},
                  **self.counters, **self.joints.counters(), 'steps': self.table.stats.steps}
        rms, peak, median = self.tracking.rms, self.tracking.max, self.tracking.percentile(50)
        counts.update({'tracking_samples': self.tracking.n, 'tracking_rms_position_m': float(rms[0]),
                       'tracking_max_position_m': float(peak[0]), 'tracking_median_position_m': float(median[0]),
                       'tracking_rms_angle_rad': float(rms[1]), 'tracking_max_angle_rad': float(peak[1]),
                       'tracking_median_angle_rad': float(median[1])})
        msg.values = [KeyValue(key=k, value=str(v)) for k, v in counts.items()]
        self.pub_status.publish(msg)

    def on_reset_statistics(self, request, response):
        self.tracking = TrackingStats()
        response.success, response.message = True, 'tracking statistics restarted'
        return response

    def on_reset(self, request, response):
        ok, joints = self.joints.reset(self.lab_now())
        if ok:
            self.table.reset()
        self.last_status = None
        response.success, response.message = ok, ('latched faults cleared; ' if ok else 'refused: ') + joints
        return response


def main(args=None) -> int:
    return run_node(MotionTableNode, 'motion_table_node', args)


if __name__ == '__main__':
    sys.exit(main())
