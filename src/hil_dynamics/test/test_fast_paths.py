"""The compiled fast paths of the rule steps against their readable references (issue 17).

Each fast path (``hil_dynamics.kernels``) must give the reference's result to 1e-12 on
random states: poses far from identity, large twists and wrenches, step sizes from 0.1 ms
to 0.1 s (the exponential's series and closed-form branches).
"""

import copy

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import kernels
from hil_dynamics.client import ClientAdmittance, ClientState
from hil_dynamics.rigid_body import RigidBody

TOL = 1e-12


def _random_pose(rng):
    return pin.SE3(pin.exp3(rng.normal(0.0, 1.5, 3)), rng.normal(0.0, 3.0, 3))


def _pose_diff(a: pin.SE3, b: pin.SE3) -> float:
    return float(np.abs(a.homogeneous - b.homogeneous).max())


def test_exp6_kernel_matches_pinocchio_on_both_branches():
    rng = np.random.default_rng(3)
    worst = 0.0
    for scale in (1e-9, 1e-5, 3e-3, 9.9e-3, 1.01e-2, 0.3, 2.0, 3.1):
        for _ in range(20):
            g = _random_pose(rng)
            w = rng.normal(size=3)
            u = np.concatenate((rng.normal(0.0, 1.0, 3), scale * w / np.linalg.norm(w)))
            out = np.empty(12)
            kernels._mul_exp(kernels.pose_array(g), u, out)
            worst = max(worst, _pose_diff(kernels.array_pose(out), g * pin.exp6(pin.Motion(u))))
    assert worst < TOL


def test_client_compiled_step_matches_reference_step():
    rng = np.random.default_rng(1)
    body = RigidBody(8000.0, [17000.0, 124000.0, 129000.0])
    worst = 0.0
    for _ in range(40):
        state = ClientState(0.0, _random_pose(rng), rng.normal(0.0, 0.2, 6), _random_pose(rng), rng.normal(0.0, 0.2, 6))
        fast, ref = ClientAdmittance(body, state.twist_nominal_body), ClientAdmittance(body, state.twist_nominal_body)
        fast.state, ref.state = state, copy.deepcopy(state)
        wrench, dt = rng.normal(0.0, 300.0, 6), 10.0 ** rng.uniform(-4.0, -1.0)
        for _ in range(3):
            a, b = fast.step(wrench, dt), ref.step_reference(wrench, dt)
        worst = max(worst, _pose_diff(a.pose_client_in_nominal, b.pose_client_in_nominal),
                    _pose_diff(a.pose_nominal_in_orbit, b.pose_nominal_in_orbit),
                    np.abs(a.twist_client_rel_body - b.twist_client_rel_body).max(),
                    np.abs(a.twist_nominal_body - b.twist_nominal_body).max())
        assert a.t == pytest.approx(b.t, abs=1e-15)
    assert worst < TOL


def test_client_compiled_step_follows_a_state_set_from_outside():
    """Re-basing (or any writer of ``rule.state``) is honoured by the compiled step."""
    rng = np.random.default_rng(2)
    body = RigidBody(1200.0, [800.0, 900.0, 1400.0])
    rule = ClientAdmittance(body, rng.normal(0.0, 0.1, 6))
    for _ in range(5):
        rule.step(np.ones(6), 1e-3)
    new = ClientState(0.005, _random_pose(rng), rng.normal(0.0, 0.1, 6), _random_pose(rng), rng.normal(0.0, 0.1, 6))
    rule.state = new
    ref = ClientAdmittance(body, new.twist_nominal_body)
    ref.state = copy.deepcopy(new)
    a, b = rule.step(np.ones(6), 1e-3), ref.step_reference(np.ones(6), 1e-3)
    assert _pose_diff(a.pose_client_in_nominal, b.pose_client_in_nominal) < TOL
    assert np.abs(a.twist_client_rel_body - b.twist_client_rel_body).max() < TOL


def test_client_compiled_step_refuses_a_non_finite_wrench_and_keeps_the_state():
    rule = ClientAdmittance(RigidBody(10.0, [1.0, 1.0, 1.0]), np.zeros(6))
    before = rule.state
    with pytest.raises(ValueError, match='wrench must be finite'):
        rule.step(np.array([0.0, np.nan, 0.0, 0.0, 0.0, 0.0]), 1e-3)
    assert rule.state is before


def test_fused_rkmk4_matches_generic_rkmk4():
    """:class:`FusedRKMK4` (compiled stage transitions) against :func:`rkmk4_step` on a coupled system."""
    from hil_dynamics.lie_integrators import FusedRKMK4, rkmk4_step

    rng = np.random.default_rng(4)
    mix = rng.normal(0.0, 0.3, (12, 12))

    def twists_rates(poses_trans, x):
        rates = np.tanh(mix @ x) + 0.1 * np.concatenate((poses_trans[0], poses_trans[1], poses_trans[0], poses_trans[1]))
        return x.reshape(2, 6), rates

    def ref_derivative(t, poses, x):
        return twists_rates([g.translation for g in poses], x)

    def fused_derivative(t, poses, x, twists_out, rates_out):
        twists, rates = twists_rates([poses[0, 9:], poses[1, 9:]], x)
        twists_out[:] = twists
        rates_out[:] = rates

    fused = FusedRKMK4(2, 12)
    for _ in range(20):
        poses = [_random_pose(rng), _random_pose(rng)]
        x = rng.normal(0.0, 0.5, 12)
        h = 10.0 ** rng.uniform(-4.0, -1.0)
        ref_poses, ref_x = rkmk4_step(0.0, h, poses, x, ref_derivative)
        arr = np.stack([kernels.pose_array(g) for g in poses])
        out_poses, out_x = fused.step(0.0, h, arr, x, fused_derivative)
        assert np.abs(out_x - ref_x).max() < TOL
        for a, b in zip(out_poses, ref_poses):
            assert _pose_diff(kernels.array_pose(a), b) < TOL


def _lbr_lockstep(share_model: bool):
    """The LBR iiwa 14 servicer loop of seed 004 Fig. 6 with a tilted lab mounting."""
    from hil_dynamics.models import servicer_lbr_urdf
    from hil_dynamics.servicer_lockstep import build_servicer_loop

    loop = build_servicer_loop(servicer_lbr_urdf(), 'lbr_flange', RigidBody(8000.0, [17000.0, 124000.0, 129000.0]),
                               [0.01, -0.02, 0.005, 0.002, -0.04, 0.01], pin.SE3.Identity(), np.zeros(6),
                               [0.3, -0.5, 0.2, 1.2, -0.4, 0.6, 0.1], np.zeros(7),
                               pose_nominal_in_lab=pin.SE3(pin.rpy.rpyToMatrix(0.2, -0.1, 0.4), np.array([0.5, 1.0, 1.5])))
    if share_model:
        loop.feedforward.model = loop.admittance.model
    return loop


def _random_lockstep_case(rng, loop):
    """A random servicer state, arm state and inputs ``(state, q, dq, F_b, tau, F_e)`` for ``loop``."""
    from hil_dynamics.servicer import ServicerState

    n = loop.n
    state = ServicerState(0.0, _random_pose(rng), rng.normal(0.0, 0.05, 6),
                          pin.SE3(pin.exp3(rng.normal(0.0, 0.3, 3)), rng.normal(0.0, 1.0, 3)), rng.normal(0.0, 0.05, 6))
    q0, dq0 = loop.q_arm + rng.normal(0.0, 0.3, n), rng.normal(0.0, 0.2, n)
    return state, q0, dq0, rng.normal(0.0, 50.0, 6), rng.normal(0.0, 20.0, n), rng.normal(0.0, 30.0, 6)


@pytest.mark.parametrize('share_model', [False, True], ids=['own_ff_model', 'shared_model'])
def test_servicer_lockstep_fused_step_matches_reference_step(share_model):
    """Eqs. (18), (22), (20) closed (seed 004 Fig. 6): fused step against the rules' own methods."""
    rng = np.random.default_rng(5)
    loop = _lbr_lockstep(share_model)
    worst = 0.0
    for _ in range(6):
        state, q0, dq0, f_b, tau, f_e = _random_lockstep_case(rng, loop)
        dt = 10.0 ** rng.uniform(-4.0, -1.5)
        out = []
        steps = (lambda: loop.step(dt, f_b, tau, f_e),                      # compiled (held inputs)
                 lambda: loop.step(dt, f_b, lambda t, q, dq: tau, f_e),      # fused Pinocchio path (a callable)
                 lambda: loop.step_reference(dt, f_b, tau, f_e))
        for step in steps:
            loop.admittance.state, loop.q_arm, loop.dq_arm = copy.deepcopy(state), q0.copy(), dq0.copy()
            s = step()
            out.append((s.servicer.pose_base_in_nominal.homogeneous, s.servicer.pose_nominal_in_orbit.homogeneous,
                        s.servicer.twist_base_rel_body, s.servicer.twist_nominal_body, s.q_arm, s.dq_arm))
        for path in out[:2]:
            for a, b in zip(path, out[2]):
                worst = max(worst, np.abs(a - b).max() / max(1.0, np.abs(b).max()))
    assert worst < TOL


@pytest.mark.parametrize('terms', ['all', 'no_gravity', 'no_ff23'])
@pytest.mark.parametrize('ground_mode', [0, 1, 2])
def test_servicer_lockstep_compiled_step_is_the_reference_for_every_ground_model_sharing(ground_mode, terms):
    """The compiled step's ground arm: its own CRBA and RNEA (0), the orbit model's mass matrix (1), or also its
    bias from the feed-forward's RNEA plus G (2: the same arm, gravity and EE wrench, by RNEA's linearity; what
    the Envisat loop runs), each against the reference step with an EE wrench. With every Eq. (22) term on, mode 2
    skips the terms that cancel (the ground arm's C(V_s) V_s + G against tau_ff2 + tau_ff3 + G); with the gravity
    or tau_ff2 + tau_ff3 off they do not cancel and are computed."""
    rng = np.random.default_rng(15)
    loop = _lbr_lockstep(True)
    n = loop.n
    loop.step(1e-3, np.zeros(6), np.zeros(n), np.zeros(6))
    assert loop._chains.ground_mode == 2            # this loop's models allow the sharing
    loop._chains.ground_mode = ground_mode
    if terms == 'no_gravity':
        loop.feedforward.use_gravity = False
    elif terms == 'no_ff23':
        loop.feedforward.use_ff2 = loop.feedforward.use_ff3 = False
    worst = 0.0
    for _ in range(6):
        state, q0, dq0, f_b, tau, f_e = _random_lockstep_case(rng, loop)
        out = []
        for step in (lambda: loop.step(2e-3, f_b, tau, f_e), lambda: loop.step_reference(2e-3, f_b, tau, f_e)):
            loop.admittance.state, loop.q_arm, loop.dq_arm = copy.deepcopy(state), q0.copy(), dq0.copy()
            s = step()
            out.append((s.servicer.pose_base_in_nominal.homogeneous, s.servicer.twist_base_rel_body, s.q_arm, s.dq_arm))
        for a, b in zip(*out):
            worst = max(worst, np.abs(a - b).max() / max(1.0, np.abs(b).max()))
    assert worst < TOL


def test_the_port_and_the_loop_in_one_call_are_the_two_calls_one_after_the_other():
    """``ServicerHilLockstep.step_with_port`` (the servicer port's Eq. 28 observer/controller and the loop's step under
    ``F_b + F_pc``, one compiled call) against ``port.update`` then ``step``, bit for bit, over random states and
    inputs with the controller damping (a threshold below the observed energy, so ``beta > 0``), and on the
    refusals: a non-finite port input is named and changes nothing; a non-finite loop input is named after the
    port observed, as the two calls do it."""
    from hil_dynamics.passivity import PassivityController

    rng = np.random.default_rng(21)
    loop = _lbr_lockstep(True)
    n = loop.n
    loop.step(1e-3, np.zeros(6), np.zeros(n), np.zeros(6))
    assert loop._chains.ground_mode == 2
    m6 = loop.admittance.model.mass_matrix(loop.q_arm)[:6, :6]
    ports = [PassivityController(m6, 50.0, enabled=True) for _ in range(2)]
    for port in ports:            # 100 J the integrator made: E_obs > 0, so the controller damps from the start
        port.update(np.zeros(6), np.zeros(6), np.zeros(6), 1e-3, integration_energy_j=100.0)
    damped = 0
    for k in range(8):
        state, q0, dq0, f_b, tau, f_e = _random_lockstep_case(rng, loop)
        v_meas, f_port = rng.normal(0.0, 0.05, 6), rng.normal(0.0, 30.0, 6)
        results = []
        for fused, port in zip((True, False), ports):
            loop.admittance.state, loop.q_arm, loop.dq_arm = copy.deepcopy(state), q0.copy(), dq0.copy()
            if fused:
                s, out = loop.step_with_port(2e-3, f_b, tau, f_e, port, v_meas, f_port)
            else:
                out = port.update(v_meas, state.twist_base_rel_body, f_port, 2e-3)
                s = loop.step(2e-3, f_b + out.wrench_pc, tau, f_e)
            results.append((_snapshot(loop), np.array(out.as_list()), out.wrench_pc, port._acc.copy(),
                            port._prev.copy()))
        for a, b in zip(*results):
            np.testing.assert_array_equal(a, b, err_msg=f'case {k}')
        damped += results[0][1][4] > 0.0
    assert damped >= 6                                  # beta > 0: the damping went into the step
    port = ports[0]
    before, acc = _snapshot(loop), port._acc.copy()
    with pytest.raises(ValueError, match='twist_measured'):
        loop.step_with_port(1e-3, np.zeros(6), np.zeros(n), np.zeros(6), port, np.full(6, np.nan), np.zeros(6))
    np.testing.assert_array_equal(_snapshot(loop), before)
    np.testing.assert_array_equal(port._acc, acc)
    bad = np.zeros(6)
    bad[3] = np.inf
    with pytest.raises(ValueError, match='wrench_ee'):
        loop.step_with_port(1e-3, np.zeros(6), np.zeros(n), bad, port, np.zeros(6), np.zeros(6))
    np.testing.assert_array_equal(_snapshot(loop), before)
    assert port._acc[5] > 0.0 and not np.array_equal(port._acc, acc)   # observed, as port.update before step does


def test_the_live_sides_port_step_and_torques_in_one_call_are_the_calls_one_after_the_other(monkeypatch):
    """``servicer.port_step`` (the live servicer side's step: Eq. 4's ``V_n_dot``, the table port's Eq. 28
    observer/controller, Eq. 18 under ``F_b + F_pc`` and Eq. 22's torques) in one compiled call, against the same
    calls one after the other (its path for inputs that are not held float64 arrays: here lists), over random
    states and inputs with the controller damping, with a measured twist and without one; and on the refusals,
    the same error after the same changes: a non-finite port input changes nothing, a non-finite step input is
    named after the port observed, a non-finite ``tau`` after the state stepped."""
    from hil_dynamics.passivity import PassivityController
    from hil_dynamics.servicer import port_step

    calls = []                      # the compiled call ran (a path that never took it would compare the calls to
    real = kernels.side_port_step   # themselves)
    monkeypatch.setattr(kernels, 'side_port_step', lambda *args: calls.append(1) or real(*args))
    rng = np.random.default_rng(23)
    loop = _lbr_lockstep(False)
    adm, ff, n = loop.admittance, loop.feedforward, loop.n
    m6 = adm.model.mass_matrix(loop.q_arm)[:6, :6]
    ports = [PassivityController(m6, 50.0, enabled=True) for _ in range(2)]
    for port in ports:            # 100 J the integrator made: E_obs > 0, so the controller damps from the start
        port.update(np.zeros(6), np.zeros(6), np.zeros(6), 1e-3, integration_energy_j=100.0)

    def run(fused, port, state, *args):
        adm.state = copy.deepcopy(state)
        args = [a if fused or a is None else a.tolist() for a in args]
        try:
            s, out, tau_q = port_step(adm, ff, port, 2e-3, *args)
            result = (np.array(out.as_list()), out.wrench_pc, tau_q if tau_q is not None else np.zeros(0))
        except ValueError as exc:
            result = (str(exc),)
        return (_snapshot(adm), port._acc.copy(), port._prev.copy(), *result)

    damped, worst = 0, 0.0
    for k in range(8):
        state, q0, dq0, f_b, tau, f_e = _random_lockstep_case(rng, loop)
        ddq, v_meas = rng.normal(0.0, 0.3, n), (rng.normal(0.0, 0.05, 6) if k % 2 else None)
        for with_tau in (True, False):
            a, b = (run(fused, port, state, q0, dq0, ddq, f_b, f_e, v_meas, tau if with_tau else None)
                    for fused, port in zip((True, False), ports))
            for x, y in zip(a, b):
                worst = max(worst, float(np.abs(x - y).max(initial=0.0)) / max(1.0, float(np.abs(y).max(initial=0.0))))
            damped += a[3][4] > 0.0
    assert worst < TOL
    assert damped >= 12                                 # beta > 0: the damping went into the step
    assert len(calls) == 8                              # the fused runs with the torques; the others are the calls
    state, q0, dq0, f_b, tau, f_e = _random_lockstep_case(rng, loop)
    nan = np.full(n, np.nan)
    refusals = {'twist_measured': (q0, dq0, np.zeros(n), f_b, f_e, np.full(6, np.nan), tau),
                'ddq_arm': (q0, dq0, nan, f_b, f_e, None, tau),
                'tau_obsw': (q0, dq0, np.zeros(n), f_b, f_e, None, nan)}
    for name, args in refusals.items():
        adm.state = copy.deepcopy(state)
        start = (_snapshot(adm), ports[0]._acc.copy())
        a, b = (run(fused, port, state, *args) for fused, port in zip((True, False), ports))
        assert name in a[3] and a[3] == b[3], (a[3], b[3])
        for x, y in zip(a[:3], b[:3]):
            np.testing.assert_allclose(x, y, rtol=TOL, atol=TOL, err_msg=name)
        stepped, observed = not np.array_equal(a[0], start[0]), not np.array_equal(a[1], start[1])
        assert stepped == (name == 'tau_obsw'), name          # the state steps only before the torques refuse
        assert observed == (name != 'twist_measured'), name   # the port observes unless its own input is refused


def test_servicer_admittance_fused_step_matches_reference_step():
    """The node's Eq. (18) step with held samples: fused against readable."""
    from hil_dynamics.servicer import ServicerState

    loop = _lbr_lockstep(False)
    adm = loop.admittance
    rng = np.random.default_rng(6)
    worst = 0.0
    for _ in range(10):
        state = ServicerState(0.0, _random_pose(rng), rng.normal(0.0, 0.05, 6),
                              pin.SE3(pin.exp3(rng.normal(0.0, 0.3, 3)), rng.normal(0.0, 1.0, 3)), rng.normal(0.0, 0.05, 6))
        args = (rng.uniform(-2.0, 2.0, 7), rng.normal(0.0, 0.3, 7), rng.normal(0.0, 0.3, 7), rng.normal(0.0, 50.0, 6),
                rng.normal(0.0, 30.0, 6))
        dt = 10.0 ** rng.uniform(-4.0, -1.5)
        out = []
        for step in (adm.step, adm.step_pinocchio, adm.step_reference):
            adm.state = copy.deepcopy(state)
            for _ in range(2):
                s = step(dt, *args)
            out.append((s.pose_base_in_nominal.homogeneous, s.pose_nominal_in_orbit.homogeneous,
                        s.twist_base_rel_body, s.twist_nominal_body))
        for path in out[:2]:
            for a, b in zip(path, out[2]):
                worst = max(worst, np.abs(a - b).max() / max(1.0, np.abs(b).max()))
    assert worst < TOL


@pytest.mark.parametrize('switches', [{}, {'use_ff2': False}, {'use_ff3': False}, {'use_ff1': False, 'use_gravity': False}],
                         ids=['all', 'no_ff2', 'no_ff3', 'no_ff1_no_g'])
def test_arm_feedforward_fused_torques_match_reference_terms(switches):
    """Eq. (22) term by term: fused (one Coriolis matrix, two Coriolis forces) against the Eq. (12) blocks."""
    from hil_dynamics.servicer import ArmFeedForward

    adm = _lbr_lockstep(False).admittance
    ff = ArmFeedForward(adm.model, pin.SE3(pin.rpy.rpyToMatrix(0.2, -0.1, 0.4), np.array([0.5, 1.0, 1.5])), **switches)
    rng = np.random.default_rng(7)
    for _ in range(10):
        args = (rng.normal(0.0, 20.0, 7), rng.uniform(-2.0, 2.0, 7), rng.normal(0.0, 0.5, 7),
                pin.SE3(pin.exp3(rng.normal(0.0, 1.0, 3)), rng.normal(0.0, 1.0, 3)), rng.normal(0.0, 0.2, 6),
                rng.normal(0.0, 0.2, 6), rng.normal(0.0, 0.05, 6))
        a, b = ff.torques(*args), ff.torques_reference(*args)
        scale = max(1.0, float(np.abs(b.tau_q).max()))
        for name in ('tau_q', 'tau_ff1', 'tau_ff2', 'tau_ff3', 'gravity'):
            assert np.abs(getattr(a, name) - getattr(b, name)).max() < TOL * scale, name
        # the compiled command (one call: CRBA, two Coriolis forces and the gravity on the chain), with the base
        # pose as a pin.SE3 and as the state's 12-array
        for pose in (args[3], kernels.pose_array(args[3])):
            c = ff.torque_command(*args[:3], pose, *args[4:])
            assert np.abs(c - b.tau_q).max() < TOL * scale
    with pytest.raises(ValueError, match='dq_arm'):
        ff.torque_command(*args[:2], np.zeros(6), *args[3:])
    with pytest.raises(ValueError, match='accel_nominal_body'):
        ff.torque_command(*args[:6], np.full(6, np.nan))


def test_the_holds_compiled_torques_are_the_arms_gravity_compensation():
    """A held servicer commands its arm only the gravity compensation ``-G`` (seed 004 Eq. 20): the compiled call
    (``ArmFeedForward.hold_torques``, the chain's RNEA on the arm's lab pose) against Pinocchio's
    ``computeGeneralizedGravity`` (``-gravity_torque``) at random base poses and joints, the pose as a ``pin.SE3`` and
    as a 12-array; it compensates gravity whatever Eq. (22)'s switches say (the G switch off too)."""
    from hil_dynamics.servicer import ArmFeedForward

    adm = _lbr_lockstep(False).admittance
    rng = np.random.default_rng(23)
    for switches in ({}, {'use_gravity': False}):
        ff = ArmFeedForward(adm.model, pin.SE3(pin.rpy.rpyToMatrix(0.3, 0.2, -0.5), np.array([0.4, -1.0, 1.2])),
                            **switches)
        for _ in range(10):
            pose, q = pin.SE3(pin.exp3(rng.normal(0.0, 1.0, 3)), rng.normal(0.0, 1.0, 3)), rng.uniform(-3.0, 3.0, 7)
            ref = -ff.gravity_torque(pose, q)
            assert np.abs(ref).max() > 1.0                   # the arm's weight shows (a test that can fail)
            for p in (pose, kernels.pose_array(pose)):
                out = ff.hold_torques(p, q)
                assert np.abs(out - ref).max() < TOL * np.abs(ref).max()
    with pytest.raises(ValueError, match='q_arm'):
        ff.hold_torques(pose, np.full(7, np.nan))


def test_absolute_rigid_body_compiled_step_matches_reference_step():
    from hil_dynamics.client import AbsoluteRigidBody

    rng = np.random.default_rng(8)
    body = RigidBody(1200.0, [800.0, 900.0, 1400.0])
    for _ in range(10):
        pose, twist = _random_pose(rng), rng.normal(0.0, 0.3, 6)
        wrench, dt = rng.normal(0.0, 100.0, 6), 10.0 ** rng.uniform(-4.0, -1.0)
        a, b = AbsoluteRigidBody(body, twist, pose), AbsoluteRigidBody(body, twist, pose)
        for _ in range(3):
            a.step(wrench, dt)
            b.step_reference(wrench, dt)
        assert _pose_diff(a.pose_in_orbit, b.pose_in_orbit) < TOL
        assert np.abs(a.twist_body - b.twist_body).max() < TOL


@pytest.mark.parametrize('arm', ['lbr', 'ssrms'])
def test_chain_rnea_and_crba_match_pinocchio(arm):
    """The compiled recursions against Pinocchio's ``rnea`` (with gravity and external forces) and ``crba``."""
    from hil_dynamics.models import servicer_lbr_urdf, servicer_ssrms_urdf

    urdf = servicer_lbr_urdf() if arm == 'lbr' else servicer_ssrms_urdf()
    model = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    model.gravity = pin.Motion(np.array([0.3, -0.2, -9.81, 0.0, 0.0, 0.0]))
    data = model.createData()
    chain = kernels.Chain.of(model)
    rng = np.random.default_rng(9)
    for _ in range(10):
        base = _random_pose(rng)
        q, v, a = rng.uniform(-3.0, 3.0, model.nv - 6), rng.normal(size=model.nv), rng.normal(size=model.nv)
        fext = pin.StdVec_Force()
        fext_arr = np.zeros((model.njoints, 6))
        fext.append(pin.Force.Zero())
        for j in range(1, model.njoints):
            f = rng.normal(0.0, 20.0, 6)
            fext.append(pin.Force(f))
            fext_arr[j] = f
        cfg = np.concatenate((pin.SE3ToXYZQUAT(base), q))
        ref = pin.rnea(model, data, cfg, v, a, fext).copy()
        out = np.empty(model.nv)
        kernels.chain_rnea(*chain.args(), chain.gravity, kernels.pose_array(base), q, v, a, fext_arr, chain.work, out)
        assert np.abs(out - ref).max() < TOL * np.abs(ref).max()
        ref_m = pin.crba(model, data, cfg).copy()
        out_m = np.empty((model.nv, model.nv))
        kernels.chain_crba(*chain.args(), q, chain.work, chain.work_ic, out_m)
        assert np.abs(out_m - ref_m).max() < TOL * np.abs(ref_m).max()


@pytest.mark.parametrize('arm', ['lbr', 'ssrms'])
def test_the_gravity_from_the_mass_matrix_is_pinocchios_generalised_gravity(arm):
    """:func:`kernels.gravity_from_mass_matrix` (six columns of ``M`` times the free-flyer's acceleration the gravity
    stands for) against Pinocchio's ``computeGeneralizedGravity`` at random base poses, joints and gravities."""
    from hil_dynamics.models import servicer_lbr_urdf, servicer_ssrms_urdf

    urdf = servicer_lbr_urdf() if arm == 'lbr' else servicer_ssrms_urdf()
    model = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    data = model.createData()
    chain = kernels.Chain.of(model)
    rng = np.random.default_rng(19)
    for _ in range(10):
        model.gravity = pin.Motion(np.concatenate((rng.normal(0.0, 5.0, 3), np.zeros(3))))
        base = _random_pose(rng)
        q = rng.uniform(-3.0, 3.0, model.nv - 6)
        cfg = np.concatenate((pin.SE3ToXYZQUAT(base), q))
        ref = pin.computeGeneralizedGravity(model, data, cfg).copy()
        m = np.empty((model.nv, model.nv))
        kernels.chain_crba(*chain.args(), q, chain.work, chain.work_ic, m)
        out = np.empty(model.nv)
        kernels.gravity_from_mass_matrix(chain.args()[1][1], model.gravity.vector, kernels.pose_array(base), m, out)
        assert np.abs(out - ref).max() < TOL * np.abs(ref).max()


def test_compiled_steps_follow_a_wrench_buffer_the_caller_reuses():
    """A node may decode each sample into the same array: the compiled admittance and lockstep steps cache
    the EE wrench's joint force, and must see a changed value in a reused buffer as a new wrench."""
    rng = np.random.default_rng(8)
    f_first, f_second = rng.normal(0.0, 30.0, 6), rng.normal(0.0, 30.0, 6)
    q, dq, ddq, f_b = rng.uniform(-1.0, 1.0, 7), rng.normal(0.0, 0.2, 7), np.zeros(7), rng.normal(0.0, 20.0, 6)
    results = []
    for reuse in (True, False):
        loop = _lbr_lockstep(False)
        adm = copy.deepcopy(loop.admittance)
        buffer = f_first.copy()
        adm.step(1e-3, q, dq, ddq, f_b, buffer)
        loop.step(1e-3, f_b, np.zeros(7), buffer)
        if reuse:
            buffer[:] = f_second
        else:
            buffer = f_second.copy()
        s_adm = adm.step(1e-3, q, dq, ddq, f_b, buffer)
        s_loop = loop.step(1e-3, f_b, np.zeros(7), buffer)
        results.append(np.concatenate((s_adm.twist_base_rel_body, s_loop.servicer.twist_base_rel_body, s_loop.dq_arm)))
    np.testing.assert_array_equal(results[0], results[1])


def _free_floating():
    from hil_dynamics.free_floating import FreeFloatingServicer
    from hil_dynamics.models import servicer_lbr_urdf
    return FreeFloatingServicer(servicer_lbr_urdf(), 'lbr_flange', pin.SE3.Identity(), np.full(6, 0.01), np.full(7, 0.2),
                                np.zeros(7))


def _snapshot(obj) -> np.ndarray:
    """The integrated state of a lockstep, an admittance or a free-floating servicer as one vector."""
    s = getattr(obj, 'admittance', obj)
    if hasattr(s, 'state'):
        st = s.state
        parts = [kernels.pose_array(st.pose_nominal_in_orbit), st.twist_nominal_body,
                 kernels.pose_array(st.pose_base_in_nominal), st.twist_base_rel_body]
        if hasattr(obj, 'q_arm'):
            parts += [obj.q_arm, obj.dq_arm]
        return np.concatenate(parts)
    return np.concatenate((kernels.pose_array(obj.pose_base_in_orbit), obj.twist_base_body, obj.q_arm, obj.dq_arm))


def test_the_steps_check_their_inputs_by_name_and_never_broadcast():
    """The 1 kHz steps copy their inputs into buffers allocated once and check them in one reduction
    (``finite_into``): a scalar or a vector of another length must be refused by name, not broadcast into the
    buffer; a non-finite value is named; a refused step leaves the state as it was; lists are accepted and
    step exactly as arrays do."""
    z7, z6 = np.zeros(7), np.zeros(6)
    loop = _lbr_lockstep(False)
    steppers = {
        'lockstep': (loop, lambda o, a, b, c: o.step(1e-3, a, b, c), ('wrench_base_com', 'tau_obsw', 'wrench_ee'),
                     (z6, z7, z6)),
        'admittance': (copy.deepcopy(loop.admittance), lambda o, a, b, c: o.step(1e-3, z7, b, z7, a, c),
                       ('wrench_base_com', 'dq_arm', 'wrench_ee'), (z6, z7, z6)),
        'free_floating': (_free_floating(), lambda o, a, b, c: o.step(1e-3, a, b, c),
                          ('wrench_base_com', 'tau_arm', 'wrench_flange'), (z6, z7, z6)),
    }
    for kind, (obj, step, names, good) in steppers.items():
        before = _snapshot(obj)
        for i, name in enumerate(names):
            for bad in (0.5, np.full(good[i].shape[0] - 1, 0.5), list(np.ones(good[i].shape[0] + 1)),
                        np.where(np.arange(good[i].shape[0]) == 2, np.nan, 0.0), 'x'):
                args = list(good)
                args[i] = bad
                with pytest.raises(ValueError, match=name):
                    step(obj, *args)
                np.testing.assert_array_equal(_snapshot(obj), before, err_msg=f'{kind}: {name} = {bad!r}')
        twin = copy.deepcopy(obj)
        rng = np.random.default_rng(3)
        inputs = [rng.normal(0.0, 5.0, g.shape[0]) for g in good]
        step(obj, *inputs)
        step(twin, *[list(v) for v in inputs])
        np.testing.assert_array_equal(_snapshot(twin), _snapshot(obj), err_msg=kind)


def test_the_compiled_steps_have_one_specialisation_for_every_caller():
    """The steps pass views of one input buffer to their kernels; the warm-up (``./dev``) passes plain arrays.
    A second layout would make Numba compile a second version in a node's first real-time sample."""
    loop = _lbr_lockstep(False)
    loop.step(1e-3, np.ones(6), np.ones(7), np.ones(6))
    loop.admittance.step(1e-3, np.ones(7), np.ones(7), np.ones(7), np.ones(6), np.ones(6))
    _free_floating().step(1e-3, np.ones(6), np.ones(7), np.ones(6))
    s = loop.admittance.state
    loop.feedforward.torque_command(np.ones(7), np.ones(7), np.ones(7), s.pose_arrays()[1], s.twist_base_rel_body,
                                    s.twist_nominal_body, np.ones(6))
    kernels.warm_up()
    for kernel in (kernels.lockstep_rkmk4_step, kernels.admittance_rkmk4_step, kernels.free_floating_rkmk4_step,
                   kernels.free_floating_inputs_step, kernels.lockstep_inputs_step, kernels.ee_wrench_as_fext,
                   kernels.lockstep_shared_inputs_step, kernels.lockstep_port_step,
                   kernels.admittance_inputs_step,
                   kernels.client_rkmk4_step, kernels.client_port_step, kernels.rebase_increment,
                   kernels.frame_pose_and_jacobian,
                   kernels.nominal_twist_change_into, kernels.passivity_update, kernels.arm_torque_command,
                   kernels.hold_torque_command):
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)


def test_the_nominal_acceleration_is_the_bodys_own():
    """``ServicerAdmittance.nominal_acceleration`` (Eq. 4 in one compiled call) against the nominal body's readable
    ``acceleration``, for the client's own body and for a re-based nominal off its centre of mass."""
    from hil_dynamics.rebase import NominalBody

    adm = _lbr_lockstep(False).admittance
    rng = np.random.default_rng(12)
    off_centre = NominalBody(pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5])))
    for body in (adm.nominal_body, off_centre):
        adm.nominal_body = body
        for _ in range(20):
            v = rng.normal(0.0, 0.1, 6)
            want = body.acceleration(v, np.zeros(6))
            assert np.abs(adm.nominal_acceleration(v) - want).max() < TOL * max(1e-6, np.abs(want).max())


def test_a_state_on_arrays_reads_as_the_poses_it_was_given():
    """``RelativeState``: a state made from 12-arrays and one made from ``pin.SE3`` read the same poses, and Eq. (23)
    on the arrays (``absolute``) is ``relative_mapping`` on ``pin.SE3`` to 1e-12."""
    from hil_dynamics.client import relative_mapping
    from hil_dynamics.servicer import ServicerState

    rng = np.random.default_rng(13)
    for cls in (ClientState, ServicerState):
        for _ in range(50):
            g_n, g_rel = _random_pose(rng), _random_pose(rng)
            v_n, v_rel = rng.normal(0.0, 0.2, 6), rng.normal(0.0, 0.2, 6)
            a = cls(0.1, g_n, v_n, g_rel, v_rel)
            b = cls.of_arrays(0.1, kernels.pose_array(g_n), v_n, kernels.pose_array(g_rel), v_rel)
            assert np.abs(b.pose_nominal_in_orbit.homogeneous - g_n.homogeneous).max() == 0.0
            assert np.abs(b._pose(1).homogeneous - g_rel.homogeneous).max() == 0.0
            want_g, want_v = relative_mapping(g_n, v_n, g_rel, v_rel)
            for state in (a, b):
                g, v = state.absolute()
                assert np.abs(g.homogeneous - want_g.homogeneous).max() < TOL * max(1.0, np.abs(want_g.translation).max())
                assert np.abs(v - want_v).max() < TOL * max(1.0, np.abs(want_v).max())


def test_a_pose_array_reads_as_the_message_pose_to_msg_writes():
    """kernels.pose_xyzquat (the hot paths' raw messages) against conversions.pose_to_msg (qw >= 0) on random poses,
    near the half turns too (where a quaternion's sign is chosen)."""
    from geometry_msgs.msg import Pose

    from hil_common.conversions import pose_to_msg
    rng = np.random.default_rng(31)
    for k in range(200):
        axis = rng.normal(size=3)
        angle = np.pi - 1e-9 * rng.random() if k % 4 == 0 else rng.uniform(-np.pi, np.pi)
        g = pin.SE3(pin.exp3(angle * axis / np.linalg.norm(axis)), rng.normal(size=3))
        msg = Pose()
        pose_to_msg(g, msg)
        want = [msg.position.x, msg.position.y, msg.position.z, msg.orientation.x, msg.orientation.y,
                msg.orientation.z, msg.orientation.w]
        np.testing.assert_allclose(kernels.pose_xyzquat(kernels.pose_array(g)), want, rtol=0.0, atol=1e-12)
