"""The fused servicer hot path's state owned by a compiled sample loop (plain Python, no rclpy; issue 17).

A compiled loop that runs the servicer's wrist samples with no Python (docs/performance.md, "The servicer's sample
with no Python") steps the rule's state in arrays it owns: :class:`SampleLoopState` holds them. While it is
*entered* the arrays are the state, and the compiled call
(:func:`hil_bringup.servicer_hot_path_kernel.loop_sample`) runs each quiet sample on them: the wrist wrench held in
the EE frame, the tick's policies, the side's step (seed 004 Eqs. 18 and 22, the port's Eq. 28 observer) and the
table's command (with a late sample's catch-up steps before it), and moves the side's state, the table's and the
counts on; a tick the overload guard holds runs there too (the nominal moved on, the hold's gravity torques, the
table's command for the held pose). Any other sample (a fault's or stale joints' hold, dropped steps, a plan due, a
rejected input, a table fault, ...) comes back as an event, with nothing changed: the caller
*leaves* (the state copied back into the rule's objects: ``ServicerSide``, ``ServicerState``, ``MotionTable``,
``ServicerHotPath``'s counts and ``last``) and the rule runs it in Python, as always.

What the loop does not own is already shared: the policies (pacer, overload guard, the joints' watch, the held
inputs) and the measured joints are the rule's own array-backed objects (``policy_kernel.adopt``,
``servicer_side.adopt_joints``), which the joints' and the OBSW's handlers write in place while the state is
entered (so does the client's state, which only a re-basing plan reads, in Python). Everything else that reads
or changes the rule (the wrist sensor's fault, a reset, the OBSW's phase, the status, the watchdog, a new workspace)
runs after :meth:`SampleLoopState.leave`; the next :meth:`enter` takes the state in again.
``servicer_hot_path_node`` (``compiled_samples``, the default) runs it in a compiled loop in a thread of its own
(``sample_thread``: ``hil_bringup.servicer_sample_loop``), which those callbacks pause
(``hil_common.sample_loop.LoopThread``), or calls it from its wrist callback; either way it leaves it before them.

``test_servicer_hot_path_rule`` drives a rule through this state and the rule in Python with the same random
streams, and requires the same commands and the same end state, to the bit.
"""

from __future__ import annotations

import math

import numpy as np

from hil_bringup.servicer_hot_path import ServicerCommand, ServicerHotPath
from hil_bringup.servicer_hot_path_kernel import LF_EXCESS, LF_LAST_SAMPLE, LF_PENDING, LF_T_SIDE, LI_CATCH_UP, \
    LI_COMMANDS, LI_HAS_PASSIVITY, LI_HELD, LI_LAST_HELD, LI_NOT_DUE, LI_SAMPLES, QUIET_EVENT, loop_sample
from hil_common.errors import ConfigError
from hil_common.policy_kernel import GuardState, HeldState, PacerState, WatchState
from hil_dynamics.client import unforced_nominal_constants
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.servicer import ServicerState, port_step_args, side_port_args
from hil_motion_table.table_loop import TableLoopState

#: ``lf`` and ``li`` sizes (``servicer_hot_path_kernel``'s ``LF_*``, ``LI_*``)
N_LF, N_LI = LF_LAST_SAMPLE + 1, LI_HAS_PASSIVITY + 1
#: the counts a loop adds to ``ServicerHotPath.counters``
_COUNTS = (('samples', LI_SAMPLES), ('commands', LI_COMMANDS), ('not_due', LI_NOT_DUE), ('held', LI_HELD))
#: a body whose constants stand in (of the same types) where a held tick does not run in the loop
_PROBE_BODY = RigidBody(1.0, np.eye(3))


class SampleLoopState:
    """The state of ``rule`` (a :class:`ServicerHotPath` with the one compiled call, its joints on arrays, a serial
    table on the side's step grid, a side that has started) in arrays a compiled sample loop steps: the side's
    ``g``, ``v``, the table's command and prediction state, the counts (``lf``, ``li``). :meth:`enter` takes the
    rule's state in, :meth:`sample` runs one wrist sample on it from Python (the tests', a bench's), :meth:`args` are
    :func:`~hil_bringup.servicer_hot_path_kernel.loop_sample`'s arguments for a compiled caller, :meth:`leave` puts the
    state back."""

    def __init__(self, rule: ServicerHotPath):
        side, table = rule.side, rule.table
        if not side.started:
            raise ConfigError('SampleLoopState: the side has not started (its pacer is replaced when it starts)')
        if rule._frame is None or rule.inputs_on_arrays() is None or table.clock is not None:
            raise ConfigError('SampleLoopState: the rule has no one compiled call, no joints on arrays, or a table '
                              'with a clock of its own')
        quiet = rule._quiet or rule._quiet_setup()
        if quiet is None:
            raise ConfigError('SampleLoopState: the rule has no quiet sample (a table pose from its start)')
        self._arrays(rule, quiet)

    def _arrays(self, rule: ServicerHotPath, quiet) -> None:
        """The loop's own arrays for ``rule``, on ``quiet`` (the rule's quiet arrays: the policies' states)."""
        side, table = rule.side, rule.table
        self.rule, self._quiet = rule, quiet
        self.g, self.v = np.zeros((2, 12)), np.zeros(12)        # g_n, g_s; V_n, V_s
        self.g_saved, self.v_saved = np.zeros((2, 12)), np.zeros(12)     # before a sample's steps
        self.lf, self.li = np.zeros(N_LF), np.zeros(N_LI, dtype=np.int64)
        self.table_state = TableLoopState(table)
        self.q_cmd = self.table_state.q_cmd          # the newest command (the table's state, while entered)
        port = side.passivity
        self.acc_saved, self.prev_saved = np.empty_like(port._acc), np.empty_like(port._prev)
        # a held tick's (loop_sample's held): the nominal's constants and scratch, the hold's torques, the port's
        # newest output (PassivityOutput.as_list), zeros for the table's missing twist feed-forward
        self.pv = np.zeros(5)
        self._g_c, self._v_c, self._w_c, self._no_twist = np.zeros(12), np.zeros(6), np.zeros(6), np.zeros(6)
        self.active = False
        self.entries = 0                 # times entered
        self.catch_up_steps = 0          # steps run before a tick's last (late samples), in the compiled call
        self.events = 0                  # samples handed back to the rule's Python while entered
        self._entered_state = None       # adm.state when entered (kept if no step ran)
        self._args = None

    # -- in and out ---------------------------------------------------------------------------------------------
    def enter(self) -> bool:
        """Take the rule's state into the arrays; False (nothing taken) where a quiet sample is not
        possible (``ServicerHotPath.quiet_possible``)."""
        if self.active:
            return True
        if not self.rule.quiet_possible():
            return False
        rule, side = self.rule, self.rule.side
        adm, quiet = side.adm, self._quiet
        s = self._entered_state = adm.state
        g_n, g_s = s.pose_arrays()
        self.g[0], self.g[1] = g_n, g_s
        self.v[:6], self.v[6:] = s.twist_nominal_body, s.twist_base_rel_body
        # the side's live state: its arrays are the loop's (side_port_args reads them), a snapshot again at leave()
        adm.state = ServicerState.of_arrays(s.t, self.g[0], self.v[:6], self.g[1], self.v[6:])
        call = port_step_args(adm, side.ff, side.passivity, side.dt_s, side.q, side.dq, side.ddq, quiet.f_b,
                              quiet.f_e, quiet.v_meas, quiet.tau)
        if call is None:
            adm.state = s
            return False
        side_args, (self.wrench_pc, poses_out, x_out, self.tau_q) = call
        lf, li = self.lf, self.li
        lf[:] = 0.0
        li[:] = 0
        lf[LF_T_SIDE] = s.t
        self.table_state.enter()
        # the port's newest output, which a held tick publishes again (none before the side's first step)
        out = side.passivity_out
        li[LI_HAS_PASSIVITY] = out is not None
        self.pv[:] = out.as_list() if out is not None else 0.0
        self._args = self._build(quiet, rule.plan_due_s(), side_args, poses_out, x_out, side.passivity._acc,
                                 side.passivity._prev, self.tau_q)
        self.active = True
        self.entries += 1
        return True

    def _build(self, quiet, plan_due_s: float, side_args: tuple, poses_out, x_out, acc, prev, tau_q) -> tuple:
        """``loop_sample``'s arguments after the sample's: on ``quiet`` (the policies' arrays), the side's step's
        (``side_args`` and the arrays it writes, the port's accumulators, the torques ``tau_q``) and the loop's own
        arrays."""
        rule, side, table = self.rule, self.rule.side, self.rule.table
        # a held tick runs in the loop where the nominal is a rigid body's (after a re-basing it is the compound's:
        # ServicerAdmittance.advance_nominal's other branch, in Python)
        nominal = side.adm.nominal_body
        held_ok = isinstance(nominal, RigidBody)
        held = (held_ok, unforced_nominal_constants(nominal if held_ok else _PROBE_BODY), self._g_c, self._v_c,
                self._w_c, side.ff.hold_args(rule._inputs.joints.q), tau_q, self.pv, self._no_twist)
        guard, watch, pacer = quiet.guard, quiet.watch, quiet.pacer
        return ((rule.lead_s, side.timeout_s, plan_due_s, pacer.pf, pacer.pi, quiet.has_guard, guard.gf, guard.gi,
                 guard.ring_t, guard.ring_steps, guard.ring_late, watch.wf, watch.wi, quiet.saved_f, quiet.saved_i,
                 quiet.held_values, quiet.held_stamps, quiet.zeros6, quiet.zeros_n, quiet.f_e, quiet.f_b, quiet.tau,
                 quiet.v_meas, *rule._frame.kernel_args(), table.limits.max_measurement_age, rule._cmd,
                 rule._twist_ff),
                (side_args, self.g, self.v, poses_out, x_out, acc, prev, self.acc_saved, self.prev_saved,
                 side._wrench_sensor_to_ee, self.g_saved, self.v_saved),
                self.table_state.args(rule._q_table), held, self.lf, self.li)

    @classmethod
    def load(cls, rule: ServicerHotPath) -> bool:
        """Load ``loop_sample`` now (Numba's cache; compiled the first time), not in a node's first sample, for
        ``rule`` before its side started: on :meth:`probe_args`, with a non-finite wrench, on which it returns at
        once, having read and changed nothing. False where the rule cannot have one (no one compiled call, no joints
        on arrays, a table with its own clock, a table pose from its start)."""
        args = cls.probe_args(rule)
        return args is not None and loop_sample(np.full(6, np.nan), 0.0, 0.0, *args) == QUIET_EVENT

    @classmethod
    def probe_args(cls, rule: ServicerHotPath) -> tuple | None:
        """Arguments of ``loop_sample`` (after the sample's) of the types a :class:`SampleLoopState` of ``rule``
        passes, for ``rule`` before its side started (copies of its policies' states and of its port's accumulators,
        scratch arrays of the loop's): what a compiled caller loads with, and holds while the state is not entered
        (not to be stepped). None where the rule cannot have a loop's state (:meth:`load`)."""
        side, table = rule.side, rule.table
        if rule._frame is None or rule.inputs_on_arrays() is None or table.clock is not None \
                or side.pose_start_inv is not None or side.ff.__dict__.get('_command') in (None, False):
            return None
        held = [HeldState(h) for h in (side.wrench_ee, side.wrench_base_com, side.tau_obsw, side.twist_measured)]
        guard = GuardState(side.overload) if side.overload is not None else None
        quiet = rule._quiet_arrays(PacerState(side.pacer), WatchState(rule.joints), guard, held)
        probe = cls.__new__(cls)
        probe._arrays(rule, quiet)
        port, z, z6 = side.passivity, np.zeros(side.n), np.zeros(6)
        acc, prev = port._acc.copy(), port._prev.copy()
        side_args, (_, poses_out, x_out, tau_q) = side_port_args(side.adm, side.ff, port, acc, prev, side.dt_s, z, z,
                                                                 z, z6, z6, z6, z)
        return probe._build(quiet, math.inf, side_args, poses_out, x_out, acc, prev, tau_q)

    def args(self) -> tuple:
        """``loop_sample``'s arguments after the sample's wrench and times (entered)."""
        return self._args

    def sample(self, wrench_sensor: np.ndarray, now_s: float, side_now_s: float) -> int:
        """One wrist sample (a 6-array in the sensor frame) at ``now_s`` (the table's clock) and ``side_now_s`` (the
        side's): ``loop_sample``'s outcome. Stepped: the command is :attr:`q_cmd`, the torques :attr:`tau_q`, the
        table's pose ``g[1]`` and twist ``v[6:]``. An event: :meth:`leave`, and ``rule.wrench`` runs the sample."""
        return loop_sample(wrench_sensor, now_s, side_now_s, *self._args)

    def wrench(self, wrench_sensor: np.ndarray, now_s: float, side_now_s: float) -> tuple[int, object]:
        """One wrist sample as the fused node runs it: on the loop's state (entered if it can be), else, left, by the
        rule in Python (``ServicerHotPath.wrench``). Returns ``(outcome, command)``: :data:`QUIET_STEPPED` (the command
        in the arrays: :attr:`q_cmd`, :attr:`tau_q`, ``g``, ``v``), :data:`QUIET_HELD` (a held tick's, the same arrays)
        or :data:`QUIET_NOT_DUE` with None, or :data:`QUIET_EVENT` with the rule's ``ServicerCommand`` (or None)."""
        if self.active or self.enter():
            outcome = self.sample(wrench_sensor, now_s, side_now_s)
            if outcome != QUIET_EVENT:
                return outcome, None
            self.events += 1
            self.leave()
        return QUIET_EVENT, self.rule.wrench(wrench_sensor, now_s, side_now_s)

    def leave(self) -> None:
        """Put the state back into the rule's objects (a new snapshot of the side's state, the table's fields, the
        counts, the last command), as the Python path would have left them after the same samples."""
        if not self.active:
            return
        self.active = False
        rule, side = self.rule, self.rule.side
        lf, li = self.lf, self.li
        stepped = li[LI_COMMANDS] > 0
        if not stepped:
            side.adm.state = self._entered_state
        else:
            g, v = self.g.copy(), self.v.copy()
            state = side.adm.state = ServicerState.of_arrays(float(lf[LF_T_SIDE]), g[0], v[:6], g[1], v[6:])
            held = int(li[LI_HELD])
            if li[LI_COMMANDS] > held:          # a step ran (held ticks leave the port's output as it was)
                side.passivity_out = side.passivity.output(float(lf[LF_EXCESS]), float(lf[LF_PENDING]),
                                                           self.wrench_pc.copy())
            # the newest command: a step's, or a held tick's (the overload guard's hold: ServicerSide.tick's output
            # with no twist and the hold's torques, ServicerHotPath._command's with no reason of its own)
            last_held = bool(li[LI_LAST_HELD])
            twist = np.zeros(6) if last_held else state.twist_base_rel_body
            out = side.output(state, twist, self.tau_q.copy(), last_held)
            rule.last = ServicerCommand(out, self.q_cmd.copy(), last_held, '')
            self.table_state.leave()
            rule.fused_steps += int(li[LI_COMMANDS]) - held
            self.catch_up_steps += int(li[LI_CATCH_UP])
        for name, index in _COUNTS:
            rule.counters[name] += int(li[index])
        if li[LI_SAMPLES]:
            rule.quiet_samples += int(li[LI_SAMPLES])
            rule.last_sample_s = float(lf[LF_LAST_SAMPLE])
        self._entered_state = None
