"""B(phi) of seed 001 against an independent numerical derivative of the rotation."""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_teleop.coordinates import (b_inverse, b_matrix, body_twist, integrate_position, pose_from_x,
                                    position_difference, world_velocity, wrap_angles, x_from_pose)


def rot(phi):
    """Rz(yaw) Ry(pitch) Rx(roll), written out independently of pinocchio."""
    r, p, y = phi
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def vee(s):
    return np.array([s[2, 1], s[0, 2], s[1, 0]])


@pytest.mark.parametrize('seed', range(6))
def test_b_maps_euler_rates_to_the_world_angular_velocity_of_the_rotation(seed):
    rng = np.random.default_rng(seed)
    phi = rng.uniform([-3, -1.4, -3], [3, 1.4, 3])
    phi_dot = rng.normal(size=3)
    h = 1e-6
    r_dot = (rot(phi + h * phi_dot) - rot(phi - h * phi_dot)) / (2 * h)
    omega_world = vee(r_dot @ rot(phi).T)          # R_dot R^T = [omega]x (world frame)
    x_dot = np.concatenate((rng.normal(size=3), phi_dot))
    v = b_matrix(phi) @ x_dot
    np.testing.assert_allclose(v[:3], x_dot[:3], rtol=0, atol=1e-15)
    np.testing.assert_allclose(v[3:], omega_world, rtol=0, atol=1e-7)
    np.testing.assert_allclose(b_inverse(phi) @ v, x_dot, atol=1e-9)
    # B is not the identity away from phi = 0
    assert np.abs(b_matrix(phi)[3:, 3:] - np.eye(3)).max() > 1e-2


def test_b_inverse_refuses_gimbal_lock():
    with pytest.raises(ValueError, match='gimbal lock'):
        b_inverse([0.1, math.pi / 2, 0.3])


def test_integrating_a_constant_angular_velocity_through_b_inverse_follows_the_exponential():
    phi0 = np.array([0.3, -0.4, 1.0])
    omega = np.array([0.2, -0.1, 0.3])
    x = np.concatenate(([0.0, 0.0, 0.0], phi0))
    dt, n = 1e-4, 10000
    for _ in range(n):
        x = integrate_position(x, np.concatenate(([0.1, 0, 0], omega)), dt)
    expected = pin.exp3(omega * n * dt) @ rot(phi0)
    angle_err = np.linalg.norm(pin.log3(rot(x[3:]) @ expected.T))
    assert angle_err < 1e-4
    assert abs(x[0] - 0.1) < 1e-12


def test_differences_wrap_and_poses_round_trip():
    d = position_difference([0, 0, 0, math.pi - 0.1, 0, 0], [0, 0, 0, -math.pi + 0.1, 0, 0])
    assert d[3] == pytest.approx(-0.2)
    np.testing.assert_allclose(wrap_angles([3 * math.pi, -3 * math.pi + 0.1]), [math.pi, -math.pi + 0.1])
    x = np.array([1.0, 2.0, 3.0, 0.2, -0.3, 2.5])
    np.testing.assert_allclose(rot(x[3:]), pose_from_x(x).rotation, atol=1e-14)
    np.testing.assert_allclose(x_from_pose(pose_from_x(x)), x, atol=1e-12)
    v = np.array([0.1, 0.2, 0.3, -0.4, 0.5, 0.6])
    np.testing.assert_allclose(world_velocity(pose_from_x(x), body_twist(pose_from_x(x), v)), v, atol=1e-15)
