"""Real-time pacing of the lockstep twin: simulated time follows a wall clock."""

from __future__ import annotations

import time
from typing import Callable

from hil_common.errors import ConfigError


class RealTimePacer:
    """Steps ``twin`` so that its simulated time follows ``clock`` (seconds, monotonic).

    ``poll()`` steps the twin up to the current wall time. If the machine falls behind by
    more than ``max_catch_up_steps`` steps, the backlog is dropped (simulated time slips)
    and counted in ``overruns`` rather than bursting; ``real_time_factor`` reports the
    achieved ratio of simulated to wall time.
    """

    def __init__(self, twin, clock: Callable[[], float] = time.monotonic, max_catch_up_steps: int = 100):
        self.twin = twin
        self.clock = clock
        self.max_catch_up_steps = max_catch_up_steps
        self.overruns = 0
        self._wall0 = None
        self._sim0 = None
        self._slip = 0.0

    def start(self) -> None:
        self._wall0 = self.clock()
        self._sim0 = self.twin.time
        self._slip = 0.0

    def poll(self) -> int:
        if self._wall0 is None:
            self.start()
        target = self._sim0 + (self.clock() - self._wall0) - self._slip
        steps = self.twin.advance_to(target, self.max_catch_up_steps)
        behind = target - self.twin.time
        if behind > self.twin.dt:
            self.overruns += 1
            self._slip += behind
        return steps

    def sim_time_for_wall(self, wall: float) -> float:
        """Simulated time that corresponds to a wall-clock instant (stamps of published data)."""
        return self._sim0 + (wall - self._wall0) - self._slip

    def wall_time_for_sim(self, t_sim: float) -> float:
        """Wall-clock instant of a simulated time (to stamp published states)."""
        return self._wall0 + (t_sim - self._sim0) + self._slip

    @property
    def real_time_factor(self) -> float:
        elapsed = self.clock() - self._wall0
        return (self.twin.time - self._sim0) / elapsed if elapsed > 0 else float('nan')

    def run(self, duration: float, on_step: Callable[[], None] | None = None, sleep=time.sleep) -> None:
        """Run for ``duration`` wall seconds, calling ``on_step`` after each poll."""
        self.start()
        end = self._wall0 + duration
        while self.clock() < end:
            self.poll()
            if on_step is not None:
                on_step()
            sleep(max(0.0, self.twin.dt - 1e-4))


class WatchedWait:
    """Wall time spent waiting for an answer, as far as the waiter was there to see it.

    The waiter polls (:meth:`elapsed`, every few milliseconds). A gap between two polls longer
    than ``max_poll_gap_s`` means the waiter itself did not run (the machine stalled, the
    process was descheduled): that gap counts as ``max_poll_gap_s`` only, so the answers that
    were held up by the same stall are not declared missing the moment the waiter wakes up."""

    def __init__(self, wall_clock: Callable[[], float] = time.monotonic, max_poll_gap_s: float = 0.25):
        if not max_poll_gap_s > 0:
            raise ConfigError('max_poll_gap_s must be > 0')
        self.wall_clock = wall_clock
        self.max_poll_gap_s = float(max_poll_gap_s)
        self.stalls = 0                    # gaps longer than max_poll_gap_s seen (the waiter stalled)
        self.restart()

    def restart(self) -> None:
        self._waited = 0.0
        self._last = self.wall_clock()

    def elapsed(self) -> float:
        now = self.wall_clock()
        gap = now - self._last
        if gap > self.max_poll_gap_s:
            self.stalls += 1
            gap = self.max_poll_gap_s
        self._waited += max(0.0, gap)
        self._last = now
        return self._waited


#: the steps in a row a starting robot must have been commanded in to be engaged (``SimulatedLabClock``, the start)
START_ANSWERS = 3


class SimulatedLabClock:
    """The twin's own timeline for a live graph (``lab_twin_node`` with ``clock: simulated``).

    The twin steps ``period_s`` at a time (whole physics steps). A step is due once every robot
    the stack commands (``engaged``: it has been commanded since it last missed a step) has been
    commanded again since the last step, or once ``barrier_timeout_s`` of wall time passed without
    that, as the twin watched it (:class:`WatchedWait`: a stall of the twin itself does not count): then the robots still waiting are counted as *misses* and disengaged until their next
    command (a node that holds by not commanding costs one timeout, not one per step; a slow one
    that answers within the timeout costs none). The simulated time never runs ahead
    of ``max_real_time_factor`` times the wall time; after a slow stretch it does not burst to
    catch up (the anchor moves with it). Before the stack commands anything, the twin runs at
    that pace alone.

    *The start* (``start_real_time_factor`` > 0): a robot whose commander has appeared (the node calls
    :meth:`commander_seen` once a publisher of its command topic exists) slows the twin to at most
    ``start_real_time_factor`` times the wall time until it is engaged, which it is once it has been commanded in
    :data:`START_ANSWERS` steps in a row; until then its commands are watched, not waited for. A node held up
    between creating its publisher and its commands (its start-up on a busy machine, while the twin waits only for
    the robots already commanded) then finds the simulated time moved on by ``start_real_time_factor`` times its
    hold-up, not ``max_real_time_factor`` times: the fused servicer hot path, held up 0.27 s there, found
    ``/clock`` 212 ms on and dropped 34 steps (the thirty-fifth session's demo). Engaged at its first command
    instead, a node whose first command came from a sample queued during its start-up (a step of the grid taken
    ahead of its samples) then had no command for the next step, and the twin waited ``barrier_timeout_s`` for it (3
    of 9 starts, 2026-12-01): after a few answered steps in a row its commands keep pace with the twin's steps. A
    robot not engaged within ``start_timeout_s`` of watched wall time is a miss and no longer slows the twin
    (:attr:`start_given_up`); its next command engages it as any robot's.
    """

    def __init__(self, twin, period_s: float, max_real_time_factor: float = 1.0, barrier_timeout_s: float = 2.0,
                 wall_clock: Callable[[], float] = time.monotonic, start_real_time_factor: float = 0.0,
                 start_timeout_s: float = 30.0):
        if not (period_s > 0 and max_real_time_factor > 0 and barrier_timeout_s > 0):
            raise ConfigError('period_s, max_real_time_factor and barrier_timeout_s must be > 0')
        if not (start_real_time_factor >= 0 and start_timeout_s > 0):
            raise ConfigError('start_real_time_factor must be >= 0 and start_timeout_s > 0')
        self.twin = twin
        self.steps_per_period = max(1, int(round(period_s / twin.dt)))
        self.period_s = self.steps_per_period * twin.dt
        self.max_real_time_factor = float(max_real_time_factor)
        self.barrier_timeout_s = float(barrier_timeout_s)
        self.wall_clock = wall_clock
        self._wall0 = self._first_wall = wall_clock()
        self._sim0 = twin.time
        self.engaged: set[str] = set()
        self._answered: set[str] = set()
        self.misses: dict[str, int] = {}
        self.stale_answers: dict[str, int] = {}
        self.steps = 0
        self.wait = WatchedWait(wall_clock)
        # the start: the robots whose commander appeared and which are not engaged yet, each with its wait
        self.start_real_time_factor = min(float(start_real_time_factor), self.max_real_time_factor)
        self.start_timeout_s = float(start_timeout_s)
        self._commanded: set[str] = set()          # engaged at least once (no start for them)
        self._starting: dict[str, WatchedWait] = {}
        self._start_streak: dict[str, int] = {}    # a starting robot's steps in a row with a command
        self._start_answered: set[str] = set()     # the starting robots commanded since the last step
        self.start_given_up: list[str] = []        # commanders seen that were not engaged within start_timeout_s
        self._last_step_wall = wall_clock()

    def commander_seen(self, robot: str) -> None:
        """A publisher of ``robot``'s commands exists (its node is starting): until the robot is engaged (*the start*
        above) the twin steps at ``start_real_time_factor`` at most (with it 0: nothing changes)."""
        if self.awaits_commander(robot):
            self._starting[robot] = WatchedWait(self.wall_clock)
            self._start_streak[robot] = 0

    def awaits_commander(self, robot: str) -> bool:
        """True while the start would slow the twin for ``robot`` once its commander appears."""
        return (self.start_real_time_factor > 0 and robot not in self._commanded and robot not in self._starting
                and robot not in self.start_given_up)

    @property
    def starting(self) -> list[str]:
        """The robots whose commander appeared and which are not engaged yet (the twin at its start pace)."""
        return sorted(self._starting)

    def answered(self, robot: str, stamp_s: float | None = None) -> bool:
        """The stack commanded ``robot``; True when that answers the step from the current time.

        ``stamp_s``: the simulated time the stack computed the command for (a stamped joint trajectory).
        It answers only the step from that time on: a command stamped earlier is one still in flight from
        an earlier step (the stack answered that step with a newer one, or the twin stepped before it
        came), so it engages the robot but does not answer (``stale_answers``). Taking it would add a
        control period to the loop in some runs and not in others. A starting robot's command is watched: it
        counts towards its engagement (*the start* above) and releases nothing."""
        stale = stamp_s is not None and stamp_s < self.twin.time - 1e-3 * self.period_s
        if stale:
            self.stale_answers[robot] = self.stale_answers.get(robot, 0) + 1
        if robot in self._starting:
            if not stale:
                self._start_answered.add(robot)
            return False
        self.engaged.add(robot)
        self._commanded.add(robot)
        if stale:
            return False
        self._answered.add(robot)
        return True

    def waiting_for(self) -> list[str]:
        return sorted(self.engaged - self._answered)

    def step_due(self) -> bool:
        waited = self.wait.elapsed()
        now = self.wall_clock()
        ahead = (self.twin.time + self.period_s - self._sim0) - (now - self._wall0) * self.max_real_time_factor
        start_pace_allows = self._start_pace_allows(now)      # (polls the start's waits)
        if ahead > 1e-9 or not start_pace_allows:
            return False
        return not self.waiting_for() or waited >= self.barrier_timeout_s

    def _start_pace_allows(self, now: float) -> bool:
        """False while a robot's commander has appeared, the robot not engaged yet, and the last step came less
        than ``period_s / start_real_time_factor`` ago; a robot waited for ``start_timeout_s`` is given up (a miss)."""
        for robot, wait in list(self._starting.items()):
            if wait.elapsed() >= self.start_timeout_s:
                del self._starting[robot]
                self._start_answered.discard(robot)
                self.start_given_up.append(robot)
                self.misses[robot] = self.misses.get(robot, 0) + 1
        return not self._starting or now - self._last_step_wall >= self.period_s / self.start_real_time_factor

    def step(self, after_each_physics_step: Callable[[], None] | None = None) -> None:
        """Advance one period (call when :meth:`step_due`)."""
        for robot in self.waiting_for():
            self.misses[robot] = self.misses.get(robot, 0) + 1
            self.engaged.discard(robot)
        self._answered.clear()
        for robot in list(self._starting):     # the start: engaged after START_ANSWERS steps in a row with a command
            self._start_streak[robot] = self._start_streak[robot] + 1 if robot in self._start_answered else 0
            if self._start_streak[robot] >= START_ANSWERS:
                del self._starting[robot]
                self.engaged.add(robot)
                self._commanded.add(robot)
        self._start_answered.clear()
        for _ in range(self.steps_per_period):
            self.twin.step(1)
            if after_each_physics_step is not None:
                after_each_physics_step()
        self.steps += 1
        now = self.wall_clock()
        self._last_step_wall = now
        self.wait.restart()
        # behind the pace by more than a period: move the anchor, so a slow stretch is followed by one period at
        # once at most, not by a burst. Less is caught up: the node polls every 2 ms, so a step comes up to a poll
        # late, and with the anchor moved by each such lateness 4 ms periods came 6 ms apart (0.67x real time at 1x)
        self._wall0 = max(self._wall0, now - (self.twin.time - self._sim0 + self.period_s) / self.max_real_time_factor)

    def counters(self) -> dict:
        elapsed = self.wall_clock() - self._first_wall
        return {'time_s': self.twin.time, 'steps': self.steps, 'misses': dict(self.misses), 'stalls': self.wait.stalls,
                'stale_answers': dict(self.stale_answers),
                'waiting_for': self.waiting_for(), 'starting': self.starting,
                'real_time_factor': (self.twin.time - self._sim0) / elapsed if elapsed > 0 else float('nan')}


def status_values(counters: dict, stalls: int = 0) -> dict[str, str]:
    """The key-values of ``lab_twin/status`` (strings) for :meth:`SimulatedLabClock.counters` (``stalls``: more
    stalls the node watched, e.g. while waiting for the F/T drivers). :func:`counters_from_status` reads them."""
    flat = {'time_s': counters['time_s'], 'steps': counters['steps'], 'real_time_factor': counters['real_time_factor'],
            'waiting_for': ' '.join(counters['waiting_for']), 'starting': ' '.join(counters.get('starting', ())),
            'stalls': counters['stalls'] + stalls,
            **{f'misses.{ns}': n for ns, n in counters['misses'].items()},
            **{f'stale_answers.{ns}': n for ns, n in counters['stale_answers'].items()}}
    return {k: str(v) for k, v in flat.items()}


def counters_from_status(values: dict[str, str]) -> dict:
    """The twin's clock counters from ``lab_twin/status`` key-values (:func:`status_values`): ``steps``,
    ``real_time_factor``, ``stalls``, and per robot ``misses`` (steps taken without its command) and
    ``stale_answers`` (commands for an earlier step, not taken). Empty values (no status yet) read as zero."""
    def per_robot(prefix):
        return {k.removeprefix(prefix): int(v) for k, v in values.items() if k.startswith(prefix)}
    return {'steps': int(values.get('steps', 0)), 'real_time_factor': float(values.get('real_time_factor', 'nan')),
            'stalls': int(values.get('stalls', 0)), 'misses': per_robot('misses.'),
            'stale_answers': per_robot('stale_answers.')}
