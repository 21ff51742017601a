"""Time-aligned tracking error of a motion table (plain Python, no rclpy).

The commanded pose stream and the measured joint states arrive with their own time
stamps. :class:`PoseHistory` keeps the recent commanded poses; the tracking error of a
measurement stamped ``t`` compares it with the command interpolated at the same ``t``
(geodesic interpolation ``g_a exp6(s log6(g_a^-1 g_b))``), so transport delays and
servo lag show up as error, which is what delay compensation must reduce.
"""

from __future__ import annotations

import bisect
import math
from collections import deque

import numpy as np
import pinocchio as pin


class PoseHistory:
    """The last ``horizon_s`` seconds of commanded poses, by time stamp."""

    def __init__(self, horizon_s: float = 2.0):
        self.horizon_s = horizon_s
        self._times: deque[float] = deque()
        self._poses: deque[pin.SE3] = deque()

    def add(self, t: float, pose: pin.SE3) -> None:
        if self._times and t <= self._times[-1]:
            return  # out-of-order or repeated stamps are ignored
        self._times.append(t)
        self._poses.append(pose)
        while self._times and self._times[0] < t - self.horizon_s:
            self._times.popleft()
            self._poses.popleft()

    @property
    def latest(self) -> float | None:
        """Stamp of the newest command (None when empty)."""
        return self._times[-1] if self._times else None

    def at(self, t: float) -> pin.SE3 | None:
        """Commanded pose at ``t`` (None before the first or after the last sample)."""
        if not self._times or t < self._times[0] or t > self._times[-1]:
            return None
        times = list(self._times)
        k = bisect.bisect_right(times, t)
        if k >= len(times):
            return self._poses[-1]
        t0, t1 = times[k - 1], times[k]
        a, b = self._poses[k - 1], self._poses[k]
        s = (t - t0) / (t1 - t0)
        return a * pin.exp6(pin.Motion(s * pin.log6(a.actInv(b)).vector))


class TrackingStats:
    """Running RMS, maximum and (over the last ``keep`` samples) percentiles of the
    position and angle tracking errors."""

    def __init__(self, keep: int = 20000):
        self.n = 0
        self._sq = np.zeros(2)
        self.max = np.zeros(2)
        self._recent: deque = deque(maxlen=keep)

    def add(self, position_error: float, angle_error: float) -> None:
        e = np.array([position_error, angle_error])
        self.n += 1
        self._sq += e * e
        self.max = np.maximum(self.max, e)
        self._recent.append(e)

    def percentile(self, q: float) -> np.ndarray:
        """``q``-th percentile (0..100) of [position, angle] errors over the kept samples."""
        return np.percentile(np.array(self._recent), q, axis=0) if self._recent else np.full(2, math.nan)

    @property
    def rms(self) -> np.ndarray:
        return np.sqrt(self._sq / self.n) if self.n else np.full(2, math.nan)
