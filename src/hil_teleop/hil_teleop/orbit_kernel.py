"""The orbit side of seed 001's lockstep in one compiled call a control period (issue 17).

:meth:`hil_teleop.slave_side.OrbitSide.step_reference` is the readable period, built from the rule objects
(:class:`~hil_teleop.slave_side.GripContact`, :class:`~hil_teleop.slave_law.SlaveSide`,
:class:`~hil_teleop.slave_side.SlaveArm`, :class:`~hil_teleop.slave_side.PayloadInTheLoop`, ``pinocchio``);
:func:`orbit_step` is the same arithmetic on one state array, in the same order:

1. the grip's pose and world-aligned velocity from the payload's state;
2. the wrist wrench ``f_s`` of the grip contact (spring-damper, ``log3`` of the relative rotation);
3. ``x_s = [r; phi]`` of the end effector (``pinocchio.rpy.matrixToRpy``'s angles);
4. the slave's step: ``v_s`` observed, Eq. (3) (:func:`hil_teleop.virtual_kernel.slave_command`; zero on a stale
   command), the commanded pose advanced by ``v_s,c dt``;
5. the arm (Appendix A, Eq. 19's servo lag and droop) and the payload (seed 004 Eq. 11 with a zero nominal,
   :func:`hil_dynamics.kernels.client_rkmk4_step`) over ``dt`` with ``f_s`` held.

``test/test_orbit_kernel.py`` checks it against the reference to 1e-12 on random states, and a whole run both ways.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import _OPTS, _act_force_add, _cross, _finite3, _mul_exp6, _rtv, _rv, client_rkmk4_step, \
    log6_into, pose_mul_into
from hil_teleop import virtual_kernel as _virtual_kernel
from hil_teleop.virtual_kernel import slave_command

__all__ = ['orbit_step', 'rpy_of_pose_into']

#: the state array ``s``: the arm's end-effector pose (12-array, ``hil_dynamics.kernels.pose_array``) and
#: world-aligned velocity; the payload's admittance state ``g_n, V_n, g_c, V_c``; Eq. (3)'s ``v_s(t - dt)``,
#: ``v_s(t - 2 dt)``; the slave's commanded pose; the payload's time
S_ARM, S_ARM_V, S_GN, S_VN, S_GC, S_VC, S_VPREV, S_VPREV2, S_EE_CMD, S_T, N_S = 0, 12, 18, 30, 36, 48, 54, 60, 66, 78, 79
#: the (7, 6) constants: the contact's stiffness and damping, the arm's droop, Eq. (3)'s ``K_s G``, ``K_s``,
#: ``K_c`` and ``D``
C_K, C_D, C_DROOP, C_VR_GAIN, C_KS_FEEDBACK, C_KC, C_DEFF, N_C = range(8)
#: the scalars and fixed poses: the payload's start pose (``g_0``) and its grip's pose in it, ``I_com`` and its
#: inverse (9 each), the mass, the arm's lag factor over ``dt`` (:meth:`SlaveArm.lag_factor`) and ``dt``
CS_POSE_0, CS_GRIP, CS_INERTIA, CS_INERTIA_INV, CS_MASS, CS_ALPHA, CS_DT, N_CS = 0, 12, 24, 33, 42, 43, 44, 45
#: the (10, 6) outputs: ``f_s``, ``x_s``, Eq. (3)'s ``v_s,c`` and its terms (``v_s,r``, force feedback, coupling,
#: damping), the grip's ``x`` and velocity, and the arm's new ``v_s``
O_F_S, O_X_S, O_V_C, O_V_R, O_FF, O_COUPLING, O_DAMPING, O_X_P, O_V_P, O_V_S, N_O = range(11)
#: :func:`orbit_step`'s returns
OK, REFUSED = 0, 1


@njit(**_OPTS)
def rpy_of_pose_into(g, out):
    """``pinocchio.rpy.matrixToRpy`` of a 12-array pose's rotation into ``out[:3]``: roll, pitch, yaw of
    ``R = Rz(yaw) Ry(pitch) Rx(roll)`` with pitch in ``[-pi/2, pi/2]``. Pinocchio takes Eigen's ``eulerAngles(2, 1,
    0)`` (yaw in ``[0, pi]``, the roll from the yaw's sine and cosine, which holds at gimbal lock too) and moves a
    pitch beyond ``pi/2`` back into range; the same steps here (tested against it to 1e-12, at gimbal lock too)."""
    yaw = math.atan2(g[3], g[0])
    c2 = math.hypot(g[8], g[7])
    if yaw < 0.0:
        yaw += math.pi
        pitch = math.atan2(-g[6], -c2)
    else:
        pitch = math.atan2(-g[6], c2)
    s1, c1 = math.sin(yaw), math.cos(yaw)
    roll = math.atan2(s1 * g[2] - c1 * g[5], c1 * g[4] - s1 * g[1])
    if pitch < -0.5 * math.pi:
        pitch += 2.0 * math.pi
    if pitch > 0.5 * math.pi:
        pitch = math.pi - pitch
        roll = roll + math.pi if roll < 0.0 else roll - math.pi
        yaw -= math.pi
    out[0], out[1], out[2] = roll, pitch, yaw


@njit(**_OPTS)
def _advance_world_into(g, v, dt, out):
    """:func:`hil_teleop.coordinates.advance_pose_world` on 12-arrays: ``R <- exp3(w dt) R``, ``p <- p + v dt``
    (``out`` may be ``g``)."""
    work = np.zeros((3, 12))
    ident, e, moved = work[0], work[1], work[2]
    ident[0] = ident[4] = ident[8] = 1.0
    _mul_exp6(ident, 0.0, 0.0, 0.0, v[3] * dt, v[4] * dt, v[5] * dt, e)       # exp3(w dt), p = 0
    pose_mul_into(e, g, moved)
    out[:9] = moved[:9]
    out[9], out[10], out[11] = g[9] + v[0] * dt, g[10] + v[1] * dt, g[11] + v[2] * dt


@njit(**_OPTS)
def orbit_step(s, c6, cs, nom, f_m, x_vir, fresh, out):
    """One period of the orbit side (the module's steps 1-5) on the state ``s`` (``S_*``) with the constants ``c6``
    (``C_*``), ``cs`` (``CS_*``) and the nominal's Eq. (4) inertia and inverse ``nom`` (2, 6, 6); ``f_m``, ``x_vir``
    the delayed master command when ``fresh`` (else Eq. 3's zero velocity, stale). Writes ``out`` (``O_*``) and
    returns :data:`OK`; :data:`REFUSED` with ``s`` untouched where an input, ``f_s``, ``x_s`` or the command is not
    finite (the reference then names it)."""
    arm, arm_v = s[S_ARM:S_ARM + 12], s[S_ARM_V:S_ARM_V + 6]
    g_c, v_c = s[S_GC:S_GC + 12], s[S_VC:S_VC + 6]
    grip_in_payload = cs[CS_GRIP:CS_GRIP + 12]
    work = np.empty((4, 12))
    payload, grip, rel, log = work[0], work[1], work[2], work[3]
    # 1. the grip's pose g_0 g_c g_grip and world-aligned velocity [R (v + w x r_grip); R w] (PayloadInTheLoop.grip)
    pose_mul_into(cs[CS_POSE_0:CS_POSE_0 + 12], g_c, payload)
    pose_mul_into(payload, grip_in_payload, grip)
    wr = _cross(v_c[3], v_c[4], v_c[5], grip_in_payload[9], grip_in_payload[10], grip_in_payload[11])
    lin = _rv(payload, v_c[0] + wr[0], v_c[1] + wr[1], v_c[2] + wr[2])
    ang = _rv(payload, v_c[3], v_c[4], v_c[5])
    v_p = out[O_V_P]
    v_p[0], v_p[1], v_p[2], v_p[3], v_p[4], v_p[5] = lin[0], lin[1], lin[2], ang[0], ang[1], ang[2]
    # 2. the wrist wrench (GripContact.wrench): k [p_ee - p_grip; log3(R_ee R_grip^T)] + d (v_ee - v_grip)
    for i in range(3):
        for j in range(3):
            rel[3 * i + j] = arm[3 * i] * grip[3 * j] + arm[3 * i + 1] * grip[3 * j + 1] + arm[3 * i + 2] * grip[3 * j + 2]
    rel[9] = rel[10] = rel[11] = 0.0
    log6_into(rel, log)                           # with p = 0 its angular part is log3(R) alone
    k, d, f_s = c6[C_K], c6[C_D], out[O_F_S]
    for i in range(3):
        f_s[i] = k[i] * (arm[9 + i] - grip[9 + i]) + d[i] * (arm_v[i] - v_p[i])
        f_s[3 + i] = k[3 + i] * log[3 + i] + d[3 + i] * (arm_v[3 + i] - v_p[3 + i])
    # 3. x_s and the grip's x
    x_s, x_p = out[O_X_S], out[O_X_P]
    x_s[0], x_s[1], x_s[2] = arm[9], arm[10], arm[11]
    rpy_of_pose_into(arm, x_s[3:])
    x_p[0], x_p[1], x_p[2] = grip[9], grip[10], grip[11]
    rpy_of_pose_into(grip, x_p[3:])
    if not (_finite3(f_s, x_s, arm_v) and _finite3(f_m, x_vir, x_p)):
        return REFUSED
    # 4. Eq. (3) with v_s observed (SlaveSide.step: v_s(t - dt) = the arm's, v_s(t - 2 dt) = the previous one)
    v_prev = s[S_VPREV:S_VPREV + 6]
    v_cmd = out[O_V_C]
    if fresh:
        if not slave_command(f_m, x_vir, x_s, f_s, arm_v, v_prev, c6[C_VR_GAIN], c6[C_KS_FEEDBACK], c6[C_KC],
                             c6[C_DEFF], v_cmd, out[O_V_R], out[O_FF], out[O_COUPLING], out[O_DAMPING]):
            return REFUSED
    else:
        for r in (O_V_C, O_V_R, O_FF, O_COUPLING, O_DAMPING):
            out[r, :] = 0.0
    # the wrench on the payload, body axes about its CoM (PayloadInTheLoop.wrench_com_body), checked before the step
    f_body = _rtv(grip, f_s[0], f_s[1], f_s[2])
    t_body = _rtv(grip, f_s[3], f_s[4], f_s[5])
    w_grip = np.empty(6)
    w_grip[0], w_grip[1], w_grip[2], w_grip[3], w_grip[4], w_grip[5] = f_body[0], f_body[1], f_body[2], t_body[0], \
        t_body[1], t_body[2]
    wrench = np.zeros(6)
    _act_force_add(grip_in_payload, w_grip, wrench)        # transform_wrench(pose_grip_in_payload, w_grip)
    if not _finite3(wrench, wrench, wrench):
        return REFUSED
    # -- the state moves on from here
    dt = cs[CS_DT]
    v_prev2 = s[S_VPREV2:S_VPREV2 + 6]
    v_prev2[:] = v_prev
    v_prev[:] = arm_v
    ee_cmd = s[S_EE_CMD:S_EE_CMD + 12]
    _advance_world_into(ee_cmd, v_cmd, dt, ee_cmd)
    # 5. the arm (SlaveArm.step): v <- v + alpha (v_c - A f_s - v), the pose at the mean velocity
    alpha, droop, v_s = cs[CS_ALPHA], c6[C_DROOP], out[O_V_S]
    v_mid = np.empty(6)
    for i in range(6):
        v_s[i] = arm_v[i] + alpha * ((v_cmd[i] - droop[i] * f_s[i]) - arm_v[i])
        v_mid[i] = 0.5 * (arm_v[i] + v_s[i])
    arm_v[:] = v_s
    _advance_world_into(arm, v_mid, dt, arm)
    # and the payload (ClientAdmittance.step with the wrench held)
    client_rkmk4_step(s[S_GN:S_GN + 12], s[S_VN:S_VN + 6], g_c, v_c, wrench, cs[CS_MASS],
                      cs[CS_INERTIA:CS_INERTIA + 9], cs[CS_INERTIA_INV:CS_INERTIA_INV + 9], nom[0], nom[1], dt)
    s[S_T] += dt
    return OK


def warm_up() -> None:
    """Compile (or load from the cache) the kernel with the types :class:`~hil_teleop.slave_side.OrbitSide` passes
    (``./dev`` runs this)."""
    from hil_teleop.config import TeleopConfig, earth_and_link
    from hil_teleop.slave_side import OrbitSide

    config = TeleopConfig()
    OrbitSide.of_config(config, earth_and_link(config).law).step((np.zeros(6), np.zeros(6)))


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _virtual_kernel)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_teleop.orbit_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
