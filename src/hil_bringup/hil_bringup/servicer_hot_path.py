"""The fused servicer hot path as one rule (plain Python, no rclpy): wrist sample -> Eq. (18) -> table command.

:class:`ServicerHotPath` runs the servicer admittance's rule
(:class:`hil_admittance.servicer_side.ServicerSide`: seed 004 Eqs. 18, 22, 23, its freshness,
pacing, hold and re-basing) and the servicer's motion table
(:class:`hil_motion_table.table.MotionTable`, the KR 120 carrying the base mock-up) back to back,
so ``servicer_hot_path_node``, a test or a benchmark share them:

* **time**: a wrist sample at ``now_s`` runs the steps of the side's fixed grid that are due by
  ``now_s`` and, if none is, the next step when it is due within ``lead_s`` (the node: 1.5 steps):
  the grid locks onto the samples, so a sample stream at the rate whose arrival jitters around
  the grid gets one step and one command per sample, where a grid on its own gives none to a
  sample a little early and two to the next (measured: one command in ten moved the robot by 0 or
  2 steps, velocity jumps as large as the bench's force pulses). The grid runs at most ``lead_s``
  ahead of the samples, and catches up when they come late. The twin's simulated clock needs the
  lead too: the twin moves ``/clock`` to a step only after the F/T drivers passed that step's
  samples on, so a wrist sample arrives while the clock still shows the step before, and the step
  it belongs to is the next one (the twin waits for its command: without the lead every step
  waited out the barrier, 5 s simulated took 555 s). The twin sends one sample per step, so the
  lead never runs a step before its sample;
* **the table's joints** (an :class:`hil_common.freshness.InputWatch`, as ``motion_table_node``):
  nothing is commanded before the first; while they are stale (or recovering) the table holds
  and the side holds too (the base co-moves with the nominal, the arm gets only its gravity
  compensation), so the simulated base never runs away from the held mock-up; the measured base
  twist (``twist_from_joints``) is the passivity observer's ``Ṽ_s`` (seed 004 Eq. 28);
* **the wrist sensor's fault** holds the side (:meth:`set_ft_fault`), as in
  ``servicer_admittance_node``;
* **no wrist samples** for ``sample_timeout_s`` (:meth:`watchdog`, called by a timer): the steps
  go on held, so the arm's effort controller, which keeps its last command, gets the hold's
  gravity compensation instead of the last torques, and the table is told to stay; the first
  sample resumes;
* **the command**: ``g_s`` through the table's command frame to the flange, ``V_s`` as the
  table's twist feed-forward, the IK with its limits timed on the side's step grid (``t`` of the
  step the pose belongs to; pass a table without its own ``clock``): the poses come one grid step
  apart, so timing them by their arrival on the wall clock (jittering +-0.45 ms at 1 kHz) made
  false joint accelerations, and the table clamped 83 % of the commands away from their IK
  solution (none on the grid; ``test_servicer_hot_path_rule``). A late sample's catch-up steps
  move the grid on by as many steps, so the limits still hold over the time the poses span. The
  measurement's age (on ``now_s``) gives the table its own stale check;
* **one compiled call**: the tick's last step and the table's command for its pose are one call
  (:mod:`hil_bringup.servicer_hot_path_kernel`, ``ServicerSide.last_step``) where the side, the table and the
  command frame have their compiled paths (``fused=False``: the separate calls, the reference);
* **the joints' rows in compiled code** (:meth:`ServicerHotPath.inputs_on_arrays`): a take of the arm's or the
  table's joint states (``hil_common.rcl_io.JointStateStream``'s rows) goes into the side and the table joints' watch
  in one call each (``servicer_hot_path_kernel.arm_joint_rows``, ``table_joint_rows``), their state owned by arrays
  (the side's joints adopted, ``servicer_side.adopt_joints``; the watch and the measured twist,
  ``policy_kernel.adopt``); the same steps as :meth:`table_joints` and ``ServicerSide.set_joints``, to the bit;
* **a quiet sample in that call** (``quiet=True``; not the default): a wrist sample whose tick neither holds nor
  catches up (the joints usable, one step due, the overload guard calm, no re-basing plan due or under way, the
  table unlatched) runs its tick's policies in the same call too (``quiet_sample``). Their state is then owned by
  arrays: the pacer, the overload guard, the joints' watch and the held inputs are adopted
  (:func:`hil_common.policy_kernel.adopt`: the same objects, their state the arrays), so every other reader and
  writer (the inputs' handlers, the status, a sample run in Python) sees the one state. Any other sample leaves the
  arrays as they were and runs in Python. Called from Python it costs a few percent more than it saves (its extra
  arguments' unboxing; ``./dev bench servicer_hot_path``, docs/performance.md), so the node does not use it: it is
  the body a compiled sample loop will call, which has no per-call unboxing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from hil_admittance.servicer_side import NO_ARM_JOINTS, ServicerOutput, ServicerSide, adopt_joints
from hil_bringup.servicer_hot_path_kernel import ARM_ROW, QUIET_EVENT, QUIET_NOT_DUE, TABLE_INVALID_COMMAND, \
    TABLE_NOT_RUN, TABLE_STALE_MEASUREMENT, arm_joint_rows, quiet_sample, side_and_table_step, table_joint_rows
from hil_common.cdr import DQ_OK, MALFORMED, Q_OK, malformed_reason
from hil_common.finite import all_finite
from hil_common.freshness import InputWatch
from hil_common import policy_kernel
from hil_common.overload import OverloadGuard
from hil_common.policy_kernel import P_DT, P_STEPS, P_T0, GuardState, HeldState, PacerState, WatchState, adopt, \
    measurement_time
from hil_dynamics.servicer import port_step, port_step_args, port_step_outcome, side_port_args
from hil_motion_table.table import MotionTable


_EVENT = object()       # _quiet_step: the sample is not quiet (the Python path runs it)


@dataclass
class ServicerCommand:
    """The side's output and the table's joint command for one wrist sample."""

    side: ServicerOutput
    q_command: np.ndarray
    holding: bool            # the table holds (its limits, a latched fault or stale joints) or the side does
    reason: str


class ServicerHotPath:
    def __init__(self, side: ServicerSide, table: MotionTable, *, target: Callable, twist: Callable,
                 twist_from_joints: Callable, joint_states_timeout_s: float = 0.1, recover_after_s: float = 0.5,
                 auto_recover: bool = True, lead_s: float = 0.0, sample_timeout_s: float = 0.05, fused: bool = True,
                 quiet: bool = False, joints_by_stamp: bool = False):
        self.side, self.table = side, table
        # a table joint state's time in a take's rows: its stamp (use_sim_time: the twin's; the node passes it),
        # else the take's time (hil_common.lab_clock.measurement_seconds)
        self.joints_by_stamp = bool(joints_by_stamp)
        self.lead_s = float(lead_s)
        self.sample_timeout_s = float(sample_timeout_s)
        self.last_sample_s: float | None = None     # the newest wrist sample (table's clock)
        self.target, self.twist, self.twist_from_joints = target, twist, twist_from_joints
        # a CommandFrame's target (its target_array: the side's 12-array into MotionTable.step_array, no pin.SE3)
        self._target_array = getattr(getattr(target, '__self__', None), 'target_array', None)
        self.joints = InputWatch('joint_states', joint_states_timeout_s, recover_after_s=recover_after_s,
                                 auto_recover=auto_recover)
        # the table's newest measured joints (q_measured: None before the first), an array written in place
        self._q_table, self._q_table_flag = np.zeros(table.kin.dof), np.zeros(1)
        self._inputs = None              # the inputs' arrays (:meth:`inputs_on_arrays`)
        self.ft_fault = False
        self.counters = {'samples': 0, 'commands': 0, 'held': 0, 'not_due': 0, 'no_joint_states': 0,
                         'refused_joint_states': 0}
        self.last: ServicerCommand | None = None
        # the tick's last step and the table's command in one compiled call: a serial table, a CommandFrame's
        # target and twist, the side's table pose g_s itself (not from its start)
        frame = getattr(target, '__self__', None)
        self._frame = frame if fused and self._target_array is not None and hasattr(frame, 'kernel_args') \
            and getattr(twist, '__self__', None) is frame and table._chain is not None \
            and side.pose_start_inv is None else None
        self._table_command = None       # the command the tick's last step made (fused), for _step
        self._age = math.inf             # the joints' age at this tick (the table's stale check)
        self._twist_ff, self._cmd = np.empty(6), np.empty(12)
        #: the quiet samples' arrays (:meth:`_quiet_setup`: for ``quiet`` and the sample loop's state; False: none,
        #: no fused call)
        self._quiet = None if self._frame is not None else False
        self.quiet = bool(quiet)         # a quiet sample in Python runs its tick in the one call
        self.quiet_samples = 0           # samples run by the one compiled call of a quiet sample
        if self._frame is not None:
            side.last_step = self._last_step
            self._load_kernel()
        self.fused_steps = 0             # ticks whose last step and command were the one call

    def table_joints(self, q, dq, now_s: float, side_now_s: float) -> bool:
        """The table's measured joints (its order; None if the message lacked them) at ``now_s`` (the
        table's clock) and ``side_now_s`` (the side's); their rates give the base's measured twist. Joints that are
        not the table's count of finite values are refused (counted in ``refused_joint_states``); False then."""
        if q is None or np.shape(q) != self._q_table.shape or not all_finite(q):
            self.counters['refused_joint_states'] += 1
            return False
        self.q_measured = q
        if not self.table.initialized:
            self.table.initialize(self.q_measured)
        self.joints.sample(now_s)
        if dq is not None and np.shape(dq) == np.shape(q) and all_finite(dq):
            self.side.set_twist_measured(self.twist_from_joints(self.q_measured, np.asarray(dq, dtype=float)),
                                         side_now_s)
        return True

    @property
    def q_measured(self) -> np.ndarray | None:
        """The table's newest measured joints (its order), None before the first: one array, written in place."""
        return self._q_table if self._q_table_flag[0] else None

    @q_measured.setter
    def q_measured(self, q) -> None:
        if q is not None:
            self._q_table[...] = q
        self._q_table_flag[0] = q is not None

    def inputs_on_arrays(self):
        """The state the joints' inputs change, owned by arrays that :meth:`arm_joint_rows` and
        :meth:`table_joint_rows` write in compiled code: the side's joints (``servicer_side.adopt_joints``), the
        table joints' watch and the side's measured twist (``policy_kernel.adopt``), the table's measured joints;
        the same objects, so every other reader and writer sees the one state. None (and the rows go to Python)
        where the table's twist has no compiled path (``CommandFrame.twist_work``: a parallel table, or no frame)."""
        if self._inputs is not None:
            return self._inputs or None
        work = getattr(getattr(self.twist_from_joints, '__self__', None), 'twist_work', None)
        if work is None:
            self._inputs = False
            return None
        n = self.table.kin.dof
        # the twist's compiled call and work arrays: its CommandFrame's (CommandFrame.twist_from_joints)
        self._inputs = SimpleNamespace(joints=adopt_joints(self.side), watch=adopt(self.joints),
                                       twist=adopt(self.side.twist_measured), twist_work=work)
        # the compiled calls loaded now (Numba's cache), not in the first sample: the adopted objects' own, and the
        # rows' on no rows, of a take's types
        policy_kernel.warm_up()
        rows, stamps, flags = np.zeros((1, n)), np.zeros((1, 2), dtype=np.int64), np.zeros(1, dtype=np.int64)
        self.arm_joint_rows(0, np.zeros((1, self.side.n)), np.zeros((1, self.side.n)), stamps, flags, 0.0, load=True)
        self.table_joint_rows(0, rows, rows, stamps, flags, 0.0, 0.0, load=True)
        return self._inputs

    def arm_rows_args(self) -> tuple:
        """``servicer_hot_path_kernel.arm_joint_rows``' arguments after the rows and the time (with the joints on
        arrays: :meth:`inputs_on_arrays`): the side's joints."""
        j = self._inputs.joints
        return j.q, j.dq, j.ddq, j.jf

    def table_rows_args(self) -> tuple:
        """``servicer_hot_path_kernel.table_joint_rows``' arguments after the rows and the times (with the joints on
        arrays): whether a row's time is its stamp (``joints_by_stamp``), whether the table started, its measured
        joints, the joints' watch, the twist's work and the held measured twist. ``initialized`` is read now: a caller
        that keeps them makes them again once the table started."""
        (c, ad, poses, jac, scratch), w, tw = self._inputs.twist_work, self._inputs.watch, self._inputs.twist
        return (self.joints_by_stamp, self.table.initialized, self._q_table, self._q_table_flag, w.wf, w.wi,
                c.placements, c.kind, c.axis, c.frame_placement, ad, poses, jac, scratch, tw.value, tw.stamp)

    def arm_joint_rows(self, n_rows: int, q_rows, dq_rows, stamps, flags, side_now_s: float, compiled: bool = True,
                       load: bool = False) -> int:
        """The arm's joint states of a take (``hil_common.rcl_io.JointStateStream``'s ``q, dq, stamps, flags``), in
        order, each as ``side.set_joints(q, dq, side_now_s, sec + nanosec 1e-9)``; a malformed row, or one without
        every joint's position and velocity, refused by the side with its reason. The rows from the first on go in
        compiled code (``servicer_hot_path_kernel.arm_joint_rows``) up to the first it leaves (a refused row), the
        rest in Python (all of them with ``compiled=False``: the reference). Returns how many went in compiled
        code."""
        inputs = self.inputs_on_arrays() if compiled else None
        start = 0
        if inputs is not None and (n_rows > 0 or load):
            start = arm_joint_rows(n_rows, q_rows, dq_rows, stamps, flags, float(side_now_s), *self.arm_rows_args())
        side = self.side
        for k in range(start, n_rows):
            f = int(flags[k])
            if f & MALFORMED:
                side.reject(f'malformed joint state ({malformed_reason(f)})')
            elif f & ARM_ROW == ARM_ROW:
                side.set_joints(q_rows[k].copy(), dq_rows[k].copy(), side_now_s,
                                int(stamps[k, 0]) + int(stamps[k, 1]) * 1e-9)
            else:
                side.reject(NO_ARM_JOINTS)
        return start

    def table_joint_rows(self, n_rows: int, q_rows, dq_rows, stamps, flags, now_s: float, side_now_s: float,
                         compiled: bool = True, load: bool = False) -> tuple[int, str]:
        """The table's joint states of a take (``hil_common.rcl_io.JointStateStream``'s ``q, dq, stamps, flags``), in
        order, each as :meth:`table_joints` at its time (its stamp with ``joints_by_stamp``, else ``now_s``;
        ``side_now_s``; without its positions: ``q`` None, without its velocities: ``dq`` None); a malformed row
        refused and counted. The rows from the first on go in compiled code
        (``servicer_hot_path_kernel.table_joint_rows``) up to the first it leaves (a malformed or partial row, or the
        first joints, which start the table), the rest in Python (all of them with ``compiled=False``). Returns how
        many went in compiled code and the last malformed row's decode error ('' if none), for the node's warning."""
        inputs = self.inputs_on_arrays() if compiled else None
        start, malformed = 0, ''
        if inputs is not None and (n_rows > 0 or load):
            start = table_joint_rows(n_rows, q_rows, dq_rows, stamps, flags, float(now_s), float(side_now_s),
                                     *self.table_rows_args())
        for k in range(start, n_rows):
            f = int(flags[k])
            if f & MALFORMED:
                self.counters['refused_joint_states'] += 1
                malformed = malformed_reason(f)
            else:
                self.table_joints(q_rows[k].copy() if f & Q_OK else None, dq_rows[k].copy() if f & DQ_OK else None,
                                  measurement_time(int(stamps[k, 0]), int(stamps[k, 1]), self.joints_by_stamp,
                                                   float(now_s)), side_now_s)
        return start, malformed

    def set_ft_fault(self, latched: bool) -> bool:
        """The wrist F/T's latched fault; True when it changed."""
        changed = bool(latched) != self.ft_fault
        self.ft_fault = bool(latched)
        return changed

    def wrench(self, wrench_sensor, now_s: float, side_now_s: float) -> ServicerCommand | None:
        """One wrist sample: the side's steps due by ``side_now_s`` (to within half a step) and the
        table's command on its clock at ``now_s``; None when nothing is due or no joints came yet."""
        self.counters['samples'] += 1
        self.last_sample_s = now_s
        self.side.set_wrench_sensor(wrench_sensor, side_now_s)
        return self._step(now_s, side_now_s, '')

    def watchdog(self, now_s: float, side_now_s: float) -> ServicerCommand | None:
        """Without wrist samples for ``sample_timeout_s`` (after the first): the held step's command."""
        if self.last_sample_s is None or now_s - self.last_sample_s <= self.sample_timeout_s:
            return None
        self.counters['watchdog'] = self.counters.get('watchdog', 0) + 1
        return self._step(now_s, side_now_s, f'no wrist samples for {now_s - self.last_sample_s:.3f} s')

    def _step(self, now_s: float, side_now_s: float, silent: str) -> ServicerCommand | None:
        if not silent and self.quiet and self._quiet is not False:
            done = self._quiet_step(now_s, side_now_s)
            if done is not _EVENT:
                return done
        joints = self.joints.update(now_s)
        # the side holds with the table: a stale table, the wrist sensor's fault or its silence
        self.side.set_fault(self.ft_fault or bool(silent) or (self.q_measured is not None and not self.joints.usable))
        pacer = self.side.pacer
        t_next = pacer.step_time(pacer.steps_done + 1)      # the grid's next step (side's clock)
        early = self.side.started and side_now_s < t_next <= side_now_s + self.lead_s
        self._age = now_s - self.joints.last_s if self.joints.usable else math.inf   # recovering: still holding
        self._table_command = None
        out = self.side.tick(t_next if early else side_now_s)
        fused, self._table_command = self._table_command, None
        if out is None:
            self.counters['not_due'] += 1
            return None
        if self.q_measured is None:
            self.counters['no_joint_states'] += 1
            return None
        return self._command(out, fused, self._age, silent, joints)

    def _command(self, out: ServicerOutput, fused, age: float, silent: str, joints: str) -> ServicerCommand:
        """The table's command for the tick's output ``out`` (``fused``: made in the tick's last step already)."""
        twist_ff = None if out.holding or fused is not None else self.twist(out.twist_table_cmd)
        if fused is not None:             # made in the tick's last step (_last_step)
            table = fused
        elif self._target_array is not None:
            table = self.table.step_array(self._target_array(out.pose_table_cmd_array), q_measured=self.q_measured,
                                          twist_ff_body=twist_ff, t=out.step_time_s, measurement_age=age)
        else:
            table = self.table.step(self.target(out.pose_table_cmd), q_measured=self.q_measured,
                                    twist_ff_body=twist_ff, t=out.step_time_s, measurement_age=age)
        reason = ', '.join(table.faults or self.table.latched_faults) or silent or \
            ('wrist F/T fault latched' if self.ft_fault else '') or \
            (f'joint_states {joints}' if not self.joints.usable else '')
        holding = table.holding or out.holding
        self.counters['commands'] += 1
        self.counters['held'] += holding
        self.last = ServicerCommand(out, table.q_command, holding, reason)
        return self.last

    def _quiet_step(self, now_s: float, side_now_s: float):
        """A wrist sample whose tick is quiet, in one compiled call (``servicer_hot_path_kernel.quiet_sample``: the
        tick's policies on their arrays, then the side's step and the table's command): its command, or None (no
        step due, or the step refused its input), as :meth:`_step` in Python gives; :data:`_EVENT` when the sample
        is not quiet (nothing changed: the Python path runs it)."""
        side, table = self.side, self.table
        if not self.quiet_possible():
            return _EVENT
        quiet = self._quiet or self._quiet_setup()
        if quiet is None:
            return _EVENT
        adm, ff, port, dt = side.adm, side.ff, side.passivity, side.dt_s
        pacer = quiet.pacer
        t = float(pacer.pf[P_T0] + (pacer.pi[P_STEPS] + 1) * pacer.pf[P_DT])     # the step's time (one is due)
        motion_args, motion_out = table.motion_args(True, table.dt_at(t)[0], self.q_measured)
        call = port_step_args(adm, ff, port, dt, side.q, side.dq, side.ddq, quiet.f_b, quiet.f_e, quiet.v_meas,
                              quiet.tau)
        if call is None:
            return _EVENT
        side_args, outputs = call
        outcome, age, excess, pending, status, flags = self._quiet_call(quiet, now_s, side_now_s, self.plan_due_s(),
                                                                        side_args, outputs, motion_args)
        if outcome == QUIET_EVENT:
            return _EVENT
        self.quiet_samples += 1
        if outcome == QUIET_NOT_DUE:
            self.counters['not_due'] += 1
            return None
        inputs = (side.q, side.dq, side.ddq, quiet.f_b, quiet.f_e, quiet.tau)
        try:                          # the tick's last step finished as ServicerSide.tick and _last_step finish it
            done = port_step_outcome(adm, ff, port, dt, inputs, (excess, pending, status), outputs)
            if done is None:          # the port refused its input: the separate calls raise its error
                done = port_step(adm, ff, port, dt, *inputs[:5], quiet.v_meas, quiet.tau)
        except ValueError as exc:     # e.g. joint angles the model refuses: counted, no output
            side.reject(str(exc))
            self.counters['not_due'] += 1
            return None
        s, side.passivity_out, tau_q = done
        fused = None if flags == TABLE_NOT_RUN else self._table_outcome(t, flags, motion_out)
        return self._command(side.output(s, s.twist_base_rel_body, tau_q, False), fused, age, '', '')

    def quiet_possible(self) -> bool:
        """The conditions of a quiet sample that only Python changes: the side started, not held by a fault, its
        joints and the table's measured, the table initialized and unlatched, no re-basing plan to hand out or under
        way (the others, the tick's policies', are the quiet call's)."""
        side, table = self.side, self.table
        plan = side.follower.side
        return not (self.ft_fault or side.fault or not side.started or side.q is None or self.q_measured is None
                    or table._q_cmd is None or table._latched or side.unpublished_plan is not None
                    or (plan is not None and not plan.done))

    def plan_due_s(self) -> float:
        """The step time (side's clock) from which a re-basing plan is due (inf: none will be until Python changes
        something: no schedule, no post-grasp phase yet, or a plan made)."""
        side, rebase = self.side, self.side.rebase
        if rebase is None or side.post_grasp_s is None or not rebase.params.enabled or rebase.plan is not None:
            return math.inf
        return side.post_grasp_s + rebase.params.after_post_grasp_s - 1e-9

    def _quiet_setup(self):
        """The quiet samples' arrays, once the side started: the policies adopted (``hil_common.policy_kernel.adopt``:
        their state is then the arrays the compiled call changes, and Python reads); None (and never again) where the
        fused call does not run (see :meth:`_last_step`) or the table keeps its own clock."""
        side = self.side
        if self._frame is None or self.table.clock is not None or side.pose_start_inv is not None:
            self._quiet = False
            return None
        held = [adopt(h) for h in (side.wrench_ee, side.wrench_base_com, side.tau_obsw, side.twist_measured)]
        guard = adopt(side.overload) if side.overload is not None else None
        self._quiet = self._quiet_arrays(adopt(side.pacer), adopt(self.joints), guard, held)
        return self._quiet

    def _quiet_arrays(self, pacer: PacerState, watch: WatchState, guard: GuardState | None, held: list[HeldState]):
        """:meth:`_quiet_call`'s arrays on these policies' states (``guard`` None: the side has no overload guard)."""
        n = self.side.n
        has_guard = guard is not None
        guard = guard if has_guard else GuardState(OverloadGuard(1.0, 1.0, 1.0, 0.0), 1)
        return SimpleNamespace(
            pacer=pacer, watch=watch, guard=guard, has_guard=has_guard,
            held_values=tuple(h.value for h in held), held_stamps=tuple(h.stamp for h in held),
            saved_f=np.empty(pacer.pf.size + guard.gf.size + watch.wf.size),
            saved_i=np.empty(pacer.pi.size + guard.gi.size + watch.wi.size, dtype=np.int64),
            zeros6=np.zeros(6), zeros_n=np.zeros(n), f_e=np.empty(6), f_b=np.empty(6), tau=np.empty(n),
            v_meas=np.empty(6), g=np.zeros((2, 12)), v=np.zeros(12))

    def _quiet_call(self, quiet, now_s: float, side_now_s: float, plan_due_s: float, side_args: tuple,
                    outputs: tuple, motion_args: tuple) -> tuple:
        """``servicer_hot_path_kernel.quiet_sample`` on ``quiet``'s arrays (:meth:`_quiet_arrays`)."""
        side, guard, watch, pacer = self.side, quiet.guard, quiet.watch, quiet.pacer
        quiet.v[6:] = side.adm.state.twist_base_rel_body     # V_s, the measured twist's stand-in (one step: quiet_sample
        return quiet_sample(                                  # reads no more of the state and writes none of it)
            now_s, side_now_s, self.lead_s, side.timeout_s, plan_due_s, 1, False, pacer.pf, pacer.pi, quiet.has_guard,
            guard.gf, guard.gi, guard.ring_t, guard.ring_steps, guard.ring_late, watch.wf, watch.wi, quiet.saved_f,
            quiet.saved_i, quiet.held_values, quiet.held_stamps, quiet.zeros6, quiet.zeros_n, quiet.g, quiet.v,
            quiet.f_e, quiet.f_b, quiet.tau,
            quiet.v_meas, side_args, outputs[1], outputs[2], *self._frame.kernel_args(),
            self.table.limits.max_measurement_age, motion_args, self._cmd, self._twist_ff)[:6]

    def _last_step(self, adm, ff, port, dt, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, twist_measured,
                   tau_obsw):
        """The tick's last step (``ServicerSide.last_step``, :func:`hil_dynamics.servicer.port_step`'s signature
        and result) and the table's command for its pose in one compiled call, kept for :meth:`_step`. The
        separate calls where the side's step or the table has no compiled path (the table not yet initialized,
        or latched), or no measured joints yet."""
        table, q_measured = self.table, self.q_measured
        call = None
        if q_measured is not None and table.initialized and not table.latched_faults:
            call = port_step_args(adm, ff, port, dt, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee,
                                  twist_measured, tau_obsw)
        if call is None:
            return port_step(adm, ff, port, dt, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, twist_measured,
                             tau_obsw)
        side_args, outputs = call
        t = self.side.pacer.step_time(self.side.pacer.steps_done)     # the step's time, as _step gives the table
        table_dt, _ = table.dt_at(t)
        motion_args, motion_out = table.motion_args(True, table_dt, q_measured)
        excess, pending, status, flags = side_and_table_step(
            side_args, outputs[1], outputs[2], *self._frame.kernel_args(), self._age,
            table.limits.max_measurement_age, motion_args, self._cmd, self._twist_ff)
        done = port_step_outcome(adm, ff, port, dt, (q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, tau_obsw),
                                 (excess, pending, status), outputs)
        if done is None:              # the port refused its input: the separate calls raise its error
            return port_step(adm, ff, port, dt, q_arm, dq_arm, ddq_arm, wrench_base_com, wrench_ee, twist_measured,
                             tau_obsw)
        if flags != TABLE_NOT_RUN:
            self._table_command = self._table_outcome(t, flags, motion_out)
        return done

    def _table_outcome(self, t: float, flags: int, motion_out: tuple):
        """The table's command cycle after the one call ran its part (``flags``), as ``MotionTable.step_array``
        runs it."""
        table = self.table
        table.begin_step(t)
        self.fused_steps += 1
        if flags == TABLE_INVALID_COMMAND:
            return table.hold_for(('invalid_command',))
        if flags == TABLE_STALE_MEASUREMENT:
            return table.hold_for(('stale_measurement',))
        return table.motion_outcome(flags, motion_out)

    def _load_kernel(self) -> None:
        """Load the one call (Numba's cache) now, not in the first sample: on the port's accumulators copied and a
        scratch copy of the table (nothing of this rule changes; the side's work arrays are scratch)."""
        import copy

        side, table = self.side, copy.deepcopy(self.table)
        q_table = np.clip(np.zeros(table.kin.dof), table.q_lo, table.q_hi)
        table.initialize(q_table)
        z, z6 = np.zeros(side.n), np.zeros(6)
        if port_step_args(side.adm, side.ff, side.passivity, side.dt_s, z, z, z, z6, z6, None, z) is None:
            return
        port = side.passivity
        side_args, outputs = side_port_args(side.adm, side.ff, port, port._acc.copy(), port._prev.copy(), side.dt_s,
                                            z, z, z, z6, z6, side.adm.state.twist_base_rel_body, z)
        motion_args, _ = table.motion_args(True, table.period, q_table)
        side_and_table_step(side_args, outputs[1], outputs[2], *self._frame.kernel_args(), 0.0, 1.0, motion_args,
                            np.empty(12), np.empty(6))
        if self.quiet and self._quiet is None:    # and the quiet sample's call, on copies of the policies (the joints'
            # watch waiting: it returns at once, having changed nothing), and the policies' own calls (the adopted
            # objects')
            policy_kernel.warm_up()
            held = [HeldState(h) for h in (side.wrench_ee, side.wrench_base_com, side.tau_obsw, side.twist_measured)]
            guard = GuardState(side.overload) if side.overload is not None else None
            quiet = self._quiet_arrays(PacerState(side.pacer), WatchState(self.joints), guard, held)
            self._quiet_call(quiet, 0.0, 0.0, math.inf, side_args, outputs, motion_args)

    def reset(self, now_s: float) -> tuple[bool, str]:
        """Clear the table's latched faults and (manual policy) the joint watch."""
        ok, message = self.joints.reset(now_s)
        self.table.reset()
        return ok, f'table reset; {message}'
