"""Client hot path in one callback: F/T sample -> Eq. (11) step -> motion-table IK -> robot command.

The fastest arrangement measured by ``bench/bench_envisat.py`` (``fused``): the same rule
objects as ``client_admittance_node`` (:class:`hil_dynamics.client.ClientAdmittance`, via its
``build_rule``) and ``motion_table_node`` (:class:`hil_motion_table.table.MotionTable`, via its
``build_table``), run back to back in the F/T subscription's callback, so there is no timer
and no DDS hop between them. The rule with its safety policy is
:class:`hil_bringup.client_hot_path.ClientHotPath`: each sample integrates Eq. (11) over the
time measured on the lab's clock (monotonic, or the twin's simulated time under
``use_sim_time``, :mod:`hil_common.lab_clock`) since the previous one (equal steps of at most ``1.5 / rate_hz``)
and commands the robot once, the table's limits on that clock, wrenches in another frame
than ``wrench_frame_id`` refused and counted, a wrench above ``max_force_n`` /
``max_torque_nm`` or non-finite latches a fault (hold) until ``client/hot_path/reset``, and
stale ``joint_states`` hold until they are fresh again for ``joint_states_recover_s``
(``auto_recover``). Only the newest sample is kept (a late callback skips, it does not queue).

Topics: in ``client/ft/wrench``, ``client/joint_states``; out
``client/forward_position_controller/commands`` (the robot command), ``client/state``
(Odometry, Eq. 23, every ``state_decimation``-th sample), ``client/table/pose_cmd`` (``g_c``,
same decimation, for recording) and ``client/passivity`` (the port's passivity observer,
``passivity_control`` its controller, as ``client_admittance_node``; same decimation), ``client/hot_path/status`` (DiagnosticStatus: ERROR and the
reason while holding, every 0.5 s and on change); service ``client/hot_path/reset``
(std_srvs/Trigger). Parameters: those of both nodes, plus ``realtime_priority``
and ``cpu_affinity`` (:mod:`hil_common.realtime`: SCHED_FIFO for every thread of the node, as a
lab runs its control loop), and ``trace_sample_stamps`` (:mod:`hil_common.sample_trace`:
``client/hot_path/trace``, the stamp of the F/T sample each command came from). If the F/T stream stops (a sensor fault) nothing is commanded and
the position-controlled robot holds.

The F/T samples are taken and the robot commands sent as raw CDR (:mod:`hil_common.cdr`):
rclpy's message objects cost more per sample than the decode (measured there). Only the F/T samples
wake the node: ``client/joint_states`` is a subscription no executor waits on
(:mod:`hil_common.polled`), whose messages the node takes, in order, at each sample, and every
``joint_states_timeout_s / 2`` besides, so the joint watch stays fresh while the F/T stream is silent. Under
``use_sim_time`` a joint state's time is its stamp (:func:`hil_common.lab_clock.measurement_seconds`): a node held
up while the twin stepped on judges the ones queued for it (2 s of them) by when they were taken.
"""

from __future__ import annotations

import gc
import sys

import numpy as np

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from hil_admittance import client_admittance_node as client_node
from hil_admittance import rebase_topic
from hil_bringup.client_hot_path import ClientHotPath
from hil_bringup.client_hot_path_loop import ClientLoopState
from hil_common.overload import overload_guard, overload_params
from hil_common.cdr import (CdrError, Float64ArrayEncoder, JointStateReader, OdometryEncoder, PoseStampedEncoder,
                            decode_wrench_stamped)
from hil_dynamics.kernels import pose_xyzquat
from hil_common.polled import PolledSubscription
from hil_common import rcl_io
from hil_common.params import Param, declare_parameters
from hil_common.realtime import make_realtime
from hil_common.sample_trace import TRACE_PARAM, SampleTrace
from hil_common.lab_clock import (clock_ns, joint_states_depth, lab_seconds, measurement_seconds, mission_epoch,
                                  ros_to_lab_seconds, uses_sim_time)
from hil_common.ros_main import run_node
from hil_motion_table import motion_table_node as table_node
from hil_dynamics.passivity import ClientPort

#: the status of a command the loop's state ran (on_wrench's (holding, reason, latched))
_COMMANDING = (False, '', '')

PARAMS = [*[p for p in client_node.PARAMS if p.name != 'wrench_frame_id' and not p.name.startswith('overload_')],
          *overload_params('client/hot_path/reset'),      # wrench_frame_id declared below, default 'ft_sensor'
          *[p for p in table_node.PARAMS if p.name not in {q.name for q in client_node.PARAMS}],
          Param('state_decimation', 4, 'Publish client/state and client/table/pose_cmd every n-th sample', min=1, max=1000),
          Param('realtime_priority', 0, 'SCHED_FIFO priority of every thread of the node (0: normal scheduling; '
                'a lab uses 50, like ros2_control); refused without CAP_SYS_NICE, then it runs on and warns',
                min=0, max=99),
          Param('cpu_affinity', [-1], 'CPUs the node runs on ([-1]: any)', min=-1, max=1023),
          Param('max_force_n', 1.0e4, 'A wrench whose force magnitude exceeds this latches a fault (hold) [N]',
                min=1e-6),
          Param('max_torque_nm', 5.0e3, 'A wrench whose torque magnitude exceeds this latches a fault (hold) [N m]',
                min=1e-6),
          Param('wrench_frame_id', 'ft_sensor', "Expected frame_id of client/ft/wrench (the F/T driver's sensor_frame); "
                'other frames are refused and counted, an empty one is accepted and counted'),
          rcl_io.COMPILED_IO_PARAM,
          Param('compiled_samples', True, 'Run each quiet F/T sample (no latched fault or hold, joints fresh, no time '
                'dropped, no re-basing under way) in one compiled call on the state of '
                'hil_bringup.client_hot_path_loop (the same commands, to the bit), the others in the rule\'s Python; '
                'false: every sample in Python'),
          TRACE_PARAM]


def build_rule(p, clock, epoch_s: float | None = None, sim_time: bool = False) -> ClientHotPath:
    """The node's rule on its validated parameters ``p``: the client admittance with its port, the table on
    ``clock`` (the lab's), the command frame, the overload guard (``sim_time``: the guard's policy under
    ``use_sim_time``), the mission's epoch ``epoch_s`` on that clock (None: the first sample)."""
    admittance, pose_sensor_in_client = client_node.build_rule(p)
    table = table_node.build_table(p, clock=clock)
    frame = table_node.CommandFrame(p, table.kin)
    return ClientHotPath(admittance, pose_sensor_in_client, table, rate_hz=p.rate_hz, epoch_s=epoch_s,
                         max_catch_up=p.max_catch_up, max_force_n=p.max_force_n, max_torque_nm=p.max_torque_nm,
                         wrench_frame_id=p.wrench_frame_id, joint_states_timeout_s=p.joint_states_timeout_s,
                         recover_after_s=p.joint_states_recover_s, auto_recover=p.auto_recover, table_target=frame,
                         port=ClientPort(admittance, p.passivity_max_rate_per_s, enabled=p.passivity_control),
                         twist_from_joints=frame.twist_from_joints,
                         overload=overload_guard(p, 1.0 / p.rate_hz, sim_time))


class ClientHotPathNode(Node):
    def __init__(self):
        super().__init__('client_hot_path')
        p = declare_parameters(self, PARAMS)
        self.lab_now = lab_seconds(self)    # monotonic, or the twin's simulated time (use_sim_time)
        self.clock_ns = clock_ns(self)      # the ROS clock, for stamps
        epoch = mission_epoch(self, p.mission_epoch_s)
        self.rule = build_rule(p, self.lab_now, None if epoch is None else ros_to_lab_seconds(self, epoch),
                               uses_sim_time(self))
        self.table, self.frame = self.rule.table, self.rule.frame   # g_c in the lab's nominal frame, or 'home'
        self.names = tuple(self.table.kin.joint_names)
        self.read_joints = JointStateReader(self.names)           # client/joint_states, raw, in the table's order
        self.decimation = p.state_decimation
        self.samples = 0
        self.last_status = None
        self.frames = (p.orbit_frame, p.nominal_frame, p.client_frame)
        self.pub_cmd = self.create_publisher(Float64MultiArray, 'client/forward_position_controller/commands', 10)
        self.encode_cmd = Float64ArrayEncoder(len(self.names))       # published as raw CDR (hil_common.cdr)
        self.pub_state = self.create_publisher(Odometry, 'client/state', 10)
        self.pub_pose = self.create_publisher(PoseStamped, 'client/table/pose_cmd', 10)
        self.pub_status = self.create_publisher(DiagnosticStatus, 'client/hot_path/status', 10)
        self.pub_passivity = self.create_publisher(Float64MultiArray, 'client/passivity', 10)
        # the decimated messages as raw CDR, their bytes built once and refilled
        self.encode_state = OdometryEncoder(self.frames[0], self.frames[2])
        self.encode_pose = PoseStampedEncoder(self.frames[1])
        self.encode_passivity = Float64ArrayEncoder(5)
        self._xyzquat = np.empty(7)
        pose_xyzquat(np.array([1.0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]), self._xyzquat)   # loaded now (the identity)
        self.trace = SampleTrace(self, 'client/hot_path/trace', p.trace_sample_stamps)
        self.create_service(Trigger, 'client/hot_path/reset', self.on_reset)
        self.create_timer(0.5, self.publish_status)
        # taken at each F/T sample (one wake-up per sample) and by a timer while the samples are silent
        # (a joint state's time: its stamp under use_sim_time, hil_common.lab_clock.measurement_seconds)
        self.measured_at = measurement_seconds(self)
        depth = joint_states_depth(self)
        self.joints_in = PolledSubscription(self, JointState, 'client/joint_states', depth, raw=True)
        self.compiled_io = None         # (the joint states, the robot command) in compiled code (hil_common.rcl_io)
        if rcl_io.use_compiled_io(p.compiled_io, self.get_logger().warning):
            self.compiled_io = (rcl_io.JointStateStream(self.joints_in.handle, self.names, depth),
                                rcl_io.Float64ArrayPublisher(self.pub_cmd, len(self.names)))
        self.create_timer(max(0.5 * p.joint_states_timeout_s, 0.01), self.take_joints)
        # the quiet samples in one compiled call on a loop's state (client_hot_path_loop), loaded now
        self.loop = None
        if p.compiled_samples:
            self.loop = ClientLoopState.for_rule(self.rule)
            if self.loop is None:
                self.get_logger().info('compiled_samples: every F/T sample runs in Python (the rule has no compiled '
                                       'sample: a hexapod, or a frame without the compiled twist)')
        # newest sample only; taken as raw CDR (hil_common.cdr: rclpy's message objects cost more than the decode)
        self.create_subscription(WrenchStamped, 'client/ft/wrench', self.on_wrench, 1, raw=True)
        rebase_topic.subscribe_rebase_plan(self, self.set_rebase_plan, lambda t: ros_to_lab_seconds(self, t),
                                           self.lab_now)
        # Everything built so far (models, rules, rclpy entities) lives as long as the node: move it
        # out of the cyclic collector's reach, so a full collection does not scan it mid-loop.
        gc.collect()
        gc.freeze()
        cpus = [c for c in p.cpu_affinity if c >= 0]
        if p.realtime_priority or cpus:
            ok, message = make_realtime(p.realtime_priority, cpus)
            (self.get_logger().info if ok else self.get_logger().warning)(f'real-time: {message}')

    def set_rebase_plan(self, plan, now_s: float) -> str:
        """The servicer node's re-basing plan, for the rule (its samples then run in Python)."""
        self.leave_loop()
        return self.rule.set_rebase_plan(plan, now_s)

    def take_joints(self) -> None:
        """The joint states that arrived since the last call, in their order."""
        if self.compiled_io is None:
            for buf in self.joints_in.take_all():
                self.on_joints(buf)
            return
        stream = self.compiled_io[0]
        n = stream.take()
        if n == 0:
            return
        now = self.lab_now()
        if now <= 0.0:       # 0: the lab twin's /clock has not arrived yet (use_sim_time)
            return
        stamps = stream.stamps
        for k, (q, dq, malformed) in enumerate(stream.readings(n)):     # on_joints, for the rows the call decoded
            if malformed:
                self.rule.counters['refused_joint_states'] += 1
                self.get_logger().warn(f'malformed joint state dropped ({malformed})', throttle_duration_sec=1.0)
            else:
                self.rule.joint_states(q, self.measured_at(float(stamps[k, 0]) + 1e-9 * float(stamps[k, 1])), dq)

    def close(self) -> None:
        """At the stop (``hil_common.ros_main.run_node``): the samples' counts."""
        self.leave_loop()
        counters, loop = self.rule.counters, self.loop
        where = (f'{loop.loop_samples} of them in one compiled call (entered {loop.entries} times, {loop.events} '
                 'handed back)' if loop is not None else 'none in a compiled call')
        self.get_logger().info(f"F/T samples: {counters['samples']}, {where}; commands: {counters['commands']}, "
                               f"held {counters['held']}")

    def destroy_node(self):
        if self.compiled_io is not None:
            self.compiled_io[0].release()
        self.joints_in.destroy()
        return super().destroy_node()

    def on_joints(self, buf):
        now = self.lab_now()
        if now <= 0.0:       # 0: the lab twin's /clock has not arrived yet (use_sim_time)
            return
        try:
            q, dq = self.read_joints(buf)
        except CdrError as exc:
            self.rule.counters['refused_joint_states'] += 1
            self.get_logger().warn(f'malformed joint state dropped ({exc})', throttle_duration_sec=1.0)
            return
        self.rule.joint_states(q, self.measured_at(self.read_joints.stamp_s), dq)

    def on_wrench(self, buf):
        self.take_joints()
        now = self.lab_now()
        if now <= 0.0:
            return
        try:
            sec, nanosec, frame_id, wrench = decode_wrench_stamped(buf)
        except CdrError as exc:
            self.rule.counters['malformed'] += 1
            self.get_logger().warn(f'malformed F/T sample dropped ({exc})', throttle_duration_sec=1.0)
            return
        if self.loop is not None:
            stepped, out = self.loop.wrench(wrench, frame_id, now)
            if stepped:
                self._stepped(self.loop, sec, nanosec)
                return
        else:
            out = self.rule.wrench(wrench, frame_id, now)
        if out is None:
            return
        if self.compiled_io is None:
            self.pub_cmd.publish(self.encode_cmd(out.q_command))
        else:
            self.compiled_io[1].publish(out.q_command)
        self.trace.publish(sec, nanosec)
        status = (out.holding, out.reason, self.rule.latched)
        if status != self.last_status:
            self.last_status = status
            self.publish_status()
        if out.state is None:
            return
        state = out.state
        self.samples += 1
        if self.samples % self.decimation == 0:      # raw CDR (hil_common.cdr)
            sec, nanosec = divmod(self.clock_ns(), 1_000_000_000)
            g_t, v_t = state.absolute_arrays()
            self.pub_state.publish(self.encode_state(sec, nanosec, pose_xyzquat(g_t, self._xyzquat), v_t))
            self.pub_passivity.publish(self.encode_passivity(self.rule.port.out.as_list()))
            self.pub_pose.publish(self.encode_pose(sec, nanosec, pose_xyzquat(state.pose_arrays()[1], self._xyzquat)))


    def _stepped(self, loop: ClientLoopState, sec: int, nanosec: int) -> None:
        """What :meth:`on_wrench` sends for a sample the loop's state ran: its command, the trace, and every
        ``state_decimation``-th the decimated messages from the loop's arrays (the same values as the rule's)."""
        if self.compiled_io is None:
            self.pub_cmd.publish(self.encode_cmd(loop.q_cmd))
        else:
            self.compiled_io[1].publish(loop.q_cmd)
        self.trace.publish(sec, nanosec)
        if self.last_status != _COMMANDING:
            self.last_status = _COMMANDING
            self.publish_status()
        self.samples += 1
        if self.samples % self.decimation == 0:
            sec, nanosec = divmod(self.clock_ns(), 1_000_000_000)
            g_t, v_t, passivity = loop.decimated_values()
            self.pub_state.publish(self.encode_state(sec, nanosec, pose_xyzquat(g_t, self._xyzquat), v_t))
            self.pub_passivity.publish(self.encode_passivity(passivity))
            self.pub_pose.publish(self.encode_pose(sec, nanosec, pose_xyzquat(loop.g_c, self._xyzquat)))

    def leave_loop(self) -> None:
        """The loop's state back in the rule, before anything that reads or changes the rule."""
        if self.loop is not None:
            self.loop.leave()

    def publish_status(self) -> None:
        self.leave_loop()
        level, message, values = self.rule.status(self.lab_now())
        msg = DiagnosticStatus(level=bytes([level]), name='client_hot_path', message=message,
                               hardware_id=self.table.kin.__class__.__name__)
        msg.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        self.pub_status.publish(msg)

    def on_reset(self, request, response):
        self.leave_loop()
        response.success, response.message = self.rule.reset(self.lab_now())
        self.last_status = None
        self.publish_status()
        return response


def main(args=None) -> int:
    return run_node(ClientHotPathNode, 'client_hot_path', args)


if __name__ == '__main__':
    sys.exit(main())
