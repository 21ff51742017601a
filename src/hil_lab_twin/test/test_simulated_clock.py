"""The twin's simulated clock (``SimulatedLabClock``, ``lab_twin_node`` with ``clock: simulated``).

The rule is driven by a wall clock the test sets, and steps a real ``LabTwin`` (1 ms physics,
4 ms periods). Checked: the pace never exceeds ``max_real_time_factor`` and does not burst after
a slow stretch; a commanded robot holds the next step until it is commanded again; a robot that
stops answering costs one ``barrier_timeout_s`` (a miss), not one per step, until it answers again;
a stall of the twin itself (of the whole machine) is not the stack's silence.
"""

import pytest

from hil_lab_twin.pacing import START_ANSWERS, SimulatedLabClock, counters_from_status, status_values
from hil_lab_twin.scene import RobotConfig, TwinConfig
from hil_lab_twin.twin import LabTwin


class WallClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture(scope='module')
def twin():
    return LabTwin(TwinConfig(robots=(RobotConfig('client'),)))


def test_the_pace_is_capped_and_does_not_burst(twin):
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall)
    t0 = twin.time
    assert not clock.step_due()                # no wall time has passed: 4 ms of simulation would be ahead
    wall.now += 0.004
    assert clock.step_due()
    clock.step()
    assert twin.time - t0 == pytest.approx(0.004) and not clock.step_due()
    wall.now += 1.0                            # a slow stretch of 1 s: the twin does not catch up in a burst
    clock.step()
    assert clock.step_due()                    # (one period at once at most)
    clock.step()
    assert not clock.step_due()
    wall.now += 0.004
    assert clock.step_due()


def test_a_step_that_came_a_poll_late_is_caught_up(twin):
    """The node polls every 2 ms: a step comes up to a poll late. Such lateness is caught up, so the twin keeps
    1x real time; with the anchor moved by every late step, 4 ms periods polled every 3 ms came 6 ms apart."""
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall)
    t0 = twin.time
    for _ in range(400):                       # 1.2 s of wall time, polled every 3 ms
        wall.now += 0.003
        if clock.step_due():
            clock.step()
    assert twin.time - t0 == pytest.approx(1.2, abs=0.0045)


def test_the_stack_holds_each_step_and_a_silent_robot_costs_one_timeout(twin):
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall)
    wall.now += 0.004
    clock.answered('client')                   # the stack engages
    clock.step()
    wall.now += 1.0                            # much later in wall time, but not commanded again yet
    assert clock.waiting_for() == ['client'] and not clock.step_due()
    clock.answered('client')
    assert clock.step_due()
    clock.step()
    for _ in range(199):                       # it stops answering (the twin polls every 10 ms) ...
        wall.now += 0.01
        assert not clock.step_due()
    wall.now += 0.01                           # ... for 2 s: one timeout, a miss
    assert clock.step_due()
    clock.step()
    assert clock.misses == {'client': 1} and clock.waiting_for() == []
    for _ in range(10):                        # then the twin runs on without waiting for it
        wall.now += 0.004
        assert clock.step_due()
        clock.step()
    assert clock.misses == {'client': 1}
    clock.answered('client')                   # it answers again: waited for again
    clock.step()
    wall.now += 0.004
    assert clock.waiting_for() == ['client'] and not clock.step_due()
    assert clock.counters()['steps'] == 14


def test_a_stall_of_the_twin_itself_is_not_a_miss(twin):
    """CI: the whole machine stalled for over 2 s; when the twin woke up it stepped on without the
    stack's answers (one miss per robot), and the client's hot path then held on stale joint
    states: the simulated timeline changed. Only wall time the twin was there to watch counts."""
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall)
    wall.now += 0.004
    clock.answered('client')
    clock.step()
    wall.now += 5.0                            # nothing ran for 5 s, the twin neither
    assert not clock.step_due() and clock.misses == {}
    wall.now += 0.01
    clock.answered('client')                   # the stack's answer, held up by the same stall
    assert clock.step_due()
    clock.step()
    assert clock.misses == {} and clock.counters()['stalls'] == 1
    t_step = wall.now
    for _ in range(250):                       # a stack that stays silent while the twin watches: a miss
        wall.now += 0.01
        if clock.step_due():
            break
    assert wall.now - t_step == pytest.approx(2.0, abs=0.015)
    clock.step()
    assert clock.misses == {'client': 1}


def test_a_command_stamped_for_an_earlier_step_does_not_answer_this_one(twin):
    """``command_stamps``: the stack stamps each command with the simulated time it is for. At time t the
    twin takes only a command stamped t or later as the answer for its step from t; one stamped earlier
    (still in flight from the step before, or the twin stepped before it came) engages the robot but does
    not release the step. Taking it would run the loop one control period later in some runs than in
    others (the CISAS twin's restitution moved by 1.4 % between runs that way)."""
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall)
    wall.now += 0.004
    t = twin.time
    assert clock.answered('client', t) and clock.step_due()   # the command for now: answers
    clock.step()
    wall.now += 0.004
    t = twin.time
    assert not clock.answered('client', t - 0.004)             # the previous step's, arriving late
    assert clock.waiting_for() == ['client'] and not clock.step_due()
    assert clock.stale_answers == {'client': 1} and clock.counters()['stale_answers'] == {'client': 1}
    assert clock.answered('client', t) and clock.step_due()   # this step's command
    clock.step()
    wall.now += 0.004
    assert clock.answered('client') and clock.step_due()      # unstamped (forward_position): any command answers
    assert clock.misses == {}
    # what lab_twin/status carries, read back as numbers (the live runs and the teleop demo read it so)
    back = counters_from_status(status_values(clock.counters(), stalls=2))
    assert back['stale_answers'] == {'client': 1} and back['misses'] == {} and back['steps'] == clock.steps
    assert back['stalls'] == clock.wait.stalls + 2


def test_from_a_commanders_start_until_it_keeps_pace_the_twin_steps_at_the_start_pace(twin):
    """``start_real_time_factor``: once a robot's commander has appeared and until it has been commanded in
    ``START_ANSWERS`` steps in a row, the twin steps at most that fast and does not wait for it, so a node held up in
    its start-up finds the simulated time only that far on (the fused servicer hot path, held up 0.27 s while the twin
    waited only for the client, found ``/clock`` 212 ms on and dropped 34 steps). A step without its command (a node
    whose first command came from a sample queued in its start-up: the twin waited 10 s for the next one) starts the
    count again, and is no miss. Before any commander appears, and once engaged, the pace is the usual one."""
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall,
                              start_real_time_factor=0.05, start_timeout_s=30.0)

    def run(seconds, answer=(), steps=None):
        """Poll every 2 ms of wall time for ``seconds`` (or until ``steps`` steps) as the node does, the robots of
        ``answer`` answering each step at once; the simulated time that passed."""
        t0, n = twin.time, 0
        for _ in range(int(round(seconds / 0.002))):
            wall.now += 0.002
            if clock.step_due():
                clock.step()
                n += 1
                for robot in answer:
                    clock.answered(robot)
                if n == steps:
                    break
        return twin.time - t0

    assert run(0.4) == pytest.approx(0.4, abs=0.0045)          # no commander yet: the usual pace
    clock.answered('client')                                    # the client's node commands from here on
    assert run(0.4, ['client']) == pytest.approx(0.4, abs=0.0045)
    clock.commander_seen('servicer')                            # the servicer's node starts (its publisher) ...
    assert clock.starting == ['servicer'] and not clock.awaits_commander('servicer')
    held_up = run(0.3, ['client'])                              # ... and is held up 0.3 s before its commands
    assert 0.05 * 0.3 - 0.004 <= held_up <= 0.05 * 0.3 + 0.004, held_up
    assert not clock.answered('servicer')                       # its first command: watched, not waited for ...
    run(1.0, ['client'], steps=1)
    assert clock.starting == ['servicer'] and clock.waiting_for() == []
    run(1.0, ['client'], steps=1)                               # ... a step without one starts the count again
    assert clock.starting == ['servicer'] and clock.misses == {}
    for k in range(START_ANSWERS):                              # commanded in START_ANSWERS steps in a row
        assert clock.starting == ['servicer'], k
        clock.answered('servicer')
        assert run(1.0, ['client'], steps=1) == pytest.approx(0.004)
    assert clock.starting == [] and clock.waiting_for() == ['servicer'] and clock.misses == {}
    clock.answered('servicer')                                  # engaged: waited for, at the usual pace
    assert run(0.4, ['client', 'servicer']) == pytest.approx(0.4, abs=0.0085)
    clock.commander_seen('servicer')                            # commanded before: never slows again
    assert clock.starting == [] and clock.misses == {}
    assert status_values(clock.counters())['starting'] == ''


def test_a_commander_that_never_commands_is_a_miss_after_the_start_timeout(twin):
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall,
                              start_real_time_factor=0.05, start_timeout_s=3.0)
    clock.commander_seen('client')
    assert status_values(clock.counters())['starting'] == 'client'
    steps = 0
    for _ in range(1499):                                       # 3 s less 2 ms, polled every 2 ms: the start pace
        wall.now += 0.002
        if clock.step_due():
            clock.step()
            steps += 1
    # (a step once 80 ms have passed, polled every 2 ms: 80 or 82 ms apart as the sums of 2 ms round)
    assert 3.0 / 0.082 - 1 <= steps <= 3.0 / 0.080 and clock.misses == {}, steps
    wall.now += 0.004
    clock.step_due()                                            # 3 s (and the sums' rounding): given up, a miss
    assert clock.start_given_up == ['client'] and clock.misses == {'client': 1} and clock.starting == []
    t0 = twin.time
    for _ in range(100):                                        # then the usual pace
        wall.now += 0.002
        if clock.step_due():
            clock.step()
    assert twin.time - t0 == pytest.approx(0.2, abs=0.0045)
    clock.commander_seen('client')                              # not waited for at the start again
    assert clock.starting == [] and not clock.awaits_commander('client')
    assert clock.answered('client') and clock.waiting_for() == []   # its command engages it as any robot's


def test_without_a_start_pace_a_commander_changes_nothing(twin):
    wall = WallClock()
    clock = SimulatedLabClock(twin, 0.004, max_real_time_factor=1.0, barrier_timeout_s=2.0, wall_clock=wall)
    clock.commander_seen('client')
    assert clock.starting == [] and not clock.awaits_commander('client')
    t0 = twin.time
    for _ in range(100):
        wall.now += 0.002
        if clock.step_due():
            clock.step()
    assert twin.time - t0 == pytest.approx(0.2, abs=0.0045)
