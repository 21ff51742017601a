"""The virtual environment's step (seed 001 Eqs. 4-10) and the slave's Eq. (3) as one compiled call each (issue 17).

:meth:`hil_teleop.virtual.VirtualEnvironment.step_reference` is the readable version, built from
:mod:`hil_teleop.coordinates` and ``pinocchio.rpy``; :func:`virtual_step` is the same arithmetic
on plain float arrays, compiled with Numba, so that a step costs a few microseconds instead of
some forty Python-level calls on 6-vectors. ``test/test_virtual_kernel.py`` checks it against
the reference (and its roll-pitch-yaw pieces against Pinocchio) to 1e-12.

Conventions of :mod:`hil_teleop.coordinates`: ``x = [r; phi]``, ``phi = [roll, pitch, yaw]``
with ``R = Rz(yaw) Ry(pitch) Rx(roll)``, velocities ``[r_dot; omega_world]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import _OPTS, _cross, _finite3

__all__ = ['virtual_step', 'OK', 'GIMBAL_LOCK_PAYLOAD', 'GIMBAL_LOCK_ARM']

OK, GIMBAL_LOCK_PAYLOAD, GIMBAL_LOCK_ARM = 0, 1, 2


@njit(**_OPTS)
def rpy_matrix(phi, out):
    """``R = Rz(yaw) Ry(pitch) Rx(roll)`` (3x3), as ``pinocchio.rpy.rpyToMatrix``."""
    cr, sr = math.cos(phi[0]), math.sin(phi[0])
    cp, sp = math.cos(phi[1]), math.sin(phi[1])
    cy, sy = math.cos(phi[2]), math.sin(phi[2])
    out[0, 0], out[0, 1], out[0, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    out[1, 0], out[1, 1], out[1, 2] = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    out[2, 0], out[2, 1], out[2, 2] = -sp, cp * sr, cp * cr


@njit(inline='always', **_OPTS)
def _euler_rate_to_omega(phi, d0, d1, d2):
    """``E_w(phi) phi_dot``: the world angular velocity of the roll-pitch-yaw rates ``d``."""
    cp, sp = math.cos(phi[1]), math.sin(phi[1])
    cy, sy = math.cos(phi[2]), math.sin(phi[2])
    return cy * cp * d0 - sy * d1, sy * cp * d0 + cy * d1, -sp * d0 + d2


@njit(inline='always', **_OPTS)
def _omega_to_euler_rate(phi, w0, w1, w2):
    """``E_w(phi)^-1 omega`` (the caller has checked ``|cos(pitch)|``)."""
    cp, sp = math.cos(phi[1]), math.sin(phi[1])
    cy, sy = math.cos(phi[2]), math.sin(phi[2])
    roll_rate = (cy * w0 + sy * w1) / cp
    return roll_rate, -sy * w0 + cy * w1, w2 + sp * roll_rate


@njit(inline='always', **_OPTS)
def _wrap(a):
    """``a`` wrapped to ``(-pi, pi]``, as :func:`hil_teleop.coordinates.wrap_angles`."""
    return math.pi - (math.pi - a) % (2.0 * math.pi)


@njit(**_OPTS)
def _integrate_position(x, v, dt, out):
    """:func:`hil_teleop.coordinates.integrate_position` (Eqs. 6 and 10), angles wrapped."""
    r0, r1, r2 = _omega_to_euler_rate(x[3:], v[3], v[4], v[5])
    out[0], out[1], out[2] = x[0] + v[0] * dt, x[1] + v[1] * dt, x[2] + v[2] * dt
    out[3], out[4], out[5] = _wrap(x[3] + r0 * dt), _wrap(x[4] + r1 * dt), _wrap(x[5] + r2 * dt)


@njit(**_OPTS)
def virtual_step(x_vir, v_vir, v_vir_prev, x_t, v_t, f_m, k_t, d_t, v_r_gain, k_s_feedback, d_eff, mass, inertia,
                 inertia_inv, dt, gimbal_lock_cos, x_vir_out, v_vir_out, x_t_out, v_t_out, f_vir_out, v_r_out):
    """One :meth:`VirtualEnvironment.step` (seed 001 Eqs. 7, 8-10, 4-6) into the ``*_out`` arrays.

    Returns :data:`OK`, or :data:`GIMBAL_LOCK_PAYLOAD` / :data:`GIMBAL_LOCK_ARM` (``|cos(pitch)|``
    below ``gimbal_lock_cos``, where ``B^-1`` does not exist) before anything is written.
    ``v_r_gain`` is ``K_s G`` (Eq. 4), ``k_s_feedback`` and ``d_eff`` the switched gains of Eq. (5).
    """
    if abs(math.cos(x_t[4])) < gimbal_lock_cos:
        return GIMBAL_LOCK_PAYLOAD
    if abs(math.cos(x_vir[4])) < gimbal_lock_cos:
        return GIMBAL_LOCK_ARM
    # Eq. (7): f_vir = K_t B(phi_t) (x_vir - x_t) + D_t (v_vir - v_t), angle difference wrapped
    d3, d4, d5 = _wrap(x_vir[3] - x_t[3]), _wrap(x_vir[4] - x_t[4]), _wrap(x_vir[5] - x_t[5])
    e0, e1, e2 = _euler_rate_to_omega(x_t[3:], d3, d4, d5)
    for i in range(3):
        f_vir_out[i] = k_t[i] * (x_vir[i] - x_t[i]) + d_t[i] * (v_vir[i] - v_t[i])
    f_vir_out[3] = k_t[3] * e0 + d_t[3] * (v_vir[3] - v_t[3])
    f_vir_out[4] = k_t[4] * e1 + d_t[4] * (v_vir[4] - v_t[4])
    f_vir_out[5] = k_t[5] * e2 + d_t[5] * (v_vir[5] - v_t[5])
    # Eqs. (8)-(10): v_t += M^-1 (f_vir - [0; w x I_w w]) dt (I_w^-1 = R I^-1 R^T), then x_t
    r = np.empty((3, 3))
    rpy_matrix(x_t[3:], r)
    w0, w1, w2 = v_t[3], v_t[4], v_t[5]
    b0 = r[0, 0] * w0 + r[1, 0] * w1 + r[2, 0] * w2          # R^T w
    b1 = r[0, 1] * w0 + r[1, 1] * w1 + r[2, 1] * w2
    b2 = r[0, 2] * w0 + r[1, 2] * w1 + r[2, 2] * w2
    i0 = inertia[0, 0] * b0 + inertia[0, 1] * b1 + inertia[0, 2] * b2
    i1 = inertia[1, 0] * b0 + inertia[1, 1] * b1 + inertia[1, 2] * b2
    i2 = inertia[2, 0] * b0 + inertia[2, 1] * b1 + inertia[2, 2] * b2
    g0, g1, g2 = _cross(b0, b1, b2, i0, i1, i2)
    t0 = r[0, 0] * f_vir_out[3] + r[1, 0] * f_vir_out[4] + r[2, 0] * f_vir_out[5] - g0
    t1 = r[0, 1] * f_vir_out[3] + r[1, 1] * f_vir_out[4] + r[2, 1] * f_vir_out[5] - g1
    t2 = r[0, 2] * f_vir_out[3] + r[1, 2] * f_vir_out[4] + r[2, 2] * f_vir_out[5] - g2
    a0 = inertia_inv[0, 0] * t0 + inertia_inv[0, 1] * t1 + inertia_inv[0, 2] * t2
    a1 = inertia_inv[1, 0] * t0 + inertia_inv[1, 1] * t1 + inertia_inv[1, 2] * t2
    a2 = inertia_inv[2, 0] * t0 + inertia_inv[2, 1] * t1 + inertia_inv[2, 2] * t2
    for i in range(3):
        v_t_out[i] = v_t[i] + f_vir_out[i] / mass * dt
        v_t_out[3 + i] = v_t[3 + i] + (r[i, 0] * a0 + r[i, 1] * a1 + r[i, 2] * a2) * dt
    _integrate_position(x_t, v_t_out, dt, x_t_out)
    # Eqs. (4)-(6): v_vir = K_s G f_m - K_s f_vir - D (v_vir(t-dt) - v_vir(t-2dt)), then x_vir
    for i in range(6):
        v_r_out[i] = v_r_gain[i] * f_m[i]
        v_vir_out[i] = v_r_out[i] - k_s_feedback[i] * f_vir_out[i] - d_eff[i] * (v_vir[i] - v_vir_prev[i])
    _integrate_position(x_vir, v_vir_out, dt, x_vir_out)
    return OK


@njit(**_OPTS)
def slave_command(f_m, x_vir, x_s, f_s, v_prev, v_prev2, v_r_gain, k_s_feedback, k_c, d_eff, v_c, v_r, ff, coupling,
                  damping):
    """Seed 001 Eq. (3), :meth:`hil_teleop.slave_law.SlaveLaw.command_reference` on arrays: ``v_r = K_s G f_m``
    (``v_r_gain = K_s G``), ``ff = -K_s f_s``, ``coupling = K_c B(phi_s) (x_vir - x_s)`` (angle difference wrapped),
    ``damping = -D (v_s(t - dt) - v_s(t - 2 dt))`` and their sum ``v_c``, in that order. Returns False where an input
    or the command is not finite (the reference then names the input)."""
    if not (_finite3(f_m, x_vir, x_s) and _finite3(f_s, f_s, f_s)):
        return False
    d3, d4, d5 = _wrap(x_vir[3] - x_s[3]), _wrap(x_vir[4] - x_s[4]), _wrap(x_vir[5] - x_s[5])
    e0, e1, e2 = _euler_rate_to_omega(x_s[3:], d3, d4, d5)
    any_coupling = False
    for i in range(6):
        any_coupling = any_coupling or k_c[i] != 0.0
    for i in range(6):
        v_r[i] = v_r_gain[i] * f_m[i]
        ff[i] = -k_s_feedback[i] * f_s[i]
        damping[i] = -d_eff[i] * (v_prev[i] - v_prev2[i])
        coupling[i] = 0.0
    if any_coupling:
        for i in range(3):
            coupling[i] = k_c[i] * (x_vir[i] - x_s[i])
        coupling[3], coupling[4], coupling[5] = k_c[3] * e0, k_c[4] * e1, k_c[5] * e2
    for i in range(6):
        v_c[i] = v_r[i] + ff[i] + coupling[i] + damping[i]
    return _finite3(v_c, v_c, v_c)


def warm_up() -> None:
    """Compile (or load from the cache) the kernel with the types the rule passes (``./dev`` runs this)."""
    from hil_teleop.config import TeleopConfig, earth_and_link

    link = earth_and_link(TeleopConfig())
    link.venv.step(np.ones(6))
    link.law.command(np.ones(6), np.ones(6), np.zeros(6), np.zeros(6))


# This module's kernels compile in those of the modules named here: their cached code goes when those change.
drop_stale_code(globals(), _kernels)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_teleop.virtual_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
