"""Clohessy-Wiltshire relative motion (seed 003 §III, Eqs. 11-12).

Frame: the target's LVLH frame of seed 003 (Curtis, *Orbital Mechanics for Engineering
Students*, §7.4-7.5, seed 003 ref. [5]): ``x`` radial outward, ``y`` along-track (the
target's velocity for a circular orbit), ``z`` along the orbit normal ``h``. The frame
turns with the target at ``omega = n z`` (``n = sqrt(mu / r0^3)``, the mean motion).

Seed 003 Eq. (11), with forcing ``a = F / m_c`` (force on the chaser of mass ``m_c``)::

    dx'' - 3 n^2 dx - 2 n dy' = a_x
    dy'' + 2 n dx'            = a_y
    dz'' +   n^2 dz           = a_z

Eq. (12): ``[dr(t); dv(t)] = Psi(t) [dr0; dv0]`` with the closed-form blocks of Curtis
Eq. (7.53) (:meth:`CWModel.transition`). A force held constant over a step (a sampled
sensor) enters through the exact zero-order-hold input matrix ``Gamma(t)``
(:meth:`CWModel.forced_step`), so the discrete relative admittance
(:class:`CWRelativeAdmittance`) is exact for piecewise-constant forces.

Constants: ``mu`` and the Earth radius (WGS-84 / EGM96 values) are not in the seed, which
only says "300 km circular LEO"; we take the altitude above the equatorial radius.
Plain Python (numpy, scipy), no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import expm

from hil_common.errors import ConfigError, InputError, Unreachable

MU_EARTH_M3_S2 = 3.986004418e14      # EGM96 / WGS-84 gravitational parameter
R_EARTH_M = 6378137.0                # WGS-84 equatorial radius

# Seed 003 §III reference manoeuvre.
SEED_ALTITUDE_M = 300e3
SEED_DELTA_X_M = (0.3, -0.8, 0.3)
SEED_DURATION_S = 6.0


def mean_motion(altitude_m: float, mu_m3_s2: float = MU_EARTH_M3_S2, radius_m: float = R_EARTH_M) -> float:
    """``n = sqrt(mu / r0^3)`` [rad/s] of a circular orbit at ``altitude_m`` above ``radius_m``."""
    r0 = float(radius_m) + float(altitude_m)
    if not (np.isfinite(r0) and r0 > 0.0 and mu_m3_s2 > 0.0):
        raise ConfigError(f'orbit radius must be > 0 and mu > 0, got r0={r0!r}, mu={mu_m3_s2!r}')
    return float(np.sqrt(mu_m3_s2 / r0 ** 3))


class CWModel:
    """Eq. (11) of seed 003 for a target on a circular orbit of mean motion ``n`` [rad/s]."""

    def __init__(self, mean_motion_rad_s: float):
        n = float(mean_motion_rad_s)
        if not (np.isfinite(n) and n > 0.0):
            raise ConfigError(f'mean_motion_rad_s must be finite and > 0, got {mean_motion_rad_s!r}')
        self.n = n
        # State-space form x' = A x + B a, x = [dr; dv].
        self.A = np.zeros((6, 6))
        self.A[0:3, 3:6] = np.eye(3)
        self.A[3, 0], self.A[3, 4] = 3.0 * n * n, 2.0 * n
        self.A[4, 3] = -2.0 * n
        self.A[5, 2] = -n * n
        self.B = np.vstack([np.zeros((3, 3)), np.eye(3)])
        self._zoh_cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def at_altitude(cls, altitude_m: float = SEED_ALTITUDE_M) -> 'CWModel':
        return cls(mean_motion(altitude_m))

    @property
    def period_s(self) -> float:
        return 2.0 * np.pi / self.n

    def derivative(self, state, accel_lvlh=None) -> np.ndarray:
        """Right-hand side of Eq. (11): ``[dv; dv']`` for ``state = [dr; dv]`` and ``F/m_c``."""
        s = np.asarray(state, dtype=float)
        out = self.A @ s
        if accel_lvlh is not None:
            out[3:6] += np.asarray(accel_lvlh, dtype=float)
        return out

    def transition(self, t: float) -> np.ndarray:
        """``Psi(t)`` of Eq. (12), 6x6, closed form (Curtis Eq. 7.53)."""
        n, t = self.n, float(t)
        s, c = np.sin(n * t), np.cos(n * t)
        psi = np.zeros((6, 6))
        # Psi_rr
        psi[0, 0] = 4.0 - 3.0 * c
        psi[1, 0], psi[1, 1] = 6.0 * (s - n * t), 1.0
        psi[2, 2] = c
        # Psi_rv
        psi[0, 3], psi[0, 4] = s / n, 2.0 * (1.0 - c) / n
        psi[1, 3], psi[1, 4] = 2.0 * (c - 1.0) / n, (4.0 * s - 3.0 * n * t) / n
        psi[2, 5] = s / n
        # Psi_vr
        psi[3, 0] = 3.0 * n * s
        psi[4, 0] = 6.0 * n * (c - 1.0)
        psi[5, 2] = -n * s
        # Psi_vv
        psi[3, 3], psi[3, 4] = c, 2.0 * s
        psi[4, 3], psi[4, 4] = -2.0 * s, 4.0 * c - 3.0
        psi[5, 5] = c
        return psi

    def propagate(self, state0, t: float) -> np.ndarray:
        """Unforced state at ``t`` from ``state0`` by Eq. (12)."""
        return self.transition(t) @ np.asarray(state0, dtype=float)

    def zoh(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """``(Psi(dt), Gamma(dt))``: exact discretisation for an acceleration held over ``dt``."""
        dt = float(dt)
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        cached = self._zoh_cache.get(dt)
        if cached is None:
            aug = np.zeros((9, 9))
            aug[0:6, 0:6], aug[0:6, 6:9] = self.A, self.B
            e = expm(aug * dt)
            cached = (self.transition(dt), e[0:6, 6:9])
            if len(self._zoh_cache) < 16:
                self._zoh_cache[dt] = cached
        return cached

    def forced_step(self, state, accel_lvlh, dt: float) -> np.ndarray:
        """State after ``dt`` under an acceleration ``F/m_c`` held constant over the step."""
        psi, gamma = self.zoh(dt)
        return psi @ np.asarray(state, dtype=float) + gamma @ np.asarray(accel_lvlh, dtype=float)


@dataclass(frozen=True)
class TwoImpulseTransfer:
    """A two-impulse CW transfer from ``r0`` to ``rf`` in ``tf`` (seed 003 §III).

    ``dv1`` is applied at ``t = 0`` (on top of the initial velocity ``v0``), ``dv2`` at
    ``t = tf`` so the chaser leaves with ``vf`` (zero for a rendezvous; a closing velocity
    for a docking impact). Velocities in LVLH [m/s].
    """

    r0: np.ndarray
    v0: np.ndarray
    rf: np.ndarray
    tf: float
    v0_plus: np.ndarray        # velocity right after the first burn
    vf_minus: np.ndarray       # velocity on arrival, before the second burn
    vf: np.ndarray             # velocity after the second burn
    dv1: np.ndarray
    dv2: np.ndarray

    @property
    def total_dv(self) -> float:
        return float(np.linalg.norm(self.dv1) + np.linalg.norm(self.dv2))

    def state_at(self, model: CWModel, t: float) -> np.ndarray:
        """``[dr; dv]`` on the coasting arc, ``0 <= t <= tf`` (Eq. 12 from the first burn)."""
        return model.propagate(np.concatenate([self.r0, self.v0_plus]), t)


def two_impulse_transfer(model: CWModel, r0, rf, tf: float, v0=(0.0, 0.0, 0.0), vf=(0.0, 0.0, 0.0)) -> TwoImpulseTransfer:
    """Solve Eq. (12) for the burns: ``dv0+ = Psi_rv^-1 (rf - Psi_rr r0)``.

    Raises if ``Psi_rv(tf)`` is singular (``n tf`` a multiple of ``2 pi`` for the
    out-of-plane motion, or the in-plane singular times): no transfer exists then.
    """
    tf = float(tf)
    if not (np.isfinite(tf) and tf > 0.0):
        raise ConfigError(f'transfer time tf must be finite and > 0, got {tf!r}')
    r0, rf = np.asarray(r0, dtype=float).reshape(3), np.asarray(rf, dtype=float).reshape(3)
    v0, vf = np.asarray(v0, dtype=float).reshape(3), np.asarray(vf, dtype=float).reshape(3)
    psi = model.transition(tf)
    rr, rv, vr, vv = psi[0:3, 0:3], psi[0:3, 3:6], psi[3:6, 0:3], psi[3:6, 3:6]
    if np.linalg.cond(rv) > 1e12:
        raise Unreachable(f'no two-impulse transfer in tf={tf} s: Psi_rv is singular (n tf = {model.n * tf:.6f} rad)')
    v0_plus = np.linalg.solve(rv, rf - rr @ r0)
    vf_minus = vr @ r0 + vv @ v0_plus
    return TwoImpulseTransfer(r0=r0, v0=v0, rf=rf, tf=tf, v0_plus=v0_plus, vf_minus=vf_minus, vf=vf,
                              dv1=v0_plus - v0, dv2=vf - vf_minus)


def seed_reference_transfer(vf=(0.0, 0.0, 0.0)) -> tuple[CWModel, TwoImpulseTransfer]:
    """Seed 003 §III: 300 km circular LEO, chaser at ``dx = [0.3, -0.8, 0.3] m`` at rest, docked in 6 s."""
    model = CWModel.at_altitude(SEED_ALTITUDE_M)
    return model, two_impulse_transfer(model, SEED_DELTA_X_M, (0.0, 0.0, 0.0), SEED_DURATION_S, vf=vf)


class CWRelativeAdmittance:
    """The chaser relative to a CW nominal, perturbed by measured forces (seed 004 Eq. 11 in CW form).

    As in seed 004 §III-A, the chaser's motion is split into a nominal (here the unforced CW
    motion of Eq. 12 from the state after the last planned burn) and a relative part driven
    by the measured force ``F`` (contact, thrusters): ``x = x_nominal + x_rel``,
    ``x_rel' = A x_rel + B F / m_c``, ``x_rel(0) = 0``. Eq. (11) is linear, so the split is
    exact within CW; the rule advances ``x_rel`` with the exact zero-order hold (a sampled
    force held over the step). ``state_lvlh`` is what the facility commands.

    ``apply_impulse(dv)`` adds a planned burn to the nominal (the burns of a two-impulse
    transfer); the relative part keeps what the forces did.
    """

    def __init__(self, model: CWModel, chaser_mass_kg: float, state0_lvlh, t0: float = 0.0):
        m = float(chaser_mass_kg)
        if not (np.isfinite(m) and m > 0.0):
            raise ConfigError(f'chaser_mass_kg must be finite and > 0, got {chaser_mass_kg!r}')
        self.model, self.chaser_mass_kg = model, m
        self.t = float(t0)
        self._nominal_epoch = float(t0)
        self._nominal_state0 = np.asarray(state0_lvlh, dtype=float).reshape(6).copy()
        self.state_rel = np.zeros(6)

    def nominal(self, t: float | None = None) -> np.ndarray:
        t = self.t if t is None else float(t)
        return self.model.propagate(self._nominal_state0, t - self._nominal_epoch)

    @property
    def state_lvlh(self) -> np.ndarray:
        return self.nominal() + self.state_rel

    def apply_impulse(self, dv_lvlh) -> None:
        """A planned burn at the current time, added to the nominal."""
        state = self.nominal()
        state[3:6] += np.asarray(dv_lvlh, dtype=float)
        self._nominal_state0, self._nominal_epoch = state, self.t

    def step(self, force_on_chaser_lvlh, dt: float) -> np.ndarray:
        """Advance ``dt`` [s] under the force [N] on the chaser (LVLH, held over the step)."""
        f = np.asarray(force_on_chaser_lvlh, dtype=float).reshape(3)
        if not np.all(np.isfinite(f)):
            raise InputError(f'force must be finite, got {f.tolist()}')
        self.state_rel = self.model.forced_step(self.state_rel, f / self.chaser_mass_kg, dt)
        self.t += float(dt)
        return self.state_lvlh
