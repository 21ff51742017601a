"""Flexible-joint torque laws of the two-inertia model (plain Python, no rclpy).

* :class:`SsrmsGearbox`: the SSRMS gearbox of seed 000 Eqs. (1)-(2): a quadratic soft zone
  ``|delta| <= Delta`` and the linear band ``K_g (|delta| - Delta) + tau_Delta`` beyond it.
* :class:`BandedJoint`: the JEMRMS joints of seed 002 Table 2: a stiffness and a viscosity per
  band of ``|q - q_m|``. The torque is the continuous piecewise-linear curve whose slope in each
  band is that band's stiffness (the table gives tangent stiffnesses of a hardening joint; a
  per-band secant would make the torque jump at the band edges).

Both return the torque the gearbox applies to the *link* for a twist ``delta = q_m - q_a``
(motor minus link, seed 000 §3.1), vectorised over the joints, and the stored energy
(``∫ tau d delta``) for the energy tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from hil_common.errors import ConfigError

DEG = math.pi / 180.0


@njit(cache=True, nogil=True)
def _gearbox_torque(delta, k_g, delta_edge, tau_edge):
    """Eqs. (1)-(2) elementwise (compiled: this runs four times per integration step)."""
    out = np.empty_like(delta)
    c = tau_edge / (delta_edge * delta_edge)
    for i in range(delta.shape[0]):
        a = abs(delta[i])
        g = c * a * a if a <= delta_edge else k_g * (a - delta_edge) + tau_edge
        out[i] = g if delta[i] >= 0.0 else -g
    return out


@dataclass(frozen=True)
class SsrmsGearbox:
    """Seed 000 Eqs. (1)-(2): ``tau_g = sign(delta) g(|delta|)``."""

    k_g_nm_per_rad: float = 1.33e6
    delta_rad: float = 9.17e-4
    tau_delta_nm: float = 434.5
    damping_nms_per_rad: float = 0.0   # twist viscosity (seed 000 has none: D acts on the motor)

    def __post_init__(self):
        for name in ('k_g_nm_per_rad', 'delta_rad', 'tau_delta_nm'):
            v = getattr(self, name)
            if not math.isfinite(v) or v <= 0.0:
                raise ConfigError(f'{name} must be finite and > 0, got {v!r}')
        if not math.isfinite(self.damping_nms_per_rad) or self.damping_nms_per_rad < 0.0:
            raise ConfigError(f'damping_nms_per_rad must be >= 0, got {self.damping_nms_per_rad!r}')

    def torque(self, delta, delta_dot=None) -> np.ndarray:
        d = np.ascontiguousarray(delta, dtype=float).reshape(-1)
        tau = _gearbox_torque(d, self.k_g_nm_per_rad, self.delta_rad, self.tau_delta_nm)
        if np.ndim(delta) == 0:
            tau = tau[0]
        if delta_dot is not None and self.damping_nms_per_rad:
            tau = tau + self.damping_nms_per_rad * np.asarray(delta_dot, dtype=float)
        return tau

    def energy(self, delta) -> float:
        a = np.abs(np.asarray(delta, dtype=float))
        soft = self.tau_delta_nm / (3.0 * self.delta_rad ** 2) * a ** 3
        e_edge = self.tau_delta_nm * self.delta_rad / 3.0
        x = a - self.delta_rad
        lin = e_edge + self.tau_delta_nm * x + 0.5 * self.k_g_nm_per_rad * x * x
        return float(np.sum(np.where(a <= self.delta_rad, soft, lin)))

    def linear_band_stiffness(self) -> float:
        return self.k_g_nm_per_rad


class BandedJoint:
    """Seed 002 Table 2: stiffness ``K_n`` and viscosity ``D_n`` per band of ``|Delta q|``.

    Parameters
    ----------
    band_edges_rad:
        the lower edges of the bands after the first (Table 2: 0.04 deg, 0.06 deg), strictly
        increasing and > 0.
    stiffness_nm_per_rad, viscosity_nms_per_rad:
        one value per band (``len(band_edges_rad) + 1``), >= 0 (stiffness > 0).
    """

    def __init__(self, band_edges_rad, stiffness_nm_per_rad, viscosity_nms_per_rad):
        edges = np.asarray(band_edges_rad, dtype=float).reshape(-1)
        k = np.asarray(stiffness_nm_per_rad, dtype=float).reshape(-1)
        d = np.asarray(viscosity_nms_per_rad, dtype=float).reshape(-1)
        if not np.all(np.isfinite(edges)) or np.any(edges <= 0.0):
            raise ConfigError(f'band_edges_rad must be finite and > 0, got {edges.tolist()}')
        if np.any(np.diff(edges) <= 0.0):
            raise ConfigError(f'band_edges_rad must be strictly increasing, got {edges.tolist()}')
        if k.size != edges.size + 1 or d.size != edges.size + 1:
            raise ConfigError(f'stiffness and viscosity need {edges.size + 1} values (one per band), '
                             f'got {k.size} and {d.size}')
        if not np.all(np.isfinite(k)) or np.any(k <= 0.0):
            raise ConfigError(f'stiffness_nm_per_rad must be > 0 in every band, got {k.tolist()}')
        if not np.all(np.isfinite(d)) or np.any(d < 0.0):
            raise ConfigError(f'viscosity_nms_per_rad must be >= 0 in every band, got {d.tolist()}')
        self.edges = edges
        self.k = k
        self.d = d
        lo = np.concatenate([[0.0], edges])
        # torque and energy at each band's lower edge (continuous piecewise-linear torque)
        self._tau0 = np.concatenate([[0.0], np.cumsum(k[:-1] * np.diff(lo))])
        e = [0.0]
        for i in range(edges.size):
            w = lo[i + 1] - lo[i]
            e.append(e[-1] + self._tau0[i] * w + 0.5 * k[i] * w * w)
        self._e0 = np.asarray(e)
        self._lo = lo

    @classmethod
    def jemrms_table2(cls) -> 'BandedJoint':
        """Seed 002 Table 2 (N m/deg, N m s/deg) converted to SI."""
        return cls([0.04 * DEG, 0.06 * DEG], [12.5 / DEG, 475.0 / DEG, 475.0 / DEG],
                   [48.9 / DEG, 87.3 / DEG, 17.6 / DEG])

    def _band(self, a):
        return np.searchsorted(self.edges, a, side='right')

    def torque(self, delta, delta_dot=None) -> np.ndarray:
        d = np.asarray(delta, dtype=float)
        a = np.abs(d)
        b = self._band(a)
        tau = np.sign(d) * (self._tau0[b] + self.k[b] * (a - self._lo[b]))
        if delta_dot is not None:
            tau = tau + self.d[b] * np.asarray(delta_dot, dtype=float)
        return tau

    def energy(self, delta) -> float:
        a = np.abs(np.asarray(delta, dtype=float))
        b = self._band(a)
        x = a - self._lo[b]
        return float(np.sum(self._e0[b] + self._tau0[b] * x + 0.5 * self.k[b] * x * x))

    def linear_band_stiffness(self) -> float:
        return float(self.k[-1])
