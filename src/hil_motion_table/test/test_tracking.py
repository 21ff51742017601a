"""Time-aligned tracking error helpers and the sinusoidal test stream."""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_motion_table.kinematics import pose_error
from hil_motion_table.kinematics_helpers import reorder, sinusoid_pose
from hil_motion_table.tracking import PoseHistory, TrackingStats


def test_history_interpolates_along_the_geodesic():
    history = PoseHistory(horizon_s=1.0)
    twist = np.array([0.1, -0.2, 0.05, 0.3, 0.0, -0.1])
    for k in range(11):
        history.add(0.1 * k, pin.exp6(pin.Motion(twist * 0.1 * k)))
    # a constant-twist motion is a geodesic: interpolation between samples is exact
    assert np.linalg.norm(pose_error(history.at(0.537), pin.exp6(pin.Motion(twist * 0.537)))) < 1e-12
    assert history.at(-0.1) is None and history.at(1.01) is None
    history.add(0.5, pin.SE3.Identity())  # out of order: ignored
    assert history.latest == pytest.approx(1.0)
    history.add(2.0, pin.SE3.Identity())  # older than the horizon is dropped
    assert history.at(0.5) is None


def test_tracking_stats():
    stats = TrackingStats()
    for e in (0.003, 0.004, 0.0):
        stats.add(e, 2 * e)
    np.testing.assert_allclose(stats.rms, [math.sqrt(25e-6 / 3), 2 * math.sqrt(25e-6 / 3)])
    np.testing.assert_allclose(stats.max, [0.004, 0.008])
    np.testing.assert_allclose(stats.percentile(50), [0.003, 0.006])


def test_sinusoid_twist_is_the_body_velocity_of_the_pose():
    center = pin.SE3(pin.exp3(np.array([0.1, 0.2, -0.3])), np.array([0.5, 0.0, 0.7]))
    a, f = np.array([0.02, 0.01, 0.03, 0.2, 0.1, 0.3]), np.array([0.5, 0.3, 0.7, 0.4, 0.6, 0.2])
    t, h = 0.83, 1e-6
    pose, twist = sinusoid_pose(t, center, a, f)
    later, _ = sinusoid_pose(t + h, center, a, f)
    earlier, _ = sinusoid_pose(t - h, center, a, f)
    numeric = (pin.log6(pose.actInv(later)).vector - pin.log6(pose.actInv(earlier)).vector) / (2 * h)
    np.testing.assert_allclose(twist, numeric, atol=1e-7)


def test_joint_states_are_reordered_by_name():
    np.testing.assert_array_equal(reorder(['b', 'a'], [2.0, 1.0], ('a', 'b')), [1.0, 2.0])
    assert reorder(['a'], [1.0], ('a', 'b')) is None
    assert reorder(['a', 'b'], [1.0, math.nan], ('a', 'b')) is None


def test_body_motion_maps_to_the_flange_target_and_twist():
    from hil_motion_table.kinematics_helpers import flange_target_from_body_motion, flange_twist_from_body_twist

    home = pin.SE3(pin.exp3(np.array([0.2, -0.1, 0.4])), np.array([0.7, -0.2, 0.9]))
    body_in_flange = pin.SE3(pin.exp3(np.array([0.0, 0.3, 0.0])), np.array([-2.9, 0.1, 0.2]))  # e.g. a far CoM
    twist_body = np.array([0.01, -0.02, 0.005, 0.01, 0.03, -0.02])

    def g(t):
        return pin.exp6(pin.Motion(twist_body * t))

    t, h = 0.7, 1e-6
    flange = flange_target_from_body_motion(home, body_in_flange, g(t))
    # the body, carried by the flange, sits where its initial pose moved by g
    body_in_base = flange * body_in_flange
    assert np.linalg.norm(pose_error(body_in_base, home * body_in_flange * g(t))) < 1e-12
    # and the flange's body twist is Ad_Y V (finite difference of the flange pose)
    later = flange_target_from_body_motion(home, body_in_flange, g(t + h))
    numeric = pin.log6(flange.actInv(later)).vector / h
    np.testing.assert_allclose(flange_twist_from_body_twist(body_in_flange, twist_body), numeric, atol=1e-6)


def test_the_flange_target_of_a_fixed_table_is_the_functions_to_the_bit():
    """FlangeTarget (constant factors once) gives flange_target_from_body_motion's poses exactly."""
    from hil_motion_table.kinematics_helpers import FlangeTarget, flange_target_from_body_motion

    rng = np.random.default_rng(3)
    for _ in range(200):
        home, y = pin.SE3.Random(), pin.SE3.Random()
        home.translation, y.translation = rng.normal(size=3), rng.normal(size=3) * 3.0
        target = FlangeTarget(home, y)
        for _ in range(5):
            g = pin.SE3.Random()
            g.translation = rng.normal(size=3) * 0.1
            want = flange_target_from_body_motion(home, y, g)
            got = target(g)
            assert np.array_equal(got.rotation, want.rotation) and np.array_equal(got.translation, want.translation)


def test_a_joint_stream_is_reordered_as_each_message_names_its_joints():
    """JointOrder keeps the index between messages with the same names, and works it out again when they
    change (another order, a joint missing), with reorder's refusals."""
    from hil_motion_table.kinematics_helpers import JointOrder
    order = JointOrder(('a', 'b', 'c'))
    np.testing.assert_array_equal(order(['c', 'a', 'b'], [3.0, 1.0, 2.0]), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(order(['c', 'a', 'b'], [6.0, 4.0, 5.0]), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(order(['b', 'c', 'a', 'x'], [2.0, 3.0, 1.0, 9.0]), [1.0, 2.0, 3.0])
    assert order(['a', 'b'], [1.0, 2.0]) is None                       # c missing
    np.testing.assert_array_equal(order(['a', 'b', 'c'], [1.0, 2.0, 3.0]), [1.0, 2.0, 3.0])
    assert order(['a', 'b', 'c'], [1.0, 2.0]) is None                  # a value missing
    assert order(['a', 'b', 'c'], [1.0, math.inf, 3.0]) is None
    assert order(['a', 'b', 'c'], [1e308, 1e308, 1e308]) is not None   # finite, though their sum overflows
