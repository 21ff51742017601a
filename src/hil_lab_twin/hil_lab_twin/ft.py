"""Simulated F/T sensor readings: anti-aliased samples at the sensor rate, bias and white noise.

Convention (``hil_dynamics.se3``): ``wrench_sensor_in_sensor = [f; tau]`` is the wrench the
tool side (payload) exerts on the sensor, expressed in the sensor frame about its origin.
A payload of mass m at rest therefore reads its weight (``f = R^T m g``), and a force F
pushing on the payload adds F -- what an ATI sensor reports before tool compensation.

MuJoCo's ``force``/``torque`` sensors at a site on the payload's root body give the
interaction between that body's subtree and its parent, in the site frame; the sign
relating the two conventions is fixed in :data:`MUJOCO_SIGN` and checked by a test
against the payload's weight.
"""

from __future__ import annotations

import numpy as np

from hil_lab_twin.scene import FtConfig

MUJOCO_SIGN = -1.0
#: standard normals a channel draws at a time (the same stream as six per sample: NumPy fills a block in order)
NOISE_ROWS = 256


class FtChannel:
    """One F/T sensor: turns the true wrench into the sampled, biased, noisy reading.

    ``sample(t, wrench_true)`` is called every simulation step; a new reading is taken
    when ``t`` reaches the next sample instant (``1/rate_hz`` apart), otherwise the last
    reading is held. The noise generator is seeded (deterministic runs).

    A reading is the mean of the true wrenches of the simulation steps since the previous one
    (a box-car over one sample period, as a real sensor's anti-aliasing front end). With a
    physics step shorter than the sample period this matters: MuJoCo's force sensor takes the
    accelerations of the step's forward pass, and a position-servoed arm's joint accelerations
    alternate from step to step around their mean. Read every fourth 0.25 ms step, the CISAS
    arm's probe moving at a constant 0.15 m/s read up to 0.08-0.24 N of that alternation as a
    steady force (the flange's finite-differenced acceleration was zero); the mean over the four
    steps read 5e-4 N. With one step per sample (the Envisat twin: 1 ms steps, 1 kHz) nothing changes.
    """

    def __init__(self, name: str, config: FtConfig, step_s: float | None = None):
        self.name = name
        self.config = config
        self.period = 1.0 / config.rate_hz
        # ``step_s``: the physics step that calls :meth:`sample`. A sample instant is reached within half a
        # step: MuJoCo adds its time step to ``time`` in floating point, and at 0.25 ms the sum drifts from
        # k * 0.25 ms by more than 1e-12 s after about 10 s (then a 1 kHz channel skipped one sample at
        # 10.267 s and took two at 18.868 s, and a twin waiting for that sample stalled).
        self._tolerance = 0.5 * step_s if step_s else 1e-12
        self._rng = np.random.default_rng(config.seed)
        self._std = np.array([config.noise_force_std] * 3 + [config.noise_torque_std] * 3)
        self._bias = np.array(config.bias, dtype=float)
        self._noise, self._noise_i = np.empty((NOISE_ROWS, 6)), NOISE_ROWS     # drawn when first needed
        self._next = 0.0
        self._sum = np.zeros(6)
        self._count = 0
        self.wrench = np.zeros(6)
        self.stamp = 0.0
        self.sequence = 0

    def sample(self, t: float, wrench_true_in_sensor) -> bool:
        self._sum += np.asarray(wrench_true_in_sensor, dtype=float)
        self._count += 1
        if t + self._tolerance < self._next:
            return False
        if self._noise_i == NOISE_ROWS:
            self._rng.standard_normal(out=self._noise)
            self._noise_i = 0
        noise = self._noise[self._noise_i] * self._std
        self._noise_i += 1
        # the mean of one sample is the sample (x / 1 == x exactly): no division at one step per sample
        mean = self._sum if self._count == 1 else self._sum / self._count
        self.wrench = mean + self._bias + noise
        self._sum.fill(0.0)
        self._count = 0
        self.stamp = t
        self.sequence += 1
        self._next += self.period
        if self._next <= t:  # after a pause, resynchronise instead of bursting
            self._next = t + self.period
        return True

    def read(self) -> np.ndarray:
        """The latest reading ``wrench_sensor_in_sensor`` (copy)."""
        return self.wrench.copy()
