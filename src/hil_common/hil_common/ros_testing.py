"""Helpers for tests and demos that drive real nodes over DDS (loopback profile).

* :func:`node_executable` finds an executable the way launch_ros does
  (``<prefix>/lib/<package>/<executable>``);
* :func:`start_node` / :func:`stop_process` run it as a subprocess with ROS arguments and
  collect its output on exit (SIGTERM, then SIGKILL after a timeout);
* :func:`test_node` is a context manager giving an rclpy node and executor in their own
  context, torn down cleanly;
* :func:`spin_until` spins until a predicate holds or a timeout passes.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path


def node_executable(package: str, executable: str) -> Path:
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package)) / 'lib' / package / executable


def start_node(package: str, executable: str, *params: str, capture: bool = True,
               ros_args: tuple[str, ...] = (), log=None) -> subprocess.Popen:
    """Start ``<prefix>/lib/<package>/<executable> --ros-args -p <param> ... <ros_args>``.

    ``ros_args`` are passed as they are, e.g. ``('-r', '__ns:=/client')``. ``log``: an open
    file that receives the node's output (for long runs, where a pipe nobody reads would fill
    and block the node); otherwise ``capture`` pipes it for :func:`stop_process`.
    """
    args = [str(node_executable(package, executable)), '--ros-args']
    for p in params:
        args += ['-p', p]
    args += list(ros_args)
    out = log if log is not None else (subprocess.PIPE if capture else subprocess.DEVNULL)
    return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))


def stop_process(proc: subprocess.Popen, timeout_s: float = 10.0) -> str:
    """Terminate, wait, kill if needed; return what it printed."""
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ''


@contextlib.contextmanager
def test_node(name: str):
    """``with test_node('probe') as (node, executor): ...`` in a private rclpy context."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(name, context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        ctx.try_shutdown()


test_node.__test__ = False  # not a pytest test, despite its name


def spin_until(executor, predicate, timeout_s: float, period_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=period_s)
        if predicate():
            return True
    return False
