"""Master-side input: the operator's reference force ``f_m`` of seed 001 Eq. (1).

The seed's master is a 6-DOF haptic interface used in *joystick mode*: it does not move,
and the force the operator applies to its stylus, measured by an F/T sensor, becomes the
reference force ``f_m`` (``v_s,r = K_s G f_m``, Eq. 1). Three sources map to the same
6-vector ``f_m = [f; tau]`` [N, N m] in the master frame (x forward, as the slave's base):

* :func:`force_from_wrench` — a master-side F/T sensor (WrenchStamped through our driver);
* :func:`force_from_joy` — a sensor_msgs/Joy: each axis in ``[-1, 1]`` scaled to a force;
* :class:`ScriptedOperator` — a scripted profile of pushes, for tests and demos.

Plain Python, no rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hil_common.errors import ConfigError, InputError


def _deadband(f: np.ndarray, deadband) -> np.ndarray:
    """Zero the components whose magnitude is below ``deadband`` (scalar or 6-vector)."""
    return np.where(np.abs(f) < np.asarray(deadband, dtype=float), 0.0, f)


def force_from_wrench(wrench_sensor, rotation_sensor_in_master=None, deadband=0.0) -> np.ndarray:
    """Master F/T wrench (sensor frame) -> ``f_m`` in the master frame.

    ``rotation_sensor_in_master`` (3x3) rotates force and torque; the torque stays about the
    sensor origin (joystick mode: the stylus does not move, only the direction matters).
    Components below ``deadband`` [N, N m] are zeroed so sensor noise does not creep the
    slave. Raises ValueError on a malformed or non-finite wrench.
    """
    w = np.asarray(wrench_sensor, dtype=float).reshape(-1)
    if w.shape != (6,) or not np.all(np.isfinite(w)):
        raise InputError(f'master wrench must be 6 finite numbers, got {w.tolist()}')
    if rotation_sensor_in_master is not None:
        r = np.asarray(rotation_sensor_in_master, dtype=float)
        w = np.concatenate((r @ w[:3], r @ w[3:]))
    return _deadband(w, deadband)


def force_from_joy(axes: Sequence[float], axis_map: Sequence[int], scale, deadband=0.0) -> np.ndarray:
    """Joy axes -> ``f_m``: component ``i`` is ``scale[i] * axes[axis_map[i]]`` (``-1`` = unused).

    A negative ``scale`` inverts an axis. ``deadband`` is on the normalised axis value.
    Raises ValueError on a missing axis or a non-finite value.
    """
    axes = np.asarray(axes, dtype=float).reshape(-1)
    scale = np.broadcast_to(np.asarray(scale, dtype=float), (6,))
    out = np.zeros(6)
    for i, idx in enumerate(axis_map):
        if idx < 0:
            continue
        if idx >= axes.size:
            raise InputError(f'joy message has {axes.size} axes, axis_map[{i}] asks for axis {idx}')
        a = float(axes[idx])
        if not math.isfinite(a):
            raise InputError(f'joy axis {idx} is not finite')
        out[i] = 0.0 if abs(a) < deadband else scale[i] * max(-1.0, min(1.0, a))
    return out


@dataclass(frozen=True)
class Push:
    """One push of the scripted operator: ``force`` (6,) held over ``[start_s, end_s)``.

    The edges are raised-cosine ramps of ``ramp_s`` (0 = a step, as in seed 001's HILS with
    a step reference velocity), centred on ``start_s`` and ``end_s``, so the impulse of a
    push is exactly ``force * (end_s - start_s)`` whatever the ramp.
    """

    start_s: float
    end_s: float
    force: tuple
    ramp_s: float = 0.0


def _edge(t: float, t0: float, ramp: float) -> float:
    """0 -> 1 raised-cosine edge centred on ``t0`` (a step if ``ramp == 0``)."""
    if ramp <= 0.0:
        return 1.0 if t >= t0 else 0.0
    u = (t - t0) / ramp + 0.5
    if u <= 0.0:
        return 0.0
    if u >= 1.0:
        return 1.0
    return 0.5 - 0.5 * math.cos(math.pi * u)


class ScriptedOperator:
    """A scripted operator: ``f_m(t)`` as the sum of :class:`Push` es (seed 001 Fig. 15 style)."""

    def __init__(self, pushes: Sequence[Push]):
        for i, p in enumerate(pushes):
            if not (math.isfinite(p.start_s) and math.isfinite(p.end_s) and p.end_s > p.start_s):
                raise ConfigError(f'push {i}: needs start_s < end_s, got {p.start_s}, {p.end_s}')
            if len(p.force) != 6 or not all(math.isfinite(float(v)) for v in p.force):
                raise ConfigError(f'push {i}: force must be 6 finite numbers, got {p.force}')
            if p.ramp_s < 0.0 or p.ramp_s > (p.end_s - p.start_s):
                raise ConfigError(f'push {i}: ramp_s must be in [0, end_s - start_s], got {p.ramp_s}')
        self.pushes = list(pushes)
        self._forces = [np.asarray(p.force, dtype=float) for p in pushes]

    def __call__(self, t: float) -> np.ndarray:
        out = np.zeros(6)
        for p, f in zip(self.pushes, self._forces):
            w = _edge(t, p.start_s, p.ramp_s) - _edge(t, p.end_s, p.ramp_s)
            if w != 0.0:
                out += w * f
        return out

    def impulse(self) -> np.ndarray:
        """``integral f_m dt`` over all time (6,) — exact, whatever the ramps."""
        return sum((f * (p.end_s - p.start_s) for p, f in zip(self.pushes, self._forces)), np.zeros(6))

    @classmethod
    def velocity_steps(cls, steps: Sequence[tuple], k_s, g, ramp_s: float = 0.0) -> 'ScriptedOperator':
        """Pushes that produce reference velocities ``v_s,r = K_s G f_m`` (Eq. 1).

        ``steps`` = ``(start_s, end_s, v_ref (6,))``; ``k_s`` and ``g`` are the diagonals.
        """
        gain = np.asarray(k_s, dtype=float) * np.asarray(g, dtype=float)
        pushes = []
        for start, end, v in steps:
            v = np.asarray(v, dtype=float)
            if np.any((gain == 0.0) & (v != 0.0)):
                raise ConfigError('a requested reference velocity needs a non-zero K_s G on that axis')
            f = np.divide(v, gain, out=np.zeros(6), where=gain != 0.0)
            pushes.append(Push(float(start), float(end), tuple(f), ramp_s))
        return cls(pushes)
