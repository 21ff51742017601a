"""Motion-table rule: limits clamp and report, faults hold the last safe command (no jump)."""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_motion_table.kinematics import SerialKinematics, pose_error
from hil_motion_table.robot_models import ur10e_spec
from hil_motion_table.table import MotionTable, TableLimits, tracking_error

DT = 0.004
BIG_BOX = TableLimits(workspace_min=(-3.0, -3.0, -3.0), workspace_max=(3.0, 3.0, 3.0),
                      max_linear_speed=10.0, max_angular_speed=10.0)


def make_table(kin, limits=BIG_BOX, **kw):
    table = MotionTable(kin, limits, period=DT, **kw)
    table.initialize(kin.q_home)
    return table


def assert_no_jump(kin, q_before, q_after):
    assert np.all(np.abs(q_after - q_before) <= kin.qd_max * DT * (1 + 1e-9))


def test_small_motions_are_tracked_exactly(ur10e):
    table = make_table(ur10e)
    home = ur10e.forward(ur10e.q_home)
    for k in range(50):
        t = k * DT
        target = home * pin.exp6(pin.Motion(np.array([0.01 * math.sin(t), 0.0, 0.005 * t, 0.0, 0.01 * t, 0.0])))
        out = table.step(target, q_measured=table.q_command, t=t)
        assert not out.faults and not out.clamps
        assert np.linalg.norm(pose_error(ur10e.forward(out.q_command), target)) < 1e-9


def test_workspace_exit_holds_and_latches_until_reset(ur10e):
    home = ur10e.forward(ur10e.q_home)
    limits = TableLimits(workspace_min=tuple(home.translation - 0.05), workspace_max=tuple(home.translation + 0.05),
                         max_linear_speed=0.5, max_angular_speed=1.0)
    table = make_table(ur10e, limits)
    held = None
    for k in range(100):  # moves +x at 0.5 m/s: leaves the 5 cm box after ~25 steps
        target = pin.SE3(home.rotation, home.translation + np.array([0.002 * k, 0.0, 0.0]))
        previous = table.q_command
        out = table.step(target, q_measured=previous, t=k * DT)
        assert_no_jump(ur10e, previous, out.q_command)
        if out.faults:
            held = out.q_command
            assert out.faults == ('workspace_exit',) and out.holding
            np.testing.assert_array_equal(out.q_command, previous)
            break
    assert held is not None
    assert ur10e.forward(held).translation[0] <= limits.workspace_max[0] + 1e-12
    # latched: even a valid command keeps holding until reset
    out = table.step(home, q_measured=held, t=1.0)
    assert out.holding and 'workspace_exit' in table.latched_faults
    np.testing.assert_array_equal(out.q_command, held)
    table.reset()
    out = table.step(home, q_measured=held, t=1.0 + DT)
    assert not out.holding
    assert_no_jump(ur10e, held, out.q_command)


def test_joint_limit_hit_holds(ur10e):
    spec = ur10e_spec()
    narrow = SerialKinematics(spec)
    narrow.q_max = narrow.q_max.copy()
    narrow.q_max[0] = 0.1  # base joint may not pass 0.1 rad
    table = make_table(narrow, TableLimits(workspace_min=(-3,) * 3, workspace_max=(3,) * 3,
                                           max_linear_speed=1.0, max_angular_speed=1.0))
    faults = []
    for k in range(200):
        q_goal = narrow.q_home.copy()
        q_goal[0] = 0.002 * k
        previous = table.q_command
        out = table.step(narrow.forward(q_goal), q_measured=previous, t=k * DT)
        assert_no_jump(narrow, previous, out.q_command)
        if out.faults:
            faults.append(out.faults)
            np.testing.assert_array_equal(out.q_command, previous)
    assert faults and faults[0] == ('joint_limit',)
    assert table.q_command[0] <= 0.1


def test_approaching_the_wrist_singularity_holds_before_it(ur10e):
    table = make_table(ur10e, TableLimits(workspace_min=(-3,) * 3, workspace_max=(3,) * 3, sigma_min=0.02))
    q_goal = ur10e.q_home.copy()
    fault = None
    for k in range(1000):  # wrist 2 from -pi/2 towards 0 (singular) at 0.5 rad/s
        q_goal[4] = min(0.0, -math.pi / 2 + 0.002 * k)
        previous = table.q_command
        out = table.step(ur10e.forward(q_goal), q_measured=previous, t=k * DT)
        assert_no_jump(ur10e, previous, out.q_command)
        if out.faults:
            fault = out
            break
    assert fault is not None and fault.faults == ('singular',)
    assert fault.sigma_min < 0.02
    assert ur10e.sigma_min(fault.q_command) >= 0.02  # the held command is a safe one


def test_unreachable_pose_holds(ur10e):
    table = make_table(ur10e, TableLimits(workspace_min=(-3,) * 3, workspace_max=(3,) * 3,
                                          max_linear_speed=1e4, max_angular_speed=1e4))
    previous = table.q_command
    out = table.step(pin.SE3(np.eye(3), np.array([2.5, 0.0, 0.5])), q_measured=previous)
    assert out.faults == ('unreachable',) and out.holding
    np.testing.assert_array_equal(out.q_command, previous)


def test_non_finite_or_malformed_commands_hold(ur10e):
    table = make_table(ur10e, latch_faults=False)
    home = ur10e.forward(ur10e.q_home)
    bad = pin.SE3(home.rotation, np.array([np.nan, 0.0, 0.0]))
    assert table.step(bad).faults == ('invalid_command',)
    sheared = pin.SE3(home.rotation, home.translation)
    sheared.rotation = home.rotation * 1.1
    assert table.step(sheared).faults == ('invalid_command',)
    assert table.step(home, twist_ff_body=[0.0] * 5).faults == ('invalid_command',)
    out = table.step(home)  # not latched: a good command moves again
    assert not out.faults
    assert table.stats.fault_counts['invalid_command'] == 3


def test_joint_velocity_and_acceleration_are_clamped_and_reported(ur10e):
    limits = TableLimits(workspace_min=(-3,) * 3, workspace_max=(3,) * 3, max_linear_speed=100, max_angular_speed=100)
    table = make_table(ur10e, limits)
    q_goal = ur10e.q_home + np.array([1.0, 0.3, 0.3, 0.3, 0.3, 0.3])  # far more than one period allows
    out = table.step(ur10e.forward(q_goal), q_measured=ur10e.q_home)
    assert 'joint_acceleration' in out.clamps
    # from rest the first step is bounded by the acceleration limit: |dq| <= qdd_max dt^2
    np.testing.assert_allclose(np.abs(out.q_command - ur10e.q_home), ur10e.qdd_max * DT * DT, rtol=1e-12)
    qd_previous = (out.q_command - ur10e.q_home) / DT
    for _ in range(600):
        previous = table.q_command
        out = table.step(ur10e.forward(q_goal), q_measured=previous)
        qd = (out.q_command - previous) / DT
        assert np.all(np.abs(qd) <= ur10e.qd_max + 1e-9)
        assert np.all(np.abs(qd - qd_previous) <= ur10e.qdd_max * DT + 1e-9)
        qd_previous = qd
    assert table.stats.clamp_counts['joint_velocity'] > 0
    np.testing.assert_allclose(table.q_command, q_goal, atol=1e-6)  # settles on the goal
    assert table.stats.clamp_counts['joint_acceleration'] > 0


def test_cartesian_speed_is_limited_along_the_geodesic(ur10e):
    limits = TableLimits(workspace_min=(-3,) * 3, workspace_max=(3,) * 3, max_linear_speed=0.1, max_angular_speed=1.0)
    table = make_table(ur10e, limits)
    home = ur10e.forward(ur10e.q_home)
    goal = pin.SE3(home.rotation, home.translation + np.array([0.1, 0.0, 0.0]))
    out = table.step(goal, q_measured=ur10e.q_home)
    assert 'cartesian_speed' in out.clamps
    np.testing.assert_allclose(out.pose_target_in_base.translation - home.translation, [0.1 * DT, 0, 0], atol=1e-12)


def test_predictor_extrapolates_a_constant_twist_stream(ur10e):
    horizon = 0.03
    table = make_table(ur10e, prediction_horizon=horizon, twist_filter_hz=200.0)
    home = ur10e.forward(ur10e.q_home)
    twist = np.array([0.02, -0.01, 0.015, 0.05, 0.0, -0.08])
    for k in range(300):
        t = k * DT
        out = table.step(home * pin.exp6(pin.Motion(twist * t)), t=t)
    expected = home * pin.exp6(pin.Motion(twist * (t + horizon)))  # the pose one horizon ahead
    assert np.linalg.norm(pose_error(out.pose_target_in_base, expected)) < 1e-9
    # with the twist as feed-forward the prediction needs no history
    fresh = make_table(ur10e, prediction_horizon=horizon)
    out = fresh.step(home * pin.exp6(pin.Motion(twist * 0.1)), twist_ff_body=twist, t=0.1)
    target_ff = home * pin.exp6(pin.Motion(twist * (0.1 + horizon)))
    assert np.linalg.norm(pose_error(out.pose_target_in_base, target_ff)) < 1e-9


def test_hexapod_stroke_limit_holds_and_tracks_inside(hexapod):
    limits = TableLimits(workspace_min=(-1, -1, 0.3), workspace_max=(1, 1, 1.5), max_linear_speed=0.2)
    table = make_table(hexapod, limits)
    fault = None
    for k in range(1000):  # rise at 0.2 m/s until the legs reach their 1.10 m stroke end
        target = hexapod.home_pose * pin.exp6(pin.Motion(np.array([0, 0, 0.0008 * k, 0, 0, 0])))
        previous = table.q_command
        out = table.step(target, q_measured=previous, t=k * DT)
        assert np.all(np.abs(out.q_command - previous) <= hexapod.qd_max * DT + 1e-12)
        if out.faults:
            fault = out
            break
        if not out.clamps:  # unclamped commands are the closed-form leg lengths of the target
            np.testing.assert_allclose(hexapod.leg_lengths(out.pose_target_in_base), out.q_command, atol=1e-12)
    assert fault is not None and fault.faults == ('joint_limit',)
    assert np.all(fault.q_command <= hexapod.spec.leg_max)


def test_tracking_error_reports_position_and_angle():
    a = pin.SE3(np.eye(3), np.zeros(3))
    b = pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.3])), np.array([0.003, 0.004, 0.0]))
    position, angle = tracking_error(a, b)
    assert position == pytest.approx(0.005) and angle == pytest.approx(0.3)


def test_hexapod_twisting_into_its_singularity_holds_before_it():
    # Rotating the platform about z by ~90 deg aligns the legs (leg Jacobian loses rank);
    # with a long stroke the singular-value guard, not the stroke end, must stop it.
    import dataclasses

    from hil_motion_table.kinematics import HexapodKinematics
    from hil_motion_table.robot_models import hexapod_spec

    kin = HexapodKinematics(dataclasses.replace(hexapod_spec(), leg_max=1.4))
    table = make_table(kin, TableLimits(workspace_min=(-1, -1, 0.3), workspace_max=(1, 1, 1.5), sigma_min=0.05))
    fault = None
    for k in range(2000):
        target = kin.home_pose * pin.SE3(pin.exp3(np.array([0.0, 0.0, min(1.6, 0.002 * k)])), np.zeros(3))
        previous = table.q_command
        out = table.step(target, q_measured=previous, t=k * DT)
        assert np.all(np.abs(out.q_command - previous) <= kin.qd_max * DT + 1e-12)
        if out.faults:
            fault = out
            break
    assert fault is not None and fault.faults == ('singular',)
    assert kin.sigma_min_at_pose(kin.forward(fault.q_command)) >= 0.05


def test_stale_measured_joints_hold(ur10e):
    limits = TableLimits(workspace_min=(-3,) * 3, workspace_max=(3,) * 3, max_measurement_age=0.1)
    table = make_table(ur10e, limits, latch_faults=False)
    home = ur10e.forward(ur10e.q_home)
    goal = pin.SE3(home.rotation, home.translation + np.array([0.001, 0.0, 0.0]))
    previous = table.q_command
    out = table.step(goal, q_measured=previous, measurement_age=0.5)  # robot feedback lost for 0.5 s
    assert out.faults == ('stale_measurement',) and out.holding
    np.testing.assert_array_equal(out.q_command, previous)
    assert not table.step(goal, q_measured=previous, measurement_age=0.01).faults
