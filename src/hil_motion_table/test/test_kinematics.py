"""Kinematics against independent references: the DH product, closed forms, finite differences."""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_motion_table.kinematics import SerialKinematics, pose_error
from hil_motion_table.robot_models import dh_forward, kr120r2500pro_spec, rpy_matrix, ur10e_spec


def test_urdf_forward_kinematics_equals_the_dh_product(ur10e):
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.uniform(-math.pi, math.pi, 6)
        np.testing.assert_allclose(ur10e.forward(q).homogeneous, dh_forward(ur10e.spec, q), atol=1e-12)


def test_ur10e_zero_pose_matches_the_published_dh_table(ur10e):
    # At q = 0 the UR arm is stretched along -x: x = a2 + a3, y = -(d4 + d6), z = d1 - d5.
    np.testing.assert_allclose(ur10e.forward(np.zeros(6)).translation,
                               [-0.6127 - 0.57155, -(0.17415 + 0.11655), 0.1807 - 0.11985], atol=1e-12)
    assert sum(inertia.mass for inertia in ur10e.model.inertias) == pytest.approx(29.104)  # UR table masses


def test_kr120_zero_pose_matches_its_published_link_lengths():
    kr120 = SerialKinematics(kr120r2500pro_spec())
    # A1 at 0.675 m, A2 offset 0.35 m, A2-A3 1.15 m, A3-A4 1.0 m / -0.041 m, flange 0.215 m
    np.testing.assert_allclose(kr120.forward(np.zeros(6)).translation,
                               [0.35 + 1.15 + 1.0 + 0.215, 0.0, 0.675 - 0.041], atol=1e-12)
    # A2 positive about +y tips the arm down: the flange moves to -z by sin(q2) times the arm length
    q = np.zeros(6)
    q[1] = 0.3
    pose = kr120.forward(q)
    arm = np.array([1.15 + 1.0 + 0.215, 0.0, -0.041])
    expected = np.array([0.35, 0.0, 0.675]) + rpy_matrix((0.0, 0.3, 0.0)) @ arm
    np.testing.assert_allclose(pose.translation, expected, atol=1e-12)


@pytest.mark.parametrize('make_spec', [ur10e_spec, kr120r2500pro_spec])
def test_dls_ik_recovers_reachable_poses_from_a_nearby_seed(make_spec):
    ur10e = SerialKinematics(make_spec())
    rng = np.random.default_rng(2)
    solved = 0
    while solved < 20:
        q_true = ur10e.q_home + rng.uniform(-0.6, 0.6, 6)
        if ur10e.sigma_min(q_true) < ur10e.singular_band:
            continue  # near-singular targets are refused by the table anyway (own test)
        solved += 1
        target = ur10e.forward(q_true)
        result = ur10e.inverse(target, q_true + rng.uniform(-0.1, 0.1, 6))
        assert result.converged
        assert np.linalg.norm(pose_error(ur10e.forward(result.q), target)) < 1e-9


def test_wrist_singularity_is_detected_by_the_smallest_singular_value(ur10e):
    q = np.array(ur10e.q_home)
    assert ur10e.sigma_min(q) > 0.1
    q[4] = 0.0  # wrist 1 and wrist 3 axes aligned: the body Jacobian loses rank
    assert ur10e.sigma_min(q) < 1e-12


def test_unreachable_pose_does_not_converge(ur10e):
    target = pin.SE3(np.eye(3), np.array([2.5, 0.0, 0.5]))  # reach of the UR10e is 1.3 m
    assert not ur10e.inverse(target, ur10e.q_home).converged


def test_hexapod_home_legs_have_the_closed_form_length(hexapod):
    spec = hexapod.spec
    horizontal = spec.platform_points_in_platform - spec.base_points_in_base
    expected = np.sqrt(np.sum(horizontal ** 2, axis=1) + spec.home_height ** 2)
    np.testing.assert_allclose(hexapod.q_home, expected, rtol=0, atol=1e-15)


def test_hexapod_ik_fk_round_trip_to_1e_9(hexapod):
    rng = np.random.default_rng(3)
    for _ in range(50):
        twist = np.concatenate([rng.uniform(-0.08, 0.08, 3), rng.uniform(-0.15, 0.15, 3)])
        pose = hexapod.home_pose * pin.exp6(pin.Motion(twist))
        legs = hexapod.inverse(pose).q
        recovered = hexapod.forward(legs)
        assert np.linalg.norm(pose_error(pose, recovered)) < 1e-9
        np.testing.assert_allclose(hexapod.leg_lengths(recovered), legs, atol=1e-9)


def test_hexapod_leg_jacobian_matches_finite_differences(hexapod):
    pose = hexapod.home_pose * pin.exp6(pin.Motion(np.array([0.02, -0.03, 0.05, 0.1, 0.05, -0.2])))
    jac = hexapod.jacobian_body(pose)
    h = 1e-7
    for k in range(6):
        dv = np.zeros(6)
        dv[k] = h
        numeric = (hexapod.leg_lengths(pose * pin.exp6(pin.Motion(dv)))
                   - hexapod.leg_lengths(pose * pin.exp6(pin.Motion(-dv)))) / (2 * h)
        np.testing.assert_allclose(jac[:, k], numeric, atol=1e-7)


def test_streaming_ik_reuses_sigma_only_where_it_cannot_matter_and_reports_it_exactly():
    """Streamed targets (1 ms steps): the IK skips the per-iteration SVD via the previous
    solution's sigma, yet its solutions equal a cold solver's and the reported sigma_min is
    the SVD at the returned joints; approaching a singularity the hint is not trusted."""
    warm, cold = SerialKinematics(ur10e_spec()), SerialKinematics(ur10e_spec())
    q = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0])
    start = warm.forward(q)
    for k in range(200):
        target = start * pin.exp6(pin.Motion(np.array([0.2, -0.1, 0.15, 0.3, -0.2, 0.1]) * 1e-3 * k))
        a = warm.inverse(target, q)
        cold._sigma_hint = None
        b = cold.inverse(target, q)
        assert np.allclose(a.q, b.q, atol=1e-9) and a.converged and b.converged
        sigma_at_solution = float(np.linalg.svd(warm.jacobian_body(a.q), compute_uv=False)[-1])
        assert a.sigma_min == pytest.approx(sigma_at_solution, rel=1e-12)
        q = a.q
    # Streaming into the wrist singularity (wrist_2 -> 0.02 rad): the damping grows there and the
    # warm solver, whose hint falls inside twice the band, still matches the cold one step by step.
    q_far = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, 0.3, 0.0])
    q = q_far.copy()
    for k in range(60):
        q_target = q_far + np.array([0.0, 0.0, 0.0, 0.0, -0.28 * k / 59, 0.0])
        target = warm.forward(q_target)
        a = warm.inverse(target, q)
        cold._sigma_hint = None
        b = cold.inverse(target, q)
        assert np.allclose(a.q, b.q, atol=1e-9) and a.sigma_min == pytest.approx(b.sigma_min, rel=1e-12)
        q = a.q
    assert a.sigma_min < warm.singular_band          # the stream did end inside the singular band


@pytest.mark.parametrize('robot', ['ur10e', 'hexapod'])
def test_the_measured_body_twist_is_the_finite_difference_of_the_body_pose(robot):
    """body_twist_from_joints against log(T(q)^-1 T(q + dq h)) / h of the body's forward kinematics
    (a mock-up 0.3 m off the flange, turned), to O(h)."""
    import pinocchio as pin

    from hil_motion_table.kinematics_helpers import body_twist_from_joints, make_kinematics

    kin = make_kinematics(robot)
    rng = np.random.default_rng(5)
    q = np.asarray(kin.q_home, dtype=float) + (0.05 * rng.standard_normal(kin.dof) if robot != 'hexapod'
                                               else 0.01 * rng.standard_normal(6))
    dq = 0.2 * rng.standard_normal(kin.dof) if robot != 'hexapod' else 0.01 * rng.standard_normal(6)
    body = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 0.5), np.array([0.1, -0.05, 0.3]))
    h = 1e-6
    before = kin.forward(q) * body
    after = kin.forward(q + h * dq, kin.forward(q)) * body
    reference = pin.log6(before.actInv(after)).vector / h
    twist = body_twist_from_joints(kin, q, dq, body)
    assert np.linalg.norm(reference) > 1e-3
    np.testing.assert_allclose(twist, reference, atol=1e-5 * np.linalg.norm(reference) + 1e-9)


@pytest.mark.parametrize('robot, command_frame', [('ur10e', 'home'), ('kr120r2500pro', 'nominal'), ('ur10e', 'base'),
                                                  ('hexapod', 'home')])
def test_the_command_frame_on_arrays_is_the_command_frame(robot, command_frame):
    """CommandFrame's array forms (the hot paths': target_array, the serial twist_from_joints in one compiled call,
    twist with Ad_Y built once) give what its pin.SE3 forms, body_twist_from_joints and
    flange_twist_from_body_twist give."""
    import pinocchio as pin

    from hil_common.params import ParamValues, validate
    from hil_dynamics.kernels import array_pose, pose_array
    from hil_motion_table import motion_table_node as table_node
    from hil_motion_table.kinematics_helpers import body_twist_from_joints, flange_twist_from_body_twist, make_kinematics

    kin = make_kinematics(robot)
    p = ParamValues(validate(table_node.PARAMS, {'robot': robot, 'command_frame': command_frame,
                                                 'pose_body_in_flange_xyz_rpy': [0.1, -0.05, 0.3, 0.3, -0.2, 0.5],
                                                 'pose_nominal_in_base_xyz_rpy': [1.2, 0.3, 0.8, 0.0, 0.1, 0.2]}))
    frame = table_node.CommandFrame(p, kin)
    assert (frame.twist_work is None) == (robot == 'hexapod')     # a serial chain's twist: the compiled call
    rng = np.random.default_rng(11)
    for _ in range(10):
        g = pin.exp6(pin.Motion(0.2 * rng.standard_normal(6)))
        np.testing.assert_allclose(array_pose(frame.target_array(pose_array(g))).homogeneous,
                                   frame.target(g).homogeneous, rtol=0.0, atol=1e-12)
        q = np.asarray(kin.q_home, dtype=float) + 0.01 * rng.standard_normal(kin.dof)
        dq = 0.01 * rng.standard_normal(kin.dof)
        np.testing.assert_allclose(frame.twist_from_joints(q, dq),
                                   body_twist_from_joints(kin, q, dq, frame.pose_body_in_flange), rtol=0.0, atol=1e-12)
        bad = dq.copy()
        bad[-1] = np.nan                     # a non-finite rate: a non-finite twist, which the callers refuse
        assert not np.all(np.isfinite(frame.twist_from_joints(q, bad)))
        twist_body = 0.1 * rng.standard_normal(6)
        want = twist_body if frame.home is None else flange_twist_from_body_twist(frame.pose_body_in_flange, twist_body)
        np.testing.assert_allclose(frame.twist(twist_body), want, rtol=0.0, atol=1e-14)
