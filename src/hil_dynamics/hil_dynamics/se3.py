"""SE(3) conventions of the stack, on top of Pinocchio's spatial algebra.

Everything in ``hil_*`` follows these conventions; they are stated once here and tested
in ``test/test_se3_conventions.py``.

Poses
    ``g = (R, p) in SE(3)`` as a ``pinocchio.SE3``, seed 004 Eq. (1). Names say which frame
    is expressed in which: ``pose_grasp_in_client`` maps grasp-frame coordinates to
    client-frame coordinates (``x_client = R x_grasp + p``).

Twists (seed 004 §II)
    ``V = [v; w]`` — **linear before angular**, the seed's order and Pinocchio's
    ``Motion.vector`` order. Twists are **body twists** unless the name says otherwise:
    ``g_dot = g V^`` with ``V^ = [[w×, v], [0, 0]]`` (seed 004 Eq. 1).
    Names: ``twist_client_body`` (body twist of the client), ``twist_client_rel_body``.

Wrenches
    ``F = [f; tau]`` — force before torque (Pinocchio ``Force.vector``), expressed in the
    frame the name gives and taken about that frame's origin: ``wrench_sensor_in_sensor``,
    ``wrench_client_com`` (client body frame at the CoM).

Adjoint (seed 004 footnote 1)
    ``Ad_g = [[R, p× R], [0, R]]``, acting on ``[v; w]``. This is exactly
    ``pinocchio.SE3.action`` (with linear-first ordering), so ``Ad_g V`` is
    ``g.act(Motion(V))`` and ``Ad_{g^-1} V`` is ``g.actInv(Motion(V))``.
    Wrenches transform with the dual (co-adjoint) map ``Ad_{g^-1}^T``, which is
    ``g.act(Force(F))``: a wrench known in frame b, with ``g = pose_b_in_a``, is
    ``pose_b_in_a.act(Force(F_b))`` in frame a.

Lie bracket
    ``ad_V W = [V, W]`` is ``Motion(V).cross(Motion(W))``; the co-adjoint
    ``ad_V^* F`` used by the Coriolis wrench is ``Motion(V).cross(Force(F))``
    (``= -ad_V^T F``).

Exponential
    ``exp6(V)`` maps a twist (linear first) to SE(3); ``g(t+h) = g(t) exp6(h V)`` for a
    constant body twist ``V``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_common.errors import InputError

__all__ = [
    'adjoint', 'adjoint_inverse_apply', 'adjoint_apply', 'bracket', 'coadjoint_cross', 'exp6', 'hat', 'log6',
    'pose', 'pose_from_quaternion', 'quaternion_xyzw', 'transform_wrench', 'wrench_transform_matrix', 'dexp_inv_right',
]


def pose(rotation=None, translation=None) -> pin.SE3:
    """Build a pose from a rotation matrix (default identity) and a translation (default 0)."""
    rotation = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    translation = np.zeros(3) if translation is None else np.asarray(translation, dtype=float)
    return pin.SE3(rotation, translation)


def pose_from_quaternion(xyzw, translation=None) -> pin.SE3:
    """Pose from a unit quaternion ``[x, y, z, w]`` (ROS order) and a translation."""
    x, y, z, w = (float(c) for c in xyzw)
    norm = np.sqrt(x * x + y * y + z * z + w * w)
    if not np.isfinite(norm) or norm < 1e-9:
        raise InputError(f'quaternion {list(xyzw)} is not a valid rotation')
    quat = pin.Quaternion(w / norm, x / norm, y / norm, z / norm)
    return pose(quat.toRotationMatrix(), translation)


def quaternion_xyzw(g: pin.SE3) -> np.ndarray:
    """Unit quaternion ``[x, y, z, w]`` (ROS order) of a pose's rotation, with w >= 0."""
    q = pin.Quaternion(g.rotation).coeffs()  # Eigen coeffs are (x, y, z, w)
    return -q if q[3] < 0 else q


def cross3(a, b) -> np.ndarray:
    """``a x b`` for 3-vectors, in scalars: ``numpy.cross`` costs ~10x more on such small arrays (its axis
    handling), and the result is the same to the bit (the same products and differences)."""
    return np.array(cross3_values(a, b))


def cross3_values(a, b) -> tuple:
    """:func:`cross3` as a tuple of its three scalars (for a caller on Python floats: no array)."""
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


def hat(twist) -> np.ndarray:
    """The 4x4 matrix ``V^`` of seed 004 Eq. (1) for ``V = [v; w]``."""
    twist = np.asarray(twist, dtype=float)
    out = np.zeros((4, 4))
    out[:3, :3] = pin.skew(twist[3:])
    out[:3, 3] = twist[:3]
    return out


def adjoint(g: pin.SE3) -> np.ndarray:
    """``Ad_g`` of seed 004 footnote 1 (6x6, linear first)."""
    return g.action


def adjoint_apply(g: pin.SE3, twist) -> np.ndarray:
    """``Ad_g V``."""
    return g.act(pin.Motion(np.asarray(twist, dtype=float))).vector


def adjoint_inverse_apply(g: pin.SE3, twist) -> np.ndarray:
    """``Ad_{g^-1} V``; e.g. ``Delta V_c = Ad_{g_c^-1} V_n`` (seed 004 Eq. 6)."""
    return g.actInv(pin.Motion(np.asarray(twist, dtype=float))).vector


def bracket(twist_a, twist_b) -> np.ndarray:
    """Lie bracket ``ad_A B = [A, B]`` of two twists."""
    return pin.Motion(np.asarray(twist_a, dtype=float)).cross(pin.Motion(np.asarray(twist_b, dtype=float))).vector


def coadjoint_cross(twist, wrench) -> np.ndarray:
    """``V x* F = -ad_V^T F``, the term of the Coriolis wrench ``V x* (M V)``."""
    return pin.Motion(np.asarray(twist, dtype=float)).cross(pin.Force(np.asarray(wrench, dtype=float))).vector


def transform_wrench(pose_src_in_dst: pin.SE3, wrench_in_src) -> np.ndarray:
    """Express a wrench given in frame ``src`` (about its origin) in frame ``dst``.

    ``F_dst = Ad_{g^-1}^T F_src`` with ``g = pose_src_in_dst``. Used for a constant
    sensor-to-CoM transform (seed 004 §III-A: "transformed to the CoM frame using a
    constant transformation").
    """
    return pose_src_in_dst.act(pin.Force(np.asarray(wrench_in_src, dtype=float))).vector


def wrench_transform_matrix(pose_src_in_dst: pin.SE3) -> np.ndarray:
    """The 6x6 matrix ``Ad_{g^-1}^T`` of :func:`transform_wrench` (``F_dst = X F_src``), for a constant
    transform applied at every sample (a matrix product instead of a ``pin.Force``)."""
    return np.ascontiguousarray(pose_src_in_dst.toDualActionMatrix())


def exp6(twist) -> pin.SE3:
    """Exponential map of a twist ``[v; w]`` to SE(3)."""
    return pin.exp6(pin.Motion(np.asarray(twist, dtype=float)))


def log6(g: pin.SE3) -> np.ndarray:
    """Logarithm of a pose, as a twist ``[v; w]`` with ``exp6(log6(g)) == g``."""
    return pin.log6(g).vector


def dexp_inv_right(u, twist) -> np.ndarray:
    """Right-trivialised inverse differential of exp, to second order in ``u``.

    If ``g(t) = g0 exp6(u(t))`` has body twist ``V`` then ``u_dot = J_r(u)^-1 V`` and
    ``J_r(u)^-1 V = V + 1/2 [u, V] + 1/12 [u, [u, V]] + O(|u|^4)``. The truncation is
    what a 4th-order Runge-Kutta-Munthe-Kaas step needs (``u = O(h)``).
    """
    from hil_dynamics.lie_integrators import dexp_inv

    return dexp_inv(pin.Motion(np.asarray(u, dtype=float)), pin.Motion(np.asarray(twist, dtype=float))).vector
