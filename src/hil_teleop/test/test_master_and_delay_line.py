"""Master force sources and the delay line (issue item 6: order, bounded memory, jitter, drops)."""

import math

import numpy as np
import pytest

from hil_teleop.delay_line import DelayLine, HeldCommand
from hil_teleop.master import Push, ScriptedOperator, force_from_joy, force_from_wrench


def test_scripted_pushes_deliver_their_exact_impulse_and_eq1_velocity():
    op = ScriptedOperator([Push(1.0, 4.0, (2.0, 0, 0, 0, 0, 0.5), ramp_s=1.0), Push(5.0, 6.0, (-1.0, 0, 0, 0, 0, 0))])
    dt = 1e-3
    t = np.arange(0.0, 8.0, dt) + 0.5 * dt
    numeric = sum(op(ti) for ti in t) * dt
    np.testing.assert_allclose(numeric, op.impulse(), atol=1e-9)
    np.testing.assert_allclose(op.impulse(), [5.0, 0, 0, 0, 0, 1.5])
    assert op(2.5)[0] == 2.0 and op(0.4)[0] == 0.0 and op(1.0)[0] == pytest.approx(1.0)
    k_s, g = np.full(6, 1e-3), np.full(6, 10.0)
    step = ScriptedOperator.velocity_steps([(0.0, 1.0, [0.01, 0, 0, 0, 0, 0])], k_s, g)
    np.testing.assert_allclose(k_s * g * step(0.5), [0.01, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match='push 0'):
        ScriptedOperator([Push(2.0, 1.0, (0,) * 6)])


def test_master_ft_and_joy_map_to_the_reference_force():
    rz90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    f = force_from_wrench([1.0, 0.0, 0.05, 0.0, 0.0, 0.2], rz90, deadband=0.1)
    np.testing.assert_allclose(f, [0.0, 1.0, 0.0, 0.0, 0.0, 0.2])
    with pytest.raises(ValueError):
        force_from_wrench([math.nan, 0, 0, 0, 0, 0])
    f = force_from_joy([0.5, -1.0, 0.02, 2.0], axis_map=[1, 0, -1, -1, -1, 3], scale=[-2.0, 2.0, 1, 1, 1, 0.1],
                       deadband=0.05)
    np.testing.assert_allclose(f, [2.0, 1.0, 0.0, 0.0, 0.0, 0.1])   # axis 3 clipped to 1
    with pytest.raises(ValueError, match='axis_map'):
        force_from_joy([0.0], axis_map=[2, -1, -1, -1, -1, -1], scale=1.0)


def test_delay_line_with_jitter_and_drops_keeps_order_bounded_memory_and_the_delay():
    delay, jitter, period = 5.0, 0.3, 0.001
    line = DelayLine(delay, capacity=6000, jitter_s=jitter, drop_probability=0.1, seed=7)
    delivered = []
    n = 20000
    for k in range(n):
        t = k * period
        line.send(t, k)
        for t_send, msg in line.receive(t):
            delivered.append((t, t_send, msg))
        assert line.queue_length <= line.capacity
    seq = [m for _, _, m in delivered]
    assert seq == sorted(seq), 'the link reordered messages'
    lat = np.array([tr - ts for tr, ts, _ in delivered])
    assert lat.min() >= delay - 1e-12 and lat.max() <= delay + jitter + period
    # about 10 % dropped: binomial, 5 sigma
    p = line.stats.dropped / n
    assert abs(p - 0.1) < 5 * math.sqrt(0.1 * 0.9 / n)
    # in flight ~ (delay + jitter/2) / period * (1 - p); never more than the capacity
    assert line.stats.max_queue_length < (delay + jitter) / period
    assert line.stats.overflows == 0
    assert line.stats.delivered + line.queue_length + line.stats.dropped == n


def test_a_full_line_drops_and_counts_instead_of_growing():
    line = DelayLine(10.0, capacity=100)
    for k in range(1000):
        line.send(k * 0.001, k)
    assert line.queue_length == 100 and line.stats.overflows == 900
    assert [m for _, m in line.receive(1e9)] == list(range(100))


def test_held_command_times_out():
    held = HeldCommand(delay_s=5.0, timeout_s=0.2)
    assert held.get(0.0) is None
    held.update(0.0, 'a')
    assert held.get(5.0) == 'a' and held.get(5.19) == 'a'
    assert held.get(5.21) is None and held.stale_events == 1
    held.update(-1.0, 'old')                   # older than the held one: ignored
    held.update(0.3, 'b')
    assert held.get(5.35) == 'b'


@pytest.mark.parametrize('kwargs', [dict(delay_s=-1.0), dict(delay_s=1.0, capacity=0),
                                    dict(delay_s=1.0, drop_probability=1.0), dict(delay_s=1.0, jitter_s=math.nan)])
def test_bad_delay_line_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        DelayLine(**kwargs)
