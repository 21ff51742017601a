"""The example OBSW rule's per-call arithmetic as one compiled call (issue 17; Numba, no rclpy, no Pinocchio objects).

:meth:`hil_admittance.obsw.ObswController.update_reference` is the readable law (seed 004 §III-C, §V); with
Pinocchio and ``pin.SE3`` from Python each call cost 50-90 us, most of it bindings on 6-vectors.
:func:`obsw_step` does the same arithmetic on plain arrays:

* the synchronisation error of the base on Eq. (23)'s absolute states: ``g_bt* ^-1 g_t^-1 g_b``, its
  ``log6`` ``e_b`` and the co-moving base twist ``V_b* = Ad_{g_b^-1 g_t} V_t``;
* the tool kinematics on the free-flyer chain (base at the identity, as
  :meth:`hil_dynamics.servicer.ServicerModel.tool_pose_and_jacobian`): the joints' placements at ``q`` from
  :func:`hil_dynamics.kernels.chain_crba`'s forward pass, then :func:`tool_jacobian_into`; the tool error to
  the fixture target, the tool twist and the co-moving twist of the client at the tool;
* ``M`` of Eq. (12) (:func:`~hil_dynamics.kernels.chain_crba`), the arm inertia reduced by the free base
  ``M_q - M_bq^T M_b^-1 M_bq``, the Coriolis force ``h = C v`` of Eq. (12)
  (:func:`~hil_dynamics.kernels.chain_rnea` at zero acceleration and gravity);
* the law of the phase: the base PD with the joint hold (sync), the Cartesian compliance on the
  minimum-jerk path with the tool inertia ``Lambda = (J_m M_red^-1 J_m^T)^-1`` (approach, grasp),
  the rigidising impedance (post-grasp), each clipped as the reference does.

The phase logic stays in Python (:meth:`ObswController.update`): it decides the phase from the time
and from the tool error and relative speed this call returns. Normally one call does both stages
(``KINEMATICS | LAW``); in the window where the grasp depends on this call's kinematics (the approach
time over, the gripper still open) the two stages are two calls, and the work arrays carry the first
stage's results to the second.

Array layout (float64, C-contiguous, allocated once by :class:`ObswArrays`; indices below):
``poses`` (N_POSES, 12) 12-array poses (:func:`hil_dynamics.kernels.pose_array`), ``vecs`` (N_VECS, nv)
vectors (6-vectors in the first 6 entries, joint vectors in the first ``n``), ``mats`` (3, nv, nv) the
mass matrix, the reduced inertia (top-left ``n x n``) and the tool Jacobian (first 6 rows),
``scalars`` the scalar gains and the relative speed, ``homogeneous`` (2, 4, 4) the input poses when given as
``pin.SE3`` (their 4x4 matrix is the cheapest export). ``test_obsw_fast`` holds :meth:`ObswController.update`
to :meth:`ObswController.update_reference` to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numba import njit

from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import (_OPTS, _act_force_add, _act_inv_motion, _mul_exp6, Chain, chain_crba, chain_rnea,
                                  log6_into, pose_array, pose_mul_into, relative_into, solve_into, tool_jacobian_into)

# -- stages (flags of obsw_step) and laws (mode) ---------------------------------------------------------------
KINEMATICS, LAW, START_PATH, LATCH_GRASP = 1, 2, 4, 8
CLIENT_HOMOGENEOUS, BASE_HOMOGENEOUS = 16, 32    # read g_t, g_b from `homogeneous` (pin.SE3.homogeneous, 4x4)
MODE_SYNC, MODE_PATH, MODE_POST_GRASP = 0, 1, 2

# -- rows of `poses` -----------------------------------------------------------------------------------------
P_CLIENT, P_BASE = 0, 1                         # inputs: g_t, g_b (orbit)
P_IDENTITY = 2                                  # constants
P_TOOL_IN_JOINT = 3                             # the tool on the flange's parent joint (frame placement * g_ft)
P_TARGET_IN_CLIENT = 4
P_BASE_IN_CLIENT_DESIRED = 5                    # g_bt*
P_PATH_START = 6                                # state: tool in the client frame at approach start
P_BASE_IN_CLIENT_GRASP = 7                      # state: base in the client frame at closure
P_BASE_IN_CLIENT = 8                            # results of the kinematics stage
P_TOOL_IN_BASE = 9
P_TOOL = 10                                     # tool in orbit
P_TOOL_IN_CLIENT = 11
P_TMP, P_TMP2 = 12, 13                          # scratch
N_POSES = 14

# -- rows of `vecs` (width nv) -------------------------------------------------------------------------------
V_TWIST_CLIENT = 0                              # inputs: V_t (6)
V_VELOCITY = 1                                  # [V_b; dq] (nv)
V_Q = 2                                         # q (n)
V_BASE_STIFFNESS, V_BASE_DAMPING, V_TOOL_BANDWIDTH = 3, 4, 5                 # gains (6 each)
V_POST_STIFFNESS, V_POST_DAMPING, V_Q_HOLD = 6, 7, 8
V_PATH_LOG, V_Q_GRASP = 9, 10                   # state: log6(path start^-1 target) (6), q at closure (n)
V_WRENCH_BASE, V_TAU, V_BASE_ERROR, V_TOOL_ERROR = 11, 12, 13, 14             # outputs
V_CORIOLIS = 15                                 # h = C v of Eq. (12) (nv)
V_TWIST_SYNC, V_TWIST_TOOL, V_TWIST_COMOVE = 16, 17, 18
V_ZERO = 19                                     # never written: zero acceleration and gravity of the RNEA
V_TMP, V_TMP2 = 20, 21
N_VECS = 22

# -- `mats` and `scalars` --------------------------------------------------------------------------------------
M_MASS, M_REDUCED, M_JACOBIAN = 0, 1, 2
S_DAMPING_RATIO, S_HOLD_BANDWIDTH, S_NULL_DAMPING, S_POST_BANDWIDTH, S_POST_DAMPING = 0, 1, 2, 3, 4
S_MAX_FORCE, S_MAX_TORQUE, S_MAX_JOINT_TORQUE = 5, 6, 7
S_REL_SPEED = 8                                 # output: |v_tool - v_comove| (linear part) [m/s]
N_SCALARS = 9


class ObswArrays:
    """The work arrays of :func:`obsw_step` for one controller, the model and gains read once.

    ``of(controller)`` returns None when the model is not a free-flyer chain of 1-DOF joints
    (:meth:`hil_dynamics.kernels.Chain.of` refuses it): the controller then keeps its reference law.
    """

    @classmethod
    def of(cls, model, gains, pose_tool_in_flange: pin.SE3, pose_target_in_client: pin.SE3,
           pose_base_in_client_desired: pin.SE3, q_hold):
        pm = model.model
        chain = Chain.of(pm)
        if chain is None:
            return None
        frame = pm.frames[model.ee_frame_id]
        out = cls()
        n, nv = model.n, pm.nv
        out.n = n
        out.chain = chain.args()
        out.ee_joint = int(frame.parentJoint)
        out.work, out.work_ic = chain.work, chain.work_ic
        out.poses = np.zeros((N_POSES, 12))
        out.vecs = np.zeros((N_VECS, nv))
        out.mats = np.zeros((3, nv, nv))
        out.scalars = np.zeros(N_SCALARS)
        out.homogeneous = np.zeros((2, 4, 4))
        p, v, s = out.poses, out.vecs, out.scalars
        for row in (P_CLIENT, P_BASE, P_IDENTITY):
            pose_array(pin.SE3.Identity(), p[row])
        pose_array(frame.placement * pose_tool_in_flange, p[P_TOOL_IN_JOINT])
        pose_array(pose_target_in_client, p[P_TARGET_IN_CLIENT])
        pose_array(pose_base_in_client_desired, p[P_BASE_IN_CLIENT_DESIRED])
        v[V_BASE_STIFFNESS, :6] = gains.base_stiffness
        v[V_BASE_DAMPING, :6] = gains.base_damping
        v[V_TOOL_BANDWIDTH, :6] = gains.tool_bandwidth_rad_s
        v[V_POST_STIFFNESS, :6] = gains.post_grasp_base_stiffness
        v[V_POST_DAMPING, :6] = gains.post_grasp_base_damping
        v[V_Q_HOLD, :n] = q_hold
        s[S_DAMPING_RATIO] = gains.tool_damping_ratio
        s[S_HOLD_BANDWIDTH] = gains.joint_hold_bandwidth_rad_s
        s[S_NULL_DAMPING] = gains.null_damping_per_s
        s[S_POST_BANDWIDTH] = gains.post_grasp_bandwidth_rad_s
        s[S_POST_DAMPING] = gains.post_grasp_damping_per_s
        s[S_MAX_FORCE] = gains.max_force_n
        s[S_MAX_TORQUE] = gains.max_torque_nm
        s[S_MAX_JOINT_TORQUE] = gains.max_joint_torque_nm
        out.args = (out.poses, out.vecs, out.mats, out.scalars, out.homogeneous, *out.chain, out.ee_joint, out.work,
                    out.work_ic)
        return out

    def step(self, mode: int, flags: int, s: float) -> None:
        """:func:`obsw_step` on these arrays (the inputs written into ``poses``/``vecs``/``homogeneous`` beforehand)."""
        obsw_step(mode, flags, s, *self.args)


@njit(inline='always', **_OPTS)
def _clip(x, limit):
    """``np.clip(x, -limit, limit)`` of one number (NaN stays NaN)."""
    if x > limit:
        return limit
    if x < -limit:
        return -limit
    return x


@njit(**_OPTS)
def _kinematics(mode, flags, poses, vecs, mats, scalars, parents, placements, kind, axis, inertia, ee_joint, work,
                work_ic):
    """The phase-independent part of the rule: sync error, tool kinematics and errors, ``M``, ``M_red``, ``h``."""
    nv = vecs.shape[1]
    n = nv - 6
    g_t, g_b = poses[P_CLIENT], poses[P_BASE]
    v_t = vecs[V_TWIST_CLIENT]
    vel = vecs[V_VELOCITY]
    q = vecs[V_Q]
    # Base: synchronisation with the client. g_t^-1 g_b, V_b* = Ad_{g_b^-1 g_t} V_t, e_b = log6(g_bt*^-1 g_t^-1 g_b).
    base_in_client = poses[P_BASE_IN_CLIENT]
    relative_into(g_t, g_b, base_in_client)
    _act_inv_motion(base_in_client, v_t, vecs[V_TWIST_SYNC])
    relative_into(poses[P_BASE_IN_CLIENT_DESIRED], base_in_client, poses[P_TMP])
    log6_into(poses[P_TMP], vecs[V_BASE_ERROR])
    # M of Eq. (12) (its forward pass leaves the joint placements at q in work[0]) and the arm on a free base.
    mass, m_red = mats[M_MASS], mats[M_REDUCED]
    chain_crba(parents, placements, kind, axis, inertia, q, work, work_ic, mass, True)
    m_b = np.empty((6, 6))
    col, x = np.empty(6), np.empty(6)
    for j in range(n):                                    # M_red = M_q - M_bq^T (M_b^-1 M_bq), column by column
        for r in range(6):
            col[r] = mass[r, 6 + j]
            for c in range(6):
                m_b[r, c] = mass[r, c]
        solve_into(m_b, col, x)
        for i in range(n):
            acc = 0.0
            for r in range(6):
                acc += mass[6 + i, r] * x[r]
            m_red[i, j] = mass[6 + i, 6 + j] - acc
    # Tool: pose and Jacobian, error to the fixture target, its twist and the client's co-moving twist at it.
    jac = mats[M_JACOBIAN]
    tool_in_base, tool = poses[P_TOOL_IN_BASE], poses[P_TOOL]
    tool_jacobian_into(parents, kind, axis, placements, work[0], ee_joint, poses[P_TOOL_IN_JOINT], tool_in_base, jac,
                       poses[P_TMP:P_TMP2 + 1])
    pose_mul_into(g_b, tool_in_base, tool)
    pose_mul_into(g_t, poses[P_TARGET_IN_CLIENT], poses[P_TMP])                 # the target in orbit
    relative_into(tool, poses[P_TMP], poses[P_TMP2])                            # ... in the tool frame
    tool_err = vecs[V_TOOL_ERROR]
    log6_into(poses[P_TMP2], tool_err)
    for k in range(6):
        tool_err[k] = -tool_err[k]                                              # the tool relative to the target
    twist_tool = vecs[V_TWIST_TOOL]
    for r in range(6):
        acc = 0.0
        for c in range(nv):
            acc += jac[r, c] * vel[c]
        twist_tool[r] = acc
    tool_in_client = poses[P_TOOL_IN_CLIENT]
    relative_into(g_t, tool, tool_in_client)
    comove = vecs[V_TWIST_COMOVE]
    _act_inv_motion(tool_in_client, v_t, comove)
    d0, d1, d2 = twist_tool[0] - comove[0], twist_tool[1] - comove[1], twist_tool[2] - comove[2]
    scalars[S_REL_SPEED] = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if flags & START_PATH:                                # the approach starts: its path, fixed in the client frame
        for k in range(12):
            poses[P_PATH_START, k] = tool_in_client[k]
        relative_into(tool_in_client, poses[P_TARGET_IN_CLIENT], poses[P_TMP])
        log6_into(poses[P_TMP], vecs[V_PATH_LOG])
    if mode != MODE_POST_GRASP:                           # h = [C_b V_b + C_bq dq; C_qb V_b + C_q dq] of Eq. (12)
        zero = vecs[V_ZERO]
        chain_rnea(parents, placements, kind, axis, inertia, zero[:6], poses[P_IDENTITY], q, vel, zero,
                   np.zeros((parents.shape[0], 6)), work, vecs[V_CORIOLIS], False)


@njit(**_OPTS)
def _law(mode, flags, s, poses, vecs, mats, scalars):
    """The law of the phase from the kinematics stage's results (:meth:`ObswController.update_reference`)."""
    nv = vecs.shape[1]
    n = nv - 6
    v_b, dq = vecs[V_VELOCITY, :6], vecs[V_VELOCITY, 6:]
    q = vecs[V_Q]
    m_red, jac = mats[M_REDUCED], mats[M_JACOBIAN]
    f_b, tau = vecs[V_WRENCH_BASE], vecs[V_TAU]
    twist_sync, h = vecs[V_TWIST_SYNC], vecs[V_CORIOLIS]
    tmp, tmp2 = vecs[V_TMP], vecs[V_TMP2]
    if mode == MODE_POST_GRASP:
        # Thrusters off; the arm applies to the base the impedance W_b = -K_r e_r - D_r V_r about the closure pose.
        if flags & LATCH_GRASP:
            for k in range(12):
                poses[P_BASE_IN_CLIENT_GRASP, k] = poses[P_BASE_IN_CLIENT, k]
            for k in range(n):
                vecs[V_Q_GRASP, k] = q[k]
        relative_into(poses[P_BASE_IN_CLIENT_GRASP], poses[P_BASE_IN_CLIENT], poses[P_TMP])
        log6_into(poses[P_TMP], tmp)                                            # e_r
        k_r, d_r = vecs[V_POST_STIFFNESS], vecs[V_POST_DAMPING]
        for k in range(6):
            tmp2[k] = -k_r[k] * tmp[k] - d_r[k] * (v_b[k] - twist_sync[k])      # W_b, base axes
            tmp[k] = 0.0
            f_b[k] = 0.0
        relative_into(poses[P_TOOL], poses[P_BASE], poses[P_TMP])               # the base in the tool frame
        _act_force_add(poses[P_TMP], tmp2, tmp)                                 # -W_tool
        w, d = scalars[S_POST_BANDWIDTH], scalars[S_POST_DAMPING]
        q_grasp = vecs[V_Q_GRASP]
        for k in range(n):
            tmp2[k] = w * w * (q[k] - q_grasp[k]) + d * dq[k]
        for i in range(n):
            acc = 0.0
            for r in range(6):
                acc -= jac[r, 6 + i] * tmp[r]
            red = 0.0
            for j in range(n):
                red += m_red[i, j] * tmp2[j]
            tau[i] = _clip(acc - red, scalars[S_MAX_JOINT_TORQUE])
        return
    # Phases 1-3: the base synchronises, F_b = h_b - K_b e_b - D_b (V_b - V_b*), clipped per axis.
    k_b, d_b, e_b = vecs[V_BASE_STIFFNESS], vecs[V_BASE_DAMPING], vecs[V_BASE_ERROR]
    for k in range(6):
        f = h[k] - k_b[k] * e_b[k] - d_b[k] * (v_b[k] - twist_sync[k])
        f_b[k] = _clip(f, scalars[S_MAX_FORCE] if k < 3 else scalars[S_MAX_TORQUE])
    if mode == MODE_SYNC:                                 # joint hold: -M_red (w^2 (q - q_hold) + 2 w dq)
        w = scalars[S_HOLD_BANDWIDTH]
        q_hold = vecs[V_Q_HOLD]
        for k in range(n):
            tmp[k] = w * w * (q[k] - q_hold[k]) + 2.0 * w * dq[k]
        for i in range(n):
            red = 0.0
            for j in range(n):
                red += m_red[i, j] * tmp[j]
            tau[i] = _clip(h[6 + i] - red, scalars[S_MAX_JOINT_TORQUE])
        return
    # Approach and grasp: the tool follows the minimum-jerk path g_t g_path exp6(s log) with the compliance
    # tau = h_q + J_m^T Lambda a - D_n M_red dq, a = -w^2 e_x - 2 zeta w (V_tool - V_comove), Lambda the tool inertia.
    pose_mul_into(poses[P_CLIENT], poses[P_PATH_START], poses[P_TMP])
    path_log = vecs[V_PATH_LOG]
    _mul_exp6(poses[P_TMP], s * path_log[0], s * path_log[1], s * path_log[2], s * path_log[3], s * path_log[4],
              s * path_log[5], poses[P_TMP2])                                   # the path's reference in orbit
    relative_into(poses[P_TOOL], poses[P_TMP2], poses[P_TMP])                   # ... in the tool frame
    log6_into(poses[P_TMP], tmp)
    w_tool = vecs[V_TOOL_BANDWIDTH]
    zeta = scalars[S_DAMPING_RATIO]
    twist_tool, comove = vecs[V_TWIST_TOOL], vecs[V_TWIST_COMOVE]
    accel = np.empty(6)
    for k in range(6):
        w = w_tool[k]
        accel[k] = w * w * tmp[k] - 2.0 * zeta * w * (twist_tool[k] - comove[k])     # err = -log6(...)
    # Lambda a = (J_m M_red^-1 J_m^T)^-1 a: M_red^-1 J_m^T column by column, then a 6x6 solve.
    m_copy = np.empty((n, n))
    rhs, sol = np.empty(n), np.empty(n)
    minv_jt = np.empty((n, 6))
    for c in range(6):
        for i in range(n):
            rhs[i] = jac[c, 6 + i]
            for j in range(n):
                m_copy[i, j] = m_red[i, j]
        solve_into(m_copy, rhs, sol)
        for i in range(n):
            minv_jt[i, c] = sol[i]
    op = np.empty((6, 6))
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for i in range(n):
                acc += jac[r, 6 + i] * minv_jt[i, c]
            op[r, c] = acc
    lam_accel = np.empty(6)
    solve_into(op, accel, lam_accel)
    d_n = scalars[S_NULL_DAMPING]
    for i in range(n):
        acc = h[6 + i]
        for r in range(6):
            acc += jac[r, 6 + i] * lam_accel[r]
        red = 0.0
        for j in range(n):
            red += m_red[i, j] * dq[j]
        tau[i] = _clip(acc - d_n * red, scalars[S_MAX_JOINT_TORQUE])


@njit(**_OPTS)
def obsw_step(mode, flags, s, poses, vecs, mats, scalars, homogeneous, parents, placements, kind, axis, inertia, ee_joint,
              work, work_ic):
    """One call of the rule on arrays: the kinematics stage when ``flags & KINEMATICS``, the law of ``mode``
    (``MODE_SYNC``, ``MODE_PATH`` at path fraction ``s``, ``MODE_POST_GRASP``) when ``flags & LAW``;
    ``START_PATH`` stores the approach's path from this call's tool pose, ``LATCH_GRASP`` the closure's base
    pose and joint angles. ``CLIENT_HOMOGENEOUS``/``BASE_HOMOGENEOUS``: ``g_t``/``g_b`` are given as 4x4 matrices
    in ``homogeneous`` (a ``pin.SE3``'s cheapest export). Layout: the module docstring."""
    for k, row, flag in ((0, P_CLIENT, CLIENT_HOMOGENEOUS), (1, P_BASE, BASE_HOMOGENEOUS)):
        if flags & flag:
            h = homogeneous[k]
            for i in range(3):
                for j in range(3):
                    poses[row, 3 * i + j] = h[i, j]
                poses[row, 9 + i] = h[i, 3]
    if flags & KINEMATICS:
        _kinematics(mode, flags, poses, vecs, mats, scalars, parents, placements, kind, axis, inertia, ee_joint, work,
                    work_ic)
    if flags & LAW:
        _law(mode, flags, s, poses, vecs, mats, scalars)


def warm_up() -> None:
    """Compile (or load from the cache) :func:`obsw_step` with the argument types the controller passes:
    ``./dev`` runs this, so no OBSW node compiles in its first real-time callback."""
    from hil_admittance.obsw import ObswController
    from hil_dynamics.models import servicer_lbr_urdf
    from hil_dynamics.servicer import ServicerModel

    model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    controller = ObswController(model, pin.SE3.Identity(), pin.SE3.Identity(), pin.SE3.Identity(), pin.SE3.Identity(),
                                np.zeros(model.n))
    controller.update(0.0, pin.SE3.Identity(), np.zeros(6), pin.SE3.Identity(), np.zeros(6), np.zeros(model.n),
                      np.zeros(model.n))


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_admittance.obsw_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
