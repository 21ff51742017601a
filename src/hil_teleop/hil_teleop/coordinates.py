"""Six-dimensional position vectors ``x = [r; phi]`` and the map ``B(phi)`` of seed 001.

Seed 001 writes positions as ``x_i = [r_i; phi_i]`` (position and a set of three
orientation variables) and velocities as ``v_i = [r_dot_i; omega_i]``, related by
``v_i = B(phi_i) x_dot_i`` (text above Eq. 1).

Conventions fixed here (the seed leaves them open):

* ``phi = [roll, pitch, yaw]`` [rad] with ``R = Rz(yaw) Ry(pitch) Rx(roll)`` — the order of
  :func:`hil_common.conversions.xyz_rpy_to_pose` and ``pinocchio.rpy``.
* ``omega`` is the angular velocity expressed in the **world (base) frame**, as a manipulator's
  geometric Jacobian gives it (seed 001 Appendix A, ``v = J q_dot``). ``r_dot`` is the
  velocity of the end-effector (or payload) origin in the world frame. So ``v`` is a
  "world-aligned" velocity, not the body twist of :mod:`hil_dynamics.se3`;
  :func:`body_twist` converts.
* ``B(phi) = diag(E_3, E_w(phi))`` where ``E_w`` is the Euler-rate Jacobian
  ``omega_world = E_w(phi) phi_dot`` (``pinocchio.rpy.computeRpyJacobian(phi, WORLD)``). It
  is singular at ``pitch = +-90 deg``; :func:`b_inverse` raises there.

The difference of two positions (the coupling term of Eq. 2 and the spring of Eq. 7) takes
the Euler-angle difference wrapped to ``(-pi, pi]``, as the seed's ``x_vir - x_s`` does.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from hil_common.errors import Unreachable

_WORLD = pin.ReferenceFrame.WORLD
# Closest |cos(pitch)| accepted by B^-1 (about 89.94 deg).
GIMBAL_LOCK_COS = 1e-3


def euler_rate_jacobian(phi) -> np.ndarray:
    """``E_w(phi)`` (3x3): ``omega_world = E_w(phi) phi_dot`` for ZYX roll-pitch-yaw angles."""
    return pin.rpy.computeRpyJacobian(np.asarray(phi, dtype=float), _WORLD)


_EYE6 = np.eye(6)


def b_matrix(phi) -> np.ndarray:
    """``B(phi)`` (6x6) of seed 001: ``v = B(phi) x_dot`` (linear block identity)."""
    out = _EYE6.copy()
    out[3:, 3:] = euler_rate_jacobian(phi)
    return out


def b_inverse(phi) -> np.ndarray:
    """``B(phi)^-1`` (6x6): ``x_dot = B^-1 v`` (Eqs. 6 and 10). Raises ValueError near gimbal lock."""
    phi = np.asarray(phi, dtype=float)
    if abs(math.cos(phi[1])) < GIMBAL_LOCK_COS:
        raise Unreachable(f'B(phi) is singular at pitch = {math.degrees(phi[1]):.3f} deg (gimbal lock)')
    out = _EYE6.copy()
    out[3:, 3:] = pin.rpy.computeRpyJacobianInverse(phi, _WORLD)
    return out


def wrap_angles(angles) -> np.ndarray:
    """Angles wrapped to ``(-pi, pi]``."""
    a = np.asarray(angles, dtype=float)
    return np.pi - np.mod(np.pi - a, 2.0 * np.pi)


def position_difference(x_a, x_b) -> np.ndarray:
    """``x_a - x_b`` with the Euler-angle part wrapped to ``(-pi, pi]`` (6,)."""
    d = np.asarray(x_a, dtype=float) - np.asarray(x_b, dtype=float)
    d[3:] = wrap_angles(d[3:])
    return d


def integrate_position(x, v, dt: float) -> np.ndarray:
    """One explicit step ``x + B^-1(phi) v dt`` (seed 001 Eqs. 6 and 10), angles wrapped."""
    x = np.asarray(x, dtype=float)
    out = x + b_inverse(x[3:]) @ np.asarray(v, dtype=float) * dt
    out[3:] = wrap_angles(out[3:])
    return out


def pose_from_x(x) -> pin.SE3:
    """``[r; phi]`` -> SE3 (``R = Rz Ry Rx``)."""
    x = np.asarray(x, dtype=float)
    return pin.SE3(pin.rpy.rpyToMatrix(x[3:6]), x[:3].copy())


def advance_pose_world(g: pin.SE3, v_world, dt: float) -> pin.SE3:
    """Pose after ``dt`` at constant velocity ``v_world = [v; w]`` given in the base frame
    (world-aligned, as a manipulator Jacobian gives it): ``R <- exp3(w dt) R``, ``p <- p + v dt``."""
    v_world = np.asarray(v_world, dtype=float)
    return pin.SE3(pin.exp3(v_world[3:] * dt) @ g.rotation, g.translation + v_world[:3] * dt)


def x_from_pose(g: pin.SE3) -> np.ndarray:
    """SE3 -> ``[r; phi]`` (pitch in ``[-pi/2, pi/2]``)."""
    return np.concatenate((g.translation, pin.rpy.matrixToRpy(g.rotation)))


def body_twist(g: pin.SE3, v_world) -> np.ndarray:
    """World-aligned ``[r_dot; omega_world]`` at the frame origin -> body twist ``[R^T r_dot; R^T omega]``."""
    v_world = np.asarray(v_world, dtype=float)
    rt = g.rotation.T
    return np.concatenate((rt @ v_world[:3], rt @ v_world[3:]))


def world_velocity(g: pin.SE3, twist_body) -> np.ndarray:
    """Body twist -> world-aligned ``[r_dot; omega_world]`` at the frame origin."""
    twist_body = np.asarray(twist_body, dtype=float)
    r = g.rotation
    return np.concatenate((r @ twist_body[:3], r @ twist_body[3:]))
