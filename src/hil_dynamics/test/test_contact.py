"""Gripper attachment: capture envelope, spring-damper, Assumption 3 (equal and opposite wrenches)."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.contact import (CLOSING, LATCHED, MISSED, OPEN, ContactParams, GraspContact, reaction_on_client,
                                  relative_twist)

AT_GRASP = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.zeros(3))


def near(dx=0.0, angle=0.0):
    return AT_GRASP * pin.SE3(pin.rpy.rpyToMatrix(angle, 0.0, 0.0), np.array([dx, 0.0, 0.0]))


def test_gripper_latches_only_inside_the_capture_envelope_after_closing():
    params = ContactParams(closing_time_s=0.5, capture_radius_m=0.02, capture_angle_rad=0.1)
    c = GraspContact(params, AT_GRASP)
    assert c.update(0.0, near()) == OPEN
    c.command_close(1.0)
    assert c.update(1.49, near(0.01)) == CLOSING
    assert np.all(c.wrench(near(0.01), np.zeros(6)) == 0.0)
    assert c.update(1.5, near(0.01, 0.05)) == LATCHED and c.latch_time_s == 1.5
    # At its latched rest pose and at rest relative to the fixture, no wrench.
    assert np.allclose(c.wrench(near(0.01, 0.05), np.zeros(6)), 0.0, atol=1e-12)
    miss = GraspContact(params, AT_GRASP)
    miss.command_close(0.0)
    assert miss.update(0.5, near(0.03)) == MISSED
    miss.command_close(0.6)                       # a new attempt is allowed
    assert miss.state == CLOSING


def test_spring_damper_wrench_against_its_definition():
    p = ContactParams(stiffness_linear_n_m=1000.0, stiffness_angular_nm_rad=50.0, damping_linear_ns_m=10.0,
                      damping_angular_nms_rad=2.0)
    c = GraspContact(p, AT_GRASP)
    c.command_close(0.0)
    c.update(1.0, AT_GRASP)
    # Small displacement along tool x: restoring force -k dx along tool x; velocity adds -d v.
    w = c.wrench(AT_GRASP * pin.SE3(np.eye(3), np.array([1e-3, 0.0, 0.0])), [0.0, 0.2, 0.0, 0.0, 0.0, 0.1])
    assert w == pytest.approx([-1.0, -2.0, 0.0, 0.0, 0.0, -0.2], abs=1e-9)
    # A small rotation about tool z: restoring torque -k_rot angle.
    w = c.wrench(AT_GRASP * pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, 1e-3), np.zeros(3)), np.zeros(6))
    assert w[5] == pytest.approx(-0.05, rel=1e-6)


def test_reaction_is_equal_and_opposite_about_any_point():
    """Assumption 3: the client wrench is the tool wrench reversed; their sum vanishes in any common frame."""
    rng = np.random.default_rng(3)
    pose_tool_in_client = pin.SE3(pin.rpy.rpyToMatrix(*rng.normal(size=3)), rng.normal(size=3))
    wrench_tool = rng.normal(size=6)
    wrench_client = reaction_on_client(pose_tool_in_client, wrench_tool)
    pose_client_in_orbit = pin.SE3(pin.rpy.rpyToMatrix(*rng.normal(size=3)), rng.normal(size=3))
    total = (pose_client_in_orbit.act(pin.Force(wrench_client))
             + (pose_client_in_orbit * pose_tool_in_client).act(pin.Force(wrench_tool)))
    assert np.allclose(total.vector, 0.0, atol=1e-12)


def test_relative_twist_vanishes_for_rigid_co_motion():
    rng = np.random.default_rng(5)
    pose_b_in_a = pin.SE3(pin.rpy.rpyToMatrix(*rng.normal(size=3)), rng.normal(size=3))
    twist_a = rng.normal(size=6)
    twist_b = pose_b_in_a.actInv(pin.Motion(twist_a)).vector   # b rigidly attached to a
    assert np.allclose(relative_twist(pose_b_in_a, twist_a, twist_b), 0.0, atol=1e-12)
    # Finite-difference check of a relative motion: b moves relative to a with body twist u.
    u = rng.normal(size=6)
    h = 1e-6
    g0, g1 = pose_b_in_a, pin.exp6(pin.Motion(twist_a * h)).actInv(pose_b_in_a * pin.exp6(pin.Motion((twist_b + u) * h)))
    fd = pin.log6(g0.actInv(g1)).vector / h
    assert np.allclose(relative_twist(pose_b_in_a, twist_a, twist_b + u), fd, atol=1e-4)


def test_bad_params_name_the_field():
    with pytest.raises(ValueError, match='damping_linear_ns_m'):
        ContactParams(damping_linear_ns_m=float('nan'))
