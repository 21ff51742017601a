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

from hil_dynamics.kernels import _OPTS

JOINT_LIMIT, JOINT_VELOCITY, JOINT_ACCELERATION = 1, 2, 4


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


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_motion_table.table_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
