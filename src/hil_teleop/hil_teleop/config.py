"""A seed 001 teleoperation run's configuration, its records, and the earth side and link it builds.

:class:`TeleopConfig` is everything a run needs (the scenario YAML fills it,
:mod:`hil_teleop.scenario`); :class:`TeleopRun` holds a run's per-step records and
:func:`mse` is Eq. (11) over them; :func:`earth_and_link` builds, from a config, what every
runner builds the same way: the virtual environment, the slave law and both delay lines.
The runners themselves (ideal and with the lab twin) are in ``hil_bringup.runners``
(``teleop``, ``teleop_twin``), which hil_teleop does not import. Plain Python, no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hil_teleop.delay_line import DelayLine, HeldCommand
from hil_teleop.gains import TeleopGains
from hil_teleop.slave_law import SlaveLaw
from hil_teleop.virtual import VirtualContact, VirtualEnvironment, VirtualPayload


def box_inertia(mass_kg: float, size_m) -> np.ndarray:
    """Principal inertia of a uniform box ``a x b x c`` [kg m^2] (used for the payload models)."""
    a, b, c = (float(s) for s in size_m)
    return mass_kg / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


@dataclass
class TeleopConfig:
    """Everything a run needs. Defaults are our stand-ins for seed 001's Tables 1-3 (not in the text)."""

    payload_mass_kg: float = 3000.0
    payload_size_m: tuple = (2.0, 2.0, 3.0)
    virtual_mass_factor: float = 1.0          # virtual payload mass / true mass (modeling error, item 5)
    gains: TeleopGains = field(default_factory=TeleopGains)
    virtual_contact_k: tuple = (2e4, 2e4, 2e4, 2e3, 2e3, 2e3)
    virtual_contact_d: tuple = (2e2, 2e2, 2e2, 2e1, 2e1, 2e1)
    grip_contact_k: tuple = (2e4, 2e4, 2e4, 2e3, 2e3, 2e3)
    grip_contact_d: tuple = (2e2, 2e2, 2e2, 2e1, 2e1, 2e1)
    arm_droop: tuple = (1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4)
    arm_tau_s: float = 0.02
    delay_s: float = 0.0
    jitter_s: float = 0.0
    drop_probability: float = 0.0
    command_timeout_s: float = 0.5
    dt: float = 0.002
    x_grip_0: tuple = (1.0, 0.0, 0.5, 0.0, 0.0, 0.0)  # grip (= end effector) in the slave base [m, rad]
    seed: int = 0

    def payload_inertia(self, factor: float = 1.0) -> np.ndarray:
        return box_inertia(self.payload_mass_kg * factor, self.payload_size_m)


@dataclass
class TeleopRun:
    """Per-step records (orbit and earth quantities on the same time axis)."""

    t: np.ndarray
    f_m: np.ndarray           # operator force on earth at t
    x_vir: np.ndarray         # virtual arm on earth at t
    v_vir: np.ndarray
    f_vir: np.ndarray         # virtual contact wrench on earth at t
    x_t_virtual: np.ndarray   # virtual payload on earth at t
    v_s_r: np.ndarray         # delayed reference velocity in orbit (Eq. 1 of the delivered f_m)
    v_s_c: np.ndarray         # Eq. (3)
    v_s: np.ndarray           # slave velocity (after the step)
    x_s: np.ndarray           # slave end effector at t (before the step)
    f_s: np.ndarray           # wrist wrench at t
    x_payload: np.ndarray     # payload-in-the-loop grip pose at t
    v_payload: np.ndarray     # its world-aligned velocity at t
    stale: np.ndarray         # the slave saw a stale command at t
    uplink_queue: np.ndarray
    x_s_on_earth: np.ndarray  # slave position as displayed on earth (NaN until the first delivery)
    payload_momentum_end: np.ndarray
    delay_s: float
    dt: float

    def delay_steps(self) -> int:
        return int(round(self.delay_s / self.dt))

    def aligned(self, earth: np.ndarray, orbit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``earth(t - t_delay)`` and ``orbit(t)`` on the orbit time axis (the seed's Figs. 16-17 shift)."""
        n = self.delay_steps()
        return (earth[: len(earth) - n], orbit[n:]) if n else (earth, orbit)


def mse(force: np.ndarray) -> float:
    """Eq. (11): ``(1/N) sum ||f_s||^2`` over the samples given (force rows, N)."""
    force = np.asarray(force, dtype=float)
    return float(np.mean(np.sum(force * force, axis=1)))


@dataclass
class EarthAndLink:
    """What both runners (ideal and twin) build the same way: the earth side and the link."""

    venv: VirtualEnvironment      # virtual arm and payload, Eqs. (4)-(10)
    law: SlaveLaw                 # Eq. (2)/(3)
    uplink: DelayLine             # earth -> orbit: (f_m, x_vir)
    downlink: DelayLine           # orbit -> earth: (x_s, f_s)
    held: HeldCommand             # the orbit side's latest uplink command, with its staleness timeout


def earth_and_link(c: TeleopConfig) -> EarthAndLink:
    """The virtual environment from ``x_grip_0``, the slave law and both delay lines of a run."""
    dt, gains = c.dt, c.gains
    vpayload = VirtualPayload(c.payload_mass_kg * c.virtual_mass_factor, c.payload_inertia(c.virtual_mass_factor),
                              x0=np.asarray(c.x_grip_0, dtype=float))
    venv = VirtualEnvironment(gains, vpayload, VirtualContact(c.virtual_contact_k, c.virtual_contact_d), dt)
    capacity = int(c.delay_s / dt) + 1000
    uplink = DelayLine(c.delay_s, capacity=capacity, jitter_s=c.jitter_s, drop_probability=c.drop_probability,
                       seed=c.seed)
    downlink = DelayLine(c.delay_s, capacity=capacity, jitter_s=c.jitter_s, drop_probability=c.drop_probability,
                         seed=c.seed + 1)
    return EarthAndLink(venv, SlaveLaw(gains), uplink, downlink, HeldCommand(c.delay_s, c.command_timeout_s))
