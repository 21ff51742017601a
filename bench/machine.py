"""What the machine itself did during a measurement window (issue 17: read every CPU figure with it).

A virtual machine's hypervisor can take CPU time away from it ("steal"): on the day the fifteenth and
sixteenth sessions measured, the kernel counted a quarter of both vCPUs' time stolen during the
benchmarks. A node's CPU percentage then means less, and a 1 kHz loop misses deadlines it would keep
on the same machine idle. The benchmarks print the steal over their window beside their figures.
"""

from __future__ import annotations

import time


def _cpu_ticks() -> tuple[int, int] | None:
    """(steal ticks, all ticks) of all CPUs from ``/proc/stat`` (None where it is not readable)."""
    try:
        with open('/proc/stat') as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != 'cpu':
        return None
    ticks = [int(v) for v in fields[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
    return (ticks[7] if len(ticks) > 7 else 0), sum(ticks[:8])


class StealWindow:
    """The share of the machine's CPU time stolen by the hypervisor between :meth:`start` and :meth:`stop`."""

    def __init__(self):
        self._start = None
        self.percent: float | None = None

    def start(self) -> 'StealWindow':
        self._start = _cpu_ticks()
        self.percent = None
        return self

    def stop(self) -> float | None:
        end = _cpu_ticks()
        if self._start is None or end is None or end[1] <= self._start[1]:
            return None
        self.percent = 100.0 * (end[0] - self._start[0]) / (end[1] - self._start[1])
        return self.percent

    def text(self) -> str:
        return 'machine steal not readable' if self.percent is None else \
            f'the hypervisor took {self.percent:.0f} % of the machine\'s CPU time (steal)'


if __name__ == '__main__':
    w = StealWindow().start()
    time.sleep(2.0)
    w.stop()
    print(w.text())
