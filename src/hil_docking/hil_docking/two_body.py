"""Absolute reference for the CW relative motion: two point masses in the Earth's point-mass gravity.

The target flies the circular orbit of radius ``r0`` in the inertial ``XY`` plane (closed
form, ``r_t(t) = r0 [cos nt, sin nt, 0]``). The chaser is integrated in the inertial frame
with the full nonlinear gravity ``-mu r / |r|^3`` plus the applied force; to keep rounding
out of a metre-scale separation on a 6700 km orbit, the integrated state is the inertial
separation ``rho = r_c - r_t`` and its inertial rate, with the gravity difference
``g(r_t + rho) - g(r_t)`` (no linearisation anywhere). The result is mapped into the
target's LVLH frame (x radial, y along-track, z normal, turning at ``omega = n z``) by the
transport theorem: ``dr = R^T rho``, ``dv = R^T (rho' - omega x rho)``.

Used by the tests and docs/docking.md to measure the CW linearisation error of
:mod:`hil_docking.cw`. Plain Python (numpy, scipy).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from hil_docking.cw import MU_EARTH_M3_S2, R_EARTH_M

from hil_common.errors import SimulationFailed

class TwoBodyRelative:
    """Nonlinear relative motion of a chaser about a target on a circular orbit at ``altitude_m``."""

    def __init__(self, altitude_m: float, chaser_mass_kg: float = 1.0, mu_m3_s2: float = MU_EARTH_M3_S2,
                 radius_m: float = R_EARTH_M):
        self.mu = float(mu_m3_s2)
        self.r0 = float(radius_m) + float(altitude_m)
        self.n = float(np.sqrt(self.mu / self.r0 ** 3))
        self.chaser_mass_kg = float(chaser_mass_kg)

    def lvlh_rotation(self, t: float) -> np.ndarray:
        """Columns: the LVLH axes (radial, along-track, normal) in inertial coordinates."""
        c, s = np.cos(self.n * t), np.sin(self.n * t)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def target_position(self, t: float) -> np.ndarray:
        return self.r0 * np.array([np.cos(self.n * t), np.sin(self.n * t), 0.0])

    def _gravity_difference(self, r_t: np.ndarray, rho: np.ndarray) -> np.ndarray:
        # g(r_t + rho) - g(r_t) = -mu [ (r_t + rho)/|r_t + rho|^3 - r_t/|r_t|^3 ], written so that
        # the O(|g|) terms cancel analytically: with q = |r_t|^3/|r_t + rho|^3,
        # = -mu/|r_t|^3 [ q rho + (q - 1) r_t ].
        r = r_t + rho
        rt2 = float(r_t @ r_t)
        # |r|^2/|r_t|^2 - 1 without cancellation:
        u = (2.0 * float(r_t @ rho) + float(rho @ rho)) / rt2
        q = (1.0 + u) ** -1.5
        q_minus_1 = np.expm1(-1.5 * np.log1p(u))
        return -self.mu / rt2 ** 1.5 * (q * rho + q_minus_1 * r_t)

    def simulate(self, state0_lvlh, t_final: float, force_segments=(), t_eval=None,
                 rtol: float = 1e-12, atol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
        """``(t, states_lvlh)`` with ``states_lvlh[k] = [dr; dv]`` at ``t[k]`` (DOP853).

        ``force_segments``: ``[(t_start, t_end, force_lvlh), ...]``, a force [N] on the chaser
        held constant in LVLH axes over each interval (a sampled force, as the facility
        applies it). The integration restarts at every segment edge, so the discontinuities
        cost no accuracy.
        """
        s0 = np.asarray(state0_lvlh, dtype=float).reshape(6)
        t_final = float(t_final)
        omega = np.array([0.0, 0.0, self.n])
        rot0 = self.lvlh_rotation(0.0)
        y = np.concatenate([rot0 @ s0[0:3], rot0 @ (s0[3:6] + np.cross(omega, s0[0:3]))])
        m = self.chaser_mass_kg
        segments = sorted((float(a), float(b), np.asarray(f, dtype=float).reshape(3)) for a, b, f in force_segments)
        edges = sorted({0.0, t_final, *(e for a, b, _ in segments for e in (a, b) if 0.0 < e < t_final)})
        t_eval = np.array([t_final] if t_eval is None else t_eval, dtype=float)

        def force_at(t_mid):
            for a, b, f in segments:
                if a <= t_mid < b:
                    return f / m
            return None

        ts, ys = [], []
        for t_a, t_b in zip(edges[:-1], edges[1:]):
            accel = force_at(0.5 * (t_a + t_b))

            def rhs(t, y, accel=accel):
                acc = self._gravity_difference(self.target_position(t), y[0:3])
                if accel is not None:
                    acc = acc + self.lvlh_rotation(t) @ accel
                return np.concatenate([y[3:6], acc])

            last = t_b == edges[-1]
            inside = t_eval[(t_eval >= t_a) & ((t_eval <= t_b) if last else (t_eval < t_b))]
            sol = solve_ivp(rhs, (t_a, t_b), y, method='DOP853', rtol=rtol, atol=atol, dense_output=inside.size > 0)
            if not sol.success:
                raise SimulationFailed(f'two-body integration failed: {sol.message}')
            if inside.size:
                ts.append(inside)
                ys.append(sol.sol(inside).T)
            y = sol.y[:, -1]
        t_out = np.concatenate(ts) if ts else np.zeros(0)
        y_out = np.concatenate(ys) if ys else np.zeros((0, 6))
        out = np.empty((t_out.size, 6))
        for k, t in enumerate(t_out):
            rot = self.lvlh_rotation(t)
            dr = rot.T @ y_out[k, 0:3]
            out[k, 0:3] = dr
            out[k, 3:6] = rot.T @ y_out[k, 3:6] - np.cross(omega, dr)
        return t_out, out
