"""The facility's contact loop with the exact delay (seed 003 Fig. 5), integrated in time.

The simulated (equivalent) mass ``m`` obeys ``m x'' = -f(t)``; the robot reproduces the
simulated position ``Delta`` later (``x_r(t) = x(t - Delta)``, ``Delta = Delta_1 +
Delta_2``: inverse dynamics and actuation); the contact force is that of the robot's
state, ``f = k x_r + b x_r'`` while the robot is in contact (``x_r > 0``, penetration
along the docking axis). This is the loop whose transfer function is seed 003 Eq. (24)
*before* the Pade approximation: characteristic equation ``m s^2 + (b s + k) e^{-s Delta} = 0``.

Integration: fixed step ``h = Delta / N`` (N integer >= 1), so the delayed states are the
stored grid values; the acceleration over a step is linear between the two delayed
samples, which the velocity and position updates integrate exactly (trapezoid on ``v``,
``x += h v + h^2 (a0/3 + a1/6)``). Second order in ``h``; no Pade anywhere.
Vectorised over a batch of parameter sets (numpy arrays), so a stability boundary can be
bisected for many masses at once. Plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hil_common.errors import ConfigError


@dataclass
class LoopRun:
    """A batch run: ``t`` (n,), ``x`` and ``v`` (n, P) of the simulated mass, ``f`` (n, P) the
    contact force on it (compressive positive), ``in_contact`` (n, P)."""

    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    f: np.ndarray
    in_contact: np.ndarray


def simulate_delayed_loop(mass_kg, stiffness_n_m, damping_ns_m, delay_s: float, x0, v0, t_final: float,
                          steps_per_delay: int = 50, unilateral: bool = True,
                          record_every: int = 1, stop_after_separation: bool = False,
                          servo_lag_s: float = 0.0) -> LoopRun:
    """Integrate the delayed loop for a batch of parameter sets (arrays broadcast together).

    ``unilateral``: the force acts only while ``x_r > 0`` (an impact); otherwise the loop is
    linear for all ``x`` (the stability analysis of Eqs. 24-29). Before ``t = 0`` the robot
    history is the simulated mass moving at ``v0`` (``x(t) = x0 + v0 t``).
    ``stop_after_separation``: end once every member has been in contact and left it.
    ``servo_lag_s`` (``tau``, beyond the seed): the robot follows the delayed command through a
    first-order servo, ``x_r' = (x(t - Delta) - x_r) / tau``, integrated exactly for the
    piecewise-linear delayed command; the force uses ``x_r`` and ``x_r'``. It starts in the
    steady ramp-tracking state ``x_r = x(-Delta) - tau v0``.
    """
    m, k, b, x, v = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, dtype=float))
                                          for a in (mass_kg, stiffness_n_m, damping_ns_m, x0, v0)))
    m, k, b, x, v = (a.copy() for a in (m, k, b, x, v))
    if not (np.all(m > 0) and np.all(k >= 0) and np.all(b >= 0)):
        raise ConfigError('mass must be > 0, stiffness and damping >= 0')
    delay_s = float(delay_s)
    if not (np.isfinite(delay_s) and delay_s > 0.0):
        raise ConfigError(f'delay_s must be > 0 (the exact-delay loop), got {delay_s!r}')
    n_d = int(steps_per_delay)
    h = delay_s / n_d
    n_steps = int(np.ceil(float(t_final) / h))
    # Ring buffer of the last n_d + 1 (x, v) samples: hist[(i) % (n_d + 1)] = state at step i.
    size = n_d + 1
    hx = np.empty((size,) + x.shape)
    hv = np.empty((size,) + x.shape)
    # Sample i (time i h) lives at slot i % size (Python modulo); history for i = -n_d..0:
    for i in range(-n_d, 1):
        hx[i % size] = x + v * (i * h)
        hv[i % size] = v

    lag = float(servo_lag_s)
    if not (np.isfinite(lag) and lag >= 0.0):
        raise ConfigError(f'servo_lag_s must be finite and >= 0, got {servo_lag_s!r}')
    if lag > 0.0:
        decay = float(np.exp(-h / lag))
        robot = hx[(-n_d) % size] - lag * v

    def force(xr, vr):
        f = k * xr + b * vr
        if unilateral:
            touching = xr > 0.0
            return np.where(touching, f, 0.0), touching
        return f, np.ones_like(xr, dtype=bool)

    n_rec = n_steps // record_every + 1
    ts = np.empty(n_rec)
    xs, vs, fs = (np.empty((n_rec,) + x.shape) for _ in range(3))
    cs = np.empty((n_rec,) + x.shape, dtype=bool)
    f0, c0 = force(hx[(-n_d) % size], hv[(-n_d) % size]) if lag == 0.0 else force(robot, v)
    ts[0], xs[0], vs[0], fs[0], cs[0] = 0.0, x, v, f0, c0
    entered = np.zeros(x.shape, dtype=bool)
    left = np.zeros(x.shape, dtype=bool)
    r = 1
    minv = 1.0 / m
    for i in range(n_steps):
        # delayed robot states at t_i and t_{i+1}: samples i - n_d and i + 1 - n_d
        if lag == 0.0:
            fa, ca = force(hx[(i - n_d) % size], hv[(i - n_d) % size])
            fb, _ = force(hx[(i + 1 - n_d) % size], hv[(i + 1 - n_d) % size])
        else:
            u0, u1 = hx[(i - n_d) % size], hx[(i + 1 - n_d) % size]
            ramp = (u1 - u0) * (lag / h)
            robot_next = u1 - ramp + (robot - u0 + ramp) * decay
            fa, ca = force(robot, (u0 - robot) / lag)
            fb, _ = force(robot_next, (u1 - robot_next) / lag)
            robot = robot_next
        a0, a1 = -fa * minv, -fb * minv
        x = x + h * v + h * h * (a0 / 3.0 + a1 / 6.0)
        v = v + 0.5 * h * (a0 + a1)
        hx[(i + 1) % size], hv[(i + 1) % size] = x, v
        if stop_after_separation:
            entered |= ca
            left |= entered & ~ca
        if (i + 1) % record_every == 0 and r < n_rec:
            ts[r], xs[r], vs[r], fs[r], cs[r] = (i + 1) * h, x, v, fb, ca
            r += 1
        if stop_after_separation and np.all(left):
            break
    return LoopRun(ts[:r], xs[:r], vs[:r], fs[:r], cs[:r])
