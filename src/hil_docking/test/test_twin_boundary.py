"""The designer's stability boundary against the MuJoCo lab twin's (issue 13 item 4: "find it again in
the twin, with its real servo and sensor delays"). The twin's loop is its servo, its probe, MuJoCo's
contact, its sensor and the driver's chain; the reference is the designer's exact-delay bound
(:func:`hil_docking.designer.m_min_exact`) for the delay the twin measurably puts into the loop."""

import pytest

from hil_docking.designer import m_min_exact
from hil_docking.scenario import load_docking_scenario, scenario_path
from hil_docking.twin_boundary import loop_growth_in_twin, twin_loop_delay_s


def test_the_twin_s_loop_delay_is_the_scenario_s_and_its_boundary_lies_above_the_designer_s():
    path = scenario_path('cisas_docking')
    sc = load_docking_scenario(path)
    k, b, dt = sc.orbital_contact.stiffness_n_m, sc.orbital_contact.damping_ns_m, sc.control_period_s
    # measured as a lab would: a sine commanded into the plate, the driver's force against k_L x_c(t - tau) + b_L x_c'
    tau = twin_loop_delay_s(path, 7.0)
    assert tau == pytest.approx(sc.loop_delay_s, abs=0.002)            # measured 10.0 ms (scenario: 10 ms)
    designer = m_min_exact(tau + 0.5 * dt, k, b)                        # the rule's effective delay: + the hold
    assert designer < 1.5                                               # 1.0 kg
    # the twin: 2 kg diverges, 4 kg settles (its boundary bisected: 2.71-2.75 kg)
    assert loop_growth_in_twin(path, 2.0) > 1.0
    assert loop_growth_in_twin(path, 4.0) <= 1.0
    # so the pure-delay bound is optimistic for this facility: 2 kg, 30 % and more above it, is unstable
    print(f'\ntwin loop delay {tau * 1e3:.1f} ms, designer m_min {designer:.3f} kg, twin: 2 kg unstable, 4 kg stable')
    assert 2.0 > 1.3 * designer
