"""The fused client hot path as one rule (plain Python, no rclpy): wrench sample -> Eq. (11) -> table command.

:class:`ClientHotPath` wraps the client admittance (seed 004 Eq. 11,
:class:`hil_dynamics.client.ClientAdmittance`) and the motion table
(:class:`hil_motion_table.table.MotionTable`) with the safety policy the separate nodes
have, so ``client_hot_path_node``, a lockstep runner or a benchmark share it:

* **time**: each sample integrates Eq. (11) over the time measured on the caller's
  monotonic clock since the previous sample (in equal RKMK4 steps of at most
  ``1.5 / rate_hz``: a sample within half a period of its time is one step; the first sample
  one step of ``1 / rate_hz``; more than ``max_catch_up`` steps' worth is dropped and counted
  in ``overruns``), then commands the table once. So
  simulated time keeps up with real time whatever the sensor's rate (a 250 Hz sensor with
  ``rate_hz`` 50 no longer runs the client 5x faster), and every sample still gets its
  command (a fixed-step pacer would skip samples that arrive a little early and double the
  next). Refusing a stream whose rate differs from ``rate_hz`` would stop a lab for no
  safety gain. The table's speed limits run on its own clock (``build_table``), so the
  commands are bounded whatever the timing; a lockstep runner passing its simulated time
  gets exactly one ``1 / rate_hz`` step per sample;
* **input checks**: a wrench whose ``frame_id`` is not ``wrench_frame_id`` is refused and
  counted (an empty one is accepted and counted as unframed); a non-finite wrench, or one
  whose force or torque magnitude exceeds ``max_force_n`` / ``max_torque_nm``, **latches a
  fault** before it can reach the state: the state stays finite and the table holds;
* **joint states**: an :class:`hil_common.freshness.InputWatch` (``joint_states_timeout_s``;
  nothing is commanded before the first joint state; recovery after ``recover_after_s`` of
  fresh joint states, or by :meth:`reset` only without ``auto_recover``): while they are
  stale the table holds and Eq. (11) is frozen (the time passes, it is not replayed; the nominal
  moves on through it, and through dropped time, so it stays the servicer's: Eq. 23 needs one);
* **overload** (:class:`hil_common.overload.OverloadGuard`, optional): a sample that comes later
  than the guard's ``hold_late_s`` after the step it owes (the node or its sensor stalled), or
  that drops time, holds until the guard's policy clears it (as ``client_admittance_node``);
* **hold**: every sample that is due while latched, stale or overloaded returns the held command
  (``holding``), so the robot is told explicitly to stay; :meth:`reset` clears the latch
  when its cause is gone (and the table's latched faults);
* **passivity** (with a ``port``, :class:`hil_dynamics.passivity.ClientPort`, seed 004 Eq. 28 and
  §VI): each step observes the port's energy (commanded ``V_c`` against the table's realised
  twist from the measured ``q, dq``, ``twist_from_joints``) and, with the controller on, adds
  its damping, as ``client_admittance_node`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pinocchio as pin

from hil_common.finite import all_finite
from hil_common.freshness import InputWatch
from hil_common.overload import OverloadGuard
from hil_common.pacing import steps_since
from hil_dynamics.client import ClientAdmittance, ClientState
from hil_dynamics.kernels import mat_vec_into
from hil_dynamics.passivity import ClientPort
from hil_dynamics.rebase import RebaseFollower, RebasePlan
from hil_dynamics.se3 import wrench_transform_matrix
from hil_motion_table.table import MotionTable
from hil_common.errors import ConfigError

OK, WARN, ERROR = 0, 1, 2   # DiagnosticStatus levels


@dataclass
class HotPathCommand:
    """A robot command: the table output, or the held command."""

    q_command: np.ndarray
    holding: bool
    state: ClientState | None       # the admittance state after this sample's steps (None if frozen)
    steps: int                       # Eq. (11) steps run for this sample
    reason: str = ''


class ClientHotPath:
    def __init__(self, admittance: ClientAdmittance, pose_sensor_in_client: pin.SE3, table: MotionTable, *,
                 rate_hz: float, max_catch_up: int = 20, max_force_n: float = 1.0e4, max_torque_nm: float = 5.0e3,
                 wrench_frame_id: str = 'ft_sensor', joint_states_timeout_s: float = 0.1,
                 recover_after_s: float = 0.5, auto_recover: bool = True,
                 table_target: Callable[[pin.SE3], pin.SE3] | None = None, epoch_s: float | None = None,
                 port: ClientPort | None = None,
                 twist_from_joints: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                 overload: OverloadGuard | None = None):
        if not (max_force_n > 0 and max_torque_nm > 0):
            raise ConfigError('max_force_n and max_torque_nm must be > 0')
        self.admittance = admittance
        self.overload = overload
        # the passivity observer/controller of the port around each step (None: bare Eq. 11 steps),
        # fed the table's realised twist from the measured joints (twist_from_joints(q, dq))
        self.port = port
        self.twist_from_joints = twist_from_joints
        if port is not None and port.admittance is not admittance:
            raise ConfigError('port must wrap the hot path\'s admittance')
        self.pose_sensor_in_client = pose_sensor_in_client
        # transform_wrench(pose_sensor_in_client, .) as its matrix Ad_{g^-1}^T, built once (seed 004 §III-A)
        self._wrench_sensor_to_com = wrench_transform_matrix(pose_sensor_in_client)
        self.table = table
        self.dt = 1.0 / rate_hz
        self.max_catch_up = int(max_catch_up)
        self.max_force_n = float(max_force_n)
        self.max_torque_nm = float(max_torque_nm)
        self.wrench_frame_id = wrench_frame_id
        # the table's target for g_c: a callable on pin.SE3, or a CommandFrame (its target_array on 12-arrays:
        # MotionTable.step_array, no pin.SE3 per sample)
        self._target_array = getattr(table_target, 'target_array', None)
        self.frame = table_target if self._target_array is not None else None
        self.table_target = (table_target.target if self._target_array is not None else
                             table_target or (lambda pose: pose))
        self.joints = InputWatch('joint_states', joint_states_timeout_s, recover_after_s=recover_after_s,
                                 auto_recover=auto_recover)
        self.t_last: float | None = None   # caller's time of the previous sample
        # the mission's t = 0 on the caller's clock (None: the first sample); see _start
        self.epoch_s = None if epoch_s is None else float(epoch_s)
        self.last_command: HotPathCommand | None = None
        self.overruns = 0                   # rate_hz steps dropped (more than max_catch_up in one sample)
        self.q_measured: np.ndarray | None = None     # _q once joint states came
        self.dq_measured: np.ndarray | None = None    # _dq while the newest joint state had rates
        n = table.kin.dof
        self._q, self._dq, self._dq_ok = np.zeros(n), np.zeros(n), np.zeros(1, dtype=np.int64)
        self.latched = ''            # reason of the latched wrench fault ('' = none)
        self.latched_detail = ''
        self.last_wrench = np.zeros(6)     # the newest accepted sample (zero-order hold)
        self.newest_wrench = np.zeros(6)   # the newest sample, accepted or not (reset judges it)
        self.last_reason = ''
        self.rebase = RebaseFollower(self.dt)     # the servicer node's post-grasp re-basing plan, if any
        self.counters = {'samples': 0, 'commands': 0, 'held': 0, 'steps': 0, 'refused_frame': 0, 'unframed': 0,
                         'refused_joint_states': 0, 'wrench_faults': 0, 'no_joint_states': 0, 'not_due': 0,
                         'malformed': 0}      # F/T samples that did not decode (the node counts them)

    # -- inputs -------------------------------------------------------------------------------
    def joint_states(self, q, now_s: float, dq=None) -> bool:
        """Measured joints (in the table's order, or None if the message did not have them), with
        their rates ``dq`` if measured (the passivity observer's measured port twist)."""
        if q is None:
            self.counters['refused_joint_states'] += 1
            return False
        q = np.asarray(q, dtype=float)
        if q.shape != self._q.shape or not all_finite(q):
            self.counters['refused_joint_states'] += 1
            return False
        # in the arrays the rule keeps (a sample loop's compiled call reads them: client_hot_path_loop)
        self._q[:] = q
        self.q_measured = self._q
        if dq is not None:
            dq = np.asarray(dq, dtype=float)
            if dq.shape != q.shape or not all_finite(dq):
                dq = None
        self._dq_ok[0] = dq is not None
        if dq is not None:
            self._dq[:] = dq
        self.dq_measured = self._dq if dq is not None else None
        if not self.table.initialized:
            self.table.initialize(self.q_measured)
        self.joints.sample(now_s)
        return True

    def plan_due_s(self) -> float:
        """The time (the caller's clock) from which a step runs the re-basing plan (inf: none, or done)."""
        side = self.rebase.side
        return math.inf if side is None or side.done else side.plan.t_start - 1e-9

    def set_rebase_plan(self, plan: RebasePlan, now_s: float) -> str:
        """The servicer node's re-basing plan (:meth:`RebaseFollower.accept`: '' or why not / how late)."""
        return self.rebase.accept(plan, now_s)

    def _trip(self, reason: str, detail: str) -> None:
        self.counters['wrench_faults'] += 1
        if not self.latched:
            self.latched, self.latched_detail = reason, detail

    def refusal(self, wrench) -> tuple[str, str] | None:
        """(reason, detail) if this wrench must not reach Eq. (11), else None."""
        fx, fy, fz, tx, ty, tz = wrench.tolist() if type(wrench) is np.ndarray else (float(v) for v in wrench)
        if not all(map(math.isfinite, (fx, fy, fz, tx, ty, tz))):
            return 'nonfinite_wrench', 'a non-finite wrench sample'
        force, torque = math.sqrt(fx * fx + fy * fy + fz * fz), math.sqrt(tx * tx + ty * ty + tz * tz)
        if force > self.max_force_n or torque > self.max_torque_nm:
            return 'wrench_limit', (f'|f| = {force:.4g} N, |tau| = {torque:.4g} N m (max_force_n {self.max_force_n:g}, '
                                    f'max_torque_nm {self.max_torque_nm:g})')
        return None

    def wrench(self, wrench_sensor, frame_id: str, now_s: float) -> HotPathCommand | None:
        """One F/T sample (sensor frame) at ``now_s``: the robot command, or None if nothing is due
        (refused sample, no joint states yet, or no Eq. (11) step due yet)."""
        self.counters['samples'] += 1
        if frame_id and frame_id != self.wrench_frame_id:
            self.counters['refused_frame'] += 1
            return None
        if not frame_id:
            self.counters['unframed'] += 1
        wrench = np.array(wrench_sensor, dtype=float).reshape(6)
        self.newest_wrench = wrench
        refused = self.refusal(wrench)
        if refused:
            self._trip(*refused)
        elif not self.latched:
            self.last_wrench = wrench
        if self.q_measured is None:
            self.counters['no_joint_states'] += 1
            return None
        if self.t_last is None and self.epoch_s is not None and now_s > self.epoch_s:
            # one mission clock: the nominal moves on from the epoch to the step grid before now (the
            # client held on its start pose relative to it), so the servicer's and ours are one nominal
            n = steps_since(self.epoch_s, now_s, self.dt)
            self.admittance.advance_nominal(n * self.dt, self.dt)
            self.t_last = self.epoch_s + n * self.dt
        elapsed = self.dt if self.t_last is None else now_s - self.t_last
        if not elapsed > 0.0:
            # two samples at one instant (on the lab twin's simulated clock, before its next tick):
            # the newer one waits, and the robot is told again where to be
            self.counters['not_due'] += 1
            last = self.last_command
            return None if last is None else HotPathCommand(last.q_command, last.holding, None, 0, last.reason)
        t_from, self.t_last = self.t_last if self.t_last is not None else now_s - elapsed, now_s
        span = self.max_catch_up * self.dt
        skipped, dropped = 0.0, 0
        if elapsed > span:
            dropped = int(round((elapsed - span) / self.dt))
            self.overruns += dropped
            skipped, elapsed = elapsed - span, span
        # equal steps of at most 1.5 / rate_hz: a sample within half a period of its time is one step. Splitting
        # every interval over 1 / rate_hz (a jittered 1 kHz stream: half its samples) cost a third more CPU,
        # and most when the machine is late; RKMK4's error at 1.5 ms is far below the sensor's (docs/performance.md)
        steps = max(1, math.floor(elapsed / self.dt + 0.5))
        if self.overload is not None:       # how late this sample's time ran past the one step it owed
            self.overload.update(now_s, skipped + elapsed - self.dt, dropped, steps)
        overloaded = self.overload is not None and self.overload.holding
        h = elapsed / steps
        joints = self.joints.update(now_s)
        if self.latched or not self.joints.usable or overloaded:
            reason = self.latched or (f'joint_states {joints}' if not self.joints.usable else
                                      self.overload.message())
            # one mission clock: the nominal moves on while the client holds (co-moving with it)
            self.rebase.advance(self.admittance, t_from, skipped + elapsed)
            return self._held(reason)
        if skipped:          # the dropped time, too: this g_n stays the servicer's (Eq. 23)
            self.rebase.advance(self.admittance, t_from, skipped)
        wrench_com = np.empty(6)         # one product for this path and the compiled sample (client_hot_path_kernel)
        mat_vec_into(self._wrench_sensor_to_com, self.last_wrench, wrench_com)
        measured = (self.twist_from_joints(self.q_measured, self.dq_measured)
                    if self.port is not None and self.twist_from_joints is not None and self.dq_measured is not None
                    else None)
        for i in range(steps):
            self.rebase.before_step(t_from + skipped + i * h, self.admittance)
            state = (self.admittance.step(wrench_com, h) if self.port is None
                     else self.port.step(wrench_com, h, measured))
        self.counters['steps'] += steps
        if self._target_array is not None:
            out = self.table.step_array(self._target_array(state.pose_arrays()[1]), q_measured=self.q_measured,
                                        t=now_s, measurement_age=now_s - self.joints.last_s)
        else:
            out = self.table.step(self.table_target(state.pose_client_in_nominal), q_measured=self.q_measured,
                                  t=now_s, measurement_age=now_s - self.joints.last_s)
        self.counters['commands'] += 1
        reason = ', '.join(out.faults or self.table.latched_faults)
        if out.holding:
            self.counters['held'] += 1
        self.last_reason = reason
        self.last_command = HotPathCommand(out.q_command, out.holding, state, steps, reason)
        return self.last_command

    def _held(self, reason: str) -> HotPathCommand:
        self.counters['held'] += 1
        self.counters['commands'] += 1
        self.last_reason = reason
        self.last_command = HotPathCommand(self.table.q_command, True, None, 0, reason)
        return self.last_command

    # -- reset and status ---------------------------------------------------------------------
    def reset(self, now_s: float) -> tuple[bool, str]:
        """Clear the latched wrench fault (if the newest wrench is acceptable again), the table's
        latched faults, and (manual policy) the joint-state watch."""
        ok_joints, joints_message = self.joints.reset(now_s)
        if self.overload is not None:
            self.overload.reset()
        was = self.latched
        if was:
            refused = self.refusal(self.newest_wrench)
            if refused:
                return False, f'cannot reset: the newest wrench is still refused ({refused[0]}: {refused[1]})'
            self.latched, self.latched_detail = '', ''
            self.last_wrench = self.newest_wrench
        self.table.reset()
        self.last_reason = ''
        message = (f'cleared {was}' if was else 'no wrench fault latched') + f'; {joints_message}'
        return ok_joints, message

    def status(self, now_s: float) -> tuple[int, str, dict]:
        """(level, message, values) for a DiagnosticStatus."""
        joints = self.joints.update(now_s) if self.q_measured is not None else 'waiting'
        table_faults = self.table.latched_faults
        if self.latched:
            level, message = ERROR, f'holding: {self.latched}: {self.latched_detail} (call reset)'
        elif table_faults:
            level, message = ERROR, 'holding: ' + ', '.join(table_faults) + ' (call reset)'
        elif joints in ('stale', 'recovering'):
            level, message = ERROR, 'holding: ' + self.joints.describe(now_s)
        elif self.overload is not None and self.overload.level:
            level, message = self.overload.level, self.overload.message()
        elif joints in ('waiting', 'no_data'):
            level, message = WARN, self.joints.describe(now_s) if self.q_measured is None else 'waiting'
        else:
            level, message = OK, 'commanding'
        values = {**self.counters, **self.joints.counters(),
                  'overruns': self.overruns,
                  'sim_time_s': self.admittance.state.t,
                  'fault': self.latched or 'none', 'table_faults': ','.join(table_faults) or 'none',
                  'max_force_n': self.max_force_n, 'max_torque_nm': self.max_torque_nm,
                  'wrench_frame_id': self.wrench_frame_id,
                  **(self.overload.values() if self.overload is not None else {})}
        return level, message, values
