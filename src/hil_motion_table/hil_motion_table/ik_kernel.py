"""The serial robots' damped-least-squares IK as one compiled call (Numba; no rclpy).

:meth:`hil_motion_table.kinematics.SerialKinematics.inverse` runs in every hot path for every
streamed command. With Pinocchio from Python, each iteration cost a forward pass, a frame
Jacobian, ``log6``, a 6x6 solve and (at the solution) an SVD, each behind its binding: 60-65 us per
command on the KR 120 at 1 kHz, the table's largest part. :func:`serial_ik` runs the same
iteration (:meth:`SerialKinematics.inverse_reference`, which stays the readable definition and the
test's reference) in one call on arrays:

* forward kinematics of a fixed-base chain of 1-DOF revolute/prismatic joints, as Pinocchio's
  (joint placement times the joint's motion), and the flange frame on the last joint;
* the flange's body Jacobian (Pinocchio's ``LOCAL``): column ``i`` is ``Ad(oMf^-1 oMi) S_i``;
* the error ``log6(oMf^-1 g_d)`` (:func:`hil_dynamics.kernels.log6_into`: ``log3``, then ``V(w)^-1 p``);
* ``dq = J^T (J J^T + lambda^2 I)^-1 e``, the step clamped to ``max_step``;
* ``sigma_min`` by one-sided Jacobi on ``J``'s columns (:func:`smallest_singular_value`), where the
  reference calls ``numpy.linalg.svd``: in Numba LAPACK's SVD cost about 6 us of a 10-17 us table step.

:class:`SerialChain` reads the chain's arrays from the Pinocchio model once; ``of`` returns
None for any other model (the caller then keeps the reference). ``test_ik_kernel`` checks every
piece against Pinocchio and the whole solve against the reference to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numba import njit

from hil_common.kernel_cache import drop_stale_code
from hil_dynamics import kernels as _kernels
from hil_dynamics.kernels import (_OPTS, _cross, _mul_exp6, _rtv, log6_into, pose_array, pose_mul_into,  # noqa: F401
                                  relative_into, solve_into)


class SerialChain:
    """A fixed-base serial chain of 1-DOF revolute/prismatic joints and a frame on its last joint."""

    @classmethod
    def of(cls, model: pin.Model, frame_id: int):
        nj = model.njoints
        units = {'X': 0, 'Y': 1, 'Z': 2}
        kind, axis = np.zeros(nj - 1, dtype=np.int64), np.zeros((nj - 1, 3))
        for i in range(1, nj):
            joint, name = model.joints[i], model.joints[i].shortname()
            if model.parents[i] != i - 1 or joint.nq != 1 or joint.nv != 1 or model.idx_qs[i] != i - 1:
                return None
            if name in ('JointModelRX', 'JointModelRY', 'JointModelRZ'):
                kind[i - 1], axis[i - 1, units[name[-1]]] = 1, 1.0
            elif name == 'JointModelRevoluteUnaligned':
                kind[i - 1], axis[i - 1] = 1, np.asarray(joint.extract().axis, dtype=float)
            elif name in ('JointModelPX', 'JointModelPY', 'JointModelPZ'):
                kind[i - 1], axis[i - 1, units[name[-1]]] = 2, 1.0
            elif name == 'JointModelPrismaticUnaligned':
                kind[i - 1], axis[i - 1] = 2, np.asarray(joint.extract().axis, dtype=float)
            else:
                return None
        frame = model.frames[frame_id]
        if frame.parentJoint != nj - 1:
            return None
        out = cls()
        out.placements = np.stack([pose_array(model.jointPlacements[i]) for i in range(1, nj)])
        out.kind, out.axis = kind, axis
        out.frame_placement = pose_array(frame.placement)
        out.n = nj - 1
        out.poses = np.empty((nj, 12))          # oMi per joint, then oMf
        out.jac = np.empty((6, nj - 1))
        out.result = np.empty(3)                 # error, sigma_min, iterations
        out.target = np.empty(12)
        out.hint_q = np.zeros(nj - 1)
        return out


@njit(**_OPTS)
def forward_into(placements, kind, axis, frame_placement, q, poses):
    """``poses[i]`` = ``oMi`` of joint ``i + 1``; ``poses[n]`` = the frame's ``oMf``."""
    n = q.shape[0]
    tmp = poses[n]                  # scratch for oMi-1 times the placement, until oMf goes there (no allocation)
    for i in range(n):
        a = axis[i]
        if i == 0:
            src = placements[0]
        else:
            pose_mul_into(poses[i - 1], placements[i], tmp)
            src = tmp
        if kind[i] == 1:
            _mul_exp6(src, 0.0, 0.0, 0.0, a[0] * q[i], a[1] * q[i], a[2] * q[i], poses[i])
        else:
            _mul_exp6(src, a[0] * q[i], a[1] * q[i], a[2] * q[i], 0.0, 0.0, 0.0, poses[i])
    pose_mul_into(poses[n - 1], frame_placement, poses[n])


@njit(**_OPTS)
def jacobian_into(kind, axis, poses, n, jac):
    """The frame's body Jacobian (``LOCAL``, linear rows first) from :func:`forward_into`'s poses."""
    f = poses[n]
    for i in range(n):
        g = poses[i]
        a = axis[i]
        wa = (g[0] * a[0] + g[1] * a[1] + g[2] * a[2], g[3] * a[0] + g[4] * a[1] + g[5] * a[2],
              g[6] * a[0] + g[7] * a[1] + g[8] * a[2])                     # the axis in the world
        w = _rtv(f, wa[0], wa[1], wa[2])                                    # ... in the frame
        if kind[i] == 1:
            p = _rtv(f, g[9] - f[9], g[10] - f[10], g[11] - f[11])          # joint origin in the frame
            v = _cross(p[0], p[1], p[2], w[0], w[1], w[2])
            jac[0, i], jac[1, i], jac[2, i] = v[0], v[1], v[2]
            jac[3, i], jac[4, i], jac[5, i] = w[0], w[1], w[2]
        else:
            jac[0, i], jac[1, i], jac[2, i] = w[0], w[1], w[2]
            jac[3, i], jac[4, i], jac[5, i] = 0.0, 0.0, 0.0


@njit(**_OPTS)
def body_twist_into(placements, kind, axis, frame_placement, ad_body_from_flange, q, dq, poses, jac, scratch, out):
    """A body's twist on the flange from the joints, ``Ad_{Y^-1} J_b(q) dq``
    (:func:`hil_motion_table.kinematics_helpers.body_twist_from_joints`, ``Ad_{Y^-1}`` its
    ``pose_body_in_flange.actInv``): :func:`forward_into` and :func:`jacobian_into` (``poses``, ``jac`` their
    scratch), then the two products. Written into ``out`` only when every component is finite (``scratch``: 12);
    returns whether it was."""
    n = q.shape[0]
    forward_into(placements, kind, axis, frame_placement, q, poses)
    jacobian_into(kind, axis, poses, n, jac)
    for r in range(6):
        v = 0.0
        for i in range(n):
            v += jac[r, i] * dq[i]
        scratch[r] = v
    finite = True
    for r in range(6):
        v = 0.0
        for c in range(6):
            v += ad_body_from_flange[r, c] * scratch[c]
        scratch[6 + r] = v
        finite = finite and np.isfinite(v)
    if finite:
        for r in range(6):
            out[r] = scratch[6 + r]
    return finite


#: Sweeps of :func:`smallest_singular_value` before it gives up (LAPACK ``dgesvj``'s ``NSWEEP``); these
#: Jacobians take 5-8 (quadratic convergence), also at and near their singularities.
JACOBI_SWEEPS = 30


@njit(**_OPTS)
def smallest_singular_value(jac, work):
    """The smallest of the ``min(m, n)`` singular values of the ``m x n`` ``jac``, as ``numpy.linalg.svd(jac)[1][-1]``
    (``work``: scratch of at least ``(min(m, n), max(m, n))``; ``jac`` is only read).

    Why not LAPACK: in Numba its SVD (``gesdd`` with its copies and work arrays) costs 5.6 us on these 6x6
    Jacobians, this 1.5 us. Why not ``sqrt(eigvalsh(J J^T)[0])`` (1.9 us): forming ``J J^T`` rounds
    ``sigma^2`` by about ``eps sigma_max^2``, so ``sigma`` by ``eps sigma_max^2 / (2 sigma)``: 1e-14..3e-12
    absolute (relative 1e-12..1e-7) in the singular band (0.02-0.1) of these robots (``sigma_max`` 2.2-3.1) and
    2e-8 at a singularity, where LAPACK's and this one are within 5e-16 of the exact value
    (docs/performance.md has the table).

    One-sided Jacobi (Hestenes 1958; Demmel & Veselic 1992, SIAM J. Matrix Anal. Appl. 13(4)): plane
    rotations of pairs of columns (of ``jac``, or of ``jac^T`` when ``n > m``) make them orthogonal; the
    columns' norms are then the singular values. Each rotation zeroes the pair's inner product ``c`` with
    ``t = tan(theta)`` the smaller root of ``t^2 + 2 zeta t - 1 = 0``, ``zeta = (|a_j|^2 - |a_i|^2) / (2 c)``
    (Rutishauser's form, one square root). The pairs go in round-robin order (each round disjoint pairs,
    whose rotations the CPU overlaps: 1.5 us against 2.25 us in the cyclic row order). A pair counts as
    orthogonal once ``|c| <= len eps |a_i| |a_j|``: twice the rounding bound of the dot product of length
    ``len`` (``gamma_len``, Higham 2002, Eq. 3.5), so a sweep ends in no rotation instead of chasing the dot
    product's own rounding. The result's error is then of the order of ``eps sigma_max`` absolute, as
    LAPACK's (within 3e-16 of a float80 reference on these Jacobians, test_ik_kernel). Non-finite
    entries raise ``LinAlgError`` with Numba's own message for ``numpy.linalg.svd``.
    """
    m, n = jac.shape
    if n <= m:
        p, size = n, m
        for j in range(n):
            for k in range(m):
                work[j, k] = jac[k, j]
    else:
        p, size = m, n
        for j in range(m):
            for k in range(n):
                work[j, k] = jac[j, k]
    for j in range(p):
        for k in range(size):
            if not np.isfinite(work[j, k]):
                raise np.linalg.LinAlgError('Array must not contain infs or NaNs.')
    tol = size * 2.220446049250313e-16
    tol2 = tol * tol
    players = p + (p & 1)                  # round robin: one dummy column when p is odd
    rounds = players - 1
    for _ in range(JACOBI_SWEEPS):
        rotated = False
        for r in range(rounds):
            for h in range(players // 2):
                if h == 0:
                    i, j = r, rounds
                else:
                    i, j = r + h, r - h
                    if i >= rounds:
                        i -= rounds
                    if j < 0:
                        j += rounds
                if i >= p or j >= p:
                    continue
                a = 0.0
                b = 0.0
                c = 0.0
                for k in range(size):
                    x, y = work[i, k], work[j, k]
                    a += x * x
                    b += y * y
                    c += x * y
                if c * c > tol2 * (a * b):
                    rotated = True
                    d = b - a
                    t = 2.0 * c / (abs(d) + np.sqrt(d * d + 4.0 * c * c))
                    if d < 0.0:
                        t = -t
                    cs = 1.0 / np.sqrt(1.0 + t * t)
                    sn = cs * t
                    for k in range(size):
                        x, y = work[i, k], work[j, k]
                        work[i, k] = cs * x - sn * y
                        work[j, k] = sn * x + cs * y
        if not rotated:
            break
    least = np.inf
    for j in range(p):
        s = 0.0
        for k in range(size):
            s += work[j, k] * work[j, k]
        least = min(least, s)
    return np.sqrt(least)


@njit(**_OPTS)
def serial_ik(placements, kind, axis, frame_placement, poses, jac, target, q, tolerance, max_iterations, max_step,
              damping, damping_max, singular_band, hint_sigma, hint_q, hint_radius, result):
    """:meth:`SerialKinematics.inverse_reference` on arrays: ``q`` (the seed) becomes the solution;
    ``result`` = (error norm, sigma_min, iterations). ``hint_sigma < 0``: no hint."""
    n = q.shape[0]
    trusted = False
    if hint_sigma >= 2.0 * singular_band:
        trusted = True
        for i in range(n):
            if abs(q[i] - hint_q[i]) >= hint_radius:
                trusted = False
    rel = np.empty(12)
    err = np.empty(6)
    a = np.empty((6, 6))
    x = np.empty(6)
    b = np.empty(6)
    dq = np.empty(n)
    work = np.empty((min(6, n), max(6, n)))
    err_norm, sigma, it = np.inf, 0.0, 0
    for it in range(max_iterations + 1):
        forward_into(placements, kind, axis, frame_placement, q, poses)
        relative_into(poses[n], target, rel)                  # oMf^-1 g_d
        log6_into(rel, err)
        s = 0.0
        for i in range(6):
            s += err[i] * err[i]
        err_norm = np.sqrt(s)
        jacobian_into(kind, axis, poses, n, jac)
        done = err_norm < tolerance or it == max_iterations
        if done or not trusted:
            sigma = smallest_singular_value(jac, work)          # numpy.linalg.svd(jac)[1][-1]
        else:
            sigma = hint_sigma
        if done:
            break
        lam2 = damping * damping
        if sigma < singular_band:
            lam2 += (1.0 - (sigma / singular_band) ** 2) * damping_max * damping_max
        for i in range(6):                                    # J J^T + lam2 I: symmetric, the products of
            for j in range(i + 1):                            # a[i, j] and a[j, i] are the same in the same order
                s = 0.0
                for k in range(n):
                    s += jac[i, k] * jac[j, k]
                a[i, j] = s
                a[j, i] = s
            a[i, i] += lam2
        for i in range(6):
            b[i] = err[i]                                     # solve_into overwrites its right-hand side
        solve_into(a, b, x)
        step = 0.0
        for k in range(n):
            s = 0.0
            for i in range(6):
                s += jac[i, k] * x[i]
            dq[k] = s
            step = max(step, abs(s))
        scale = max_step / step if step > max_step else 1.0
        for k in range(n):
            q[k] += scale * dq[k]
    result[0], result[1], result[2] = err_norm, sigma, it


# This module's kernels compile in those of the module named here: their cached code goes when it changes.
drop_stale_code(globals(), _kernels)
