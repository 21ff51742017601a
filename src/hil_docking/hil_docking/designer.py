"""Delay-stability designer of the facility's contact loop (seed 003 §IV, Eqs. 23-29).

The loop of Fig. 5b has the characteristic equation ``m s^2 + (b s + k) e^{-s Delta} = 0``
(Eq. 24 before the Pade step). Three answers to "what is the smallest simulated
(equivalent) mass ``m`` the facility can stand for a loop delay ``Delta``, contact
stiffness ``k`` and damping ``b``?":

* :func:`m_min_pade1` — the seed's: first-order Pade (Eq. 23), Routh-Hurwitz on the cubic
  Eq. (25), giving Eqs. (26)-(29): ``m > max{b Delta / 2, (2 b^2 Delta - k b Delta^2) / (4b - 4k Delta)}``.
  It requires ``b > k Delta`` (for ``k Delta/2 < b <= k Delta`` Eq. 28 fails for every m).
* :func:`m_min_exact` — the exact delay margin (beyond the seed). ``|L(i w)| = |k + i b w| / (m w^2)``
  of the loop ``L = (b s + k) e^{-s Delta} / (m s^2)`` falls monotonically, so it crosses 1 once,
  at ``w_c^2 = (b^2 + sqrt(b^4 + 4 m^2 k^2)) / (2 m^2)``; the phase margin there is
  ``atan(b w_c / k)`` and the loop is stable iff ``Delta < atan(b w_c / k) / w_c``. That bound
  grows with ``m`` towards ``b / k`` (so a minimum mass exists iff ``Delta < b / k``, as for
  Pade); ``m_min`` is found by bisection on it.
* :func:`m_min_simulated` — the truth by time-domain simulation of the loop with the exact
  delay (:mod:`hil_docking.delayed_loop`, no Pade): multisection on ``m``, an initial
  displacement, growth of the oscillation envelope over ~40 periods.

Plain Python (numpy); no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hil_docking.delayed_loop import simulate_delayed_loop
from hil_common.errors import ConfigError, SimulationFailed


def _check(delay_s, stiffness_n_m, damping_ns_m, mass_kg=None):
    for name, value in (('delay_s', delay_s), ('stiffness_n_m', stiffness_n_m), ('damping_ns_m', damping_ns_m)) + (
            (('mass_kg', mass_kg),) if mass_kg is not None else ()):
        v = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(v)) or np.any(v <= 0.0):
            raise ConfigError(f'{name} must be finite and > 0, got {value!r}')


def delay_bound_s(stiffness_n_m: float, damping_ns_m: float) -> float:
    """``b / k``: no simulated mass is stable at or above this delay (Pade-1 and exact alike)."""
    return float(damping_ns_m) / float(stiffness_n_m)


def _require_below_bound(delay_s, k, b):
    bound = delay_bound_s(k, b)
    if not delay_s < bound:
        raise ConfigError(f'delay_s = {delay_s * 1e3:.4g} ms is at or above the bound b/k = {bound * 1e3:.4g} ms '
                         f'(k = {k:g} N/m, b = {b:g} N s/m): no simulated mass is stable; raise b or lower k')


@dataclass(frozen=True)
class RouthHurwitz:
    """Eq. (26) for the Pade-1 cubic Eq. (25): the three quantities that must be > 0.

    Erratum: Routh-Hurwitz on Eq. (25) (``a2 a1 > a3 a0``) gives
    ``(m - b Delta/2)(b - k Delta/2) - k m Delta / 2 > 0``; the seed's Eq. (26) prints
    ``- k m Delta`` without the 1/2, which contradicts its own Eqs. (28)-(29). We use the
    derivation (consistent with Eq. 28, and with the roots of Eq. 25: see the test).
    """

    first: float     # m - b Delta / 2
    second: float    # b - k Delta / 2
    third: float     # (m - b Delta/2)(b - k Delta/2) - k m Delta / 2
    coefficients: tuple[float, float, float, float]   # Eq. (25): Delta m, 2m - b Delta, 2b - k Delta, 2k

    @property
    def stable(self) -> bool:
        return self.first > 0.0 and self.second > 0.0 and self.third > 0.0


def routh_hurwitz(delay_s: float, stiffness_n_m: float, damping_ns_m: float, mass_kg: float) -> RouthHurwitz:
    _check(delay_s, stiffness_n_m, damping_ns_m, mass_kg)
    d, k, b, m = float(delay_s), float(stiffness_n_m), float(damping_ns_m), float(mass_kg)
    first, second = m - b * d / 2.0, b - k * d / 2.0
    return RouthHurwitz(first, second, first * second - k * m * d / 2.0, (d * m, 2 * m - b * d, 2 * b - k * d, 2 * k))


def m_min_pade1(delay_s, stiffness_n_m, damping_ns_m):
    """Eq. (29) [kg]; arrays broadcast. Raises for ``Delta >= b/k`` or non-positive input."""
    _check(delay_s, stiffness_n_m, damping_ns_m)
    d, k, b = (np.asarray(a, dtype=float) for a in (delay_s, stiffness_n_m, damping_ns_m))
    if np.ndim(d) == 0 and np.ndim(k) == 0 and np.ndim(b) == 0:
        _require_below_bound(float(d), float(k), float(b))
    elif np.any(d >= b / k):
        raise ConfigError('delay_s is at or above the bound b/k for some entries; use pade1_map for a map')
    return np.maximum(b * d / 2.0, (2.0 * b * b * d - k * b * d * d) / (4.0 * b - 4.0 * k * d))


def pade1_map(delay_s: float, stiffness_n_m, damping_ns_m) -> np.ndarray:
    """Eq. (29) over a grid (Fig. 6): NaN where ``Delta >= b/k`` (no stable mass)."""
    _check(delay_s, stiffness_n_m, damping_ns_m)
    k, b = np.meshgrid(np.asarray(stiffness_n_m, dtype=float), np.asarray(damping_ns_m, dtype=float), indexing='ij')
    d = float(delay_s)
    ok = b > k * d
    with np.errstate(divide='ignore', invalid='ignore'):
        m = np.maximum(b * d / 2.0, (2.0 * b * b * d - k * b * d * d) / (4.0 * b - 4.0 * k * d))
    return np.where(ok, m, np.nan)


def crossover_rad_s(mass_kg, stiffness_n_m, damping_ns_m, lag_s=0.0):
    """``w_c`` where ``|L(i w)| = 1`` for ``L = (b s + k) e^{-s Delta} / (m s^2 (tau s + 1))``.

    ``|L|`` falls monotonically in ``w`` (its log-derivative is below ``-1/w``), so the crossing
    is unique: closed form for ``tau = 0``, bisection in ``log w`` otherwise (it lies below the
    ``tau = 0`` crossing)."""
    m, k, b, tau = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (mass_kg, stiffness_n_m, damping_ns_m,
                                                                              lag_s)))
    w0 = np.sqrt((b * b + np.sqrt(b ** 4 + 4.0 * m * m * k * k)) / (2.0 * m * m))
    if not np.any(tau > 0.0):
        return w0
    lo, hi = np.log(w0 * 1e-9), np.log(w0)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        w = np.exp(mid)
        above = (k * k + b * b * w * w) > (m * m * w ** 4) * (1.0 + tau * tau * w * w)   # |L| > 1
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(tau > 0.0, np.exp(0.5 * (lo + hi)), w0)


def exact_delay_margin_s(mass_kg, stiffness_n_m, damping_ns_m, lag_s=0.0):
    """``Delta_max(m) = (atan(b w_c / k) - atan(tau w_c)) / w_c`` [s] of the exact-delay loop
    (``tau``: an optional first-order servo lag, beyond the seed); arrays broadcast. Negative:
    unstable even without delay."""
    k, b, tau = (np.asarray(a, dtype=float) for a in (stiffness_n_m, damping_ns_m, lag_s))
    wc = crossover_rad_s(mass_kg, k, b, tau)
    return (np.arctan(b * wc / k) - np.arctan(tau * wc)) / wc


def m_min_exact(delay_s, stiffness_n_m, damping_ns_m, rel_tol: float = 1e-10, lag_s: float = 0.0):
    """The exact minimum mass [kg] (bisection on :func:`exact_delay_margin_s`); arrays broadcast,
    NaN where ``Delta (+ tau) >= b/k`` for arrays, ValueError for scalars.

    With a servo lag ``tau`` the bound grows to ``Delta + tau < b/k`` (for large ``m`` the
    margin tends to ``b/k - tau``)."""
    _check(delay_s, stiffness_n_m, damping_ns_m)
    tau = float(lag_s)
    if not (np.isfinite(tau) and tau >= 0.0):
        raise ConfigError(f'lag_s must be finite and >= 0, got {lag_s!r}')
    d, k, b = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (delay_s, stiffness_n_m, damping_ns_m)))
    scalar = d.ndim == 0
    if scalar:
        _require_below_bound(float(d) + tau, float(k), float(b))
    ok = d + tau < b / k
    # Bracket: Delta_max ~ (pi/2) m / b for small m, so m = 2 b Delta / pi is near the answer when k Delta << b.
    lo = np.where(ok, 1e-6 * b * d, np.nan)
    hi = np.where(ok, b * (d + tau), np.nan)
    for _ in range(200):            # grow hi until stable
        need = ok & ~(exact_delay_margin_s(hi, k, b, tau) > d)
        if not np.any(need):
            break
        hi = np.where(need, hi * 4.0, hi)
    while True:
        mid = np.sqrt(lo * hi)
        stable = exact_delay_margin_s(mid, k, b, tau) > d
        hi = np.where(stable, mid, hi)
        lo = np.where(stable, lo, mid)
        if not np.any(ok & (hi / lo - 1.0 > rel_tol)):
            break
    out = np.where(ok, hi, np.nan)
    return float(out) if scalar else out


def pade_coefficients(order: int) -> np.ndarray:
    """``c_j`` of the ``(n, n)`` Pade approximant ``e^{-x} ~ sum c_j (-x)^j / sum c_j x^j``."""
    from math import factorial
    n = int(order)
    if n < 1:
        raise ConfigError(f'Pade order must be >= 1, got {order!r}')
    return np.array([factorial(2 * n - j) * factorial(n) / (factorial(2 * n) * factorial(j) * factorial(n - j))
                     for j in range(n + 1)])


def pade_stable(delay_s: float, stiffness_n_m: float, damping_ns_m: float, mass_kg: float, order: int) -> bool:
    """Roots of ``m s^2 Q(s) + (b s + k) P(s)`` (``e^{-s Delta} ~ P/Q``, order-n Pade) all in Re < 0.

    ``order = 1`` is Eq. (25) (up to a factor): the same verdict as Eq. (26)."""
    c = pade_coefficients(order)
    d = float(delay_s)
    # Polynomials in s, highest power first.
    q = np.array([c[j] * d ** j for j in range(len(c))])[::-1]
    p = np.array([c[j] * (-d) ** j for j in range(len(c))])[::-1]
    char = np.polyadd(np.polymul([float(mass_kg), 0.0, 0.0], q), np.polymul([float(damping_ns_m), float(stiffness_n_m)], p))
    return bool(np.all(np.roots(char).real < 0.0))


def m_min_pade(delay_s: float, stiffness_n_m: float, damping_ns_m: float, order: int, rel_tol: float = 1e-9) -> float:
    """Minimum mass [kg] with an order-n Pade delay (bisection on :func:`pade_stable`; order 1
    reproduces Eq. 29). Stability is monotonic in ``m`` in the cases we checked (the test
    compares orders 1-3 against the exact margin)."""
    _check(delay_s, stiffness_n_m, damping_ns_m)
    d, k, b = float(delay_s), float(stiffness_n_m), float(damping_ns_m)
    _require_below_bound(d, k, b)
    lo, hi = 1e-6 * b * d, b * d
    for _ in range(200):
        if pade_stable(d, k, b, hi, order):
            break
        lo, hi = hi, hi * 4.0
    else:
        raise SimulationFailed('no stable mass found with the Pade model')
    while hi / lo - 1.0 > rel_tol:
        mid = np.sqrt(lo * hi)
        if pade_stable(d, k, b, mid, order):
            hi = mid
        else:
            lo = mid
    return float(hi)


def exact_map(delay_s: float, stiffness_n_m, damping_ns_m) -> np.ndarray:
    """:func:`m_min_exact` over a (k, b) grid, NaN where no mass is stable."""
    k, b = np.meshgrid(np.asarray(stiffness_n_m, dtype=float), np.asarray(damping_ns_m, dtype=float), indexing='ij')
    return m_min_exact(np.full(k.shape, float(delay_s)), k, b)


def envelope_growth(mass_kg, stiffness_n_m, damping_ns_m, delay_s: float, periods: float = 40.0,
                    steps_per_delay: int = 20, lag_s: float = 0.0) -> np.ndarray:
    """Time-domain growth factor of the exact-delay loop's free oscillation (per batch entry):
    max |x| over the last quarter of the run divided by max |x| over its second quarter.
    > 1: unstable. The run lasts ``periods`` periods of the slowest crossing frequency."""
    m, k, b = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, dtype=float))
                                    for a in (mass_kg, stiffness_n_m, damping_ns_m)))
    wc = crossover_rad_s(m, k, b, lag_s)
    t_final = periods * 2.0 * np.pi / float(np.min(wc))
    with np.errstate(over='ignore', invalid='ignore'):      # unstable members may overflow: inf growth
        run = simulate_delayed_loop(m, k, b, delay_s, 1.0, 0.0, t_final, steps_per_delay=steps_per_delay,
                                    unilateral=False, record_every=1, servo_lag_s=lag_s)
    n = run.t.size
    x = np.abs(run.x)
    late = np.where(np.isfinite(x[3 * n // 4:]), x[3 * n // 4:], np.inf).max(axis=0)
    return late / x[n // 4:n // 2].max(axis=0)


def m_min_simulated(delay_s: float, stiffness_n_m: float, damping_ns_m: float, rel_tol: float = 0.01,
                    batch: int = 12, periods: float = 40.0, steps_per_delay: int = 20, lag_s: float = 0.0,
                    bracket: tuple[float, float] | None = None) -> float:
    """The stability boundary in ``m`` [kg] found by simulating the exact-delay loop.

    Multisection: ``batch`` masses on a geometric grid inside the bracket are simulated at
    once; the bracket shrinks to the neighbours of the first stable one until it is
    narrower than ``rel_tol``. The initial bracket comes from the Pade-1 bound for ``Delta + tau``
    (x 1/20 ... x 20), or ``bracket = (lo, hi)``: its ends are simulated first and must be
    unstable and stable. ``lag_s``: the robot's first-order servo lag ``tau``.
    Returns the upper (stable) end of the final bracket.
    """
    _check(delay_s, stiffness_n_m, damping_ns_m)
    d, k, b = float(delay_s), float(stiffness_n_m), float(damping_ns_m)
    _require_below_bound(d + float(lag_s), k, b)
    if bracket is not None:
        lo, hi = (float(v) for v in bracket)
        growth = envelope_growth([lo, hi], k, b, d, periods, steps_per_delay, lag_s)
        if not (0.0 < lo < hi and growth[0] >= 1.0 > growth[1]):
            raise ConfigError(f'bracket {bracket!r} does not hold the boundary (growth {growth.tolist()})')
        guess = None
    else:
        guess = float(m_min_pade1(d + float(lag_s), k, b))
        lo, hi = guess / 20.0, guess * 20.0
    for _ in range(0 if guess is None else 20):
        if envelope_growth(hi, k, b, d, periods, steps_per_delay, lag_s)[0] < 1.0:
            break
        lo, hi = hi, hi * 20.0
    else:
        if guess is not None:
            raise SimulationFailed('no stable mass found by simulation')
    while hi / lo - 1.0 > rel_tol:
        masses = np.geomspace(lo, hi, batch + 2)[1:-1]
        stable = envelope_growth(masses, k, b, d, periods, steps_per_delay, lag_s) < 1.0
        first = int(np.argmax(stable)) if np.any(stable) else batch
        lo = masses[first - 1] if first > 0 else lo
        hi = masses[first] if first < batch else hi
    return float(hi)
