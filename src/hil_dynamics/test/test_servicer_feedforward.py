"""Seed 004 Eq. (21)/(22), issue item 3: with the torques of Eq. (22), a real arm on ground
(its base following the commanded g_s, in gravity) has exactly the joint accelerations of
the arm in orbit; without any one of tau_ff1, tau_ff2, tau_ff3 or G it does not."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import se3
from hil_dynamics.servicer import (ArmFeedForward, ServicerAdmittance, ServicerModel, delta_twist,
                                   delta_twist_rate)
from hil_dynamics.servicer_lockstep import GroundArmOnMovingBase

from reference_servicer import AbsoluteServicer
from servicer_scenarios import ARMS, CLIENT, POSE_NOMINAL_IN_LAB

SWITCHES = ('use_ff1', 'use_ff2', 'use_ff3', 'use_gravity')


def _random_instant(rng, n):
    """A random in-orbit instant: nominal, g_s, V_s, arm state and inputs."""
    g_n = se3.pose(pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3)), rng.normal(0, 5, 3))
    g_s = se3.pose(pin.rpy.rpyToMatrix(*rng.uniform(-1, 1, 3)), rng.normal(0, 3, 3))
    twist_n = np.concatenate((rng.normal(0, 0.05, 3), rng.normal(0, 0.05, 3)))
    twist_s = np.concatenate((rng.normal(0, 0.05, 3), rng.normal(0, 0.05, 3)))
    return (g_n, g_s, twist_n, twist_s, rng.uniform(-2, 2, n), rng.normal(0, 0.2, n), rng.normal(0, 5, 6),
            rng.normal(0, 2, n), rng.normal(0, 1, 6))


def _matching_error(arm, rng, **switches):
    """max |ddq_ground - ddq_orbit| / max |ddq_orbit| at one random instant."""
    urdf_fn, ee, _ = ARMS[arm]
    urdf = urdf_fn()
    model = ServicerModel(urdf, ee)
    g_n, g_s, twist_n, twist_s, q, dq, f_b, tau, f_e = _random_instant(rng, model.n)
    twist_b = twist_s + delta_twist(g_s, twist_n)
    # In orbit: Eq. (12) by ABA (independent reference).
    ref = AbsoluteServicer(urdf, ee, g_n * g_s, twist_b, q, dq)
    acc_orbit = ref.acceleration(0.0, g_n * g_s, ref.x, lambda t: f_b, lambda t, *_: tau, lambda t: f_e)
    ddq_orbit = acc_orbit[6:]
    # The admittance (Eq. 18) with the arm's accelerations gives the commanded base acceleration.
    adm = ServicerAdmittance(model, CLIENT, twist_n, g_n, g_s, twist_s)
    vs_dot = adm.base_acceleration(q, dq, ddq_orbit, f_b, f_e)
    vn_dot = adm.nominal_acceleration(twist_n)
    np.testing.assert_allclose(vs_dot + delta_twist_rate(g_s, twist_s, twist_n, vn_dot), acc_orbit[:6],
                               rtol=1e-9, atol=1e-9 * np.abs(acc_orbit[:6]).max())        # Eq. (15)
    # On ground: the real arm under Eq. (22), base moving with (g_s, V_s, V_s_dot) in the lab, gravity.
    ff = ArmFeedForward(model, POSE_NOMINAL_IN_LAB, **switches)
    torques = ff.torques(tau, q, dq, g_s, twist_s, twist_n, vn_dot)
    ground = GroundArmOnMovingBase(urdf, ee)
    ddq_ground = ground.joint_acceleration(POSE_NOMINAL_IN_LAB * g_s, twist_s, vs_dot, q, dq, torques.tau_q, f_e)
    return float(np.abs(ddq_ground - ddq_orbit).max() / np.abs(ddq_orbit).max()), torques


@pytest.mark.parametrize('arm', sorted(ARMS))
def test_eq22_gives_the_orbit_joint_accelerations_on_ground(arm):
    rng = np.random.default_rng(5)
    for _ in range(20):
        err, torques = _matching_error(arm, rng)
        assert err < 1e-9
        # Every term is active in these states (else dropping it could not be detected).
        for term in (torques.tau_ff1, torques.tau_ff2, torques.tau_ff3, torques.gravity):
            assert np.abs(term).max() > 1e-6 * np.abs(torques.tau_q).max()


@pytest.mark.parametrize('arm', sorted(ARMS))
@pytest.mark.parametrize('switch', SWITCHES)
def test_dropping_one_term_breaks_the_matching(arm, switch):
    rng = np.random.default_rng(5)
    errors = [_matching_error(arm, rng, **{switch: False})[0] for _ in range(5)]
    assert min(errors) > 1e-6, errors


def test_feedforward_terms_vanish_without_a_nominal_motion():
    """With V_n = 0 the hardware and the orbit base coincide (V_s = V_b): tau_ff1..3 = 0."""
    urdf_fn, ee, _ = ARMS['lbr']
    model = ServicerModel(urdf_fn(), ee)
    rng = np.random.default_rng(2)
    g_s = se3.pose(pin.rpy.rpyToMatrix(0.2, 0.1, -0.3), [1, 2, 3])
    torques = ArmFeedForward(model).torques(np.ones(7), rng.uniform(-1, 1, 7), rng.normal(0, 0.2, 7), g_s,
                                            rng.normal(0, 0.1, 6), np.zeros(6), np.zeros(6))
    for term in (torques.tau_ff1, torques.tau_ff2, torques.tau_ff3):
        np.testing.assert_allclose(term, 0.0, atol=1e-12)
    np.testing.assert_allclose(torques.tau_q, 1.0 - torques.gravity, atol=1e-12)


def test_gravity_compensation_holds_the_arm_still_in_the_lab():
    """G of Eq. (20) against an independent static balance: with tau_q = -G and a resting
    base the ground arm does not accelerate, whatever the base orientation in the lab."""
    urdf_fn, ee, _ = ARMS['lbr']
    urdf = urdf_fn()
    model = ServicerModel(urdf, ee)
    ff = ArmFeedForward(model, POSE_NOMINAL_IN_LAB)
    ground = GroundArmOnMovingBase(urdf, ee)
    rng = np.random.default_rng(9)
    for _ in range(5):
        q = rng.uniform(-2, 2, 7)
        g_s = se3.pose(pin.rpy.rpyToMatrix(*rng.uniform(-2, 2, 3)), rng.normal(0, 1, 3))
        gravity = ff.gravity_torque(g_s, q)
        assert np.abs(gravity).max() > 1.0
        ddq = ground.joint_acceleration(POSE_NOMINAL_IN_LAB * g_s, np.zeros(6), np.zeros(6), q, np.zeros(7), -gravity,
                                        np.zeros(6))
        np.testing.assert_allclose(ddq, 0.0, atol=1e-9)
    with pytest.raises(ValueError, match='gravity_m_s2'):
        ArmFeedForward(model, gravity_m_s2=float('nan'))
    with pytest.raises(ValueError, match='tau_obsw'):
        ff.torques([0.0, np.nan, 0, 0, 0, 0, 0], q, np.zeros(7), g_s, np.zeros(6), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match='dq_arm'):
        ff.torques(np.zeros(7), q, np.zeros(6), g_s, np.zeros(6), np.zeros(6), np.zeros(6))


@pytest.mark.parametrize('arm', sorted(ARMS))
def test_each_term_is_its_eq22_definition(arm):
    """tau_ff1 = M_bq^T (V_s_dot - V_b_dot) with both accelerations actually simulated (ABA in
    orbit, Eq. 18 on ground); tau_ff2, tau_ff3 from the Eq. (12) blocks at V_s and at V_b."""
    urdf_fn, ee, _ = ARMS[arm]
    urdf = urdf_fn()
    model = ServicerModel(urdf, ee)
    rng = np.random.default_rng(21)
    g_n, g_s, twist_n, twist_s, q, dq, f_b, tau, f_e = _random_instant(rng, model.n)
    twist_b = twist_s + delta_twist(g_s, twist_n)
    ref = AbsoluteServicer(urdf, ee, g_n * g_s, twist_b, q, dq)
    acc_orbit = ref.acceleration(0.0, g_n * g_s, ref.x, lambda t: f_b, lambda t, *_: tau, lambda t: f_e)
    adm = ServicerAdmittance(model, CLIENT, twist_n, g_n, g_s, twist_s)
    vs_dot = adm.base_acceleration(q, dq, acc_orbit[6:], f_b, f_e)
    torques = ArmFeedForward(model, POSE_NOMINAL_IN_LAB).torques(tau, q, dq, g_s, twist_s, twist_n,
                                                                 adm.nominal_acceleration(twist_n))
    at_s = model.terms(q, twist_s, dq)
    at_b = model.terms(q, twist_b, dq)
    scale = np.abs(torques.tau_q).max()
    np.testing.assert_allclose(torques.tau_ff1, at_b.M_bq.T @ (vs_dot - acc_orbit[:6]), atol=1e-9 * scale)
    np.testing.assert_allclose(torques.tau_ff2, (at_s.C_q - at_b.C_q) @ dq, atol=1e-12 * scale)
    np.testing.assert_allclose(torques.tau_ff3, at_s.C_qb @ twist_s - at_b.C_qb @ twist_b, atol=1e-12 * scale)
    np.testing.assert_allclose(torques.tau_q, tau - torques.gravity + torques.tau_ff1 + torques.tau_ff2
                               + torques.tau_ff3, atol=1e-12 * scale)
