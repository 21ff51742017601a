"""Fixed-step pacing of a wall-clock node: how many rule steps are due now (every fixed-step node uses it).

The rules (admittance Eq. 11, teleop Eqs. 3-10, ...) advance by a fixed ``dt``. A ROS timer may fire late or skip under
load; integrating one ``dt`` per callback would then run the virtual arm and the slave
slower than real time (and the two sides would drift apart). :class:`StepPacer` counts the
steps due since the start and lets the node catch up, at most ``max_catch_up`` per call;
beyond that the missed steps are dropped and counted (``overruns``) rather than replayed
in a burst. Plain Python.
"""

from __future__ import annotations

from hil_common.errors import ConfigError


def steps_since(t0_s: float, now_s: float, dt_s: float) -> int:
    """Whole steps of ``dt_s`` from ``t0_s`` to ``now_s`` (0 before ``t0_s``): the step grid every
    fixed-step node and the mission epoch share (``hil_common.lab_clock``)."""
    return max(0, int((now_s - t0_s) / dt_s + 1e-9))


class StepPacer:
    def __init__(self, dt_s: float, t0_s: float, max_catch_up: int = 20):
        if not dt_s > 0.0:
            raise ConfigError(f'dt_s must be > 0, got {dt_s!r}')
        self.dt_s = float(dt_s)
        self.t0_s = float(t0_s)
        self.max_catch_up = int(max_catch_up)
        self.steps_done = 0
        self.overruns = 0
        self.last_late_s = 0.0      # how long after its time the first due step of the last call ran
        self.last_dropped = 0       # steps the last call dropped

    def due(self, now_s: float) -> int:
        """Steps to run now (0 if the callback came early); marks them done."""
        n = steps_since(self.t0_s, now_s, self.dt_s) - self.steps_done
        self.last_dropped = 0
        if n <= 0:
            self.last_late_s = 0.0
            return 0
        self.last_late_s = now_s - self.step_time(self.steps_done + 1)
        if n > self.max_catch_up:
            self.last_dropped = n - self.max_catch_up
            self.overruns += n - self.max_catch_up
            self.steps_done += n - self.max_catch_up
            n = self.max_catch_up
        self.steps_done += n
        return n

    def skip_to(self, now_s: float) -> int:
        """Mark the steps due by ``now_s`` done without running them (a node starting after the mission's
        t = 0 integrates them in one go, e.g. ``advance_nominal``); returns how many, not counted as overruns."""
        n = max(0, steps_since(self.t0_s, now_s, self.dt_s) - self.steps_done)
        self.steps_done += n
        return n

    def step_time(self, k: int) -> float:
        """Simulated time of step number ``k`` (1-based), on the node's clock."""
        return self.t0_s + k * self.dt_s
