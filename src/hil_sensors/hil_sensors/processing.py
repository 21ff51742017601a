"""Wrench processing chain of the F/T driver (plain Python, no rclpy).

Per record, in this order (every step except the scaling can be switched off):

1. **scale**: counts to N / Nm with the calibration (the *raw* wrench, sensor frame);
2. **overload check** on the raw wrench, per axis against its limit;
3. **software bias (tare)**: subtract a stored offset, the mean of N samples taken on request;
4. **tool gravity compensation**: subtract the tool's weight, ``f_g = m R_ws^T g`` and
   ``tau_g = c x f_g`` in the sensor frame, with ``R_ws`` from the latest pose input;
5. **low-pass filter**: Butterworth, order 1 or 2, designed for the sensor's output rate (the
   declared one, or the rate :class:`RateMeter` measures on the stream);
6. **dead band** (off by default): :func:`soft_deadband` per axis, so an admittance does not
   integrate sensor noise into a random-walk drift;
7. **frame transform**: a constant change of frame, ``F_target = Ad_{g^-1}^T F_sensor`` with
   ``g = pose_sensor_in_target`` (the convention of :mod:`hil_dynamics.se3`), applied to
   the published sample only: it is linear and constant, so it commutes with the filter.

The tare averages the wrench *after* gravity compensation (bias = sensor offset only), so
it stays valid when the tool is re-oriented. The hot path uses plain floats: at 7 kHz a
numpy call per step would cost more than the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import sub
from typing import Sequence

import numpy as np

from hil_dynamics.se3 import cross3_values, pose_from_quaternion
from hil_common.errors import ConfigError, InputError
from hil_common.finite import all_finite  # noqa: F401 - also hil_sensors' name for it (ft_driver)

AXES = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
ZERO6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def quaternion_to_matrix(xyzw: Sequence[float]) -> np.ndarray:
    """Rotation matrix of a quaternion ``[x, y, z, w]`` (ROS order); normalises it.

    The stack's one implementation is :func:`hil_dynamics.se3.pose_from_quaternion`.
    """
    return pose_from_quaternion(xyzw).rotation


# --------------------------------------------------------------------------- filter

class LowPassFilter:
    """Butterworth low-pass of order 1 or 2 on six axes (bilinear transform, pre-warped).

    Transposed direct form II; :meth:`reset` starts it in steady state at a value so
    enabling it, or resetting a fault, produces no transient from zero.
    """

    def __init__(self, cutoff_hz: float, sample_rate_hz: float, order: int = 2):
        if order not in (1, 2):
            raise ConfigError(f'filter order must be 1 or 2, got {order}')
        if not (0.0 < cutoff_hz < 0.5 * sample_rate_hz):
            raise ConfigError(f'cut-off {cutoff_hz} Hz must be in (0, {0.5 * sample_rate_hz}) Hz (Nyquist)')
        self.cutoff_hz = float(cutoff_hz)
        self.sample_rate_hz = float(sample_rate_hz)
        self.order = order
        k = math.tan(math.pi * cutoff_hz / sample_rate_hz)
        if order == 1:
            b0 = k / (1.0 + k)
            self.b = (b0, b0, 0.0)
            self.a = (1.0, (k - 1.0) / (k + 1.0), 0.0)
        else:
            r2 = math.sqrt(2.0)
            norm = 1.0 / (1.0 + r2 * k + k * k)
            b0 = k * k * norm
            self.b = (b0, 2.0 * b0, b0)
            self.a = (1.0, 2.0 * (k * k - 1.0) * norm, (1.0 - r2 * k + k * k) * norm)
        self.primed = False
        self._z1 = [0.0] * 6
        self._z2 = [0.0] * 6

    def reset(self, value: Sequence[float] | None = None) -> None:
        """Forget the history; with ``value`` start in steady state there."""
        if value is None:
            self.primed = False
            self._z1 = [0.0] * 6
            self._z2 = [0.0] * 6
            return
        b0, _, b2 = self.b
        a2 = self.a[2]
        self._z1 = [(1.0 - b0) * v for v in value]
        self._z2 = [(b2 - a2) * v for v in value]
        self.primed = True

    def step(self, x: Sequence[float]) -> list[float]:
        if not self.primed:
            self.reset(x)
        b0, b1, b2 = self.b
        _, a1, a2 = self.a
        z1, z2 = self._z1, self._z2
        y = [0.0] * 6
        for i in range(6):
            xi = x[i]
            yi = b0 * xi + z1[i]
            z1[i] = b1 * xi - a1 * yi + z2[i]
            z2[i] = b2 * xi - a2 * yi
            y[i] = yi
        return y

    def gain(self, frequency_hz: float) -> float:
        """|H| at a frequency (for tests and the start-up report)."""
        zi = np.exp(-1j * 2.0 * math.pi * frequency_hz / self.sample_rate_hz)
        num = self.b[0] + self.b[1] * zi + self.b[2] * zi * zi
        den = self.a[0] + self.a[1] * zi + self.a[2] * zi * zi
        return float(abs(num / den))

    def describe(self) -> str:
        return f'Butterworth order {self.order}, cut-off {self.cutoff_hz:g} Hz at {self.sample_rate_hz:g} Hz'


# --------------------------------------------------------------------------- stream rate

class RateMeter:
    """The stream's sample rate, measured: sequence numbers advanced per second of arrival time.

    Counting sequence numbers (not received records) makes lost datagrams no error, and the
    kernel receive times make it insensitive to how late the driver reads them. A sender that
    stalls and then catches up in a burst only *delays* records, so the rate is taken between
    the two least-delayed records of the first and the last third of the window (the lower
    envelope of arrival time versus sequence number). :meth:`add` returns the rate once,
    when ``window_s`` and ``min_records`` have been covered by a stretch without a gap longer
    than ``max_gap_s`` (a pause restarts the window)."""

    def __init__(self, window_s: float = 0.25, min_records: int = 20, max_gap_s: float = 0.05):
        self.window_ns = int(window_s * 1e9)
        self.min_records = int(min_records)
        self.max_gap_ns = int(max_gap_s * 1e9)
        self.rate_hz: float | None = None
        self.reset()

    def reset(self) -> None:
        """Restart the current window (the stream restarted)."""
        self._points: list[tuple[int, int]] = []   # (sequence numbers since the first, arrival ns)
        self._seq0 = 0

    def restart(self) -> None:
        """Forget the measured rate too: measure again."""
        self.rate_hz = None
        self.reset()

    def add(self, seq: int, stamp_ns: int) -> float | None:
        if self.rate_hz is not None:
            return None
        pts = self._points
        if not pts or not 0 <= stamp_ns - pts[-1][1] <= self.max_gap_ns:
            self._seq0 = seq
            self._points = [(0, stamp_ns)]
            return None
        pts.append(((seq - self._seq0) & 0xFFFFFFFF, stamp_ns))
        if stamp_ns - pts[0][1] < self.window_ns or len(pts) < self.min_records or pts[-1][0] == 0:
            return None
        k_end, t_end = pts[-1]
        rough = k_end / ((t_end - pts[0][1]) * 1e-9)
        third = len(pts) // 3

        def least_delayed(points):
            return min(points, key=lambda p: p[1] - p[0] / rough * 1e9)
        (ka, ta), (kb, tb) = least_delayed(pts[:third]), least_delayed(pts[-third:])
        self.rate_hz = (kb - ka) / ((tb - ta) * 1e-9) if tb > ta and kb > ka else rough
        self._points = []
        return self.rate_hz


# --------------------------------------------------------------------------- tare

class Tare:
    """Software tare: the mean of N samples (the sensor's offset), subtracted afterwards.

    The ROS interface calls it ``software_bias`` (parameters) and ``ft/tare`` (service)."""

    def __init__(self) -> None:
        self.offset = list(ZERO6)
        self.active = False
        self.count = 0              # tares completed since start
        self._target = 0
        self._sum = [0.0] * 6
        self._n = 0

    @property
    def collecting(self) -> bool:
        return self._target > 0

    def start(self, samples: int) -> None:
        if samples < 1:
            raise ConfigError('a tare needs at least one sample')
        self._target = int(samples)
        self._sum = [0.0] * 6
        self._n = 0

    def cancel(self) -> None:
        self._target = 0

    def add(self, sample: Sequence[float]) -> bool:
        """Feed one sample while collecting; True when the tare has just completed."""
        if not self._target:
            return False
        s = self._sum
        for i in range(6):
            s[i] += sample[i]
        self._n += 1
        if self._n >= self._target:
            self.offset = [v / self._n for v in s]
            self.active = True
            self.count += 1
            self._target = 0
            return True
        return False

    def clear(self) -> None:
        self.offset = list(ZERO6)
        self.active = False
        self._target = 0


# --------------------------------------------------------------------------- gravity

class ToolGravity:
    """Weight of the tool carried by the sensor, expressed in the sensor frame.

    ``mass_kg`` and ``com_in_sensor`` (m) describe the tool; ``gravity`` is the gravity
    vector in the frame the pose input is given in (the robot base / lab world);
    ``rotation_sensor_in_flange`` is the constant mounting rotation (quaternion xyzw) of the
    sensor on the frame the pose input reports (e.g. the flange).
    """

    def __init__(self, mass_kg: float, com_in_sensor: Sequence[float],
                 gravity: Sequence[float] = (0.0, 0.0, -9.80665),
                 rotation_sensor_in_flange: Sequence[float] = (0.0, 0.0, 0.0, 1.0)):
        self.mass_kg = float(mass_kg)
        self.com = np.asarray(com_in_sensor, dtype=float)
        self.gravity = np.asarray(gravity, dtype=float)
        self.rotation_sensor_in_flange = quaternion_to_matrix(rotation_sensor_in_flange)
        self.wrench: tuple[float, ...] = ZERO6
        self.has_orientation = False
        self.updates = 0

    def set_flange_orientation(self, xyzw: Sequence[float]) -> None:
        """Orientation of the pose input's frame (flange) in the gravity frame."""
        rotation_sensor_in_world = quaternion_to_matrix(xyzw) @ self.rotation_sensor_in_flange
        self.set_sensor_rotation(rotation_sensor_in_world)

    def set_sensor_rotation(self, rotation_sensor_in_world: np.ndarray) -> None:
        """The sensor's orientation in the gravity frame (``R_ws``): ``f_g = m R_ws^T g``."""
        force = (self.mass_kg * (np.asarray(rotation_sensor_in_world).T @ self.gravity)).tolist()
        # cross3's, not numpy.cross (~50 us on 3-vectors with its axis handling: 15 % of a TwinHilMission step), on
        # Python floats (the same products and differences as on NumPy scalars, a third of the time)
        w = (*force, *cross3_values(self.com.tolist(), force))
        if not all_finite(w):
            raise InputError('gravity wrench is not finite')
        self.wrench = w
        self.has_orientation = True
        self.updates += 1

    def describe(self) -> str:
        return (f'tool {self.mass_kg:g} kg, CoM {self.com.tolist()} m in sensor frame, '
                f'gravity {self.gravity.tolist()} m/s^2')


# --------------------------------------------------------------------------- frame transform

class WrenchTransform:
    """Constant change of frame of a wrench: from the sensor frame to a target frame.

    ``translation`` and ``rotation_xyzw`` give ``pose_sensor_in_target`` (the sensor
    origin and axes in target coordinates). ``f_t = R f_s``, ``tau_t = R tau_s + p x (R f_s)``,
    i.e. ``hil_dynamics.se3.transform_wrench(pose_sensor_in_target, F_s)``.
    """

    def __init__(self, translation: Sequence[float], rotation_xyzw: Sequence[float]):
        pose_sensor_in_target = pose_from_quaternion(rotation_xyzw, translation)
        r, p = pose_sensor_in_target.rotation, pose_sensor_in_target.translation
        # Ad_{g^-1}^T as a 6x6 matrix (Pinocchio's dual action), applied with plain floats per sample.
        m = pose_sensor_in_target.dualAction
        self.matrix = m
        self._rows = [tuple(float(v) for v in row) for row in m]
        self.translation = p
        self.rotation = r

    def apply(self, w: Sequence[float]) -> list[float]:
        return [sum(r[j] * w[j] for j in range(6)) for r in self._rows]

    def describe(self) -> str:
        return f'pose_sensor_in_target p={self.translation.tolist()} R={np.round(self.rotation, 6).tolist()}'


# --------------------------------------------------------------------------- the chain

class WrenchChain:
    """One F/T sensor's processing, steps 3-7 of the module docstring, in this order:
    tare -> tool gravity -> low-pass filter -> dead band -> frame transform.

    Pure (no socket, no clock): :class:`hil_sensors.ft_driver.FtDriver` feeds it the scaled
    records of the Net F/T, and the lab-twin runners (``hil_bringup.runners.twin_validation``) the
    twin's sensor samples. Each step is optional (``None``); the tare is always there and is
    subtracted when ``tare_enabled``. The tare collects the gravity-compensated wrench (the
    sensor offset only) and :meth:`process` computes ``(raw - f_g) - offset``.
    """

    def __init__(self, gravity: ToolGravity | None = None, low_pass: LowPassFilter | None = None,
                 deadband: Sequence[float] | None = None, transform: WrenchTransform | None = None,
                 tare_enabled: bool = True):
        self.tare = Tare()
        self.tare_enabled = bool(tare_enabled)
        self.gravity = gravity
        self.filter = low_pass
        self.deadband = tuple(float(v) for v in deadband) if deadband is not None else None
        self.transform = transform

    def process(self, raw: Sequence[float]) -> list[float] | None:
        """The processed wrench in the sensor frame, or None if it is not finite (the filter
        restarts then). While a tare collects, the sample is added to it; when the tare
        completes, the filter restarts at the tared value (no transient from the old offset)."""
        if len(raw) != 6:              # (map below would stop at the shorter of raw and g: checked first)
            raise InputError(f'a wrench has 6 values, got {len(raw)}')
        g = self.gravity.wrench if self.gravity is not None else ZERO6
        comp = list(map(sub, raw, g))
        tare, filt = self.tare, self.filter
        if tare.collecting and tare.add(comp) and filt is not None:
            filt.reset()
        if self.tare_enabled and tare.active:
            comp = list(map(sub, comp, tare.offset))
        out = filt.step(comp) if filt is not None else comp
        if not all_finite(out):
            if filt is not None:
                filt.reset()
            return None
        if self.deadband is not None:
            out = soft_deadband(out, self.deadband)
        return out

    def in_target_frame(self, processed: Sequence[float]) -> list[float]:
        """The last step: the processed wrench in the target frame (unchanged without a transform)."""
        return self.transform.apply(processed) if self.transform is not None else list(processed)


# --------------------------------------------------------------------------- safety

@dataclass
class FaultLatch:
    """A latched fault: the first cause is kept until :meth:`reset`."""

    active: bool = False
    reason: str = ''
    detail: str = ''
    since_ns: int = 0
    count: int = 0
    by_reason: dict = field(default_factory=dict)

    def trip(self, reason: str, detail: str, now_ns: int) -> bool:
        """Latch (if not latched yet); returns True when this call latched it."""
        self.by_reason[reason] = self.by_reason.get(reason, 0) + 1
        if self.active:
            return False
        self.active = True
        self.reason = reason
        self.detail = detail
        self.since_ns = now_ns
        self.count += 1
        return True

    def reset(self) -> None:
        self.active = False
        self.reason = ''
        self.detail = ''


def overload_axis(raw: Sequence[float], limits: Sequence[float]) -> int:
    """Index of the first axis whose magnitude exceeds its limit, or -1."""
    for i in range(6):
        if abs(raw[i]) > limits[i]:
            return i
    return -1


def soft_deadband(values: Sequence[float], widths: Sequence[float]) -> list[float]:
    """Per axis: zero inside ``[-width, width]``, shifted towards zero by ``width`` outside.

    Continuous (no jump at the edge), so a force that grows through the band is passed on
    smoothly, less the band. It keeps white sensor noise out of an admittance, which would
    otherwise integrate it into a random-walk drift; choose a width of several noise standard
    deviations. A width of 0 passes the axis unchanged.
    """
    return [0.0 if abs(v) <= w else (v - w if v > 0 else v + w) for v, w in zip(values, widths)]


