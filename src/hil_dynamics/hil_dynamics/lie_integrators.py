"""Runge-Kutta-Munthe-Kaas integration on SE(3)^k x (vector spaces).

States are a sequence of poses (each with a body twist, ``g_dot = g V^``) plus a sequence
of vector-space elements (``pinocchio.Motion`` twists or numpy arrays; anything with
``+`` and scalar ``*``). Poses are updated only through ``g exp6(u)``, so they stay on
SE(3) to machine precision whatever the step size.

:func:`rkmk4` is the classical 4-stage, 4th-order RKMK method (Munthe-Kaas 1998): the
Lie-algebra increments follow the Butcher tableau of classical RK4, with each stage's
twist mapped through the right-trivialised ``dexp^-1`` truncated after the
``1/12 [u, [u, V]]`` term, which 4th order requires (see
:func:`hil_dynamics.se3.dexp_inv_right`).

It works on ``pinocchio.Motion`` objects directly because, in Python, their arithmetic is
several times cheaper than converting to and from numpy arrays (this is the 1 kHz hot
path of the admittance nodes). :func:`rkmk4_step` is the same method with a plain-array
interface.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pinocchio as pin

_EXP6 = pin.exp6


def dexp_inv(u: pin.Motion, twist: pin.Motion) -> pin.Motion:
    """``J_r(u)^-1 V`` to second order (see :func:`hil_dynamics.se3.dexp_inv_right`), on Motions."""
    first = u.cross(twist)
    return twist + first * 0.5 + u.cross(first) * (1.0 / 12.0)


# derivative(t, poses, vecs) -> (body twists of the poses [pin.Motion], rates of vecs)
MotionDerivative = Callable[[float, Sequence[pin.SE3], Sequence[Any]], tuple[Sequence[pin.Motion], Sequence[Any]]]


def rkmk4(t: float, h: float, poses: Sequence[pin.SE3], vecs: Sequence[Any],
          derivative: MotionDerivative) -> tuple[list[pin.SE3], list[Any]]:
    """One RKMK4 step of size ``h``; returns the new poses and vector-space elements."""
    h2 = 0.5 * h
    k1, a1 = derivative(t, poses, vecs)
    u1 = [k * h2 for k in k1]
    k2, a2 = derivative(t + h2, [g * _EXP6(u) for g, u in zip(poses, u1)], [x + a * h2 for x, a in zip(vecs, a1)])
    k2 = [dexp_inv(u, k) for u, k in zip(u1, k2)]
    u2 = [k * h2 for k in k2]
    k3, a3 = derivative(t + h2, [g * _EXP6(u) for g, u in zip(poses, u2)], [x + a * h2 for x, a in zip(vecs, a2)])
    k3 = [dexp_inv(u, k) for u, k in zip(u2, k3)]
    u3 = [k * h for k in k3]
    k4, a4 = derivative(t + h, [g * _EXP6(u) for g, u in zip(poses, u3)], [x + a * h for x, a in zip(vecs, a3)])
    k4 = [dexp_inv(u, k) for u, k in zip(u3, k4)]
    h6 = h / 6.0
    new_poses = [g * _EXP6((b1 + (b2 + b3) * 2.0 + b4) * h6) for g, b1, b2, b3, b4 in zip(poses, k1, k2, k3, k4)]
    new_vecs = [x + (c1 + (c2 + c3) * 2.0 + c4) * h6 for x, c1, c2, c3, c4 in zip(vecs, a1, a2, a3, a4)]
    return new_poses, new_vecs


# derivative(t, poses, x) -> (twists (k, 6) array of body twists, x_dot (n,) array)
Derivative = Callable[[float, Sequence[pin.SE3], np.ndarray], tuple[np.ndarray, np.ndarray]]


def rkmk4_step(t: float, h: float, poses: Sequence[pin.SE3], x: np.ndarray,
               derivative: Derivative) -> tuple[list[pin.SE3], np.ndarray]:
    """:func:`rkmk4` with arrays: twists as a (k, 6) array, the vector state as one array."""

    def wrapped(tt, gg, xx):
        twists, x_dot = derivative(tt, gg, xx[0])
        return [pin.Motion(np.asarray(v, dtype=float)) for v in twists], [np.asarray(x_dot, dtype=float)]

    new_poses, (new_x,) = rkmk4(t, h, poses, [np.asarray(x, dtype=float)], wrapped)
    return new_poses, new_x


class FusedRKMK4:
    """:func:`rkmk4` on arrays, with its work arrays allocated once and the stage transitions
    (``dexp^-1``, ``g exp6(u)``, ``x + c a``) fused into compiled kernels
    (:func:`hil_dynamics.kernels.rk_stage`, :func:`hil_dynamics.kernels.rk_final`).

    ``k`` poses as a (k, 12) array ``[R row-major; p]`` and an n-vector ``x``. The derivative is
    ``derivative(t, poses, x, twists_out, rates_out)``, writing the (k, 6) body twists of the
    poses and the (n,) rates of ``x`` into the given arrays. ``test_fast_paths`` checks it
    against :func:`rkmk4` to 1e-12.
    """

    def __init__(self, k: int, n: int):
        from hil_dynamics import kernels

        self._stage, self._final = kernels.rk_stage, kernels.rk_final
        self.poses_stage, self.x_stage = np.empty((k, 12)), np.empty(n)
        self.poses_out, self.x_out = np.empty((k, 12)), np.empty(n)
        self._u = [np.empty((k, 6)) for _ in range(3)]
        self._k = [np.empty((k, 6)) for _ in range(4)]
        self._kc = [np.empty((k, 6)) for _ in range(3)]
        self._a = [np.empty(n) for _ in range(4)]

    def step(self, t: float, h: float, poses: np.ndarray, x: np.ndarray, derivative) -> tuple[np.ndarray, np.ndarray]:
        """One step; returns ``(poses, x)`` at ``t + h`` as this object's work arrays (copy to keep)."""
        h2 = 0.5 * h
        (u1, u2, u3), (k1, k2, k3, k4), (c1, c2, c3), (a1, a2, a3, a4) = self._u, self._k, self._kc, self._a
        gs, xs, stage = self.poses_stage, self.x_stage, self._stage
        derivative(t, poses, x, k1, a1)
        stage(poses, x, k1, a1, u1, h2, False, gs, xs, u1, c1)
        derivative(t + h2, gs, xs, k2, a2)
        stage(poses, x, k2, a2, u1, h2, True, gs, xs, u2, c2)
        derivative(t + h2, gs, xs, k3, a3)
        stage(poses, x, k3, a3, u2, h, True, gs, xs, u3, c3)
        derivative(t + h, gs, xs, k4, a4)
        self._final(poses, x, c1, c2, c3, k4, u3, a1, a2, a3, a4, h, self.poses_out, self.x_out)
        return self.poses_out, self.x_out
