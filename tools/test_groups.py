"""The suite's two groups, for ``./dev test``: the files that may run beside each other, and the rest.

``parallel``: test files that start no process and open no socket, DDS participant or port (the lockstep
runners, the rules, the kernels, the codecs, MuJoCo in-process). They run on both cores at once
(pytest-xdist, a file per worker: module fixtures run once), so the machine's second core does work while a
single-threaded lockstep test runs.

``serial``: every other file, one test at a time, as before: the live graphs, the nodes over loopback DDS,
the F/T drivers over UDP, the campaigns' Dask cluster, anything that spawns a process. Their fixed UDP
ports (the graphs' default RDT ports), their DDS traffic and the wall-clock budgets of the stated-load
tests assume no other live test beside them.

A file is ``serial`` if its text names any of :data:`SERIAL_MARKS`; the list errs towards ``serial`` (a
word in a docstring is enough). Usage: ``python tools/test_groups.py parallel|serial [ROOT]`` prints the
group's files, one per line.
"""

from __future__ import annotations

import pathlib
import re
import sys

SERIAL_MARKS = (
    # ROS: nodes, executors, graphs, launch files
    'rclpy', 'ros_testing', 'start_node', 'node_executable', 'ros_main', 'spin_until', 'ros_graph', 'run_live',
    'run_graph', 'launch', 'lab_twin_node', 'def ros', '(ros)', '(ros,',
    # sockets and ports: RDT/UDP, HTTP, WebSocket
    'socket', 'udp', 'UDP', 'ft_port', 'rdt_port', 'sensor_port', 'server.port', 'http_port', 'RdtSimulator',
    'rdt_server',
    # other processes, threads and signals
    'subprocess', 'Popen', 'multiprocessing', 'threading', 'import signal', 'signal.', 'dask', 'distributed',
    'LocalCluster',
    # wall time
    'bench', 'time.sleep', 'perf_counter', 'monotonic', 'process_time',
)
_PATTERN = re.compile('|'.join(re.escape(m) for m in SERIAL_MARKS))


def test_files(root: pathlib.Path) -> list[pathlib.Path]:
    return sorted(root.glob('src/*/test/test_*.py'))


def group(path: pathlib.Path) -> str:
    return 'serial' if _PATTERN.search(path.read_text(encoding='utf-8')) else 'parallel'


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[1] not in ('parallel', 'serial'):
        print('usage: test_groups.py parallel|serial [ROOT]', file=sys.stderr)
        return 2
    root = pathlib.Path(argv[2] if len(argv) == 3 else pathlib.Path(__file__).resolve().parents[1])
    files = test_files(root)
    if not files:
        print(f'test_groups.py: no test files under {root}/src', file=sys.stderr)
        return 2
    for path in files:
        if group(path) == argv[1]:
            print(path)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
