"""Command handling of the twin's robots, as ros2_control controllers and the robot's servo see it.

Plain Python, no MuJoCo and no rclpy, so each piece is tested on its own:

* :func:`validate_command` -- the checks ros2_control's forward controllers apply (length
  equals the number of joints; we also refuse non-finite values);
* :class:`TrajectoryFollower` -- a joint-trajectory controller: linear interpolation from
  the reference at receipt through the points (``time_from_start``), holding the last;
* :class:`DelayLine` -- command transport delay (e.g. 4 ms of KUKA RSI);
* :class:`FirstOrderServo` -- the robot's finite position-loop bandwidth:
  ``q_f' = 2 pi f_c (q_ref - q_f)``, discretised exactly for a held input.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from hil_common.errors import ConfigError, Unreachable
from hil_common.finite import all_finite


class CommandRejected(Unreachable):
    """A command a ros2_control controller would refuse; the message says why."""


_F64 = np.dtype(np.float64)


def validate_command(values, n: int) -> np.ndarray:
    """``values`` as a float array of length ``n``, or :class:`CommandRejected`.

    A float64 vector of length ``n`` (what the runners pass, once per robot and step) is checked
    without NumPy calls (:func:`hil_common.finite.all_finite`); anything else takes the full check."""
    if type(values) is np.ndarray and values.dtype is _F64 and values.shape == (n,) and all_finite(values):
        return values
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise CommandRejected(f'not numeric: {exc}') from None
    if arr.shape != (n,):
        raise CommandRejected(f'{arr.size} values for {n} joints')
    if not np.all(np.isfinite(arr)):
        raise CommandRejected('non-finite value')
    return arr


@dataclass(frozen=True)
class TrajectoryPoint:
    time_from_start: float
    positions: np.ndarray


def validate_trajectory(joint_names: Sequence[str], points, expected_names: Sequence[str]) -> list[TrajectoryPoint]:
    """Reorder to ``expected_names`` and check a trajectory as joint_trajectory_controller does.

    ``points``: sequence of ``(time_from_start_s, positions)``. Rejected: unknown or missing
    joints, no points, non-finite values, times not strictly increasing or negative.
    """
    names = list(joint_names)
    if sorted(names) != sorted(expected_names) or len(set(names)) != len(names):
        raise CommandRejected(f'joint names {names} do not match {list(expected_names)}')
    if not points:
        raise CommandRejected('trajectory has no points')
    order = [names.index(name) for name in expected_names]
    out, last = [], -math.inf
    for k, (t, positions) in enumerate(points):
        t = float(t)
        if not math.isfinite(t) or t < 0 or t <= last:
            raise CommandRejected(f'point {k}: time_from_start {t} is not increasing')
        arr = validate_command(positions, len(names))[order]
        out.append(TrajectoryPoint(t, arr))
        last = t
    return out


class TrajectoryFollower:
    """Reference of a joint-trajectory controller; replaces the active trajectory on receipt."""

    def __init__(self, q_initial):
        self._hold = np.array(q_initial, dtype=float)
        self._start_time = 0.0
        self._start = self._hold.copy()
        self._points: list[TrajectoryPoint] = []

    def set_hold(self, q) -> None:
        self._hold = np.array(q, dtype=float)
        self._points = []

    def start(self, t_now: float, q_from, points: list[TrajectoryPoint]) -> None:
        self._start_time = float(t_now)
        self._start = np.array(q_from, dtype=float)
        self._points = list(points)

    def sample(self, t: float) -> np.ndarray:
        if not self._points:
            return self._hold
        tau = t - self._start_time
        t_prev, q_prev = 0.0, self._start
        for point in self._points:
            if tau < point.time_from_start:
                s = (tau - t_prev) / (point.time_from_start - t_prev)
                return q_prev + max(0.0, s) * (point.positions - q_prev)
            t_prev, q_prev = point.time_from_start, point.positions
        self._hold = self._points[-1].positions.copy()
        self._points = []
        return self._hold


class DelayLine:
    """Items become due ``delay`` seconds after they are pushed (stable order for equal times)."""

    def __init__(self, delay: float):
        if not (math.isfinite(delay) and delay >= 0):
            raise ConfigError('delay must be >= 0')
        self.delay = float(delay)
        self._heap: list = []
        self._count = 0

    def push(self, t_now: float, item: Any) -> None:
        heapq.heappush(self._heap, (t_now + self.delay, self._count, item))
        self._count += 1

    def pop_due(self, t_now: float, eps: float = 1e-9) -> list:
        out = []
        while self._heap and self._heap[0][0] <= t_now + eps:
            out.append(heapq.heappop(self._heap)[2])
        return out

    def __len__(self) -> int:
        return len(self._heap)


class FirstOrderServo:
    """Finite position-loop bandwidth: ``q_f' = w_c (q_ref - q_f)``, ``w_c = 2 pi bandwidth_hz``.

    Exact zero-order-hold discretisation: ``q_f <- q_ref + (q_f - q_ref) exp(-w_c dt)``.
    ``velocity`` is the filtered reference's rate over the last step.
    """

    def __init__(self, q_initial, bandwidth_hz: float, dt: float):
        self.position = np.array(q_initial, dtype=float)
        self.velocity = np.zeros_like(self.position)
        self.decay = math.exp(-2.0 * math.pi * bandwidth_hz * dt)
        self.dt = dt

    def update(self, q_ref) -> np.ndarray:
        new = q_ref + (self.position - q_ref) * self.decay
        self.velocity = (new - self.position) / self.dt
        self.position = new
        return self.position
