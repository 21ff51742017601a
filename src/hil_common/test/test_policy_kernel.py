"""The compiled policies (``hil_common.policy_kernel``) against their classes: random call sequences drive a class
and its compiled form side by side, and after every call the whole state is the same (to the bit), including
what the class says (the guard's level, hold and reason text). The states' copies into arrays and back are part
of it: the sequences copy the class's state into arrays, and the arrays' back into the class, midway."""

import math

import numpy as np
import pytest

from hil_common import policy_kernel as pk
from hil_common.errors import ConfigError
from hil_common.freshness import HeldInput, InputWatch
from hil_common.overload import OverloadGuard
from hil_common.pacing import StepPacer


def _pacer_view(p: StepPacer):
    return (p.t0_s, p.dt_s, p.steps_done, p.overruns, p.last_late_s, p.last_dropped, p.max_catch_up)


def test_the_compiled_pacer_is_the_step_pacer():
    rng = np.random.default_rng(3)
    for max_catch_up in (1, 5, 20):
        ref = StepPacer(1e-3, 0.25, max_catch_up)
        fast = pk.PacerState(StepPacer(1e-3, 0.25, max_catch_up))
        t, dropped = 0.2, 0
        for k in range(3000):
            t += float(rng.choice([0.0, 1e-3, 2.5e-3, 0.03], p=[0.05, 0.8, 0.1, 0.05])) + rng.uniform(-4e-4, 4e-4)
            if rng.random() < 0.05:
                a, b = ref.skip_to(t), pk.pacer_skip_to(fast.pf, fast.pi, t)
            else:
                a, b = ref.due(t), pk.pacer_due(fast.pf, fast.pi, t)
            dropped += ref.last_dropped
            view = StepPacer(1.0, 0.0)
            fast.store(view)
            assert a == b and _pacer_view(view) == _pacer_view(ref), k
            assert pk.pacer_step_time(fast.pf, ref.steps_done + 1) == ref.step_time(ref.steps_done + 1)
            if k == 1500:                      # into the class and back midway
                fast = pk.PacerState(view)
        assert dropped > 0 or max_catch_up == 20


def _watch_view(w: InputWatch):
    return (w.state, w.started_s, w.last_s, w._healthy_since, w.stale_events, w.recoveries, w.start_timeouts,
            w.samples, w.timeout_s, w.start_timeout_s, w.recover_after_s, w.auto_recover)


@pytest.mark.parametrize('auto_recover', [True, False])
def test_the_compiled_input_watch_is_the_input_watch(auto_recover):
    rng = np.random.default_rng(5)
    ref = InputWatch('joints', 0.1, start_timeout_s=0.5, recover_after_s=0.2, auto_recover=auto_recover)
    fast = pk.WatchState(InputWatch('joints', 0.1, start_timeout_s=0.5, recover_after_s=0.2,
                                    auto_recover=auto_recover))
    states = set()
    t = 0.0
    ref.update(t)
    pk.watch_update(fast.wf, fast.wi, t)
    t += 0.7                                   # past the start timeout before the first sample: no_data
    for k in range(4000):
        if rng.random() < 0.6:
            ref.sample(t)
            pk.watch_sample(fast.wf, fast.wi, t)
        else:
            a = ref.update(t)
            b = pk.watch_update(fast.wf, fast.wi, t)
            assert pk.WATCH_STATES[b] == a, k
        if rng.random() < 0.01 and not auto_recover:
            view = InputWatch('joints', 1.0)
            fast.store(view)
            view.reset(t)                      # the manual recovery: in Python, then back into arrays
            ref.reset(t)
            fast = pk.WatchState(view)
        view = InputWatch('joints', 1.0)
        fast.store(view)
        assert _watch_view(view) == _watch_view(ref), k
        states.add(ref.state)
        t += float(rng.choice([4e-3, 0.05, 0.15, 0.4], p=[0.85, 0.08, 0.05, 0.02]))
    assert states >= {'no_data', 'ok', 'stale', 'recovering'}, states


def test_held_fresh_is_held_input_fresh():
    held = HeldInput(3)
    assert pk.held_fresh(math.nan, 1.0, 0.1) == held.fresh(1.0, 0.1) is False
    held.set(np.zeros(3), 1.0)
    for now in (0.9, 1.0, 1.05, 1.1, 1.1000001, 2.0):
        assert pk.held_fresh(1.0, now, 0.1) == held.fresh(now, 0.1), now


def _guard_view(g: OverloadGuard):
    return (g.level, g.holding, g.reason, g.ticks, g.late_ticks, g.dropped_steps, g.holds, g.max_late_s,
            g.mean_late_window_s, g._window_steps, g._window_late, g._first_tick_s, g._on_time_since, g._calm_since,
            list(g._window))


@pytest.mark.parametrize('policy, mean_late_s', [('auto', 0.004), ('latch', math.inf), ('off', 0.004)])
def test_the_compiled_overload_guard_is_the_overload_guard(policy, mean_late_s):
    rng = np.random.default_rng(11)
    args = dict(dt_s=1e-3, warn_late_s=0.002, hold_late_s=0.02, recover_after_s=0.3, policy=policy,
                mean_late_s=mean_late_s, window_s=0.5)
    ref, fast = OverloadGuard(**args), pk.GuardState(OverloadGuard(**args))
    seen, changes = set(), 0
    t = 10.0
    for k in range(6000):
        # late from the start (before the first whole window), then on time, late and dropping, on time again
        phase = 1 if k < 300 else (k // 1000) % 3
        late = float(rng.exponential([2e-4, 6e-3, 2e-4][phase]))
        dropped = int(rng.random() < [0.0, 0.02, 0.0][phase]) * int(rng.integers(1, 4))
        steps = int(rng.integers(1, 4)) if rng.random() < 0.1 else 1
        a = ref.update(t, late, dropped, steps)
        b = fast.update(t, late, dropped, steps)
        changes += a
        view = OverloadGuard(**args)
        fast.store(view)
        assert (int(a), _guard_view(view)) == (b, _guard_view(ref)), k
        seen.add((ref.level, ref.holding))
        if policy == 'latch' and ref.holding and rng.random() < 0.01:
            ref.reset()                        # the latch's way out: in Python, then back into arrays
            view.reset()
            fast = pk.GuardState(view)
        if k == 3000:
            fast = pk.GuardState(view)         # into the class and back midway
        t += 1e-3 * steps + late * 0.1
    assert changes > 3
    expected = {(0, False), (1, False)} | ({(2, True)} if policy != 'off' else set())
    assert seen >= expected, seen


def test_a_full_ring_is_refused_and_changes_nothing():
    guard = OverloadGuard(1e-3, 0.002, 0.02, 0.3, window_s=1.0)
    fast = pk.GuardState(guard, ring=8)
    for k in range(8):
        assert fast.update(k * 1e-3, 0.0, 0) in (0, 1)
    before = [a.copy() for a in (fast.gf, fast.gi, fast.ring_t)]
    assert fast.update(8e-3, 0.0, 0) == -1
    for a, b in zip(before, (fast.gf, fast.gi, fast.ring_t)):
        np.testing.assert_array_equal(a, b)


def test_an_adopted_object_is_its_class_on_arrays_that_compiled_calls_share():
    """``adopt`` midway: from then on the object's state is the arrays, its class's methods (and Python's reads)
    and the compiled policies on those arrays take turns, and the state stays that of a class driven alone."""
    rng = np.random.default_rng(23)
    ref_p, p = StepPacer(1e-3, 0.25, 5), StepPacer(1e-3, 0.25, 5)
    ref_w, w = (InputWatch('joints', 0.1, start_timeout_s=0.5, recover_after_s=0.2, auto_recover=False)
                for _ in range(2))
    guard_args = dict(dt_s=1e-3, warn_late_s=0.002, hold_late_s=0.02, recover_after_s=0.3, policy='latch',
                      mean_late_s=0.004, window_s=0.5)
    ref_g, g = OverloadGuard(**guard_args), OverloadGuard(**guard_args)
    ref_h, h = HeldInput(3), HeldInput(3)
    states = None
    t = 0.2
    for k in range(4000):
        if k == 1000:
            states = [pk.adopt(x) for x in (p, w, g, h)]
            assert [type(x).__name__ for x in (p, w, g, h)] == ['ArrayPacer', 'ArrayWatch', 'ArrayGuard', 'ArrayHeld']
            assert pk.adopt(p) is states[0]
        compiled = states is not None and rng.random() < 0.5
        gap = float(rng.choice([0.0, 1e-3, 2.5e-3, 0.03, 0.2], p=[0.05, 0.8, 0.1, 0.04, 0.01]))
        t += gap + rng.uniform(-4e-4, 4e-4)
        a = ref_p.due(t)
        b = pk.pacer_due(states[0].pf, states[0].pi, t) if compiled else p.due(t)
        assert a == b and _pacer_view(p) == _pacer_view(ref_p), k
        late = ref_p.last_late_s
        if a:
            ref_g.update(t, late, ref_p.last_dropped, a)
            g.update(t, late, ref_p.last_dropped, a)
        if ref_g.holding and rng.random() < 0.02:
            ref_g.reset()
            g.reset()
        assert _guard_view(g) == _guard_view(ref_g), k
        if rng.random() < 0.7:
            ref_w.sample(t)
            pk.watch_sample(states[1].wf, states[1].wi, t) if compiled else w.sample(t)
        if rng.random() < 0.01:
            assert w.reset(t) == ref_w.reset(t)
        assert (pk.WATCH_STATES[pk.watch_update(states[1].wf, states[1].wi, t)] if compiled else w.update(t)) \
            == ref_w.update(t)
        assert _watch_view(w) == _watch_view(ref_w), k
        if rng.random() < 0.3:
            value = rng.normal(size=3)
            ref_h.set(value.copy(), t)
            h.set(value, t)
            if states is not None:
                value[0] = 99.0                 # the adopted input holds a copy
        fresh = pk.held_fresh(states[3].stamp[0], t, 0.01) if compiled else h.fresh(t, 0.01)
        assert fresh == ref_h.fresh(t, 0.01) and h.stamp_s == ref_h.stamp_s, k
        np.testing.assert_array_equal(h.get(t, 0.01, np.zeros(3)), ref_h.get(t, 0.01, np.zeros(3)))
    assert ref_g.holds > 2 and ref_w.stale_events > 2 and ref_p.overruns > 0, (ref_g.holds, ref_w.stale_events)
    with pytest.raises(ConfigError, match='no array-backed form'):
        pk.adopt(object())
    # a guard's window of 20 s at 1 kHz (the parameters allow 60 s) fits its ring: its ticks are never refused
    long = OverloadGuard(1e-3, 0.002, 0.02, 0.3, window_s=20.0)
    ring = pk.adopt(long).ring_t.size
    for k in range(21000):
        long.update(k * 1e-3, 0.0, 0)
    assert ring >= 20000 and long.ticks == 21000 and len(long._window) == 20000, (ring, len(long._window))
