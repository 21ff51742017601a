"""Seed 004 Eq. (2): the rigid body, its Coriolis matrix and the passivity property."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.rigid_body import RigidBody

RNG = np.random.default_rng(2)
BODY = RigidBody(7828.0, [[17023.0, 120.0, -40.0], [120.0, 124826.0, 300.0], [-40.0, 300.0, 129112.0]])


def test_coriolis_wrench_is_euler_newton_in_body_frame():
    twist = RNG.normal(size=6)
    v, w = twist[:3], twist[3:]
    expected = np.concatenate((BODY.mass_kg * np.cross(w, v), np.cross(w, BODY.inertia_com_kgm2 @ w)))
    np.testing.assert_allclose(BODY.coriolis_wrench(twist), expected, rtol=1e-12)
    np.testing.assert_allclose(BODY.coriolis_matrix(twist) @ twist, expected, rtol=1e-12)


def test_coriolis_matches_pinocchio_free_flyer_nonlinear_effects():
    """Independent implementation: RNEA of a one-body free-flyer model with no gravity."""
    model = pin.Model()
    joint = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), 'client')
    model.appendBodyToJoint(joint, BODY.inertia, pin.SE3.Identity())
    model.gravity.setZero()
    data = model.createData()
    q = pin.randomConfiguration(model, -np.ones(7), np.ones(7))
    twist = RNG.normal(size=6)
    np.testing.assert_allclose(pin.nonLinearEffects(model, data, q, twist), BODY.coriolis_wrench(twist), rtol=1e-10)
    np.testing.assert_allclose(pin.crba(model, data, q), BODY.mass_matrix, rtol=1e-12)


def test_passivity_property_v_transpose_mdot_minus_2c_v_is_zero():
    """V^T (M_dot - 2 C) V = 0 (seed 004 §IV-A); M_dot = 0 in body coordinates."""
    for _ in range(20):
        twist = RNG.normal(size=6) * 10
        c = BODY.coriolis_matrix(twist)
        assert abs(twist @ (0.0 * BODY.mass_matrix - 2.0 * c) @ twist) < 1e-9 * np.abs(c).max() * (twist @ twist)
        # The factorisation is skew-symmetric, which implies the property for every vector.
        np.testing.assert_allclose(c, -c.T, atol=0)


def test_kinetic_energy_rate_equals_power_of_the_wrench():
    twist, wrench = RNG.normal(size=6), RNG.normal(size=6) * 100
    acc = BODY.acceleration(twist, wrench)
    # d/dt (1/2 V^T M V) = V^T M V_dot = V^T (F - C V) = V^T F
    assert twist @ BODY.mass_matrix @ acc == pytest.approx(twist @ wrench, rel=1e-10)


@pytest.mark.parametrize('mass, inertia, match', [
    (0.0, [1, 1, 1], 'mass_kg'),
    (float('nan'), [1, 1, 1], 'mass_kg'),
    (1.0, [1, 1], 'inertia_com_kgm2'),
    (1.0, [1, -1, 1], 'positive definite'),
    (1.0, [1, 1, 5], 'triangle inequality'),
    (1.0, [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]], 'symmetric'),
])
def test_bad_mass_properties_are_rejected_with_a_clear_message(mass, inertia, match):
    with pytest.raises(ValueError, match=match):
        RigidBody(mass, inertia)
