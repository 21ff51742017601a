"""One-way communication delay between earth and orbit (seed 001 Fig. 1, ``t_delay``).

:class:`DelayLine` is one direction of the link (earth->orbit carries ``f_m`` and ``x_vir``;
orbit->earth the slave joint states and wrench). A message sent at ``t_send`` is delivered
at ``t_send + delay + jitter``:

* **order is preserved**: a message is never delivered before one sent earlier (a jittered
  delivery time is raised to the previous one), as a single space link is FIFO;
* **bounded memory**: at most ``capacity`` messages are in flight; a message that finds the
  line full is dropped and counted (``overflows``) — the queue never grows without bound;
* **drops**: each message is lost with probability ``drop_probability`` (counted);
* jitter is uniform in ``[0, jitter_s]`` from a seeded generator, so runs are reproducible;
* :attr:`queue_length` reports the messages in flight.

:class:`HeldCommand` is the receiving end's zero-order hold with a staleness timeout:
a command whose age (receive time minus send time, minus the nominal delay) exceeds
``timeout_s`` is stale, and the slave then commands zero velocity.

Plain Python, no rclpy. Times are seconds on the caller's clock.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from hil_common.errors import ConfigError

T = TypeVar('T')


@dataclass
class DelayLineStats:
    sent: int = 0
    delivered: int = 0
    dropped: int = 0
    overflows: int = 0
    max_queue_length: int = 0


class DelayLine(Generic[T]):
    """A FIFO link with a fixed delay, optional jitter and drops, and bounded memory."""

    def __init__(self, delay_s: float, capacity: int = 100_000, jitter_s: float = 0.0,
                 drop_probability: float = 0.0, seed: int = 0):
        if not math.isfinite(delay_s) or delay_s < 0.0:
            raise ConfigError(f'delay_s must be finite and >= 0, got {delay_s!r}')
        if int(capacity) != capacity or capacity < 1:
            raise ConfigError(f'capacity must be a positive integer, got {capacity!r}')
        if not math.isfinite(jitter_s) or jitter_s < 0.0:
            raise ConfigError(f'jitter_s must be finite and >= 0, got {jitter_s!r}')
        if not 0.0 <= drop_probability < 1.0:
            raise ConfigError(f'drop_probability must be in [0, 1), got {drop_probability!r}')
        self.delay_s = float(delay_s)
        self.capacity = int(capacity)
        self.jitter_s = float(jitter_s)
        self.drop_probability = float(drop_probability)
        self._rng = np.random.default_rng(seed)
        self._queue: deque[tuple[float, float, Any]] = deque()
        self._last_due = -math.inf
        self.stats = DelayLineStats()

    @property
    def queue_length(self) -> int:
        return len(self._queue)

    def send(self, t_send: float, message: T) -> bool:
        """Put ``message`` on the line at time ``t_send``; False if it was dropped or overflowed."""
        self.stats.sent += 1
        if self.drop_probability > 0.0 and self._rng.random() < self.drop_probability:
            self.stats.dropped += 1
            return False
        if len(self._queue) >= self.capacity:
            self.stats.overflows += 1
            return False
        due = t_send + self.delay_s
        if self.jitter_s > 0.0:
            due += self._rng.random() * self.jitter_s
        due = max(due, self._last_due)          # FIFO: never overtake an earlier message
        self._last_due = due
        self._queue.append((due, t_send, message))
        self.stats.max_queue_length = max(self.stats.max_queue_length, len(self._queue))
        return True

    def receive(self, t_now: float) -> list[tuple[float, T]]:
        """Every message due at ``t_now``, oldest first, as ``(t_send, message)``."""
        out = []
        q = self._queue
        while q and q[0][0] <= t_now:
            _, t_send, message = q.popleft()
            out.append((t_send, message))
        self.stats.delivered += len(out)
        return out

    def clear(self) -> None:
        self._queue.clear()


class HeldCommand(Generic[T]):
    """Zero-order hold of the newest delivered command, stale after ``timeout_s``.

    ``age = t_now - t_send - delay_s`` is how much later than expected the held command is;
    with a healthy link it stays below one sending period. ``get`` returns ``None`` when
    nothing arrived yet or the command is stale.
    """

    def __init__(self, delay_s: float, timeout_s: float):
        if not math.isfinite(timeout_s) or timeout_s <= 0.0:
            raise ConfigError(f'timeout_s must be finite and > 0, got {timeout_s!r}')
        self.delay_s = float(delay_s)
        self.timeout_s = float(timeout_s)
        self.t_send: float | None = None
        self.value: T | None = None
        self.stale_events = 0
        self._was_stale = False

    def update(self, t_send: float, value: T) -> None:
        if self.t_send is None or t_send >= self.t_send:   # ignore anything older than what we hold
            self.t_send, self.value = t_send, value

    def age(self, t_now: float) -> float:
        return math.inf if self.t_send is None else t_now - self.t_send - self.delay_s

    def get(self, t_now: float) -> T | None:
        stale = self.age(t_now) > self.timeout_s
        if stale and not self._was_stale and self.t_send is not None:
            self.stale_events += 1
        self._was_stale = stale
        return None if stale else self.value
