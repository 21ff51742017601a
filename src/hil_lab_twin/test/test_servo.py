"""Command checks, trajectory interpolation, delay line and servo filter against closed forms."""

import math

import numpy as np
import pytest

from hil_lab_twin.servo import (CommandRejected, DelayLine, FirstOrderServo, TrajectoryFollower, validate_command,
                                validate_trajectory)


def test_forward_commands_of_wrong_length_or_non_finite_are_rejected():
    np.testing.assert_array_equal(validate_command([1, 2, 3], 3), [1.0, 2.0, 3.0])
    for bad in ([1, 2], [1, 2, 3, 4], [1, math.nan, 3], [1, math.inf, 3], ['a', 2, 3]):
        with pytest.raises(CommandRejected):
            validate_command(bad, 3)


def test_float64_commands_are_checked_like_any_other():
    """The runners' float64 vectors take validate_command's short path: the same verdicts."""
    for bad in ([1.0, math.nan, 3.0], [math.inf, 2.0, 3.0], [-math.inf, 2.0, 3.0], [math.inf, -math.inf, 3.0],
                [1.0, 2.0], [1.0, 2.0, 3.0, 4.0]):
        with pytest.raises(CommandRejected):
            validate_command(np.array(bad), 3)
    big = np.array([1e308, 1e308, -1e308])            # finite, though their sum overflows: accepted
    np.testing.assert_array_equal(validate_command(big, 3), big)
    np.testing.assert_array_equal(validate_command(np.array([1.0, 2.0, 3.0]), 3), [1.0, 2.0, 3.0])


def test_trajectories_are_reordered_and_checked():
    names = ('a', 'b', 'c')
    points = validate_trajectory(['c', 'a', 'b'], [(0.5, [3, 1, 2])], names)
    np.testing.assert_array_equal(points[0].positions, [1, 2, 3])
    for joint_names, pts in ((['a', 'b'], [(0.5, [1, 2])]),              # missing joint
                             (['a', 'b', 'x'], [(0.5, [1, 2, 3])]),       # unknown joint
                             (['a', 'b', 'c'], []),                       # no points
                             (['a', 'b', 'c'], [(0.5, [1, 2, 3]), (0.5, [1, 2, 3])]),  # time not increasing
                             (['a', 'b', 'c'], [(0.5, [1, math.nan, 3])])):
        with pytest.raises(CommandRejected):
            validate_trajectory(joint_names, pts, names)


def test_trajectory_follower_interpolates_linearly_from_the_start_reference():
    follower = TrajectoryFollower([0.0, 0.0])
    points = validate_trajectory(['j1', 'j2'], [(0.1, [1.0, -1.0]), (0.3, [2.0, 1.0])], ('j1', 'j2'))
    follower.start(10.0, [0.0, 0.0], points)
    np.testing.assert_allclose(follower.sample(10.05), [0.5, -0.5], atol=1e-12)
    np.testing.assert_allclose(follower.sample(10.2), [1.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(follower.sample(11.0), [2.0, 1.0])
    np.testing.assert_allclose(follower.sample(12.0), [2.0, 1.0])  # holds the last point


def test_delay_line_releases_items_after_the_delay_in_order():
    line = DelayLine(0.004)
    line.push(1.0, 'a')
    line.push(1.0, 'b')
    assert line.pop_due(1.003) == []
    assert line.pop_due(1.004) == ['a', 'b']
    with pytest.raises(ValueError):
        DelayLine(-1.0)


def test_first_order_servo_matches_the_exponential_step_response():
    dt, fc = 0.001, 10.0
    servo = FirstOrderServo([0.0], fc, dt)
    for k in range(1, 101):
        servo.update(np.array([1.0]))
        assert servo.position[0] == pytest.approx(1.0 - math.exp(-2 * math.pi * fc * k * dt), abs=1e-12)
