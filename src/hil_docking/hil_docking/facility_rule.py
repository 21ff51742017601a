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
Plain Python; no rclpy.
"""

from __future__ import annotations

import numpy as np

from hil_docking.contact import equivalent_mass, virtual_gains
from hil_docking.cw import CWModel, CWRelativeAdmittance, two_impulse_transfer
from hil_docking.designer import m_min_exact
from hil_docking.scenario import DockingScenario

APPROACH, CONTACT, POST_IMPACT = 'approach', 'contact', 'post_impact'


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
            raise ValueError(f'equivalent mass {self.mass_kg:g} kg is below the stable minimum {self.m_min_kg:.4g} kg '
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
        if penetration_m <= 0.0:
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
            raise ValueError('force_facility_n and robot_position_lvlh must be finite')
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
        if x > 0.0 and self.contact_start_s is None:
            self.contact_start_s, self.first_contact_state = self.t, self.state_lvlh.copy()
        if x <= 0.0 and self.contact_start_s is not None and self.separation_s is None:
            self.separation_s, self.phase = self.t, POST_IMPACT
        f = f_l + f_v
        self.impulse_n_s += f * self.dt
        self.last_penetration_m, self.last_force_virtual_n = x, f_v
        self.state_lvlh = self.admittance.step(-f * self.axis, self.dt)
        self.k += 1
        return self.state_lvlh
