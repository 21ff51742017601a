"""Seed 003 Eqs. (13)-(22), (30): contact, virtual-force compensation, impulse and restitution."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from hil_docking.contact import (FacilityContact, SpringDashpot, equivalent_mass, impact_closed_form,
                                 post_impact_state, simulate_facility_impact, velocity_changes, virtual_gains)

M_CHASER, M_TARGET = 100.0, 300.0
ORBITAL = SpringDashpot(5000.0, 100.0)
FACILITY = FacilityContact(mockup_stiffness_n_m=3000.0, mockup_damping_ns_m=20.0, spring_stiffness_n_m=1000.0)


def two_body_impact(m_c, m_t, contact, v_c, v_t):
    """Eq. (13) with both bodies integrated separately (no equivalent mass), until separation."""
    def rhs(_t, y):
        x_c, x_t, vc, vt = y
        f = contact.force(x_c - x_t, vc - vt)
        return [vc, vt, -f / m_c, f / m_t]

    def separated(_t, y):
        return y[0] - y[1]
    separated.terminal, separated.direction = True, -1.0
    sol = solve_ivp(rhs, (0.0, 10.0), [0.0, 0.0, v_c, v_t], method='DOP853', rtol=1e-11, atol=1e-13,
                    events=separated, dense_output=True)
    t_end = sol.t_events[0][0]
    tq = np.linspace(0.0, t_end, 20001)
    y = sol.sol(tq)
    force = contact.force(y[0] - y[1], y[2] - y[3])
    return t_end, y[:, -1], np.trapezoid(force, tq)


def test_equivalent_mass_restitution_and_impulse_against_two_bodies():
    v_c, v_t = 0.07, 0.02                 # chaser closing on the target at 0.05 m/s
    t_end, y_end, impulse = two_body_impact(M_CHASER, M_TARGET, ORBITAL, v_c, v_t)
    m = equivalent_mass(M_CHASER, M_TARGET)
    assert m == pytest.approx(75.0)
    closed = impact_closed_form(m, ORBITAL)
    # Restitution and duration of Eq. (15) with the equivalent mass vs the two-body integration.
    assert -(y_end[2] - y_end[3]) / (v_c - v_t) == pytest.approx(closed.restitution, rel=1e-6)
    assert t_end == pytest.approx(closed.duration_s, rel=1e-6)
    # Eq. (30) for each body, and J = m (1 + gamma) v_in.
    dv_c, dv_t = velocity_changes(impulse, M_CHASER, M_TARGET)
    assert y_end[2] - v_c == pytest.approx(dv_c, rel=1e-6)
    assert y_end[3] - v_t == pytest.approx(dv_t, rel=1e-6)
    assert impulse == pytest.approx(m * (1.0 + closed.restitution) * (v_c - v_t), rel=1e-6)


def test_facility_lumped_model_and_virtual_force_restore_the_orbital_law():
    lumped = FACILITY.lumped
    assert (lumped.stiffness_n_m, lumped.damping_ns_m) == (4000.0, 20.0)          # Eqs. (17)-(18)
    gains = virtual_gains(ORBITAL, lumped, 0.01, 75.0, compensation='first_order')
    assert gains.stiffness_n_m == pytest.approx(1000.0)                            # Eq. (21)
    assert gains.damping_ns_m == pytest.approx(100.0 - 20.0 + 5000.0 * 0.01)       # Eq. (22), eps = k Delta
    x, xd = 0.003, -0.02
    no_delay = virtual_gains(ORBITAL, lumped, 0.0, 75.0, compensation='first_order')
    # Eq. (19): f = f_L + f_V without delay.
    assert lumped.force(x, xd) + SpringDashpot(no_delay.stiffness_n_m, no_delay.damping_ns_m).force(x, xd) \
        == pytest.approx(ORBITAL.force(x, xd))


def test_delayed_loop_without_delay_effect_reproduces_the_closed_form():
    m = equivalent_mass(M_CHASER, M_TARGET)
    res = simulate_facility_impact(m, 0.05, ORBITAL, delay_s=2e-5, steps_per_delay=1)
    closed = impact_closed_form(m, ORBITAL)
    # The 20 us delay still removes k Delta = 0.1 N s/m of damping: gamma higher by
    # ~ pi k Delta / (2 sqrt(k m)) = 2.6e-4 (relative).
    assert res.restitution == pytest.approx(closed.restitution * (1 + np.pi * 5000.0 * 2e-5 / (2 * np.sqrt(5000.0 * m))),
                                            rel=5e-5)
    assert res.duration_s == pytest.approx(closed.duration_s, rel=2e-3)
    assert res.impulse_n_s == pytest.approx(m * (1 + res.restitution) * 0.05, rel=1e-9)


@pytest.mark.parametrize('delay_s', [0.005, 0.015])
def test_virtual_force_compensates_the_delay(delay_s):
    """With the exact delay, eps = 0 lets the delay inject energy (gamma too high); eps(Delta)
    restores the orbital restitution (k Delta and the pole placement both to within 0.1 %);
    only the pole placement also restores the contact duration (its stiffness correction)."""
    m = equivalent_mass(M_CHASER, M_TARGET)
    closed = impact_closed_form(m, ORBITAL).restitution
    lumped = FACILITY.lumped
    results = {}
    for comp in ('none', 'first_order', 'pole'):
        gains = virtual_gains(ORBITAL, lumped, delay_s, m, compensation=comp)
        results[comp] = simulate_facility_impact(m, 0.05, gains.applied(lumped), delay_s, steps_per_delay=50)
    assert results['none'].restitution > closed * (1.0 + 5.0 * delay_s)      # 6.6 % (5 ms), 21 % (15 ms) high
    assert results['first_order'].restitution == pytest.approx(closed, rel=1e-3)
    assert results['pole'].restitution == pytest.approx(closed, rel=1e-3)
    duration = impact_closed_form(m, ORBITAL).duration_s
    assert results['pole'].duration_s == pytest.approx(duration, rel=1e-3)
    assert abs(results['pole'].duration_s - duration) < 0.5 * abs(results['first_order'].duration_s - duration)


def test_post_impact_leg_and_bad_input():
    state = np.array([0.1, -0.2, 0.05, -0.05, 0.13, -0.05])
    axis = np.array([-0.3, 0.8, -0.3])
    out = post_impact_state(state, axis, 6.65, M_CHASER)
    assert np.allclose(out[0:3], state[0:3])
    assert np.allclose(out[3:6] - state[3:6], -0.0665 * axis / np.linalg.norm(axis))
    for bad in (lambda: equivalent_mass(0.0, 1.0), lambda: SpringDashpot(-1.0, 1.0), lambda: SpringDashpot(1.0, -1.0),
                lambda: FacilityContact(1.0, 1.0, 0.0), lambda: virtual_gains(ORBITAL, FACILITY.lumped, -0.01, 75.0),
                lambda: virtual_gains(ORBITAL, FACILITY.lumped, 0.01, 75.0, compensation='magic'),
                lambda: post_impact_state(state, [0, 0, 0], 1.0, 1.0)):
        with pytest.raises(ValueError):
            bad()
