"""The motion table's per-command checks and joint limits as compiled calls (Numba; no rclpy).

:meth:`hil_motion_table.table.MotionTable.step` runs at every streamed command. Its input check
(a finite pose with an orthonormal, right-handed rotation and a finite twist) and its joint-space
limits (position, velocity, acceleration) were a dozen small NumPy calls each, about 45 us per
command on this machine; here each is one call. The readable definitions stay in ``table.py``
(:func:`~hil_motion_table.table.is_rotation`, :func:`~hil_motion_table.table.limit_joints_reference`), and
``test_table_kernel`` checks that these agree with them exactly on random inputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_motion_table import ik_kernel as _ik_kernel
from hil_dynamics.kernels import _OPTS, _mul_exp6
from hil_motion_table.ik_kernel import forward_into, log6_into, relative_into, serial_ik

JOINT_LIMIT, JOINT_VELOCITY, JOINT_ACCELERATION = 1, 2, 4
# table_motion's other outcomes (the joint flags above come from limit_joints)
CARTESIAN_SPEED, WORKSPACE_EXIT, UNREACHABLE, SINGULAR = 8, 16, 32, 64
# table_motion's ``par``: the table's constants, in this order
P_HORIZON, P_FILTER_HZ, P_MAX_LIN, P_MAX_ANG, P_SEED_RADIUS, P_TOL, P_MAX_IT, P_MAX_STEP, P_DAMPING, P_DAMPING_MAX, \
    P_BAND, P_HINT_RADIUS, P_SIGMA_MIN = range(13)


@njit(**_OPTS)
def command_ok(rotation, translation, twist, tol):
    """Finite translation, ``rotation`` orthonormal and right-handed within ``tol``, ``twist`` finite."""
    for i in range(3):
        if not np.isfinite(translation[i]):
            return False
        for j in range(3):
            if not np.isfinite(rotation[i, j]):
                return False
    for k in range(twist.shape[0]):
        if not np.isfinite(twist[k]):
            return False
    worst = 0.0
    for i in range(3):
        for j in range(3):
            s = rotation[0, i] * rotation[0, j] + rotation[1, i] * rotation[1, j] + rotation[2, i] * rotation[2, j]
            worst = max(worst, abs(s - (1.0 if i == j else 0.0)))
    if worst > tol:
        return False
    r = rotation
    det = (r[0, 0] * (r[1, 1] * r[2, 2] - r[1, 2] * r[2, 1]) - r[0, 1] * (r[1, 0] * r[2, 2] - r[1, 2] * r[2, 0])
           + r[0, 2] * (r[1, 0] * r[2, 1] - r[1, 1] * r[2, 0]))
    return abs(det - 1.0) < tol


@njit(**_OPTS)
def limit_joints(q, q_ik_prev, has_prev, q_cmd, qd_cmd, dt, qd_max, qdd_max, q_lo, q_hi, q_next, qd_next, ik_step):
    """The joint-space limits of one command (:func:`hil_motion_table.table.limit_joints_reference`): returns
    :data:`JOINT_LIMIT` (nothing written) or the clamp flags; writes the next command ``q_next``, its
    rate ``qd_next`` and the IK solution's change ``ik_step`` (zero without a previous solution)."""
    n = q.shape[0]
    for k in range(n):
        if q[k] < q_lo[k] or q[k] > q_hi[k]:
            return JOINT_LIMIT
    flags = 0
    for k in range(n):
        step = q[k] - q_ik_prev[k] if has_prev else 0.0
        ik_step[k] = step
        rate = step / dt
        gap = q[k] - q_cmd[k] - rate * dt
        mag = abs(gap)
        closing = min(mag / dt, np.sqrt(2.0 * qdd_max[k] * mag))
        if gap < 0.0:
            closing = -closing
        elif gap == 0.0:
            closing = 0.0
        qd = rate + closing
        qd_lim = min(max(qd, -qd_max[k]), qd_max[k])
        if abs(qd_lim - qd) > 1e-12:
            flags |= JOINT_VELOCITY
        acc_step = qdd_max[k] * dt
        qd_acc = min(max(qd_lim, qd_cmd[k] - acc_step), qd_cmd[k] + acc_step)
        if abs(qd_acc - qd_lim) > 1e-12:
            flags |= JOINT_ACCELERATION
        nxt = min(max(q_cmd[k] + qd_acc * dt, q_lo[k]), q_hi[k])
        qd_next[k] = (nxt - q_cmd[k]) / dt
        q_next[k] = nxt
    return flags


@njit(**_OPTS)
def table_motion(cmd, twist_ff, has_ff, dt, par, prev_cmd, has_prev_cmd, twist_est, twist_prev, has_twist_prev,
                 pose_safe, ws_min, ws_max, seed, q_cmd, qd_cmd, q_ik_prev, q_ik_step, has_ik_prev, has_ik_step,
                 placements, kind, axis, frame_placement, poses, jac, hint_sigma, hint_q, q_lo, q_hi, qd_max, qdd_max,
                 target, q_ik, q_next, qd_next, ik_step, result):
    """Steps 2-7 of :meth:`hil_motion_table.table.MotionTable.step_reference` (its readable definition) for a
    serial chain (:class:`hil_motion_table.ik_kernel.SerialChain`), in one call on arrays.

    The command ``cmd`` has passed step 1. Updates the prediction's state (``prev_cmd``, ``twist_est``,
    ``twist_prev``) as the reference does; writes the target into ``target``, the IK solution into
    ``q_ik`` and ``result`` = (error, sigma_min, iterations), and returns the outcome's flags
    (:data:`CARTESIAN_SPEED` and the joint clamps, or one fault: :data:`WORKSPACE_EXIT`,
    :data:`UNREACHABLE`, :data:`SINGULAR`, :data:`JOINT_LIMIT`). Without a fault it writes the next command
    into ``q_next``, ``qd_next``, the solution's change into ``ik_step`` and the new safe pose into
    ``pose_safe``; the caller moves its state on (``q_cmd``, ``qd_cmd`` and the IK's are left as they were).
    """
    n = q_cmd.shape[0]
    rel = np.empty(12)
    e = np.empty(6)
    # 2. delay compensation
    if has_prev_cmd:
        relative_into(prev_cmd, cmd, rel)
        log6_into(rel, e)
        alpha = 1.0 - np.exp(-2.0 * np.pi * par[P_FILTER_HZ] * dt)
        for k in range(6):
            twist_est[k] += alpha * (e[k] / dt - twist_est[k])
    for k in range(12):
        prev_cmd[k] = cmd[k]
    h = par[P_HORIZON]
    if h <= 0.0:
        for k in range(12):
            target[k] = cmd[k]
    else:
        u = np.empty(6)
        for k in range(6):
            if has_ff:
                rate = (twist_ff[k] - twist_prev[k]) / dt if has_twist_prev else 0.0
                u[k] = h * twist_ff[k] + 0.5 * h * h * rate
            else:
                u[k] = h * twist_est[k]
        if has_ff:
            for k in range(6):
                twist_prev[k] = twist_ff[k]
        _mul_exp6(cmd, u[0], u[1], u[2], u[3], u[4], u[5], target)
    flags = 0
    # 3. maximum Cartesian speed, along the geodesic from the last safe pose
    relative_into(pose_safe, target, rel)
    log6_into(rel, e)
    lin = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    ang = np.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
    scale = min(1.0, par[P_MAX_LIN] * dt / lin if lin > 0 else 1.0, par[P_MAX_ANG] * dt / ang if ang > 0 else 1.0)
    if scale < 1.0:
        _mul_exp6(pose_safe, scale * e[0], scale * e[1], scale * e[2], scale * e[3], scale * e[4], scale * e[5],
                  target)
        flags |= CARTESIAN_SPEED
    # 4. workspace box
    for k in range(3):
        if target[9 + k] < ws_min[k] or target[9 + k] > ws_max[k]:
            return flags | WORKSPACE_EXIT
    # 5. IK from the seed, or from the previous solution moved on by its last change
    finite = True
    for k in range(n):
        if not np.isfinite(seed[k]):
            finite = False
    for k in range(n):
        q_ik[k] = seed[k] if finite else q_cmd[k]
    if has_ik_prev:
        far = 0.0
        for k in range(n):
            far = max(far, abs(q_ik_prev[k] - q_ik[k]))
        if far < par[P_SEED_RADIUS]:
            for k in range(n):
                q_ik[k] = q_ik_prev[k] + q_ik_step[k] if has_ik_step else q_ik_prev[k]
    serial_ik(placements, kind, axis, frame_placement, poses, jac, target, q_ik, par[P_TOL], int(par[P_MAX_IT]),
              par[P_MAX_STEP], par[P_DAMPING], par[P_DAMPING_MAX], par[P_BAND], hint_sigma, hint_q,
              par[P_HINT_RADIUS], result)
    if not result[0] < par[P_TOL] * 1e3:
        return flags | UNREACHABLE
    if result[1] < par[P_SIGMA_MIN]:
        return flags | SINGULAR
    # 6.-7. joint limits
    joint = limit_joints(q_ik, q_ik_prev, has_ik_prev, q_cmd, qd_cmd, dt, qd_max, qdd_max, q_lo, q_hi, q_next,
                         qd_next, ik_step)
    if joint & JOINT_LIMIT:
        return flags | JOINT_LIMIT
    flags |= joint
    if joint & (JOINT_VELOCITY | JOINT_ACCELERATION):         # the pose the clamped command reaches
        forward_into(placements, kind, axis, frame_placement, q_next, poses)
        for k in range(12):
            pose_safe[k] = poses[n, k]
    else:
        for k in range(12):
            pose_safe[k] = target[k]
    return flags


#: a table loop state's ``tf`` (float64): the previous step's time, the IK's sigma hint
#: (``hil_motion_table.table_loop.TableLoopState``)
TF_T_PREV, TF_HINT_SIGMA = range(2)
#: its ``ti`` (int64): the table's flags (a previous command, twist, step time, IK solution, IK change, sigma hint), the
#: steps run and the clamps counted (``table._CLAMP_BITS``' order) since it was entered
TI_HAS_PREV_CMD, TI_HAS_TWIST_PREV, TI_HAS_T_PREV, TI_HAS_IK_PREV, TI_HAS_IK_STEP, TI_HAS_HINT, TI_STEPS, \
    TI_CLAMP_SPEED, TI_CLAMP_VELOCITY, TI_CLAMP_ACCELERATION = range(10)


@njit(**_OPTS)
def loop_dt(table, t):
    """``MotionTable.dt_at(t)`` on a table loop state ``table`` (``TableLoopState.args``): the time since the
    previous step, one period if there is none or it is not in (0, 10 periods)."""
    period, tf, ti = table[33], table[34], table[35]
    if ti[TI_HAS_T_PREV]:
        dt = t - tf[TF_T_PREV]
        if 0.0 < dt < 10.0 * period:
            return dt
    return period


@njit(**_OPTS)
def loop_save(table):
    """Save the prediction's state that ``table_motion`` changes before it can fail (:func:`loop_restore`)."""
    table[10][:] = table[4]
    table[11][:] = table[5]
    table[12][:] = table[6]


@njit(**_OPTS)
def loop_restore(table):
    """The prediction's state as :func:`loop_save` saved it: a command the caller hands back to Python."""
    table[4][:] = table[10]
    table[5][:] = table[11]
    table[6][:] = table[12]


@njit(**_OPTS)
def loop_motion_args(table, has_ff, dt):
    """``MotionTable.motion_args(has_ff, dt, q_seed)`` on a table loop state: ``table_motion``'s arguments after its
    command and twist."""
    (q_seed, q_cmd, qd_cmd, pose_safe, prev_cmd, twist_est, twist_prev, ik_prev, ik_step, hint_q, _, _, _, q_ik,
     q_next, qd_next, ik_step_out, par, ws_min, ws_max, placements, kind, axis, frame_placement, poses, jac,
     chain_hint_q, q_lo, q_hi, qd_max, qdd_max, target, result, _, tf, ti) = table
    hint_sigma, hint = -1.0, chain_hint_q               # without a hint
    if ti[TI_HAS_HINT]:
        hint_sigma, hint = tf[TF_HINT_SIGMA], hint_q
    return (has_ff, dt, par, prev_cmd, ti[TI_HAS_PREV_CMD] != 0, twist_est, twist_prev, ti[TI_HAS_TWIST_PREV] != 0,
            pose_safe, ws_min, ws_max, q_seed, q_cmd, qd_cmd, ik_prev, ik_step, ti[TI_HAS_IK_PREV] != 0,
            ti[TI_HAS_IK_STEP] != 0, placements, kind, axis, frame_placement, poses, jac, hint_sigma, hint, q_lo, q_hi,
            qd_max, qdd_max, target, q_ik, q_next, qd_next, ik_step_out, result)


@njit(**_OPTS)
def loop_motion(cmd, twist, has_ff, dt, table):
    """``table_motion`` for the checked command ``cmd`` (and ``twist``) on a table loop state: its flags."""
    return table_motion(cmd, twist, *loop_motion_args(table, has_ff, dt))


@njit(**_OPTS)
def loop_advance(table, t, has_ff, flags):
    """The table loop state moved on after a step at ``t`` whose ``table_motion`` returned ``flags`` without a
    fault (``MotionTable.begin_step`` and ``motion_outcome``: the new command, the IK's solution, change and hint,
    the clamps counted)."""
    (_, q_cmd, qd_cmd, _, _, _, _, ik_prev, ik_step, hint_q, _, _, _, q_ik, q_next, qd_next, ik_step_out, par, _, _,
     _, _, _, _, _, _, _, _, _, _, _, _, result, _, tf, ti) = table
    ti[TI_STEPS] += 1
    tf[TF_T_PREV] = t
    ti[TI_HAS_T_PREV] = 1
    ti[TI_HAS_PREV_CMD] = 1
    if has_ff and par[P_HORIZON] > 0.0:
        ti[TI_HAS_TWIST_PREV] = 1
    tf[TF_HINT_SIGMA] = result[1]
    hint_q[:] = q_ik
    ti[TI_HAS_HINT] = 1
    has_ik_prev = ti[TI_HAS_IK_PREV] != 0
    if has_ik_prev:
        ik_step[:] = ik_step_out
    ti[TI_HAS_IK_STEP] = has_ik_prev
    ik_prev[:] = q_ik
    ti[TI_HAS_IK_PREV] = 1
    qd_cmd[:] = qd_next
    q_cmd[:] = q_next
    ti[TI_CLAMP_SPEED] += (flags & CARTESIAN_SPEED) != 0
    ti[TI_CLAMP_VELOCITY] += (flags & JOINT_VELOCITY) != 0
    ti[TI_CLAMP_ACCELERATION] += (flags & JOINT_ACCELERATION) != 0


def warm_up() -> None:
    """Compile (or load from the cache) the table's kernels and the IK's (:mod:`hil_motion_table.ik_kernel`)
    with the types a table passes: ``./dev`` runs this, so no node compiles in its first command."""
    from hil_motion_table.kinematics import SerialKinematics
    from hil_motion_table.robot_models import SERIAL_ROBOTS
    from hil_motion_table.table import MotionTable, TableLimits

    kin = SerialKinematics(SERIAL_ROBOTS['ur10e']())
    table = MotionTable(kin, TableLimits((-3.0,) * 3, (3.0,) * 3, 1.0, 1.0, 0.01, 0.0, 0.1), period=1e-3)
    table.initialize(kin.q_home)
    pose = kin.forward(kin.q_home)
    table.step(pose, kin.q_home, np.zeros(6), t=0.0)
    table.step(pose, kin.q_home, None, t=1e-3)


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels, _ik_kernel)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_motion_table.table_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
