"""Nodes die with the process that started them (issue 15 item 4).

* a parent that started two real nodes with ``start_node`` is killed with SIGKILL: both nodes
  are gone within seconds (parent-death signal);
* Ctrl-C (SIGINT, repeatedly) arriving while the parent stops its nodes does not cut the
  shutdown short: no node is left running.
"""

import os
import signal
import subprocess
import sys
import time

PARENT = r'''
import subprocess, sys, time
from hil_common.ros_testing import start_node, stop_processes
procs = [start_node('hil_bringup', 'scripted_wrench_node', 'rate_hz:=1.0', capture=False) for _ in range(2)]
if sys.argv[1] == 'kill':
    print(' '.join(str(p.pid) for p in procs), flush=True)
    time.sleep(600)
# A process slow to stop (it ignores SIGINT) keeps the shutdown busy for timeout_s.
slow = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); '
                         'print(1, flush=True); time.sleep(60)'], stdout=subprocess.PIPE, text=True)
slow.stdout.readline()
print(' '.join(str(p.pid) for p in procs), flush=True)
try:
    time.sleep(600)                            # the demo runs; the user presses Ctrl-C
finally:
    print('stopping', flush=True)
    stop_processes([*procs, slow], timeout_s=3.0)
    print('stopped', flush=True)
'''


def alive(pid: int) -> bool:
    """Running (a zombie left for a non-reaping init counts as gone)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def wait_gone(pids, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def start_parent(mode: str) -> tuple[subprocess.Popen, list[int]]:
    parent = subprocess.Popen([sys.executable, '-c', PARENT, mode], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert len(pids) == 2, 'the parent did not start its nodes'
    time.sleep(2.0)                                  # the nodes are up (rclpy initialised, spinning)
    assert all(alive(p) for p in pids), 'a node died on its own'
    return parent, pids


def test_nodes_die_when_their_parent_is_killed():
    parent, pids = start_parent('kill')
    try:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        left = wait_gone(pids, 10.0)
    finally:
        for p in pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)
    assert not left, f'nodes {left} outlived their killed parent'


def test_sigint_during_the_shutdown_leaves_no_node_running():
    parent, pids = start_parent('shutdown')
    try:
        parent.send_signal(signal.SIGINT)            # Ctrl-C: the parent starts its shutdown
        assert parent.stdout.readline().strip() == 'stopping'
        time.sleep(0.5)
        for _ in range(3):                           # an impatient user presses Ctrl-C again and again
            parent.send_signal(signal.SIGINT)
            time.sleep(0.2)
        parent.wait(timeout=30)
        out = parent.stdout.read()
        left = wait_gone(pids, 5.0)
    finally:
        if parent.poll() is None:
            parent.kill()
        for p in pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)
    assert 'stopped' in out, 'the shutdown was cut short'
    assert not left, f'nodes {left} kept running after a SIGINT during the shutdown'
