"""Rigid body in body coordinates at its CoM: seed 004 Eq. (2).

``M_t V_dot + C_t(V) V = F`` with ``V = [v; w]`` the body twist at the CoM (linear first,
see :mod:`hil_dynamics.se3`) and ``F = [f; tau]`` the body wrench about the CoM.

* ``M_t = diag(m I_3, I_com)`` (Pinocchio ``Inertia`` with zero lever).
* ``C_t(V) V = V x* (M_t V) = [w x m v; w x I w]`` (Pinocchio ``Inertia.vxiv``).
* The Coriolis matrix is taken in the skew-symmetric factorisation
  ``C_t(V) = [[m w×, 0], [0, -(I w)×]]``, so ``V^T (M_dot - 2 C) V = 0`` (the passivity
  property used in seed 004 §IV-A, with ``M_dot = 0`` in body coordinates).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError


class RigidBody:
    """Mass properties and the body-frame dynamics of seed 004 Eq. (2).

    Parameters
    ----------
    mass_kg:
        Mass [kg], > 0.
    inertia_com_kgm2:
        Inertia tensor about the CoM in body axes [kg m^2]: a 3x3 symmetric positive
        definite matrix, or its 3 principal values.
    """

    def __init__(self, mass_kg: float, inertia_com_kgm2):
        mass_kg = float(mass_kg)
        if not np.isfinite(mass_kg) or mass_kg <= 0.0:
            raise ConfigError(f'mass_kg must be finite and > 0, got {mass_kg!r}')
        inertia = np.asarray(inertia_com_kgm2, dtype=float)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise ConfigError(f'inertia_com_kgm2 must be 3 principal values or a finite 3x3 matrix, got {inertia.tolist()}')
        if not np.allclose(inertia, inertia.T, rtol=1e-12, atol=1e-12 * np.abs(inertia).max()):
            raise ConfigError('inertia_com_kgm2 must be symmetric')
        eig = np.linalg.eigvalsh(inertia)
        if eig[0] <= 0.0:
            raise ConfigError(f'inertia_com_kgm2 must be positive definite (eigenvalues {eig.tolist()})')
        # Triangle inequality of principal moments: any physical body satisfies it.
        if eig[0] + eig[1] < eig[2] * (1.0 - 1e-9):
            raise ConfigError(f'inertia_com_kgm2 violates the triangle inequality of principal moments {eig.tolist()}')
        self.mass_kg = mass_kg
        self.inertia_com_kgm2 = inertia
        self.inertia = pin.Inertia(mass_kg, np.zeros(3), inertia)
        self.mass_matrix = self.inertia.matrix()
        self.mass_matrix_inv = np.linalg.inv(self.mass_matrix)

    def coriolis_wrench(self, twist_body) -> np.ndarray:
        """``C_t(V) V = V x* (M_t V)`` (6,)."""
        return self.inertia.vxiv(pin.Motion(twist_body)).vector

    def coriolis_matrix(self, twist_body) -> np.ndarray:
        """Skew-symmetric ``C_t(V)`` (6x6) with ``C_t(V) V = V x* (M_t V)``."""
        twist_body = np.asarray(twist_body, dtype=float)
        out = np.zeros((6, 6))
        out[:3, :3] = self.mass_kg * pin.skew(twist_body[3:])
        out[3:, 3:] = -pin.skew(self.inertia_com_kgm2 @ twist_body[3:])
        return out

    def acceleration(self, twist_body, wrench_com) -> np.ndarray:
        """``V_dot = M_t^-1 (F - C_t(V) V)`` (Eq. 2 solved for the acceleration)."""
        return self.mass_matrix_inv @ (np.asarray(wrench_com, dtype=float) - self.coriolis_wrench(twist_body))

    def kinetic_energy(self, twist_body) -> float:
        """``1/2 V^T M_t V`` [J]."""
        twist_body = np.asarray(twist_body, dtype=float)
        return 0.5 * float(twist_body @ self.mass_matrix @ twist_body)

    def momentum_in_parent(self, pose_body_in_parent: pin.SE3, twist_body) -> np.ndarray:
        """Spatial momentum ``[p; L]`` expressed in the parent (orbit) frame about its origin."""
        return pose_body_in_parent.act(pin.Force(self.mass_matrix @ np.asarray(twist_body, dtype=float))).vector
