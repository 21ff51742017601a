"""What a fixed-step node does when its machine cannot keep up: degrade, say so, hold only when it must (issue 15 item 6).

A wall-clock node's :class:`hil_common.pacing.StepPacer` runs the steps that are due at each
timer callback. On a loaded machine the callbacks come late: the steps then run late, in
catch-up bursts, on inputs that aged meanwhile, so the HIL loop's delay grows beyond the one it
was designed and checked for (seed 004 §VI; the delay is what makes an admittance loop unstable).
Beyond ``max_catch_up`` steps the pacer drops steps: the integration skips simulated time, and
the run is no longer the mission.

:class:`OverloadGuard` turns what the pacer saw at each tick (how late the first due step ran,
how many steps were dropped) into one of three levels and a hold decision:

* **ok** -- on time (``late <= warn_late_s``) and nothing dropped;
* **degraded** (WARN) -- ticks ran late but within ``hold_late_s`` and nothing was dropped: the
  node keeps stepping (the lower effective rate is counted, ``late_ticks``, ``max_late_s``);
* **hold** (ERROR) -- a tick ran later than ``hold_late_s``, or steps were dropped, or the steps of
  the last ``window_s`` ran on average more than ``mean_late_s`` late: the node's rule holds (for
  the servicer admittance: table still, arm on gravity compensation only,
  :class:`hil_admittance.servicer_side.ServicerSide`).

The mean is taken per step, over the steps run in the window: a catch-up burst of ``n`` steps
whose first ran ``late`` after its time runs step ``k`` ``late - k dt`` late. It is the delay the
loop's output carried on average, the quantity that destabilises an admittance loop (seed 004
§VI), whatever the pattern of the lateness. Without it a loop that runs steadily late by less than
``hold_late_s`` is only reported: a wall-clock Envisat graph at 100 Hz with CPU-heavy work beside
it went unstable into F/T overloads with at most 130 ms of lateness, while idle runs late by at
most 44-83 ms approached without oscillation (docs/envisat_capture.md). The default threshold
(50 ms mean over 1 s) lies between the two; it is our assumption, not a seed value.

Recovery follows ``policy``: ``auto`` clears the hold after ``recover_after_s`` of calm ticks (none that
would hold, and the window's mean lateness below half of ``mean_late_s``; a tick a little late, beyond
``warn_late_s`` only, is reported as degraded but does not keep the node held: on a busy 2-core machine
such ticks came every second or two after the load had gone, and a hold waiting for 2 s without one
never cleared);
``latch`` keeps it until :meth:`OverloadGuard.reset`; ``off`` never holds (it still reports).
Plain Python, no rclpy; times in seconds on the node's clock.
"""

from __future__ import annotations

import collections
import math

from hil_common.errors import ConfigError

POLICIES = ('auto', 'latch', 'off')
OK, WARN, ERROR = 0, 1, 2        # diagnostic_msgs/DiagnosticStatus levels


def due_steps(pacer, guard: 'OverloadGuard | None', now_s: float) -> int:
    """The steps ``pacer`` (:class:`hil_common.pacing.StepPacer`) has due at ``now_s``; when some are,
    ``guard`` (if any) judges how late they run and what was dropped."""
    steps = pacer.due(now_s)
    if steps and guard is not None:
        guard.update(now_s, pacer.last_late_s, pacer.last_dropped, steps)
    return steps


def burst_lateness_s(late_s: float, steps: int, dt_s: float) -> float:
    """Sum of the lateness of ``steps`` steps run at once, the first ``late_s`` after its time and
    step ``k`` ``late_s - k dt_s`` (never below 0): ``m late - dt m (m - 1) / 2`` over the ``m`` steps
    that were late at all."""
    if late_s <= 0.0 or steps <= 0:
        return 0.0
    m = min(int(steps), int(late_s / dt_s) + 1)
    return m * late_s - dt_s * m * (m - 1) / 2.0


def overload_params(reset_service: str) -> list:
    """The overload parameters of a fixed-step node (one definition for every node that has a guard)."""
    from hil_common.params import Param

    return [
        Param('overload_policy', 'auto', 'When the node cannot keep up (hil_common.overload): auto (hold, resume '
              f'after overload_recover_after_s calm), latch (hold until {reset_service}), off (report only)',
              choices=POLICIES),
        Param('overload_warn_late_s', 0.02, 'A step that runs later than this after its time is reported as '
              'degraded [s]', min=1e-6, max=10.0),
        Param('overload_hold_late_s', 0.2, 'A step later than this (or dropped steps) holds the node\'s output [s]',
              min=1e-6, max=60.0),
        Param('overload_mean_late_s', 0.05, 'Steps that ran on average later than this over '
              'overload_window_s hold the node\'s output too (a loop steadily late by less than '
              'overload_hold_late_s) [s]', min=1e-6, max=60.0),
        Param('overload_window_s', 1.0, 'The window of overload_mean_late_s [s]', min=0.01, max=60.0),
        Param('overload_recover_after_s', 2.0, 'Calm this long (nothing that holds, the mean lateness below half of '
              'overload_mean_late_s) clears an overload hold (policy auto) [s]',
              min=0.0, max=600.0),
    ]


def overload_guard(p, dt_s: float, simulated_clock: bool = False) -> 'OverloadGuard':
    """The guard of a node from its validated parameters (:func:`overload_params`); a hold threshold
    below the warning threshold is refused naming ``overload_hold_late_s``.

    On the simulated clock (``use_sim_time``: the lab twin waits for the stack every step) the guard
    only reports (policy ``off``): a step late in simulated time, or dropped, is the clock's
    granularity against the node's rate and catch-up, not a machine that cannot keep up, and a hold
    would cut the physics short (the teleop twin's payload lost 19 % of its momentum to one).
    """
    from hil_common.params import ParameterError

    if p.overload_hold_late_s < p.overload_warn_late_s:
        raise ParameterError(f"parameter 'overload_hold_late_s': {p.overload_hold_late_s} is below "
                             f'overload_warn_late_s {p.overload_warn_late_s}')
    return OverloadGuard(dt_s, p.overload_warn_late_s, p.overload_hold_late_s, p.overload_recover_after_s,
                         'off' if simulated_clock else p.overload_policy,
                         mean_late_s=p.overload_mean_late_s, window_s=p.overload_window_s)


class OverloadGuard:
    """The overload policy of one fixed-step node (see the module docstring)."""

    def __init__(self, dt_s: float, warn_late_s: float, hold_late_s: float, recover_after_s: float,
                 policy: str = 'auto', mean_late_s: float = math.inf, window_s: float = 1.0):
        if policy not in POLICIES:
            raise ConfigError(f'overload policy must be one of {POLICIES}, got {policy!r}')
        for name, value in (('dt_s', dt_s), ('warn_late_s', warn_late_s), ('hold_late_s', hold_late_s)):
            if not (math.isfinite(value) and value > 0.0):
                raise ConfigError(f'{name} must be finite and > 0, got {value!r}')
        if not hold_late_s >= warn_late_s:
            raise ConfigError(f'hold_late_s ({hold_late_s}) must be >= warn_late_s ({warn_late_s})')
        if not (math.isfinite(recover_after_s) and recover_after_s >= 0.0):
            raise ConfigError(f'recover_after_s must be finite and >= 0, got {recover_after_s!r}')
        if not mean_late_s > 0.0:
            raise ConfigError(f'mean_late_s must be > 0 (inf: no mean check), got {mean_late_s!r}')
        if not (math.isfinite(window_s) and window_s > 0.0):
            raise ConfigError(f'window_s must be finite and > 0, got {window_s!r}')
        self.mean_late_s, self.window_s = float(mean_late_s), float(window_s)
        self._window: collections.deque = collections.deque()      # (now_s, steps, summed lateness) per tick
        self._window_steps, self._window_late = 0, 0.0
        self._first_tick_s: float | None = None
        self.mean_late_window_s = 0.0       # the mean lateness per step over the last window
        self.dt_s, self.warn_late_s, self.hold_late_s = float(dt_s), float(warn_late_s), float(hold_late_s)
        self.recover_after_s, self.policy = float(recover_after_s), policy
        self.holding = False
        self.level = OK
        self.reason = ''
        self.ticks = self.late_ticks = self.dropped_steps = self.holds = 0
        self.max_late_s = 0.0
        self._on_time_since: float | None = None
        self._calm_since: float | None = None

    def _mean_late(self, now_s: float, late_s: float, steps: int) -> float | None:
        """The window's mean lateness per step after this tick, or None while less than a window was seen."""
        if self._first_tick_s is None:
            self._first_tick_s = now_s
        late_sum = burst_lateness_s(late_s, steps, self.dt_s)
        self._window.append((now_s, steps, late_sum))
        self._window_steps += steps
        self._window_late += late_sum
        while self._window and self._window[0][0] <= now_s - self.window_s + 1e-9:     # ns clocks
            _, n, lat = self._window.popleft()
            self._window_steps -= n
            self._window_late -= lat
        if not self._window:                # float round-off of the running sums
            self._window_steps, self._window_late = 0, 0.0
        self.mean_late_window_s = self._window_late / self._window_steps if self._window_steps else 0.0
        return self.mean_late_window_s if now_s - self._first_tick_s >= self.window_s - 1e-9 else None

    def update(self, now_s: float, late_s: float, dropped: int, steps: int = 1) -> bool:
        """One tick: ``steps`` steps ran now, the first ``late_s`` after its time, and ``dropped`` steps
        were skipped. Returns True when the level changed (the node then publishes its status)."""
        before = (self.level, self.holding)
        self.ticks += 1
        late_s = max(0.0, float(late_s))
        mean_late = self._mean_late(now_s, late_s, max(1, int(steps)))
        steadily_late = mean_late is not None and mean_late > self.mean_late_s
        self.max_late_s = max(self.max_late_s, late_s)
        self.dropped_steps += int(dropped)
        on_time = late_s <= self.warn_late_s and dropped == 0
        if not on_time:
            self.late_ticks += 1
            self._on_time_since = None
        elif self._on_time_since is None:
            self._on_time_since = now_s
        must_hold = dropped > 0 or late_s > self.hold_late_s or steadily_late
        # calm: nothing that holds, and the window's mean below half its hold threshold (the hysteresis of the
        # steady-lateness hold); a tick a little late (beyond warn_late_s) is degraded, not a reason to stay held
        calm = not must_hold and self.mean_late_window_s <= 0.5 * self.mean_late_s
        if not calm:
            self._calm_since = None
        elif self._calm_since is None:
            self._calm_since = now_s
        if must_hold and self.policy != 'off':
            if not self.holding:
                self.holds += 1
            self.holding = True
            self.reason = (f'{dropped} steps dropped' if dropped else
                           f'a step ran {late_s * 1e3:.0f} ms late (hold beyond {self.hold_late_s * 1e3:.0f} ms)'
                           if late_s > self.hold_late_s else self._steady_reason())
        elif self.holding and self.policy == 'auto' and calm and now_s - self._calm_since >= self.recover_after_s:
            self.holding = False
        if self.holding:
            self.level = ERROR
        elif must_hold or not on_time:
            self.level = WARN
            self.reason = (f'{dropped} steps dropped' if dropped else self._steady_reason() if steadily_late else
                           f'running late: a step ran {late_s * 1e3:.0f} ms after its time')
        elif self._on_time_since is not None and now_s - self._on_time_since >= self.recover_after_s:
            self.level = OK
        elif self.level == ERROR:
            # the hold just cleared (calm), but not yet on time for recover_after_s: degraded, not held (it
            # used to stay ERROR with the text 'on time', and a live report kept the hold open)
            self.level = WARN
            self.reason = 'recovering from a hold: on time again'
        return (self.level, self.holding) != before

    def _steady_reason(self) -> str:
        return (f'steadily late: the steps of the last {self.window_s:g} s ran {self.mean_late_window_s * 1e3:.0f} ms '
                f'late on average (hold beyond {self.mean_late_s * 1e3:.0f} ms)')

    def reset(self) -> None:
        """Clear a hold (the ``latch`` policy's way out; with ``auto`` it clears itself)."""
        self.holding = False
        self.level = OK if self._on_time_since is not None else WARN

    def message(self) -> str:
        if self.holding:
            return f'overloaded, holding: {self.reason}'
        if self.level == WARN:
            return f'degraded: {self.reason}'
        return 'on time'

    def values(self) -> dict[str, str]:
        """Counters for a DiagnosticStatus (keys with 'dropped'/'late' are what the live report counts)."""
        return {'ticks': str(self.ticks), 'late_ticks': str(self.late_ticks), 'dropped_steps': str(self.dropped_steps),
                'max_late_ms': f'{self.max_late_s * 1e3:.1f}', 'mean_late_ms': f'{self.mean_late_window_s * 1e3:.1f}',
                'holds': str(self.holds),
                'holding': str(self.holding).lower(), 'policy': self.policy}
