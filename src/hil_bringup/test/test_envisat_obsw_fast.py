"""The Envisat capture's OBSW (the scenario's controller, as the mission builds it): its compiled law
(:meth:`ObswController.update`) against the readable one (:meth:`ObswController.update_reference`) through
the scenario's own phase times. ``hil_admittance/test/test_obsw_fast.py`` has the tolerance's argument."""

import copy
import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from hil_admittance.obsw import APPROACH, GRASP, POST_GRASP, SYNC
from hil_bringup.runners.mission import build_controller
from hil_bringup.scenario import load_scenario

TOL = 1e-12
UNCLIPPED = dict(max_force_n=1e12, max_torque_nm=1e12, max_joint_torque_nm=1e12)


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) / max(1.0, float(np.abs(b).max()))


def _pose_rel(a: pin.SE3, b: pin.SE3) -> float:
    return _rel(a.homogeneous, b.homogeneous)


@pytest.mark.parametrize('limits', [{}, UNCLIPPED], ids=['as_built', 'unclipped'])
def test_envisat_controller_fast_path_is_the_reference_through_the_capture(limits):
    scenario = load_scenario('envisat_capture')
    scenario.obsw = dataclasses.replace(scenario.obsw, **limits)
    fast = build_controller(scenario)
    assert fast._fast is not None                 # the scenario's arm is a chain the kernel takes
    ref = copy.deepcopy(fast)
    g = fast.gains
    rng = np.random.default_rng(11)
    q_at = fast.joint_angles_for_tool(fast.pose_base_in_client_desired.actInv(fast.pose_target_in_client), fast.q_hold)

    def states(at_fixture: bool):
        g_t = pin.SE3(pin.exp3(rng.normal(0.0, 1.5, 3)), rng.normal(0.0, 100.0, 3))
        axis = rng.normal(0.0, 1.0, 3)
        v_t = np.concatenate((rng.normal(0.0, 0.01, 3), np.deg2rad(2.5) * axis / np.linalg.norm(axis)))   # tumbling
        if at_fixture:            # the base on its set point, co-moving; the arm still, the tool on the fixture
            g_b = g_t * fast.pose_base_in_client_desired
            return g_t, v_t, g_b, g_b.actInv(g_t).act(pin.Motion(v_t)).vector, q_at, np.zeros(fast.model.n)
        offset = pin.SE3(pin.exp3(rng.normal(0.0, 0.02, 3)), rng.normal(0.0, 0.02, 3))
        g_b = g_t * fast.pose_base_in_client_desired * offset
        v_b = g_b.actInv(g_t).act(pin.Motion(v_t)).vector + rng.normal(0.0, 0.005, 6)
        return g_t, v_t, g_b, v_b, fast.q_hold + rng.normal(0.0, 0.2, fast.model.n), rng.normal(0.0, 0.05, fast.model.n)

    t_sync, t_end = g.sync_duration_s, g.sync_duration_s + g.approach_duration_s
    t_grasp = t_end + 0.5
    times = [0.0, 4.0, t_sync - 0.004, t_sync, t_sync + 3.0, t_sync + 12.0, t_end - 0.004, t_end, t_end + 0.2, t_grasp,
             t_grasp + 0.3, t_grasp + g.grasp_settle_s, t_grasp + 2.0, t_grasp + 10.0]
    worst = 0.0
    for t in times:
        # On the fixture at the grasp only: at the closure pose, at rest, the post-grasp command is rounding
        # noise (K_r |g_t| eps, some 1e-12 N m with the orbit positions drawn here), no scale to compare with.
        st = states(at_fixture=t == t_grasp)
        a, b = fast.update(t, *st), ref.update_reference(t, *st)
        assert (a.phase, a.close_gripper) == (b.phase, b.close_gripper) and fast.phase_times == ref.phase_times
        worst = max(worst, _rel(a.wrench_base_com, b.wrench_base_com), _rel(a.tau_arm, b.tau_arm),
                    _rel(a.base_error, b.base_error), _rel(a.tool_error, b.tool_error))
    assert fast.phase_times == {SYNC: 0.0, APPROACH: t_sync, GRASP: t_grasp, POST_GRASP: t_grasp + g.grasp_settle_s}
    assert _pose_rel(fast._path_start, ref._path_start) < TOL and _rel(fast._path_log, ref._path_log) < TOL
    assert _pose_rel(fast._pose_base_in_client_grasp, ref._pose_base_in_client_grasp) < TOL
    assert _rel(fast._q_grasp, ref._q_grasp) < TOL
    assert worst < TOL, worst
