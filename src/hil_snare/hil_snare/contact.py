"""Wire-grapple contact laws (plain Python, no rclpy).

* :class:`SnareWireLaw` -- seed 000 §4: ``F_n = F_s(delta) + F_k``, with
  ``F_s = alpha (e^{beta delta} - 1) + gamma delta`` (Eq. 10), ``F_k = c delta^2 delta_dot``
  (Eq. 11), and Coulomb friction ``F_f = mu F_n`` (Eq. 12). Values of Table 4 by default.
* :class:`LooseWireLaw` -- seed 002 §4: the spring-dashpot ``F_n = k delta + c delta_dot``
  (Eqs. 3-4 with ``G = 1, p = q = 1``) whose static part is the identified quadratic
  ``A delta^2 + B delta`` of Table 4 for the contact position, and Coulomb friction (Eq. 5).

Both are penalty laws: ``delta`` [m] is the wire's deflection at the contact (penetration of
the grapple into the wire's rest curve), ``delta_dot`` its rate. The normal force never pulls
(``F_n >= 0``). Coulomb friction is regularised so that the equations stay smooth enough for a
fixed-step integrator: ``F_f = -mu F_n v_t / sqrt(|v_t|^2 + v_eps^2)``, which equals ``mu F_n``
opposite the slip for ``|v_t| >> v_eps`` and goes to zero continuously at rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hil_common.errors import ConfigError

# e^{beta delta} is capped at beta delta = EXP_CAP: a deflection that large (tens of mm for
# Table 4) means the run already failed; the cap only keeps the arithmetic finite.
EXP_CAP = 60.0


def _check(name, value, *, positive=False):
    if not math.isfinite(value) or value < 0.0 or (positive and value == 0.0):
        raise ConfigError(f'{name} must be {"> 0" if positive else ">= 0"} and finite, got {value!r}')


def friction_gain(mu: float, f_n: float, slip_speed_sq: float, v_eps_mps: float) -> float:
    """``k`` with ``F_f = k v_t``: ``-mu F_n / sqrt(|v_t|^2 + v_eps^2)`` (Eq. 12, regularised)."""
    return -mu * f_n / math.sqrt(slip_speed_sq + v_eps_mps * v_eps_mps)


def regularised_friction(mu: float, f_n: float, v_t, v_eps_mps: float) -> np.ndarray:
    """Regularised Coulomb friction force (Eq. 12): opposite the slip ``v_t``, magnitude -> ``mu F_n``."""
    v_t = np.asarray(v_t, dtype=float)
    return friction_gain(mu, f_n, float(v_t @ v_t), v_eps_mps) * v_t


@dataclass(frozen=True)
class SnareWireLaw:
    """Seed 000 Eqs. (10)-(12), Table 4."""

    alpha_n: float = 0.0043
    beta_per_m: float = 2162.2
    gamma_n_per_m: float = 648.6
    c_kg_per_sm2: float = 0.83e7
    mu: float = 0.08
    v_eps_mps: float = 1e-3

    def __post_init__(self):
        _check('alpha_n', self.alpha_n)
        _check('beta_per_m', self.beta_per_m)
        _check('gamma_n_per_m', self.gamma_n_per_m)
        _check('c_kg_per_sm2', self.c_kg_per_sm2)
        _check('mu', self.mu)
        _check('v_eps_mps', self.v_eps_mps, positive=True)

    def static_force(self, delta: float) -> float:
        """``F_s`` of Eq. (10)."""
        if delta <= 0.0:
            return 0.0
        return self.alpha_n * (math.exp(min(self.beta_per_m * delta, EXP_CAP)) - 1.0) + self.gamma_n_per_m * delta

    def normal_force(self, delta: float, delta_dot: float) -> float:
        """``F_n = F_s + F_k`` (Eqs. 10-11), clipped at 0 (a wire does not pull)."""
        if delta <= 0.0:
            return 0.0
        return max(0.0, self.static_force(delta) + self.c_kg_per_sm2 * delta * delta * delta_dot)

    def potential(self, delta: float) -> float:
        """``∫_0^delta F_s`` [J] (energy stored in the wire; below the exponent cap)."""
        if delta <= 0.0:
            return 0.0
        b = self.beta_per_m
        return self.alpha_n * ((math.exp(b * delta) - 1.0) / b - delta) + 0.5 * self.gamma_n_per_m * delta * delta

    def friction(self, f_n: float, v_t) -> np.ndarray:
        return regularised_friction(self.mu, f_n, v_t, self.v_eps_mps)


# Seed 002 Table 4: F = A delta^2 + B delta + C per contact position s [mm].
LOOSE_WIRE_TABLE4 = {40: (719880.0, -13.578, 0.0533), 65: (878089.0, -1086.0, 0.2115), 90: (890183.0, -1297.6, 0.3457)}


@dataclass(frozen=True)
class LooseWireLaw:
    """Seed 002 Eqs. (3)-(5) with the identified static stiffness of Table 4.

    The static force is ``max(0, A delta^2 + B delta)``: the seed attributes the offset ``C`` to
    measurement error (``F`` must vanish at ``delta = 0``) and we drop it. The seed gives no
    damping value; ``c_ns_per_m`` is our assumption (docs/snare.md).
    """

    a_n_per_m2: float = 890183.0
    b_n_per_m: float = -1297.6
    c_ns_per_m: float = 5.0
    mu: float = 0.08
    v_eps_mps: float = 1e-3

    def __post_init__(self):
        _check('a_n_per_m2', self.a_n_per_m2, positive=True)
        if not math.isfinite(self.b_n_per_m):
            raise ConfigError(f'b_n_per_m must be finite, got {self.b_n_per_m!r}')
        _check('c_ns_per_m', self.c_ns_per_m)
        _check('mu', self.mu)
        _check('v_eps_mps', self.v_eps_mps, positive=True)

    @classmethod
    def at_position(cls, s_mm: int, **kw) -> 'LooseWireLaw':
        if s_mm not in LOOSE_WIRE_TABLE4:
            raise ConfigError(f'contact position s_mm must be one of {sorted(LOOSE_WIRE_TABLE4)}, got {s_mm!r}')
        a, b, _ = LOOSE_WIRE_TABLE4[s_mm]
        return cls(a_n_per_m2=a, b_n_per_m=b, **kw)

    def static_force(self, delta: float) -> float:
        if delta <= 0.0:
            return 0.0
        return max(0.0, (self.a_n_per_m2 * delta + self.b_n_per_m) * delta)

    def normal_force(self, delta: float, delta_dot: float) -> float:
        if delta <= 0.0:
            return 0.0
        return max(0.0, self.static_force(delta) + self.c_ns_per_m * delta_dot)

    def potential(self, delta: float) -> float:
        if delta <= 0.0:
            return 0.0
        a, b = self.a_n_per_m2, self.b_n_per_m
        d0 = max(0.0, -b / a)          # the static force is zero below d0
        if delta <= d0:
            return 0.0
        f = lambda x: a * x ** 3 / 3.0 + b * x * x / 2.0  # noqa: E731
        return f(delta) - f(d0)

    def friction(self, f_n: float, v_t) -> np.ndarray:
        return regularised_friction(self.mu, f_n, v_t, self.v_eps_mps)
