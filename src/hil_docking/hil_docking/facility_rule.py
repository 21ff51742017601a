"""One tick of the docking facility (seed 003 Fig. 5): the rule shared by the lockstep mission
runner (:mod:`hil_docking.mission`) and the ROS node (:mod:`hil_docking.docking_facility_node`).

Inputs per tick: the facility's measured contact force ``f_L`` along the docking axis
(compressive positive; from the F/T sensor in the lab, from the lumped model in the lockstep
runner) and the robot's measured mock-up position in the LVLH-aligned lab axes (its velocity
is differenced here when not given). The rule adds the virtual force ``f_V = k_V x + b_V x'``
(Eqs. 19-22, only while the robot's interface penetrates the target's, ``x = p . n > 0``),
advances the CW relative admittance of the relative coordinate (equivalent mass) under
``-(f_L + f_V) n`` held over the tick, applies the planned burns of the two-impulse approach,
and returns the commanded relative state. It also keeps the phase, the impulse (Eq. 30) and
the first-contact state. ``eps`` is designed for the loop delay plus half a tick (the hold).

The robot side of the loop, shared by the lockstep runner and the live graph:
:class:`EmulatedRobot` is an ideal robot with the pure loop delay and the facility's lumped
contact (it stands in for the lab in ``cisas_docking.launch.py``), and :class:`StampedSamples`
picks, for a step at time ``t``, the latest measured sample stamped at or before ``t`` and
counts the steps whose sample did not arrive in time (deadline misses).
Plain Python; no rclpy.
"""

from __future__ import annotations

import math

import numpy as np

from collections import deque

from hil_docking.contact import equivalent_mass, virtual_gains
from hil_docking.cw import CWModel, CWRelativeAdmittance, two_impulse_transfer
from hil_docking.designer import m_min_exact
from hil_docking.scenario import DockingScenario
from hil_common.errors import ConfigError, InputError

APPROACH, CONTACT, POST_IMPACT = 'approach', 'contact', 'post_impact'
#: Penetrations up to this are the rounding of the arrival at the port (the transfer reaches it to
#: ~1e-10 m), not contact: at 5e-14 m the rate differenced across the braking burn (the approach
#: speed, 3 times the closing speed) would otherwise add a spurious damping impulse.
CONTACT_TOLERANCE_M = 1e-9


def in_contact(penetration_m: float) -> bool:
    """The interfaces touch: ``x = dr . n`` above :data:`CONTACT_TOLERANCE_M`."""
    return penetration_m > CONTACT_TOLERANCE_M


class DockingFacility:
    def __init__(self, sc: DockingScenario, compensation: str | None = None):
        self.scenario = sc
        self.compensation = sc.compensation if compensation is None else compensation
        self.cw = CWModel.at_altitude(sc.altitude_m)
        self.axis = sc.docking_axis_lvlh
        self.transfer = two_impulse_transfer(self.cw, sc.start_lvlh_m, np.zeros(3), sc.approach_duration_s,
                                             vf=sc.closing_speed_m_s * self.axis)
        self.mass_kg = equivalent_mass(sc.chaser_mass_kg, sc.target_mass_kg)
        self.lumped = sc.facility.lumped
        self.dt = sc.control_period_s
        self.effective_delay_s = sc.loop_delay_s + 0.5 * self.dt
        self.gains = virtual_gains(sc.orbital_contact, self.lumped, self.effective_delay_s, self.mass_kg,
                                   compensation=self.compensation)
        applied = self.gains.applied(self.lumped)
        self.m_min_kg = m_min_exact(self.effective_delay_s, applied.stiffness_n_m, applied.damping_ns_m)
        if not self.mass_kg > self.m_min_kg:
            raise ConfigError(f'equivalent mass {self.mass_kg:g} kg is below the stable minimum {self.m_min_kg:.4g} kg '
                             f'of this facility (delay {self.effective_delay_s * 1e3:g} ms)')
        self.admittance = CWRelativeAdmittance(self.cw, self.mass_kg, np.concatenate([sc.start_lvlh_m, np.zeros(3)]))
        self.admittance.apply_impulse(self.transfer.dv1)
        self.burns = [(0.0, self.transfer.dv1.copy())]
        self.n_approach = int(round(sc.approach_duration_s / self.dt))
        self.k = 0
        self.state_lvlh = self.admittance.state_lvlh
        self.phase = APPROACH
        self.impulse_n_s = 0.0
        self.contact_start_s: float | None = None
        self.separation_s: float | None = None
        self.first_contact_state: np.ndarray | None = None
        self.separation_state: np.ndarray | None = None
        self.closing_speed_in_m_s: float | None = None
        self._last_robot_position: np.ndarray | None = None
        self._last_sample_time_s: float | None = None
        self._last_robot_velocity = np.zeros(3)
        self.last_penetration_m = 0.0
        self.last_force_virtual_n = 0.0

    @property
    def t(self) -> float:
        return self.k * self.dt

    def begin_tick(self) -> np.ndarray:
        """Apply a burn due at this tick (the braking burn at the end of the approach); returns the state."""
        if self.k == self.n_approach and len(self.burns) == 1:
            self.admittance.apply_impulse(self.transfer.dv2)
            self.burns.append((self.t, self.transfer.dv2.copy()))
            self.state_lvlh = self.admittance.state_lvlh
            self.closing_speed_in_m_s = float(self.state_lvlh[3:6] @ self.axis)
            self.phase = CONTACT
        return self.state_lvlh

    def virtual_force(self, penetration_m: float, rate_m_s: float) -> float:
        if not in_contact(penetration_m):
            return 0.0
        return float(self.gains.stiffness_n_m * penetration_m + self.gains.damping_ns_m * rate_m_s)

    def step(self, force_facility_n: float, robot_position_lvlh, robot_velocity_lvlh=None,
             sample_time_s: float | None = None) -> np.ndarray:
        """One tick: ``f_L`` [N] measured, robot position [m] (and velocity [m/s]) measured; returns ``[dr; dv]``.

        Without a velocity, the rule differences the positions: by their ``sample_time_s`` (the
        sensor stamps) when given, so that a sample repeated over several ticks keeps the last
        rate instead of reading as a stop; otherwise by the tick ``dt``.
        """
        f_l = float(force_facility_n)
        p = np.asarray(robot_position_lvlh, dtype=float).reshape(3)
        if not (np.isfinite(f_l) and np.all(np.isfinite(p))):
            raise InputError('force_facility_n and robot_position_lvlh must be finite')
        self.begin_tick()
        if robot_velocity_lvlh is not None:
            v = np.asarray(robot_velocity_lvlh, dtype=float).reshape(3)
        elif self._last_robot_position is None:
            v = np.zeros(3)
        elif sample_time_s is None:
            v = (p - self._last_robot_position) / self.dt
        elif sample_time_s > self._last_sample_time_s:
            v = (p - self._last_robot_position) / (float(sample_time_s) - self._last_sample_time_s)
        else:
            v = self._last_robot_velocity
        if sample_time_s is None or self._last_sample_time_s is None or sample_time_s > self._last_sample_time_s:
            self._last_robot_position, self._last_sample_time_s = p.copy(), sample_time_s
        self._last_robot_velocity = v
        x, xd = float(p @ self.axis), float(v @ self.axis)
        f_v = self.virtual_force(x, xd)
        if in_contact(x) and self.contact_start_s is None:
            self.contact_start_s, self.first_contact_state = self.t, self.state_lvlh.copy()
        if not in_contact(x) and self.contact_start_s is not None and self.separation_s is None:
            self.separation_s, self.phase = self.t, POST_IMPACT
        f = f_l + f_v
        self.impulse_n_s += f * self.dt
        self.last_penetration_m, self.last_force_virtual_n = x, f_v
        self.state_lvlh = self.admittance.step(-f * self.axis, self.dt)
        if self.separation_s is not None and self.separation_state is None:
            self.separation_state = self.state_lvlh.copy()
        self.k += 1
        return self.state_lvlh

    @property
    def complete(self) -> bool:
        """The mission is over: the post-impact leg has run ``post_impact.duration_s`` since the separation."""
        return self.separation_s is not None and self.t >= self.separation_s + self.scenario.post_impact_duration_s \
            - 0.5 * self.dt

    @property
    def restitution(self) -> float | None:
        """``-v_out / v_in`` along the docking axis once the robot has left contact (Eq. 15), else None."""
        if self.separation_state is None or not self.closing_speed_in_m_s:
            return None
        return float(-(self.separation_state[3:6] @ self.axis) / self.closing_speed_in_m_s)


class EmulatedRobot:
    """The lab side of seed 003 Fig. 5 in simulation: an ideal robot and the facility's contact.

    The robot realises a commanded relative state ``[dr; dv]`` exactly, ``delay_s`` (the loop
    delay ``Delta`` of the scenario) after the command's time; while its mock-up penetrates the
    target's (``x = dr . n > 0``) the F/T sensor measures the lumped contact
    ``f_L = k_L x + b_L x'`` (Eqs. 16-18) of the realised motion, compressive positive.
    """

    def __init__(self, sc: DockingScenario):
        self.delay_s = float(sc.loop_delay_s)
        self.lumped = sc.facility.lumped
        self.axis = sc.docking_axis_lvlh

    def realise(self, command_lvlh) -> tuple[np.ndarray, np.ndarray, float]:
        """``(position, velocity, f_L)`` of the robot that reproduces ``command_lvlh`` (``delay_s`` later)."""
        state = np.asarray(command_lvlh, dtype=float).reshape(6)
        x, xd = float(state[0:3] @ self.axis), float(state[3:6] @ self.axis)
        f_l = float(self.lumped.force(x, xd)) if in_contact(x) else 0.0
        return state[0:3].copy(), state[3:6].copy(), f_l


class RobotAnswer:
    """Whether the robot side has answered this node's commands, so the mission may start (plain Python).

    The robot side reports the time up to which it has realised the commands (the motion table's
    ``table/tracking_error``: its last element). The mission starts once an answer covers the first
    command the robot side heard (:meth:`command_heard`): a table that took its first commands late (held
    up on a busy machine, the twin not yet waiting for it) left the arm behind the approach. An answer
    for an earlier time does not count; a non-finite one is ignored. Without ``wait`` it always answers.
    """

    def __init__(self, wait: bool):
        self.wait = wait
        self.first_command_s: float | None = None
        self.answered_s: float | None = None

    def command_heard(self, stamp_s: float) -> None:
        """A command stamped ``stamp_s`` went out while the robot side listened (only the first counts)."""
        if self.first_command_s is None:
            self.first_command_s = stamp_s

    def answer(self, realised_up_to_s: float) -> None:
        if math.isfinite(realised_up_to_s) and (self.answered_s is None or realised_up_to_s > self.answered_s):
            self.answered_s = realised_up_to_s

    @property
    def answered(self) -> bool:
        return not self.wait or (self.first_command_s is not None and self.answered_s is not None
                                 and self.answered_s >= self.first_command_s)


class StampedSamples:
    """Measured samples by their stamps; a step at time ``t`` uses the latest one stamped at or before ``t``.

    A sample may arrive before its stamp (the emulated robot's delay is known) or after it (a
    real sensor's latency); it is never used before its time. Stamps must increase (a sample
    that does not is dropped, ``out_of_order``), so the sample valid at ``t`` is final once one
    stamped at or after ``t`` has arrived (:meth:`complete_at`; until then the node waits).
    When the sample valid at ``t`` is stamped at or before ``t - period_s`` (the robot sent
    none for this period), the miss is counted (``misses``).
    """

    def __init__(self, period_s: float):
        if not period_s > 0.0:
            raise ConfigError(f'period_s must be > 0, got {period_s!r}')
        self.period_s = float(period_s)
        self._tol = 1e-3 * self.period_s            # stamps in ns and step times in float
        self._samples: deque = deque()
        self.misses = 0
        self.out_of_order = 0

    def put(self, stamp_s: float, value) -> None:
        if self._samples and stamp_s <= self._samples[-1][0]:
            self.out_of_order += 1
            return
        self._samples.append((float(stamp_s), value))

    def ready(self, t_s: float) -> bool:
        """Whether a sample is valid at ``t_s`` (one stamped at or before it)."""
        return bool(self._samples) and self._samples[0][0] <= t_s + self._tol

    def _advance(self, t_s: float):
        s = self._samples
        while len(s) >= 2 and s[1][0] <= t_s + self._tol:
            s.popleft()                     # time only moves forward: older samples are not needed again
        return s[0] if s and s[0][0] <= t_s + self._tol else None

    def complete_at(self, t_s: float) -> bool:
        """Whether the sample valid at ``t_s`` is final: one stamped at or after ``t_s`` has arrived."""
        return bool(self._samples) and self._samples[-1][0] >= t_s - self._tol

    def at(self, t_s: float):
        """``(stamp, value)`` of the sample valid at ``t_s`` (None before the first one); counts a miss."""
        latest = self._advance(t_s)
        if latest is None or latest[0] <= t_s - self.period_s + self._tol:
            self.misses += 1
        return latest
