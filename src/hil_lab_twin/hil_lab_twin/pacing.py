"""Real-time pacing of the lockstep twin: simulated time follows a wall clock."""

from __future__ import annotations

import time
from typing import Callable


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
