"""Helpers for end-to-end tests of the F/T driver over real UDP and real DDS.

* :class:`RosTestClient`: an rclpy node in a private context, spun in a background
  thread, with message collectors and synchronous service calls;
* :class:`DriverProcess`: ``ft_sensor_node`` as a subprocess with a parameter YAML, the way
  it is launched in the lab;
* :func:`diagnostic_values`: the key/values of our DiagnosticStatus.

Used by this package's tests and usable by other packages' tests (e.g. an admittance
loop fed by the simulated sensor). Every address involved is 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import yaml

from hil_common.ros_testing import dump_stacks


class Collector:
    """Messages received on one topic, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages: list = []
        self.times: list[int] = []

    def __call__(self, msg) -> None:
        with self.lock:
            self.messages.append(msg)
            self.times.append(time.time_ns())

    def __len__(self) -> int:
        with self.lock:
            return len(self.messages)

    def snapshot(self) -> list:
        with self.lock:
            return list(self.messages)

    def last(self):
        with self.lock:
            return self.messages[-1] if self.messages else None

    def clear(self) -> None:
        with self.lock:
            self.messages.clear()
            self.times.clear()

    def wait_for(self, predicate: Callable[[list], bool], timeout_s: float = 5.0) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if predicate(self.snapshot()):
                return True
            time.sleep(0.005)
        return predicate(self.snapshot())

    def wait_count(self, n: int, timeout_s: float = 5.0) -> bool:
        return self.wait_for(lambda m: len(m) >= n, timeout_s)


class RosTestClient:
    """A test-side rclpy node in its own context, spinning in a background thread."""

    def __init__(self, name: str = 'ft_test_client'):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, name='ros-test-client', daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, Exception):  # noqa: BLE001 - ends with the context
            pass

    def subscribe(self, msg_type, topic: str, qos=10) -> Collector:
        collector = Collector()
        self.node.create_subscription(msg_type, topic, collector, qos)
        return collector

    def publisher(self, msg_type, topic: str, qos=10):
        return self.node.create_publisher(msg_type, topic, qos)

    def call(self, srv_type, name: str, request=None, timeout_s: float = 10.0):
        """Call a service and wait for the response (None on timeout)."""
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout_s):
                return None
            future = client.call_async(request if request is not None else srv_type.Request())
            end = time.monotonic() + timeout_s
            while not future.done() and time.monotonic() < end:
                time.sleep(0.005)
            return future.result() if future.done() else None
        finally:
            self.node.destroy_client(client)

    def close(self) -> None:
        import rclpy
        try:
            self.node.destroy_node()
        finally:
            rclpy.try_shutdown(context=self.context)
            self._thread.join(timeout=2.0)


def diagnostic_values(msg, name_contains: str = 'F/T sensor') -> dict[str, str] | None:
    """Key/values of the first DiagnosticStatus whose name contains ``name_contains``."""
    for status in msg.status:
        if name_contains in status.name:
            return {kv.key: kv.value for kv in status.values}
    return None


def nested(params: dict[str, Any]) -> dict:
    """``{'a.b': 1}`` -> ``{'a': {'b': 1}}`` (ROS parameter YAML layout)."""
    out: dict = {}
    for key, value in params.items():
        node = out
        parts = key.split('.')
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def find_executable(name: str) -> str:
    """A console script of this venv (next to the interpreter) or on PATH."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f'{name} not found next to {sys.executable} nor on PATH (run ./dev setup)')
    return found


class DriverProcess:
    """``ft_sensor_node`` in a subprocess, with its parameters written to a YAML file in a directory of its own,
    which :meth:`stop` removes (its log kept in memory for :meth:`log`)."""

    def __init__(self, params: dict[str, Any], namespace: str = '/ft_test', base_yaml: str | Path | None = None,
                 executable: str = 'ft_sensor_node', node_name: str = 'ft_sensor'):
        self.namespace = namespace
        self.node_name = node_name
        self.dir = Path(tempfile.mkdtemp(prefix='ft_driver_'))
        self.yaml_path = self.dir / 'params.yaml'
        self.yaml_path.write_text(yaml.safe_dump({'/**': {'ros__parameters': nested(params)}}))
        self.log_path = self.dir / 'node.log'
        cmd = [find_executable(executable), '--ros-args', '-r', f'__ns:={namespace}', '-r', f'__node:={node_name}']
        if base_yaml is not None:
            cmd += ['--params-file', str(base_yaml)]
        cmd += ['--params-file', str(self.yaml_path)]
        self.cmd = cmd
        self._log = open(self.log_path, 'w')
        self._log_text: str | None = None
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=dict(os.environ))

    def topic(self, name: str) -> str:
        return f'{self.namespace.rstrip("/")}/{name}'

    @property
    def fqn(self) -> str:
        return f'{self.namespace.rstrip("/")}/{self.node_name}'

    def log(self) -> str:
        """The command, its exit code and what the node printed (kept in memory once it stopped)."""
        if self._log_text is not None:
            text = self._log_text
        else:
            if not self._log.closed:
                self._log.flush()
            text = self.log_path.read_text(errors='replace')
        return f'$ {" ".join(self.cmd)}  (exit {self.proc.returncode})\n' + text

    def wait_exit(self, timeout_s: float = 10.0) -> int | None:
        """The exit code, or None if the process is still running after ``timeout_s`` (then its threads' stacks
        are asked for, into :meth:`log`: where it hung)."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            dump_stacks(self.proc)
            return None

    def stop(self, timeout_s: float = 10.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5.0)
        if self._log_text is None:      # the log read into memory and the directory removed (no litter in /tmp)
            self._log.close()
            self._log_text = self.log_path.read_text(errors='replace')
            shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode

    def __enter__(self) -> 'DriverProcess':
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def simulator_process(conn, topic: str | None = None, wrench=(1.0, 2.0, 3.0, 0.1, 0.2, 0.3),
                      noise_std: float = 0.01) -> None:
    """Entry of a separate process (multiprocessing 'spawn') running the simulated sensor,
    plus a DDS subscriber counting ``topic`` if given, controlled through a pipe:
    ``('rate', hz)`` -> True, ``('stats', None)`` -> (records_sent, received, overruns),
    ``('quit', None)``. Sends the simulator's UDP port first. Used by the benchmark."""
    from hil_common.network import apply_network_profile

    apply_network_profile()
    from hil_sensors.rdt_sim import ConstantSource, RdtSimulator

    sim = RdtSimulator(ConstantSource(wrench), rate_hz=1000.0, noise_std=noise_std, spin_us=120.0).start()
    client = None
    received = Collector()
    if topic:
        from geometry_msgs.msg import WrenchStamped

        client = RosTestClient('ft_bench_subscriber')
        counter = [0]
        client.node.create_subscription(WrenchStamped, topic, lambda m: counter.__setitem__(0, counter[0] + 1), 10)
        received = counter
    conn.send(sim.port)
    try:
        while True:
            cmd, arg = conn.recv()
            if cmd == 'rate':
                sim.set_rate(float(arg))
                conn.send(True)
            elif cmd == 'stats':
                conn.send((sim.stats.records_sent, received[0] if topic else 0, sim.stats.overruns))
            elif cmd == 'quit':
                break
    finally:
        sim.stop()
        if client is not None:
            client.close()
