"""Seed 001 reproduced in the lockstep runner (issue 7 items 1-6).

Each test prints our figure next to the seed's (run ``pytest -s`` to read them). Asserts use
the issue's tolerances and independent physics (momentum = integral of the force, the
delay line's own contract), never our own outputs.
"""

import numpy as np
import pytest

from hil_bringup.runners.teleop import run_teleop
from hil_bringup.runners.teleop_experiments import STEP_START_S, hils2, hils2_agreement, step_pull, with_gains
from hil_teleop.config import TeleopConfig, mse
from hil_teleop.master import ScriptedOperator

V_REF = 0.01


def report(title, rows):
    print(f'\n[seed 001] {title}')
    for name, ours, seed in rows:
        print(f'    {name:<46s} ours {ours:>12s}   seed {seed}')


def convergence_index(v, v_ref, start, tol=0.01):
    """First sample after ``start`` from which ``|v - v_ref| <= tol v_ref`` holds to the end."""
    bad = np.nonzero(np.abs(v - v_ref) > tol * abs(v_ref))[0]
    bad = bad[bad >= start]
    return (bad[-1] + 1) if bad.size else start


# -- item 1 -------------------------------------------------------------------------------
def test_item1_3000kg_step_converges_and_the_acceleration_impulse_is_m_v():
    config = TeleopConfig(payload_mass_kg=3000.0)
    run = step_pull(config, V_REF, duration_s=25.0)
    i0 = int(round(STEP_START_S / config.dt))
    v_s = run.v_s[:, 0]
    i_conv = convergence_index(v_s, V_REF, i0)
    assert i_conv < len(v_s) - 1, 'v_s did not converge to v_s,r'
    assert abs(v_s[-1] - V_REF) < 0.01 * V_REF
    impulse = float(np.sum(run.f_s[i0:i_conv, 0]) * config.dt)
    expected = config.payload_mass_kg * V_REF                       # 30 Ns
    # Independent check of the payload in the loop: its momentum is the integral of f_s.
    assert run.payload_momentum_end[0] == pytest.approx(np.sum(run.f_s[:, 0]) * config.dt, rel=1e-9)
    report('item 1: 3000 kg, step v_s,r = 0.01 m/s, no delay', [
        ('integral of f_s over the acceleration phase [Ns]', f'{impulse:.2f}', '28.43 (theory 30)'),
        ('acceleration phase (to |v_s - v_s,r| < 1%) [s]', f'{(i_conv - i0) * config.dt:.1f}', '9.5 (176.5-186 s)'),
        ('peak f_s [N]', f'{run.f_s[:, 0].max():.2f}', 'n/a (Fig. 9)'),
        ('final v_s [m/s]', f'{v_s[-1]:.5f}', '0.01'),
    ])
    assert impulse == pytest.approx(expected, rel=0.05)


# -- item 2 -------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def runs_500kg():
    config = TeleopConfig(payload_mass_kg=500.0)
    return {fb: step_pull(with_gains(config, force_feedback=fb), V_REF, duration_s=70.0, pull_s=60.0)
            for fb in (True, False)}


def test_item2_500kg_force_feedback_lowers_the_force_mse_and_peak(runs_500kg):
    on, off = runs_500kg[True], runs_500kg[False]
    mse_on, mse_off = mse(on.f_s[:, :3]), mse(off.f_s[:, :3])
    peak_on, peak_off = (np.abs(r.f_s[:, :3]).max() for r in (on, off))
    report('item 2: 500 kg pulled 60 s at 0.01 m/s, with / without force feedback', [
        ('MSE(f_s) with feedback, Eq. (11) [N^2]', f'{mse_on:.2f}', '5.41'),
        ('MSE(f_s) without feedback [N^2]', f'{mse_off:.2f}', '15.35'),
        ('MSE ratio without / with', f'{mse_off / mse_on:.2f}', f'{15.35 / 5.41:.2f}'),
        ('peak |f_s| with feedback [N]', f'{peak_on:.2f}', '18'),
        ('peak |f_s| without feedback [N]', f'{peak_off:.2f}', '23'),
        ('peak ratio without / with', f'{peak_off / peak_on:.2f}', f'{23 / 18:.2f}'),
    ])
    assert mse_on < mse_off
    assert peak_on < peak_off
    # Both runs end at rest with the payload pulled 0.6 m (displacement = v_r x 60 s).
    for r in (on, off):
        assert r.x_payload[-1, 0] - r.x_payload[0, 0] == pytest.approx(V_REF * 60.0, rel=0.02)


# -- items 3 and 4 -------------------------------------------------------------------------
def check_hils2(mass_kg):
    config = TeleopConfig(payload_mass_kg=mass_kg, delay_s=5.0)
    run = hils2(config)
    n = run.delay_steps()
    a = hils2_agreement(run)
    windows, mean_abs_s, mean_abs_vir = a.pull_mean_forces_n, a.mean_abs_force_slave_n, a.mean_abs_force_virtual_n
    rows = [('max |x_vir(t-5 s) - x_s(t)| along x [mm]', f'{1e3 * a.max_position_error_m:.2f}', '2 (Fig. 17)'),
            ('peak |f_s,x| [N]', f'{np.abs(run.f_s[:, 0]).max():.2f}', '~28 (Fig. 14, human input)'),
            ('mean |f_s,x| / mean |f_vir,x| [N]', f'{mean_abs_s:.2f}/{mean_abs_vir:.2f}', 'means agree (Fig. 16)')]
    rows += [(f'mean f_x over pull at {s:.0f} s: slave / virtual [N]', f'{a:.2f}/{b:.2f}', '') for s, a, b in windows]
    rows.append(('uplink messages in flight (delay / dt)', f'{run.uplink_queue.max()}', f'{n}'))
    report(f'items 3/4: {mass_kg:.0f} kg, 5 s one-way delay, scripted operator', rows)
    assert a.max_position_error_m <= 0.002
    assert mean_abs_vir == pytest.approx(mean_abs_s, rel=0.10)
    for _, a, b in windows:
        assert b == pytest.approx(a, rel=0.10)
    # The link really delays by 5 s: what earth displays is the slave position 5 s ago.
    np.testing.assert_array_equal(run.x_s_on_earth[n:], run.x_s[: len(run.x_s) - n])
    assert abs(run.uplink_queue.max() - n) <= 1
    # And nothing reached the slave before the first command could arrive.
    assert not run.v_s_c[: n].any()


def test_item3_4500kg_delayed_virtual_arm_predicts_the_slave():
    check_hils2(4500.0)


@pytest.mark.parametrize('mass_kg', [3000.0, 6000.0])
def test_item4_3000_and_6000kg(mass_kg):
    check_hils2(mass_kg)


# -- item 5 -------------------------------------------------------------------------------
@pytest.mark.parametrize('mass_factor', [0.8])
def test_item5_virtual_mass_error_stays_bounded_thanks_to_the_coupling(mass_factor):
    config = TeleopConfig(payload_mass_kg=4500.0, delay_s=5.0, virtual_mass_factor=mass_factor)
    errs = {}
    for kc in (True, False):
        run = hils2(with_gains(config, coupling=kc))
        x_vir, x_s = run.aligned(run.x_vir, run.x_s)
        errs[kc] = x_vir[:, 0] - x_s[:, 0]
    report(f'item 5: virtual payload mass {mass_factor:.1f} x true (4500 kg), 5 s delay', [
        ('max position error with K_c [mm]', f'{1e3 * np.abs(errs[True]).max():.2f}', 'not published'),
        ('max position error without K_c [mm]', f'{1e3 * np.abs(errs[False]).max():.2f}', 'not published'),
        ('final error with / without K_c [mm]', f'{1e3 * errs[True][-1]:.2f}/{1e3 * errs[False][-1]:.2f}', ''),
    ])
    assert np.abs(errs[True]).max() < 0.5 * np.abs(errs[False]).max()
    assert np.abs(errs[True]).max() < 0.005
    assert abs(errs[True][-1]) < 0.5e-3         # no drift once the operator stops


# -- item 6 (closed loop part) -------------------------------------------------------------
def test_item6_stale_master_command_times_out_to_zero_velocity_and_recovers():
    config = TeleopConfig(payload_mass_kg=500.0, delay_s=1.0, command_timeout_s=0.3)
    op = ScriptedOperator.velocity_steps([(0.5, 12.0, [V_REF, 0, 0, 0, 0, 0])], config.gains.k_s, config.gains.g)
    outage = (4.0, 6.0)
    run = run_teleop(config, op, 10.0, uplink_tamper=lambda t: outage[0] <= t < outage[1])
    t = run.t
    # Last command sent at 4 s arrives at 5 s; stale from 5 + 0.3 s until the first new one arrives at 7 s.
    stale = (t > outage[0] + config.delay_s + config.command_timeout_s + 2 * config.dt) & \
            (t < outage[1] + config.delay_s - 2 * config.dt)
    assert run.stale[stale].all()
    np.testing.assert_array_equal(run.v_s_c[stale], 0.0)
    fresh = (t > 2.0) & (t < outage[0] + config.delay_s + config.command_timeout_s - 2 * config.dt)
    assert not run.stale[fresh].any()
    assert not run.stale[t > outage[1] + config.delay_s + 2 * config.dt].any()
    assert run.v_s_c[-1, 0] > 0.5 * V_REF


def test_item6_closed_loop_over_a_jittery_lossy_link_keeps_the_2mm_agreement():
    """4500 kg, 5 s delay plus up to 50 ms jitter and 10 % drops: the slave still retraces the virtual arm."""
    config = TeleopConfig(payload_mass_kg=4500.0, delay_s=5.0, jitter_s=0.05, drop_probability=0.1)
    op = ScriptedOperator.velocity_steps([(2.0, 22.0, [0.015, 0, 0, 0, 0, 0])], config.gains.k_s, config.gains.g,
                                         ramp_s=2.0)
    run = run_teleop(config, op, 32.0)
    x_vir, x_s = run.aligned(run.x_vir, run.x_s)
    err = np.abs(x_vir[:, 0] - x_s[:, 0])
    n = run.delay_steps()
    report('item 6: 4500 kg over a 5 s link with 0-50 ms jitter and 10 % drops', [
        ('max |x_vir(t-5 s) - x_s(t)| along x [mm]', f'{1e3 * err.max():.2f}', '2 (Fig. 17, no jitter)'),
        ('uplink messages in flight, max', f'{run.uplink_queue.max()}', f'<= {n + 25} (delay + jitter)'),
    ])
    assert err.max() <= 0.002
    # once commands flow, drops (at most a few consecutive 2 ms samples) never make the command stale
    assert not run.stale[n + int(0.1 / config.dt):].any()
    assert run.uplink_queue.max() <= n + int(config.jitter_s / config.dt)
