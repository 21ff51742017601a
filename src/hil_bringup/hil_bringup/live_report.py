"""What a live graph run achieved, and whether it did its job (no rclpy).

The demos and DDS tests feed a :class:`LiveReport` with what they observe on the graph
(phases, fault and status messages, message counts) and the nodes' exit codes and logs;
:meth:`LiveReport.finish` returns the summary and the list of problems. A run with any
problem has not done its job: the demo prints the problems and exits non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LiveExpectations:
    """What the live part of a mission must achieve.

    ``phases``: OBSW phases that must be reached; ``min_messages``: topic -> fewest messages
    expected over the run (commands to the robots, for example); faults of ERROR level on any
    fault/status topic, nodes that crash or die, and stages that do not become ready are
    always problems.
    """

    phases: tuple = ()
    min_messages: dict = field(default_factory=dict)
    #: A fault still open at the end counts as latched once it has lasted this long (a hold that began
    #: in the last moments of the run is a degradation in progress, not yet a latch).
    latch_grace_s: float = 2.0


ERROR_LEVEL = 2     # diagnostic_msgs/DiagnosticStatus.ERROR
_MISS_KEYS = ('miss', 'dropped', 'late', 'overrun')


class LiveReport:
    def __init__(self, expectations: LiveExpectations):
        self.expect = expectations
        self.phases: list[tuple[float, str]] = []
        self.faults: list[dict] = []
        self.counts: dict[str, int] = {}
        self.misses: dict[str, dict[str, float]] = {}
        self.start_error: str | None = None

    # -- observations ---------------------------------------------------------------------------------
    def message(self, topic: str) -> None:
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def phase(self, t_s: float, name: str) -> None:
        if not self.phases or self.phases[-1][1] != name:
            self.phases.append((float(t_s), name))

    def status(self, t_s: float, topic: str, level: int, message: str, values: dict[str, str]) -> None:
        """A DiagnosticStatus seen on ``topic``: ERROR opens a fault (a hold), a lower level ends it (WARN is
        degraded: reported through the miss counters, not a fault); miss counters are kept."""
        level = int.from_bytes(level, 'little') if isinstance(level, (bytes, bytearray)) else int(level)
        open_faults = [f for f in self.faults if f['topic'] == topic and f['cleared_s'] is None]
        if level >= ERROR_LEVEL:
            if not open_faults:                 # one fault per episode; its text may change while it lasts
                self.faults.append({'t_s': round(float(t_s), 3), 'topic': topic, 'message': message, 'cleared_s': None})
            else:
                open_faults[-1]['last_message'] = message
        else:
            for f in open_faults:
                f['cleared_s'] = round(float(t_s), 3)
        for key, value in values.items():
            if any(k in key.lower() for k in _MISS_KEYS):
                try:
                    self.misses.setdefault(topic, {})[key] = float(value)
                except ValueError:
                    pass

    def failed_to_start(self, reason: str) -> None:
        self.start_error = reason

    # -- verdict ---------------------------------------------------------------------------------------
    def finish(self, duration_s: float, node_results=(), log_levels=None) -> dict:
        """The summary: phases, faults, messages per topic, misses, node exits, warnings; ``problems``."""
        problems = []
        if self.start_error:
            problems.append(f'graph did not start: {self.start_error}')
        reached = [name for _, name in self.phases]
        for name in self.expect.phases:
            if name not in reached:
                problems.append(f'phase {name} never reached (reached: {reached or "none"})')
        for topic, least in self.expect.min_messages.items():
            if self.counts.get(topic, 0) < least:
                problems.append(f'{topic}: {self.counts.get(topic, 0)} messages, expected at least {least}')
        for f in self.faults:
            if f['cleared_s'] is None and duration_s - f['t_s'] > self.expect.latch_grace_s:
                problems.append(f"fault on {f['topic']} latched at {f['t_s']:.1f} s and never cleared: {f['message']}"
                                + (f" (last: {f['last_message']})" if 'last_message' in f else ''))
        nodes = {}
        for r in node_results:
            levels = log_levels(r.output) if log_levels else {}
            nodes[r.spec.fqn] = {'exit': r.returncode, **levels, 'unraisable': r.unraisable}
            late = getattr(r, 'late_kernels', None)
            if late:
                nodes[r.spec.fqn]['late_kernels'] = late
            if r.crashed:
                problems.append(f'node {r.spec.fqn} failed (exit {r.returncode}): {r.failure_text()}')
        return {
            'duration_s': round(float(duration_s), 2),
            'phases': [{'t_s': round(t, 2), 'phase': name} for t, name in self.phases],
            'faults': self.faults,
            'messages': dict(sorted(self.counts.items())),
            'rates_hz': {k: round(v / duration_s, 1) for k, v in sorted(self.counts.items())} if duration_s > 0 else {},
            'deadline_misses': self.misses,
            'nodes': nodes,
            'problems': problems,
            'ok': not problems,
        }
