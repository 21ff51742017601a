"""Which compiled kernels a process loaded after its start-up: each such load stalled a callback.

Numba loads a compiled kernel from its on-disk cache the first time the kernel is called with
a new argument signature: 10-60 ms each here, more on a busy machine. In a node's first
real-time callback that is a stall: a 1 kHz hot path whose first sample loaded a kernel saw
its table joints go stale and held (docs/performance.md). So the rules load their kernels
when they are built, and :func:`hil_common.ros_main.run_node` takes a :class:`KernelLoads`
snapshot once the node is built and started, and at the stop prints one ``[WARN]`` line
(:data:`LATE_MARK`) naming every kernel loaded since. The live-graph tests fail on it.

No rclpy and no Numba import here: a process that never imported Numba has no kernels.
"""

from __future__ import annotations

import re
import sys

#: Start of the line :func:`report` prints; :func:`late_kernels` finds it in a node's output.
LATE_MARK = 'compiled kernels loaded after start-up'
#: The packages whose kernels are watched.
PREFIX = 'hil_'


def _dispatchers() -> dict[str, object]:
    """``{'module.function': dispatcher}`` of every Numba dispatcher a module of ours holds."""
    numba_dispatcher = sys.modules.get('numba.core.dispatcher')
    if numba_dispatcher is None:
        return {}
    kind = numba_dispatcher.Dispatcher
    found, seen = {}, set()
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith(PREFIX) or mod is None:
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, kind) and id(value) not in seen:
                seen.add(id(value))
                found[f'{getattr(value.py_func, "__module__", mod_name)}.{attr}'] = value
    return found


class KernelLoads:
    """``KernelLoads()`` notes how many compiled signatures each kernel has now; :meth:`since` names the
    kernels that gained one after (each gain is a cache load or a compilation)."""

    def __init__(self):
        self._counts = {id(d): len(d.overloads) for d in _dispatchers().values()}

    def since(self) -> list[str]:
        late = []
        for name, d in sorted(_dispatchers().items()):
            if len(d.overloads) > self._counts.get(id(d), 0):
                late.append(name)
        return late


def report(name: str, loads: KernelLoads | None) -> str | None:
    """The ``[WARN]`` line for the kernels loaded since ``loads`` was taken, or None when there were none."""
    if loads is None:
        return None
    try:
        late = loads.since()
    except Exception as exc:  # noqa: BLE001 - a diagnostic at the stop must not turn a clean stop into a crash
        return f'[WARN] [{name}]: could not tell which compiled kernels were loaded after start-up: {exc!r}'
    if not late:
        return None
    return (f'[WARN] [{name}]: {LATE_MARK} (each stalled a callback; load it where the rule is built): '
            + ', '.join(late))


_LINE = re.compile(re.escape(LATE_MARK) + r'[^:]*: (.*)$', re.MULTILINE)


def late_kernels(output: str) -> list[str]:
    """The kernels a node's output says were loaded after its start-up (see :func:`report`)."""
    names = []
    for m in _LINE.finditer(output):
        names.extend(n.strip() for n in m.group(1).split(',') if n.strip())
    return names
