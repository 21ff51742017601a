"""Seed 003 Eqs. (23)-(29): the delay-stability designer against the roots and the exact-delay simulation."""

import numpy as np
import pytest

from hil_docking import designer_cli
from hil_docking.designer import (envelope_growth, exact_delay_margin_s, m_min_exact, m_min_pade, m_min_pade1,
                                  m_min_simulated, pade1_map, pade_stable, routh_hurwitz)


def test_eq29_is_the_boundary_of_the_roots_of_eq25_and_eq26_agrees_with_them():
    rng = np.random.default_rng(29)
    for _ in range(200):
        d = rng.uniform(0.002, 0.02)
        k = 10 ** rng.uniform(2, 5)
        b = k * d * rng.uniform(1.05, 20.0)
        m_29 = float(m_min_pade1(d, k, b))
        assert pade_stable(d, k, b, m_29 * 1.001, order=1)
        assert not pade_stable(d, k, b, m_29 * 0.999, order=1)
        m = m_29 * rng.uniform(0.3, 3.0)
        # Eq. (26) (with the erratum: k m Delta / 2) gives the verdict of the roots of Eq. (25).
        assert routh_hurwitz(d, k, b, m).stable == pade_stable(d, k, b, m, order=1)


def test_designer_bound_against_the_simulated_exact_delay_boundary():
    """Tolerance 2 %: the multisection resolves 1 %, the h = Delta/20 integrator < 0.5 %."""
    delay_s, k, b = 0.005, 5000.0, 100.0
    exact = m_min_exact(delay_s, k, b)
    assert exact_delay_margin_s(exact, k, b) == pytest.approx(delay_s, rel=1e-8)
    # The seed's first-order Pade bound is optimistic: the bracket's lower end, the Eq. (29) mass, is
    # simulated first and must be unstable (and so is 10 % above it); 1.5 times it must be stable.
    pade1 = float(m_min_pade1(delay_s, k, b))
    simulated = m_min_simulated(delay_s, k, b, rel_tol=0.01, bracket=(pade1, 1.5 * pade1))
    assert simulated == pytest.approx(exact, rel=0.02)
    assert pade1 < 0.85 * simulated
    assert envelope_growth(1.1 * pade1, k, b, delay_s)[0] > 1.0


def test_designer_bound_with_a_servo_lag_against_simulation():
    """A robot servo (first-order lag tau) in the loop: the exact margin with the lag matches the
    simulated boundary (2 %); counting the lag as extra delay is conservative, ignoring it optimistic."""
    delay_s, lag_s, k, b = 0.010, 0.005, 2.0e4, 400.0
    exact = m_min_exact(delay_s, k, b, lag_s=lag_s)
    as_delay, ignored = m_min_exact(delay_s + lag_s, k, b), m_min_exact(delay_s, k, b)
    # The bracket's ends are simulated first: the mass that ignores the lag must be unstable,
    # the one that counts it as delay stable (else ValueError).
    simulated = m_min_simulated(delay_s, k, b, rel_tol=0.01, lag_s=lag_s, bracket=(ignored, as_delay))
    assert simulated == pytest.approx(exact, rel=0.02)
    assert as_delay > 1.04 * simulated                                    # +7 %
    assert ignored < 0.85 * simulated
    with pytest.raises(ValueError, match='bound b/k'):
        m_min_exact(0.015, k, b, lag_s=0.006)                             # Delta + tau >= b/k
    with pytest.raises(ValueError, match='does not hold the boundary'):
        m_min_simulated(delay_s, k, b, lag_s=lag_s, bracket=(0.5 * ignored, ignored))      # both unstable


def test_higher_order_pade_converges_to_the_exact_margin():
    for d, k, b in [(0.01, 5000.0, 100.0), (0.01, 10.0, 100.0), (0.015, 5.0e4, 800.0)]:
        exact = m_min_exact(d, k, b)
        errors = [abs(m_min_pade(d, k, b, order) / exact - 1.0) for order in (1, 2, 3)]
        assert errors[0] > 0.19 and errors[1] < 0.01 and errors[2] < 2e-4
        assert float(m_min_pade1(d, k, b)) == pytest.approx(m_min_pade(d, k, b, 1), rel=1e-8)


def test_fig6_map_marks_the_unreachable_region_and_bad_input_is_refused(capsys):
    ks, bs = np.geomspace(100, 1e5, 7), np.geomspace(10, 2000, 5)
    grid = pade1_map(0.01, ks, bs)
    assert np.array_equal(np.isnan(grid), bs[None, :] <= ks[:, None] * 0.01)
    with pytest.raises(ValueError, match='bound b/k'):
        m_min_pade1(0.02, 5000.0, 100.0)                # Delta = b/k exactly
    with pytest.raises(ValueError, match='bound b/k'):
        m_min_exact(0.03, 5000.0, 100.0)
    for args in ((0.01, 0.0, 100.0), (0.01, 5000.0, -1.0), (0.0, 5000.0, 100.0)):
        with pytest.raises(ValueError, match='must be finite and > 0'):
            m_min_exact(*args)
    with pytest.raises(ValueError, match='mass_kg'):
        routh_hurwitz(0.01, 5000.0, 100.0, 0.0)
    assert designer_cli.main(['--delay-ms', '25', '--stiffness', '5000', '--damping', '100']) == 2
    assert 'at or above the bound' in capsys.readouterr().err
    assert designer_cli.main(['--delay-ms', '10', '--stiffness', '5000', '--damping', '100', '--mass', '-1']) == 2
    assert 'mass_kg' in capsys.readouterr().err
    assert designer_cli.main(['--delay-ms', '10', '--stiffness', '5000', '--damping', '100', '--mass', '0.8']) == 1
    assert 'UNSTABLE' in capsys.readouterr().out
    assert designer_cli.main(['--delay-ms', '10', '--stiffness', '5000', '--damping', '100', '--mass', '1.0']) == 0
