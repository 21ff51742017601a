"""Envisat capture end to end without robots (seed 004 §III-C, §IV-B, §V).

The HIL loop (:class:`HilMission`: client admittance Eq. 11, servicer admittance Eq. 18,
arm torques Eq. 22 on a simulated ground arm in gravity, Eq. 23 mapping, the example OBSW)
is checked against the independent absolute reference (:class:`AbsoluteMission`: free-
floating ABA servicer and Eq. 2 client in the orbit frame), and against conservation laws.
"""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_bringup.runners.mission import AbsoluteMission, HilMission, compare_relative_pose
from hil_bringup.scenario import load_scenario

SEED_GRASP_TIME_S = 32.6          # seed 004 §V, Fig. 12
SEED_ABSOLUTE_LIMIT_S = 14.0      # seed 004 §II, OOS-Sim


@pytest.fixture(scope='module')
def scenario():
    return load_scenario('envisat_capture')


@pytest.fixture(scope='module')
def capture(scenario):
    duration = scenario.mission['duration_s']
    hil = HilMission(scenario)
    hil_record = hil.run(duration)
    ref = AbsoluteMission(scenario)
    ref_record = ref.run(duration)
    return hil, hil_record, ref, ref_record


def test_unforced_hil_matches_the_absolute_reference(scenario):
    """F_b = tau = 0 for 60 s at -2.5 deg/s: relative pose within 0.1 mm and 0.0002 rad (issue; seed: 1 mm, 0.002 rad)."""
    duration = scenario.mission['unforced_duration_s']
    hil = HilMission(scenario, forced=False).run(duration, record_every_s=0.5)
    ref = AbsoluteMission(scenario, forced=False).run(duration, record_every_s=0.5)
    cmp = compare_relative_pose(hil, ref)
    print(f"\nunforced {duration:.0f} s: max relative-pose difference HIL vs absolute "
          f"{cmp['max_position_error_m'] * 1e3:.2e} mm, {cmp['max_angle_error_rad']:.2e} rad")
    assert cmp['duration_s'] == pytest.approx(duration)
    assert cmp['max_position_error_m'] < 1e-4
    assert cmp['max_angle_error_rad'] < 2e-4
    # Not a trivial comparison: unforced, the servicer moves by metres relative to the client.
    travel = np.linalg.norm(hil.pos_base_in_client - hil.pos_base_in_client[0], axis=1).max()
    assert travel > 1.0
    # The unforced client stays on its nominal: the client table does not move (Eq. 11 with F_c = 0).
    assert np.abs(hil.pos_grasp_in_nominal_cmd - hil.pos_grasp_in_nominal_cmd[0]).max() < 1e-9


def test_capture_phases_happen_in_order(capture):
    hil, rec, _, _ = capture
    times = hil.controller.phase_times
    print(f"\nphase times [s]: {times} (seed 004: approach from 9.1 s, grasp at {SEED_GRASP_TIME_S} s)")
    assert list(times) == ['sync', 'approach', 'grasp', 'post_grasp']
    assert times['approach'] == pytest.approx(hil.scenario.obsw.sync_duration_s, abs=hil.dt)
    assert times['approach'] < times['grasp'] < times['post_grasp']
    assert hil.contact.latched
    # Same order of magnitude as the seed's experiment (grasp at 32.6 s).
    assert abs(times['grasp'] - SEED_GRASP_TIME_S) < 10.0
    # Thrusters are off after the grasp, and the recorded phases agree with the controller's.
    post = np.array([p == 'post_grasp' for p in rec.phase])
    assert post.any() and np.all(rec.wrench_base_com[post] == 0.0)
    assert rec.t[np.argmax(post)] >= times['post_grasp']


def test_capture_relative_velocity_decays(capture):
    """Seed 004 §IV-B: after the grasp the servicer is stabilised onto the client."""
    hil, rec, _, _ = capture
    t_grasp = hil.controller.phase_times['post_grasp']
    speed = np.linalg.norm(rec.twist_base_rel_client[:, :3], axis=1)
    rate = np.degrees(np.linalg.norm(rec.twist_base_rel_client[:, 3:], axis=1))
    after = rec.t > t_grasp
    # The grasp itself disturbs the stack (rigidisation), and the disturbance then decays.
    assert speed[after].max() > 1e-3
    below = (speed < 1e-3) & (rate < 0.05) & after
    settled = np.flatnonzero(below & np.flip(np.cumprod(np.flip(below)).astype(bool)))
    assert settled.size, 'relative velocity never settled below 1 mm/s and 0.05 deg/s'
    print(f"\nrelative velocity below 1 mm/s and 0.05 deg/s from t = {rec.t[settled[0]]:.1f} s "
          f"(grasp closed at {t_grasp:.1f} s); final {speed[-1] * 1e3:.4f} mm/s, {rate[-1]:.5f} deg/s")
    assert rec.t[-1] - rec.t[settled[0]] > 5.0


def test_momentum_is_conserved_after_the_grasp(capture):
    """Thrusters off after the grasp: servicer + client momentum (Eq. 23 states) drifts < 1%."""
    hil, rec, _, _ = capture
    after = rec.t >= hil.controller.phase_times['post_grasp']
    p = rec.momentum_in_orbit[after]
    drift_linear = np.linalg.norm(p[:, :3] - p[0, :3], axis=1).max() / np.linalg.norm(p[0, :3])
    drift_angular = np.linalg.norm(p[:, 3:] - p[0, 3:], axis=1).max() / np.linalg.norm(p[0, 3:])
    print(f'\nmomentum drift after the grasp: linear {drift_linear:.2e}, angular {drift_angular:.2e} (relative)')
    assert drift_linear < 0.01 and drift_angular < 0.01
    # Before the grasp the thrusters act, and the momentum does change (the check can fail).
    before = rec.momentum_in_orbit[rec.t < hil.controller.phase_times['grasp']]
    assert np.linalg.norm(before[-1, :3] - before[0, :3]) > 0.01 * np.linalg.norm(before[0, :3])


def test_capture_hil_matches_the_absolute_reference(capture):
    hil, rec, ref, ref_rec = capture
    assert ref.controller.phase_times.keys() == hil.controller.phase_times.keys()
    for phase, t in hil.controller.phase_times.items():
        assert ref.controller.phase_times[phase] == pytest.approx(t, abs=hil.dt)
    cmp = compare_relative_pose(rec, ref_rec)
    print(f"\ncapture: HIL vs absolute {cmp['max_position_error_m']:.2e} m, {cmp['max_angle_error_rad']:.2e} rad")
    assert cmp['max_position_error_m'] < 1e-4 and cmp['max_angle_error_rad'] < 2e-4


def test_robots_stay_in_their_workspace_during_the_capture(capture, scenario):
    hil, rec, _, _ = capture
    client_box, servicer_box = scenario.workspace_box_m, scenario.servicer_workspace_box_m
    assert rec.exit_time('pos_grasp_in_nominal_cmd', client_box) is None
    assert rec.exit_time('pos_base_in_nominal_cmd', servicer_box) is None
    # The absolute formulation would have left within seconds (seed 004: 14 s on OOS-Sim).
    t_client = rec.exit_time('pos_grasp_in_orbit', client_box)
    t_servicer = rec.exit_time('pos_base_in_orbit', servicer_box)
    radius = np.linalg.norm(scenario.client.pose_grasp_in_client.translation)
    spin = np.linalg.norm(scenario.client.twist_client_body_0[3:])
    print(f'\nabsolute formulation leaves the box: client after {t_client:.2f} s, servicer after {t_servicer:.2f} s '
          f'(seed 004: {SEED_ABSOLUTE_LIMIT_S} s on OOS-Sim)')
    # Pure spin of the grasp point: r sin(w t) = half side (sampling 0.05 s).
    assert t_client == pytest.approx(math.asin(0.5 * client_box[0] / radius) / spin, abs=0.06)
    assert t_servicer is not None and t_servicer < SEED_ABSOLUTE_LIMIT_S


def test_station_keeping_stays_in_the_workspace_for_600_s(scenario):
    """>= 600 s at -2.5 deg/s with no contact: client unforced, servicer synchronised (OBSW sync phase)."""
    scenario.obsw.sync_duration_s, saved = 1e9, scenario.obsw.sync_duration_s
    try:
        run = HilMission(scenario, dt=0.02).run(600.0, record_every_s=1.0)
    finally:
        scenario.obsw.sync_duration_s = saved
    assert set(run.phase) == {'sync'}
    assert run.exit_time('pos_grasp_in_nominal_cmd', scenario.workspace_box_m) is None
    assert run.exit_time('pos_base_in_nominal_cmd', scenario.servicer_workspace_box_m) is None
    # Meanwhile the client turned by more than a full revolution: an absolute scheme could not follow.
    angle = np.linalg.norm(scenario.client.twist_client_body_0[3:]) * run.t[-1]
    assert angle > 2 * math.pi
    final = pin.log6(pin.SE3(pin.rpy.rpyToMatrix(*run.rpy_base_in_client[-1]), run.pos_base_in_client[-1]).actInv(
        scenario.servicer.pose_base_in_client_desired)).vector
    assert np.linalg.norm(final[:3]) < 1e-3


def test_the_whole_capture_runs_the_kernels_the_warm_up_compiled(capture):
    """The capture (open gripper, contact, both ports, the re-basing ramp) passes its kernels arrays of one type:
    a read-only or non-contiguous array would make Numba compile another version of a kernel mid-run (in a node,
    mid real-time loop), beside the one ``./dev`` compiles (``hil_dynamics.kernels.warm_up``)."""
    from hil_dynamics import kernels

    from hil_bringup.runners import mission, mission_kernel
    from hil_dynamics import rebase

    hil, _, ref, _ = capture
    assert hil.rebase_sides is not None and not hil.rebase_sides[0].active       # the ramp ran, and ended
    # the shared zero wrenches (writable, for that reason) were never written by anything the capture ran
    assert not mission._NO_WRENCH.any() and not rebase._ZERO_WRENCH.any()
    kernels.warm_up()
    for kernel in (kernels.lockstep_rkmk4_step, kernels.free_floating_rkmk4_step, kernels.free_floating_inputs_step,
                   kernels.lockstep_inputs_step, kernels.lockstep_shared_inputs_step, kernels.lockstep_port_step,
                   kernels.ee_wrench_as_fext,
                   kernels.client_rkmk4_step,
                   kernels.rigid_rkmk4_step, kernels.passivity_update, kernels.client_port_step,
                   kernels.relative_mapping_into, kernels.nominal_twist_change_into,
                   kernels.latched_grasp_wrench, kernels.latched_grasp_step, kernels.frame_pose_and_jacobian,
                   kernels.rebase_increment):
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)
    # the runners' quiet steps (with and without OBSW ticks and ramp increments) and ./dev's warm-up: one each
    mission.warm_up()
    for kernel in (mission_kernel.hil_steps, mission_kernel.absolute_steps):
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)


@pytest.mark.parametrize('cls', [HilMission, AbsoluteMission])
def test_the_compiled_quiet_steps_are_the_python_steps(scenario, capture, cls):
    """The whole capture (sync, approach, grasp, the latched gripper, and for ``HilMission`` the re-basing ramp)
    with its quiet stretches in the compiled calls (``MissionLoop.steps``: ``mission_kernel``, the OBSW's ticks
    and the ramp's increments inside) and with every step in Python (:meth:`MissionLoop.step`): the same record,
    to the bit, and the same end state."""
    from hil_bringup.runners.mission import RECORD_FIELDS

    class PythonSteps(cls):
        def quiet_steps(self, n):
            return 0, False

    compiled, compiled_record = capture[:2] if cls is HilMission else capture[2:]
    python = PythonSteps(scenario)
    record = python.run(scenario.mission['duration_s'])
    # the compiled calls ran most steps: the Python steps are those around the phase switches and the closure
    assert compiled.record is compiled_record and len(record.t) == len(compiled_record.t)
    assert compiled.compiled_steps > 0.95 * compiled.k and python.compiled_steps == 0
    for name in RECORD_FIELDS:
        got, want = getattr(compiled_record, name), getattr(record, name)
        if name in ('phase', 'gripper'):
            assert got == want, name
        else:
            assert np.array_equal(got, want, equal_nan=True), name
    assert compiled.k == python.k and compiled.command.phase == python.command.phase
    np.testing.assert_array_equal(compiled.tau_arm, python.tau_arm)
    if cls is HilMission:
        assert compiled.rebase_sides[0].last.t == python.rebase_sides[0].last.t
        np.testing.assert_array_equal(compiled.client.state.twist_nominal_body, python.client.state.twist_nominal_body)
        np.testing.assert_array_equal(compiled.servicer.admittance.nominal_matrices()[0],
                                      python.servicer.admittance.nominal_matrices()[0])


@pytest.mark.parametrize('cls', [HilMission, AbsoluteMission])
def test_the_compiled_latched_grasp_is_the_readable_one(scenario, cls):
    """:meth:`MissionLoop.latched_wrenches` (one compiled call) against :meth:`contact_wrench_reference` with the
    flange wrench and :func:`reaction_on_client` (``pin.SE3``/``pin.Force``), on random states around a latched
    grasp: the tool, flange and client wrenches agree to rounding: the poses (metres from the frame's origin) to
    about 1e-14 m and rad, times the grasp's stiffness, and 1e-12 of the wrench."""
    from hil_dynamics.client import ClientState
    from hil_dynamics.contact import LATCHED, reaction_on_client
    from hil_dynamics.servicer import ServicerState

    rng = np.random.default_rng(4)
    m = cls(scenario)
    for _ in range(40):
        dq = rng.normal(0.0, 0.05, 7)
        q = scenario.servicer.q_arm_0 + rng.normal(0.0, 0.3, 7)
        twist_c, twist_s = rng.normal(0.0, 0.02, 6), rng.normal(0.0, 0.02, 6)
        pose_c = pin.SE3(pin.rpy.rpyToMatrix(*rng.normal(0.0, 0.2, 3)), rng.normal(0.0, 0.2, 3))
        if cls is HilMission:
            cs, ss = m.client.state, m.servicer.admittance.state
            m.client.state = ClientState(cs.t, cs.pose_nominal_in_orbit, cs.twist_nominal_body, pose_c, twist_c)
            pose_s = ss.pose_base_in_nominal * pin.exp6(pin.Motion(rng.normal(0.0, 0.01, 6)))
            m.servicer.admittance.state = ServicerState(ss.t, ss.pose_nominal_in_orbit, ss.twist_nominal_body, pose_s,
                                                        twist_s)
            m.servicer.q_arm, m.servicer.dq_arm = q, dq
        else:
            m.client.pose_in_orbit, m.client.twist_body = pose_c, twist_c
            sv = m.servicer
            sv.pose_base_in_orbit = sv.pose_base_in_orbit * pin.exp6(pin.Motion(rng.normal(0.0, 0.01, 6)))
            sv.twist_base_body, sv.q_arm, sv.dq_arm = twist_s, q, dq
        # latched where the tool is now, give or take a few mm and mrad
        g_c, _, g_s, v_s, q_, dq_ = m.lab_states()
        pose_tool, _ = m.tool_pose_twist(g_s, v_s, q_, dq_)
        m.contact.state = LATCHED
        m.contact.pose_tcp_in_grasp_rest = ((g_c * m.pose_grasp_in_client).actInv(pose_tool)
                                            * pin.exp6(pin.Motion(rng.normal(0.0, 0.003, 6))))
        w_tool, w_flange, w_client = m.latched_wrenches()
        ref_tool, pose_tool_in_client = m.contact_wrench_reference()
        ref_flange = m.pose_tool_in_flange.act(pin.Force(ref_tool)).vector
        ref_client = reaction_on_client(pose_tool_in_client, ref_tool)
        rounding = 1e-14 * (m.contact.stiffness.max() + m.contact.damping.max())        # [N, N m]: 2e-9 here
        for got, want in ((w_tool, ref_tool), (w_flange, ref_flange), (w_client, ref_client)):
            assert np.abs(got - want).max() < rounding + 1e-12 * np.abs(want).max()
        # the servicer port's J_b^T F_e kept for the passivity observer, against Pinocchio's LOCAL Jacobian
        _, jac = m.model.frame_pose_and_jacobian(q_)
        want = jac[:, :6].T @ w_flange
        assert m.port_wrench[0] is q_ and m.port_wrench[1] is w_flange
        assert np.abs(m.port_wrench[2] - want).max() < 1e-12 * np.abs(want).max()
        assert np.abs(ref_tool).max() > 1.0          # the grasp did pull: a zero wrench would prove nothing


@pytest.mark.parametrize('cls', [HilMission, AbsoluteMission])
def test_a_non_finite_held_input_is_named_by_the_python_step(scenario, cls):
    """A held OBSW input that is not finite (as a broken controller would give) is refused by the compiled quiet
    call, which changes nothing, and the step in Python names it, as without the call."""
    m = cls(scenario)
    m.steps(m.obsw_every + 1)                 # past a tick: the next steps are quiet ones
    k = m.k
    m.tau_arm = np.full(m.model.n, np.nan)
    with pytest.raises(ValueError, match='tau'):
        m.steps(2)
    assert m.k == k
