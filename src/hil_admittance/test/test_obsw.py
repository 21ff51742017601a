"""The example OBSW rule: on-board quantities only, phase logic, passivity-style checks."""

import numpy as np
import pinocchio as pin
import pytest

from hil_admittance.obsw import APPROACH, GRASP, POST_GRASP, SYNC, ObswController, ObswGains, min_jerk
from hil_dynamics.models import servicer_lbr_urdf
from hil_dynamics.servicer import ServicerModel

Q_HOLD = np.array([0.0, 0.4, 0.0, -1.6, 0.0, -1.5, 0.0])
POSE_TOOL_IN_FLANGE = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.15]))
POSE_GRASP_IN_CLIENT = pin.SE3(np.eye(3), np.array([-2.9, 0.0, 0.0]))
TOOL_AT_GRASP = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.zeros(3))
BASE_IN_CLIENT = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.array([-4.8, -0.2, 1.1]))
TWIST_CLIENT = np.array([0.0, 0.0, 0.0, 0.0, np.deg2rad(-2.5), 0.0])


def controller(**gains):
    model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    return ObswController(model, POSE_TOOL_IN_FLANGE, POSE_GRASP_IN_CLIENT, TOOL_AT_GRASP, BASE_IN_CLIENT, Q_HOLD,
                          ObswGains(**gains))


def states(offset=pin.SE3.Identity(), orbit=pin.SE3.Identity(), q=Q_HOLD, dq=np.zeros(7)):
    g_t = orbit
    g_b = g_t * BASE_IN_CLIENT * offset
    twist_b = g_b.actInv(g_t).act(pin.Motion(TWIST_CLIENT)).vector   # co-moving with the client
    return g_t, TWIST_CLIENT, g_b, twist_b, q, dq


def test_output_does_not_depend_on_where_the_orbit_frame_is():
    """Only relative geometry and body twists enter: a change of orbit frame leaves F_b, tau unchanged."""
    offset = pin.SE3(pin.rpy.rpyToMatrix(0.01, -0.02, 0.03), np.array([0.05, -0.02, 0.04]))
    dq = np.linspace(-0.01, 0.01, 7)
    a = controller().update(0.0, *states(offset, dq=dq))
    orbit = pin.SE3(pin.rpy.rpyToMatrix(0.7, -1.1, 2.0), np.array([100.0, -40.0, 7.0]))
    b = controller().update(0.0, *states(offset, orbit, dq=dq))
    assert np.allclose(a.wrench_base_com, b.wrench_base_com, atol=1e-9)
    assert np.allclose(a.tau_arm, b.tau_arm, atol=1e-9)


def test_sync_force_is_the_coriolis_feedforward_on_the_set_point_and_restores_off_it():
    c = controller()
    on = c.update(0.0, *states())
    model = c.model
    h = model.coriolis_force(Q_HOLD, states()[3], np.zeros(7))
    assert on.phase == SYNC
    assert np.allclose(on.wrench_base_com, h[:6], atol=1e-9) and np.allclose(on.base_error, 0.0, atol=1e-12)
    # Displaced along base +x: the PD pushes back along -x (beyond the feed-forward).
    off = controller().update(0.0, *states(pin.SE3(np.eye(3), np.array([0.01, 0.0, 0.0]))))
    assert off.wrench_base_com[0] - h[0] == pytest.approx(-1800.0 * 0.01, rel=0.02)


def test_phases_follow_time_and_grasp_tolerance():
    c = controller(sync_duration_s=1.0, approach_duration_s=2.0, grasp_settle_s=0.5)
    assert c.update(0.5, *states()).phase == SYNC
    assert c.update(1.0, *states()).phase == APPROACH
    # Approach time over, but the tool is far from the fixture: no grasp.
    cmd = c.update(3.5, *states())
    assert cmd.phase == APPROACH and not cmd.close_gripper and np.linalg.norm(cmd.tool_error[:3]) > 0.1
    # Put the arm where the tool sits on the fixture (numerical IK on the same model).
    q = c.joint_angles_for_tool(BASE_IN_CLIENT.actInv(POSE_GRASP_IN_CLIENT * TOOL_AT_GRASP), Q_HOLD)
    cmd = c.update(3.6, *states(q=q))
    assert cmd.phase == GRASP and cmd.close_gripper
    cmd = c.update(4.2, *states(q=q))
    assert cmd.phase == POST_GRASP and np.all(cmd.wrench_base_com == 0.0)
    assert list(c.phase_times) == [SYNC, APPROACH, GRASP, POST_GRASP]


def test_post_grasp_torque_opposes_relative_motion():
    """Rigidisation: with the base moving relative to the client, tau does negative work on the joints' image."""
    c = controller(sync_duration_s=0.0, approach_duration_s=0.0, grasp_position_tol_m=10.0, grasp_angle_tol_rad=10.0,
                   grasp_speed_tol_m_s=10.0, grasp_settle_s=0.0)
    c.update(0.0, *states())
    c.update(0.0, *states())
    assert c.phase == POST_GRASP
    dq = np.array([0.0, 0.01, 0.0, -0.01, 0.0, 0.0, 0.0])
    g_t, v_t, g_b, v_b, q, _ = states()
    cmd = c.update(0.1, g_t, v_t, g_b, v_b, q, dq)
    assert float(cmd.tau_arm @ dq) < 0.0


def test_min_jerk_and_bad_gains():
    assert min_jerk(-1.0) == 0.0 and min_jerk(0.5) == pytest.approx(0.5) and min_jerk(2.0) == 1.0
    with pytest.raises(ValueError, match='base_stiffness'):
        ObswGains(base_stiffness=np.ones(5))
    with pytest.raises(ValueError, match='max_force_n'):
        ObswGains(max_force_n=-1.0)


def test_obsw_side_runs_the_law_on_fresh_inputs_and_is_silent_when_stale_or_overloaded():
    """The node's policy (:class:`ObswSide`) against the law stepped by hand: fresh inputs give the
    law's own commands; a stale input, or a tick 0.3 s late (beyond ``hold_late_s`` 0.2 s), give zero
    commands and no gripper command; on time for ``recover_after_s`` the law runs again."""
    from hil_admittance.obsw_side import ObswSide
    from hil_common.overload import OverloadGuard

    guard = OverloadGuard(0.01, warn_late_s=0.02, hold_late_s=0.2, recover_after_s=0.1)
    side, ref = ObswSide(controller(), 100.0, 0.05, guard), controller()
    g_t, v_t, g_b, v_b, q, dq = states(pin.SE3(np.eye(3), np.array([0.02, 0.0, 0.0])))

    def feed(t):
        side.set_state('client', g_t, v_t, t)
        side.set_state('servicer', g_b, v_b, t)
        side.set_joints(q, dq, t)
    t = 0.0
    feed(t)
    out = side.tick(t)
    expected = ref.update(0.0, g_t, v_t, g_b, v_b, q, dq)
    assert out.silent == '' and np.allclose(out.wrench_base_com, expected.wrench_base_com, atol=0.0)
    assert np.linalg.norm(out.wrench_base_com) > 1.0 and np.allclose(out.tau_arm, expected.tau_arm, atol=0.0)
    assert side.tick(t + 0.004) is None                        # an early callback: nothing due
    out = side.tick(t + 0.08)                                  # the inputs are 80 ms old (timeout 50 ms)
    assert 'stale' in out.silent and not out.wrench_base_com.any() and not out.tau_arm.any()
    assert out.close_gripper is None
    t = 0.4
    feed(t)                                                    # fresh inputs, but the tick 0.3 s late
    out = side.tick(t)
    assert guard.holding and out.silent.startswith('overloaded') and not out.wrench_base_com.any()
    while t < 0.55:
        t += 0.01
        feed(t)
        out = side.tick(t)
    assert not guard.holding and out.silent == '' and np.linalg.norm(out.wrench_base_com) > 1.0
    assert side.set_state('client', g_t, [np.nan] * 6, t) is False and side.rejected == 1
