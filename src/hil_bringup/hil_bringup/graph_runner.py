"""Start a :class:`hil_bringup.graphs.Graph` as ``ros2 launch`` does, without launch installed.

Used by the demos and the DDS tests, so that what they run is what the launch files start:
each :class:`~hil_bringup.graphs.NodeSpec` becomes ``<prefix>/lib/<package>/<executable>``
with the ``--ros-args`` launch_ros would give it (parameters in a params file), and each
stage's :class:`~hil_bringup.graphs.Ready` condition is waited for with the same
``wait_for_ready`` executable the launch files run before the next stage.

Every node's output goes to ``<workdir>/logs/<node>.log``; :meth:`RunningGraph.stop` returns
it with the exit code, and :func:`log_levels` counts its warnings and errors.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hil_bringup.graphs import Graph, NodeSpec
from hil_common.errors import StartError
from hil_common.kernel_loads import late_kernels


class GraphStartError(StartError):
    """A stage did not become ready, or a node died while its stage was starting."""


@dataclass
class NodeResult:
    spec: NodeSpec
    returncode: int | None
    output: str

    @property
    def crashed(self) -> bool:
        """Exited on its own with an error, or printed a traceback of an exception it raised (SIGINT/SIGTERM
        exits are clean). Python's "Exception ignored in:" tracebacks are not raised (an exception in a
        ``__del__`` or another place that cannot raise: the program went on); they are counted in
        :attr:`unraisable` and reported, not failed on. One came from rclpy itself in a demo run: a
        ``Future.__del__`` of an rclpy ``Task`` whose ``__init__`` had not run (``rclpy/task.py``), in a
        node that then exited 0 after a capture with no fault."""
        return (self.returncode not in (0, None, -2, -15, 130, 143)) or bool(self._raised())

    @property
    def late_kernels(self) -> list[str]:
        """The compiled kernels the node loaded in a callback after its start-up (each stalled that callback;
        :mod:`hil_common.kernel_loads`)."""
        return late_kernels(self.output)

    @property
    def unraisable(self) -> int:
        """How many "Exception ignored in:" tracebacks the node printed."""
        return sum(1 for i in _traceback_starts(self.output) if _ignored(self.output, i))

    def _raised(self) -> list[int]:
        return [i for i in _traceback_starts(self.output) if not _ignored(self.output, i)]

    def failure_text(self, limit: int = 1500) -> str:
        """What to report of a crashed node: its (first raised) traceback, else the stack dump it printed
        before it was killed (:func:`hil_common.ros_testing.dump_stacks`: where it hung), else its last lines."""
        out = self.output
        raised = self._raised()
        if raised:
            return out[raised[0]:][-limit:].strip()   # ends with the error
        starts = [out.find(m) for m in ('Current thread 0x', 'Thread 0x') if m in out]
        if starts:
            return out[min(starts):][:limit].strip()
        return ' | '.join(out.strip().splitlines()[-3:])[-limit:]


_TRACEBACK = 'Traceback (most recent call last)'


def _traceback_starts(text: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(_TRACEBACK), text)]


def _ignored(text: str, start: int) -> bool:
    """The traceback at ``start`` follows Python's "Exception ignored in:" line (an unraisable exception)."""
    previous = text[:start].rstrip('\n').rsplit('\n', 1)[-1]
    return previous.startswith('Exception ignored in')


_LEVEL = re.compile(r'^\[(WARN|ERROR|FATAL)\]', re.MULTILINE)


def log_levels(text: str) -> dict[str, int]:
    """How many ``[WARN]``, ``[ERROR]`` and ``[FATAL]`` lines rclpy's logger printed."""
    counts = {'WARN': 0, 'ERROR': 0, 'FATAL': 0}
    for m in _LEVEL.finditer(text):
        counts[m.group(1)] += 1
    return counts


def _safe(fqn: str) -> str:
    return fqn.strip('/').replace('/', '__')


class RunningGraph:
    """``with RunningGraph(graph, workdir) as g: ...`` starts every stage in order and stops all on exit."""

    def __init__(self, graph: Graph, workdir: Path, say=print):
        self.graph = graph
        self.workdir = Path(workdir)
        self.say = say
        self.procs: list[tuple[NodeSpec, subprocess.Popen, Path]] = []
        self._logs = []
        self.ready_s: dict[str, float] = {}
        self.results: list[NodeResult] | None = None

    # -- start ------------------------------------------------------------------------------------
    def _start_node(self, spec: NodeSpec) -> None:
        from hil_common.ros_testing import start_node

        params = self.workdir / 'params' / f'{_safe(spec.fqn)}.yaml'
        params.parent.mkdir(parents=True, exist_ok=True)
        params.write_text(spec.params_yaml())
        log_path = self.workdir / 'logs' / f'{_safe(spec.fqn)}.log'
        log_path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(log_path, 'w')
        self._logs.append(fh)
        proc = start_node(spec.package, spec.executable, ros_args=tuple(spec.ros_arguments(str(params))[1:]), log=fh)
        self.procs.append((spec, proc, log_path))

    def _wait_ready(self, label: str, ready) -> None:
        from hil_common.ros_testing import node_executable

        t0 = time.monotonic()
        waiter = subprocess.Popen([str(node_executable('hil_bringup', 'wait_for_ready')), *ready.arguments()],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            while waiter.poll() is None:
                dead = self.dead()
                if dead:
                    waiter.kill()
                    raise GraphStartError(f'stage {label!r}: node(s) exited while starting: {", ".join(dead)}')
                time.sleep(0.1)
        finally:
            if waiter.poll() is None:
                waiter.kill()
            out = waiter.communicate()[0] or ''
        if waiter.returncode != 0:
            raise GraphStartError(f'stage {label!r} did not become ready: {out.strip()}')
        self.ready_s[label] = time.monotonic() - t0

    def start(self) -> 'RunningGraph':
        stages = self.graph.stages
        for k, stage in enumerate(stages):
            if stage.nodes:
                self.say(f'[graph] starting stage {stage.label}: ' + ', '.join(n.fqn for n in stage.nodes))
            for spec in stage.nodes:
                self._start_node(spec)
            if stage.ready is not None and k < len(stages) - 1:
                self._wait_ready(stage.label, stage.ready)
                self.say(f'[graph] stage {stage.label} ready after {self.ready_s[stage.label]:.1f} s')
        return self

    # -- while running ------------------------------------------------------------------------------
    def dead(self) -> list[str]:
        """Nodes whose process has exited."""
        return [f'{spec.fqn} (exit {proc.returncode})' for spec, proc, _ in self.procs if proc.poll() is not None]

    # -- stop ---------------------------------------------------------------------------------------
    def stop(self, timeout_s: float = 10.0) -> list[NodeResult]:
        """SIGINT every node (as launch does), then SIGTERM/SIGKILL stragglers; collect outputs."""
        from hil_common.ros_testing import stop_processes

        if self.results is not None:
            return self.results
        # A Ctrl-C during this shutdown is held until every node is stopped (no orphans).
        stop_processes([proc for _, proc, _ in reversed(self.procs)], timeout_s)
        for fh in self._logs:
            fh.close()
        self.results = [NodeResult(spec, proc.returncode, path.read_text(errors='replace'))
                        for spec, proc, path in self.procs]
        return self.results

    def __enter__(self) -> 'RunningGraph':
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
