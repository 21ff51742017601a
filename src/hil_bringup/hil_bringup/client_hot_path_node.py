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

With ``compiled_samples`` (the default) a quiet F/T sample (no latched fault or hold, joints fresh, no time dropped,
no re-basing step) runs in one compiled call on the state of :class:`hil_bringup.client_hot_path_loop.ClientLoopState`
(the same commands as the rule's Python, to the bit: ``test_client_hot_path_rule``). With ``sample_thread`` (the
default, with ``compiled_io``) the F/T samples are not the executor's: a thread of the node runs
:func:`hil_bringup.client_sample_loop.client_sample_loop` (:class:`ClientSampleThread`), which waits for them, takes the
joint states, runs the quiet samples and sends their messages with no Python; the callbacks that read or change the
rule run paused (:meth:`ClientHotPathNode.paused`), and what the loop does not run comes back to the node's Python as
an event (:meth:`ClientHotPathNode.on_loop_event`). Under ``use_sim_time`` the loop takes the twin's ``/clock`` itself
before each sample, as the servicer's does. About a third of the node's CPU per command (docs/performance.md,
thirty-third session).
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager

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
from hil_bringup.client_hot_path_kernel import client_decimated_values
from hil_bringup.client_hot_path_loop import ClientLoopState
from hil_common.overload import overload_guard, overload_params
from hil_common.cdr import (MALFORMED, CdrError, Float64ArrayEncoder, JointStateReader, OdometryEncoder,
                            PoseStampedEncoder, decode_wrench_stamped, encode_header, malformed_reason)
from hil_common.errors import ConfigError
from hil_bringup.sample_thread import CompiledSampleThread, counts_reader
from hil_bringup import client_sample_loop as csl
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
          Param('sample_thread', True, 'With compiled_samples and compiled_io: take and run the F/T samples in a '
                'compiled loop in a thread of the node (hil_bringup.client_sample_loop: no Python between quiet '
                'samples), the callbacks that touch the rule pausing it (under use_sim_time the loop takes the twin\'s '
                '/clock itself); false: the samples in the F/T subscription\'s callback'),
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
        # (the table's clock is the node's lab_now, which the sample loop sets under use_sim_time)
        self.rule = build_rule(p, lambda: self.lab_now(), None if epoch is None else ros_to_lab_seconds(self, epoch),
                               uses_sim_time(self))
        self.table, self.frame = self.rule.table, self.rule.frame   # g_c in the lab's nominal frame, or 'home'
        self.names = tuple(self.table.kin.joint_names)
        self.read_joints = JointStateReader(self.names)           # client/joint_states, raw, in the table's order
        self.decimation = p.state_decimation
        self._ctl = np.zeros(csl.N_CTL, dtype=np.int64)     # the compiled loop's (its outputs: ``outputs``)
        self.samples = None      # the F/T samples' compiled loop in a thread (sample_thread)
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
        self.create_timer(0.5, self.on_status_timer)
        # taken at each F/T sample (one wake-up per sample) and by a timer while the samples are silent
        # (a joint state's time: its stamp under use_sim_time, hil_common.lab_clock.measurement_seconds)
        self.measured_at = measurement_seconds(self)
        depth = joint_states_depth(self)
        self.joints_in = PolledSubscription(self, JointState, 'client/joint_states', depth, raw=True)
        self.compiled_io = None         # (the joint states, the robot command) in compiled code (hil_common.rcl_io)
        if rcl_io.use_compiled_io(p.compiled_io, self.get_logger().warning):
            self.compiled_io = (rcl_io.JointStateStream(self.joints_in.handle, self.names, depth),
                                rcl_io.Float64ArrayPublisher(self.pub_cmd, len(self.names)))
        self.create_timer(max(0.5 * p.joint_states_timeout_s, 0.01), self.on_joints_timer)
        # the quiet samples in one compiled call on a loop's state (client_hot_path_loop), loaded now
        self.loop = None
        if p.compiled_samples:
            self.loop = ClientLoopState.for_rule(self.rule)
            if self.loop is None:
                self.get_logger().info('compiled_samples: every F/T sample runs in Python (the rule has no compiled '
                                       'sample: a hexapod, or a frame without the compiled twist)')
        if self.loop is not None and self.compiled_io is not None and p.sample_thread:
            self.samples = ClientSampleThread(self)
            if self.samples.sim:      # the node's Python reads the twin's time as the loop does
                self.clock_ns = self.samples.clock_ns
                self.lab_now = lambda: self.clock_ns() * 1e-9
        else:
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
        if self.samples is not None:
            self.samples.thread.start()       # its thread inherits the scheduling and the CPUs

    @property
    def outputs(self) -> int:
        """The commands with a new state sent (the decimation's count): the compiled loop counts them too."""
        return int(self._ctl[csl.K_OUTPUTS])

    @outputs.setter
    def outputs(self, value: int) -> None:
        self._ctl[csl.K_OUTPUTS] = value

    @contextmanager
    def paused(self):
        """The F/T samples' compiled loop not running while the block runs (``LoopThread.paused``; a no-op without
        it): for the executor's callbacks that read or change the rule (those that need the rule's objects up to date
        leave the loop's state too, :meth:`leave_loop`)."""
        if self.samples is None:
            yield
            return
        with self.samples.thread.paused():
            yield

    def set_rebase_plan(self, plan, now_s: float) -> str:
        """The servicer node's re-basing plan, for the rule (its samples then run in Python)."""
        with self.paused():
            self.leave_loop()
            return self.rule.set_rebase_plan(plan, now_s)

    def on_joints_timer(self) -> None:
        with self.paused():
            self.take_joints()

    def on_status_timer(self) -> None:
        # the joint states waiting taken first: the status judges their freshness (InputWatch.update), and a node
        # held up (a stall, or the twin stepping on before its first command) has them queued, stamped, with the
        # F/T sample the loop has not run yet; judged before they are taken, they looked 0.3 s old and the joints'
        # watch went stale and held ("recovering"), in one run of test_client_hot_path_safety
        with self.paused():
            self.take_joints()
            self.publish_status()

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
        self._joint_rows(stream, 0, n)

    def _joint_rows(self, stream, start: int, stop: int) -> None:
        """Rows ``start..stop-1`` of the joint states' last take, each as ``on_joints`` handles its message."""
        stamps = stream.stamps
        for k, (q, dq, malformed) in enumerate(stream.readings(stop), 0):     # on_joints, for the rows decoded
            if k < start:
                continue
            if malformed:
                self.rule.counters['refused_joint_states'] += 1
                self.get_logger().warn(f'malformed joint state dropped ({malformed})', throttle_duration_sec=1.0)
            else:
                self.rule.joint_states(q, self.measured_at(float(stamps[k, 0]) + 1e-9 * float(stamps[k, 1])), dq)

    def close(self) -> None:
        """At the stop (``hil_common.ros_main.run_node``): the compiled loop stopped, the samples' counts."""
        thread = '' if self.samples is None else self.samples.stop()
        self.leave_loop()
        counters, loop = self.rule.counters, self.loop
        where = (f'{loop.loop_samples} of them in one compiled call (entered {loop.entries} times, {loop.events} '
                 f'handed back{thread})' if loop is not None else 'none in a compiled call')
        self.get_logger().info(f"F/T samples: {counters['samples']}, {where}; commands: {counters['commands']}, "
                               f"held {counters['held']}")

    def destroy_node(self):
        if self.samples is not None:
            self.samples.stop()
            self.samples.release()
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
            self.malformed_wrench(str(exc))
            return
        self._sample(wrench, frame_id, now, sec, nanosec)

    def malformed_wrench(self, why: str) -> None:
        self.rule.counters['malformed'] += 1
        self.get_logger().warn(f'malformed F/T sample dropped ({why})', throttle_duration_sec=1.0)

    def _sample(self, wrench, frame_id: str, now: float, sec: int, nanosec: int, python: bool = False,
                stamp_ns: int | None = None) -> None:
        """One F/T sample, its joints taken: on the loop's state if it can run there (not ``python``), else in the
        rule's Python; its command and messages sent, the decimated ones stamped ``stamp_ns`` (None: the node's clock
        now)."""
        if self.loop is not None and not python:
            stepped, out = self.loop.wrench(wrench, frame_id, now)
            if stepped:
                self._stepped(self.loop, sec, nanosec, stamp_ns)
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
        self.outputs += 1
        if self.outputs % self.decimation == 0:      # raw CDR (hil_common.cdr)
            sec, nanosec = divmod(self.clock_ns() if stamp_ns is None else stamp_ns, 1_000_000_000)
            g_t, v_t = state.absolute_arrays()
            self.pub_state.publish(self.encode_state(sec, nanosec, pose_xyzquat(g_t, self._xyzquat), v_t))
            self.pub_passivity.publish(self.encode_passivity(self.rule.port.out.as_list()))
            self.pub_pose.publish(self.encode_pose(sec, nanosec, pose_xyzquat(state.pose_arrays()[1], self._xyzquat)))


    def _stepped(self, loop: ClientLoopState, sec: int, nanosec: int, stamp_ns: int | None = None) -> None:
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
        self.outputs += 1
        if self.outputs % self.decimation == 0:
            sec, nanosec = divmod(self.clock_ns() if stamp_ns is None else stamp_ns, 1_000_000_000)
            state_pose, state_twist, passivity, pose = loop.decimated_values()
            self.pub_state.publish(self.encode_state(sec, nanosec, state_pose, state_twist))
            self.pub_passivity.publish(self.encode_passivity(passivity))
            self.pub_pose.publish(self.encode_pose(sec, nanosec, pose))

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
        with self.paused():
            self.leave_loop()
            self.take_joints()             # (the reset judges the joints' freshness: those waiting first)
            response.success, response.message = self.rule.reset(self.lab_now())
            self.last_status = None
            self.publish_status()
        return response

    # -- the compiled loop's events (in its thread: hil_common.sample_loop) -------------------------------------------
    def on_loop_event(self, code: int) -> None:
        """What the compiled loop left of an F/T sample (:mod:`hil_bringup.client_sample_loop`'s events), done as the
        node's Python does it."""
        ctl, samples = self._ctl, self.samples
        if code == csl.EV_AFTER:              # a command sent after Python's: the status it changed
            self.last_status = _COMMANDING
            self.publish_status()
            return
        self.leave_loop()
        if code == csl.EV_ROWS:
            now = self.lab_now()
            if now > 0.0:
                self._joint_rows(self.compiled_io[0], int(ctl[csl.K_AT]), int(ctl[csl.K_TAKEN]))
        elif code not in csl.EVENTS:
            raise ConfigError(f'client_sample_loop: no event {code}')
        # the sample itself, in Python (the joints that came since taken first, as at any sample)
        self.take_joints()
        # under use_sim_time its time read once, and its messages stamped with it: the executor's thread may set the
        # twin's next step meanwhile (the loop's thread is not the executor's)
        stamp_ns = self.clock_ns() if samples.sim else None
        now = self.lab_now() if stamp_ns is None else stamp_ns * 1e-9
        if now <= 0.0:
            return
        k, stream = int(ctl[csl.K_ROW]), samples.stream
        flags = int(stream.flags[k])
        if flags & MALFORMED:
            self.malformed_wrench(malformed_reason(flags))
            return
        sec, nanosec = int(stream.stamps[k, 0]), int(stream.stamps[k, 1])
        handed_back = code == csl.EV_SAMPLE and bool(ctl[csl.K_ENTERED])
        self.loop.events += handed_back
        self._sample(stream.wrench[k].copy(), stream.frame(k), now, sec, nanosec, python=handed_back,
                     stamp_ns=stamp_ns)

    def loop_arguments(self) -> tuple:
        """Before each entry of the compiled loop (in its thread): the loop's state entered if it can be, the flags
        it reads, and its arguments (made again: the state's arrays change at each entry)."""
        loop, ctl = self.loop, self._ctl
        entered = loop.active or loop.enter()
        ctl[csl.K_ENTERED] = entered
        ctl[csl.K_AFTER] = self.last_status != _COMMANDING
        return self.samples.arguments(loop if entered else None)


class ClientSampleThread(CompiledSampleThread):
    """The node's F/T samples taken and run in :func:`hil_bringup.client_sample_loop.client_sample_loop`, in a thread of
    the node's own (:class:`hil_bringup.sample_thread.CompiledSampleThread`, as the servicer's ``SampleThread``): the F/T
    subscription one no executor waits on (depth 1: the newest sample, as the node's own); the joint states' stream and
    the command's publisher the node's (``compiled_io``); the decimated messages sent from compiled code. Under
    ``use_sim_time`` the loop takes the twin's ``/clock`` itself before each sample. The events go to
    :meth:`ClientHotPathNode.on_loop_event`, and :meth:`ClientHotPathNode.loop_arguments` runs before each entry. The
    loop is loaded here (compiled the first time), not in the thread."""

    def __init__(self, node: ClientHotPathNode):
        self.wrench_in = PolledSubscription(node, WrenchStamped, 'client/ft/wrench', 1, raw=True)
        super().__init__(node, 'client_samples', csl.EVENTS, self.wrench_in.handle)
        self.stream = rcl_io.WrenchStream(self.wrench_in.handle, node.rule.wrench_frame_id, depth=1)
        joints, self._cmd = node.compiled_io
        self.js = joints.take_args()
        rule, loop = node.rule, node.loop
        self.js_rows = (self.sim, rule.table.initialized, rule._q, rule._dq, rule._dq_ok, loop.watch.wf, loop.watch.wi)
        trace = node.trace.pub
        trace_buf = np.frombuffer(bytearray(encode_header(0, 0)), dtype=np.uint8)
        self._trace = (0 if trace is None else int(trace.handle.pointer), rcl_io.fixed_message(trace_buf), trace_buf,
                       trace is not None)
        (state_bytes, state), (passivity_bytes, passivity) = node.encode_state.fields(), node.encode_passivity.fields()
        pose_bytes, pose = node.encode_pose.fields()
        self._decimated_out = rcl_io.SerializedPublishers([(node.pub_state, state_bytes, True),
                                                           (node.pub_passivity, passivity_bytes, False),
                                                           (node.pub_pose, pose_bytes, True)])
        self._fields = (state[:7], state[43:49], passivity, pose)
        self._scratch = (np.empty(12), np.empty(6), np.zeros(1, dtype=np.int64))
        client_decimated_values(loop.g_n, loop.v_n, loop.g_c, loop.v_c, loop.cf, rule.port.controller._acc,
                                *self._fields, *self._scratch[:2])       # loaded now, not in the thread
        self.start_loop(csl.client_sample_loop)

    def arguments(self, state) -> tuple:
        """The loop's arguments on the loop state's arrays (entered or not, ``ctl[K_ENTERED]`` says: not entered, the
        loop hands every sample to Python and steps nothing)."""
        node = self.node
        loop = node.loop
        rows = (self.js_rows[0], node.rule.table.initialized, *self.js_rows[2:])
        out = (self._cmd.publish_args(loop.q_cmd), self._trace, self._decimated_out.publish_args(),
               int(node.decimation), self._fields, self._scratch)
        return (self.waiting, self.stream.take_args(), self.clocks, self.sim_args, self.js, rows, loop.args(), out,
                node._ctl)

    def loop_counts(self) -> str:
        ctl = self.node._ctl
        return (f'{int(ctl[csl.K_SAMPLES])} samples, {int(ctl[csl.K_COMMANDS])} commands, '
                f'{int(ctl[csl.K_WAKES])} wake-ups')

    def release(self) -> bool:
        if not super().release():
            return False
        self.stream.release()
        self.wrench_in.destroy()
        return True


#: ``(F/T samples, of them in the one compiled call, of them in the compiled loop's thread, commands, of them held)``
#: from a node's log (its line at its stop, :meth:`ClientHotPathNode.close`; 0 in the thread without ``sample_thread``),
#: or None without that line (the node did not stop cleanly)
sample_counts = counts_reader('F/T samples')


def warm_up() -> None:
    """Load the node's compiled calls (compiled and cached the first time): the node built with the Envisat graph's
    parameters (``hot_path: fused``), on loopback, then destroyed; with ``sample_thread`` it loads its compiled loop
    where it is built (``./dev`` runs this: ``python -m hil_bringup.client_sample_loop``)."""
    import tempfile

    import rclpy

    from hil_bringup.graphs import envisat_graph
    from hil_common.network import apply_network_profile

    spec = envisat_graph({'hot_path': 'fused', 'lab_clock': 'wall'}).node('/client_hot_path')
    apply_network_profile()
    with tempfile.NamedTemporaryFile('w', suffix='.yaml') as params:
        params.write(spec.params_yaml())
        params.flush()
        rclpy.init(args=['client_hot_path_warm_up', *spec.ros_arguments(params.name)])
        try:
            node = ClientHotPathNode()
            if node.samples is None:
                raise ConfigError('client_hot_path_node: the Envisat graph\'s node has no compiled sample loop')
            node.close()
            node.destroy_node()
        finally:
            rclpy.shutdown()


def main(args=None) -> int:
    return run_node(ClientHotPathNode, 'client_hot_path', args)


if __name__ == '__main__':
    sys.exit(main())
