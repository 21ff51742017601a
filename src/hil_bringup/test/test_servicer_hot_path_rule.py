"""The fused servicer hot path's rule without DDS (``ServicerHotPath``, as the node and a lockstep
runner use it), with the Envisat graph's parameters at 1 kHz:

* the grid locks onto a jittering sample stream: one step and one command per sample (without the
  lead, samples get 0 or 2 steps), and the table's limits, timed on that grid, clamp none of them;
* the command returned for a sample carries that sample's wrench: a force added to one sample
  changes nothing before it, and moves that sample's base pose by the locked rigid body's
  ``1/2 M_bb^-1 J_b^T dF dt^2`` (seed 004 Eq. 18 at the held arm) and the KR 120's command with it.
  So the node's latency trace (``trace_sample_stamps``: the stamp of the sample a command came
  from) measures the latency of the command that carries the sample;
* without samples the watchdog runs the steps held, and says why;
* the tick's last step and the table's command in one compiled call (``hil_bringup.servicer_hot_path_kernel``)
  give the commands the separate calls give (to 1e-12; here to the bit), over random sample streams with late and dropped
  samples, wrist faults and rejected wrenches, stale table joints, table faults with their resets, and the
  watchdog.
"""

import collections
import struct
import types

import numpy as np
import pytest

from hil_admittance.servicer_admittance_node import build_side
from hil_admittance.servicer_side import ServicerMessages
from hil_bringup.servicer_hot_path_kernel import ARM_ROW, envisat_values
from hil_bringup.servicer_hot_path_node import build_rule
from hil_common.cdr import DQ_OK, MALFORMED, POSITIONS_FULL, Q_OK
from hil_common.conversions import xyz_rpy_to_pose
from hil_common.overload import OverloadGuard
from hil_common.pacing import StepPacer
from hil_common.params import ParamValues
from hil_dynamics.se3 import transform_wrench

RATE_HZ = 1000.0
FRAMES = ('orbit', 'nominal', 'servicer_base')     # the decimated messages' frames (orbit, nominal, base)
T0_NS = 1_795_000_000_123_456_789                  # the node's t = 0 on the ROS clock
DT = 1.0 / RATE_HZ
PACER_FIELDS = {'dt_s', 't0_s', 'max_catch_up', 'steps_done', 'overruns', 'last_late_s', 'last_dropped'}


@pytest.fixture(scope='module')
def setup():
    return envisat_values(lab_clock='wall', use_sim='true', control_rate_hz=str(RATE_HZ))


class Lockstep:
    """One rule on a given clock, built as the node builds it (``build_rule``: the table timed on the side's grid),
    with the side's overload guard ``overload``: the arm held at ``q_arm``, the KR 120 measured at its start joints."""

    def __init__(self, setup, lead_steps: float = 1.5, fused: bool = True, quiet: bool = False, overload=None,
                 joints_by_stamp: bool = False):
        values, self.q_table_0, self.q_arm = setup
        p = ParamValues(values)
        self.t = 0.0
        self.side = build_side(p, overload)
        self.rule, self.frame = build_rule(p, self.side, lead_s=lead_steps * DT, fused=fused, quiet=quiet,
                                           joints_by_stamp=joints_by_stamp)

    def sample(self, t: float, force_sensor=(0.0, 0.0, 0.0)):
        self.t = t
        self.side.set_joints(self.q_arm, np.zeros(len(self.q_arm)), t)
        self.side.set_tau(np.zeros(len(self.q_arm)), t)
        self.side.set_wrench_base(np.zeros(6), t)
        self.rule.table_joints(self.q_table_0, None, t, t)       # the robot stays put (measured q0)
        return self.rule.wrench(np.r_[force_sensor, 0.0, 0.0, 0.0], t, t)


    def wrench(self, force_sensor, t: float):
        return self.rule.wrench(force_sensor, t, t)

    def leave(self) -> None:
        """Nothing to leave: the rule runs in Python."""


class LoopLockstep(Lockstep):
    """A :class:`Lockstep` whose quiet wrist samples run on the state of a compiled sample loop
    (``servicer_hot_path_loop.SampleLoopState``), entered whenever it can be and left for everything else, as a node's
    loop would; its outputs as ``ServicerCommand``'s fields."""

    def __init__(self, setup, **kwargs):
        super().__init__(setup, **kwargs)
        self.rule.inputs_on_arrays()            # the joints and the held inputs on arrays, as the node has them
        self.state = None
        self.loop_samples = 0
        self.loop_held = 0                      # held ticks run on the loop's state

    def leave(self) -> None:
        if self.state is not None:
            self.state.leave()

    def wrench(self, force_sensor, t: float):
        from hil_bringup.servicer_hot_path_kernel import QUIET_EVENT, QUIET_HELD, QUIET_STEPPED
        from hil_bringup.servicer_hot_path_loop import SampleLoopState

        if self.state is None and self.side.started:
            self.state = SampleLoopState(self.rule)
        if self.state is None:
            return self.rule.wrench(force_sensor, t, t)
        outcome, out = self.state.wrench(np.asarray(force_sensor, dtype=float), t, t)
        if outcome == QUIET_EVENT:
            return out
        self.loop_samples += 1
        if outcome != QUIET_STEPPED and outcome != QUIET_HELD:
            return None
        st, held = self.state, outcome == QUIET_HELD
        self.loop_held += held
        side = types.SimpleNamespace(pose_table_cmd_array=st.g[1].copy(), tau_q=st.tau_q.copy(),
                                     twist_table_cmd=np.zeros(6) if held else st.v[6:].copy(), rebase_plan=None,
                                     holding=held)
        return types.SimpleNamespace(q_command=st.q_cmd.copy(), holding=held, reason='', side=side,
                                     messages=self.messages(held))

    def messages(self, held: bool) -> tuple[int, int, list[bytes]]:
        """The decimated messages of the loop's last step or ``held`` tick, as the node writes them from the loop's
        arrays (``servicer_hot_path_kernel.decimated_values`` into ``ServicerMessages.fields``; no passivity before
        the port's first output), stamped here by ``ServicerMessages.encode``'s rule."""
        from hil_bringup.servicer_hot_path_kernel import LI_HAS_PASSIVITY, decimated_values

        if not hasattr(self, 'encoders'):
            self.encoders = ServicerMessages(FRAMES)
        buffers, fields = self.encoders.fields()
        st, pacer = self.state, self.side.pacer
        stamp_ns = decimated_values(T0_NS, pacer.step_time(pacer.steps_done), st.g, st.v, held, st.pv, *fields,
                                    np.empty(12), np.empty(6))
        sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
        for buf in buffers[:3]:
            struct.pack_into('<iI', buf, 4, sec, nanosec)
        return sec, nanosec, [bytes(buf) for buf in buffers[:4 if st.li[LI_HAS_PASSIVITY] else 3]]


def jittered_times(n: int, seed: int = 4) -> np.ndarray:
    """Arrivals of a 1 kHz stream, each within +-0.45 periods of its nominal instant."""
    return 1.0 + DT * (np.arange(n) + np.random.default_rng(seed).uniform(-0.45, 0.45, n))


def test_the_step_grid_locks_onto_a_jittering_stream_one_command_per_sample(setup):
    times = jittered_times(400)
    run = Lockstep(setup)
    run.sample(times[0] - DT)                  # the first sample starts the grid (no step yet)
    steps = []
    for t in times:
        out = run.sample(t, (200.0, 0.0, 0.0))
        assert out is not None and not out.holding, (t, out and out.reason)
        steps.append(run.side.pacer.steps_done)
    assert np.all(np.diff(steps) == 1), np.unique(np.diff(steps), return_counts=True)
    # the grid stays within the lead of the samples
    assert abs(run.side.pacer.step_time(run.side.pacer.steps_done) - times[-1]) <= 1.5 * DT + 1e-12
    # the table's limits are timed on the grid, so the arrival jitter makes no false joint accelerations:
    # every command is its pose's IK solution, unclamped (timed on the arrivals, 83 % were clamped)
    assert run.rule.table.stats.clamp_counts == {name: 0 for name in run.rule.table.stats.clamp_counts}, \
        run.rule.table.stats.clamp_counts
    # without the lead, the same stream gives some samples no step and others two
    run = Lockstep(setup, lead_steps=0.0)
    run.sample(times[0] - DT)
    outs, steps = [], []
    for t in times:
        outs.append(run.sample(t, (200.0, 0.0, 0.0)))
        steps.append(run.side.pacer.steps_done)
    assert sum(o is None for o in outs) > 20 and np.any(np.diff(steps) == 2)


def test_the_command_for_a_sample_carries_that_samples_wrench(setup):
    values, _, q_arm = setup
    times = jittered_times(120, seed=7)
    k, push = 100, np.array([500.0, 0.0, 0.0])            # the extra force on sample k only [N, sensor frame]
    plain, pushed = Lockstep(setup), Lockstep(setup)
    plain.sample(times[0] - DT)
    pushed.sample(times[0] - DT)
    for j, t in enumerate(times):
        a = plain.sample(t)
        b = pushed.sample(t, push if j == k else (0.0, 0.0, 0.0))
        if j < k:          # nothing before the push differs, to the bit
            np.testing.assert_array_equal(a.q_command, b.q_command)
            np.testing.assert_array_equal(a.side.pose_table_cmd.homogeneous, b.side.pose_table_cmd.homogeneous)
        elif j == k:
            break
    # the base's pose after the step of sample k: 1/2 a dt^2 of its locked rigid body (arm held, ddq = 0)
    model = plain.side.adm.model
    f_ee = transform_wrench(xyz_rpy_to_pose(values['pose_sensor_in_ee_xyz_rpy']), np.r_[push, 0.0, 0.0, 0.0])
    acc_body = np.linalg.solve(model.mass_matrix(q_arm)[:6, :6], model.ee_jacobian(q_arm)[:, :6].T @ f_ee)
    rotation = a.side.pose_table_cmd.rotation
    expected = 0.5 * rotation @ acc_body[:3] * DT ** 2
    moved = b.side.pose_table_cmd.translation - a.side.pose_table_cmd.translation
    assert np.linalg.norm(moved - expected) < 0.02 * np.linalg.norm(expected), (moved, expected)
    # ... and the KR 120's command of that same sample moves the flange as its target moved
    kin = plain.rule.table.kin
    target_moved = (plain.frame.target(b.side.pose_table_cmd).translation
                    - plain.frame.target(a.side.pose_table_cmd).translation)
    flange_moved = kin.forward(b.q_command).translation - kin.forward(a.q_command).translation
    assert np.linalg.norm(target_moved) > 0.5 * np.linalg.norm(expected)
    assert np.linalg.norm(flange_moved - target_moved) < 0.05 * np.linalg.norm(target_moved), \
        (flange_moved, target_moved)


def test_without_samples_the_watchdog_runs_the_steps_held_and_says_why(setup):
    values, _, _ = setup
    run = Lockstep(setup)
    times = jittered_times(50)
    run.sample(times[0] - DT)
    for t in times:
        last = run.sample(t, (200.0, 0.0, 0.0))
    assert run.rule.watchdog(times[-1] + 0.5 * values['input_timeout_s'], times[-1]) is None
    t = times[-1] + 2.0 * values['input_timeout_s']
    for tt in np.arange(times[-1] + DT, t + 0.5 * DT, DT):     # the robot still reports; only the wrist is silent
        run.t = tt
        run.rule.table_joints(run.q_table_0, None, tt, tt)
    held = run.rule.watchdog(t, t)
    assert held is not None and held.holding and held.side.holding and 'no wrist samples' in held.reason
    np.testing.assert_array_equal(held.side.twist_table_cmd, np.zeros(6))
    np.testing.assert_allclose(held.side.pose_table_cmd.translation, last.side.pose_table_cmd.translation, atol=1e-12)
    # the next sample resumes
    resumed = run.sample(t + DT, (200.0, 0.0, 0.0))
    assert resumed is not None and not resumed.holding


@pytest.mark.parametrize('horizon_s', [0.0, 0.02])
def test_the_compiled_calls_give_the_commands_of_the_separate_calls(setup, horizon_s):
    """Four rules fed the same random stream: the reference (the separate calls, the tick in Python), one making each
    tick's last step and the table's command in one compiled call, and one that also runs each quiet sample's tick
    in that call (``quiet_sample``: the policies on their arrays). The stream: 1 kHz samples with jitter, gaps of up
    to 6 periods (catch-up steps, and holds of a tight overload guard), wrenches that drive the table out of its
    workspace (latched, then reset), non-finite wrenches (rejected), a wrist F/T fault, table joints that stop
    (stale: held) and come back, arm joints moving, the OBSW's torques and base wrench, and a post-grasp re-basing
    (its plan and ramp); the fourth rule runs the quiet samples, and the overload guard's held ticks, on a compiled
    sample loop's state. Every output is the same (the side's to the bit, the table's command to 1e-12), the rules
    end in the same state, and the stream did reach each of those branches. The table without its delay
    compensation (the wall clock's) and with it (the twin's: the twist feed-forward predicts the pose)."""
    values, q_table_0, q_arm = setup
    # the lab's gravity in Eq. (22) and in the hold's torques (the Envisat arm compensates its own: 0 there), so that
    # a hold's torques, which are only that, can differ between the rules
    setup = ({**values, 'prediction_horizon_s': horizon_s, 'rebase_enabled': True, 'rebase_after_post_grasp_s': 0.1,
              'rebase_ramp_s': 0.2, 'rebase_lead_s': 0.02, 'gravity_m_s2': 9.80665}, q_table_0, q_arm)

    def guard():              # holds on the longest gaps (a tick 5.5 ms late), recovers after 20 ms on time
        return OverloadGuard(DT, 2e-3, 5.5e-3, 0.02, 'auto', window_s=0.05)

    runs = [Lockstep(setup, quiet=True, overload=guard()), Lockstep(setup, overload=guard()),
            Lockstep(setup, fused=False, overload=guard()), LoopLockstep(setup, overload=guard())]
    client_pose = runs[0].side.adm.state.pose_nominal_in_orbit
    rng = np.random.default_rng(17)
    n = len(q_arm)
    t = 1.0
    for run in runs:
        run.sample(t - DT)
    seen = {'catch_up': 0, 'holding': 0, 'table_fault': 0, 'rejected': 0, 'stale': 0, 'watchdog': 0}
    python_messages = ServicerMessages(FRAMES)
    silent_until = stale_until = -1.0
    side_stepped = 0
    q_table = q_table_0.copy()
    reasons = collections.Counter()
    for k in range(1600):
        gap = 1 + (rng.integers(2, 7) if rng.random() < 0.03 else 0)
        t += DT * (gap + rng.uniform(-0.45, 0.45))
        seen['catch_up'] += gap > 1
        if k == 300:                               # the table's joints stop (then recover after recover_after_s)
            stale_until = t + 1.5 * values['joint_states_timeout_s']
        if k == 1400:                              # the wrist sensor falls silent: the watchdog's held steps
            silent_until = t + 2.5 * values['input_timeout_s']
        force = rng.normal(0.0, 60.0, 6) * (1.0, 1.0, 1.0, 0.1, 0.1, 0.1)
        if rng.random() < 0.004:
            force[:3] *= 40.0                     # a push the table cannot follow within its limits
        if rng.random() < 0.005:
            force[2] = np.nan                      # rejected
        if 1000 <= k < 1150:
            force[:3] += 500.0                     # and a push out of it
        fault = 150 <= k < 190
        q_arm_k = q_arm + 0.05 * np.sin(0.002 * k + np.arange(n))
        dq_arm = 0.1 * np.cos(0.002 * k + np.arange(n))
        tau, f_b = rng.normal(0.0, 2.0, n), rng.normal(0.0, 5.0, 6)
        dq_table = rng.normal(0.0, 0.01, len(q_table))           # the measured base twist (passivity observer)
        outs = []
        was_latched = bool(runs[1].rule.table.latched_faults)      # before this sample's command
        for run in runs:
            rule = run.rule
            if k in (1000, 1150, 1160) or k >= 1160 or fault != rule.ft_fault or t < silent_until \
                    or (rule.table.latched_faults and k % 50 == 0):
                run.leave()                        # the loop's state back in the rule for what only Python changes
            if k == 1160:                          # post_grasp: the re-basing plan 0.1 s later, then its ramp
                run.side.set_phase('post_grasp', t)
            if k >= 1160:
                run.side.set_client_state(client_pose, np.array([0.0, 0.0, 0.01, 0.0, 0.0, 0.0]), t)
            table = rule.table
            if k == 1000:                          # a workspace of +-0.05 mm around the target: soon left (latched)
                box = table.workspace_min.copy(), table.workspace_max.copy()
                table.workspace_min, table.workspace_max = table._target[9:] - 5e-5, table._target[9:] + 5e-5
            if k == 1150:
                table.workspace_min, table.workspace_max = box
            run.side.set_joints(q_arm_k, dq_arm, t, t)
            if k % 4 == 0:
                run.side.set_tau(tau, t)
                run.side.set_wrench_base(f_b, t)
            if t > stale_until:
                rule.table_joints(q_table, dq_table, t, t)
            rule.set_ft_fault(fault)
            if rule.table.latched_faults and k % 50 == 0:
                rule.reset(t)
            if t < silent_until:
                outs.append(rule.watchdog(t, t))
            else:
                outs.append(run.wrench(force, t))
        a = outs[0]
        for b in outs[1:]:
            assert (a is None) == (b is None), k
            if a is None:
                continue
            # the twist feed-forward Ad_Y V_s is a loop in the kernel and numpy's product in the reference: equal
            # here, and within rounding where a BLAS fuses its multiply-adds
            np.testing.assert_allclose(a.q_command, b.q_command, rtol=1e-12, atol=1e-12, err_msg=f'sample {k}')
            assert (a.holding, a.reason) == (b.holding, b.reason), k
            np.testing.assert_array_equal(a.side.pose_table_cmd_array, b.side.pose_table_cmd_array)
            np.testing.assert_array_equal(a.side.tau_q, b.side.tau_q)
            np.testing.assert_array_equal(a.side.twist_table_cmd, b.side.twist_table_cmd)
            assert (a.side.rebase_plan is None) == (b.side.rebase_plan is None), k
        loop_out = outs[3]
        if getattr(loop_out, 'messages', None) is not None:    # the loop's decimated messages are the Python path's
            assert loop_out.messages == python_messages.encode(T0_NS, outs[1].side), k
            seen['loop_messages'] = seen.get('loop_messages', 0) + 1
        if t < silent_until:
            seen['watchdog'] += a is not None
        if a is None:
            continue
        seen['holding'] += a.holding
        side_stepped += not a.side.holding and not was_latched
        reasons[a.reason.split(' ')[0]] += 1
        seen['table_fault'] += bool(runs[1].rule.table.latched_faults)
        seen['stale'] += 'stale_measurement' in a.reason or 'joint_states' in a.reason
        if not a.holding:
            q_table = a.q_command                  # the robot follows its command
    quiet, fused, ref, loop = runs
    loop.leave()
    for run in (fused, ref, loop):
        assert quiet.side.rejected == run.side.rejected
        assert quiet.rule.counters == run.rule.counters
        assert quiet.rule.table.stats.fault_counts == run.rule.table.stats.fault_counts
        assert quiet.rule.table.stats.clamp_counts == run.rule.table.stats.clamp_counts
        assert quiet.rule.table.stats.steps == run.rule.table.stats.steps
        np.testing.assert_array_equal(quiet.side.adm.state.pose_arrays()[0], run.side.adm.state.pose_arrays()[0])
        np.testing.assert_array_equal(quiet.side.adm.state.pose_arrays()[1], run.side.adm.state.pose_arrays()[1])
        s_q, s_r = quiet.side.adm.state, run.side.adm.state     # the side's time and twists, to the bit
        assert s_q.t == s_r.t, (s_q.t, s_r.t)
        np.testing.assert_array_equal(s_q.twist_nominal_body, s_r.twist_nominal_body)
        np.testing.assert_array_equal(s_q.twist_base_rel_body, s_r.twist_base_rel_body)
        np.testing.assert_array_equal(quiet.side.passivity._acc, run.side.passivity._acc)
        # the policies' state (the quiet rule's: its arrays, read through the adopted objects)
        assert vars(StepPacer(1.0, 0.0)).keys() == PACER_FIELDS
        for name in PACER_FIELDS:
            assert getattr(quiet.side.pacer, name) == getattr(run.side.pacer, name), name
        for name in ('ticks', 'late_ticks', 'dropped_steps', 'holds', 'holding', 'level', 'reason', 'max_late_s',
                     'mean_late_window_s'):
            assert getattr(quiet.side.overload, name) == getattr(run.side.overload, name), name
        for name in ('state', 'last_s', 'samples', 'stale_events', 'recoveries'):
            assert getattr(quiet.rule.joints, name) == getattr(run.rule.joints, name), name
    seen['rejected'] = quiet.side.rejected
    seen['overload_holds'] = quiet.side.overload.holds
    seen['rebase'] = quiet.side.rebase.plan is not None and quiet.side.follower.side.done
    assert ref.rule.fused_steps == 0 and ref.rule.quiet_samples == 0 and fused.rule.quiet_samples == 0
    # the one call made every command whose side stepped with the table unlatched; the quiet call most of them
    # (not in the re-basing ramp, nor at catch-up or held ticks)
    assert fused.rule.fused_steps == quiet.rule.fused_steps >= side_stepped > 300, (fused.rule.fused_steps, side_stepped)
    assert quiet.rule.quiet_samples > 0.6 * side_stepped, (quiet.rule.quiet_samples, side_stepped, reasons)
    # the loop's state ran the quiet samples the quiet call ran, but those of the re-basing's stretch (left there
    # at every sample), and the others came back to Python as events
    assert loop.rule.quiet_samples == loop.loop_samples > 0.5 * side_stepped, (loop.loop_samples, side_stepped)
    assert loop.state.events > 5 and loop.state.entries > 20, (loop.state.events, loop.state.entries)
    # the overload guard's holds ran there too: held ticks (the nominal moved on, the hold's torques, the table's
    # command for the held pose), each the same as the Python path's to the bit (above)
    assert loop.loop_held > 20 and quiet.side.overload.holds > 3, (loop.loop_held, quiet.side.overload.holds)
    # late samples' catch-up steps ran in the loop's call too (a tick of several steps: ServicerSide.tick's)
    print('loop: catch-up steps', loop.state.catch_up_steps, 'events', loop.state.events, 'of', side_stepped)
    assert loop.state.catch_up_steps > 20, loop.state.catch_up_steps
    assert seen['loop_messages'] > 0.5 * side_stepped, (seen['loop_messages'], side_stepped)
    assert all(v > 0 for v in seen.values()), (seen, reasons)


@pytest.mark.parametrize('joints_by_stamp', [False, True])
def test_the_joints_taken_in_compiled_code_are_the_python_handlers(setup, joints_by_stamp):
    """A take's joint-state rows (``JointStateStream``'s arrays) into the rule (``ServicerHotPath.arm_joint_rows``,
    ``table_joint_rows``, as the node hands them): in compiled code up to the first row it leaves and the rest in
    Python, against the Python for every row (``compiled=False``), on two rules fed the same random takes: arm stamps advancing with jitter, the
    same stamp again, a clock going back, unstamped rows; malformed and partial rows; the table's first joints (they
    start the table), gaps that make its joints stale and their recovery, a twist too large to be finite. After every
    take the side's joints (``q``, ``dq``, ``ddq`` by differencing, their times), the rejections, the table's measured
    joints, the joints' watch and the measured twist are the same, to the bit; and every branch was reached. With
    ``joints_by_stamp`` (the node under ``use_sim_time``) the table's rows are timed by their stamps (unstamped ones
    by the take's time) and the watch's last sample is the last row's stamp."""
    values = setup[0]
    # the reference keeps its Python objects
    ref, fast = Lockstep(setup, joints_by_stamp=joints_by_stamp), Lockstep(setup, joints_by_stamp=joints_by_stamp)
    assert fast.rule.inputs_on_arrays() is not None
    rng = np.random.default_rng(23)
    n, m = len(setup[2]), len(setup[1])
    t, stamp = 1.0, 0.2
    seen = collections.Counter()
    for batch in range(700):
        t += rng.uniform(0.0, 2e-3) + (0.25 if rng.random() < 0.01 else 0.0)       # gaps: the table joints go stale
        rows_arm = rng.integers(0, 4)
        q_rows, dq_rows = rng.normal(0.0, 0.3, (rows_arm, n)), rng.normal(0.0, 0.2, (rows_arm, n))
        stamps, flags = np.zeros((rows_arm, 2), dtype=np.int64), np.full(rows_arm, ARM_ROW, dtype=np.int64)
        for k in range(rows_arm):
            u = rng.random()
            if u < 0.05:
                seen['unstamped'] += 1                  # (0, 0): the receipt time
            else:
                if u < 0.1:
                    seen['same stamp'] += 1
                elif u < 0.14:
                    stamp -= 0.01
                    seen['clock back'] += 1
                else:
                    stamp += rng.uniform(0.5e-3, 1.5e-3)
                stamps[k] = int(stamp), int(round((stamp - int(stamp)) * 1e9))
            u = rng.random()
            if u < 0.04:
                flags[k] = MALFORMED | 5 << 8            # buffer too short
            elif u < 0.08:
                flags[k] = Q_OK | DQ_OK                 # fewer positions than names
            elif u < 0.1:
                flags[k] = Q_OK
        rows_table = rng.integers(0, 4) if batch > 5 else 0
        tq_rows = setup[1] + rng.normal(0.0, 0.01, (rows_table, m))
        tdq_rows = rng.normal(0.0, 0.05, (rows_table, m))
        tflags = np.full(rows_table, Q_OK | DQ_OK | POSITIONS_FULL, dtype=np.int64)
        tstamps = np.zeros((rows_table, 2), dtype=np.int64)
        for k in range(rows_table):
            if rng.random() < 0.9:                     # the twin's stamps, a step behind the take's time
                ts = t - 4e-3 * (rows_table - k)
                tstamps[k] = int(ts), int(round((ts - int(ts)) * 1e9))
            u = rng.random()
            if u < 0.04:
                tflags[k] = MALFORMED | 3 << 8           # names beyond the buffer
            elif u < 0.08:
                tflags[k] = DQ_OK                      # a joint missing
            elif u < 0.14:
                tflags[k] = Q_OK                       # no velocities: no twist
            elif u < 0.17:
                tdq_rows[k] = 1e307                    # finite rates, a twist that is not
                seen['huge rates'] += 1
        arm, table = (q_rows, dq_rows, stamps, flags), (tq_rows, tdq_rows, tstamps, tflags)
        side_t = t - 0.7                               # the side's clock: not the table's
        for run in (ref, fast):
            compiled = run is fast
            taken = run.rule.arm_joint_rows(rows_arm, *arm, side_t, compiled=compiled)
            seen['arm compiled'] += taken
            taken, malformed = run.rule.table_joint_rows(rows_table, *table, t, side_t, compiled=compiled)
            seen['table compiled'] += taken
            seen['malformed reported'] += malformed == 'names beyond the buffer'
        assert ref.side.last_rejection == fast.side.last_rejection, batch
        a, b = ref.side, fast.side
        for name in ('q', 'dq', 'ddq'):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None), (batch, name)
            if x is not None:
                np.testing.assert_array_equal(x, y, err_msg=f'take {batch}: {name}')
        assert (a.joints_stamp_s, a.first_joints_s, a.rejected) == (b.joints_stamp_s, b.first_joints_s, b.rejected), \
            batch
        assert ref.rule.counters == fast.rule.counters, batch
        qa, qb = ref.rule.q_measured, fast.rule.q_measured
        assert (qa is None) == (qb is None) and (qa is None or np.array_equal(qa, qb)), batch
        for name in ('state', 'last_s', 'started_s', '_healthy_since', 'samples', 'stale_events', 'recoveries'):
            assert getattr(ref.rule.joints, name) == getattr(fast.rule.joints, name), (batch, name)
        assert a.twist_measured.stamp_s == b.twist_measured.stamp_s, batch
        np.testing.assert_array_equal(a.twist_measured.value, b.twist_measured.value, err_msg=f'take {batch}')
        seen['differenced'] += bool(np.any(a.ddq != 0.0))
        taken_rows = [k for k in range(rows_table) if tflags[k] & Q_OK and not tflags[k] & MALFORMED]
        if taken_rows and ref.rule.table.initialized and ref.rule.joints.last_s is not None:
            last = taken_rows[-1]
            stamp_s = tstamps[last, 0] + 1e-9 * tstamps[last, 1]
            if stamp_s > 0.0 and ref.rule.joints.last_s != t:
                seen['timed by stamp'] += 1
                assert joints_by_stamp and ref.rule.joints.last_s == stamp_s, batch
        seen['stale'] += ref.rule.joints.state != 'ok'
    seen['rejected'] = ref.side.rejected
    seen['refused table joints'] = ref.rule.counters['refused_joint_states']
    seen['stale events'] = ref.rule.joints.stale_events
    expected = {'unstamped', 'same stamp', 'clock back', 'huge rates', 'arm compiled', 'table compiled', 'differenced',
                'stale', 'rejected', 'refused table joints', 'stale events', 'malformed reported'} | \
        ({'timed by stamp'} if joints_by_stamp else set())
    assert expected <= {k for k, v in seen.items() if v > 0}, seen
    assert seen['arm compiled'] > 300 and seen['table compiled'] > 300, seen
    assert values['joint_states_timeout_s'] < 0.25        # the gaps do make the table's joints stale


def test_a_hold_before_the_first_step_runs_in_the_loop_and_publishes_no_passivity(setup):
    """A guard that latches at the first late step (any lateness holds), the first step after the start late: the side
    holds before it ever stepped, so the port has no output yet. The loop's state runs those held ticks too, with the
    lab's gravity on (the hold's torques not zero), and gives the Python path's commands and decimated messages to the
    bit: three of them, no passivity message (``ServicerMessages.encode`` sends none without the port's output; the
    node's compiled loop sends the first three, ``servicer_sample_loop._send``)."""
    values, q_table_0, q_arm = setup
    setup = ({**values, 'gravity_m_s2': 9.80665}, q_table_0, q_arm)

    def guard():
        return OverloadGuard(DT, 1e-6, 1e-6, 1.0, 'latch')

    ref, loop = Lockstep(setup, overload=guard()), LoopLockstep(setup, overload=guard())
    python_messages = ServicerMessages(FRAMES)
    t = 1.0
    for run in (ref, loop):
        run.sample(t - DT)                         # the start (in Python: the side starts)
    zeros = np.zeros(len(q_arm))
    for k in range(200):
        t += DT * (3.0 if k == 0 else 1.0 + 0.3 * np.sin(k))     # the first step late, then a jittered stream
        outs = []
        for run in (ref, loop):
            run.side.set_joints(q_arm, zeros, t, t)
            run.rule.table_joints(q_table_0, None, t, t)
            outs.append(run.wrench(np.r_[5.0, 0.0, 0.0, 0.0, 0.0, 0.0], t))
        a, b = outs
        assert (a is None) == (b is None), k
        if a is None:
            continue
        assert a.holding and b.holding, k
        np.testing.assert_array_equal(a.q_command, b.q_command)
        np.testing.assert_array_equal(a.side.tau_q, b.side.tau_q)
        assert np.abs(a.side.tau_q).max() > 1.0, a.side.tau_q              # the arm's weight shows
        if getattr(b, 'messages', None) is not None:
            assert b.messages == python_messages.encode(T0_NS, a.side) and len(b.messages[2]) == 3, k
    loop.leave()
    assert ref.side.passivity_out is None and loop.side.passivity_out is None      # no step ever ran
    assert loop.loop_held > 150, loop.loop_held
    np.testing.assert_array_equal(ref.side.adm.state.pose_arrays()[0], loop.side.adm.state.pose_arrays()[0])
    assert ref.side.adm.state.t == loop.side.adm.state.t
    assert ref.rule.counters == loop.rule.counters
