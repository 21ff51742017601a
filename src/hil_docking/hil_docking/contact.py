"""Docking contact with virtual-force compensation (seed 003 §IV-V, Eqs. 13-22 and 30).

1D along the docking axis (seed 003 footnote 3). ``x`` is the penetration of the chaser's
docking interface into the target's (``x > 0`` in contact), ``x' = v_C - v_T`` the closing
rate along the axis (chaser towards target positive).

* Orbital contact, Eqs. (13)-(15): a parallel spring-dashpot ``f = k x + b x'`` (compressive
  positive) pushes the chaser back and the target forward; with the equivalent mass
  ``m = m_C m_T / (m_C + m_T)`` (footnote 4) the penetration obeys ``m x'' = -(k x + b x')``.
* Facility, Eqs. (16)-(18): the lumped contact of the mock-ups (``k_C, b_C``) in series with
  the compliance spring ``k_spr`` (stiff F/T sensor and robot neglected) behaves as
  ``f_L = k_L x + b_L x'`` with ``k_L = k_C + k_spr``, ``b_L = b_C`` — the seed's formulas,
  kept as written.
* Virtual force, Eqs. (19)-(22): the loop adds ``f_V = k_V x + b_V x'`` so that
  ``f_L + f_V`` is the orbital force; ``k_V = k - k_L``, ``b_V = b - b_L + eps(Delta)``.
  ``eps`` compensates the damping the loop delay removes (:func:`virtual_gains`).
* Impact, Eq. (30): the impulse ``J = int f dt`` changes the velocities by
  ``dv_C = -J / m_C``, ``dv_T = +J / m_T`` along the axis (the closing rate by ``-J / m``);
  the coefficient of restitution ``gamma = -x'_out / x'_in`` (footnote 6).

Plain Python (numpy); no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hil_docking.delayed_loop import simulate_delayed_loop
from hil_common.errors import ConfigError, SimulationFailed


def _positive(name: str, value: float, allow_zero: bool = False) -> float:
    v = float(value)
    if not np.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        raise ConfigError(f'{name} must be finite and {">=" if allow_zero else ">"} 0, got {value!r}')
    return v


def equivalent_mass(chaser_mass_kg: float, target_mass_kg: float) -> float:
    """Seed 003 footnote 4: ``m = m_C m_T / (m_C + m_T)`` [kg] (``inf`` target: ``m_C``)."""
    m_c = _positive('chaser_mass_kg', chaser_mass_kg)
    m_t = float(target_mass_kg)
    if m_t == np.inf:
        return m_c
    m_t = _positive('target_mass_kg', m_t)
    return m_c * m_t / (m_c + m_t)


@dataclass(frozen=True)
class SpringDashpot:
    """``f = k x + b x'`` (Eq. 14, compressive positive), ``k`` [N/m], ``b`` [N s/m]."""

    stiffness_n_m: float
    damping_ns_m: float

    def __post_init__(self):
        _positive('stiffness_n_m', self.stiffness_n_m)
        _positive('damping_ns_m', self.damping_ns_m, allow_zero=True)

    def force(self, penetration_m, rate_m_s):
        return self.stiffness_n_m * np.asarray(penetration_m) + self.damping_ns_m * np.asarray(rate_m_s)


@dataclass(frozen=True)
class ImpactClosedForm:
    """The linear spring-dashpot impact of Eq. (15) with contact ending at ``x = 0``."""

    restitution: float          # gamma
    duration_s: float           # contact time
    damping_ratio: float        # zeta = b / (2 sqrt(k m))
    natural_frequency_rad_s: float


def impact_closed_form(mass_kg: float, contact: SpringDashpot) -> ImpactClosedForm:
    """Underdamped: ``gamma = exp(-zeta pi / sqrt(1 - zeta^2))``, duration ``pi / omega_d``.

    (From ``x(t) = (v_in/omega_d) e^{-zeta omega_n t} sin(omega_d t)``: back at ``x = 0`` after half
    a damped period with ``x' = -v_in e^{-zeta omega_n pi / omega_d}``.) Critically or
    over-damped: the penetration never returns to zero, ``gamma = 0`` and the duration is infinite.
    """
    m = _positive('mass_kg', mass_kg)
    k, b = contact.stiffness_n_m, contact.damping_ns_m
    wn = float(np.sqrt(k / m))
    zeta = b / (2.0 * np.sqrt(k * m))
    if zeta >= 1.0:
        return ImpactClosedForm(0.0, np.inf, zeta, wn)
    wd = wn * np.sqrt(1.0 - zeta * zeta)
    return ImpactClosedForm(float(np.exp(-zeta * np.pi / np.sqrt(1.0 - zeta * zeta))), float(np.pi / wd), zeta, wn)


@dataclass(frozen=True)
class FacilityContact:
    """The facility's lumped contact (seed 003 Fig. 4, Eqs. 16-18).

    ``mockup_stiffness_n_m`` (``k_C``) and ``mockup_damping_ns_m`` (``b_C``): the docking-interface
    mock-ups; ``spring_stiffness_n_m`` (``k_spr``): the compliance spring B.
    """

    mockup_stiffness_n_m: float
    mockup_damping_ns_m: float
    spring_stiffness_n_m: float

    def __post_init__(self):
        _positive('mockup_stiffness_n_m', self.mockup_stiffness_n_m)
        _positive('mockup_damping_ns_m', self.mockup_damping_ns_m, allow_zero=True)
        _positive('spring_stiffness_n_m', self.spring_stiffness_n_m)

    @property
    def lumped(self) -> SpringDashpot:
        """``k_L = k_C + k_spr`` (Eq. 17), ``b_L = b_C`` (Eq. 18)."""
        return SpringDashpot(self.mockup_stiffness_n_m + self.spring_stiffness_n_m, self.mockup_damping_ns_m)


COMPENSATIONS = ('none', 'first_order', 'pole')


@dataclass(frozen=True)
class VirtualGains:
    """``f_V = k_V x + b_V x'`` (Eqs. 19-22) and what the loop applies in total."""

    stiffness_n_m: float          # k_V
    damping_ns_m: float           # b_V
    epsilon_ns_m: float           # eps(Delta) of Eq. (22)
    stiffness_correction_n_m: float   # beyond the seed: the stiffness the 'pole' compensation adds
    compensation: str

    def applied(self, facility: SpringDashpot) -> SpringDashpot:
        """The total contact law of the loop, ``f_L + f_V``."""
        return SpringDashpot(facility.stiffness_n_m + self.stiffness_n_m, facility.damping_ns_m + self.damping_ns_m)


def virtual_gains(orbital: SpringDashpot, facility: SpringDashpot, delay_s: float, mass_kg: float,
                  compensation: str = 'pole') -> VirtualGains:
    """``k_V = k - k_L`` (Eq. 21), ``b_V = b - b_L + eps(Delta)`` (Eq. 22).

    The delay turns the applied law ``k' x_r + b' x_r'`` (``x_r(t) = x(t - Delta)``) into
    ``(k' + b' s) e^{-s Delta}``, which removes about ``k Delta`` of damping. ``eps`` by
    ``compensation``:

    * ``'none'``: ``eps = 0`` (the uncompensated loop);
    * ``'first_order'``: ``eps = k Delta`` (``e^{-s Delta} ~ 1 - s Delta``);
    * ``'pole'`` (default, beyond the seed): ``k'`` and ``b'`` real such that the orbital
      contact's poles ``s*`` (roots of ``m s^2 + b s + k``) are roots of the delayed loop:
      ``k' + b' s* = (k + b s*) e^{s* Delta}`` — one complex equation, two real unknowns.
      It also corrects the stiffness (``stiffness_correction_n_m = k' - k``).
    """
    if compensation not in COMPENSATIONS:
        raise ConfigError(f'compensation must be one of {COMPENSATIONS}, got {compensation!r}')
    delay = _positive('delay_s', delay_s, allow_zero=True)
    m = _positive('mass_kg', mass_kg)
    k, b = orbital.stiffness_n_m, orbital.damping_ns_m
    dk = 0.0
    if compensation == 'none':
        eps = 0.0
    elif compensation == 'first_order':
        eps = k * delay
    else:
        disc = complex(b * b - 4.0 * m * k)
        s_star = (-b + np.sqrt(disc)) / (2.0 * m)
        if abs(s_star.imag) < 1e-12:
            raise ConfigError("compensation='pole' needs an underdamped orbital contact (zeta < 1)")
        w = (k + b * s_star) * np.exp(s_star * delay)
        b_prime = w.imag / s_star.imag
        k_prime = w.real - b_prime * s_star.real
        eps, dk = b_prime - b, k_prime - k
    return VirtualGains(k + dk - facility.stiffness_n_m, b - facility.damping_ns_m + eps, eps, dk, compensation)


@dataclass
class ImpactResult:
    """A simulated impact: restitution, impulse, contact duration and the time histories."""

    restitution: float
    impulse_n_s: float
    duration_s: float
    closing_speed_in_m_s: float
    closing_speed_out_m_s: float
    t: np.ndarray
    penetration_m: np.ndarray           # of the simulated mass
    force_n: np.ndarray                 # f_L + f_V on the simulated mass (compressive positive)


def simulate_facility_impact(mass_kg: float, closing_speed_m_s: float, applied: SpringDashpot, delay_s: float,
                             steps_per_delay: int = 50, t_max_s: float | None = None) -> ImpactResult:
    """The impact through the facility loop with delay ``Delta`` (Fig. 5, exact delay).

    ``applied`` is the law the loop realises, ``f_L + f_V`` (:meth:`VirtualGains.applied`).
    The simulated mass starts just outside contact closing at ``closing_speed_m_s``; the
    run ends once the robot has left contact. Restitution from the simulated closing rate
    after separation; the impulse is ``int f dt`` (trapezoid), Eq. (30).
    """
    m = _positive('mass_kg', mass_kg)
    v_in = _positive('closing_speed_m_s', closing_speed_m_s)
    if t_max_s is None:
        t_max_s = 20.0 * np.pi * np.sqrt(m / applied.stiffness_n_m) + 4.0 * delay_s
    run = simulate_delayed_loop(m, applied.stiffness_n_m, applied.damping_ns_m, delay_s, 0.0, v_in, t_max_s,
                                steps_per_delay=steps_per_delay, unilateral=True, stop_after_separation=True)
    x, v, f, c = run.x[:, 0], run.v[:, 0], run.f[:, 0], run.in_contact[:, 0]
    touching = np.flatnonzero(c)
    if touching.size == 0 or c[-1]:
        raise SimulationFailed('the robot did not leave contact within t_max_s (over-damped or unstable loop)')
    duration = float(run.t[touching[-1]] - run.t[touching[0]])
    impulse = float(np.trapezoid(f, run.t))
    v_out = float(v[-1])
    return ImpactResult(-v_out / v_in, impulse, duration, v_in, v_out, run.t, x, f)


def velocity_changes(impulse_n_s: float, chaser_mass_kg: float, target_mass_kg: float) -> tuple[float, float]:
    """Eq. (30) for each body along the docking axis: ``(dv_C, dv_T) = (-J/m_C, +J/m_T)`` [m/s]."""
    m_c = _positive('chaser_mass_kg', chaser_mass_kg)
    dv_t = 0.0 if target_mass_kg == np.inf else float(impulse_n_s) / _positive('target_mass_kg', target_mass_kg)
    return -float(impulse_n_s) / m_c, dv_t


def post_impact_state(state_lvlh, docking_axis_lvlh, impulse_n_s: float, chaser_mass_kg: float) -> np.ndarray:
    """The chaser's CW state after the impact (seed 003 §V): position unchanged, velocity
    changed by ``-J/m_C`` along the docking axis (unit vector, chaser towards target).
    Propagate it with :meth:`hil_docking.cw.CWModel.propagate` for the third leg."""
    axis = np.asarray(docking_axis_lvlh, dtype=float).reshape(3)
    norm = float(np.linalg.norm(axis))
    if not norm > 0.0:
        raise ConfigError('docking_axis_lvlh must be a non-zero vector')
    out = np.asarray(state_lvlh, dtype=float).reshape(6).copy()
    out[3:6] += (-float(impulse_n_s) / _positive('chaser_mass_kg', chaser_mass_kg)) * axis / norm
    return out
