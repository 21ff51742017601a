"""Slave law Eq. (2)/(3) term by term, and the virtual arm/payload Eqs. (4)-(10)."""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.client import ClientAdmittance
from hil_dynamics.rigid_body import RigidBody
from hil_teleop.coordinates import b_matrix, pose_from_x
from hil_teleop.gains import TeleopGains
from hil_teleop.slave_law import SlaveLaw
from hil_teleop.virtual import VirtualContact, VirtualEnvironment, VirtualPayload

K_S = np.array([1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3])
G = np.array([10.0, 20.0, 30.0, 1.0, 2.0, 3.0])
K_C = np.array([1.0, 2.0, 3.0, 0.5, 0.6, 0.7])
D = np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.3])
F_M = np.array([1.0, -2.0, 0.5, 0.1, 0.2, -0.3])
F_S = np.array([5.0, 1.0, -2.0, 0.3, -0.1, 0.2])
X_S = np.array([1.0, 0.2, 0.5, 0.3, -0.2, 0.9])
X_VIR = np.array([1.01, 0.19, 0.52, 0.31, -0.21, 0.95])


def law(**switches):
    return SlaveLaw(TeleopGains(k_s=K_S, g=G, k_c=K_C, d=D, **switches))


def test_eq3_is_the_sum_of_its_terms():
    s = law()
    s.observe_velocity([0.1] * 6)
    s.observe_velocity([0.3] * 6)          # v(t-dt) = 0.3, v(t-2dt) = 0.1
    cmd = s.command(F_M, X_VIR, X_S, F_S)
    # B(phi) written out for world-axes angular velocity of R = Rz(yaw) Ry(pitch) Rx(roll)
    # (independent of the code's Pinocchio Jacobian): w = E(phi) phi_dot
    _, p, y = X_S[3:]
    e = np.array([[math.cos(y) * math.cos(p), -math.sin(y), 0.0],
                  [math.sin(y) * math.cos(p), math.cos(y), 0.0],
                  [-math.sin(p), 0.0, 1.0]])
    dx = X_VIR - X_S
    coupling = K_C * np.concatenate((dx[:3], e @ dx[3:]))
    expected = K_S * (G * F_M - F_S) + coupling - D * (0.3 - 0.1)
    np.testing.assert_allclose(cmd.v_s_c, expected, rtol=1e-12)
    np.testing.assert_allclose(cmd.v_s_r, K_S * G * F_M)   # Eq. (1)
    assert not cmd.stale


@pytest.mark.parametrize('switch, term', [('force_feedback', 'force_feedback'), ('coupling', 'coupling'),
                                          ('damping', 'damping')])
def test_each_term_switches_off_alone(switch, term):
    on, off = law(), law(**{switch: False})
    for s in (on, off):
        s.observe_velocity([0.1] * 6)
        s.observe_velocity([0.3] * 6)
    c_on, c_off = on.command(F_M, X_VIR, X_S, F_S), off.command(F_M, X_VIR, X_S, F_S)
    assert np.abs(getattr(c_on, term)).min() > 0.0
    np.testing.assert_array_equal(getattr(c_off, term), 0.0)
    np.testing.assert_allclose(c_on.v_s_c - c_off.v_s_c, getattr(c_on, term), atol=1e-15)


def test_scaling_off_means_g_identity_and_stale_means_zero_velocity():
    c = law(scaling=False).command(F_M, X_S, X_S, np.zeros(6))
    np.testing.assert_allclose(c.v_s_c, K_S * F_M)
    c = law().command(None, X_VIR, X_S, F_S)
    assert c.stale and not c.v_s_c.any()
    with pytest.raises(ValueError, match='f_s'):
        law().command(F_M, X_VIR, X_S, [math.nan] * 6)


def test_coupling_rotation_uses_b_not_the_euler_difference():
    s = law(force_feedback=False, damping=False)
    x_s = np.array([0, 0, 0, 0.0, 0.6, 0.0])
    x_vir = x_s + np.array([0, 0, 0, 0.01, 0, 0])        # small roll rate error at pitch 0.6
    cmd = s.command(np.zeros(6), x_vir, x_s, np.zeros(6))
    # roll about the body x axis pitched by 0.6 rad: world axis (cos p, 0, -sin p)
    np.testing.assert_allclose(cmd.coupling[3:], K_C[3:] * 0.01 * np.array([math.cos(0.6), 0, -math.sin(0.6)]),
                               atol=1e-15)


@pytest.mark.parametrize('switches', [{}, {'force_feedback': False}, {'coupling': False}, {'damping': False},
                                      {'scaling': False}])
def test_the_compiled_eq3_is_the_readable_one(switches):
    """``SlaveLaw.command`` (one compiled call, ``virtual_kernel.slave_command``) against ``command_reference``
    (``b_matrix``, ``position_difference``, NumPy) on random states whose angle differences cross +-pi: every term
    to 1e-12 of its size; a non-finite input takes the reference, which names it; a list input the reference."""
    rng = np.random.default_rng(31)
    s = law(**switches)
    for _ in range(300):
        s.observe_velocity(rng.normal(0.0, 0.1, 6))
        x_s = np.concatenate((rng.normal(0.0, 1.0, 3), rng.uniform(-math.pi, math.pi, 3) * [1.0, 0.45, 1.0]))
        x_vir = x_s + np.concatenate((rng.normal(0.0, 0.05, 3), rng.normal(0.0, 0.05, 3)))
        x_vir[3:] = np.pi - np.mod(np.pi - x_vir[3:], 2.0 * np.pi)      # wrapped: the difference may jump by 2 pi
        f_m, f_s = rng.normal(0.0, 50.0, 6), rng.normal(0.0, 20.0, 6)
        got, want = s.command(f_m, x_vir, x_s, f_s), s.command_reference(f_m, x_vir, x_s, f_s)
        for term in ('v_s_c', 'v_s_r', 'force_feedback', 'coupling', 'damping'):
            a, b = getattr(got, term), getattr(want, term)
            assert np.abs(a - b).max() <= 1e-12 * max(1e-3, np.abs(b).max()), term
        assert not got.stale
    assert np.abs(want.v_s_c).max() > 1e-3
    with pytest.raises(ValueError, match='x_vir'):
        s.command(f_m, np.full(6, math.nan), x_s, f_s)
    listed = s.command(list(f_m), list(x_vir), list(x_s), list(f_s))
    np.testing.assert_array_equal(listed.v_s_c, want.v_s_c)


INERTIA = np.array([[900.0, 50.0, -30.0], [50.0, 1200.0, 80.0], [-30.0, 80.0, 1500.0]])


def test_virtual_payload_follows_the_rigid_body_integrated_independently_on_se3():
    """Eqs. (8)-(10) with the full 6x6 M against ClientAdmittance (RKMK4, body frame, seed 004 Eq. 11)."""
    m = 2000.0
    dt, n = 1e-3, 4000
    x0 = np.array([0.5, -0.2, 1.0, 0.1, -0.2, 0.3])
    virt = VirtualPayload(m, INERTIA, x0=x0)
    ref = ClientAdmittance(RigidBody(m, INERTIA), np.zeros(6))
    g0 = pose_from_x(x0)

    def wrench_world(t):
        return np.array([30.0 * math.cos(t), 10.0, -5.0, 40.0, -25.0 * math.sin(2 * t), 15.0]) * (t < 2.0)

    for k in range(n):
        t = k * dt
        w = wrench_world(t + 0.5 * dt)
        virt.step(w, dt)
        r = (g0 * ref.state.pose_client_in_nominal).rotation
        ref.step(np.concatenate((r.T @ w[:3], r.T @ w[3:])), dt)   # world axes -> body axes, about the CoM
    g_ref = g0 * ref.state.pose_client_in_nominal
    g_vir = pose_from_x(virt.x)
    assert np.linalg.norm(g_vir.translation - g_ref.translation) < 1e-3 * np.linalg.norm(g_ref.translation - x0[:3])
    assert np.linalg.norm(pin.log3(g_vir.rotation @ g_ref.rotation.T)) < 2e-3
    # Angular momentum of the torque-free phase is conserved (world axes, about the CoM).
    l_ref = g_ref.rotation @ (INERTIA @ ref.state.twist_client_rel_body[3:])
    np.testing.assert_allclose(virt.momentum_world()[3:], l_ref, rtol=5e-3)
    # The full tensor matters: the angular acceleration is not along the torque.
    acc = VirtualPayload(m, INERTIA).acceleration([0, 0, 0, 1.0, 0, 0])
    assert abs(acc[4]) > 1e-3 * abs(acc[3])


def test_virtual_arm_pulls_the_payload_to_the_reference_velocity_with_momentum_m_v():
    gains = TeleopGains()
    m = 1000.0
    payload = VirtualPayload(m, [800.0, 900.0, 1000.0])
    env = VirtualEnvironment(gains, payload, VirtualContact([2e4] * 3 + [2e3] * 3, [2e2] * 3 + [2e1] * 3), dt=2e-3)
    v_r = 0.01
    f_m = np.array([v_r / (gains.k_s[0] * gains.g[0]), 0, 0, 0, 0, 0])
    impulse = np.zeros(6)
    for _ in range(10000):
        s = env.step(f_m)
        impulse += s.f_vir * env.dt
    assert s.v_t[0] == pytest.approx(v_r, rel=1e-3) and s.v_vir[0] == pytest.approx(v_r, rel=1e-3)
    # Eq. (9) is exact for the linear momentum: m v_t = sum f_vir dt
    assert payload.momentum_world()[0] == pytest.approx(impulse[0], rel=1e-12)
    assert impulse[0] == pytest.approx(m * v_r, rel=1e-3)
    np.testing.assert_allclose(s.x_t[1:], 0.0, atol=1e-12)
