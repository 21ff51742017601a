"""Independent reference for seed 004 Eq. (2): plain numpy/scipy, no Pinocchio, no hil_dynamics.

State ``y = [p (3, orbit), q (4, w x y z, body->orbit), v (3, body), w (3, body)]``:

    p_dot = R(q) v
    q_dot = 1/2 q (x) [0, w]
    m (v_dot + w x v) = f
    I w_dot + w x I w = tau

integrated with scipy's DOP853 at tight tolerances, restarted at every discontinuity of
the wrench so that impulse trains are integrated exactly.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def quat_to_matrix(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quat(rot):
    # Shepperd's method, w >= 0.
    tr = np.trace(rot)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (rot[2, 1] - rot[1, 2]) / s, (rot[0, 2] - rot[2, 0]) / s, (rot[1, 0] - rot[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(rot)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + rot[i, i] - rot[j, j] - rot[k, k])
        q = np.empty(4)
        q[0] = (rot[k, j] - rot[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (rot[j, i] + rot[i, j]) / s
        q[1 + k] = (rot[k, i] + rot[i, k]) / s
    return q if q[0] >= 0 else -q


def _rhs(mass, inertia, inertia_inv, wrench_fn):
    def f(t, y):
        q = y[3:7]
        rot = quat_to_matrix(q)
        v, w = y[7:10], y[10:13]
        wrench = wrench_fn(t, rot, y[0:3])
        dq = 0.5 * np.array([
            -q[1] * w[0] - q[2] * w[1] - q[3] * w[2],
            q[0] * w[0] + q[2] * w[2] - q[3] * w[1],
            q[0] * w[1] - q[1] * w[2] + q[3] * w[0],
            q[0] * w[2] + q[1] * w[1] - q[2] * w[0],
        ])
        dv = wrench[:3] / mass - np.cross(w, v)
        dw = inertia_inv @ (wrench[3:] - np.cross(w, inertia @ w))
        return np.concatenate((rot @ v, dq, dv, dw))
    return f


def integrate(mass, inertia, rot0, p0, v0_body, w0_body, t_eval, wrench_fn=None, breaks=()):
    """Integrate Eq. (2) absolutely; return rotations (N,3,3), positions (N,3), v (N,3), w (N,3) at t_eval.

    ``wrench_fn(t, R, p) -> [f; tau]`` in body axes about the CoM (default zero); ``breaks``
    are times where it is discontinuous.
    """
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape == (3,):
        inertia = np.diag(inertia)
    wrench_fn = wrench_fn or (lambda t, rot, p: np.zeros(6))
    rhs = _rhs(float(mass), inertia, np.linalg.inv(inertia), wrench_fn)
    t_eval = np.asarray(t_eval, dtype=float)
    y = np.concatenate((p0, matrix_to_quat(np.asarray(rot0)), v0_body, w0_body))
    edges = sorted({float(t_eval[0]), float(t_eval[-1]), *[b for b in breaks if t_eval[0] < b < t_eval[-1]]})
    out = np.empty((len(t_eval), 13))
    for a, b in zip(edges[:-1], edges[1:]):
        sel = (t_eval >= a) & (t_eval <= b)
        points = np.union1d(t_eval[sel], [b])
        sol = solve_ivp(rhs, (a, b), y, method='DOP853', rtol=1e-12, atol=1e-13, t_eval=points)
        if not sol.success:
            raise RuntimeError(sol.message)
        values = sol.y.T
        out[sel] = values[np.searchsorted(points, t_eval[sel])]
        y = values[-1]
    rots = np.array([quat_to_matrix(q) for q in out[:, 3:7]])
    return rots, out[:, 0:3], out[:, 7:10], out[:, 10:13]
