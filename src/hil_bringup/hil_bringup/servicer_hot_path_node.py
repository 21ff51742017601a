"""Servicer hot path in one callback: wrist F/T sample -> Eq. (18) steps -> KR 120 IK -> robot command.

The servicer's counterpart of ``client_hot_path_node``: the plumbing of
``servicer_admittance_node`` (its inputs, outputs, re-basing plan and overload status, reused,
not copied) and the servicer's ``motion_table_node`` (:func:`build_table`, :class:`CommandFrame`),
with the rule :class:`hil_bringup.servicer_hot_path.ServicerHotPath` run in the wrist F/T
subscription's callback: no timer and no DDS hop between the admittance and the IK.

Topics: those of ``servicer_admittance_node`` (in ``servicer/ft/wrench``, ``servicer/ft/fault``,
``servicer_arm/joint_states``, ``servicer/base_wrench_cmd``, ``servicer_arm/torque_cmd``, with
re-basing ``obsw/phase`` and ``client/state``; out ``servicer_arm/forward_effort_controller/commands``
every step, ``nominal/rebase_plan``, and ``servicer/state``, ``servicer/table/pose_cmd``,
``servicer/table/twist_cmd``, ``servicer/passivity`` every ``state_decimation``-th step), plus the
table's: in ``servicer/joint_states`` (the KR 120's measured joints; their rates are the passivity
observer's measured base twist), out ``servicer/forward_position_controller/commands``. Status
``servicer/hot_path/status`` (DiagnosticStatus: the overload guard, ERROR while the table or the
wrist sensor holds), reset ``servicer/hot_path/reset`` (the overload hold, the table's latched
faults). Without wrist samples for ``input_timeout_s`` a timer runs the steps held (the arm's effort
controller keeps its last command: it gets the hold's gravity compensation; the table is told to stay). Parameters: those of both nodes (``output`` must be ``forward_position``), plus
``state_decimation``, ``realtime_priority`` and ``cpu_affinity`` (:mod:`hil_common.realtime`), and
``trace_sample_stamps`` (:mod:`hil_common.sample_trace`: ``servicer/hot_path/trace``, the stamp of the
wrist sample each command came from, for latency measurements). Dropped steps are logged, as in
``servicer_admittance_node``. The wrist wrench, the arm's and the table's joints are taken, and the robot and
effort commands sent, as raw CDR (:mod:`hil_common.cdr`); with ``compiled_io`` (the default) the joints are taken
and decoded, and the two commands encoded and sent, through rcl from compiled code (:mod:`hil_common.rcl_io`: no
Python per message; the OBSW's commands and the client's state are taken in one compiled call, and only the
messages that came are handled in Python), and the joints' rows go into the rule in compiled code too
(``ServicerHotPath.arm_joint_rows``, ``table_joint_rows``: the arm's differencing, the table joints' watch and
measured twist; a malformed or partial row, and the rows after it, in Python as before). Only the wrist samples
wake the node: the arm's and the table's joints, the OBSW's commands and the client's state are taken, in the order
they came, when a sample arrives, or when the watchdog runs (:mod:`hil_common.polled`; one wake-up per sample instead of one per message).
With ``compiled_samples`` (the default, with ``compiled_io``) a quiet wrist sample (no fault's or stale joints' hold,
no dropped steps, no re-basing due or under way; a late one's catch-up steps and the overload guard's held ticks
included) runs in one compiled call on the state of :class:`hil_bringup.servicer_hot_path_loop.SampleLoopState`
(the same commands, to the bit), which the node leaves before anything else reads or changes what it owns (the wrist
sensor's fault, the OBSW's phase, the reset, the status, the watchdog); the other samples run in the rule's Python. At
its stop the node logs how many samples ran in the compiled call.
With ``sample_thread`` (the default, with ``compiled_samples``) the wrist samples are not the executor's: a thread of
the node runs :func:`hil_bringup.servicer_sample_loop.servicer_sample_loop` (:class:`SampleThread`), which waits for
them and takes, runs and answers each quiet one (its joints, the OBSW's commands, the step, the messages) with no
Python; the callbacks that read or change the rule run paused (:meth:`ServicerHotPathNode.paused`), and what the loop
does not run comes back to the node's Python as an event (:meth:`ServicerHotPathNode.on_loop_event`). Under
``use_sim_time`` the loop takes the twin's ``/clock`` itself before each sample (a ``/clock`` at least as new as the
sample's stamp, waited for a little), and the node's Python reads the newest of that and of the ROS clock
(:meth:`SampleThread.clock_ns`).
"""

from __future__ import annotations

import gc
import sys
import tempfile
from contextlib import contextmanager

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hil_admittance import servicer_admittance_node as servicer_node
from hil_common.ros_main import guarded
from hil_bringup.servicer_hot_path import ServicerHotPath
from hil_bringup.servicer_hot_path_kernel import LI_HAS_PASSIVITY, LI_LAST_HELD, QUIET_EVENT, QUIET_HELD, \
    QUIET_STEPPED, decimated_values
from hil_bringup.servicer_hot_path_loop import SampleLoopState
from hil_bringup import servicer_sample_loop as sl
from hil_common.cdr import FRAME_OTHER, CdrError, Float64ArrayEncoder, JointStateReader, decode_wrench_stamped, \
    encode_header, malformed_reason
from hil_common.policy_kernel import LEVELS, adopt
from hil_bringup.sample_thread import CompiledSampleThread, counts_reader
from hil_common.errors import ConfigError
from hil_common.lab_clock import joint_states_depth, lab_seconds, measurement_seconds, uses_sim_time
from hil_common.overload import ERROR, overload_params
from hil_common.params import Param, ParameterError
from hil_common.polled import PolledSubscription
from hil_common import rcl_io
from hil_common.realtime import make_realtime
from hil_common.ros_main import run_node
from hil_common.sample_trace import TRACE_PARAM, SampleTrace
from hil_motion_table import motion_table_node as table_node

PARAMS = [*[p for p in servicer_node.PARAMS if not p.name.startswith('overload_')],
          *overload_params('servicer/hot_path/reset'),
          *table_node.PARAMS,
          Param('state_decimation', 4, 'Publish servicer/state, the table pose and twist and the passivity every '
                'n-th step', min=1, max=1000),
          Param('realtime_priority', 0, 'SCHED_FIFO priority of every thread of the node (0: normal scheduling; '
                'a lab uses 50, like ros2_control); refused without CAP_SYS_NICE, then it runs on and warns',
                min=0, max=99),
          Param('cpu_affinity', [-1], 'CPUs the node runs on ([-1]: any)', min=-1, max=1023),
          rcl_io.COMPILED_IO_PARAM,
          Param('compiled_samples', True, 'With compiled_io: run each quiet wrist sample (no fault\'s or stale '
                'joints\' hold, no dropped steps, no re-basing due or under way; the overload guard\'s held ticks '
                'included) in one compiled call on the state of hil_bringup.servicer_hot_path_loop '
                '(the same commands, to the bit), the others in the rule\'s Python; false: every sample in Python'),
          Param('sample_thread', True, 'With compiled_samples: take and run the wrist samples in a compiled loop in a '
                'thread of the node (hil_bringup.servicer_sample_loop: no Python between quiet samples), the callbacks '
                'that touch the rule pausing it (under use_sim_time the loop takes the twin\'s /clock itself; false: '
                'in the wrist subscription\'s callback)'),
          TRACE_PARAM]


def build_rule(p, side, **kwargs) -> tuple[ServicerHotPath, table_node.CommandFrame]:
    """The node's rule on its validated parameters ``p`` (a :class:`hil_common.params.ParamValues`) and its side:
    the table timed on the side's step grid (no clock of its own), its command frame, the joints' watch, a lead of
    1.5 steps; ``kwargs`` go to ``ServicerHotPath`` (``fused``, ``quiet``, ``lead_s``, ...). Returns the rule and the
    frame. One definition for the node, the rule's tests and its bench (``servicer_hot_path_kernel.rule_of``)."""
    table = table_node.build_table(p, clock=None)
    frame = table_node.CommandFrame(p, table.kin)
    rule = ServicerHotPath(side, table, target=frame.target, twist=frame.twist,
                           twist_from_joints=frame.twist_from_joints, joint_states_timeout_s=p.joint_states_timeout_s,
                           recover_after_s=p.joint_states_recover_s, auto_recover=p.auto_recover,
                           sample_timeout_s=p.input_timeout_s, **{'lead_s': 1.5 / p.rate_hz, **kwargs})
    return rule, frame


class ServicerHotPathNode(servicer_node.ServicerAdmittanceNode):
    raw_inputs = True          # the wrist wrench and the arm's joints as raw CDR (hil_common.cdr)
    polled_inputs = True       # the joints, the OBSW's commands, the client's state taken at each wrist sample

    def __init__(self):
        self._ctl = np.zeros(sl.N_CTL, dtype=np.int64)     # the compiled loop's (its outputs: ``outputs``)
        self.samples = None      # the wrist samples' compiled loop in a thread (sample_thread), once built
        super().__init__('servicer_hot_path', PARAMS, timer=False, status_prefix='servicer/hot_path')
        p = self.p
        if p.output != 'forward_position':
            raise ParameterError("parameter 'output': the fused servicer hot path commands forward_position only")
        self.decimation = p.state_decimation
        self.lab_now = lab_seconds(self)    # the joint watch's clock: monotonic, or the twin's simulated time
        self.measured_at = measurement_seconds(self)     # a table joint state's time: its stamp under use_sim_time
        # the table timed on the side's step grid; the joints judged by their stamps under use_sim_time
        self.rule, self.frame = build_rule(p, self.side, joints_by_stamp=uses_sim_time(self))
        table = self.rule.table
        self.table_names = tuple(table.kin.joint_names)
        self.read_table_joints = JointStateReader(self.table_names)   # servicer/joint_states, raw, in its order
        self.status.override = self.hold_status
        self.status.reset_also = self._reset
        self.pub_cmd = self.create_publisher(Float64MultiArray, 'servicer/forward_position_controller/commands', 10)
        self.encode_cmd = Float64ArrayEncoder(len(self.table_names))        # published as raw CDR
        self.trace = SampleTrace(self, 'servicer/hot_path/trace', p.trace_sample_stamps)
        depth = joint_states_depth(self)
        self.table_joints_in = PolledSubscription(self, JointState, 'servicer/joint_states', depth, raw=True)
        self.compiled_io = None          # (table joints, arm joints, robot command, effort command) in compiled code
        if rcl_io.use_compiled_io(p.compiled_io, self.get_logger().warning):
            arm_in = self.polled[0][0]           # servicer_arm/joint_states, the first of the admittance's polled
            self.polled_others = tuple(self.polled[1:])      # the OBSW's commands (and the client's state)
            # taken in one compiled call (mostly none waits: an empty take through rclpy costs its Python)
            self.polled_takes = rcl_io.SerializedTakes([sub.handle for sub, _ in self.polled_others])
            self.compiled_io = (rcl_io.JointStateStream(self.table_joints_in.handle, self.table_names, depth),
                                rcl_io.JointStateStream(arm_in.handle, self.joint_names),
                                rcl_io.Float64ArrayPublisher(self.pub_cmd, len(self.table_names)),
                                rcl_io.Float64ArrayPublisher(self.pub_effort, len(self.joint_names)))
            self.rule.inputs_on_arrays()         # the joints' rows taken in compiled code, loaded now
        # the quiet samples on a compiled loop's state (servicer_hot_path_loop), its call loaded now; made once the
        # side started (None: not yet; False: not used)
        self.loop_state = None if self.compiled_io is not None and p.compiled_samples \
            and SampleLoopState.load(self.rule) else False
        if self.loop_state is None:      # its decimated messages written and sent from compiled code
            buffers, self.decimated_fields = self.messages.fields()
            self.decimated_out = rcl_io.SerializedPublishers(
                [(publisher, buf, stamped) for publisher, buf, stamped in zip(
                    (self.pub_pose, self.pub_twist, self.pub_state, self.pub_passivity), buffers,
                    (True, True, True, False))])
            self._decimated_scratch = np.empty(12), np.empty(6)
            identity = np.array([1.0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0])   # its call loaded now, not in a callback
            decimated_values(0, 0.0, np.stack([identity, identity]), np.zeros(12), False, np.zeros(5),
                             *self.decimated_fields, *self._decimated_scratch)
        if p.compiled_samples and self.loop_state is False:
            self.get_logger().info('compiled_samples: every wrist sample runs in Python (no compiled_io, or a '
                                   'rule without the one compiled call)')
        self.last_holding = None
        self.status.paused = self.paused        # its publish reads the guard the loop steps
        if self.loop_state is None and p.sample_thread:
            self.samples = SampleThread(self)
            if self.samples.sim:      # the node's Python reads the twin's time as the loop does
                self.clock_ns = self.samples.clock_ns
                self.lab_now = lambda: self.clock_ns() * 1e-9
        # Without wrist samples the steps go on held (the effort controller keeps its last command). The
        # watchdog also takes the joints then, often enough for the table's joint watch.
        self.create_timer(max(min(p.input_timeout_s, 0.5 * p.joint_states_timeout_s), 0.01),
                          lambda: guarded(self._watchdog, self.context))
        gc.collect()
        gc.freeze()          # the node's long-lived objects out of the cyclic collector's reach mid-loop
        cpus = [c for c in p.cpu_affinity if c >= 0]
        if p.realtime_priority or cpus:
            ok, message = make_realtime(p.realtime_priority, cpus)
            (self.get_logger().info if ok else self.get_logger().warning)(f'real-time: {message}')
        if self.samples is not None:
            self.samples.thread.start()       # its thread inherits the scheduling and the CPUs

    @property
    def outputs(self) -> int:
        """The steps sent (the decimation's count): the compiled loop counts them too."""
        return int(self._ctl[sl.K_OUTPUTS])

    @outputs.setter
    def outputs(self, value: int) -> None:
        self._ctl[sl.K_OUTPUTS] = value

    @contextmanager
    def paused(self):
        """The wrist samples' compiled loop not running while the block runs (``LoopThread.paused``; a no-op without
        it), the client's states it kept taken first: for the executor's callbacks that read or change the rule."""
        if self.samples is None:
            yield
            return
        with self.samples.thread.paused():
            self.samples.take_client_rows()
            yield

    def leave_loop(self) -> None:
        """The loop's state back in the rule (``SampleLoopState.leave``), before anything that reads or changes
        what it owns runs in Python; the next quiet sample enters again."""
        if self.loop_state:
            self.loop_state.leave()

    def hold_status(self):
        """(level, message) while the table or the wrist sensor holds, else None (the guard's)."""
        with self.paused():
            return self._hold_status()

    def _hold_status(self):
        self.leave_loop()
        last = self.rule.last
        faults = self.rule.table.latched_faults
        if faults:
            return ERROR, 'holding: ' + ', '.join(faults) + ' (call servicer/hot_path/reset)'
        if self.rule.ft_fault:
            return ERROR, 'holding: wrist F/T fault latched'
        if last is not None and last.holding and last.reason:
            return ERROR, f'holding: {last.reason}'
        return None

    def on_fault(self, msg):
        with self.paused():
            self.leave_loop()
            if self.rule.set_ft_fault(msg.level >= DiagnosticStatus.ERROR):
                self.get_logger().warn(f'wrist F/T fault '
                                       f'{"latched: holding" if self.rule.ft_fault else "cleared: resuming"}: '
                                       f'{msg.message}')

    def _reset(self) -> str:
        """The reset service's part for the rule (the table's latched faults, the joints' watch)."""
        with self.paused():
            self.leave_loop()
            return self.rule.reset(self.lab_now())[1]

    def on_phase(self, msg) -> None:
        with self.paused():
            self.leave_loop()
            super().on_phase(msg)

    def on_twist_measured(self, msg) -> None:
        with self.paused():
            super().on_twist_measured(msg)

    def on_table_joints(self, buf):
        now = self.lab_now()
        if now <= 0.0:       # the lab twin's /clock has not arrived yet (use_sim_time)
            return
        try:
            q, dq = self.read_table_joints(buf)
        except CdrError as exc:
            self.rule.counters['refused_joint_states'] += 1
            self.get_logger().warn(f'malformed table joint state dropped ({exc})', throttle_duration_sec=1.0)
            return
        self.rule.table_joints(q, dq, self.measured_at(self.read_table_joints.stamp_s), self._now_s())

    def on_ft(self, buf):
        guarded(lambda: self._on_ft(buf), self.context)

    def take_inputs(self) -> None:
        """The table's joint states, then the admittance's polled inputs, that arrived since the last call."""
        if self.compiled_io is None:
            for buf in self.table_joints_in.take_all():
                self.on_table_joints(buf)
            super().take_inputs()
            return
        table, arm = self.compiled_io[:2]
        self._table_joints_taken(table, table.take())
        self._arm_joints_taken(arm, arm.take())
        takes = self.polled_takes
        counts = takes.take()
        for s, (subscription, handle) in enumerate(self.polled_others):
            subscription.taken += int(counts[s])
            for k in range(counts[s]):
                buf = takes.message(s, k)
                if buf is None:
                    self.reject_too_long(subscription, takes.rows.shape[2])
                else:
                    handle(buf)

    def reject_too_long(self, subscription, limit_bytes: int) -> None:
        """A polled message longer than the row it was to be kept in (``limit_bytes``): refused by its topic's name and
        counted, as any refused input."""
        self.side.reject(f'a message on {subscription.topic_name} longer than {int(limit_bytes)} bytes')
        self._report_rejections()

    def _table_joints_taken(self, stream, n: int) -> None:
        """:meth:`on_table_joints` for the ``n`` rows ``stream`` decoded (hil_common.rcl_io), through the rule
        (``ServicerHotPath.table_joint_rows``: in compiled code up to a malformed or partial row)."""
        if n == 0:
            return
        now = self.lab_now()
        if now <= 0.0:       # the lab twin's /clock has not arrived yet (use_sim_time)
            return
        _, malformed = self.rule.table_joint_rows(n, stream.q, stream.dq, stream.stamps, stream.flags, now,
                                                  self._now_s())
        if malformed:
            self.get_logger().warn(f'malformed table joint state dropped ({malformed})', throttle_duration_sec=1.0)

    def _arm_joints_taken(self, stream, n: int) -> None:
        """``on_joints_raw`` for the ``n`` rows ``stream`` decoded (hil_common.rcl_io), through the rule
        (``ServicerHotPath.arm_joint_rows``: in compiled code up to a refused row)."""
        if n:
            self.rule.arm_joint_rows(n, stream.q, stream.dq, stream.stamps, stream.flags, self._now_s())
            self._report_rejections()

    def send_effort(self, tau_q) -> None:
        if self.compiled_io is None:
            super().send_effort(tau_q)
        else:
            self.compiled_io[3].publish(tau_q)

    def close(self) -> None:
        """At the stop (``hil_common.ros_main.run_node``): the compiled loop stopped, the samples' counts."""
        thread = ''
        if self.samples is not None:
            thread = self.samples.stop()
        self.leave_loop()
        counters, loop = self.rule.counters, self.loop_state
        where = f'on the loop state, entered {loop.entries} times, {loop.events} handed back' if loop else 'not used'
        self.get_logger().info(f"wrist samples: {counters['samples']}, {self.rule.quiet_samples} of them in one "
                               f"compiled call ({where}{thread}); commands: {counters['commands']}, "
                               f"held {counters['held']}")

    def destroy_node(self):
        if self.samples is not None:
            self.samples.stop()
            self.samples.release()
        if self.compiled_io is not None:
            for stream in (*self.compiled_io[:2], self.polled_takes):
                stream.release()
        for subscription in (self.table_joints_in, *(s for s, _ in self.polled)):
            subscription.destroy()
        return super().destroy_node()

    def _on_ft(self, buf):
        self.take_inputs()
        now = self.lab_now()
        if now <= 0.0:
            return
        sec = nanosec = 0
        wrench = None
        try:
            sec, nanosec, frame, wrench = decode_wrench_stamped(buf)
            refused = self.wrong_wrist_frame(frame)
        except CdrError as exc:
            refused = f'malformed wrist wrench ({exc})'
        self._wrist_sample(now, wrench, (sec, nanosec), refused)

    def _wrist_sample(self, now: float, wrench, sample_stamp, refused: str, python: bool = False) -> None:
        """A wrist sample (``wrench`` in the sensor frame, stamped ``sample_stamp``) at ``now`` on the lab's clock,
        its inputs taken: refused (``refused``: why), on the loop's state if it can be entered, else (and with
        ``python``) by the rule in Python."""
        if refused:
            self.side.reject(refused)
            self._report_rejections()
            return
        side_now = self._now_s()
        loop = self.loop_state
        if loop is None and self.side.started:
            loop = self.loop_state = SampleLoopState(self.rule)
        if not loop or python:
            self.leave_loop()
            self._after(self.rule.wrench(wrench, now, side_now), sample_stamp)
            return
        sec, nanosec = sample_stamp
        outcome, out = loop.wrench(wrench, now, side_now)
        if outcome == QUIET_EVENT:       # run in the rule's Python
            self._after(out, (sec, nanosec))
        else:
            self._after_loop(loop, outcome, (sec, nanosec))

    def _after_loop(self, loop, outcome: int, sample_stamp) -> None:
        """:meth:`_after` for a sample the loop's state ran (``loop_sample``'s ``outcome``): its command (a step's or
        a held tick's) and the decimated messages from the loop's arrays."""
        self.status.after_tick()
        self.report_dropped_steps()
        if outcome != QUIET_STEPPED and outcome != QUIET_HELD:
            return
        held = outcome == QUIET_HELD
        self._send_command(loop.q_cmd, sample_stamp)
        self.send_effort(loop.tau_q)
        self.outputs += 1
        if self.outputs % self.decimation == 0:        # publish_decimated's messages, from the loop's arrays
            pacer = self.side.pacer
            stamp_ns = decimated_values(self.t0_ns, pacer.step_time(pacer.steps_done), loop.g, loop.v, held, loop.pv,
                                        *self.decimated_fields, *self._decimated_scratch)
            # (no passivity message before the port's first output, as ServicerMessages.encode)
            self.decimated_out.publish(*divmod(int(stamp_ns), 1_000_000_000), count=None if loop.li[LI_HAS_PASSIVITY]
                                       else 3)
        self._holding(held, '')

    def _send_command(self, q_command, sample_stamp) -> None:
        """The robot's command, and the trace of the sample it came from (None: the watchdog's)."""
        if self.compiled_io is None:
            self.pub_cmd.publish(self.encode_cmd(q_command))
        else:
            self.compiled_io[2].publish(q_command)
        if sample_stamp is not None:
            self.trace.publish(*sample_stamp)

    def _holding(self, holding: bool, reason: str) -> None:
        """Log and publish the status when the command starts or stops holding."""
        if holding == self.last_holding:
            return
        if holding:
            self.get_logger().warn(f'holding: {reason or "the servicer side holds"}')
        elif self.last_holding is not None:
            self.get_logger().info('commanding again')
        self.last_holding = holding
        self.status.publish()

    def _watchdog(self) -> None:
        with self.paused():
            self.leave_loop()            # the rule's newest sample time, its last command
            self.take_inputs()
            now = self.lab_now()
            if now > 0.0:
                self._after(self.rule.watchdog(now, self._now_s()))

    # -- the compiled loop's events (in its thread: hil_common.sample_loop) -------------------------------------------
    def on_loop_event(self, code: int) -> None:
        """What the compiled loop left of a wrist sample (:mod:`hil_bringup.servicer_sample_loop`'s events), done as
        the node's Python does it; the client's states it kept taken first."""
        samples, ctl = self.samples, self._ctl
        samples.take_client_rows()
        if code == sl.EV_AFTER:           # a step sent: what _after_loop does after it, but the messages
            self.status.after_tick()
            self.report_dropped_steps()
            self._holding(bool(self.loop_state.li[LI_LAST_HELD]), '')
            return
        self.leave_loop()
        at, taken = int(ctl[sl.K_AT]), int(ctl[sl.K_TAKEN])
        if code == sl.EV_TABLE_ROWS:
            stream = self.compiled_io[0]
            now = self.lab_now()
            if now > 0.0:
                _, malformed = self.rule.table_joint_rows(taken - at, stream.q[at:taken], stream.dq[at:taken],
                                                          stream.stamps[at:taken], stream.flags[at:taken], now,
                                                          self._now_s(), compiled=False)
                if malformed:
                    self.get_logger().warn(f'malformed table joint state dropped ({malformed})',
                                           throttle_duration_sec=1.0)
        elif code == sl.EV_ARM_ROWS:
            stream = self.compiled_io[1]
            self.rule.arm_joint_rows(taken - at, stream.q[at:taken], stream.dq[at:taken], stream.stamps[at:taken],
                                     stream.flags[at:taken], self._now_s(), compiled=False)
            self._report_rejections()
        elif code == sl.EV_OBSW:
            subscription, handle = self.polled_others[at]
            subscription.taken += 1
            handle(samples.message_bytes())
        elif code not in sl.EVENTS:
            raise ConfigError(f'servicer_sample_loop: no event {code}')
        # the sample itself, in Python (the inputs that came since taken first, as at any sample)
        self.take_inputs()
        now = self.lab_now()
        if now <= 0.0:
            return
        k, stream = int(ctl[sl.K_ROW]), samples.stream
        flags = int(stream.flags[k])
        refused = ''
        if flags & FRAME_OTHER == FRAME_OTHER:
            refused = self.wrong_wrist_frame(stream.frame(k))
        elif flags:
            refused = f'malformed wrist wrench ({malformed_reason(flags)})'
        self._wrist_sample(now, stream.wrench[k].copy(), (int(stream.stamps[k, 0]), int(stream.stamps[k, 1])),
                           refused, python=code == sl.EV_SAMPLE and bool(ctl[sl.K_ENTERED]))

    def loop_arguments(self) -> tuple:
        """Before each entry of the compiled loop (in its thread): the loop's state entered if it can be, the flags
        it reads at its steps, and its arguments, made again (the state's arrays change at each entry)."""
        samples, ctl = self.samples, self._ctl
        loop = self.loop_state
        if loop is None and self.side.started:
            loop = self.loop_state = SampleLoopState(self.rule)
        entered = bool(loop) and (loop.active or loop.enter())
        ctl[sl.K_ENTERED] = entered
        ctl[sl.K_AFTER] = self.last_holding is not False
        ctl[sl.K_AFTER_HELD] = self.last_holding is not True
        guard = self.side.overload
        ctl[sl.K_LEVEL] = LEVELS.index(guard.level) if guard is not None and guard.level == self.status.reported \
            else -1
        return samples.arguments(loop if entered else None)

    def _after(self, out, sample_stamp=None) -> None:
        self._report_rejections()
        self.status.after_tick()
        self.report_dropped_steps()
        if out is None:
            return
        self._send_command(out.q_command, sample_stamp)
        self.publish_output(out.side)
        self._holding(out.holding, out.reason)


class SampleThread(CompiledSampleThread):
    """The node's wrist samples taken and run in :func:`hil_bringup.servicer_sample_loop.servicer_sample_loop`, in a
    thread of the node's own (:class:`hil_bringup.sample_thread.CompiledSampleThread`): the wrist's subscription one no
    executor waits on; the loop's inputs (the joints' streams, the OBSW's and the client's subscriptions) and its
    outputs (the node's compiled publishers) the node's own (``compiled_io``). Under ``use_sim_time`` the loop takes
    the twin's ``/clock`` itself before each sample (rclpy's time source, which sets the ROS clock in the executor's
    thread, may not have taken it yet). The events go to :meth:`ServicerHotPathNode.on_loop_event`, and
    :meth:`ServicerHotPathNode.loop_arguments` runs before each entry. The loop is loaded here (compiled the first
    time), not in the thread."""

    #: the client's states the loop keeps for Python between two of Python's turns (more: an event)
    CLIENT_ROWS, CLIENT_BYTES = 32, 4096

    def __init__(self, node: 'ServicerHotPathNode'):
        node.destroy_subscription(node.wrist_in)          # the wrist's samples: the loop's, no executor's
        self.wrist = node.wrist_in = PolledSubscription(node, WrenchStamped, 'servicer/ft/wrench', 10, raw=True)
        super().__init__(node, 'servicer_samples', sl.EVENTS, self.wrist.handle, node.t0_ns)
        self.stream = rcl_io.WrenchStream(self.wrist.handle, node.wrench_frame_id)
        self._message = rcl_io.SerializedMessage()
        info = np.zeros(64, dtype=np.uint64)
        side, others = node.side, node.polled_others        # the base wrench's, the torques', (the client's)
        held = [adopt(side.wrench_base_com), adopt(side.tau_obsw)]      # the side's held inputs, as arrays
        self.obsw = (np.array([int(sub.handle.pointer) for sub, _ in others[:2]], dtype=np.int64),
                     self._message.words, info, np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.intp),
                     np.zeros(6), np.zeros(side.n), np.zeros(8, dtype=np.uint8), tuple(h.value for h in held),
                     tuple(h.stamp for h in held))
        self.client_rows = np.zeros((self.CLIENT_ROWS, self.CLIENT_BYTES), dtype=np.uint8)
        self.client_lengths, self.client_times = np.zeros(self.CLIENT_ROWS, dtype=np.int64), np.zeros(self.CLIENT_ROWS)
        self.client = (np.array([int(sub.handle.pointer) for sub, _ in others[2:]], dtype=np.int64),
                       self._message.words, info, self.client_rows, self.client_lengths, self.client_times)
        table, arm, cmd, effort = node.compiled_io
        self.table_js, self.arm_js = table.take_args(), arm.take_args()
        self._cmd, self._effort = cmd, effort
        trace = node.trace.pub
        trace_buf = np.frombuffer(bytearray(encode_header(0, 0)), dtype=np.uint8)
        self._trace = (0 if trace is None else int(trace.handle.pointer), rcl_io.fixed_message(trace_buf), trace_buf,
                       trace is not None)
        self._decimated = node.decimated_out.publish_args()
        self.probe = SampleLoopState.probe_args(node.rule)          # held while the state is not entered
        self._probe_out = np.zeros(len(node.table_names)), np.zeros(side.n)
        self.start_loop(sl.servicer_sample_loop)

    def arguments(self, loop: SampleLoopState | None) -> tuple:
        """The loop's arguments on ``loop``'s state (entered), or on placeholders of its types (None: the loop
        hands every sample to Python)."""
        node = self.node
        q_cmd, tau_q = (loop.q_cmd, loop.tau_q) if loop is not None else self._probe_out
        out = (self._cmd.publish_args(q_cmd), self._effort.publish_args(tau_q), self._trace, self._decimated,
               int(node.decimation), int(node.t0_ns), node.decimated_fields, node._decimated_scratch)
        return (self.waiting, self.stream.take_args(), self.clocks, self.sim_args, self.table_js,
                node.rule.table_rows_args(), self.arm_js, node.rule.arm_rows_args(), self.obsw, self.client,
                loop.args() if loop is not None else self.probe, out, node._ctl)

    def message_bytes(self) -> bytes:
        """The message the loop took last (an OBSW message it refused)."""
        return rcl_io.message_bytes(self._message.words).tobytes()

    def take_client_rows(self) -> None:
        """The client's states the loop kept, handled as they came (``on_client_state_raw`` at their receipt
        times), in Python's turn (the loop not running)."""
        ctl = self.node._ctl
        n = int(ctl[sl.K_CLIENT])
        if n == 0:
            return
        node = self.node
        subscription, handle = node.polled_others[2]
        for r in range(n):
            subscription.taken += 1
            length = int(self.client_lengths[r])
            if length < 0:
                node.reject_too_long(subscription, self.CLIENT_BYTES)
            else:
                handle(self.client_rows[r, :length].tobytes(), float(self.client_times[r]))
        ctl[sl.K_CLIENT] = 0

    def after_stop(self) -> None:
        self.take_client_rows()

    def loop_counts(self) -> str:
        ctl = self.node._ctl
        return f'{int(ctl[sl.K_SAMPLES])} samples, {int(ctl[sl.K_STEPS])} steps, {int(ctl[sl.K_WAKES])} wake-ups'

    def release(self) -> bool:
        if not super().release():
            return False
        self.stream.release()
        self._message.release()
        return True


#: ``(wrist samples, of them in the one compiled call, of them in the compiled loop's thread, commands, of them held)``
#: from a node's log (its line at its stop, :meth:`ServicerHotPathNode.close`; 0 in the thread without
#: ``sample_thread``), or None without that line (the node did not stop cleanly)
sample_counts = counts_reader('wrist samples')


def warm_up() -> None:
    """Load the node's compiled calls (compiled and cached the first time): the node built with the Envisat graph's
    parameters (``servicer_hot_path: fused``), on loopback, then destroyed; with ``sample_thread`` it loads its
    compiled loop where it is built (``./dev`` runs this: ``python -m hil_bringup.servicer_sample_loop``)."""
    import rclpy

    from hil_bringup.graphs import envisat_graph
    from hil_common.network import apply_network_profile

    spec = envisat_graph({'servicer_hot_path': 'fused', 'lab_clock': 'wall'}).node('/servicer_hot_path')
    apply_network_profile()
    with tempfile.NamedTemporaryFile('w', suffix='.yaml') as params:
        params.write(spec.params_yaml())
        params.flush()
        rclpy.init(args=['servicer_hot_path_warm_up', *spec.ros_arguments(params.name)])
        try:
            node = ServicerHotPathNode()
            if node.samples is None:       # (the graph's node on the wall clock: lab_clock:=wall below)
                raise ConfigError('servicer_hot_path_node: the Envisat graph\'s node has no compiled sample loop')
            node.close()
            node.destroy_node()
        finally:
            rclpy.shutdown()


def main(args=None) -> int:
    return run_node(ServicerHotPathNode, 'servicer_hot_path', args)


if __name__ == '__main__':
    sys.exit(main())
