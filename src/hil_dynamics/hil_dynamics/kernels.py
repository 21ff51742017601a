"""Compiled fixed-size kernels of the 1 kHz rule steps (issue 17; docs/performance.md).

The readable implementations of the equations stay where they are
(:mod:`hil_dynamics.se3`, :mod:`hil_dynamics.lie_integrators`, :mod:`hil_dynamics.client`,
:mod:`hil_dynamics.servicer`); the functions here are the same mathematics on plain float
arrays, compiled with Numba so that a step costs a few microseconds instead of a few
hundred Python-level calls on 6-vectors. ``test/test_fast_paths.py`` checks each fast path
against its reference to 1e-12 on random states.

Array layouts (all float64, conventions of :mod:`hil_dynamics.se3`):

* pose: 12 numbers ``[R (3x3 row-major); p]`` (``x_parent = R x_child + p``);
* twist ``[v; w]``, wrench ``[f; tau]``, linear first.

Inside the kernels 3-vectors are tuples of floats, which Numba keeps in registers.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
from numba import njit

from hil_dynamics.profiles import min_jerk

__all__ = ['pose_array', 'array_pose', 'client_rkmk4_step', 'rk_stage', 'rk_final', 'solve_into',
           'servicer_stage_kinematics', 'nominal_acceleration_into', 'passivity_update', 'integration_energy_step',
           'free_floating_rkmk4_step', 'log6_into', 'relative_into',
           'compound_in_nominal', 'gravity_from_mass_matrix', 'rebase_ramp_step', 'rebase_increment',
           'nominal_twist_change_into',
           'latched_grasp_wrench', 'latched_grasp_step', 'arm_hold_torque', 'arm_torque_command', 'client_port_step',
           'free_floating_inputs_step', 'lockstep_inputs_step', 'lockstep_shared_inputs_step', 'lockstep_port_step',
           'side_port_step', 'ee_wrench_as_fext',
           'admittance_inputs_step', 'tool_jacobian_into', 'frame_pose_and_jacobian']

_OPTS = dict(cache=True, nogil=True, fastmath=False, error_model='numpy')


def pose_array(g: pin.SE3, out: np.ndarray | None = None) -> np.ndarray:
    """A ``pin.SE3`` as the 12-array ``[R row-major; p]``."""
    out = np.empty(12) if out is None else out
    out[:9] = g.rotation.reshape(9)
    out[9:] = g.translation
    return out


def array_pose(a: np.ndarray) -> pin.SE3:
    """The 12-array ``[R row-major; p]`` as a ``pin.SE3``."""
    return pin.SE3(a[:9].reshape(3, 3), a[9:12])


# -- 3-vector and 3x3 algebra on tuples ------------------------------------------------------
@njit(inline='always', **_OPTS)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(inline='always', **_OPTS)
def _rv(r, x0, x1, x2):
    """``R x`` for R a 12-array pose (rotation part)."""
    return (r[0] * x0 + r[1] * x1 + r[2] * x2, r[3] * x0 + r[4] * x1 + r[5] * x2,
            r[6] * x0 + r[7] * x1 + r[8] * x2)


@njit(inline='always', **_OPTS)
def _rtv(r, x0, x1, x2):
    """``R^T x``."""
    return (r[0] * x0 + r[3] * x1 + r[6] * x2, r[1] * x0 + r[4] * x1 + r[7] * x2,
            r[2] * x0 + r[5] * x1 + r[8] * x2)


@njit(**_OPTS)
def _act_inv_motion(g, v, out):
    """``out = Ad_{g^-1} v`` (``g.actInv(Motion(v))``): ``w' = R^T w``, ``v' = R^T (v - p x w)``."""
    c = _cross(g[9], g[10], g[11], v[3], v[4], v[5])
    a = _rtv(g, v[0] - c[0], v[1] - c[1], v[2] - c[2])
    b = _rtv(g, v[3], v[4], v[5])
    out[0], out[1], out[2], out[3], out[4], out[5] = a[0], a[1], a[2], b[0], b[1], b[2]


@njit(**_OPTS)
def _motion_cross_add(a, b, scale, out):
    """``out += scale * [a, b]`` (``Motion(a).cross(Motion(b))``: ``[w_a x v_b + v_a x w_b; w_a x w_b]``)."""
    c1 = _cross(a[3], a[4], a[5], b[0], b[1], b[2])
    c2 = _cross(a[0], a[1], a[2], b[3], b[4], b[5])
    c3 = _cross(a[3], a[4], a[5], b[3], b[4], b[5])
    out[0] += scale * (c1[0] + c2[0])
    out[1] += scale * (c1[1] + c2[1])
    out[2] += scale * (c1[2] + c2[2])
    out[3] += scale * c3[0]
    out[4] += scale * c3[1]
    out[5] += scale * c3[2]


@njit(**_OPTS)
def _mul_exp(g, u, out):
    """``out = g exp6(u)`` (seed 004 Eq. 1 exponential; ``u = [v; w]``)."""
    _mul_exp6(g, u[0], u[1], u[2], u[3], u[4], u[5], out)


@njit(**_OPTS)
def _mul_exp6(g, v0, v1, v2, w0, w1, w2, out):
    """:func:`_mul_exp` with the twist as six scalars."""
    t2 = w0 * w0 + w1 * w1 + w2 * w2
    if t2 < 1e-4:   # |w| < 1e-2: Taylor series, truncation below 1e-17
        a = 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0))
        b = 0.5 - t2 / 24.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0))
        c = 1.0 / 6.0 - t2 / 120.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0))
    else:
        th = np.sqrt(t2)
        s, co = np.sin(th), np.cos(th)
        a = s / th
        sh = np.sin(0.5 * th)
        b = 2.0 * sh * sh / t2
        c = (th - s) / (t2 * th)
    # W^2 = w w^T - t2 I
    e00 = 1.0 + b * (w0 * w0 - t2)
    e11 = 1.0 + b * (w1 * w1 - t2)
    e22 = 1.0 + b * (w2 * w2 - t2)
    e01 = -a * w2 + b * w0 * w1
    e10 = a * w2 + b * w0 * w1
    e02 = a * w1 + b * w0 * w2
    e20 = -a * w1 + b * w0 * w2
    e12 = -a * w0 + b * w1 * w2
    e21 = a * w0 + b * w1 * w2
    # p_e = (I + b W + c W^2) v
    wv = _cross(w0, w1, w2, v0, v1, v2)
    wwv = _cross(w0, w1, w2, wv[0], wv[1], wv[2])
    pe0 = v0 + b * wv[0] + c * wwv[0]
    pe1 = v1 + b * wv[1] + c * wwv[1]
    pe2 = v2 + b * wv[2] + c * wwv[2]
    r = g
    q = _rv(r, pe0, pe1, pe2)
    out9, out10, out11 = g[9] + q[0], g[10] + q[1], g[11] + q[2]
    n0 = r[0] * e00 + r[1] * e10 + r[2] * e20
    n1 = r[0] * e01 + r[1] * e11 + r[2] * e21
    n2 = r[0] * e02 + r[1] * e12 + r[2] * e22
    n3 = r[3] * e00 + r[4] * e10 + r[5] * e20
    n4 = r[3] * e01 + r[4] * e11 + r[5] * e21
    n5 = r[3] * e02 + r[4] * e12 + r[5] * e22
    n6 = r[6] * e00 + r[7] * e10 + r[8] * e20
    n7 = r[6] * e01 + r[7] * e11 + r[8] * e21
    n8 = r[6] * e02 + r[7] * e12 + r[8] * e22
    out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8] = n0, n1, n2, n3, n4, n5, n6, n7, n8
    out[9], out[10], out[11] = out9, out10, out11


@njit(**_OPTS)
def _dexp_inv(u, k, out):
    """``out = k + 1/2 [u, k] + 1/12 [u, [u, k]]`` (:func:`hil_dynamics.lie_integrators.dexp_inv`)."""
    first = np.zeros(6)
    _motion_cross_add(u, k, 1.0, first)
    for i in range(6):
        out[i] = k[i] + 0.5 * first[i]
    _motion_cross_add(u, first, 1.0 / 12.0, out)


@njit(**_OPTS)
def _rigid_accel(v, mass, inertia, inertia_inv, wrench, out):
    """``M^-1 (F - V x* (M V))`` of seed 004 Eq. (2), ``M = diag(m I, I_com)`` (zero lever)."""
    iw = _rv(inertia, v[3], v[4], v[5])
    c_lin = _cross(v[3], v[4], v[5], v[0], v[1], v[2])
    c_ang = _cross(v[3], v[4], v[5], iw[0], iw[1], iw[2])
    out[0] = wrench[0] / mass - c_lin[0]
    out[1] = wrench[1] / mass - c_lin[1]
    out[2] = wrench[2] / mass - c_lin[2]
    a = _rv(inertia_inv, wrench[3] - c_ang[0], wrench[4] - c_ang[1], wrench[5] - c_ang[2])
    out[3], out[4], out[5] = a[0], a[1], a[2]


@njit(**_OPTS)
def _body_accel(v, m6, m6_inv, wrench, out):
    """``M^-1 (F - V x* (M V))`` of seed 004 Eq. (2) for any 6x6 spatial inertia ``M`` (CoM anywhere)."""
    scratch = np.empty(12)             # one allocation for both temporaries (each costs ~15 ns in a compiled loop)
    h, r = scratch[:6], scratch[6:]
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += m6[i, j] * v[j]
        h[i] = s
    c1 = _cross(v[3], v[4], v[5], h[0], h[1], h[2])            # w x h_f
    c2 = _cross(v[0], v[1], v[2], h[0], h[1], h[2])            # v x h_f
    c3 = _cross(v[3], v[4], v[5], h[3], h[4], h[5])            # w x h_tau
    for i in range(3):
        r[i] = wrench[i] - c1[i]
        r[3 + i] = wrench[3 + i] - c2[i] - c3[i]
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += m6_inv[i, j] * r[j]
        out[i] = s


@njit(**_OPTS)
def nominal_acceleration_into(v_n, m6, m6_inv, out):
    """``V_n_dot`` of seed 004 Eq. (4) (unforced body of spatial inertia ``m6``) into ``out``."""
    _body_accel(v_n, m6, m6_inv, np.zeros(6), out)


@njit(**_OPTS)
def _client_accel(g_c, v_n, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, an, ac):
    """``(V_n_dot, V_c_dot)`` of seed 004 Eqs. (4), (11) (:meth:`ClientAdmittance.accelerations`);
    the nominal's spatial inertia ``nom_m6`` is the client's own unless the nominal was re-based."""
    scratch = np.zeros(24)             # the zero wrench of Eq. (4), Delta, V_t, Ad V_n_dot: one allocation
    zero, delta, v_t, ad = scratch[:6], scratch[6:12], scratch[12:18], scratch[18:]
    _body_accel(v_n, nom_m6, nom_m6_inv, zero, an)                          # Eq. (4)
    _act_inv_motion(g_c, v_n, delta)                                        # Eq. (6)
    for i in range(6):
        v_t[i] = v_c[i] + delta[i]
    _rigid_accel(v_t, mass, inertia, inertia_inv, wrench, ac)              # M^-1 (F_c - C(V_t) V_t)
    _act_inv_motion(g_c, an, ad)
    for i in range(6):
        ac[i] -= ad[i]                                                      # - Ad_{g_c^-1} V_n_dot
    _motion_cross_add(v_c, delta, 1.0, ac)                                  # + [V_c, Delta]


@njit(**_OPTS)
def client_rkmk4_step(g_n, v_n, g_c, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, h):
    """One RKMK4 step of seed 004 Eqs. (4) + (11) with a held wrench, in place.

    The same stages as :meth:`hil_dynamics.client.ClientAdmittance.step` (reference); ``g_n,
    g_c`` are 12-array poses, ``v_n, v_c`` twists, ``inertia``/``inertia_inv`` 12-arrays whose
    first 9 entries are ``I_com`` and its inverse; ``nom_m6``/``nom_m6_inv`` the nominal's 6x6 spatial
    inertia (Eq. 4) and its inverse.
    """
    h2 = 0.5 * h
    st = np.empty((20, 6))             # the stages' vectors and a pose: one allocation, not twenty
    a1n, a1c, a2n, a2c, a3n, a3c, a4n, a4c = st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]
    vn, vc, un, uc, k2n, k2c, k3n, k3c, k4n, k4c = st[8], st[9], st[10], st[11], st[12], st[13], st[14], st[15], \
        st[16], st[17]
    gc = st[18:20].reshape(12)
    # stage 1
    _client_accel(g_c, v_n, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, a1n, a1c)
    for i in range(6):
        un[i] = v_n[i] * h2
        uc[i] = v_c[i] * h2
        vn[i] = v_n[i] + a1n[i] * h2
        vc[i] = v_c[i] + a1c[i] * h2
    # stage 2
    _mul_exp(g_c, uc, gc)
    _client_accel(gc, vn, vc, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, a2n, a2c)
    _dexp_inv(un, vn, k2n)
    _dexp_inv(uc, vc, k2c)
    for i in range(6):
        un[i] = k2n[i] * h2
        uc[i] = k2c[i] * h2
        vn[i] = v_n[i] + a2n[i] * h2
        vc[i] = v_c[i] + a2c[i] * h2
    # stage 3
    _mul_exp(g_c, uc, gc)
    _client_accel(gc, vn, vc, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, a3n, a3c)
    _dexp_inv(un, vn, k3n)
    _dexp_inv(uc, vc, k3c)
    for i in range(6):
        un[i] = k3n[i] * h
        uc[i] = k3c[i] * h
        vn[i] = v_n[i] + a3n[i] * h
        vc[i] = v_c[i] + a3c[i] * h
    # stage 4
    _mul_exp(g_c, uc, gc)
    _client_accel(gc, vn, vc, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, a4n, a4c)
    _dexp_inv(un, vn, k4n)
    _dexp_inv(uc, vc, k4c)
    h6 = h / 6.0
    for i in range(6):
        un[i] = (v_n[i] + (k2n[i] + k3n[i]) * 2.0 + k4n[i]) * h6
        uc[i] = (v_c[i] + (k2c[i] + k3c[i]) * 2.0 + k4c[i]) * h6
    _mul_exp(g_n, un, gc)
    g_n[:] = gc
    _mul_exp(g_c, uc, gc)
    g_c[:] = gc
    for i in range(6):
        v_n[i] += (a1n[i] + (a2n[i] + a3n[i]) * 2.0 + a4n[i]) * h6
        v_c[i] += (a1c[i] + (a2c[i] + a3c[i]) * 2.0 + a4c[i]) * h6


@njit(**_OPTS)
def unforced_nominal_steps(g_n, v_n, g_c, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, h, n, rest):
    """``n`` steps of :func:`client_rkmk4_step` of ``h`` and, if ``rest > 1e-12``, one of ``rest``, in place: the
    nominal's unforced motion (seed 004 Eq. 4) as :func:`hil_dynamics.client.unforced_nominal` integrates it, the
    client at rest on it (``g_c`` the identity, ``v_c`` and ``wrench`` zero), in one call."""
    for _ in range(n):
        client_rkmk4_step(g_n, v_n, g_c, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, h)
    if rest > 1e-12:
        client_rkmk4_step(g_n, v_n, g_c, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, rest)


@njit(**_OPTS)
def unforced_nominal_over(g_n, v_n, g_c, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, h, duration):
    """The nominal ``(g_n, V_n)`` moved on by ``duration`` in place, in :func:`unforced_nominal_steps` of ``h`` (the
    last one shorter): :func:`hil_dynamics.client.unforced_nominal`'s steps, which a held servicer sample in a compiled
    sample loop takes too (one definition of the step count). ``g_c``, ``v_c``, ``wrench``: scratch (the client at
    rest on the nominal: set here)."""
    for i in range(12):
        g_c[i] = 0.0
    g_c[0], g_c[4], g_c[8] = 1.0, 1.0, 1.0
    for i in range(6):
        v_c[i] = 0.0
        wrench[i] = 0.0
    n = int(duration / h + 1e-9)
    unforced_nominal_steps(g_n, v_n, g_c, v_c, wrench, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, h, n,
                           duration - n * h)


@njit(**_OPTS)
def relative_mapping_into(g_n, v_n, g_rel, v_rel, g_out, v_out):
    """Seed 004 Eq. (23) on arrays: ``g = g_n g_rel``, ``V = V_rel + Ad_{g_rel^-1} V_n``."""
    for i in range(3):
        for j in range(3):
            g_out[3 * i + j] = g_n[3 * i] * g_rel[j] + g_n[3 * i + 1] * g_rel[3 + j] + g_n[3 * i + 2] * g_rel[6 + j]
    q = _rv(g_n, g_rel[9], g_rel[10], g_rel[11])
    g_out[9], g_out[10], g_out[11] = g_n[9] + q[0], g_n[10] + q[1], g_n[11] + q[2]
    _act_inv_motion(g_rel, v_n, v_out)
    for i in range(6):
        v_out[i] += v_rel[i]


@njit(**_OPTS)
def log6_into(g, out):
    """``log6`` of a 12-array pose, linear first: ``w = log3(R)``, ``v = V(w)^-1 p``."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8]
    c = min(1.0, max(-1.0, 0.5 * (r00 + r11 + r22 - 1.0)))
    x, y, z = r21 - r12, r02 - r20, r10 - r01                  # 2 sin(t) * axis
    s = 0.5 * np.sqrt(x * x + y * y + z * z)
    t = np.arctan2(s, c)
    if t < 1e-3:                                               # t / (2 sin t), Taylor
        t2 = t * t
        f = 0.5 * (1.0 + t2 / 6.0 + 7.0 * t2 * t2 / 360.0)
        w0, w1, w2 = f * x, f * y, f * z
    elif t < np.pi - 1e-3:
        f = 0.5 * t / np.sin(t)
        w0, w1, w2 = f * x, f * y, f * z
    else:                                                      # near pi: the axis from the symmetric part
        d = (r00, r11, r22)
        k = 0
        if d[1] > d[k]:
            k = 1
        if d[2] > d[k]:
            k = 2
        one_c = 1.0 - c
        ak = np.sqrt(max(0.0, (d[k] - c) / one_c))
        sym = ((0.0, r01 + r10, r02 + r20), (r01 + r10, 0.0, r12 + r21), (r02 + r20, r12 + r21, 0.0))
        sk = (x, y, z)[k]
        if sk < 0.0:
            ak = -ak
        u = [0.0, 0.0, 0.0]
        for j in range(3):
            u[j] = ak if j == k else sym[k][j] / (2.0 * one_c * ak)
        w0, w1, w2 = t * u[0], t * u[1], t * u[2]
    t2 = w0 * w0 + w1 * w1 + w2 * w2
    if t2 < 1e-4:                                              # (1 - t/2 cot(t/2)) / t^2, Taylor
        k2 = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    else:                                                      # 1 - cos t = 2 sin^2(t/2): no cancellation there
        half = 0.5 * np.sqrt(t2)
        k2 = (1.0 - half * np.cos(half) / np.sin(half)) / t2
    p0, p1, p2 = g[9], g[10], g[11]
    wp = _cross(w0, w1, w2, p0, p1, p2)
    wwp = _cross(w0, w1, w2, wp[0], wp[1], wp[2])
    out[0] = p0 - 0.5 * wp[0] + k2 * wwp[0]
    out[1] = p1 - 0.5 * wp[1] + k2 * wwp[1]
    out[2] = p2 - 0.5 * wp[2] + k2 * wwp[2]
    out[3], out[4], out[5] = w0, w1, w2


@njit(**_OPTS)
def relative_into(a, b, out):
    """``out = a^-1 b`` for 12-array poses."""
    for i in range(3):
        for j in range(3):
            out[3 * i + j] = a[i] * b[j] + a[3 + i] * b[3 + j] + a[6 + i] * b[6 + j]
    d = _rtv(a, b[9] - a[9], b[10] - a[10], b[11] - a[11])
    out[9], out[10], out[11] = d[0], d[1], d[2]


@njit(**_OPTS)
def _adjoint_into(g, out):
    """``Ad_g`` (6x6, twists linear first): ``[[R, [p]x R], [0, R]]``."""
    for i in range(3):
        for j in range(3):
            r = g[3 * i + j]
            out[i, j] = r
            out[3 + i, 3 + j] = r
            out[3 + i, j] = 0.0
    p0, p1, p2 = g[9], g[10], g[11]
    for j in range(3):
        c = _cross(p0, p1, p2, g[j], g[3 + j], g[6 + j])         # p x (column j of R)
        out[0, 3 + j], out[1, 3 + j], out[2, 3 + j] = c[0], c[1], c[2]


@njit(**_OPTS)
def compound_in_nominal(g_n, g_free, v_free, mass, inertia_com, inertia_com_inv, com, v_target, m6, m6_inv):
    """One increment's target of a re-basing (:class:`hil_dynamics.rebase.PlannedRebase`), on arrays.

    The compound (a free body, its CoM frame at ``g_free`` in orbit with body twist ``v_free``, mass ``mass``,
    inertia ``inertia_com`` (3x3 row-major 9-array) about its CoM) seen from the nominal frame ``g_n``:
    ``com = g_n^-1 g_free``, its velocity there ``v_target = Ad_com v_free``, and its spatial inertia in the
    nominal frame ``m6 = Ad_com^-T M_c Ad_com^-1`` with its inverse ``m6_inv = Ad_com M_c^-1 Ad_com^T``
    (``M_c = diag(m I, I_com)``; no 6x6 inversion)."""
    relative_into(g_n, g_free, com)
    ad = np.empty((6, 6))
    _adjoint_into(com, ad)
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += ad[i, j] * v_free[j]
        v_target[i] = s
    identity = np.zeros(12)
    identity[0], identity[4], identity[8] = 1.0, 1.0, 1.0
    inv = np.empty(12)
    relative_into(com, identity, inv)                # com^-1, so Ad_com^-1 = Ad_{com^-1}
    ad_inv = np.empty((6, 6))
    _adjoint_into(inv, ad_inv)
    mc = np.zeros((6, 6))
    mc_inv = np.zeros((6, 6))
    for i in range(3):
        mc[i, i] = mass
        mc_inv[i, i] = 1.0 / mass
        for j in range(3):
            mc[3 + i, 3 + j] = inertia_com[3 * i + j]
            mc_inv[3 + i, 3 + j] = inertia_com_inv[3 * i + j]
    _congruence_into(ad_inv, mc, False, m6)          # Ad^-T M_c Ad^-1
    _congruence_into(ad, mc_inv, True, m6_inv)       # Ad M_c^-1 Ad^T


@njit(**_OPTS)
def rebase_ramp_step(g_fn, v_fn, g_fc, v_fc, steps, h, h_rest, free_mass, free_inertia, free_inertia_inv, free_m6,
                     free_m6_inv, g_n, v_n, g_rel, v_rel, fraction, mass, inertia_com, inertia_com_inv, com, v_target,
                     m6, m6_inv, v_new, v_rel_new):
    """:meth:`hil_dynamics.rebase.PlannedRebase.update`'s arithmetic in one call.

    The compound's free motion (a client admittance of the compound under no wrench, its state ``(g_fn, v_fn,
    g_fc, v_fc)`` stepped in place, its constants as :func:`client_rkmk4_step` takes them) moved on by ``steps``
    steps of ``h`` and then one of ``h_rest`` if that is > 0; the compound seen from the nominal ``g_n``
    (:func:`compound_in_nominal` with the plan's mass properties: ``com``, ``v_target``, ``m6``, ``m6_inv``);
    the increment's nominal twist ``v_new = v_n + fraction (v_target - v_n)``; and the side's relative twist
    after it, ``v_rel_new`` (:func:`nominal_twist_change_into` of ``g_rel``, ``v_rel``). The same calls in the
    same order as the Python it replaces (``PlannedRebase._free_at``, then ``update_reference``'s arithmetic,
    then ``RelativeState.with_nominal_twist``). Returns whether ``v_new`` and ``v_rel_new`` are finite."""
    zero = np.zeros(6)
    for _ in range(steps):
        client_rkmk4_step(g_fn, v_fn, g_fc, v_fc, zero, free_mass, free_inertia, free_inertia_inv, free_m6,
                          free_m6_inv, h)
    if h_rest > 0.0:
        client_rkmk4_step(g_fn, v_fn, g_fc, v_fc, zero, free_mass, free_inertia, free_inertia_inv, free_m6,
                          free_m6_inv, h_rest)
    compound_in_nominal(g_n, g_fn, v_fn, mass, inertia_com, inertia_com_inv, com, v_target, m6, m6_inv)
    for i in range(6):
        v_new[i] = v_n[i] + fraction * (v_target[i] - v_n[i])
    nominal_twist_change_into(g_rel, v_rel, v_n, v_new, v_rel_new)
    for i in range(6):
        if not (math.isfinite(v_new[i]) and math.isfinite(v_rel_new[i])):
            return False
    return True


#: :func:`rebase_increment`'s progress of one side's re-basing ramp (``rs``, float64; a
#: :class:`hil_dynamics.rebase.PlannedRebase`'s bookkeeping): the previous increment's time, the min-jerk progress
#: there and whether there was one, the plan's start and ramp time, whether it is done, the compound's free motion's
#: time, the newest increment's fraction and time, whether the side takes increments at all (0: none is applied)
RS_T_PREV, RS_S_LAST, RS_HAS_LAST, RS_T_START, RS_RAMP_S, RS_DONE, RS_T_FREE, RS_FRACTION, RS_T_LAST, RS_ACTIVE = \
    range(10)
N_RS = RS_ACTIVE + 1
_min_jerk = njit(**_OPTS)(min_jerk)


@njit(**_OPTS)
def rebase_increment(t, h, rs, g_fn, v_fn, g_fc, v_fc, free_mass, free_inertia, free_inertia_inv, free_m6,
                     free_m6_inv, mass, inertia_com, inertia_com_inv, v_old, v_new, g_n, v_n, g_rel, v_rel, m6,
                     m6_inv):
    """One side's increment of a re-basing ramp at ``t`` once its compound's free motion is placed
    (:meth:`hil_dynamics.rebase.PlannedRebase.update` after its first call), in one call: the steps of ``h`` (and the
    rest) since the previous increment, the min-jerk share of what remains, :func:`rebase_ramp_step` (the free motion
    ``g_fn, v_fn, g_fc, v_fc`` in place; the new nominal's ``m6``, ``m6_inv``) and the side's twists ``v_n``,
    ``v_rel`` changed in place (``v_old``: ``v_n`` before, ``v_new``: after). Returns 0 applied; 1 none due (not
    active, done, or before the plan's start: nothing changed); 2 a new twist not finite (the twists not changed, the
    free motion moved on)."""
    if rs[RS_ACTIVE] == 0.0 or rs[RS_DONE] != 0.0 or t < rs[RS_T_START] - 1e-9:
        return 1
    duration = t - rs[RS_T_PREV]
    steps = int(duration / h + 1e-9)
    h_rest = duration - steps * h
    h_rest = h_rest if h_rest > 1e-12 else 0.0
    rs[RS_T_PREV] = t
    s_prev = rs[RS_S_LAST] if rs[RS_HAS_LAST] != 0.0 else 0.0
    s_now = _min_jerk((t - rs[RS_T_START]) / rs[RS_RAMP_S])
    fraction = 1.0 if s_now >= 1.0 else (s_now - s_prev) / (1.0 - s_prev)
    com, v_target, v_rel_new = np.empty(12), np.empty(6), np.empty(6)
    finite = rebase_ramp_step(g_fn, v_fn, g_fc, v_fc, steps, h, h_rest, free_mass, free_inertia, free_inertia_inv,
                              free_m6, free_m6_inv, g_n, v_n, g_rel, v_rel, fraction, mass, inertia_com,
                              inertia_com_inv, com, v_target, m6, m6_inv, v_new, v_rel_new)
    t_free = rs[RS_T_FREE]          # the free motion's clock, as its steps advance it
    for _ in range(steps):
        t_free += h
    rs[RS_T_FREE] = t_free + h_rest if h_rest else t_free
    if not finite:
        return 2
    for i in range(6):
        v_old[i] = v_n[i]
        v_n[i] = v_new[i]
        v_rel[i] = v_rel_new[i]
    rs[RS_FRACTION], rs[RS_T_LAST], rs[RS_S_LAST], rs[RS_HAS_LAST] = fraction, t, s_now, 1.0
    rs[RS_DONE] = 1.0 if fraction >= 1.0 else 0.0
    return 0


@njit(**_OPTS)
def _congruence_into(x, m, x_transposed, out):
    """``out = X^T M X`` (6x6) with ``X = x``, or ``X = x^T`` when ``x_transposed``."""
    tmp = np.empty((6, 6))
    for i in range(6):                  # tmp = M X
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += m[i, k] * (x[j, k] if x_transposed else x[k, j])
            tmp[i, j] = s
    for i in range(6):                  # out = X^T tmp
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += (x[i, k] if x_transposed else x[k, i]) * tmp[k, j]
            out[i, j] = s


@njit(**_OPTS)
def nominal_twist_change_into(g_rel, v_rel, v_n_old, v_n_new, v_rel_out):
    """A re-basing that keeps the nominal's pose and changes its twist (Eq. 23 unchanged):
    ``g_rel`` stays, ``V_rel' = V_rel + Ad_{g_rel^-1} (V_n - V_n')``."""
    d = np.empty(6)
    for i in range(6):
        d[i] = v_n_old[i] - v_n_new[i]
    _act_inv_motion(g_rel, d, v_rel_out)
    for i in range(6):
        v_rel_out[i] += v_rel[i]


@njit(**_OPTS)
def latched_grasp_wrench(pose_client, twist_client, pose_base, twist_base, pose_flange_in_base, jac_flange, dq,
                         pose_tool_in_flange, pose_grasp_in_client, pose_rest, stiffness, damping, wrench_tool,
                         wrench_flange, wrench_client):
    """The latched gripper's spring-damper (seed 004 Assumption 3, :class:`hil_dynamics.contact.GraspContact`) on
    arrays, with the tool kinematics around it (:meth:`hil_bringup.runners.mission.MissionLoop.contact_wrench_reference`).

    From the client ``(g_c, V_c)`` and the servicer base ``(g_s, V_s)`` (poses in one frame, body twists), the
    flange pose in the base frame and its ``LOCAL`` Jacobian ``[J_b J_m]`` (Pinocchio's) and ``dq``: the tool
    pose ``g_s g_flange g_ft`` and body twist ``Ad_{g_ft^-1} J [V_s; dq]``, the grasp frame ``g_c g_grasp`` and its
    twist, the tool in the grasp frame ``g_tg``, then ``wrench_tool = -K log6(g_rest^-1 g_tg) - D (V_tool -
    Ad_{g_tg^-1} V_grasp)`` (tool axes, about the tool origin), ``wrench_flange = g_ft.act(wrench_tool)`` and the
    client's reaction ``wrench_client = -(g_c^-1 g_tool).act(wrench_tool)`` (client body axes, about its CoM)."""
    nv = jac_flange.shape[1]
    v = np.empty(6)
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += jac_flange[i, j] * twist_base[j]
        for j in range(6, nv):
            s += jac_flange[i, j] * dq[j - 6]
        v[i] = s
    twist_tool = np.empty(6)
    _act_inv_motion(pose_tool_in_flange, v, twist_tool)
    pose_flange = np.empty(12)
    pose_mul_into(pose_base, pose_flange_in_base, pose_flange)
    pose_tool = np.empty(12)
    pose_mul_into(pose_flange, pose_tool_in_flange, pose_tool)
    pose_grasp = np.empty(12)
    pose_mul_into(pose_client, pose_grasp_in_client, pose_grasp)
    twist_grasp = np.empty(6)
    _act_inv_motion(pose_grasp_in_client, twist_client, twist_grasp)
    tool_in_grasp = np.empty(12)
    relative_into(pose_grasp, pose_tool, tool_in_grasp)
    grasp_in_tool = np.empty(6)
    _act_inv_motion(tool_in_grasp, twist_grasp, grasp_in_tool)
    dev = np.empty(12)
    relative_into(pose_rest, tool_in_grasp, dev)
    err = np.empty(6)
    log6_into(dev, err)
    for i in range(6):
        wrench_tool[i] = -stiffness[i] * err[i] - damping[i] * (twist_tool[i] - grasp_in_tool[i])
        wrench_flange[i] = 0.0
        wrench_client[i] = 0.0
    _act_force_add(pose_tool_in_flange, wrench_tool, wrench_flange)
    tool_in_client = np.empty(12)
    relative_into(pose_client, pose_tool, tool_in_client)
    _act_force_add(tool_in_client, wrench_tool, wrench_client)
    for i in range(6):
        wrench_client[i] = -wrench_client[i]


# -- generic fused RKMK4 stages on (k poses, n-vector) -------------------------------------------
@njit(**_OPTS)
def rk_stage(poses, x, twists, rates, u_prev, c, use_dexp, poses_out, x_out, u_out, twists_out):
    """One RKMK4 stage transition (:func:`hil_dynamics.lie_integrators.rkmk4`), fused.

    ``twists_out = dexp^-1(u_prev) twists`` (or ``twists`` when not ``use_dexp``),
    ``u_out = c twists_out``, ``poses_out = poses exp6(u_out)``, ``x_out = x + c rates``.
    ``poses`` is (k, 12), twists (k, 6).
    """
    for j in range(poses.shape[0]):
        if use_dexp:
            _dexp_inv(u_prev[j], twists[j], twists_out[j])
        else:
            twists_out[j] = twists[j]
        for i in range(6):
            u_out[j, i] = c * twists_out[j, i]
        _mul_exp(poses[j], u_out[j], poses_out[j])
    for i in range(x.shape[0]):
        x_out[i] = x[i] + c * rates[i]


@njit(**_OPTS)
def rk_final(poses, x, k1, k2, k3, k4_raw, u3, a1, a2, a3, a4, h, poses_out, x_out):
    """The RKMK4 update ``g exp6(h/6 (k1 + 2 k2 + 2 k3 + k4))``, ``x + h/6 (a1 + 2 a2 + 2 a3 + a4)``,
    with ``k4 = dexp^-1(u3) k4_raw``."""
    h6 = h / 6.0
    u = np.empty(6)
    k4 = np.empty((poses.shape[0], 6))
    for j in range(poses.shape[0]):
        _dexp_inv(u3[j], k4_raw[j], k4[j])
        for i in range(6):
            u[i] = (k1[j, i] + (k2[j, i] + k3[j, i]) * 2.0 + k4[j, i]) * h6
        _mul_exp(poses[j], u, poses_out[j])
    for i in range(x.shape[0]):
        x_out[i] = x[i] + (a1[i] + (a2[i] + a3[i]) * 2.0 + a4[i]) * h6


@njit(**_OPTS)
def solve_into(a, b, out):
    """``out = a^-1 b`` by Gaussian elimination with partial pivoting (LAPACK ``getrf``'s pivoting);
    ``a`` and ``b`` are overwritten."""
    n = a.shape[0]
    for k in range(n):
        p = k
        best = abs(a[k, k])
        for i in range(k + 1, n):
            if abs(a[i, k]) > best:
                best = abs(a[i, k])
                p = i
        if p != k:
            for j in range(n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
            b[k], b[p] = b[p], b[k]
        piv = a[k, k]
        for i in range(k + 1, n):
            f = a[i, k] / piv
            if f != 0.0:
                for j in range(k + 1, n):
                    a[i, j] -= f * a[k, j]
                b[i] -= f * b[k]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= a[i, j] * out[j]
        out[i] = s / a[i, i]


@njit(**_OPTS)
def servicer_stage_kinematics(g_s, v_n, v_s, vn_dot, delta, twist_b, delta_dot):
    """Seed 004 Eq. (15) and its derivative on arrays.

    ``delta = Ad_{g_s^-1} V_n``, ``twist_b = V_s + delta`` (Eq. 23), ``delta_dot = Ad_{g_s^-1}
    V_n_dot - [V_s, delta]`` (:func:`hil_dynamics.servicer.delta_twist_rate`).
    """
    _act_inv_motion(g_s, v_n, delta)
    for i in range(6):
        twist_b[i] = v_s[i] + delta[i]
    _act_inv_motion(g_s, vn_dot, delta_dot)
    _motion_cross_add(v_s, delta, -1.0, delta_dot)


@njit(**_OPTS)
def mat_vec_into(m, v, out):
    """``out = m v`` summed in index order: one definition for a product a Python path and a compiled one must give
    to the bit (numpy's ``@`` may go through a BLAS that fuses or reorders its multiply-adds)."""
    for i in range(m.shape[0]):
        t = 0.0
        for j in range(m.shape[1]):
            t += m[i, j] * v[j]
        out[i] = t


@njit(**_OPTS)
def pose_mul_into(a, b, out):
    """``out = a b`` for 12-array poses."""
    for i in range(3):
        for j in range(3):
            out[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j]
    q = _rv(a, b[9], b[10], b[11])
    out[9], out[10], out[11] = a[9] + q[0], a[10] + q[1], a[11] + q[2]


@njit(**_OPTS)
def xyzquat_into(g, out):
    """``pin.SE3ToXYZQUAT`` of a 12-array pose into ``out[:7]`` (quaternion x y z w, Shepperd)."""
    out[0], out[1], out[2] = g[9], g[10], g[11]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8]
    tr = r00 + r11 + r22
    if tr > 0.0:
        s = 2.0 * np.sqrt(tr + 1.0)
        w, x, y, z = 0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s
    elif r00 > r11 and r00 > r22:
        s = 2.0 * np.sqrt(1.0 + r00 - r11 - r22)
        w, x, y, z = (r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s
    elif r11 > r22:
        s = 2.0 * np.sqrt(1.0 + r11 - r00 - r22)
        w, x, y, z = (r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s
    else:
        s = 2.0 * np.sqrt(1.0 + r22 - r00 - r11)
        w, x, y, z = (r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s
    n = np.sqrt(w * w + x * x + y * y + z * z)
    out[3], out[4], out[5], out[6] = x / n, y / n, z / n, w / n


def pose_xyzquat(g: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A 12-array pose as a message's ``[x, y, z, qx, qy, qz, qw]`` with ``qw >= 0``, as
    :func:`hil_common.conversions.pose_to_msg` writes a ``pin.SE3`` (:func:`xyzquat_into`, then the sign). A node
    calls it once when it is built, so that the compiled part is loaded then, not in its first real-time tick."""
    out = np.empty(7) if out is None else out
    xyzquat_into(g, out)
    if out[6] < 0.0:
        out[3:] *= -1.0
    return out


@njit(**_OPTS)
def lockstep_solve(m_o, m_g, bias_base, ff_bias_s, ff_bias_b, grav, bias_ground, tau, f_b, delta_dot,
                   w_ff1, w_ff23, w_grav, lhs, rhs, sol):
    """Seed 004 Eqs. (18), (22), (20) at one instant, solved for ``sol = [V_s_dot; ddq]``.

    Rows 0-5 (Eq. 18): ``M_b V_s_dot + M_bq ddq = F_b - M_b Delta_dot - bias_base[:6]`` with
    ``bias_base = C v - J^T F_e`` of the orbit model at ``V_b``. Arm rows (Eq. 20 of the
    ground arm, its own mass matrix ``m_g``): ``A_qs V_s_dot + A_qq ddq = tau_q - bias_ground``
    with Eq. (22) ``tau_q = tau + w_grav grav - w_ff1 M_bq^T Delta_dot + w_ff23 (ff_bias_s -
    ff_bias_b)`` (``grav`` is Pinocchio's generalised gravity, ``-G``; the ``ff_bias`` are
    ``C(V, dq) [V; dq]`` of the feed-forward's model, whose difference is ``tau_ff2 + tau_ff3``).
    """
    nv = m_o.shape[0]
    for i in range(6):
        s = f_b[i] - bias_base[i]
        for j in range(6):
            s -= m_o[i, j] * delta_dot[j]
        rhs[i] = s
        for j in range(nv):
            lhs[i, j] = m_o[i, j]
    for i in range(6, nv):
        rhs[i] = _arm_torque(m_o, ff_bias_s, ff_bias_b, grav, tau, delta_dot, w_ff1, w_ff23, w_grav, i) - bias_ground[i]
        for j in range(nv):
            lhs[i, j] = m_g[i, j]
    solve_into(lhs, rhs, sol)


@njit(inline='always', **_OPTS)
def _arm_torque(m, ff_bias_s, ff_bias_b, grav, tau, delta_dot, w_ff1, w_ff23, w_grav, i):
    """Seed 004 Eq. (22) for the joint of row ``i`` of the free-flyer model (``i >= 6``):
    ``tau_q = tau + w_grav grav - w_ff1 M_bq^T Delta_dot + w_ff23 (ff_bias_s - ff_bias_b)`` with ``grav``
    Pinocchio's generalised gravity (``-G``) and ``ff_bias`` the Coriolis forces ``C(V, dq) [V; dq]`` at
    ``V_s`` and ``V_b`` (their difference is ``tau_ff2 + tau_ff3``)."""
    ff1 = 0.0
    for j in range(6):
        ff1 -= m[i, j] * delta_dot[j]
    return tau[i - 6] + w_grav * grav[i] + w_ff1 * ff1 + w_ff23 * (ff_bias_s[i] - ff_bias_b[i])


@njit(**_OPTS)
def arm_torque_command(pose_s, v_n, v_s, vn_dot, q, dq, tau, parents, placements, kind, axis, inertia, lab_gravity,
                       nominal_in_lab, w_ff1, w_ff23, w_grav, work, work_ic, tw, tau_q):
    """Seed 004 Eq. (22) on arrays (:meth:`hil_dynamics.servicer.ArmFeedForward.torque_command`): Eq. (15) for
    ``V_b`` and ``Delta_dot``, then on the chain one CRBA (``M_bq``, for ``tau_ff1``), two RNEAs at zero
    acceleration (the Coriolis forces at ``V_s`` and ``V_b``) and the lab gravity at the arm's lab pose (``G``,
    from the CRBA's ``M`` by :func:`gravity_from_mass_matrix`, or a third RNEA without ``tau_ff1``), combined as
    :func:`lockstep_solve` does (:func:`_arm_torque`). ``tw`` is ``(6 + nv, nv)`` work."""
    nv = tw.shape[1]
    n = nv - 6
    vel_s, vel_b, zero, ff_s, ff_b, grav = tw[0], tw[1], tw[2], tw[3], tw[4], tw[5]
    m = tw[6:]
    delta, delta_dot = np.empty(6), np.empty(6)
    servicer_stage_kinematics(pose_s, v_n, v_s, vn_dot, delta, vel_b[:6], delta_dot)      # Eq. (15)
    for k in range(6):
        vel_s[k] = v_s[k]
    for k in range(n):
        vel_s[6 + k] = dq[k]
        vel_b[6 + k] = dq[k]
    for k in range(nv):
        zero[k] = 0.0
        grav[k] = 0.0
    identity = np.zeros(12)
    identity[0], identity[4], identity[8] = 1.0, 1.0, 1.0
    no_gravity = np.zeros(6)
    zero_fext = np.zeros((parents.shape[0], 6))
    fk = True
    if w_ff1 != 0.0:
        chain_crba(parents, placements, kind, axis, inertia, q, work, work_ic, m, True)
        fk = False
    else:
        for i in range(nv):
            for j in range(nv):
                m[i, j] = 0.0
    if w_ff23 != 0.0:
        chain_rnea(parents, placements, kind, axis, inertia, no_gravity, identity, q, vel_s, zero, zero_fext, work, ff_s,
                   fk)
        chain_rnea(parents, placements, kind, axis, inertia, no_gravity, identity, q, vel_b, zero, zero_fext, work, ff_b,
                   False)
        fk = False
    else:
        for k in range(nv):
            ff_s[k] = 0.0
            ff_b[k] = 0.0
    if w_grav != 0.0:
        pose_lab = np.empty(12)
        pose_mul_into(nominal_in_lab, pose_s, pose_lab)
        if w_ff1 != 0.0:     # M is there: G from six of its columns (gravity_from_mass_matrix)
            gravity_from_mass_matrix(placements[1], lab_gravity, pose_lab, m, grav)
        else:
            chain_rnea(parents, placements, kind, axis, inertia, lab_gravity, pose_lab, q, zero, zero, zero_fext, work,
                       grav, fk)
    for i in range(6, nv):
        tau_q[i - 6] = _arm_torque(m, ff_s, ff_b, grav, tau, delta_dot, w_ff1, w_ff23, w_grav, i)


@njit(**_OPTS)
def hold_torque_command(pose_s, q, parents, placements, kind, axis, inertia, lab_gravity, nominal_in_lab, work, tw,
                        tau_q):
    """The arm's torques while the servicer side holds (seed 004 Eq. 20's ``-G`` only,
    :meth:`hil_dynamics.servicer.ArmFeedForward.hold_torques`): Pinocchio's generalised gravity of the arm on ground at
    its lab pose ``nominal_in_lab pose_s`` and joints ``q``, as the compiled RNEA at zero velocity and acceleration
    (:func:`chain_rnea`); ``tw`` is ``arm_torque_command``'s ``(6 + nv, nv)`` work."""
    nv = tw.shape[1]
    zero, grav = tw[2], tw[5]
    for k in range(nv):
        zero[k] = 0.0
    pose_lab = np.empty(12)
    pose_mul_into(nominal_in_lab, pose_s, pose_lab)
    chain_rnea(parents, placements, kind, axis, inertia, lab_gravity, pose_lab, q, zero, zero,
               np.zeros((parents.shape[0], 6)), work, grav, True)
    for i in range(6, nv):
        tau_q[i - 6] = grav[i]


@njit(**_OPTS)
def inverse_into(a, out):
    """``out = a^-1`` by Gauss-Jordan elimination with partial pivoting (``a`` is overwritten)."""
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 1.0 if i == j else 0.0
    for k in range(n):
        p = k
        best = abs(a[k, k])
        for i in range(k + 1, n):
            if abs(a[i, k]) > best:
                best = abs(a[i, k])
                p = i
        if p != k:
            for j in range(n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
                out[k, j], out[p, j] = out[p, j], out[k, j]
        piv = a[k, k]
        for j in range(n):
            a[k, j] /= piv
            out[k, j] /= piv
        for i in range(n):
            if i != k:
                f = a[i, k]
                if f != 0.0:
                    for j in range(n):
                        a[i, j] -= f * a[k, j]
                        out[i, j] -= f * out[k, j]


@njit(**_OPTS)
def admittance_constants(mass, jac, f_e, f_b, ddq, m_b, m_b_inv, const):
    """Eq. (18) terms held over a step: ``M_b^-1`` and ``M_b^-1 (J_b^T F_e + F_b - M_bq ddq)``."""
    nv = mass.shape[0]
    for i in range(6):
        for j in range(6):
            m_b[i, j] = mass[i, j]
    inverse_into(m_b, m_b_inv)
    rhs = np.empty(6)
    for i in range(6):
        s = f_b[i]
        for k in range(6):
            s += jac[k, i] * f_e[k]
        for j in range(6, nv):
            s -= mass[i, j] * ddq[j - 6]
        rhs[i] = s
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += m_b_inv[i, j] * rhs[j]
        const[i] = s


@njit(**_OPTS)
def admittance_rates(const, m_b_inv, bias, delta_dot, vn_dot, x, twists_out, rates_out):
    """Eq. (18) solved for ``V_s_dot = const - M_b^-1 (C_b V_b + C_bq dq) - Delta V_s_dot``; twists and rates
    of the state ``x = [V_n; V_s]`` for :class:`hil_dynamics.lie_integrators.FusedRKMK4`."""
    for i in range(6):
        twists_out[0, i] = x[i]
        twists_out[1, i] = x[6 + i]
        rates_out[i] = vn_dot[i]
        s = const[i] - delta_dot[i]
        for j in range(6):
            s -= m_b_inv[i, j] * bias[j]
        rates_out[6 + i] = s


@njit(**_OPTS)
def rigid_rkmk4_step(g, v, wrench, m6, m6_inv, h):
    """One RKMK4 step of seed 004 Eq. (2) in the orbit frame with a held wrench, in place
    (:class:`hil_dynamics.client.AbsoluteRigidBody`; the stages of :func:`rkmk4` with ``k = 1``)."""
    h2 = 0.5 * h
    a1, a2, a3, a4 = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
    k2, k3, k4 = np.empty(6), np.empty(6), np.empty(6)
    vs, u = np.empty(6), np.empty(6)
    _body_accel(v, m6, m6_inv, wrench, a1)
    for i in range(6):
        u[i] = v[i] * h2
        vs[i] = v[i] + a1[i] * h2
    _body_accel(vs, m6, m6_inv, wrench, a2)
    _dexp_inv(u, vs, k2)
    for i in range(6):
        u[i] = k2[i] * h2
        vs[i] = v[i] + a2[i] * h2
    _body_accel(vs, m6, m6_inv, wrench, a3)
    _dexp_inv(u, vs, k3)
    for i in range(6):
        u[i] = k3[i] * h
        vs[i] = v[i] + a3[i] * h
    _body_accel(vs, m6, m6_inv, wrench, a4)
    _dexp_inv(u, vs, k4)
    h6 = h / 6.0
    for i in range(6):
        u[i] = (v[i] + (k2[i] + k3[i]) * 2.0 + k4[i]) * h6
    out = np.empty(12)
    _mul_exp(g, u, out)
    g[:] = out
    for i in range(6):
        v[i] += (a1[i] + (a2[i] + a3[i]) * 2.0 + a4[i]) * h6


# -- serial/tree multibody on a free-flyer root (the Eq. 12 and Eq. 20 terms) --------------------
class Chain:
    """A Pinocchio model with a free-flyer root and 1-DOF revolute/prismatic joints, as arrays
    for :func:`chain_rnea` and :func:`chain_crba` (the same recursions as Pinocchio's ``rnea`` and
    ``crba`` in local frames; ``test_fast_paths`` checks them against Pinocchio to 1e-12).
    ``Chain.of(model)`` returns None for any other joint type (the caller then uses Pinocchio).
    """

    @classmethod
    def of(cls, model: pin.Model):
        nj = model.njoints
        if nj < 2 or model.joints[1].shortname() != 'JointModelFreeFlyer':
            return None
        kind, axis = np.zeros(nj, dtype=np.int64), np.zeros((nj, 3))
        units = {'X': 0, 'Y': 1, 'Z': 2}
        for i in range(2, nj):
            joint = model.joints[i]
            name = joint.shortname()
            if model.idx_vs[i] != 4 + i or joint.nv != 1:
                return None
            if name in ('JointModelRX', 'JointModelRY', 'JointModelRZ'):
                kind[i], axis[i, units[name[-1]]] = 1, 1.0
            elif name == 'JointModelRevoluteUnaligned':
                kind[i], axis[i] = 1, np.asarray(joint.axis, dtype=float)
            elif name in ('JointModelPX', 'JointModelPY', 'JointModelPZ'):
                kind[i], axis[i, units[name[-1]]] = 2, 1.0
            elif name == 'JointModelPrismaticUnaligned':
                kind[i], axis[i] = 2, np.asarray(joint.axis, dtype=float)
            else:
                return None
        out = cls()
        out.parents = np.asarray(list(model.parents), dtype=np.int64)
        out.placements = np.stack([pose_array(model.jointPlacements[i]) for i in range(nj)])
        out.kind, out.axis = kind, axis
        out.inertia = np.stack([model.inertias[i].matrix() for i in range(nj)])
        out.gravity = np.asarray(model.gravity.vector, dtype=float).copy()
        out.nv = model.nv
        out.work = np.empty((4, nj, 12))       # X_i, v_i, a_i, f_i per joint
        out.work_ic = np.empty((nj, 6, 6))
        return out

    def args(self):
        return self.parents, self.placements, self.kind, self.axis, self.inertia


@njit(**_OPTS)
def _joint_pose(placement, kind, axis, q, out):
    """``out = placement * M_joint(q)`` (revolute: rotation about ``axis``; prismatic: translation)."""
    if kind == 1:
        _mul_exp6(placement, 0.0, 0.0, 0.0, axis[0] * q, axis[1] * q, axis[2] * q, out)
    else:
        _mul_exp6(placement, axis[0] * q, axis[1] * q, axis[2] * q, 0.0, 0.0, 0.0, out)


@njit(**_OPTS)
def tool_jacobian_into(parents, kind, axis, placements, xs, ee_joint, pose_tool_in_joint, pose_tool_in_base, jac, tmp):
    """The pose in the base frame and the ``LOCAL`` Jacobian ``[J_b J_m]`` of a tool fixed to joint ``ee_joint``
    of a free-flyer chain with the base at the identity
    (:meth:`hil_dynamics.servicer.ServicerModel.tool_pose_and_jacobian`).

    ``xs[i]`` (i >= 2) are the joints' placements in their parents at ``q`` (:func:`hil_dynamics.kernels.chain_crba`'s
    ``work[0]``). Walking from the tool to the base with ``g = iM_tool``: joint ``i``'s column is ``Ad_{g^-1} S_i``
    (``S_i = [0; axis]`` revolute, ``[axis; 0]`` prismatic), then ``g <- xs[i] g``; at the free flyer (whose motion
    subspace is the identity in its local frame) ``J_b = Ad_{g^-1}``, and the tool pose is the free flyer's
    placement times ``g``. Joints off the tool's support keep zero columns. ``tmp`` is (2, 12) scratch.
    """
    nv = jac.shape[1]
    for r in range(6):
        for c in range(nv):
            jac[r, c] = 0.0
    g, g_next = tmp[0], tmp[1]
    for k in range(12):
        g[k] = pose_tool_in_joint[k]
    unit = np.zeros(6)
    col = np.empty(6)
    i = ee_joint
    while i >= 2:
        for k in range(6):
            unit[k] = 0.0
        off = 3 if kind[i] == 1 else 0
        unit[off], unit[off + 1], unit[off + 2] = axis[i, 0], axis[i, 1], axis[i, 2]
        _act_inv_motion(g, unit, col)
        for r in range(6):
            jac[r, 4 + i] = col[r]
        pose_mul_into(xs[i], g, g_next)
        for k in range(12):
            g[k] = g_next[k]
        i = parents[i]
    for c in range(6):
        for k in range(6):
            unit[k] = 0.0
        unit[c] = 1.0
        _act_inv_motion(g, unit, col)
        for r in range(6):
            jac[r, c] = col[r]
    pose_mul_into(placements[1], g, pose_tool_in_base)


@njit(**_OPTS)
def frame_pose_and_jacobian(parents, placements, kind, axis, q_arm, ee_joint, pose_frame_in_joint, xs, pose_out, jac,
                            tmp):
    """:meth:`hil_dynamics.servicer.ServicerModel.frame_pose_and_jacobian` of a frame fixed to joint ``ee_joint`` of a
    free-flyer chain (:class:`Chain`), base at the identity: the joints' placements at ``q_arm`` into ``xs``
    (:func:`_joint_pose`, as :func:`chain_crba`'s forward pass), then :func:`tool_jacobian_into`."""
    for i in range(2, parents.shape[0]):
        _joint_pose(placements[i], kind[i], axis[i], q_arm[i - 2], xs[i])
    tool_jacobian_into(parents, kind, axis, placements, xs, ee_joint, pose_frame_in_joint, pose_out, jac, tmp)


@njit(**_OPTS)
def arm_hold_torque(parents, placements, kind, axis, inertia, q, dq, q_hold, bandwidth, work, work_ic, m, tau):
    """The arm brakes of the twin validation (:class:`hil_bringup.runners.twin_validation.ArmHold`):
    ``tau = -M_red (w^2 (q - q_hold) + 2 w dq)`` with ``M_red = M_q - M_bq^T M_b^-1 M_bq``, the arm's inertia on
    its free base (Eq. 12's blocks, :func:`chain_crba` into ``m``), applied as ``M_q v - M_bq^T (M_b^-1 (M_bq v))``:
    one 6x6 solve, no ``n x n`` product."""
    chain_crba(parents, placements, kind, axis, inertia, q, work, work_ic, m, True)
    n = q.shape[0]
    v = np.empty(n)
    for k in range(n):
        v[k] = bandwidth * bandwidth * (q[k] - q_hold[k]) + 2.0 * bandwidth * dq[k]
    m_b, u, y = np.empty((6, 6)), np.empty(6), np.empty(6)
    for i in range(6):
        s = 0.0
        for k in range(n):
            s += m[i, 6 + k] * v[k]
        u[i] = s
        for j in range(6):
            m_b[i, j] = m[i, j]
    solve_into(m_b, u, y)
    for k in range(n):
        s = 0.0
        for j in range(n):
            s += m[6 + k, 6 + j] * v[j]
        for i in range(6):
            s -= m[6 + k, i] * y[i]
        tau[k] = -s


@njit(**_OPTS)
def latched_grasp_step(parents, placements, kind, axis, ee_joint, pose_flange_in_joint, xs, tmp, q_arm, pose_client,
                       twist_client, pose_base, twist_base, dq, pose_tool_in_flange, pose_grasp_in_client, pose_rest,
                       stiffness, damping, wrench_tool, wrench_flange, wrench_client, wrench_port):
    """One step of the latched gripper in one call: the flange's pose and ``LOCAL`` Jacobian ``[J_b J_m]`` at
    ``q_arm`` (:func:`frame_pose_and_jacobian` of the EE frame, ``(parents, ..., tmp)`` as
    :class:`hil_dynamics.servicer.ServicerModel` keeps them), the wrenches of :func:`latched_grasp_wrench`, and
    the servicer port's wrench ``J_b^T F_e`` (the base rows of Eq. 12's ``J^T F_e``) that its passivity
    observer takes (``wrench_port``)."""
    pose_flange = np.empty(12)
    jac = np.empty((6, 4 + parents.shape[0]))
    frame_pose_and_jacobian(parents, placements, kind, axis, q_arm, ee_joint, pose_flange_in_joint, xs, pose_flange,
                            jac, tmp)
    latched_grasp_wrench(pose_client, twist_client, pose_base, twist_base, pose_flange, jac, dq, pose_tool_in_flange,
                         pose_grasp_in_client, pose_rest, stiffness, damping, wrench_tool, wrench_flange, wrench_client)
    for i in range(6):
        s = 0.0
        for k in range(6):
            s += jac[k, i] * wrench_flange[k]
        wrench_port[i] = s


@njit(**_OPTS)
def _inertia_times(m6, v, out):
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += m6[i, j] * v[j]
        out[i] = s


@njit(**_OPTS)
def _act_force_add(g, f, out):
    """``out += g.act(Force(f))``: ``f' = R f``, ``tau' = R tau + p x (R f)``."""
    rf = _rv(g, f[0], f[1], f[2])
    rt = _rv(g, f[3], f[4], f[5])
    c = _cross(g[9], g[10], g[11], rf[0], rf[1], rf[2])
    out[0] += rf[0]
    out[1] += rf[1]
    out[2] += rf[2]
    out[3] += rt[0] + c[0]
    out[4] += rt[1] + c[1]
    out[5] += rt[2] + c[2]


@njit(**_OPTS)
def chain_rnea(parents, placements, kind, axis, inertia, gravity, base_pose, q_arm, v, a, fext, work, tau, fk=True):
    """Pinocchio's ``rnea`` on a free-flyer chain: ``tau = M a + C v + g - sum J_i^T fext_i``.

    ``base_pose`` is the free-flyer configuration as a 12-array pose, ``q_arm`` the joint
    angles, ``v``/``a`` (nv,) with the base twist/acceleration first (local axes), ``fext``
    (njoints, 6) external wrenches in each joint's frame, ``gravity`` the model's gravity
    6-vector; ``work`` (4, njoints, 12) scratch whose ``work[0, 2:]`` (the joint placements at
    ``q_arm``) are reused when ``fk`` is False.
    """
    nj = parents.shape[0]
    xs, vs, acc, fs = work[0], work[1], work[2], work[3]
    scratch = np.empty(24)             # one allocation for the four temporaries
    tmp, vj, h, neg_g = scratch[:6], scratch[6:12], scratch[12:18], scratch[18:]
    # joint 1: the free-flyer, liMi = placement * base_pose
    pose_mul_into(placements[1], base_pose, xs[1])
    for k in range(6):
        neg_g[k] = -gravity[k]
    for k in range(6):
        vs[1, k] = v[k]
    _act_inv_motion(xs[1], neg_g, tmp)
    for k in range(6):
        acc[1, k] = tmp[k] + a[k]
    for i in range(2, nj):
        p = parents[i]
        j = i - 2
        if fk:
            _joint_pose(placements[i], kind[i], axis[i], q_arm[j], xs[i])
        for k in range(6):
            vj[k] = 0.0
        if kind[i] == 1:
            vj[3], vj[4], vj[5] = axis[i, 0] * v[6 + j], axis[i, 1] * v[6 + j], axis[i, 2] * v[6 + j]
        else:
            vj[0], vj[1], vj[2] = axis[i, 0] * v[6 + j], axis[i, 1] * v[6 + j], axis[i, 2] * v[6 + j]
        _act_inv_motion(xs[i], vs[p], tmp)
        for k in range(6):
            vs[i, k] = tmp[k] + vj[k]
        _act_inv_motion(xs[i], acc[p], tmp)
        for k in range(6):
            acc[i, k] = tmp[k]
        if kind[i] == 1:
            acc[i, 3] += axis[i, 0] * a[6 + j]
            acc[i, 4] += axis[i, 1] * a[6 + j]
            acc[i, 5] += axis[i, 2] * a[6 + j]
        else:
            acc[i, 0] += axis[i, 0] * a[6 + j]
            acc[i, 1] += axis[i, 1] * a[6 + j]
            acc[i, 2] += axis[i, 2] * a[6 + j]
        _motion_cross_add(vs[i], vj, 1.0, acc[i])
    for i in range(1, nj):
        _inertia_times(inertia[i], acc[i], fs[i])
        _inertia_times(inertia[i], vs[i], h)
        c1 = _cross(vs[i, 3], vs[i, 4], vs[i, 5], h[0], h[1], h[2])
        c2 = _cross(vs[i, 0], vs[i, 1], vs[i, 2], h[0], h[1], h[2])
        c3 = _cross(vs[i, 3], vs[i, 4], vs[i, 5], h[3], h[4], h[5])
        for k in range(3):
            fs[i, k] += c1[k] - fext[i, k]
            fs[i, 3 + k] += c2[k] + c3[k] - fext[i, 3 + k]
    for i in range(nj - 1, 1, -1):
        j = i - 2
        if kind[i] == 1:
            tau[6 + j] = axis[i, 0] * fs[i, 3] + axis[i, 1] * fs[i, 4] + axis[i, 2] * fs[i, 5]
        else:
            tau[6 + j] = axis[i, 0] * fs[i, 0] + axis[i, 1] * fs[i, 1] + axis[i, 2] * fs[i, 2]
        _act_force_add(xs[i], fs[i], fs[parents[i]])
    for k in range(6):
        tau[k] = fs[1, k]


@njit(**_OPTS)
def _add_inertia_in_parent(g, ic, out):
    """``out += X^* ic X^-1``: the spatial inertia ``ic`` (6x6, linear first, about the child frame's origin)
    seen in the parent frame, ``g`` the child's pose in the parent (a 12-array).

    ``ic = [[m E, -[h]x], [[h]x, I_o]]`` (``h = m c``, ``I_o`` about the origin) moves as ``h' = R h + m p``,
    ``I_o' = R I_o R^T - [p]x[R h]x - [R h]x[p]x - m [p]x[p]x``, with ``[a]x[b]x = b a^T - (a.b) E``
    (the parallel-axis theorem): about 100 products instead of the 432 of two 6x6 matrix products.
    """
    m = ic[0, 0]
    h0, h1, h2 = ic[5, 1], ic[3, 2], ic[4, 0]
    rh = _rv(g, h0, h1, h2)
    p = (g[9], g[10], g[11])
    pr = p[0] * rh[0] + p[1] * rh[1] + p[2] * rh[2]
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    for r in range(3):
        # row r of R I_o, then (R I_o R^T)[r, c]
        a0 = g[3 * r] * ic[3, 3] + g[3 * r + 1] * ic[4, 3] + g[3 * r + 2] * ic[5, 3]
        a1 = g[3 * r] * ic[3, 4] + g[3 * r + 1] * ic[4, 4] + g[3 * r + 2] * ic[5, 4]
        a2 = g[3 * r] * ic[3, 5] + g[3 * r + 1] * ic[4, 5] + g[3 * r + 2] * ic[5, 5]
        for c in range(3):
            v = a0 * g[3 * c] + a1 * g[3 * c + 1] + a2 * g[3 * c + 2]
            v -= rh[r] * p[c] + p[r] * rh[c] + m * p[r] * p[c]
            if r == c:
                v += 2.0 * pr + m * pp
            out[3 + r, 3 + c] += v
    hp0, hp1, hp2 = rh[0] + m * p[0], rh[1] + m * p[1], rh[2] + m * p[2]
    for k in range(3):
        out[k, k] += m
    hx = ((0.0, -hp2, hp1), (hp2, 0.0, -hp0), (-hp1, hp0, 0.0))     # [h']x: lower left; its transpose upper right
    for r in range(3):
        for c in range(3):
            out[3 + r, c] += hx[r][c]
            out[c, 3 + r] += hx[r][c]


@njit(**_OPTS)
def chain_crba(parents, placements, kind, axis, inertia, q_arm, work, work_ic, m, fk=True):
    """Pinocchio's ``crba`` on a free-flyer chain (the joint-space inertia ``M``, full, symmetric).

    ``M`` does not depend on the base pose (local frames). ``work`` (4, njoints, 12) scratch,
    ``work_ic`` (njoints, 6, 6) the composite inertias.
    """
    nj = parents.shape[0]
    xs = work[0]
    if fk:
        for i in range(2, nj):
            _joint_pose(placements[i], kind[i], axis[i], q_arm[i - 2], xs[i])
    for i in range(1, nj):
        for r in range(6):
            for c in range(6):
                work_ic[i, r, c] = inertia[i, r, c]
    for i in range(nj - 1, 1, -1):
        _add_inertia_in_parent(xs[i], work_ic[i], work_ic[parents[i]])
    for r in range(6):
        for c in range(6):
            m[r, c] = work_ic[1, r, c]
    scratch = np.empty(12)             # one allocation for both temporaries
    f, f2 = scratch[:6], scratch[6:]
    for i in range(2, nj):
        vi = 4 + i
        # F = Ic_i S_i
        for r in range(6):
            s = 0.0
            for k in range(3):
                if kind[i] == 1:
                    s += work_ic[i, r, 3 + k] * axis[i, k]
                else:
                    s += work_ic[i, r, k] * axis[i, k]
            f[r] = s
        if kind[i] == 1:
            m[vi, vi] = axis[i, 0] * f[3] + axis[i, 1] * f[4] + axis[i, 2] * f[5]
        else:
            m[vi, vi] = axis[i, 0] * f[0] + axis[i, 1] * f[1] + axis[i, 2] * f[2]
        j = i
        while parents[j] > 0:
            for k in range(6):
                f2[k] = 0.0
            _act_force_add(xs[j], f, f2)
            for k in range(6):
                f[k] = f2[k]
            j = parents[j]
            if j >= 2:
                vj = 4 + j
                if kind[j] == 1:
                    s = axis[j, 0] * f[3] + axis[j, 1] * f[4] + axis[j, 2] * f[5]
                else:
                    s = axis[j, 0] * f[0] + axis[j, 1] * f[1] + axis[j, 2] * f[2]
                m[vj, vi] = s
                m[vi, vj] = s
            else:
                for k in range(6):
                    m[k, vi] = f[k]
                    m[vi, k] = f[k]


@njit(**_OPTS)
def gravity_from_mass_matrix(placement_1, gravity, base_pose, m, grav):
    """Pinocchio's generalised gravity ``rnea(q, 0, 0)`` of a free-flyer chain from its mass matrix ``m = M(q)``.

    RNEA takes the gravity as the root's acceleration ``-g``; at rest every body then moves with the
    free-flyer's acceleration ``a_g = Ad_{X_1}^-1 (-g)`` (``X_1 = placement_1 base_pose``, the joint's
    placement, local axes) and no joint accelerates, so ``rnea(q, 0, 0) = rnea(q, 0, [a_g; 0])`` without
    gravity ``= M [a_g; 0]`` (:func:`chain_rnea` is ``M a + C v + g``): six columns of ``M`` instead of a
    recursion."""
    x1 = np.empty(12)
    pose_mul_into(placement_1, base_pose, x1)
    neg_g = np.empty(6)
    for k in range(6):
        neg_g[k] = -gravity[k]
    a_g = np.empty(6)
    _act_inv_motion(x1, neg_g, a_g)
    for i in range(m.shape[0]):
        s = 0.0
        for k in range(6):
            s += m[i, k] * a_g[k]
        grav[i] = s


@njit(**_OPTS)
def _lockstep_rates(poses, x, f_b, tau, fext_o, fext_g, zero_fext, co, cf, cg, lab_gravity, ground_gravity,
                    nominal_in_lab, nom_m6, nom_m6_inv, w_ff1, w_ff23, w_grav, same_ff, ground_mode, work, work_ic,
                    tw, twists_out, rates_out):
    """The closed loop of seed 004 Fig. 6 at one instant (Eqs. 4, 15, 18, 22, 20), all terms compiled:
    what :meth:`ServicerHilLockstep.accelerations` computes with Pinocchio."""
    nv = tw.shape[1]
    n = nv - 6
    v_n, v_s, q, dq = x[:6], x[6:12], x[12:12 + n], x[12 + n:]
    vn_dot, delta, delta_dot = tw[0, :6], tw[1, :6], tw[2, :6]
    nominal_acceleration_into(v_n, nom_m6, nom_m6_inv, vn_dot)                       # Eq. (4)
    vel_b, vel_s, zero = tw[3], tw[4], tw[5]
    servicer_stage_kinematics(poses[1], v_n, v_s, vn_dot, delta, vel_b[:6], delta_dot)   # Eq. (15)
    for k in range(n):
        vel_b[6 + k] = dq[k]
        vel_s[6 + k] = dq[k]
    for k in range(6):
        vel_s[k] = v_s[k]
    for k in range(nv):
        zero[k] = 0.0
    identity = np.zeros(12)
    identity[0], identity[4], identity[8] = 1.0, 1.0, 1.0
    m_o, m_g = tw[8:8 + nv], tw[8 + nv:8 + 2 * nv]
    bias_b, ff_s, ff_b, grav, bias_g = tw[8 + 2 * nv], tw[9 + 2 * nv], tw[10 + 2 * nv], tw[11 + 2 * nv], tw[12 + 2 * nv]
    no_gravity = tw[13 + 2 * nv, :6]
    for k in range(6):
        no_gravity[k] = 0.0
    lhs = tw[14 + 2 * nv:14 + 3 * nv]
    rhs, sol = tw[14 + 3 * nv], tw[15 + 3 * nv]
    w_o, w_f, w_g = work[0], work[1], work[2]    # per chain: the joint placements are computed once
    chain_crba(co[0], co[1], co[2], co[3], co[4], q, w_o, work_ic, m_o, True)
    chain_rnea(co[0], co[1], co[2], co[3], co[4], no_gravity, identity, q, vel_b, zero, fext_o, w_o, bias_b, False)
    if ground_mode == 2 and w_grav == 1.0 and w_ff23 == 1.0:
        # The ground arm is the orbit model (same feed-forward model, lab gravity and EE wrench;
        # ServicerHilLockstep._compiled_setup) and Eq. (22) has all its terms: its tau_ff2 + tau_ff3 + G cancel the
        # ground arm's own C(V_s) V_s + G - J^T F_e of Eq. (20) exactly (RNEA is linear in the gravity and the
        # external forces: both are ff_s + G), so the arm rows are tau - w_ff1 M_qb Delta_dot - ff_b with
        # ff_b = bias_b, and neither the RNEA at V_s nor G is needed (what seed 004 designed Eq. 22 for).
        lockstep_solve(m_o, m_o, bias_b, zero, bias_b, zero, zero, tau, f_b, delta_dot, w_ff1, 1.0, 0.0, lhs, rhs,
                       sol)
    else:
        pose_lab = np.empty(12)
        pose_mul_into(nominal_in_lab, poses[1], pose_lab)
        if same_ff:     # the feed-forward's model is the admittance's: J^T F_e cancels in ff_s - ff_b
            chain_rnea(co[0], co[1], co[2], co[3], co[4], no_gravity, identity, q, vel_s, zero, fext_o, w_o, ff_s,
                       False)
            ff_b[:] = bias_b
            w_f = w_o
        else:
            chain_rnea(cf[0], cf[1], cf[2], cf[3], cf[4], no_gravity, identity, q, vel_s, zero, zero_fext, w_f, ff_s,
                       True)
            chain_rnea(cf[0], cf[1], cf[2], cf[3], cf[4], no_gravity, identity, q, vel_b, zero, zero_fext, w_f, ff_b,
                       False)
        if w_grav != 0.0 and same_ff:   # G of Eq. (20) from the mass matrix just computed (gravity_from_mass_matrix)
            gravity_from_mass_matrix(co[1][1], lab_gravity, pose_lab, m_o, grav)
        elif w_grav != 0.0:   # G of Eq. (20) on the feed-forward's model in the lab gravity
            chain_rnea(cf[0], cf[1], cf[2], cf[3], cf[4], lab_gravity, pose_lab, q, zero, zero, zero_fext, w_f, grav,
                       False)
        else:
            for k in range(nv):
                grav[k] = 0.0
        if ground_mode == 2 and w_grav != 0.0:   # the ground arm is the orbit model in the lab's gravity with the
            # same EE wrench (ServicerHilLockstep._compiled_setup): RNEA is linear in the gravity and the external
            m_g[:, :] = m_o      # forces, so C(V_s) V_s + G - J^T F_e = ff_s + G
            for k in range(nv):
                bias_g[k] = ff_s[k] + grav[k]
        elif ground_mode >= 1:   # identical arrays: the ground arm's M is the orbit model's
            m_g[:, :] = m_o
            chain_rnea(cg[0], cg[1], cg[2], cg[3], cg[4], ground_gravity, pose_lab, q, vel_s, zero, fext_g, w_g,
                       bias_g, True)
        else:
            chain_crba(cg[0], cg[1], cg[2], cg[3], cg[4], q, w_g, work_ic, m_g, True)
            chain_rnea(cg[0], cg[1], cg[2], cg[3], cg[4], ground_gravity, pose_lab, q, vel_s, zero, fext_g, w_g,
                       bias_g, False)
        lockstep_solve(m_o, m_g, bias_b, ff_s, ff_b, grav, bias_g, tau, f_b, delta_dot, w_ff1, w_ff23, w_grav,
                       lhs, rhs, sol)
    for k in range(6):
        twists_out[0, k] = v_n[k]
        twists_out[1, k] = v_s[k]
        rates_out[k] = vn_dot[k]
        rates_out[6 + k] = sol[k]
    for k in range(n):
        rates_out[12 + k] = dq[k]
        rates_out[12 + n + k] = sol[6 + k]


@njit(**_OPTS)
def lockstep_rkmk4_step(poses, x, h, f_b, tau, fext_o, fext_g, zero_fext, co, cf, cg, lab_gravity, ground_gravity,
                        nominal_in_lab, nom_m6, nom_m6_inv, w_ff1, w_ff23, w_grav, same_ff, ground_mode, work, work_ic,
                        poses_out, x_out):
    """One RKMK4 step of :class:`hil_dynamics.servicer_lockstep.ServicerHilLockstep` with held inputs,
    as one compiled call (``co``/``cf``/``cg``: the orbit, feed-forward and ground-arm chains as
    ``(parents, placements, kind, axis, inertia)``)."""
    nv = 6 + (x.shape[0] - 12) // 2
    tw = np.empty((16 + 3 * nv, nv))
    k, nx = poses.shape[0], x.shape[0]
    ks = np.empty((4, k, 6))
    kc = np.empty((3, k, 6))
    us = np.empty((3, k, 6))
    a = np.empty((4, nx))
    gs = np.empty((k, 12))
    xs = np.empty(nx)
    h2 = 0.5 * h
    args = (f_b, tau, fext_o, fext_g, zero_fext, co, cf, cg, lab_gravity, ground_gravity, nominal_in_lab, nom_m6,
            nom_m6_inv, w_ff1, w_ff23, w_grav, same_ff, ground_mode, work, work_ic, tw)
    _lockstep_rates(poses, x, *args, ks[0], a[0])
    rk_stage(poses, x, ks[0], a[0], us[0], h2, False, gs, xs, us[0], kc[0])
    _lockstep_rates(gs, xs, *args, ks[1], a[1])
    rk_stage(poses, x, ks[1], a[1], us[0], h2, True, gs, xs, us[1], kc[1])
    _lockstep_rates(gs, xs, *args, ks[2], a[2])
    rk_stage(poses, x, ks[2], a[2], us[1], h, True, gs, xs, us[2], kc[2])
    _lockstep_rates(gs, xs, *args, ks[3], a[3])
    rk_final(poses, x, kc[0], kc[1], kc[2], ks[3], us[2], a[0], a[1], a[2], a[3], h, poses_out, x_out)


@njit(**_OPTS)
def _finite3(a, b, c):
    """Every entry of the three vectors is finite (the inputs-as-held steps' check, before anything changes)."""
    for v in (a, b, c):
        for i in range(v.shape[0]):
            if not math.isfinite(v[i]):
                return False
    return True


@njit(**_OPTS)
def _relative_state_into(g_n, v_n, g_s, v_s, poses, x):
    """An admittance's state ``(g_n, V_n, g_s, V_s)`` as a step's ``poses`` (2, 12) and the first 12 entries of ``x``."""
    for i in range(12):
        poses[0, i] = g_n[i]
        poses[1, i] = g_s[i]
    for i in range(6):
        x[i] = v_n[i]
        x[6 + i] = v_s[i]


@njit(**_OPTS)
def ee_wrench_as_fext(f_e, ee_joint_o, placement_o, ee_joint_g, placement_g, fext_o, fext_g):
    """The EE wrench ``F_e`` (EE frame) as the external force of the EE's joint of the orbit model and of the
    ground arm (``placement``: the EE frame in its joint's, 12-arrays): ``fext[j] = X F_e``."""
    for i in range(6):
        fext_o[ee_joint_o, i] = 0.0
        fext_g[ee_joint_g, i] = 0.0
    _act_force_add(placement_o, f_e, fext_o[ee_joint_o])
    _act_force_add(placement_g, f_e, fext_g[ee_joint_g])


@njit(**_OPTS)
def lockstep_inputs_step(g_n, v_n, g_s, v_s, q, dq, h, f_b, f_e, tau, ee_joint_o, placement_o, ee_joint_g, placement_g,
                         fext_o, fext_g, zero_fext, co, cf, cg, lab_gravity, ground_gravity, nominal_in_lab, nom_m6,
                         nom_m6_inv, w_ff1, w_ff23, w_grav, same_ff, ground_mode, work, work_ic, poses_out, x_out):
    """:func:`lockstep_rkmk4_step` from the loop's state and inputs as they are held (``g_n, V_n, g_s, V_s, q,
    dq``; ``F_b``, ``F_e``, ``tau``): the finiteness check, ``F_e`` as external forces (:func:`ee_wrench_as_fext`)
    and the state vector in the call. Returns False, and changes nothing, if an input is not finite."""
    n = q.shape[0]
    if not _finite3(f_b, f_e, tau):
        return False
    ee_wrench_as_fext(f_e, ee_joint_o, placement_o, ee_joint_g, placement_g, fext_o, fext_g)
    poses = np.empty((2, 12))
    x = np.empty(12 + 2 * n)
    _relative_state_into(g_n, v_n, g_s, v_s, poses, x)
    for i in range(n):
        x[12 + i] = q[i]
        x[12 + n + i] = dq[i]
    lockstep_rkmk4_step(poses, x, h, f_b, tau, fext_o, fext_g, zero_fext, co, cf, cg, lab_gravity, ground_gravity,
                        nominal_in_lab, nom_m6, nom_m6_inv, w_ff1, w_ff23, w_grav, same_ff, ground_mode, work,
                        work_ic, poses_out, x_out)
    return True


@njit(**_OPTS)
def lockstep_shared_inputs_step(g_n, v_n, g_s, v_s, q, dq, h, f_b, f_e, tau, ee_joint, placement, fext_o, fext_g, co,
                                lab_gravity, nominal_in_lab, nom_m6, nom_m6_inv, w_ff1, w_ff23, w_grav, work, work_ic,
                                poses_out, x_out):
    """:func:`lockstep_inputs_step` when the feed-forward's and the ground arm's model are the admittance's (its
    ``ground_mode`` 2: the same chain ``co``, lab gravity, EE joint and placement), with the arguments that mode
    does not read left out: a call from Python pays for each array it passes (about 40 ns), and this one passes
    eight fewer. ``fext_o`` and ``fext_g`` must be two arrays (:func:`ee_wrench_as_fext` clears, then adds to,
    each); ``fext_g`` also stands for the feed-forward's zero forces, which this mode does not read."""
    return lockstep_inputs_step(g_n, v_n, g_s, v_s, q, dq, h, f_b, f_e, tau, ee_joint, placement, ee_joint, placement,
                                fext_o, fext_g, fext_g, co, co, co, lab_gravity, lab_gravity, nominal_in_lab, nom_m6,
                                nom_m6_inv, w_ff1, w_ff23, w_grav, True, 2, work, work_ic, poses_out, x_out)


@njit(**_OPTS)
def _port_damping(acc, prev, port_m6, v_meas, v_s, wrench_port, dt, e_int, enabled, max_rate, threshold, wrench_pc, f_b,
                  f_total):
    """The servicer's table port observed over the coming step with ``V_cmd = V_s`` (:func:`passivity_update`, seed
    004 Eq. 28, §VI) and ``F_b + F_pc`` into ``f_total`` (the sum as NumPy forms it): what the steps with a port
    (:func:`lockstep_port_step`, :func:`side_port_step`) do first. Returns :func:`passivity_update`'s pair
    (``pending < 0``: a non-finite port input, nothing changed and ``f_total`` not written)."""
    excess, pending = passivity_update(acc, prev, port_m6, v_meas, v_s, wrench_port, dt, e_int, enabled, max_rate,
                                       threshold, wrench_pc)
    if pending >= 0.0:
        for i in range(6):
            f_total[i] = f_b[i] + wrench_pc[i]
    return excess, pending


@njit(**_OPTS)
def lockstep_port_step(acc, prev, port_m6, v_meas, wrench_port, dt, e_int, enabled, max_rate, threshold, wrench_pc,
                       g_n, v_n, g_s, v_s, q, dq, f_b, f_e, tau, ee_joint, placement, fext_o, fext_g, co, lab_gravity,
                       nominal_in_lab, nom_m6, nom_m6_inv, w_ff1, w_ff23, w_grav, work, work_ic, poses_out, x_out):
    """The servicer's port observed, then the loop stepped under its damping, in one call: :func:`passivity_update`
    with ``V_cmd = V_s`` (seed 004 Eq. 28, §VI), then :func:`lockstep_shared_inputs_step` under ``F_b + F_pc``
    (the sum as NumPy forms it). Returns ``(E_obs, pending, status)``: status 0 done; 1 a non-finite port input,
    nothing changed (:func:`passivity_update`'s ``(nan, -1)``); 2 the port observed but a loop input not finite,
    the loop not stepped (the order and the state of the two calls made one after the other)."""
    f_total = np.empty(6)
    excess, pending = _port_damping(acc, prev, port_m6, v_meas, v_s, wrench_port, dt, e_int, enabled, max_rate,
                                    threshold, wrench_pc, f_b, f_total)
    if pending < 0.0:
        return excess, pending, 1
    if not lockstep_shared_inputs_step(g_n, v_n, g_s, v_s, q, dq, dt, f_total, f_e, tau, ee_joint, placement, fext_o,
                                       fext_g, co, lab_gravity, nominal_in_lab, nom_m6, nom_m6_inv, w_ff1, w_ff23,
                                       w_grav, work, work_ic, poses_out, x_out):
        return excess, pending, 2
    return excess, pending, 0


@njit(**_OPTS)
def side_port_step(acc, prev, port_m6, v_meas, dt, enabled, max_rate, threshold, wrench_pc,
                   ee_parents, ee_placements, ee_kind, ee_axis, ee_frame_joint, ee_frame_in_joint, ee_xs, ee_tmp,
                   g_n, v_n, g_s, v_s, q, dq, ddq, f_b, f_e, tau, ee_joint, placement, fext, zero_fext, co, nom_m6,
                   nom_m6_inv, work, work_ic, poses_out, x_out, ff_co, lab_gravity, nominal_in_lab, w_ff1, w_ff23,
                   w_grav, ff_work, ff_work_ic, tw, tau_q):
    """One step of the live servicer side (:func:`hil_dynamics.servicer.port_step` with the torques), in one call:
    ``V_n_dot`` of Eq. (4) at the state before the step; the table port's observer over the step
    (:func:`passivity_update` with ``V_cmd = V_s`` and the port wrench ``J_b^T F_e``, ``J`` by
    :func:`frame_pose_and_jacobian`, seed 004 Eq. 28, §VI); Eq. (18) under ``F_b + F_pc`` with the samples as held
    (:func:`admittance_inputs_step`); Eq. (22)'s ``tau_q`` at the new state (:func:`arm_torque_command`). Returns
    ``(E_obs, pending, status)``: 0 done; 1 a non-finite port input, nothing changed; 2 the port observed, a step
    input not finite, the state not stepped; 3 stepped, ``tau`` not finite, no torque (each as the separate calls
    leave things when they refuse)."""
    vn_dot = np.empty(6)
    nominal_acceleration_into(v_n, nom_m6, nom_m6_inv, vn_dot)
    nv = tw.shape[1]
    jac = np.empty((6, nv))
    pose_ee = np.empty(12)
    frame_pose_and_jacobian(ee_parents, ee_placements, ee_kind, ee_axis, q, ee_frame_joint, ee_frame_in_joint, ee_xs,
                            pose_ee, jac, ee_tmp)
    wrench_port = np.empty(6)
    for i in range(6):
        t = 0.0
        for j in range(6):
            t += jac[j, i] * f_e[j]
        wrench_port[i] = t
    f_total = np.empty(6)
    excess, pending = _port_damping(acc, prev, port_m6, v_meas, v_s, wrench_port, dt, 0.0, enabled, max_rate,
                                    threshold, wrench_pc, f_b, f_total)
    if pending < 0.0:
        return excess, pending, 1
    if not admittance_inputs_step(g_n, v_n, g_s, v_s, dt, q, dq, ddq, f_total, f_e, ee_joint, placement, fext,
                                  zero_fext, co, nom_m6, nom_m6_inv, work, work_ic, poses_out, x_out):
        return excess, pending, 2
    if not _finite3(tau, tau, tau):
        return excess, pending, 3
    arm_torque_command(poses_out[1], x_out[:6], x_out[6:], vn_dot, q, dq, tau, ff_co[0], ff_co[1], ff_co[2],
                       ff_co[3], ff_co[4], lab_gravity, nominal_in_lab, w_ff1, w_ff23, w_grav, ff_work, ff_work_ic, tw,
                       tau_q)
    return excess, pending, 0


@njit(**_OPTS)
def admittance_rkmk4_step(poses, x, h, q, dq, ddq, f_b, fext_o, zero_fext, co, nom_m6, nom_m6_inv, work, work_ic,
                          poses_out, x_out):
    """:meth:`hil_dynamics.servicer.ServicerAdmittance.step` (Eq. 18 with the arm samples held) as one
    compiled call: ``M`` and ``J_b^T F_e`` (as ``-rnea(q, 0, 0, F_e)``) once, then per RKMK4 stage the
    Coriolis force ``C_b V_b + C_bq dq`` by the compiled RNEA."""
    nv = 6 + q.shape[0]
    m = np.empty((nv, nv))
    chain_crba(co[0], co[1], co[2], co[3], co[4], q, work, work_ic, m, True)
    identity = np.zeros(12)
    identity[0], identity[4], identity[8] = 1.0, 1.0, 1.0
    no_gravity = np.zeros(6)
    zero = np.zeros(nv)
    minus_jtf = np.empty(nv)
    chain_rnea(co[0], co[1], co[2], co[3], co[4], no_gravity, identity, q, zero, zero, fext_o, work, minus_jtf, False)
    m_b = np.empty((6, 6))
    m_b_inv = np.empty((6, 6))
    for i in range(6):
        for j in range(6):
            m_b[i, j] = m[i, j]
    inverse_into(m_b, m_b_inv)
    rhs = np.empty(6)
    const = np.empty(6)
    for i in range(6):
        s = f_b[i] - minus_jtf[i]
        for j in range(6, nv):
            s -= m[i, j] * ddq[j - 6]
        rhs[i] = s
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += m_b_inv[i, j] * rhs[j]
        const[i] = s
    vel = np.empty(nv)
    for k in range(nv - 6):
        vel[6 + k] = dq[k]
    bias = np.empty(nv)
    vn_dot, delta, delta_dot = np.empty(6), np.empty(6), np.empty(6)
    ks = np.empty((4, 2, 6))
    kc = np.empty((3, 2, 6))
    us = np.empty((3, 2, 6))
    a = np.empty((4, 12))
    gs = np.empty((2, 12))
    xs = np.empty(12)
    h2 = 0.5 * h
    for stage in range(4):
        pp = poses if stage == 0 else gs
        xx = x if stage == 0 else xs
        nominal_acceleration_into(xx[:6], nom_m6, nom_m6_inv, vn_dot)                      # Eq. (4)
        servicer_stage_kinematics(pp[1], xx[:6], xx[6:], vn_dot, delta, vel[:6], delta_dot)  # Eq. (15)
        chain_rnea(co[0], co[1], co[2], co[3], co[4], no_gravity, identity, q, vel, zero, zero_fext, work, bias,
                   False)
        admittance_rates(const, m_b_inv, bias, delta_dot, vn_dot, xx, ks[stage], a[stage])  # Eq. (18)
        if stage == 0:
            rk_stage(poses, x, ks[0], a[0], us[0], h2, False, gs, xs, us[0], kc[0])
        elif stage == 1:
            rk_stage(poses, x, ks[1], a[1], us[0], h2, True, gs, xs, us[1], kc[1])
        elif stage == 2:
            rk_stage(poses, x, ks[2], a[2], us[1], h, True, gs, xs, us[2], kc[2])
    rk_final(poses, x, kc[0], kc[1], kc[2], ks[3], us[2], a[0], a[1], a[2], a[3], h, poses_out, x_out)


@njit(**_OPTS)
def admittance_inputs_step(g_n, v_n, g_s, v_s, h, q, dq, ddq, f_b, f_e, ee_joint, placement, fext, zero_fext, co,
                           nom_m6, nom_m6_inv, work, work_ic, poses_out, x_out):
    """:func:`admittance_rkmk4_step` from the admittance's state and the samples as they are held (``q, dq,
    ddq``, ``F_b``, ``F_e``): the finiteness check, ``F_e`` as the EE joint's external force (``placement``: the EE
    frame in its joint's, 12-array) and the state in the call. Returns False, and changes nothing, if a sample is
    not finite."""
    if not (_finite3(q, dq, ddq) and _finite3(f_b, f_e, f_e)):
        return False
    for i in range(6):
        fext[ee_joint, i] = 0.0
    _act_force_add(placement, f_e, fext[ee_joint])
    poses = np.empty((2, 12))
    x = np.empty(12)
    _relative_state_into(g_n, v_n, g_s, v_s, poses, x)
    admittance_rkmk4_step(poses, x, h, q, dq, ddq, f_b, fext, zero_fext, co, nom_m6, nom_m6_inv, work, work_ic,
                          poses_out, x_out)
    return True


@njit(**_OPTS)
def _free_floating_rates(x, tau, fext, co, work, work_ic, m, vel, zero, bias, rhs, acc, twists_out, rates_out):
    """Forward dynamics of a free-flyer chain without gravity, ``M(q) a = tau - C(q, v) v + J^T f``, as
    Pinocchio's ``aba`` gives it: ``M`` by the compiled CRBA, the rest by the compiled RNEA at zero
    acceleration, then one solve. ``x = [V_b; q; dq]`` (base body twist first)."""
    nv = tau.shape[0]
    n = nv - 6
    identity = np.zeros(12)
    identity[0], identity[4], identity[8] = 1.0, 1.0, 1.0
    no_gravity = np.zeros(6)
    for k in range(6):
        vel[k] = x[k]
    for k in range(n):
        vel[6 + k] = x[6 + n + k]
    chain_crba(co[0], co[1], co[2], co[3], co[4], x[6:6 + n], work, work_ic, m, True)
    chain_rnea(co[0], co[1], co[2], co[3], co[4], no_gravity, identity, x[6:6 + n], vel, zero, fext, work, bias, False)
    for k in range(nv):
        rhs[k] = tau[k] - bias[k]
    solve_into(m, rhs, acc)
    for k in range(6):
        twists_out[0, k] = x[k]
        rates_out[k] = acc[k]
    for k in range(n):
        rates_out[6 + k] = x[6 + n + k]
        rates_out[6 + n + k] = acc[6 + k]


@njit(**_OPTS)
def free_floating_rkmk4_step(poses, x, h, tau, fext, co, work, work_ic, poses_out, x_out):
    """One RKMK4 step of :class:`hil_dynamics.free_floating.FreeFloatingServicer` (held inputs) as one
    compiled call: ``poses`` (1, 12) the base pose in orbit, ``x = [V_b; q; dq]``, ``tau = [F_b; tau_arm]``,
    ``fext`` (njoints, 6) the external wrenches in the joint frames."""
    nv = tau.shape[0]
    nx = x.shape[0]
    m, vel, zero = np.empty((nv, nv)), np.empty(nv), np.zeros(nv)
    bias, rhs, acc = np.empty(nv), np.empty(nv), np.empty(nv)
    ks = np.empty((4, 1, 6))
    kc = np.empty((3, 1, 6))
    us = np.empty((3, 1, 6))
    a = np.empty((4, nx))
    gs = np.empty((1, 12))
    xs = np.empty(nx)
    h2 = 0.5 * h
    _free_floating_rates(x, tau, fext, co, work, work_ic, m, vel, zero, bias, rhs, acc, ks[0], a[0])
    rk_stage(poses, x, ks[0], a[0], us[0], h2, False, gs, xs, us[0], kc[0])
    _free_floating_rates(xs, tau, fext, co, work, work_ic, m, vel, zero, bias, rhs, acc, ks[1], a[1])
    rk_stage(poses, x, ks[1], a[1], us[0], h2, True, gs, xs, us[1], kc[1])
    _free_floating_rates(xs, tau, fext, co, work, work_ic, m, vel, zero, bias, rhs, acc, ks[2], a[2])
    rk_stage(poses, x, ks[2], a[2], us[1], h, True, gs, xs, us[2], kc[2])
    _free_floating_rates(xs, tau, fext, co, work, work_ic, m, vel, zero, bias, rhs, acc, ks[3], a[3])
    rk_final(poses, x, kc[0], kc[1], kc[2], ks[3], us[2], a[0], a[1], a[2], a[3], h, poses_out, x_out)


@njit(**_OPTS)
def free_floating_inputs_step(pose, v_b, q, dq, h, wrench_base_com, tau_arm, wrench_flange, pose_flange_in_joint,
                              ee_joint, fext, co, work, work_ic, poses_out, x_out):
    """:func:`free_floating_rkmk4_step` from the servicer's state and inputs as they are held: ``pose`` (12) the
    base in orbit, ``V_b``, ``q``, ``dq``; ``F_b`` (base CoM), ``tau_arm``, the flange wrench (flange frame),
    moved into ``fext[ee_joint]`` by ``pose_flange_in_joint``. Returns False, and changes nothing, if an input is
    not finite (the caller then names it)."""
    n = tau_arm.shape[0]
    if not _finite3(wrench_base_com, wrench_flange, tau_arm):
        return False
    tau = np.empty(6 + n)
    x = np.empty(6 + 2 * n)
    for i in range(6):
        tau[i] = wrench_base_com[i]
        x[i] = v_b[i]
    for i in range(n):
        tau[6 + i] = tau_arm[i]
        x[6 + i] = q[i]
        x[6 + n + i] = dq[i]
    for i in range(6):
        fext[ee_joint, i] = 0.0
    _act_force_add(pose_flange_in_joint, wrench_flange, fext[ee_joint])
    free_floating_rkmk4_step(pose.reshape(1, 12), x, h, tau, fext, co, work, work_ic, poses_out, x_out)
    return True

# -- the passivity observer/controller of one port (hil_dynamics.passivity, seed 004 Eq. 28) ----
# acc layout of PassivityController: [E_port, E_integration, E_dissipated, beta, max E_obs, has a
# previous sample (0/1), dt of the previous sample, beta of the previous sample]; prev rows: the
# previous sample's wrench, commanded twist, measured twist and M V_cmd.
@njit(**_OPTS)
def passivity_update(acc, prev, m, v_meas, v_cmd, f, dt, e_int, enabled, max_rate, threshold, wrench_pc):
    """:meth:`PassivityController.update_reference` on arrays; writes ``-beta M V`` into ``wrench_pc``
    and returns ``(E_obs after the pending dissipation, pending dissipation)``. A non-finite input
    returns ``(nan, nan)`` and changes nothing (the caller names it)."""
    n = v_cmd.shape[0]
    for i in range(n):
        if not (math.isfinite(v_meas[i]) and math.isfinite(v_cmd[i]) and math.isfinite(f[i])):
            return math.nan, -1.0
    if not math.isfinite(e_int):
        return math.nan, -1.0
    if acc[5] > 0.0:
        model = 0.0
        environment = 0.0
        dissipated = 0.0
        for i in range(n):
            v_mean = 0.5 * (prev[1, i] + v_cmd[i])
            model += prev[0, i] * v_mean
            environment += (prev[0, i] + f[i]) * (prev[2, i] + v_meas[i])
            dissipated += prev[3, i] * v_mean
        acc[0] += (model - 0.25 * environment) * acc[6]
        acc[2] += acc[7] * dissipated * acc[6]
    acc[1] += e_int
    kinetic2 = 0.0
    for i in range(n):
        m_v = 0.0
        for j in range(n):
            m_v += m[i, j] * v_cmd[j]
        prev[3, i] = m_v
        kinetic2 += v_cmd[i] * m_v
    excess = acc[0] + acc[1] - acc[2]
    if excess > acc[4]:
        acc[4] = excess
    beta = 0.0
    if enabled and excess > threshold:
        beta = min(max_rate, excess / (kinetic2 * dt)) if kinetic2 > 0.0 else max_rate
    pending = beta * kinetic2 * dt
    for i in range(n):
        prev[0, i] = f[i]
        prev[1, i] = v_cmd[i]
        prev[2, i] = v_meas[i]
        wrench_pc[i] = -beta * prev[3, i]
    acc[3] = beta
    acc[5] = 1.0
    acc[6] = dt
    acc[7] = beta
    return excess - pending, pending


@njit(**_OPTS)
def integration_energy_step(m, v0, v1, f, g0, g1):
    """:func:`hil_dynamics.passivity.integration_energy` of one step from ``(g0, V0)`` to ``(g1, V1)`` (12-array
    poses in orbit, body twists): ``1/2 (V1^T M V1 - V0^T M V0) - F^T d`` with the displacement
    ``d = log6(g0^-1 g1)``."""
    rel = np.empty(12)
    d = np.empty(6)
    relative_into(g0, g1, rel)
    log6_into(rel, d)
    n = v0.shape[0]
    stored = 0.0
    work = 0.0
    for i in range(n):
        m_v1 = 0.0
        m_v0 = 0.0
        for j in range(n):
            m_v1 += m[i, j] * v1[j]
            m_v0 += m[i, j] * v0[j]
        stored += v1[i] * m_v1 - v0[i] * m_v0
        work += f[i] * d[i]
    return 0.5 * stored - work


@njit(**_OPTS)
def client_port_step(acc, prev, m, v_meas, f, dt, e_int, enabled, max_rate, threshold, wrench_pc, applied,
                     g_n, v_n, g_c, v_c, mass, inertia, inertia_inv, nom_m6, nom_m6_inv):
    """:meth:`hil_dynamics.passivity.ClientPort.step_reference` in one call (seed 004 Eqs. 4, 11, 23, 28).

    The port's observer/controller (:func:`passivity_update`, commanded twist ``V_c = v_c`` before the
    step, measured ``v_meas``), the damped wrench ``applied = f + wrench_pc``, the RKMK4 step of
    Eqs. (4) + (11) under it (:func:`client_rkmk4_step`, in place on ``g_n, v_n, g_c, v_c``) and the
    integrator's energy of the step (:func:`integration_energy_step` between the Eq. 23 maps before and
    after). Returns ``(E_obs after the pending dissipation, pending dissipation, integration energy)``; a
    non-finite input returns ``pending < 0`` and changes nothing.
    """
    excess, pending = passivity_update(acc, prev, m, v_meas, v_c, f, dt, e_int, enabled, max_rate, threshold,
                                       wrench_pc)
    if pending < 0.0:
        return excess, pending, math.nan
    for i in range(6):
        applied[i] = f[i] + wrench_pc[i]
    g0, v0, g1, v1 = np.empty(12), np.empty(6), np.empty(12), np.empty(6)
    relative_mapping_into(g_n, v_n, g_c, v_c, g0, v0)
    client_rkmk4_step(g_n, v_n, g_c, v_c, applied, mass, inertia, inertia_inv, nom_m6, nom_m6_inv, dt)
    relative_mapping_into(g_n, v_n, g_c, v_c, g1, v1)
    return excess, pending, integration_energy_step(m, v0, v1, applied, g0, g1)


def warm_up() -> None:
    """Compile (or load from the cache) every kernel with the argument types the rules pass.

    ``./dev`` runs this after installing the packages, so that no node compiles in its first
    real-time callback and a fresh clone pays the compilation (about 30 s of CPU) once.
    """
    from hil_dynamics.client import AbsoluteRigidBody, ClientAdmittance
    from hil_dynamics.lie_integrators import FusedRKMK4
    from hil_dynamics.models import servicer_lbr_urdf
    from hil_dynamics.rigid_body import RigidBody
    from hil_dynamics.servicer_lockstep import build_servicer_loop

    body = RigidBody(10.0, [1.0, 2.0, 2.5])
    client = ClientAdmittance(body, np.full(6, 0.01))
    client.step(np.ones(6), 1e-3)
    client.advance_nominal(2.5e-3, 1e-3)                     # the held nodes' nominal (unforced_nominal_over)
    AbsoluteRigidBody(body, np.full(6, 0.01)).step(np.ones(6), 1e-3)
    loop = build_servicer_loop(servicer_lbr_urdf(), 'lbr_flange', body, np.full(6, 0.01), pin.SE3.Identity(), np.zeros(6),
                               np.full(7, 0.1), np.zeros(7))
    loop.step(1e-3, np.zeros(6), np.zeros(7), np.zeros(6))                       # compiled lockstep, inputs as held
    chains, mode = loop._chains, loop._chains.ground_mode
    for other in (0, 2):          # both calls: lockstep_shared_inputs_step (mode 2) and lockstep_inputs_step
        chains.ground_mode = other
        loop.step(1e-3, np.zeros(6), np.zeros(7), np.zeros(6))
    chains.ground_mode = mode
    loop.step(1e-3, [0.0] * 6, np.zeros(7), np.zeros(6))                         # checked first, then compiled
    from hil_dynamics.passivity import ClientPort, PassivityController
    loop.step_with_port(1e-3, np.zeros(6), np.zeros(7), np.zeros(6), PassivityController(np.eye(6), 1.0), np.zeros(6),
                        np.zeros(6))                                            # the lockstep runners' port and step
    loop.step(1e-3, np.zeros(6), lambda t, q, dq: np.zeros(7), np.zeros(6))     # Pinocchio-fused lockstep
    adm, ff = loop.admittance, loop.feedforward
    s = adm.step(1e-3, np.zeros(7), np.zeros(7), np.zeros(7), np.zeros(6), np.zeros(6))     # samples as held
    adm.step(1e-3, [0.0] * 7, np.zeros(7), np.zeros(7), np.zeros(6), np.zeros(6))         # checked first
    adm.step_pinocchio(1e-3, np.zeros(7), np.zeros(7), np.zeros(7), np.zeros(6), np.zeros(6))
    ff.torques(np.zeros(7), np.zeros(7), np.zeros(7), s.pose_base_in_nominal, s.twist_base_rel_body,
               s.twist_nominal_body, adm.nominal_acceleration(s.twist_nominal_body))
    ff.torque_command(np.zeros(7), np.zeros(7), np.zeros(7), s.pose_arrays()[1], s.twist_base_rel_body,
                      s.twist_nominal_body, adm.nominal_acceleration(s.twist_nominal_body))
    from hil_dynamics.passivity import PassivityController as _Port
    from hil_dynamics.servicer import load_port_step
    load_port_step(adm, ff, _Port(np.eye(6), 1.0))                              # the live servicer side's step
    rk = FusedRKMK4(1, 6)

    def derivative(t, poses, x, twists_out, rates_out):
        twists_out[0] = x
        rates_out[:] = 0.0
    rk.step(0.0, 1e-3, np.stack([pose_array(pin.SE3.Identity())]), np.zeros(6), derivative)
    out = np.empty(7)
    xyzquat_into(pose_array(pin.SE3.Identity()), out)
    pose_mul_into(pose_array(pin.SE3.Identity()), pose_array(pin.SE3.Identity()), np.empty(12))   # CommandFrame
    for n in (1, 6):
        PassivityController(np.ones(n), 1.0).update(np.ones(n), np.ones(n), np.ones(n), 1e-3)
    ClientPort(ClientAdmittance(body, np.full(6, 0.01)), 1.0).step(np.ones(6), 1e-3, np.zeros(6))
    from hil_dynamics.rebase import load_kernels as load_rebase_kernels
    load_rebase_kernels()                                                       # the re-basing ramp's kernels
    model = loop.admittance.model                                               # the latched grasp's kernel
    pose, jac = model.ee_pose_array_and_jacobian(np.full(7, 0.1))
    g, w = pose_array(pin.SE3.Identity()), [np.zeros(6) for _ in range(3)]
    latched_grasp_wrench(g, np.zeros(6), g, np.zeros(6), pose, jac, np.zeros(7), g, g, g, np.ones(6), np.ones(6), *w)
    latched_grasp_step(*model.ee_chain, np.full(7, 0.1), g, np.zeros(6), g, np.zeros(6), np.zeros(7), g, g, g,
                       np.ones(6), np.ones(6), *w, np.zeros(6))
    chain = Chain.of(model.model)                                               # the twin validation's arm hold
    arm_hold_torque(*chain.args(), np.full(7, 0.1), np.zeros(7), np.zeros(7), 1.0, chain.work, chain.work_ic,
                    np.empty((model.model.nv, model.model.nv)), np.empty(7))
    from hil_dynamics.free_floating import FreeFloatingServicer
    free = FreeFloatingServicer(servicer_lbr_urdf(), 'lbr_flange', pin.SE3.Identity(), np.zeros(6), np.zeros(7),
                                np.zeros(7))
    free.step(1e-3, np.zeros(6), np.zeros(7), np.zeros(6))          # the inputs as held: one compiled call
    free.step(1e-3, [0.0] * 6, np.zeros(7), np.zeros(6))            # checked first, then the step on arrays


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_dynamics.kernels: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
