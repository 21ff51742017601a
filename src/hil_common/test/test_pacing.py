"""StepPacer: fixed steps on a wall clock, catching up on late callbacks, bounded bursts."""

import pytest

from hil_common.pacing import StepPacer


def test_late_callbacks_catch_up_so_simulated_time_tracks_the_clock():
    p = StepPacer(0.005, t0_s=100.0, max_catch_up=50)
    assert p.due(100.001) == 0
    assert p.due(100.005) == 1
    assert p.due(100.0051) == 0                  # early: nothing new
    assert p.due(100.1) == 19                    # a 95 ms stall: 19 steps at once
    assert p.step_time(p.steps_done) == pytest.approx(100.1)
    assert p.overruns == 0


def test_a_long_stall_drops_and_counts_beyond_the_burst_limit():
    p = StepPacer(0.01, t0_s=0.0, max_catch_up=10)
    assert p.due(1.0) == 10 and p.overruns == 90
    assert p.steps_done == 100 and p.due(1.01) == 1
    with pytest.raises(ValueError):
        StepPacer(0.0, 0.0)
