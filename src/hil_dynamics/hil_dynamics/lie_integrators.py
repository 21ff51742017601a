"""Runge-Kutta-Munthe-Kaas integration on SE(3)^k x R^n.

States are a tuple of poses (each with a body twist, ``g_dot = g V^``) plus a flat real
vector. The poses are updated only through ``g exp6(u)``, so they stay on SE(3) to
machine precision whatever the step size.

:func:`rkmk4_step` is the classical 4-stage, 4th-order RKMK method (Munthe-Kaas 1998):
the Lie-algebra increments are integrated with the Butcher tableau of classical RK4,
with each stage's twist mapped through ``dexp_inv`` (:func:`hil_dynamics.se3.dexp_inv_right`).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pinocchio as pin

# derivative(t, poses, x) -> (twists (k, 6) array of body twists, x_dot (n,) array)
Derivative = Callable[[float, Sequence[pin.SE3], np.ndarray], tuple[np.ndarray, np.ndarray]]


def _dexp_inv_rows(u: np.ndarray, twists: np.ndarray) -> np.ndarray:
    out = np.empty_like(twists)
    for i in range(twists.shape[0]):
        mu = pin.Motion(u[i])
        mv = pin.Motion(twists[i])
        first = mu.cross(mv)
        out[i] = (mv + first * 0.5 + mu.cross(first) * (1.0 / 12.0)).vector
    return out


def _advance(poses: Sequence[pin.SE3], u: np.ndarray) -> list[pin.SE3]:
    return [g * pin.exp6(pin.Motion(u[i])) for i, g in enumerate(poses)]


def rkmk4_step(t: float, h: float, poses: Sequence[pin.SE3], x: np.ndarray,
               derivative: Derivative) -> tuple[list[pin.SE3], np.ndarray]:
    """One RKMK4 step of size ``h`` from ``(t, poses, x)``; returns the new poses and vector."""
    k1, a1 = derivative(t, poses, x)
    u1 = 0.5 * h * k1
    k2, a2 = derivative(t + 0.5 * h, _advance(poses, u1), x + 0.5 * h * a1)
    k2 = _dexp_inv_rows(u1, k2)
    u2 = 0.5 * h * k2
    k3, a3 = derivative(t + 0.5 * h, _advance(poses, u2), x + 0.5 * h * a2)
    k3 = _dexp_inv_rows(u2, k3)
    u3 = h * k3
    k4, a4 = derivative(t + h, _advance(poses, u3), x + h * a3)
    k4 = _dexp_inv_rows(u3, k4)
    u = (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return _advance(poses, u), x + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
