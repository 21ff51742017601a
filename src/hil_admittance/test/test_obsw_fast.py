"""The compiled OBSW law (:meth:`ObswController.update`) against its readable reference
(:meth:`ObswController.update_reference`): same phases, switch times, commands and side effects.

Two copies of one controller (``copy.deepcopy``) are fed the same random on-board states, one through
``update``, the other through ``update_reference``, through every phase and every phase switch.

Tolerance: ``TOL = 1e-12`` relative to each quantity's scale (the largest of the terms it is a sum of),
as in ``hil_dynamics/test/test_fast_paths.py``. Both paths evaluate the same formulas in a different
order (LAPACK against compiled Gaussian elimination, Pinocchio's CRBA/RNEA/Jacobian against the chain's,
``inv(A) a`` against ``solve(A, a)``), so each result differs by a few rounding errors of its terms,
amplified by the condition of the systems solved (``M_b``, ``M_red`` and the tool's inverse inertia
``J_m M_red^-1 J_m^T``). Elimination with partial pivoting is insensitive to the scaling of rows and
columns (metres against radians, kilograms against kg m^2), so the condition that counts is that of the
matrix scaled to a unit diagonal: below 1e3 at the states drawn here (checked below; about 2, 60 and 400),
so the two paths differ by at most about 6 * 1e3 * 1.1e-16 < 1e-12 of a quantity's scale (seen: 1e-13).
The scale is the largest entry of the reference's value, or 1 (errors in m and rad, below 1 here).
Most comparisons are made with the actuator limits far away (``UNCLIPPED``), where the commands are
computed; the clip (the same per entry in both) can only shrink a difference.
"""

import copy

import numpy as np
import pinocchio as pin
import pytest

from hil_admittance.obsw import APPROACH, GRASP, POST_GRASP, SYNC, ObswController, ObswGains
from hil_admittance import obsw_kernel
from hil_dynamics.models import servicer_lbr_urdf
from hil_dynamics.servicer import ServicerModel

TOL = 1e-12
Q_HOLD = np.array([0.0, 0.4, 0.0, -1.6, 0.0, -1.5, 0.0])
POSE_TOOL_IN_FLANGE = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), np.array([0.01, -0.02, 0.15]))
POSE_GRASP_IN_CLIENT = pin.SE3(pin.rpy.rpyToMatrix(0.2, 0.1, -0.3), np.array([-2.9, 0.1, 0.05]))
TOOL_AT_GRASP = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.array([0.0, 0.0, -0.01]))
BASE_IN_CLIENT = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.array([-4.8, -0.2, 1.1]))


def controller(model=None, **gains) -> ObswController:
    model = model or ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    return ObswController(model, POSE_TOOL_IN_FLANGE, POSE_GRASP_IN_CLIENT, TOOL_AT_GRASP, BASE_IN_CLIENT, Q_HOLD,
                          ObswGains(**gains))


def random_states(rng, c: ObswController, q_centre=None, spread=1.0):
    """On-board states about the controller's set point: the orbit frame anywhere, the base off its desired
    pose relative to the client, both tumbling, the arm off ``q_centre`` and moving."""
    g_t = pin.SE3(pin.exp3(rng.normal(0.0, 1.5, 3)), rng.normal(0.0, 50.0, 3))
    offset = pin.SE3(pin.exp3(rng.normal(0.0, 0.05 * spread, 3)), rng.normal(0.0, 0.05 * spread, 3))
    g_b = g_t * c.pose_base_in_client_desired * offset
    v_t = np.concatenate((rng.normal(0.0, 0.02, 3), rng.normal(0.0, 0.05, 3)))
    v_b = g_b.actInv(g_t).act(pin.Motion(v_t)).vector + spread * rng.normal(0.0, 0.01, 6)
    q = (c.q_hold if q_centre is None else q_centre) + spread * rng.normal(0.0, 0.3, c.model.n)
    dq = spread * rng.normal(0.0, 0.1, c.model.n)
    return g_t, v_t, g_b, v_b, q, dq


def _pose_diff(a: pin.SE3, b: pin.SE3) -> float:
    return float(np.abs(a.homogeneous - b.homogeneous).max()) / max(1.0, float(np.abs(b.translation).max()))


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) / max(1.0, float(np.abs(b).max()))


UNCLIPPED = dict(max_force_n=1e12, max_torque_nm=1e12, max_joint_torque_nm=1e12)   # compare what is computed


def compare(fast: ObswController, ref: ObswController, t: float, states) -> float:
    """One call of each; the phase, gripper and side effects equal, the arrays within TOL; the worst error."""
    a = fast.update(t, *states)
    b = ref.update_reference(t, *states)
    assert (a.phase, a.close_gripper) == (b.phase, b.close_gripper)
    assert fast.phase == ref.phase and fast.phase_times == ref.phase_times
    worst = max(_rel(a.wrench_base_com, b.wrench_base_com), _rel(a.tau_arm, b.tau_arm),
                _rel(a.base_error, b.base_error), _rel(a.tool_error, b.tool_error))
    if a.phase == POST_GRASP:
        assert np.all(a.wrench_base_com == 0.0)
    if ref._path_start is not None:
        worst = max(worst, _pose_diff(fast._path_start, ref._path_start), _rel(fast._path_log, ref._path_log))
    if POST_GRASP in ref.phase_times:
        worst = max(worst, _pose_diff(fast._pose_base_in_client_grasp, ref._pose_base_in_client_grasp),
                    _rel(fast._q_grasp, ref._q_grasp))
    return worst


def run_phases(fast: ObswController, times, rng, states=None) -> float:
    """``fast`` and a deep copy of it through ``times``: ``update`` against ``update_reference``."""
    ref = copy.deepcopy(fast)
    worst = 0.0
    for t in times:
        worst = max(worst, compare(fast, ref, t, random_states(rng, fast) if states is None else states(t)))
    return worst


# sync, the switch to the approach, mid-path, the approach time over (the grasp decided by the tool error),
# the grasp, the switch to the post-grasp, the post-grasp
TIMES = (0.0, 0.2, 0.9, 1.0, 1.5, 2.2, 2.9, 3.0, 3.2, 3.5, 3.7, 4.5)


@pytest.mark.parametrize('limits', [UNCLIPPED, {}], ids=['unclipped', 'clipped'])
def test_update_is_the_reference_through_every_phase_on_random_states(limits):
    """Grasp tolerances wide open, so that the grasp happens at the first call after the approach time,
    wherever the random states put the tool."""
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(12):
        c = controller(sync_duration_s=1.0, approach_duration_s=2.0, grasp_settle_s=0.5, grasp_position_tol_m=10.0,
                       grasp_angle_tol_rad=10.0, grasp_speed_tol_m_s=10.0, **limits)
        worst = max(worst, run_phases(c, TIMES, rng))
        assert c.phase_times == {SYNC: 0.0, APPROACH: 1.0, GRASP: 3.0, POST_GRASP: 3.5}
    assert worst < TOL


def test_update_is_the_reference_when_the_grasp_waits_for_the_tool():
    """Real tolerances: after the approach time the tool is far from the fixture (no grasp, the path held at
    its end), then on it (IK on the same model, the base co-moving, the arm still): grasp, then post-grasp
    (on random states again: at the closure pose and at rest its command is rounding noise, of no scale)."""
    rng = np.random.default_rng(5)
    c = controller(sync_duration_s=1.0, approach_duration_s=2.0, grasp_settle_s=0.5, **UNCLIPPED)
    q_at = c.joint_angles_for_tool(BASE_IN_CLIENT.actInv(POSE_GRASP_IN_CLIENT * TOOL_AT_GRASP), Q_HOLD)

    def states(t):
        if t != 3.3:
            return random_states(rng, c)
        g_t, v_t, g_b, _, _, _ = random_states(rng, c, spread=0.0)
        return g_t, v_t, g_b, g_b.actInv(g_t).act(pin.Motion(v_t)).vector, q_at, np.zeros(7)
    worst = run_phases(c, (0.5, 1.0, 2.0, 3.0, 3.1, 3.2, 3.3, 3.5, 3.8, 4.0), rng, states)
    assert c.phase_times == {SYNC: 0.0, APPROACH: 1.0, GRASP: 3.3, POST_GRASP: 3.8}
    assert worst < TOL


def test_update_is_the_reference_when_every_switch_falls_on_one_call():
    """Zero durations and wide tolerances: sync -> approach -> grasp -> post-grasp in the first call."""
    rng = np.random.default_rng(6)
    worst = 0.0
    for _ in range(5):
        c = controller(sync_duration_s=0.0, approach_duration_s=0.0, grasp_settle_s=0.0, grasp_position_tol_m=10.0,
                       grasp_angle_tol_rad=10.0, grasp_speed_tol_m_s=10.0, **UNCLIPPED)
        worst = max(worst, run_phases(c, (0.0, 0.0, 0.1, 0.5), rng))
        assert c.phase == POST_GRASP and set(c.phase_times.values()) == {0.0}
    assert worst < TOL


def test_update_reads_state_that_update_reference_wrote():
    """The two paths may alternate on one controller: each reads the path and the closure state the other left."""
    rng = np.random.default_rng(7)
    c = controller(sync_duration_s=1.0, approach_duration_s=2.0, grasp_settle_s=0.5, grasp_position_tol_m=10.0,
                   grasp_angle_tol_rad=10.0, grasp_speed_tol_m_s=10.0, **UNCLIPPED)
    ref = copy.deepcopy(c)
    worst = 0.0
    for k, t in enumerate(TIMES):
        states = random_states(rng, c)
        if k % 2:                      # c alternates; ref runs the reference throughout
            c.update_reference(t, *states)
            ref.update_reference(t, *states)
        else:
            worst = max(worst, compare(c, ref, t, states))
    assert c.phase == POST_GRASP and worst < TOL


def test_update_takes_poses_as_arrays_and_falls_back_without_a_chain():
    from hil_dynamics.kernels import pose_array

    rng = np.random.default_rng(8)
    c = controller(**UNCLIPPED)
    g_t, v_t, g_b, v_b, q, dq = random_states(rng, c)
    a = c.update(0.0, pose_array(g_t), v_t, pose_array(g_b), v_b, q, dq)
    b = copy.deepcopy(c).update(0.0, g_t, v_t, g_b, v_b, q, dq)
    assert np.array_equal(a.wrench_base_com, b.wrench_base_com) and np.array_equal(a.tau_arm, b.tau_arm)
    c._fast = None                     # what ObswArrays.of gives for a model that is no free-flyer chain
    a, b = c.update(0.0, g_t, v_t, g_b, v_b, q, dq), c.update_reference(0.0, g_t, v_t, g_b, v_b, q, dq)
    assert np.array_equal(a.wrench_base_com, b.wrench_base_com) and np.array_equal(a.tau_arm, b.tau_arm)
    a = c.update(0.0, pose_array(g_t), v_t, pose_array(g_b), v_b, q, dq)     # arrays, as the runners pass them
    assert np.array_equal(a.wrench_base_com, b.wrench_base_com) and np.array_equal(a.tau_arm, b.tau_arm)


def test_tool_kinematics_kernel_is_pinocchios():
    """:func:`obsw_kernel.tool_jacobian_into` on the chain's placements against
    :meth:`ServicerModel.tool_pose_and_jacobian`, and the conditioning the module's tolerance assumes
    (each matrix scaled to a unit diagonal)."""
    from hil_dynamics.kernels import array_pose

    rng = np.random.default_rng(9)
    c = controller()
    w, model = c._fast, c.model
    worst, cond = 0.0, 0.0
    for _ in range(50):
        states = random_states(rng, c)
        c.update(0.0, *states)
        pose, jac = model.tool_pose_and_jacobian(states[4], POSE_TOOL_IN_FLANGE)
        worst = max(worst, _pose_diff(array_pose(w.poses[obsw_kernel.P_TOOL_IN_BASE]), pose),
                    np.abs(w.mats[obsw_kernel.M_JACOBIAN][:6] - jac).max())
        mass = model.mass_matrix(states[4])
        m_red = mass[6:, 6:] - mass[6:, :6] @ np.linalg.solve(mass[:6, :6], mass[:6, 6:])
        jac_m = jac[:, 6:]
        for a in (mass[:6, :6], m_red, jac_m @ np.linalg.solve(m_red, jac_m.T)):
            d = 1.0 / np.sqrt(np.diag(a))
            cond = max(cond, np.linalg.cond(a * d[:, None] * d[None, :]))
    assert worst < TOL
    assert cond < 1e3                  # the module docstring's rounding argument


def test_a_subclass_that_overrides_update_is_handed_pin_se3():
    """The runners pass 12-arrays only to the example's own update: a user's subclass in the OBSW slot that overrides
    update keeps getting pin.SE3 poses."""
    class UserController(type(controller(**UNCLIPPED))):
        def update(self, t, pose_client_in_orbit, *rest):
            assert isinstance(pose_client_in_orbit, pin.SE3)
            return super().update(t, pose_client_in_orbit, *rest)

    assert controller(**UNCLIPPED).takes_pose_arrays
    user = controller(**UNCLIPPED)
    user.__class__ = UserController
    assert not user.takes_pose_arrays
