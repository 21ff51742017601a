"""Deterministic lockstep runner of seed 001's delayed teleoperation (no DDS).

One loop at the controller period ``dt`` wires the same rule objects the ROS nodes use:

earth:  operator ``f_m(t)`` -> :class:`VirtualEnvironment` (Eqs. 4-10) -> uplink
orbit:  uplink (``f_m``, ``x_vir``, ``t_delay`` late) -> :class:`HeldCommand` ->
        :class:`SlaveLaw` (Eq. 3) -> :class:`SlaveArm` (Appendix A) <-> :class:`GripContact`
        (wrist wrench ``f_s``) <-> :class:`PayloadInTheLoop` (ClientAdmittance, zero nominal)
        -> downlink (``x_s``, ``f_s``) back to earth.

Per step, at time ``t_k = k dt``: the operator and the virtual environment advance, the
uplink message is sent; the orbit side takes whatever is due, measures ``f_s`` on the
current state, computes Eq. (3), then the arm and the payload advance together over
``dt`` with ``f_s`` held (a sampled sensor). Recorded arrays are per step (rows = samples).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hil_dynamics.rigid_body import RigidBody
from hil_teleop.coordinates import pose_from_x, x_from_pose
from hil_teleop.delay_line import DelayLine, HeldCommand
from hil_teleop.gains import TeleopGains
from hil_teleop.slave_law import SlaveLaw, SlaveSide
from hil_teleop.slave_side import GripContact, PayloadInTheLoop, SlaveArm
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


def run_teleop(config: TeleopConfig, operator: Callable[[float], np.ndarray], duration_s: float,
               uplink_tamper: Callable[[float], bool] | None = None) -> TeleopRun:
    """Run the closed loop for ``duration_s``. ``uplink_tamper(t)`` True suppresses the uplink send (outage tests)."""
    c = config
    dt = c.dt
    pose_grip_0 = pose_from_x(c.x_grip_0)
    payload = PayloadInTheLoop(RigidBody(c.payload_mass_kg, c.payload_inertia()), pose_grip_0)
    arm = SlaveArm(pose_grip_0, c.arm_droop, c.arm_tau_s)
    contact = GripContact(c.grip_contact_k, c.grip_contact_d)
    link = earth_and_link(c)
    venv, uplink, downlink, held = link.venv, link.uplink, link.downlink, link.held
    slave = SlaveSide(link.law, pose_grip_0)
    n = int(round(duration_s / dt))
    rec = {k: np.zeros((n, 6)) for k in ('f_m', 'x_vir', 'v_vir', 'f_vir', 'x_tv', 'v_s_r', 'v_s_c', 'v_s', 'x_s',
                                          'f_s', 'x_p', 'v_p', 'x_s_earth')}
    rec['x_s_earth'][:] = np.nan
    stale = np.zeros(n, dtype=bool)
    queue = np.zeros(n, dtype=int)
    t_axis = np.arange(n) * dt
    x_s_earth = np.full(6, np.nan)
    for k in range(n):
        t = t_axis[k]
        # -- earth: operator and virtual environment, uplink send
        f_m = np.asarray(operator(t), dtype=float)
        vs = venv.step(f_m)
        if uplink_tamper is None or not uplink_tamper(t):
            uplink.send(t, (f_m, vs.x_vir))
        # -- orbit: delivered commands, wrist wrench, Eq. (3)
        for t_send, msg in uplink.receive(t + 1e-9):
            held.update(t_send, msg)
        cmd_in = held.get(t)
        grip_pose, grip_v = payload.grip()
        f_s = contact.wrench(arm.pose, arm.v, grip_pose, grip_v)
        x_s = x_from_pose(arm.pose)
        f_m_d, x_vir_d = (None, None) if cmd_in is None else cmd_in
        cmd = slave.step(f_m_d, x_vir_d, x_s, f_s, dt, v_s_measured=arm.v)   # the velocity-commanded arm
        arm.step(cmd.v_s_c, f_s, dt)
        payload.step(f_s, dt)
        downlink.send(t, (x_s, f_s))
        for _, (xs_msg, _) in downlink.receive(t + 1e-9):
            x_s_earth = xs_msg
        for key, val in (('f_m', f_m), ('x_vir', vs.x_vir), ('v_vir', vs.v_vir), ('f_vir', vs.f_vir),
                         ('x_tv', vs.x_t), ('v_s_r', cmd.v_s_r), ('v_s_c', cmd.v_s_c), ('v_s', arm.v),
                         ('x_s', x_s), ('f_s', f_s), ('x_p', x_from_pose(grip_pose)), ('v_p', grip_v),
                         ('x_s_earth', x_s_earth)):
            rec[key][k] = val
        stale[k] = cmd.stale
        queue[k] = uplink.queue_length
    return TeleopRun(t_axis, rec['f_m'], rec['x_vir'], rec['v_vir'], rec['f_vir'], rec['x_tv'], rec['v_s_r'],
                     rec['v_s_c'], rec['v_s'], rec['x_s'], rec['f_s'], rec['x_p'], rec['v_p'], stale, queue,
                     rec['x_s_earth'], payload.momentum_world(), c.delay_s, dt)
