"""The hot-path rule without DDS (as a lockstep runner uses it): time, NaN input, reset."""

import collections
import math

import numpy as np
import pytest

from hil_admittance import client_admittance_node as client_node
from hil_bringup.client_hot_path import ClientHotPath, HotPathCommand
from hil_bringup.scenario import client_admittance_parameters, load_scenario
from hil_motion_table import motion_table_node as table_node
from hil_motion_table.kinematics_helpers import home_pose
from hil_common.params import validate


@pytest.fixture(scope='module')
def values():
    given = {**client_admittance_parameters(load_scenario('envisat_capture')), 'rate_hz': 50.0, 'robot': 'ur10e'}
    return validate([*client_node.PARAMS, *[p for p in table_node.PARAMS if p.name not in
                                             {q.name for q in client_node.PARAMS}]], given)


def make(values):
    admittance, pose_sensor_in_client = client_node.build_rule(values)
    table = table_node.build_table(values, clock=None)          # lockstep: the table runs on the given times
    home = home_pose(table.kin)
    rule = ClientHotPath(admittance, pose_sensor_in_client, table, rate_hz=50.0,
                         table_target=lambda g: home * g)
    rule.joint_states(table.kin.q_home, 0.0)
    return rule


def test_simulated_time_follows_the_caller_clock_whatever_the_sample_rate(values):
    rule = make(values)
    t = 0.0
    for _ in range(250):                       # 1 s of samples at 250 Hz (5x rate_hz)
        t += 0.004
        rule.joint_states(rule.q_measured, t)
        out = rule.wrench([100.0, 0, 0, 0, 0, 0], '', t)
        assert out is not None and not out.holding
    # the first sample integrates one 1/rate_hz step, then the 249 measured 4 ms intervals
    assert rule.admittance.state.t == pytest.approx(0.02 + 249 * 0.004, abs=1e-9)


def test_a_non_finite_wrench_latches_and_never_reaches_the_state(values):
    rule = make(values)
    t = 0.0
    for k in range(10):
        t += 0.02
        rule.joint_states(rule.q_measured, t)
        rule.wrench([10.0, 0, 0, 0, 0, 0], '', t)
    held = rule.table.q_command
    for bad in ([math.nan, 0, 0, 0, 0, 0], [0, 0, 0, math.inf, 0, 0]):
        t += 0.02
        rule.joint_states(rule.q_measured, t)
        out = rule.wrench(bad, 'ft_sensor', t)
        assert out.holding and rule.latched == 'nonfinite_wrench'
        np.testing.assert_array_equal(out.q_command, held)
    state = rule.admittance.state
    assert np.all(np.isfinite(state.pose_client_in_nominal.homogeneous)) and np.all(np.isfinite(state.twist_client_rel_body))
    assert not rule.reset(t)[0]                # the newest sample is still non-finite
    t += 0.02
    rule.wrench([0.0] * 6, '', t)
    assert rule.reset(t)[0] and not rule.latched
    t += 0.02
    rule.joint_states(rule.q_measured, t)
    assert not rule.wrench([10.0, 0, 0, 0, 0, 0], '', t).holding
    assert rule.wrench([10.0, 0, 0, 0, 0, 0], 'servicer_ft_sensor', t + 0.02) is None
    assert rule.counters['refused_frame'] == 1


def test_with_a_mission_epoch_the_first_sample_starts_the_nominal_at_the_epoch(values):
    """Started 1.3 s after the mission's t = 0, the hot path's nominal stands where the unforced nominal
    (Eq. 4) does at its first sample, on the epoch's step grid, and the client is still on it (no wrench):
    the servicer side, started at another instant, integrates the same nominal."""
    import pinocchio as pin

    from hil_dynamics.client import unforced_nominal

    admittance, pose_sensor_in_client = client_node.build_rule(values)
    table = table_node.build_table(values, clock=None)
    home = home_pose(table.kin)
    twist_0 = admittance.state.twist_nominal_body.copy()
    rule = ClientHotPath(admittance, pose_sensor_in_client, table, rate_hz=50.0, table_target=lambda g: home * g,
                         epoch_s=0.0)
    rule.joint_states(table.kin.q_home, 1.3)
    rule.wrench([0.0] * 6, '', 1.3)
    for k in range(1, 6):
        rule.joint_states(rule.q_measured, 1.3 + 0.02 * k)
        rule.wrench([0.0] * 6, '', 1.3 + 0.02 * k)
    state = rule.admittance.state
    assert state.t == pytest.approx(1.4, abs=1e-9)
    g_n, v_n = unforced_nominal(admittance.body, pin.SE3.Identity(), twist_0, 1.4, 0.02)
    assert np.linalg.norm(pin.log6(g_n.actInv(state.pose_nominal_in_orbit)).vector) < 1e-12
    np.testing.assert_allclose(state.twist_nominal_body, v_n, atol=1e-14)
    assert np.linalg.norm(pin.log6(state.pose_client_in_nominal).vector) < 1e-12


def _spring_behind_a_late_table(values, control: bool, seconds: float = 4.0, delay: int = 10):
    """The hot path on a 1 Hz spring (the client's mass on ``k = m (2 pi)^2`` along the nominal x,
    against the mock-up's measured position) with a table that realises each command ``delay``
    samples (40 ms) late, as a slow robot does: a delayed loop that injects energy. The port's
    observer reads the realised twist from the measured joints (``body_twist_from_joints``)."""
    from hil_dynamics.passivity import ClientPort
    from hil_dynamics.se3 import transform_wrench
    from hil_motion_table.kinematics_helpers import body_twist_from_joints

    admittance, pose_sensor_in_client = client_node.build_rule(values)
    table = table_node.build_table(values, clock=None)
    home = home_pose(table.kin)
    body = pin_identity()
    rule = ClientHotPath(admittance, pose_sensor_in_client, table, rate_hz=250.0, table_target=lambda g: home * g,
                         port=ClientPort(admittance, 100.0, enabled=control),
                         twist_from_joints=lambda q, dq: body_twist_from_joints(table.kin, q, dq, body))
    k = admittance.body.mass_kg * (2.0 * np.pi) ** 2
    dt = 0.004
    commands = [np.asarray(table.kin.q_home, dtype=float)] * (delay + 1)
    q_prev, xs, energies = commands[0], [], []
    for n in range(int(seconds / dt)):
        t = (n + 1) * dt
        q = commands[-1 - delay]                                     # what the robot realises now
        rule.joint_states(q, t, (q - q_prev) / dt)
        q_prev = q
        x = (home.actInv(table.kin.forward(q))).translation[0]
        force = -k * x + (2000.0 if t < 0.1 else 0.0)                # a short push starts the swing
        wrench_com = np.array([force, 0.0, 0.0, 0.0, 0.0, 0.0])
        out = rule.wrench(transform_wrench(pose_sensor_in_client.inverse(), wrench_com), '', t)
        commands.append(out.q_command)
        xs.append(x)
        energies.append(rule.port.out.energy_observed_j)
    return np.array(xs), np.array(energies), rule


def pin_identity():
    import pinocchio as pin
    return pin.SE3.Identity()


def test_the_hot_paths_port_observer_sees_a_late_table_inject_energy_and_its_controller_removes_it(values):
    """Seed 004 §VI in the fused hot path (it ignored passivity_control before): a 1 Hz spring behind
    a table 40 ms late. Without the controller the swing grows (the delay injects energy, an
    independent sign of it) and the observer accounts a growing positive energy; with it the
    observed energy stays at zero within the observer's one-step pending share and the swing does
    not grow."""
    values = {**values, 'rate_hz': 250.0}
    xs, energy, rule = _spring_behind_a_late_table(values, control=False)
    first, last = np.abs(xs[250:500]).max(), np.abs(xs[-250:]).max()           # second 1 against second 4
    print(f'without the controller: swing {first * 1e3:.2f} -> {last * 1e3:.2f} mm, observed {energy[-1]:.3g} J')
    assert last > 1.5 * first
    # the observer accounts for what the delay injected: the swing's energy at its last peak,
    # 1/2 k x^2 (the push did about 3 J of it)
    k = rule.admittance.body.mass_kg * (2.0 * np.pi) ** 2
    assert energy[-1] == pytest.approx(0.5 * k * last ** 2, rel=0.25)
    xs_c, energy_c, rule_c = _spring_behind_a_late_table(values, control=True)
    first_c, last_c = np.abs(xs_c[250:500]).max(), np.abs(xs_c[-250:]).max()
    print(f'with the controller: swing {first_c * 1e3:.2f} -> {last_c * 1e3:.2f} mm, observed at most '
          f'{energy_c.max():.3g} J, dissipated {rule_c.port.out.energy_dissipated_j:.3g} J')
    assert last_c <= first_c and energy_c.max() <= 0.01 * energy[-1]
    assert rule_c.port.out.energy_dissipated_j > 0.0


def run_gappy(rule, feed_joints, sample):
    """3 s at 50 Hz of zero wrenches, joint states where ``feed_joints(t)``, wrench samples where ``sample(t)``."""
    for k in range(1, 151):
        t = 0.02 * k
        if feed_joints(t):
            rule.joint_states(rule.q_measured, t)
        if sample(t):
            rule.wrench([0.0] * 6, '', t)
    return rule


def test_held_and_dropped_time_still_moves_the_nominal_on(values):
    """One mission clock (Eq. 23 needs one g_n for the client and the servicer): a hot path that held
    for a second (joint states stale) and one that dropped time (a 1 s gap between samples, beyond
    its catch-up) keep the nominal of one that stepped throughout, to 1e-12."""
    import pinocchio as pin

    def run(feed_joints, sample):
        return run_gappy(make(values), feed_joints, sample)

    always = lambda t: True                                   # noqa: E731
    ref = run(always, always)
    held = run(lambda t: not 1.0 < t < 2.0, always)
    dropped = run(always, lambda t: not 1.0 < t < 2.0)
    assert held.counters['held'] > 10 and dropped.overruns > 0
    for other in (held, dropped):
        a, b = ref.admittance.state, other.admittance.state
        assert b.t == pytest.approx(a.t, abs=1e-9)
        err = pin.log6(a.pose_nominal_in_orbit.actInv(b.pose_nominal_in_orbit)).vector
        assert np.linalg.norm(err) < 1e-12


def test_a_stalled_hot_path_holds_and_resumes_by_its_overload_policy(values):
    """A 0.5 s gap between samples (the node or its sensor stalled; beyond the 0.2 s hold threshold
    and the 20-step catch-up at 50 Hz) holds: the table is told to stay, the status says why; after
    ``recover_after_s`` of samples on time it commands again."""
    from hil_common.overload import OverloadGuard

    rule = make(values)
    rule.overload = OverloadGuard(0.02, warn_late_s=0.03, hold_late_s=0.2, recover_after_s=0.5)
    t = 0.0
    for _ in range(20):
        t += 0.02
        rule.joint_states(rule.q_measured, t)
        assert not rule.wrench([50.0, 0, 0, 0, 0, 0], '', t).holding
    for _ in range(50):                            # the joint states keep coming: only the samples stall
        t += 0.01
        rule.joint_states(rule.q_measured, t)
    held = rule.wrench([50.0, 0, 0, 0, 0, 0], '', t)
    assert held.holding and 'overloaded' in held.reason and rule.overruns > 0
    level, message, values_ = rule.status(t)
    assert level == 2 and message.startswith('overloaded, holding') and values_['holding'] == 'true'
    outs = []
    for _ in range(30):                            # 0.6 s on time: resumes after 0.5 s
        t += 0.02
        rule.joint_states(rule.q_measured, t)
        outs.append(rule.wrench([50.0, 0, 0, 0, 0, 0], '', t).holding)
    assert outs[0] and not outs[-1] and rule.status(t)[0] == 0


def test_a_rebase_plan_is_applied_alike_through_held_and_dropped_time(values):
    """The servicer node's re-basing plan (t_start 1.21 s, a 1 s ramp) on the hot path: one that stepped
    throughout, one that held 0.5 s of the ramp and one that dropped 0.5 s of it keep one nominal, to
    1e-9, and it is the nominal of a bare client rule stepped by hand with the same plan (the reference);
    ``V_n`` moves by centimetres per second."""
    import pinocchio as pin

    from hil_dynamics.rebase import PlannedRebase, plan_rebase

    inertia = pin.Inertia(1.2e4, np.array([-1.5, 0.2, 0.1]), np.diag([2.0e4, 1.5e5, 1.4e5]))
    plan = plan_rebase(1.21, 1.0, [(pin.SE3.Identity(), inertia, inertia.matrix() @ [0.05, 0.0, -0.03, 0.0, 0.0, 0.02])])

    def run(feed_joints, sample):
        rule = make(values)
        assert rule.set_rebase_plan(plan, 0.0) == ''
        return run_gappy(rule, feed_joints, sample)

    always = lambda t: True                                   # noqa: E731
    ref = run(always, always)
    held = run(lambda t: not 1.3 < t < 1.8, always)
    dropped = run(always, lambda t: not 1.3 < t < 1.8)
    assert held.counters['held'] > 10 and dropped.overruns > 0
    by_hand = make(values).admittance
    v_n0 = by_hand.state.twist_nominal_body.copy()
    side = PlannedRebase(plan, 0.02)
    for k in range(150):
        side.update(0.02 * k, by_hand)
        by_hand.step(np.zeros(6), 0.02)
    assert np.abs(by_hand.state.twist_nominal_body - v_n0).max() > 0.01
    for other in (ref, held, dropped):
        assert other.rebase.side.done
        a, b = by_hand.state, other.admittance.state
        err = pin.log6(a.pose_nominal_in_orbit.actInv(b.pose_nominal_in_orbit)).vector
        assert np.linalg.norm(err) < 1e-9 and np.abs(a.twist_nominal_body - b.twist_nominal_body).max() < 1e-9


def test_a_command_frame_target_gives_the_commands_of_its_pin_target(values):
    """The node hands the rule its CommandFrame (g_c stays a 12-array: CommandFrame.target_array,
    MotionTable.step_array); the same rule with the frame's pin.SE3 target (MotionTable.step) commands the
    same joints, sample for sample, with a measured twist for the passivity port."""
    from hil_dynamics.passivity import ClientPort

    from hil_common.params import ParamValues
    given = ParamValues(dict(values, command_frame='home', pose_body_in_flange_xyz_rpy=[0.05, 0.0, 0.2, 0.0, 0.1, 0.0]))
    rules = []
    for array_target in (True, False):
        admittance, pose_sensor_in_client = client_node.build_rule(given)
        table = table_node.build_table(given, clock=None)
        frame = table_node.CommandFrame(given, table.kin)
        rules.append(ClientHotPath(admittance, pose_sensor_in_client, table, rate_hz=50.0,
                                   table_target=frame if array_target else frame.target,
                                   port=ClientPort(admittance, 50.0), twist_from_joints=frame.twist_from_joints))
    q = {id(r): np.asarray(r.table.kin.q_home, dtype=float) for r in rules}
    rng = np.random.default_rng(3)
    t, moved = 0.0, 0.0
    for _ in range(100):
        t += 0.02
        wrench = [300.0, -100.0, 50.0, 5.0, 0.0, -10.0] + rng.normal(0.0, 5.0, 6)
        outs = []
        for r in rules:
            r.joint_states(q[id(r)], t, 0.01 * np.ones(6))
            outs.append(r.wrench(wrench, 'ft_sensor', t))
            q[id(r)] = outs[-1].q_command
        assert not outs[0].holding and not outs[1].holding
        np.testing.assert_allclose(outs[0].q_command, outs[1].q_command, rtol=0.0, atol=1e-12)
        moved = max(moved, float(np.abs(outs[0].q_command - rules[0].table.kin.q_home).max()))
    assert moved > 1e-3                          # the table did follow the client


def test_a_jittered_stream_is_one_step_a_sample_and_keeps_the_time_exact(values):
    """Samples within half a period of their time are one Eq. (11) step each (steps of at most 1.5 / rate_hz), a
    later one is split into equal steps, and the simulated time is the measured time, whatever the split."""
    rule = make(values)                          # rate_hz 50: dt = 20 ms
    dt, t = 0.02, 0.0
    rule.wrench([100.0, 0, 0, 0, 0, 0], '', t)   # the first sample: one step of dt
    assert rule.counters['steps'] == 1
    expected_steps = 1
    for interval, steps in ((0.02, 1), (0.0129, 1), (0.0298, 1), (0.0302, 2), (0.049, 2), (0.051, 3), (0.009, 1)):
        t += interval
        rule.joint_states(rule.q_measured, t)
        out = rule.wrench([100.0, 0, 0, 0, 0, 0], '', t)
        assert out is not None and not out.holding and out.steps == steps, (interval, out.steps)
        expected_steps += steps
    assert rule.counters['steps'] == expected_steps
    assert rule.admittance.state.t == pytest.approx(dt + t, abs=1e-12)


def test_malformed_joint_states_are_refused_and_counted(values):
    """A non-finite or non-vector q is refused (counted, nothing taken); a non-finite or mis-sized dq is dropped
    (no measured twist) while q is taken; finite values whose sum overflows are still finite."""
    admittance, pose_sensor_in_client = client_node.build_rule(values)
    table = table_node.build_table(values, clock=None)
    rule = ClientHotPath(admittance, pose_sensor_in_client, table, rate_hz=50.0)
    q0 = np.asarray(table.kin.q_home, dtype=float)
    for bad in (np.where(np.arange(6) == 3, np.nan, q0), np.full(6, np.inf), np.float64(0.3), None):
        assert not rule.joint_states(bad, 0.0)
    assert rule.counters['refused_joint_states'] == 4 and rule.q_measured is None and not table.initialized
    assert rule.joint_states(q0, 0.01, [0.0, 0.0, np.nan, 0.0, 0.0, 0.0])
    assert rule.dq_measured is None and np.array_equal(rule.q_measured, q0)
    assert rule.joint_states(q0, 0.02, np.zeros(5)) and rule.dq_measured is None
    assert rule.joint_states(q0, 0.03, np.full(6, 1e308)) and rule.dq_measured is not None


def test_the_loops_compiled_samples_give_the_python_rules_commands_and_state():
    """Two Envisat client rules as the node builds them, fed the same random stream: one in Python, one through a
    sample loop's state (``client_hot_path_loop.ClientLoopState``: its quiet samples in one compiled call, left for
    everything else). The stream: 1 kHz samples with jitter, gaps of up to 6 periods (several Eq. 11 steps, and holds
    of a tight overload guard), gaps that drop time, two samples at one instant, unframed samples and samples in
    another frame, non-finite wrenches and wrenches over the limit (latched, then reset), joint states with and
    without their rates, joint states that stop (stale) and come back, a workspace the table leaves (latched, then
    reset) and a re-basing plan with its ramp. Every command is the same to the bit, the rules end in the same state,
    and the stream did reach each of those branches."""
    import pinocchio as pin

    from hil_bringup.client_hot_path_loop import ClientLoopState, envisat_client_rule
    from hil_common.overload import OverloadGuard
    from hil_dynamics.kernels import pose_xyzquat
    from hil_dynamics.rebase import RebasePlan

    rules = []
    for _ in range(2):
        rule, q0 = envisat_client_rule()
        # holds on the longest gaps (a sample 5.5 ms late), recovers after 20 ms on time
        rule.overload = OverloadGuard(rule.dt, 2e-3, 5.5e-3, 0.02, 'auto', window_s=0.05)
        rules.append(rule)
    ref, fast = rules
    loop = ClientLoopState(fast)
    dt = ref.dt
    frame_id = ref.wrench_frame_id
    plan = RebasePlan(0.0, 0.2, 9000.0, pin.SE3(np.eye(3), np.array([0.1, 0.0, 0.0])), np.diag([1e4, 1.2e4, 1.5e4]),
                      np.array([0.0, 0.0, 0.01, 0.0, 0.0, 0.005]))
    rng = np.random.default_rng(11)
    t, q = 1.0, q0.copy()
    stale_until = -1.0
    seen = collections.Counter()
    loop_steps = 0
    for k in range(2400):
        gap = 1 + (rng.integers(2, 7) if rng.random() < 0.03 else 0) + (30 if rng.random() < 0.003 else 0)
        if rng.random() > 0.01:                    # else a second sample at the same instant
            t += dt * (gap + rng.uniform(-0.45, 0.45))
        if k == 300:
            stale_until = t + 1.5 * ref.joints.timeout_s
        wrench = rng.normal(0.0, 40.0, 6) * (1.0, 1.0, 1.0, 0.1, 0.1, 0.1)
        if rng.random() < 0.004:
            wrench[2] = np.nan
        if rng.random() < 0.003:
            wrench[:3] *= 1e4                      # over max_force_n
        if 1000 <= k < 1150:
            wrench[0] += 3000.0                    # a push out of the workspace below
        frame = rng.choice([frame_id, '', 'other'], p=[0.7, 0.29, 0.01])
        dq = rng.normal(0.0, 0.01, len(q)) if rng.random() < 0.8 else None
        outs, decimated = [], None
        for rule in rules:
            table = rule.table
            leave = (k in (1000, 1150) or (k == 1800) or (k % 50 == 0 and (rule.latched or table.latched_faults)))
            if leave and rule is fast:
                loop.leave()                       # what only Python changes: the state back in the rule first
            if k == 1000:                          # a workspace of +-0.05 mm around the target: soon left (latched)
                box = table.workspace_min.copy(), table.workspace_max.copy()
                table.workspace_min, table.workspace_max = table._target[9:] - 5e-5, table._target[9:] + 5e-5
            if k == 1150:
                table.workspace_min, table.workspace_max = box
            if k == 1800:
                plan.t_start = t + 0.1
                assert rule.set_rebase_plan(plan, t) == ''
            if k % 50 == 0 and (rule.latched or table.latched_faults):
                rule.reset(t)
            if t > stale_until:
                rule.joint_states(q, t, dq)
            if rule is ref:
                outs.append(rule.wrench(wrench, frame, t))
            else:
                stepped, out = loop.wrench(wrench, frame, t)
                loop_steps += stepped
                outs.append(HotPathCommand(loop.q_cmd.copy(), False, None, 0) if stepped else out)
                if stepped and k % 7 == 0:
                    decimated = [v.copy() for v in loop.decimated_values()]
        if decimated is not None:
            # the decimated messages' values the loop writes (the node's callback and its compiled loop) are those the
            # rule's objects give the Python path: the state by Eq. 23, the port's output, g_c
            g_t, v_t = ref.admittance.state.absolute_arrays()
            state_pose, state_twist, passivity, pose = decimated
            np.testing.assert_array_equal(state_pose, pose_xyzquat(g_t), err_msg=f'sample {k}')
            np.testing.assert_array_equal(state_twist, v_t, err_msg=f'sample {k}')
            assert passivity.tolist() == ref.port.out.as_list(), k
            np.testing.assert_array_equal(pose, pose_xyzquat(ref.admittance.state.pose_arrays()[1]), err_msg=f'{k}')
            seen['decimated'] += 1
            decimated = None
        a, b = outs
        assert (a is None) == (b is None), k
        if a is None:
            seen['none'] += 1
            continue
        np.testing.assert_array_equal(a.q_command, b.q_command, err_msg=f'sample {k}')
        assert a.holding == b.holding, k
        seen['holding'] += a.holding
        seen['stale'] += 'joint_states' in ref.last_reason
        seen['overload'] += 'overload' in ref.last_reason or 'late' in ref.last_reason
        seen['latched'] += bool(ref.latched)
        seen['table_fault'] += bool(ref.table.latched_faults)
        if not a.holding:
            q = a.q_command.copy()                 # the robot follows its command
    loop.leave()
    assert ref.counters == fast.counters
    assert ref.overruns == fast.overruns > 0
    assert ref.t_last == fast.t_last
    s_r, s_f = ref.admittance.state, fast.admittance.state
    assert s_r.t == s_f.t
    for x, y in zip(s_r.pose_arrays(), s_f.pose_arrays()):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(s_r.twist_nominal_body, s_f.twist_nominal_body)
    np.testing.assert_array_equal(s_r.twist_client_rel_body, s_f.twist_client_rel_body)
    assert ref.port.integration_j == fast.port.integration_j
    assert ref.port.out.as_list() == fast.port.out.as_list()
    np.testing.assert_array_equal(ref.port.controller._acc, fast.port.controller._acc)
    np.testing.assert_array_equal(ref.last_wrench, fast.last_wrench)
    np.testing.assert_array_equal(ref.newest_wrench, fast.newest_wrench)
    for name in ('_q_cmd', '_qd_cmd', '_pose_safe', '_twist_est', '_pose_prev_cmd', '_q_ik_prev', '_q_ik_step'):
        np.testing.assert_array_equal(getattr(ref.table, name), getattr(fast.table, name), err_msg=name)
    assert ref.table._t_prev == fast.table._t_prev
    assert ref.table.stats.steps == fast.table.stats.steps
    assert ref.table.stats.clamp_counts == fast.table.stats.clamp_counts
    assert ref.table.stats.fault_counts == fast.table.stats.fault_counts
    for name in ('ticks', 'late_ticks', 'dropped_steps', 'holds', 'holding', 'level', 'reason', 'max_late_s'):
        assert getattr(ref.overload, name) == getattr(fast.overload, name), name
    for name in ('state', 'last_s', 'samples', 'stale_events', 'recoveries'):
        assert getattr(ref.joints, name) == getattr(fast.joints, name), name
    # every branch was reached, and most samples ran in the compiled call
    print('loop samples', loop_steps, 'events', loop.events, 'entries', loop.entries, dict(seen), ref.counters)
    assert ref.counters['wrench_faults'] >= 2 and ref.counters['refused_frame'] > 0 and ref.counters['not_due'] > 0
    assert ref.counters['unframed'] > 0 and ref.overload.holds > 0 and ref.joints.stale_events > 0
    assert ref.table.stats.fault_counts['workspace_exit'] > 0 and ref.rebase.side is not None and ref.rebase.side.done
    stepped = ref.counters['commands'] - ref.counters['held']
    assert loop_steps > 0.8 * stepped and loop.events > 10 and loop.entries > 10, (loop_steps, stepped)
    assert seen['decimated'] > 100, seen
