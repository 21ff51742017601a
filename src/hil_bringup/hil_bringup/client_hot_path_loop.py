"""The fused client hot path's state owned by a compiled sample loop (plain Python, no rclpy; issue 17).

As ``servicer_hot_path_loop`` does for the servicer: :class:`ClientLoopState` holds the state a quiet F/T sample
changes in arrays, and while it is *entered* they are the rule's state and the compiled call
(:func:`hil_bringup.client_hot_path_kernel.client_loop_sample`) runs each quiet sample on them: the wrench's checks,
the guard and the joints' watch (the rule's own array-backed objects, ``policy_kernel.adopt``), the port's Eq. (11)
steps and the table's command (the table's state: :class:`hil_motion_table.table_loop.TableLoopState`). Any other
sample comes back as an event with nothing changed: the caller *leaves* (the state copied back into the rule's
objects: the admittance's state, the port's sums and output, the table, the counts, the last command) and the rule
runs it in Python, as always.

What the loop does not own is shared as it is: the measured joints (the rule's ``_q``, ``_dq`` and their flag,
written in place by ``ClientHotPath.joint_states``), the guard and the watch. Everything else that reads or changes
the rule (a reset, a re-basing plan, the status) runs after :meth:`ClientLoopState.leave`.

``test_client_hot_path_rule`` drives a rule through this state and the rule in Python with the same random streams,
and requires the same commands and the same end state, to the bit.
"""

from __future__ import annotations

import numpy as np

from hil_bringup.client_hot_path import HotPathCommand, ClientHotPath
from hil_bringup.client_hot_path_kernel import CF_E_INT, CF_EXCESS, CF_PENDING, CF_T_LAST, CF_T_STATE, CI_COMMANDS, \
    CI_LAST_STEPS, CI_SAMPLES, CI_STEPS, CI_UNFRAMED, CLIENT_EVENT, client_decimated_values, client_loop_sample
from hil_common.errors import ConfigError
from hil_common.overload import OverloadGuard
from hil_common.policy_kernel import GuardState, adopt, guard_update, watch_sample, watch_update
from hil_dynamics.client import ClientState
from hil_dynamics.kernels import mat_vec_into
from hil_motion_table.table_loop import TableLoopState

N_CF, N_CI = CF_PENDING + 1, CI_LAST_STEPS + 1
_COUNTS = (('samples', CI_SAMPLES), ('commands', CI_COMMANDS), ('steps', CI_STEPS), ('unframed', CI_UNFRAMED))


class ClientLoopState:
    """The state of ``rule`` (a :class:`ClientHotPath` with a port, a :class:`CommandFrame` target with the compiled
    twist, a serial table) in arrays a compiled sample loop steps. :meth:`enter` takes the rule's state in,
    :meth:`sample` runs one F/T sample on it, :meth:`leave` puts the state back; :meth:`wrench` is a sample as a node
    runs it (the loop's when it can, else the rule's)."""

    def __init__(self, rule: ClientHotPath):
        port, frame, table = rule.port, rule.frame, rule.table
        if port is None or frame is None or frame.twist_work is None or table._chain is None \
                or rule.twist_from_joints is None or not hasattr(rule.admittance, 'step_arrays') \
                or port.controller.n != 6:
            raise ConfigError('ClientLoopState: the rule needs a port, a command frame with a compiled twist, the '
                              'compiled admittance step and a serial table')
        self.rule = rule
        self.watch = adopt(rule.joints)
        self.has_guard = rule.overload is not None
        self.guard = adopt(rule.overload) if self.has_guard else GuardState(OverloadGuard(1.0, 1.0, 1.0, 0.0), 1)
        guard, watch = self.guard, self.watch
        self.saved_f = np.empty(guard.gf.size + watch.wf.size)
        self.saved_i = np.empty(guard.gi.size + watch.wi.size, dtype=np.int64)
        self.last_wrench, self.newest_wrench, self.wrench_com = np.zeros(6), np.zeros(6), np.zeros(6)
        self.v_meas, self.cmd, self.zeros6 = np.zeros(6), np.zeros(12), np.zeros(6)
        self.g_n, self.g_c, self.v_n, self.v_c = np.zeros(12), np.zeros(12), np.zeros(6), np.zeros(6)
        self.wrench_pc, self.applied = np.zeros(6), np.zeros(6)
        c = port.controller
        self._saved = (np.zeros((2, 12)), np.zeros((2, 6)), np.empty_like(c._acc), np.empty_like(c._prev))
        self.cf, self.ci = np.zeros(N_CF), np.zeros(N_CI, dtype=np.int64)
        self.table_state = TableLoopState(table)
        self.q_cmd = self.table_state.q_cmd          # the newest command (the table's state, while entered)
        self.active = False
        self.entries = 0
        self.events = 0
        self.loop_samples = 0            # samples the compiled call ran (counted at each leave)
        self._entered_state = None
        self._g_t, self._v_t = np.zeros(12), np.zeros(6)         # decimated_values' scratch and values
        self._decimated = (np.zeros(7), np.zeros(6), np.zeros(5), np.zeros(7))
        self._args = self._make_args(np.inf)

    @classmethod
    def for_rule(cls, rule: ClientHotPath) -> 'ClientLoopState | None':
        """The loop's state of ``rule``, its compiled call loaded now (from Numba's cache; compiled the first time),
        not in a node's first sample: on a non-finite wrench, on which it returns at once, having read and changed
        nothing. None where the rule cannot have one (see the class)."""
        try:
            state = cls(rule)
        except ConfigError:
            return None
        if state.sample(np.full(6, np.nan), False, 0.0) != CLIENT_EVENT:
            raise ConfigError('ClientLoopState: the compiled sample ran on a non-finite wrench')
        # and what the rule's Python calls now that its policies are adopted (on copies)
        watch, guard = state.watch, state.guard
        wf, wi = watch.wf.copy(), watch.wi.copy()
        watch_sample(wf, wi, 0.0)
        watch_update(wf, wi, 0.0)
        guard_update(guard.gf.copy(), guard.gi.copy(), guard.ring_t.copy(), guard.ring_steps.copy(),
                     guard.ring_late.copy(), 0.0, 0.0, 0, 1)
        mat_vec_into(rule._wrench_sensor_to_com, np.zeros(6), np.empty(6))
        state.decimated_values()             # (on the state's own arrays, not entered: they are rewritten at enter)
        return state

    def _make_args(self, plan_due_s: float) -> tuple:
        """``client_loop_sample``'s arguments after the sample's: the rule's constants read now."""
        rule, port, frame = self.rule, self.rule.port, self.rule.frame
        c = port.controller
        _, constants = rule.admittance.step_arrays()
        chain, ad, poses, jac, scratch = frame.twist_work
        guard, watch = self.guard, self.watch
        return ((rule.dt, rule.max_catch_up * rule.dt, rule.max_force_n, rule.max_torque_nm, plan_due_s,
                 self.has_guard, guard.gf, guard.gi, guard.ring_t, guard.ring_steps, guard.ring_late, watch.wf,
                 watch.wi, self.saved_f, self.saved_i, self.last_wrench, self.newest_wrench,
                 rule._wrench_sensor_to_com, self.wrench_com, rule._q, rule._dq, rule._dq_ok, chain.placements,
                 chain.kind, chain.axis, chain.frame_placement, ad, poses, jac, scratch, self.v_meas,
                 *frame.kernel_args()[:3], rule.table.limits.max_measurement_age, self.cmd, self.zeros6),
                (c._acc, c._prev, c.mass_matrix, c.enabled, c.max_rate_per_s, c.threshold_j, self.wrench_pc,
                 self.applied, self.g_n, self.v_n, self.g_c, self.v_c, *constants, self._saved),
                self.table_state.args(rule._q), self.cf, self.ci)

    # -- in and out ---------------------------------------------------------------------------------------------
    def quiet_possible(self) -> bool:
        """Whether a quiet sample can run: joints measured, the table initialized and not latched, no wrench fault,
        a previous sample (the mission's epoch met), no re-basing ramp under way (one not started yet: the compiled
        call hands back the samples from its start)."""
        rule = self.rule
        return (rule.q_measured is not None and rule.table.initialized and not rule.table.latched_faults
                and not rule.latched and rule.t_last is not None and rule.t_last < rule.plan_due_s())

    def enter(self) -> bool:
        """Take the rule's state into the arrays; False (nothing taken) where no quiet sample is possible."""
        if self.active:
            return True
        if not self.quiet_possible():
            return False
        rule, port = self.rule, self.rule.port
        s = self._entered_state = rule.admittance.state
        g_n, g_c = s.pose_arrays()
        self.g_n[:], self.g_c[:] = g_n, g_c
        self.v_n[:], self.v_c[:] = s.twist_nominal_body, s.twist_client_rel_body
        self.last_wrench[:], self.newest_wrench[:] = rule.last_wrench, rule.newest_wrench
        cf, ci = self.cf, self.ci
        cf[:] = 0.0
        ci[:] = 0
        cf[CF_T_LAST], cf[CF_T_STATE], cf[CF_E_INT] = rule.t_last, s.t, port.integration_j
        self.table_state.enter()
        self._args = self._make_args(rule.plan_due_s())
        self.active = True
        self.entries += 1
        return True

    def args(self) -> tuple:
        """``client_loop_sample``'s arguments after the sample's (a compiled caller's; made again at each
        :meth:`enter`)."""
        return self._args

    def sample(self, wrench_sensor: np.ndarray, unframed: bool, now_s: float) -> int:
        """One F/T sample (a 6-array in the sensor frame, its frame accepted; ``unframed``: it had none) at ``now_s``:
        ``client_loop_sample``'s outcome. Stepped: the command is :attr:`q_cmd`. An event: :meth:`leave`, and
        ``rule.wrench`` runs the sample."""
        return client_loop_sample(wrench_sensor, unframed, now_s, *self._args)

    def wrench(self, wrench_sensor: np.ndarray, frame_id: str, now_s: float) -> tuple[bool, HotPathCommand | None]:
        """``ClientHotPath.wrench`` as the node runs it: on the loop's state (entered if it can be), else, left, by
        the rule in Python. Returns ``(True, None)`` for a command in the arrays (:attr:`q_cmd`, not holding), else
        ``(False, the rule's command or None)``."""
        rule = self.rule
        if (not frame_id or frame_id == rule.wrench_frame_id) and (self.active or self.enter()):
            if self.sample(wrench_sensor, not frame_id, now_s) != CLIENT_EVENT:
                return True, None
            self.events += 1
            self.leave()
        elif self.active:
            self.leave()
        return False, rule.wrench(wrench_sensor, frame_id, now_s)

    def leave(self) -> None:
        """Put the state back into the rule's objects, as the Python path would have left them after the same
        samples."""
        if not self.active:
            return
        self.active = False
        rule, port, cf, ci = self.rule, self.rule.port, self.cf, self.ci
        if ci[CI_COMMANDS]:
            state = rule.admittance.state = ClientState.of_arrays(float(cf[CF_T_STATE]), self.g_n.copy(),
                                                                  self.v_n.copy(), self.g_c.copy(), self.v_c.copy())
            port.adopt(float(cf[CF_EXCESS]), float(cf[CF_PENDING]), self.wrench_pc.copy(), float(cf[CF_E_INT]))
            rule.t_last = float(cf[CF_T_LAST])
            rule.last_wrench, rule.newest_wrench = self.last_wrench.copy(), self.newest_wrench.copy()
            self.table_state.leave()
            rule.last_reason = ''
            rule.last_command = HotPathCommand(self.q_cmd.copy(), False, state, int(ci[CI_LAST_STEPS]), '')
        for name, index in _COUNTS:
            rule.counters[name] += int(ci[index])
        self.loop_samples += int(ci[CI_SAMPLES])
        ci[:] = 0
        self._entered_state = None

    def decimated_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The decimated messages' values of the newest step (entered; ``client_decimated_values``, which the compiled
        loop writes into the messages themselves): the client's absolute pose ``[x, y, z, qx, qy, qz, qw]`` and twist
        (seed 004 Eq. 23), the port's output (``PassivityOutput.as_list``) and ``g_c`` as a pose; arrays of this
        state's, refilled at each call."""
        client_decimated_values(self.g_n, self.v_n, self.g_c, self.v_c, self.cf, self.rule.port.controller._acc,
                                *self._decimated, self._g_t, self._v_t)
        return self._decimated

    def state(self) -> ClientState:
        """The admittance's state now (entered: a snapshot of the loop's arrays)."""
        if not self.active:
            return self.rule.admittance.state
        return ClientState.of_arrays(float(self.cf[CF_T_STATE]), self.g_n.copy(), self.v_n.copy(), self.g_c.copy(),
                                     self.v_c.copy())


def envisat_client_rule(clock=None):
    """The fused client hot path's rule with the Envisat graph's parameters, as its node builds it (the overload
    guard included; the table on ``clock``, None: the caller's times), and the table's start joints:
    ``(rule, q_table_0)``."""
    from hil_bringup.client_hot_path_node import PARAMS, build_rule
    from hil_bringup.facility import calibrate, load_facility
    from hil_bringup.graphs import envisat_graph
    from hil_bringup.scenario import load_scenario
    from hil_common.params import ParamValues, validate

    graph = envisat_graph({'hot_path': 'fused'})
    values = {k: v for k, v in graph.node('/client_hot_path').parameters.items() if k != 'mission_epoch_s'}
    p = ParamValues(validate(PARAMS, values))
    q_table_0 = np.array(calibrate(load_facility('envisat_lab'), load_scenario('envisat_capture')).q_table_0['client'])
    return build_rule(p, clock), q_table_0

