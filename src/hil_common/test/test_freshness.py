"""The input-freshness policy: no fault before the first sample, stale holds, recovery by policy."""

from hil_common.freshness import NO_DATA, OK, RECOVERING, STALE, WAITING, InputWatch


def test_waiting_for_the_first_sample_is_not_stale_and_reports_a_start_timeout():
    w = InputWatch('ft', timeout_s=0.1, start_timeout_s=5.0)
    w.start(0.0)
    assert w.update(4.9) == WAITING and w.stale_events == 0 and not w.usable
    assert w.update(5.1) == NO_DATA and w.start_timeouts == 1 and 'no sample' in w.describe(5.1)
    w.sample(7.0)                       # the source came up late: usable at once, nothing latched
    assert w.usable and w.stale_events == 0


def test_stale_then_automatic_recovery_after_healthy_samples():
    w = InputWatch('js', timeout_s=0.1, recover_after_s=0.5)
    w.start(0.0)
    for k in range(10):
        w.sample(0.01 * k)
    assert w.update(0.1) == OK
    assert w.update(0.5) == STALE and w.stale_events == 1
    t = 1.0
    for _ in range(40):                 # 0.4 s of healthy samples: not yet
        w.sample(t)
        t += 0.01
    assert w.state == RECOVERING and not w.usable
    w.sample(t + 0.2)                   # a gap longer than the timeout restarts the healthy period
    assert w.state == RECOVERING and w.stale_events == 2
    t += 0.2
    for _ in range(60):
        t += 0.01
        w.sample(t)
    assert w.usable and w.recoveries == 1


def test_manual_policy_needs_a_reset_and_refuses_it_while_stale():
    w = InputWatch('ft', timeout_s=0.1, auto_recover=False)
    w.start(0.0)
    w.sample(0.0)
    assert w.update(0.2) == STALE
    ok, message = w.reset(0.2)
    assert not ok and 'still stale' in message
    for k in range(200):
        w.sample(1.0 + 0.01 * k)
    assert w.state == RECOVERING
    assert w.reset(3.0)[0] and w.usable
