"""Lockstep runner of the seed 003 docking mission: CW approach, impact, post-impact leg (§V).

The rules of :mod:`hil_docking` wired without DDS, at the facility's control period ``dt``:

1. **Approach** (§III): a two-impulse CW transfer from ``start_lvlh_m`` to the docking point
   in ``duration_s``; the second burn leaves ``closing_speed_m_s`` along the docking axis.
2. **Impact** (§IV): the chaser state is the CW relative admittance
   (:class:`hil_docking.cw.CWRelativeAdmittance`) of the *relative* coordinate, so it uses the
   equivalent mass (a force ``F`` on the chaser and ``-F`` on the target change the relative
   acceleration by ``F / m``). The robot reproduces the simulated relative position
   ``Delta`` later; while the robot's interface penetrates the target's, the facility's
   physical contact ``f_L`` (Eqs. 16-18, measured by the F/T sensor) and the virtual force
   ``f_V`` (Eqs. 19-22) act on the admittance, held over the control period. The zero-order
   hold adds half a period to the loop delay, so ``eps`` is designed for ``Delta + dt/2``.
3. **Post-impact leg** (§V): the admittance coasts on; the seed's impulsive shortcut (Eq. 30:
   ``dv = J / m`` applied at the first contact, then Eq. 12) is computed alongside.

Plain Python; no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hil_docking.contact import impact_closed_form, post_impact_state, velocity_changes
from hil_docking.facility_rule import APPROACH, CONTACT, POST_IMPACT, DockingFacility, EmulatedRobot, StampedSamples
from hil_docking.scenario import DockingScenario

from hil_common.errors import SimulationFailed

__all__ = ['APPROACH', 'CONTACT', 'POST_IMPACT', 'MissionRun', 'run_mission']


@dataclass
class MissionRun:
    scenario: DockingScenario
    t: np.ndarray                    # (n,)
    state_lvlh: np.ndarray           # (n, 6) simulated relative state [dr; dv]
    robot_position_lvlh: np.ndarray  # (n, 3) what the robot realises (delayed)
    force_facility_n: np.ndarray     # (n,) f_L along the docking axis (compressive positive)
    force_virtual_n: np.ndarray      # (n,) f_V
    phase: np.ndarray                # (n,) of APPROACH / CONTACT / POST_IMPACT
    burns: list                      # [(t, dv_lvlh)]
    summary: dict = field(default_factory=dict)


def run_mission(sc: DockingScenario, progress: Callable[[str], None] | None = None,
                compensation: str | None = None, difference_robot_pose: bool = False) -> MissionRun:
    """Run the mission with ideal robots: the robot realises the simulated state ``Delta`` later and
    the facility's contact force is its lumped model ``f_L`` (Eqs. 16-18) of the robot's state
    (:class:`~hil_docking.facility_rule.EmulatedRobot`, the robot of the live graph, with its
    samples picked by their stamps as the node does).

    ``difference_robot_pose``: the rule differences the robot's stamped positions for the rate, as
    ``docking_facility_node`` does, instead of getting the robot's velocity: the live graph's
    loop without DDS (the live test compares the two)."""
    say = progress or (lambda _msg: None)
    rule = DockingFacility(sc, compensation)
    comp, transfer, lumped, gains, m_eq, axis = (rule.compensation, rule.transfer, rule.lumped, rule.gains,
                                                 rule.mass_kg, rule.axis)
    dt, n_delay = sc.control_period_s, sc.delay_steps
    say(f'approach: CW two-impulse transfer {sc.start_lvlh_m.tolist()} m -> 0 in {sc.approach_duration_s:g} s, '
        f'dv1 = {np.round(transfer.dv1, 4).tolist()} m/s, dv2 = {np.round(transfer.dv2, 4).tolist()} m/s')
    say(f'contact: m = {m_eq:g} kg, k = {sc.orbital_contact.stiffness_n_m:g} N/m, b = {sc.orbital_contact.damping_ns_m:g} '
        f'N s/m; facility k_L = {lumped.stiffness_n_m:g}, b_L = {lumped.damping_ns_m:g}; virtual k_V = '
        f'{gains.stiffness_n_m:.4g}, b_V = {gains.damping_ns_m:.4g} (eps = {gains.epsilon_ns_m:.4g}, {comp}); '
        f'designer m_min = {rule.m_min_kg:.3g} kg for Delta = {rule.effective_delay_s * 1e3:g} ms')
    robot_model = EmulatedRobot(sc)
    samples = StampedSamples(dt)
    for j in range(n_delay):                              # at rest until the first command is realised
        samples.put(j * dt, robot_model.realise(rule.state_lvlh))
    contact_cap = int(np.ceil(20.0 * impact_closed_form(m_eq, sc.orbital_contact).duration_s / dt)) + 4 * n_delay
    n_post = int(round(sc.post_impact_duration_s / dt))
    rows_t, rows_s, rows_r, rows_fl, rows_fv, rows_p = [], [], [], [], [], []
    k_end = None
    while True:
        t = rule.t
        n_burns = len(rule.burns)
        current = rule.begin_tick()
        if len(rule.burns) > n_burns:
            say(f't = {t:.3f} s: second burn, closing at {rule.closing_speed_in_m_s:.4f} m/s')
        samples.put(t + n_delay * dt, robot_model.realise(current))      # realised Delta later
        stamp, (robot_position, robot_velocity, f_l) = samples.at(t)      # the simulated state Delta ago
        phase_before = rule.phase
        if difference_robot_pose:
            rule.step(f_l, robot_position, sample_time_s=stamp)
        else:
            rule.step(f_l, robot_position, robot_velocity)
        if rule.phase == POST_IMPACT and phase_before == CONTACT:
            k_end = rule.k - 1 + n_post
            v_out = float(current[3:6] @ axis)
            say(f't = {t:.3f} s: separation after {t - rule.contact_start_s:.3f} s, impulse {rule.impulse_n_s:.4g} N s, '
                f'restitution {-v_out / rule.closing_speed_in_m_s:.4f}')
        rows_t.append(t)
        rows_s.append(current.copy())
        rows_r.append(robot_position)
        rows_fl.append(f_l)
        rows_fv.append(rule.last_force_virtual_n)
        rows_p.append(rule.phase)
        if k_end is not None and rule.k - 1 >= k_end:
            break
        if rule.phase == CONTACT and rule.k - rule.n_approach > contact_cap:
            raise SimulationFailed('the robot did not leave contact: check the contact damping (over-damped?)')
    states = np.array(rows_s)
    t_arr = np.array(rows_t)
    closed = impact_closed_form(m_eq, sc.orbital_contact)
    v_in = rule.closing_speed_in_m_s
    v_out = float(states[-1, 3:6] @ axis)
    impulse = rule.impulse_n_s
    # Seed 003 §V shortcut: dv = J/m at the first contact, position frozen, then Eq. (12).
    shortcut0 = post_impact_state(rule.first_contact_state, axis, impulse, m_eq)
    shortcut_end = rule.cw.propagate(shortcut0, t_arr[-1] - rule.contact_start_s)
    dv_c, dv_t = velocity_changes(impulse, sc.chaser_mass_kg, sc.target_mass_kg)
    summary = {
        'dv1_m_s': transfer.dv1.tolist(), 'dv2_m_s': transfer.dv2.tolist(), 'total_dv_m_s': transfer.total_dv,
        'equivalent_mass_kg': m_eq, 'compensation': comp, 'k_V_n_m': gains.stiffness_n_m, 'b_V_ns_m': gains.damping_ns_m,
        'epsilon_ns_m': gains.epsilon_ns_m, 'm_min_exact_kg': rule.m_min_kg, 'closing_speed_in_m_s': v_in,
        'restitution': -v_out / v_in, 'restitution_orbital': closed.restitution, 'impulse_n_s': impulse,
        'contact_duration_s': float(np.sum(np.array(rows_fl) != 0.0) * dt), 'contact_duration_orbital_s': closed.duration_s,
        'dv_chaser_m_s': dv_c, 'dv_target_m_s': dv_t,
        'third_leg_shortcut_error_m': float(np.linalg.norm(shortcut_end[0:3] - states[-1, 0:3])),
        'final_position_lvlh_m': states[-1, 0:3].tolist(),
        'contact_start_s': rule.contact_start_s, 'separation_s': rule.separation_s,
        'separation_state_lvlh': rule.separation_state.tolist(), 'restitution_at_separation': rule.restitution,
    }
    say(f'post-impact leg: {sc.post_impact_duration_s:g} s, ends at {np.round(states[-1, 0:3], 4).tolist()} m; '
        f'impulsive shortcut (Eq. 30 + Eq. 12) off by {summary["third_leg_shortcut_error_m"] * 1e3:.2f} mm')
    return MissionRun(sc, t_arr, states, np.array(rows_r), np.array(rows_fl), np.array(rows_fv), np.array(rows_p),
                      list(rule.burns), summary)
