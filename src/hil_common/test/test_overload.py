"""OverloadGuard (hil_common.overload) driven by a real StepPacer on a scripted timeline of timer
callbacks: on time, late, stalled. The expected levels follow from the timeline by hand (a tick every
``dt`` is on time; a stall of ``s`` seconds makes the next tick's first step ``s`` late and, beyond
``max_catch_up`` steps, drops steps)."""

import pytest

from hil_common.errors import ConfigError
from hil_common.overload import ERROR, OK, WARN, OverloadGuard
from hil_common.pacing import StepPacer

DT = 0.01          # a 100 Hz node
CATCH_UP = 20      # 0.2 s of steps before the pacer drops


def _run(guard, pacer, t_from, t_to, period=DT):
    """Timer callbacks every ``period`` from ``t_from`` (exclusive) to ``t_to``; returns the last time."""
    t = t_from
    while t + period <= t_to + 1e-12:
        t += period
        if pacer.due(t):
            guard.update(t, pacer.last_late_s, pacer.last_dropped)
    return t


def _guard(policy='auto'):
    return OverloadGuard(DT, warn_late_s=0.025, hold_late_s=0.1, recover_after_s=1.0, policy=policy), StepPacer(DT, 0.0, CATCH_UP)


def test_the_pacer_reports_how_late_the_first_due_step_ran_and_what_it_dropped():
    pacer = StepPacer(DT, 0.0, CATCH_UP)
    assert pacer.due(0.0105) == 1 and pacer.last_late_s == pytest.approx(0.0005) and pacer.last_dropped == 0
    assert pacer.due(0.0605) == 5 and pacer.last_late_s == pytest.approx(0.0405)   # step 2 was due at 0.02 s
    assert pacer.due(0.5005) == CATCH_UP and pacer.last_dropped == 44 - CATCH_UP and pacer.overruns == 24
    assert pacer.due(0.5006) == 0 and pacer.last_late_s == 0.0 and pacer.last_dropped == 0


def test_on_time_is_ok_a_late_tick_degrades_without_holding_and_on_time_again_recovers():
    guard, pacer = _guard()
    t = _run(guard, pacer, 0.0, 2.0)
    assert guard.level == OK and not guard.holding and guard.late_ticks == 0
    t = _run(guard, pacer, t, t + 0.05, period=0.05)          # one callback 40 ms late: below the 100 ms hold
    assert guard.level == WARN and not guard.holding and guard.late_ticks == 1
    assert 'late' in guard.message() and guard.max_late_s == pytest.approx(0.04, abs=1e-9)
    t = _run(guard, pacer, t, t + 0.9)
    assert guard.level == WARN                                # not yet recover_after_s on time
    _run(guard, pacer, t, t + 0.2)
    assert guard.level == OK and guard.holds == 0


def test_a_stall_holds_and_the_auto_policy_resumes_after_recover_after_s_on_time():
    guard, pacer = _guard()
    t = _run(guard, pacer, 0.0, 1.0)
    t = _run(guard, pacer, t, t + 0.5, period=0.5)            # a 0.5 s stall: 50 steps due, 20 run, 30 dropped
    assert guard.holding and guard.level == ERROR and guard.dropped_steps == 30 and guard.holds == 1
    assert guard.message().startswith('overloaded, holding: 30 steps dropped')
    t = _run(guard, pacer, t, t + 0.95)
    assert guard.holding                                      # 0.95 s on time < 1 s
    t = _run(guard, pacer, t, t + 0.1)
    assert not guard.holding and guard.level == OK
    t = _run(guard, pacer, t, t + 0.15, period=0.15)          # 140 ms late, nothing dropped: still a hold
    assert guard.holding and guard.holds == 2 and '140 ms late' in guard.reason


def test_the_latch_policy_holds_until_reset_and_off_only_reports():
    guard, pacer = _guard('latch')
    t = _run(guard, pacer, 0.0, 0.5)
    t = _run(guard, pacer, t, t + 0.5, period=0.5)
    t = _run(guard, pacer, t, t + 3.0)
    assert guard.holding and guard.level == ERROR             # 3 s on time do not clear a latch
    guard.reset()
    assert not guard.holding and guard.level == OK
    guard, pacer = _guard('off')
    t = _run(guard, pacer, 0.0, 0.5)
    _run(guard, pacer, t, t + 0.5, period=0.5)
    assert not guard.holding and guard.level == WARN and guard.dropped_steps == 30


@pytest.mark.parametrize('kwargs, name', [({'policy': 'sometimes'}, 'policy'), ({'hold_late_s': 0.01}, 'hold_late_s'),
                                          ({'warn_late_s': 0.0}, 'warn_late_s'), ({'recover_after_s': -1.0}, 'recover_after_s')])
def test_bad_settings_are_refused_naming_them(kwargs, name):
    settings = {'dt_s': DT, 'warn_late_s': 0.025, 'hold_late_s': 0.1, 'recover_after_s': 1.0, **kwargs}
    with pytest.raises(ConfigError, match=name):
        OverloadGuard(**settings)


def test_on_the_simulated_clock_the_guard_only_reports():
    """The lab twin waits for the stack: a late or dropped step in simulated time is no overload, and a
    hold would cut the physics short. The node's policy is overridden to ``off`` there."""
    from types import SimpleNamespace

    from hil_common.overload import overload_guard

    p = SimpleNamespace(overload_policy='latch', overload_warn_late_s=0.02, overload_hold_late_s=0.2,
                        overload_recover_after_s=2.0)
    assert overload_guard(p, DT).policy == 'latch'
    guard = overload_guard(p, DT, simulated_clock=True)
    assert guard.policy == 'off'
    guard.update(1.0, 0.0, 5)
    assert not guard.holding and guard.level == WARN and guard.dropped_steps == 5
