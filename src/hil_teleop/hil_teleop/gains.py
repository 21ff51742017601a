"""Gains of seed 001's teleoperation law and the switches used for the comparisons.

All matrices of Eqs. (1)-(5) are diagonal (the seed says so for ``K_s``, ``G`` and ``D``;
``K_c`` is taken diagonal too), stored as their 6 diagonal entries, linear first:

* ``k_s``  — force-feedback gain ``K_s`` [(m/s)/N, (rad/s)/(N m)];
* ``g``    — force scaling ``G`` between master and slave [-];
* ``k_c``  — coupling ("restraint") gain ``K_c`` [1/s];
* ``d``    — damping gain ``D`` on the one-sample velocity difference [-]. With
  ``v ~= v_c`` (Appendix A) the command obeys ``v[k] + D v[k-1] - D v[k-2] = u[k]``, which
  is stable for ``0 <= D < 0.5``; the constructor enforces that range.

Each term can be switched off (``force_feedback``, ``coupling``, ``damping``, ``scaling``):
a switched-off term contributes nothing, and ``scaling=False`` means ``G = I``. The
reference velocity ``v_s,r = K_s G f_m`` (Eq. 1) always uses ``K_s``: switching the force
feedback off removes only the ``- K_s f_s`` term, as in seed 001's with/without comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hil_common.errors import ConfigError


def diag6(name: str, values, lo: float = 0.0, hi: float = np.inf) -> np.ndarray:
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.shape == (1,):
        v = np.full(6, v[0])
    if v.shape != (6,) or not np.all(np.isfinite(v)):
        raise ConfigError(f'{name} must be 6 finite numbers (or one), got {np.asarray(values).tolist()}')
    if np.any(v < lo) or np.any(v > hi):
        raise ConfigError(f'{name} must lie in [{lo}, {hi}], got {v.tolist()}')
    return v


@dataclass
class TeleopGains:
    k_s: np.ndarray = field(default_factory=lambda: np.array([1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3]))
    g: np.ndarray = field(default_factory=lambda: np.full(6, 10.0))
    k_c: np.ndarray = field(default_factory=lambda: np.full(6, 2.0))
    d: np.ndarray = field(default_factory=lambda: np.full(6, 0.2))
    force_feedback: bool = True
    coupling: bool = True
    damping: bool = True
    scaling: bool = True

    def __post_init__(self):
        self.k_s = diag6('k_s', self.k_s)
        self.g = diag6('g', self.g)
        self.k_c = diag6('k_c', self.k_c)
        self.d = diag6('d', self.d, 0.0, 0.4999)

    # Effective diagonals, with the switches applied.
    @property
    def g_eff(self) -> np.ndarray:
        return self.g if self.scaling else np.ones(6)

    @property
    def k_s_feedback(self) -> np.ndarray:
        return self.k_s if self.force_feedback else np.zeros(6)

    @property
    def k_c_eff(self) -> np.ndarray:
        return self.k_c if self.coupling else np.zeros(6)

    @property
    def d_eff(self) -> np.ndarray:
        return self.d if self.damping else np.zeros(6)

    def reference_velocity(self, f_m) -> np.ndarray:
        """Eq. (1)/(4): ``v_s,r = v_vir,r = K_s G f_m``."""
        return self.k_s * self.g_eff * np.asarray(f_m, dtype=float)
