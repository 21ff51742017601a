"""Real-time scheduling of a hot-path process (Linux): SCHED_FIFO priority and CPU affinity.

A lab runs its control loop at a real-time priority, as ros2_control's controller manager
does (SCHED_FIFO, priority 50, when the system allows it), so that other work on the
machine does not preempt it. :func:`make_realtime` applies the policy to **every thread of
the process** (the executor's and the DDS middleware's receive threads), and optionally
pins the **calling** thread (the executor's, which runs the callbacks; threads it starts later
inherit the pinning) to CPUs. The middleware's threads are left free on purpose: pinned to the
loop's core they woke it up for every message, and ``bench_envisat`` measured p99 about 2.1 ms
that way against 1.3 ms with only the executor pinned. The kernel's RT throttling (``/proc/sys/kernel/sched_rt_runtime_us``,
95 % by default) still leaves the rest of the system some CPU if the loop ran away.

No rclpy here: nodes call it from their constructor and log the returned message.
"""

from __future__ import annotations

import os
from typing import Sequence

from hil_common.errors import ConfigError


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir('/proc/self/task')]
    except OSError:
        return [0]


def make_realtime(priority: int, cpus: Sequence[int] = ()) -> tuple[bool, str]:
    """SCHED_FIFO at ``priority`` (1..99; 0 leaves the policy alone) for every thread of this
    process, and affinity ``cpus`` (empty: any) for the calling thread.

    Returns ``(ok, message)``; it never raises for a missing permission, so a node started
    without CAP_SYS_NICE runs on, at normal priority, and says so. Threads and processes
    started afterwards inherit the policy (see :func:`make_normal`).
    """
    if not 0 <= int(priority) <= 99:
        raise ConfigError(f'priority must be in 0..99, got {priority}')
    notes, ok = [], True
    if cpus:
        available = os.sched_getaffinity(0)
        wanted = {int(c) for c in cpus}
        if not wanted <= available:
            ok = False
            notes.append(f'CPUs {sorted(wanted - available)} are not available (this process may use '
                         f'{sorted(available)}): not pinned')
        else:
            os.sched_setaffinity(0, wanted)
            notes.append(f'calling thread pinned to CPUs {sorted(wanted)}')
    if priority > 0:
        try:
            for tid in _threads():
                try:
                    os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(int(priority)))
                except ProcessLookupError:
                    pass
            notes.append(f'SCHED_FIFO priority {priority} on {len(_threads())} threads')
        except PermissionError:
            ok = False
            notes.append(f'SCHED_FIFO priority {priority} refused (no CAP_SYS_NICE / rtprio limit): '
                         'running at normal priority')
    return ok, '; '.join(notes) if notes else 'normal scheduling'


def make_normal() -> None:
    """Back to SCHED_OTHER for every thread of this process (before it starts other processes,
    which would otherwise inherit the real-time policy)."""
    for tid in _threads():
        try:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        except (ProcessLookupError, PermissionError):
            pass


def current_policy(tid: int = 0) -> tuple[int, int]:
    """``(policy, priority)`` of a thread (0: the calling one)."""
    return os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority
