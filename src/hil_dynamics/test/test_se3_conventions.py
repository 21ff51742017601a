"""The stack's SE(3) conventions (hil_dynamics.se3) checked against seed 004 and independent math."""

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm

from hil_dynamics import se3

RNG = np.random.default_rng(4)


def random_pose():
    q = RNG.normal(size=4)
    return se3.pose_from_quaternion(q / np.linalg.norm(q), RNG.normal(size=3))


def skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def test_adjoint_is_seed_004_footnote_1_with_linear_first():
    g = random_pose()
    rot, p = g.rotation, g.translation
    expected = np.block([[rot, skew(p) @ rot], [np.zeros((3, 3)), rot]])
    np.testing.assert_allclose(se3.adjoint(g), expected, atol=1e-14)
    twist = RNG.normal(size=6)
    np.testing.assert_allclose(se3.adjoint_apply(g, twist), expected @ twist, atol=1e-13)
    np.testing.assert_allclose(se3.adjoint_inverse_apply(g, twist), np.linalg.solve(expected, twist), atol=1e-12)


def test_hat_and_exp6_match_the_matrix_exponential_of_eq_1():
    twist = RNG.normal(size=6)
    hat = se3.hat(twist)
    np.testing.assert_allclose(hat[:3, :3], skew(twist[3:]))
    np.testing.assert_allclose(hat[:3, 3], twist[:3])
    np.testing.assert_allclose(se3.exp6(twist).homogeneous, expm(hat), atol=1e-12)
    np.testing.assert_allclose(se3.log6(se3.exp6(0.3 * twist)), 0.3 * twist, atol=1e-12)


def test_body_twist_convention_g_dot_equals_g_hat_v():
    """A pose advanced by exp6(h V) has finite-difference body twist V (g^-1 g_dot = V^)."""
    g = random_pose()
    twist = RNG.normal(size=6)
    h = 1e-6
    g_dot = ((g * se3.exp6(h * twist)).homogeneous - (g * se3.exp6(-h * twist)).homogeneous) / (2 * h)
    np.testing.assert_allclose(np.linalg.inv(g.homogeneous) @ g_dot, se3.hat(twist), atol=1e-8)


def test_conjugation_identity_of_eq_5():
    """g^-1 V^ g = (Ad_{g^-1} V)^ (seed 004, between Eqs. 5 and 6)."""
    g = random_pose()
    twist = RNG.normal(size=6)
    lhs = np.linalg.inv(g.homogeneous) @ se3.hat(twist) @ g.homogeneous
    np.testing.assert_allclose(lhs, se3.hat(se3.adjoint_inverse_apply(g, twist)), atol=1e-12)


def test_wrench_transform_preserves_power_and_moves_torque_by_lever_arm():
    pose_sensor_in_com = random_pose()
    wrench_sensor = RNG.normal(size=6)
    wrench_com = se3.transform_wrench(pose_sensor_in_com, wrench_sensor)
    # Independent statement: force rotates, torque = R tau + p x (R f).
    rot, p = pose_sensor_in_com.rotation, pose_sensor_in_com.translation
    np.testing.assert_allclose(wrench_com[:3], rot @ wrench_sensor[:3], atol=1e-13)
    np.testing.assert_allclose(wrench_com[3:], rot @ wrench_sensor[3:] + np.cross(p, rot @ wrench_sensor[:3]), atol=1e-13)
    # Power is frame independent: V_com . F_com == V_sensor . F_sensor with V_com = Ad V_sensor.
    twist_sensor = RNG.normal(size=6)
    twist_com = se3.adjoint_apply(pose_sensor_in_com, twist_sensor)
    assert twist_com @ wrench_com == pytest.approx(twist_sensor @ wrench_sensor, rel=1e-12)


def test_bracket_matches_matrix_commutator_and_derivative_of_adjoint_inverse():
    a, b = RNG.normal(size=6), RNG.normal(size=6)
    commutator = se3.hat(a) @ se3.hat(b) - se3.hat(b) @ se3.hat(a)
    np.testing.assert_allclose(se3.hat(se3.bracket(a, b)), commutator, atol=1e-12)
    # d/dt Ad_{g^-1} Y = -[V, Ad_{g^-1} Y] for g_dot = g V^ (used for Delta V_c_dot).
    g, twist, y = random_pose(), RNG.normal(size=6), RNG.normal(size=6)
    h = 1e-6
    fd = (se3.adjoint_inverse_apply(g * se3.exp6(h * twist), y) - se3.adjoint_inverse_apply(g * se3.exp6(-h * twist), y)) / (2 * h)
    np.testing.assert_allclose(fd, -se3.bracket(twist, se3.adjoint_inverse_apply(g, y)), atol=1e-7)


def test_dexp_inv_right_is_accurate_to_third_order():
    """u_dot = J_r(u)^-1 V: compare with Pinocchio's exact Jexp6 (independent closed form)."""
    twist = RNG.normal(size=6)
    for scale in (1e-1, 1e-2):
        u = scale * RNG.normal(size=6)
        exact = np.linalg.solve(pin.Jexp6(pin.Motion(u)), twist)
        err = np.linalg.norm(se3.dexp_inv_right(u, twist) - exact)
        assert err < 10 * scale ** 4 * np.linalg.norm(twist)


def test_quaternion_round_trip_ros_order():
    g = random_pose()
    q = se3.quaternion_xyzw(g)
    assert q[3] >= 0
    np.testing.assert_allclose(se3.pose_from_quaternion(q, g.translation).homogeneous, g.homogeneous, atol=1e-12)
    with pytest.raises(ValueError, match='quaternion'):
        se3.pose_from_quaternion([0, 0, 0, 0])


def test_cross3_is_numpy_cross_to_the_bit():
    from hil_dynamics.se3 import cross3

    rng = np.random.default_rng(7)
    for _ in range(1000):
        a, b = rng.normal(size=3) * 10.0 ** rng.integers(-6, 6), rng.normal(size=3)
        assert np.array_equal(cross3(a, b), np.cross(a, b))


def test_the_wrench_transform_matrix_is_the_transform():
    """The hot path's constant sensor-to-CoM map as a 6x6 matrix gives transform_wrench's wrench."""
    for _ in range(20):
        pose_sensor_in_com, wrench_sensor = random_pose(), RNG.normal(size=6)
        np.testing.assert_allclose(se3.wrench_transform_matrix(pose_sensor_in_com) @ wrench_sensor,
                                   se3.transform_wrench(pose_sensor_in_com, wrench_sensor), rtol=0.0, atol=1e-13)
