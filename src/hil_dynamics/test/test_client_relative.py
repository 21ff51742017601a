"""Client relative dynamics (seed 004 §III-A) against independent absolute references.

* Unforced: Eq. (4) + Eq. (11) mapped by Eq. (23) against the closed-form torque-free
  motion of an axisymmetric body, and against scipy's DOP853 on quaternions (no
  Pinocchio) for a tri-axial body; 600 s at 1 kHz, <= 1e-6 m / rad; energy and angular
  momentum conserved to 1e-9 relative.
* Forced: a wrench applied at a grasp point 2.9 m from the CoM (impulse train, sinusoid,
  constant push fixed in the orbit frame); 60 s at 1 kHz, <= 1e-6 m / rad.
"""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import se3
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.rigid_body import RigidBody

import reference_rigid_body as ref

DT = 1e-3
TOL = 1e-6


def rotation_error(rot_a, rot_b):
    return float(np.linalg.norm(pin.log3(rot_a.T @ rot_b)))


def run_relative(body, twist0, duration, wrench, record_every=1000, pose0=None):
    """Integrate the relative formulation; record (t, g_t, V_t, g_c) by Eq. (23)."""
    rule = ClientAdmittance(body, twist0, pose0)
    n_steps = int(round(duration / DT))
    out = []
    for k in range(n_steps + 1):
        if k % record_every == 0:
            g_t, v_t = rule.absolute()
            out.append((rule.state.t, g_t, v_t, rule.pose_client_in_nominal))
        if k < n_steps:
            rule.step(wrench_for_step(wrench, k), DT)
    return out


def wrench_for_step(wrench, k):
    """A per-step wrench provider: ``('held', fn(k))`` -> constant vector, else pass through."""
    if isinstance(wrench, tuple) and wrench[0] == 'held':
        return wrench[1](k)
    return wrench


def closed_form_axisymmetric(inertia_transverse, inertia_axial, mass, twist0, t):
    """Torque-free axisymmetric body from g(0) = I: R(t) = exp(t Omega_p^) exp(-lambda t e3^).

    Omega_p = I w0 / I_transverse (angular momentum over the transverse inertia, in the
    initial body frame), lambda = (I_axial - I_transverse) / I_transverse * w3 (body-frame
    precession rate). The CoM moves uniformly: p(t) = v0 t (v0 body = orbit at t=0).
    """
    v0, w0 = np.asarray(twist0[:3]), np.asarray(twist0[3:])
    inertia = np.diag([inertia_transverse, inertia_transverse, inertia_axial])
    omega_p = inertia @ w0 / inertia_transverse
    lam = (inertia_axial - inertia_transverse) / inertia_transverse * w0[2]
    rot = pin.exp3(omega_p * t) @ pin.exp3(np.array([0.0, 0.0, -lam * t]))
    return rot, v0 * t


def test_unforced_axisymmetric_matches_closed_form_spin_and_precession():
    body = RigidBody(1200.0, [800.0, 800.0, 1400.0])
    twist0 = np.array([0.02, -0.01, 0.005, 0.03, -0.02, 0.06])
    records = run_relative(body, twist0, 600.0, np.zeros(6), record_every=10_000)
    e0 = body.kinetic_energy(twist0)
    h0 = body.momentum_in_parent(pin.SE3.Identity(), twist0)
    worst_p = worst_r = worst_e = worst_h = 0.0
    for t, g_t, v_t, _ in records:
        rot, p = closed_form_axisymmetric(800.0, 1400.0, 1200.0, twist0, t)
        worst_r = max(worst_r, rotation_error(rot, g_t.rotation))
        worst_p = max(worst_p, np.linalg.norm(p - g_t.translation))
        worst_e = max(worst_e, abs(body.kinetic_energy(v_t) - e0) / e0)
        worst_h = max(worst_h, np.linalg.norm(body.momentum_in_parent(g_t, v_t)[3:] - h0[3:]) / np.linalg.norm(h0[3:]))
    assert records[-1][0] == pytest.approx(600.0)
    # The closed form is not trivial here: the body precesses through many radians.
    assert rotation_error(np.eye(3), closed_form_axisymmetric(800.0, 1400.0, 1200.0, twist0, 600.0)[0]) > 0.5
    assert worst_r <= TOL and worst_p <= TOL, (worst_r, worst_p)
    assert worst_e <= 1e-9 and worst_h <= 1e-9, (worst_e, worst_h)


TRIAXIAL = RigidBody(7828.0, [[17023.0, 350.0, -120.0], [350.0, 124826.0, 800.0], [-120.0, 800.0, 129112.0]])


def test_unforced_triaxial_matches_independent_quaternion_integration():
    twist0 = np.array([0.01, 0.004, -0.02, 0.02, np.deg2rad(-2.5), 0.015])
    records = run_relative(TRIAXIAL, twist0, 600.0, np.zeros(6), record_every=20_000)
    times = np.array([r[0] for r in records])
    rots, pos, v_body, w_body = ref.integrate(7828.0, TRIAXIAL.inertia_com_kgm2, np.eye(3), np.zeros(3),
                                              twist0[:3], twist0[3:], times)
    e0 = TRIAXIAL.kinetic_energy(twist0)
    h0 = TRIAXIAL.momentum_in_parent(pin.SE3.Identity(), twist0)
    for i, (t, g_t, v_t, g_c) in enumerate(records):
        assert rotation_error(rots[i], g_t.rotation) <= TOL, t
        assert np.linalg.norm(pos[i] - g_t.translation) <= TOL, t
        np.testing.assert_allclose(v_t, np.concatenate((v_body[i], w_body[i])), atol=1e-9)
        assert abs(TRIAXIAL.kinetic_energy(v_t) - e0) <= 1e-9 * e0
        assert np.linalg.norm(TRIAXIAL.momentum_in_parent(g_t, v_t) - h0) <= 1e-9 * np.linalg.norm(h0)
        # Unforced, the commanded relative pose stays at the identity (the robot stays put).
        assert np.linalg.norm(g_c.translation) <= TOL and rotation_error(np.eye(3), g_c.rotation) <= TOL


POSE_GRASP_IN_CLIENT = se3.pose(pin.exp3(np.array([0.0, 0.0, 0.3])), [2.9, 0.0, 0.0])


def _grasp_wrench_to_com_numpy(f_grasp, tau_grasp):
    """Same transform as se3.transform_wrench, written out independently for the reference."""
    rot, p = POSE_GRASP_IN_CLIENT.rotation, POSE_GRASP_IN_CLIENT.translation
    f = rot @ f_grasp
    return np.concatenate((f, rot @ tau_grasp + np.cross(p, f)))


def impulse_train(t):
    """20 N along the grasp y axis and 2 N m about its z, for 0.2 s every 5 s (edges on the 1 ms grid)."""
    on = (t % 5.0) < 0.2
    return (np.array([0.0, 20.0, 0.0]) if on else np.zeros(3)), (np.array([0.0, 0.0, 2.0]) if on else np.zeros(3))


def sinusoid(t):
    return (np.array([8.0 * np.sin(0.7 * t), 5.0 * np.cos(0.3 * t), -3.0 * np.sin(1.1 * t + 0.4)]),
            np.array([0.5 * np.cos(0.5 * t), 0.0, 0.8 * np.sin(0.2 * t)]))


F_PUSH_ORBIT = np.array([0.0, 6.0, 10.0])


@pytest.mark.parametrize('profile', ['impulse_train', 'sinusoid', 'constant_push_orbit_fixed'])
def test_forced_relative_matches_absolute_integration_over_60_s(profile):
    twist0 = np.array([0.0, 0.0, 0.0, 0.004, np.deg2rad(-2.5), -0.003])
    duration = 60.0
    if profile == 'impulse_train':
        # A sampled sensor: the wrench is held over each 1 ms step (edges lie on the grid).
        wrench = ('held', lambda k: se3.transform_wrench(POSE_GRASP_IN_CLIENT, np.concatenate(impulse_train((k + 0.5) * DT))))
        ref_wrench = lambda t, rot, p: _grasp_wrench_to_com_numpy(*impulse_train(t))  # noqa: E731
        breaks = [start + edge for start in np.arange(0.0, duration, 5.0) for edge in (0.0, 0.2)]
    elif profile == 'sinusoid':
        wrench = lambda t, pose_client_in_orbit: se3.transform_wrench(POSE_GRASP_IN_CLIENT, np.concatenate(sinusoid(t)))  # noqa: E731
        ref_wrench = lambda t, rot, p: _grasp_wrench_to_com_numpy(*sinusoid(t))  # noqa: E731
        breaks = []
    else:
        # A push of fixed direction in the orbit frame: depends on the client's orbit
        # attitude, so the relative side must use Eq. (23) inside the loop.
        def wrench(t, pose_client_in_orbit):
            rot_grasp_in_orbit = pose_client_in_orbit.rotation @ POSE_GRASP_IN_CLIENT.rotation
            return se3.transform_wrench(POSE_GRASP_IN_CLIENT, np.concatenate((rot_grasp_in_orbit.T @ F_PUSH_ORBIT, np.zeros(3))))

        def ref_wrench(t, rot, p):
            rot_grasp_in_orbit = rot @ POSE_GRASP_IN_CLIENT.rotation
            return _grasp_wrench_to_com_numpy(rot_grasp_in_orbit.T @ F_PUSH_ORBIT, np.zeros(3))
        breaks = []
    records = run_relative(TRIAXIAL, twist0, duration, wrench, record_every=2000)
    times = np.array([r[0] for r in records])
    rots, pos, _, _ = ref.integrate(7828.0, TRIAXIAL.inertia_com_kgm2, np.eye(3), np.zeros(3), twist0[:3], twist0[3:],
                                    times, ref_wrench, breaks)
    moved = max(np.linalg.norm(r[3].translation) for r in records)
    assert moved > 1e-3, 'the wrench must move the commanded relative pose measurably'
    for i, (t, g_t, _, _) in enumerate(records):
        assert np.linalg.norm(pos[i] - g_t.translation) <= TOL, (t, np.linalg.norm(pos[i] - g_t.translation))
        assert rotation_error(rots[i], g_t.rotation) <= TOL, t


def test_step_rejects_bad_inputs():
    rule = ClientAdmittance(TRIAXIAL, np.zeros(6))
    with pytest.raises(ValueError, match='finite'):
        rule.step(np.array([0, 0, np.nan, 0, 0, 0]), DT)
    with pytest.raises(ValueError, match='dt'):
        rule.step(np.zeros(6), 0.0)
    with pytest.raises(ValueError, match='twist_client_body_0'):
        ClientAdmittance(TRIAXIAL, [0, 0, 0, 0, np.inf, 0])
    assert rule.state.t == 0.0  # a rejected step leaves the state untouched


@pytest.mark.parametrize('kind', ['held', 'callable'])
def test_unrolled_client_step_is_the_generic_rkmk4(kind):
    """ClientAdmittance.step writes RKMK4 out by hand for speed: it must equal lie_integrators.rkmk4."""
    from hil_dynamics.lie_integrators import rkmk4

    twist0 = np.array([0.01, -0.02, 0.005, 0.03, np.deg2rad(-2.5), -0.02])
    held = np.array([3.0, -1.0, 2.0, 0.5, -0.2, 0.1])
    wrench = held if kind == 'held' else (lambda t, g: held * np.cos(t) + g.translation.sum() * np.ones(6))
    rule = ClientAdmittance(TRIAXIAL, twist0)
    g_n, g_c = pin.SE3.Identity(), pin.SE3.Identity()
    v_n, v_c = pin.Motion(twist0), pin.Motion.Zero()

    def field(t, poses, vecs):
        w = wrench(t, poses[0] * poses[1]) if callable(wrench) else wrench
        return vecs, rule.accelerations(poses[1], vecs[0], vecs[1], pin.Force(np.asarray(w, dtype=float)))

    t = 0.0
    for _ in range(2000):
        rule.step(wrench, 0.01)
        (g_n, g_c), (v_n, v_c) = rkmk4(t, 0.01, (g_n, g_c), (v_n, v_c), field)
        t += 0.01
    s = rule.state
    assert np.linalg.norm(s.pose_client_in_nominal.translation) > 1e-3  # the wrench did something
    np.testing.assert_allclose(s.pose_client_in_nominal.homogeneous, g_c.homogeneous, atol=1e-13)
    np.testing.assert_allclose(s.pose_nominal_in_orbit.homogeneous, g_n.homogeneous, atol=1e-13)
    np.testing.assert_allclose(s.twist_client_rel_body, v_c.vector, atol=1e-13)
