"""Freshness of an input stream: start grace, staleness, and a recovery policy (plain Python, no rclpy).

One :class:`InputWatch` per input (an F/T stream, joint states) decides whether the newest
sample may be used. Its states:

* ``waiting``: no sample yet since :meth:`start`. **Not a fault**: a node that starts before
  its source (a loaded machine, a launch order) waits. After ``start_timeout_s`` it reports
  ``no_data`` (a clear status naming the wait), still without latching anything: the first
  sample ends it.
* ``ok``: the newest sample is at most ``timeout_s`` old.
* ``stale``: it is older. The consumer holds. Each entry counts one ``stale_event``.
* ``recovering``: samples flow again; with ``auto_recover`` the input is usable again once it
  has been fresh for ``recover_after_s`` without a gap longer than ``timeout_s`` (counted in
  ``recoveries``); without it, only :meth:`reset` (a service) makes it usable.

So under load a consumer degrades (counts misses, reports ``stale``/``recovering``, holds while
it must) and recovers on its own when the load goes away, instead of latching for ever.
Times are seconds on one monotonic clock, given by the caller.
"""

from __future__ import annotations

import math

from hil_common.errors import ConfigError

WAITING, NO_DATA, OK, STALE, RECOVERING = 'waiting', 'no_data', 'ok', 'stale', 'recovering'


class HeldInput:
    """The newest value of an input and when it arrived (zero-order hold); a rule uses it while it is
    at most ``timeout_s`` old and a ``fallback`` after (the admittance sides' wrenches, commands and
    measured twists). The simple form of freshness, without :class:`InputWatch`'s recovery policy."""

    def __init__(self, size: int):
        import numpy as np

        self.value, self.stamp_s = np.zeros(size), None

    def set(self, value, now_s: float) -> None:
        self.value, self.stamp_s = value, float(now_s)

    def fresh(self, now_s: float, timeout_s: float) -> bool:
        return self.stamp_s is not None and now_s - self.stamp_s <= timeout_s

    def get(self, now_s: float, timeout_s: float, fallback):
        return self.value if self.fresh(now_s, timeout_s) else fallback


class InputWatch:
    def __init__(self, name: str, timeout_s: float, start_timeout_s: float = math.inf,
                 recover_after_s: float = 0.5, auto_recover: bool = True):
        if not timeout_s > 0.0:
            raise ConfigError(f'{name}: timeout_s must be > 0, got {timeout_s!r}')
        if not start_timeout_s > 0.0 or not recover_after_s >= 0.0:
            raise ConfigError(f'{name}: start_timeout_s must be > 0 and recover_after_s >= 0')
        self.name = name
        self.timeout_s = float(timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.recover_after_s = float(recover_after_s)
        self.auto_recover = bool(auto_recover)
        self.stale_events = 0
        self.recoveries = 0
        self.start_timeouts = 0
        self.samples = 0
        self.start(None)

    def start(self, now_s: float | None) -> None:
        """(Re)start waiting for the first sample (the stream was (re)started at ``now_s``)."""
        self.started_s = now_s
        self.last_s: float | None = None
        self.state = WAITING
        self._healthy_since: float | None = None

    def sample(self, now_s: float) -> None:
        """A valid sample arrived at ``now_s``."""
        last = self.last_s
        if self.state == OK and last is not None and now_s - last <= self.timeout_s:   # the hot path: fresh
            self.last_s = now_s
            self.samples += 1
            return
        if self.started_s is None:
            self.started_s = now_s
        gap = None if self.last_s is None else now_s - self.last_s
        self.samples += 1
        if self.state in (WAITING, NO_DATA):
            self.state = OK
        elif gap is not None and gap > self.timeout_s:
            # a gap nobody looked at (no update() while it lasted): it was stale all the same
            if self.state in (OK, RECOVERING):
                self.stale_events += 1
            self.state = STALE
            self._healthy_since = None
        if self.state == STALE:
            self.state = RECOVERING
        if self.state == RECOVERING and self._healthy_since is None:
            self._healthy_since = now_s
        self.last_s = now_s
        self.update(now_s)

    def update(self, now_s: float) -> str:
        """The state at ``now_s`` (call it before using the input)."""
        if self.started_s is None:
            self.started_s = now_s
        if self.last_s is None:
            if self.state != NO_DATA and now_s - self.started_s > self.start_timeout_s:
                self.start_timeouts += 1
                self.state = NO_DATA
            return self.state
        fresh = now_s - self.last_s <= self.timeout_s
        if not fresh:
            if self.state in (OK, RECOVERING):
                self.stale_events += 1
            self.state = STALE
            self._healthy_since = None
        elif self.state == RECOVERING and self.auto_recover and \
                now_s - self._healthy_since >= self.recover_after_s:
            self.state = OK
            self.recoveries += 1
        return self.state

    def reset(self, now_s: float) -> tuple[bool, str]:
        """Manual recovery: usable again at once if the input is fresh now."""
        state = self.update(now_s)
        if state in (OK, WAITING, NO_DATA):
            return True, f'{self.name}: {state}'
        if state == STALE:
            return False, f'{self.name}: still stale ({self.age(now_s):.3f} s old, limit {self.timeout_s:g} s)'
        self.state = OK
        self.recoveries += 1
        return True, f'{self.name}: fresh again'

    @property
    def usable(self) -> bool:
        return self.state == OK

    def age(self, now_s: float) -> float:
        return math.inf if self.last_s is None else now_s - self.last_s

    def describe(self, now_s: float) -> str:
        """One line for a status message."""
        s = self.state
        if s == WAITING:
            return f'{self.name}: waiting for the first sample'
        if s == NO_DATA:
            return f'{self.name}: no sample {now_s - self.started_s:.1f} s after start (start timeout ' \
                   f'{self.start_timeout_s:g} s); still waiting'
        if s == STALE:
            return f'{self.name}: stale ({self.age(now_s):.3f} s old, limit {self.timeout_s:g} s)'
        if s == RECOVERING:
            how = f'auto after {self.recover_after_s:g} s fresh' if self.auto_recover else 'reset needed'
            return f'{self.name}: fresh again, recovering ({how})'
        return f'{self.name}: ok'

    def counters(self) -> dict[str, int]:
        return {f'{self.name}_stale_events': self.stale_events, f'{self.name}_recoveries': self.recoveries,
                f'{self.name}_start_timeouts': self.start_timeouts}
