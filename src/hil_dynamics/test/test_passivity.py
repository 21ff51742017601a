"""Time-domain passivity observer and controller (seed 004 Eqs. 26-28, §VI; ref. [18]).

Closed forms: a known energy flow integrates exactly; a delay-free loop generates nothing; a
1-DOF admittance on a stiff spring behind a robot delay, simulated here independently of the
rule, gains energy and oscillates without the controller and stays bounded with it.
"""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.client import ClientAdmittance
from hil_dynamics.passivity import PassivityController, integration_energy
from hil_dynamics.rigid_body import RigidBody

DT = 1e-3


def test_constant_energy_flow_integrates_exactly():
    """F = 3 N held, commanded 0.5 m/s, measured 0.2 m/s for 1 s: the loop creates F (v - ṽ) t = 0.9 J."""
    pc = PassivityController([2.0], max_rate_per_s=0.0, enabled=False)
    for _ in range(1001):                      # a step is accounted when its end sample arrives
        out = pc.update([0.2], [0.5], [3.0], DT)
    assert out.energy_port_j == pytest.approx(0.9, abs=1e-12)
    assert out.energy_observed_j == pytest.approx(0.9, abs=1e-12)
    assert out.rate_per_s == 0.0 and out.energy_dissipated_j == 0.0
    # Six coordinates, the power is F^T (V - Ṽ): mixed signs cancel exactly.
    pc6 = PassivityController(np.ones(6), 0.0, enabled=False)
    f = np.array([1.0, -2.0, 0.5, 0.1, 0.0, -0.3])
    dv = np.array([0.1, 0.2, -0.4, 1.0, 5.0, 2.0])
    for _ in range(501):
        out = pc6.update(np.zeros(6), dv, f, DT)
    assert out.energy_port_j == pytest.approx(0.5 * float(f @ dv), abs=1e-12)


def test_controller_dissipates_exactly_the_observed_excess():
    """Unsaturated, beta = E_obs / (V^T M V dt): every step's new excess is removed in the same step."""
    m, v, vm, f = 2.0, 0.5, 0.2, 3.0
    pc = PassivityController([m], max_rate_per_s=500.0)
    for _ in range(1001):
        out = pc.update([vm], [v], [f], DT)
        assert out.energy_observed_j == pytest.approx(0.0, abs=1e-12)
    per_step = f * (v - vm) * DT
    assert out.rate_per_s == pytest.approx(per_step / (m * v * v * DT))
    assert out.wrench_pc[0] == pytest.approx(-out.rate_per_s * m * v)
    assert out.energy_dissipated_j == pytest.approx(0.9, abs=1e-12)
    # Saturated: at most max_rate_per_s * V^T M V dt per step, the rest is carried over.
    sat = PassivityController([m], max_rate_per_s=1.0)
    for _ in range(1001):
        out = sat.update([vm], [v], [f], DT)
    assert out.rate_per_s == 1.0
    assert out.energy_dissipated_j == pytest.approx(1000 * m * v * v * DT)
    assert out.energy_observed_j == pytest.approx(0.9 - 1000 * m * v * v * DT)


def test_integration_energy_sees_explicit_euler_and_not_exact_steps():
    """Explicit Euler moves by v_k dt instead of the mean velocity: it creates F^2 dt^2 / (2 m) per step."""
    m, k, dt = 1.0, 100.0, 0.01
    x, v = 0.1, 0.0
    total, expected = 0.0, 0.0
    for _ in range(100):
        f = -k * x
        x, v_new = x + v * dt, v + f / m * dt                       # explicit Euler
        total += integration_energy([[m]], [v], [v_new], [f], dt, displacement=[v * dt])
        expected += f * f * dt * dt / (2.0 * m)
        v = v_new
    assert total == pytest.approx(expected, rel=1e-9) and total > 0.0
    # Constant acceleration integrated exactly: the energy change equals the work, to rounding.
    v0, a = 0.2, 2.0 / 3.0
    assert integration_energy([[3.0]], [v0], [v0 + a * dt], [2.0], dt,
                              displacement=[v0 * dt + 0.5 * a * dt * dt]) == pytest.approx(0.0, abs=1e-15)


def _spring_rig(delay_steps: int, controller: PassivityController | None, duration_s: float = 4.0,
                mass_kg: float = 20.0, stiffness_n_m: float = 2.0e4, damping_ns_m: float = 0.0):
    """1-DOF admittance (mass) on a stiff spring, the robot ``delay_steps`` behind its command.

    The environment (a spring at the origin) acts on the robot's measured position; the
    admittance integrates the held force exactly (constant acceleration over the step).
    Returns the time series of the physical energy (model kinetic + spring), the robot
    position and the rule's outputs.
    """
    x, v = 0.0, 0.1                     # the model moves into the spring at 0.1 m/s
    x_hist = [x] * (delay_steps + 1)
    v_hist = [v] * (delay_steps + 1)
    e_int = 0.0
    energy, pos, observed = [], [], []
    for _ in range(int(round(duration_s / DT))):
        x_meas, v_meas = x_hist[0], v_hist[0]
        f = -stiffness_n_m * x_meas - damping_ns_m * v_meas
        f_pc = 0.0
        if controller is not None:
            out = controller.update([v_meas], [v], [f], DT, e_int)
            f_pc = out.wrench_pc[0]
            observed.append(out.energy_observed_j)
        a = (f + f_pc) / mass_kg
        x_new, v_new = x + v * DT + 0.5 * a * DT * DT, v + a * DT
        e_int = integration_energy([[mass_kg]], [v], [v_new], [f + f_pc], DT, displacement=[x_new - x])
        x, v = x_new, v_new
        x_hist = x_hist[1:] + [x]
        v_hist = v_hist[1:] + [v]
        energy.append(0.5 * mass_kg * v * v + 0.5 * stiffness_n_m * x_hist[0] ** 2)
        pos.append(x_hist[0])
    return np.array(energy), np.array(pos), np.array(observed)


def test_delay_free_loop_observes_no_energy():
    """No delay (Assumption 1) on a damper: the loop is passive and E_obs <= 0 (within 1e-12 J)."""
    pc = PassivityController([20.0], max_rate_per_s=500.0, enabled=False)
    energy, _, observed = _spring_rig(0, pc, stiffness_n_m=0.0, damping_ns_m=50.0)
    assert observed.max() <= 1e-12
    assert np.all(np.diff(energy) <= 0.0) and energy[-1] < 0.01 * energy[0]
    # A sampled stiff spring is not passive even without delay (the held force lags by half a
    # sample: k dt / 2 of negative damping); the observer sees it.
    _, _, observed_spring = _spring_rig(0, PassivityController([20.0], 0.0, enabled=False))
    assert observed_spring[-1] > 0.0
    # ... and the client's 6-DOF RKMK4 rule under a varying wrench: its integrator creates
    # less than 1e-6 of the energy exchanged over 1 s (sampled ideal robot: measured = commanded).
    body = RigidBody(7828.0, [17023.0, 129112.0, 124826.0])
    rule = ClientAdmittance(body, [0.0, 0.0, 0.0, 0.0, -0.0436, 0.0])
    pc6 = PassivityController(body.mass_matrix, 0.0, enabled=False)
    e_int, exchanged = 0.0, 0.0
    for k in range(1000):
        t = k * DT
        f = np.array([20.0 * np.sin(3 * t), 5.0, -10.0 * np.cos(t), 30.0 * np.sin(2 * t), 0.0, 15.0])
        v_c = rule.twist_client_rel_body.copy()
        out = pc6.update(v_c, v_c, f, DT, e_int)
        g_t0, v_t0 = rule.absolute()
        rule.step(f, DT)
        g_t1, v_t1 = rule.absolute()
        e_int = integration_energy(body.mass_matrix, v_t0, v_t1, f, DT, displacement=pin.log6(g_t0.actInv(g_t1)).vector)
        exchanged += abs(float(f @ (0.5 * (v_t0 + v_t1)))) * DT
    assert abs(out.energy_integration_j) < 1e-6 * exchanged


def test_delayed_stiff_contact_gains_energy_without_the_controller_and_not_with_it():
    """4 ms robot delay on a 2e4 N/m spring: the loop is active (seed 004 §VI); the controller makes it passive."""
    delay = 4
    free, pos_free, _ = _spring_rig(delay, None)
    observer = PassivityController([20.0], max_rate_per_s=0.0, enabled=False)
    _, _, observed_free = _spring_rig(delay, observer)
    pc = PassivityController([20.0], max_rate_per_s=500.0)
    held, pos_held, observed_held = _spring_rig(delay, pc)
    e0 = free[0]
    growth = free[-1] / e0
    amp = np.abs(pos_free[-500:]).max() / np.abs(pos_free[:500]).max()
    print(f'\nwithout the controller: energy x{growth:.1f} in 4 s, amplitude x{amp:.1f}, observed '
          f'{observed_free[-1]:.3f} J (initial {e0:.3f} J); with it: max energy x{held.max() / e0:.3f}, '
          f'observed max {observed_held.max():.2e} J, dissipated {pc.energy_dissipated_j:.3f} J')
    # Without: the oscillation grows, and the observer sees the energy the delay creates.
    assert growth > 10.0 and amp > 3.0
    # It sees all of it, the delay and the spring's own sampling (zero-order hold of the force,
    # k dx^2 / 2 per step, 10 % of the growth here), to 1 %.
    sampling = 0.5 * 2.0e4 * np.sum(np.diff(np.concatenate(([0.0], pos_free))) ** 2)
    assert sampling > 0.05 * (free[-1] - e0)
    assert observed_free[-1] == pytest.approx(free[-1] - e0, rel=0.01)
    # With: bounded, not growing (the last second is no higher than the second one), within 10 %
    # of the initial energy (the first bounce, before anything is observed, and the saturated
    # steps at the turning points carry a little); E_obs at most 10 % of the initial energy.
    assert held.max() <= 1.1 * e0
    assert held[-1000:].max() <= 1.001 * held[1000:2000].max()
    assert observed_held.max() <= 0.1 * e0
    # Not a frozen loop: it still bounces off the spring at its lossless amplitude v0 / w.
    assert np.abs(pos_held).max() > 0.9 * 0.1 / np.sqrt(2.0e4 / 20.0)


def test_bad_input_is_named():
    pc = PassivityController(np.ones(6), 10.0)
    with pytest.raises(ValueError, match='twist_measured'):
        pc.update([0.0] * 5, np.zeros(6), np.zeros(6), DT)
    with pytest.raises(ValueError, match='wrench'):
        pc.update(np.zeros(6), np.zeros(6), [np.nan] * 6, DT)
    with pytest.raises(ValueError, match='mass_matrix'):
        PassivityController([[1.0, 2.0], [0.0, 1.0]], 1.0)
    with pytest.raises(ValueError, match='max_rate_per_s'):
        PassivityController([1.0], -1.0)
    assert pc.energy_observed_j == 0.0


@pytest.mark.parametrize('n, enabled, threshold_j', [(6, True, 0.0), (6, True, 1e-3), (6, False, 0.0), (1, True, 0.0)])
def test_compiled_update_matches_the_reference_on_random_samples(n, enabled, threshold_j):
    """The compiled ``update`` (issue 17) and ``update_reference``, fed the same random samples (with the
    controller saturating at times), agree to 1e-12 in every output and in the state they keep."""
    rng = np.random.default_rng(17 + n)
    a = rng.normal(size=(n, n))
    m = a @ a.T + n * np.eye(n)
    fast, ref = (PassivityController(m, 50.0, enabled, threshold_j) for _ in range(2))
    for k in range(400):
        v_meas, v_cmd, f = rng.normal(size=n), rng.normal(size=n), 10.0 * rng.normal(size=n)
        e_int, dt = 1e-4 * rng.normal(), DT * (1.0 + 0.5 * rng.random())
        out_f = fast.update(v_meas, v_cmd, f, dt, e_int)
        out_r = ref.update_reference(v_meas, v_cmd, f, dt, e_int)
        scale = 1.0 + abs(out_r.energy_port_j) + abs(out_r.energy_dissipated_j)
        for got, want in zip(out_f.as_list(), out_r.as_list()):
            assert abs(got - want) <= 1e-12 * scale, (k, out_f, out_r)
        np.testing.assert_allclose(out_f.wrench_pc, out_r.wrench_pc, rtol=1e-12, atol=1e-12 * scale)
        assert fast.max_observed_j == pytest.approx(ref.max_observed_j, rel=1e-12, abs=1e-12 * scale)
    if enabled and threshold_j == 0.0:
        assert max(out_r.rate_per_s, ref.max_observed_j) > 0.0   # the controller did act on these samples


def test_compiled_update_refuses_bad_input_by_name_and_keeps_its_state():
    pc = PassivityController(np.ones(6), 10.0)
    for _ in range(3):
        before = pc.update(np.zeros(6), np.ones(6), np.ones(6), DT)
    acc, prev = pc._acc.copy(), pc._prev.copy()
    for args, name in (((np.full(6, np.inf), np.ones(6), np.ones(6)), 'twist_measured'),
                       ((np.zeros(6), np.array([0, 0, np.nan, 0, 0, 0.0]), np.ones(6)), 'twist_commanded'),
                       ((np.zeros(6), np.ones(6), np.full(6, np.nan)), 'wrench')):
        with pytest.raises(ValueError, match=name):
            pc.update(*args, DT)
    with pytest.raises(ValueError, match='integration_energy_j'):
        pc.update(np.zeros(6), np.ones(6), np.ones(6), DT, float('nan'))
    np.testing.assert_array_equal(pc._acc, acc)
    np.testing.assert_array_equal(pc._prev, prev)
    after = pc.update(np.zeros(6), np.ones(6), np.ones(6), DT)
    assert after.energy_port_j == pytest.approx(before.energy_port_j + 6.0 * DT, rel=1e-12)   # F (V - Ṽ) dt


def test_compiled_integration_energy_matches_the_function():
    from hil_dynamics import kernels
    rng = np.random.default_rng(5)
    a = rng.normal(size=(6, 6))
    m = a @ a.T + 6 * np.eye(6)
    for _ in range(100):
        v0, v1, f = (rng.normal(size=6) for _ in range(3))
        g0 = pin.exp6(pin.Motion(rng.normal(size=6)))
        g1 = g0 * pin.exp6(pin.Motion(rng.normal(0.0, 0.3, 6)))     # one step's displacement, and more
        want = integration_energy(m, v0, v1, f, DT, pin.log6(g0.actInv(g1)).vector)
        got = kernels.integration_energy_step(m, v0, v1, f, kernels.pose_array(g0), kernels.pose_array(g1))
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_compiled_update_has_one_specialisation_whatever_the_mass_matrix_layout():
    """The nodes build the servicer's port from a slice of the mass matrix. A second array layout would make
    Numba compile a second version of the kernel in a node's first real-time sample (./dev compiles one)."""
    from hil_dynamics import kernels
    full = np.diag(np.arange(1.0, 14.0))
    for m in (full[:6, :6], np.asfortranarray(full[:6, :6]), np.ones(6)):
        PassivityController(m, 10.0).update(np.ones(6), np.ones(6), np.ones(6), DT)
    PassivityController([2.0], 10.0).update([0.2], [0.5], [3.0], DT)
    assert len(kernels.passivity_update.signatures) == 1, kernels.passivity_update.signatures


@pytest.mark.parametrize('enabled', [True, False])
def test_compiled_client_port_step_matches_the_reference(enabled):
    """``ClientPort.step`` (one compiled call: observer, damped Eq. 11 step, integration energy) and
    ``step_reference`` (the parts composed), fed the same random samples, with and without a measured twist
    and across a change of the nominal's twist (a re-basing increment), agree to 1e-12 in the state, the
    observer's output and state, and the integration energy."""
    from hil_dynamics.passivity import ClientPort
    rng = np.random.default_rng(29)
    body = RigidBody(800.0, [300.0, 500.0, 650.0])
    twist0 = np.array([0.01, -0.02, 0.0, 0.05, -0.03, 0.08])
    fast, ref = (ClientPort(ClientAdmittance(body, twist0), 50.0, enabled) for _ in range(2))
    for k in range(300):
        f = 40.0 * rng.normal(size=6)
        measured = None if k % 3 == 0 else fast.admittance.state.twist_client_rel_body + 1e-3 * rng.normal(size=6)
        dt = DT * (1.0 + 0.5 * rng.random())
        if k == 150:
            for port in (fast, ref):
                port.admittance.rebase_nominal_twist(twist0 + 0.01)
        s_f, s_r = fast.step(f, dt, measured), ref.step_reference(f, dt, measured)
        assert s_f.t == s_r.t
        for got, want in zip((*s_f.pose_arrays(), s_f.twist_nominal_body, s_f.twist_client_rel_body),
                             (*s_r.pose_arrays(), s_r.twist_nominal_body, s_r.twist_client_rel_body)):
            np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12)
        scale = 1.0 + abs(ref.out.energy_port_j) + abs(ref.out.energy_dissipated_j)
        for got, want in zip(fast.out.as_list(), ref.out.as_list()):
            assert abs(got - want) <= 1e-12 * scale, (k, fast.out, ref.out)
        np.testing.assert_allclose(fast.out.wrench_pc, ref.out.wrench_pc, rtol=0.0, atol=1e-12 * scale)
        assert fast.integration_j == pytest.approx(ref.integration_j, rel=1e-12, abs=1e-15)
        np.testing.assert_allclose(fast.controller._acc, ref.controller._acc, rtol=1e-12, atol=1e-12 * scale)
        np.testing.assert_allclose(fast.controller._prev, ref.controller._prev, rtol=1e-12, atol=1e-12)
    assert ref.controller.max_observed_j > 0.0 and (not enabled or ref.controller.energy_dissipated_j > 0.0)
    # a bad sample is refused by name and changes nothing
    state, acc = fast.admittance.state, fast.controller._acc.copy()
    with pytest.raises(ValueError, match='wrench'):
        fast.step(np.array([0.0, np.nan, 0, 0, 0, 0]), DT)
    with pytest.raises(ValueError, match='twist_measured'):
        fast.step(np.zeros(6), DT, np.full(6, np.inf))
    assert fast.admittance.state is state
    np.testing.assert_array_equal(fast.controller._acc, acc)


def test_the_client_ports_output_read_late_is_the_one_of_its_latest_step():
    """``ClientPort.out`` after a compiled step is built when read. Read only every fifth step (as the lockstep
    runners record it and the nodes publish it) it is the output of the latest step: that of a port read after
    every step, bit for bit, and that of the readable path (``step_reference``, whose output is made eagerly) to
    1e-12, with the controller damping; after a readable step in between, that step's output."""
    from hil_dynamics.passivity import ClientPort
    rng = np.random.default_rng(31)
    body = RigidBody(800.0, [300.0, 500.0, 650.0])
    twist0 = np.array([0.01, -0.02, 0.0, 0.05, -0.03, 0.08])
    every, late, ref = (ClientPort(ClientAdmittance(body, twist0), 50.0, True) for _ in range(3))
    damped = 0
    for k in range(60):
        f = 40.0 * rng.normal(size=6)
        measured = ref.admittance.state.twist_client_rel_body + 1e-3 * rng.normal(size=6)
        for port in (every, late):
            (port.step_reference if k == 30 else port.step)(f, DT, measured)   # k == 30: the readable path once
        ref.step_reference(f, DT, measured)
        read = every.out
        if k % 5 == 4 or k == 30:
            got, want = late.out, ref.out
            assert got.as_list() == read.as_list(), k
            np.testing.assert_array_equal(got.wrench_pc, read.wrench_pc)
            scale = 1.0 + abs(want.energy_port_j) + abs(want.energy_dissipated_j)
            np.testing.assert_allclose(got.as_list(), want.as_list(), rtol=0.0, atol=1e-12 * scale, err_msg=str(k))
            np.testing.assert_allclose(got.wrench_pc, want.wrench_pc, rtol=0.0, atol=1e-12 * scale)
            assert got is late.out          # built once
            damped += want.rate_per_s > 0.0
    assert damped >= 5
