"""The launch files' node sets on the wall clock, at their own rates: CPU per node and what each logged.

Issue 17 asks for the servicer and teleop nodes at their rates, at most 30 % of one core each and no
missed step. This starts the graph of ``massive_payload_teleop.launch.py`` and the graph of
``envisat_capture.launch.py`` as ``ros2 launch`` does (``hil_bringup.graph_runner``, the same
``hil_bringup.graphs`` definitions; ``sim:=true``/``use_sim:=true``, ``lab_clock:=wall``: the twin
stands in for the lab and every node runs at its real-time rate), lets each settle, then measures for
``HIL_BENCH_GRAPH_SECONDS`` (default 20 s):

* the window starts ``SETTLE_S`` after the last stage started, plus the teleop link's delays (until
  then the orbit side has no master command, and says so);
* each node process's CPU over the window (user + system time from ``/proc``, % of one core);
* the warnings and errors each node logged in the window. The nodes log a step that ran late or was
  dropped (their overload guards, the pacers), a stale input and a hold; a window without any is a
  window without a missed step that a node noticed;
* the rate at which each F/T driver took records and published samples in the window (its ``/diagnostics``,
  ``input_rate_hz``, ``publish_rate_hz``). A driver publishes the newest of the records that came since its last sample, so
  when its receive thread waits for a CPU (each graph needs about 1.9 of this machine's 2) it publishes
  fewer than the sensor's rate, and a hot path driven by those samples runs fewer steps than its
  ``rate_hz`` (tenth session: 580-680 of 1000 per second; the servicer driver's receive thread waited on the
  run queue 40 % of the wall time, 140 us per wake-up; a 0.5 ms GIL switch interval in the twin changed
  nothing). ``./dev bench envisat`` measures the hot
  paths on a steady 1 kHz stream.

``./dev bench graph_cpu``. The machine's other load counts against the figures: run it on an idle machine.
``HIL_BENCH_GRAPHS=envisat_capture`` measures one graph; ``HIL_BENCH_ENVISAT_ARGS=realtime_priority:=0,...`` passes
launch arguments to the Envisat graph.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_envisat import cpu_seconds  # noqa: E402  (one reading of /proc CPU time for the benches)
from machine import StealWindow  # noqa: E402

TARGET_PERCENT = 30.0
SETTLE_S = 8.0
#: the nodes the issue's row is about
TARGET_NODES = ('teleop_master', 'slave_law', 'delay_line', 'payload_admittance', 'servicer_hot_path',
                'servicer_admittance')


def _rate(spec) -> str:
    for key in ('rate_hz', 'control_rate_hz', 'publish_rate_hz', 'sensor_rate_hz'):
        if float(spec.parameters.get(key, 0.0) or 0.0) > 0.0:
            return f"{float(spec.parameters[key]):g} Hz"
    return ''


_WARNING = re.compile(r'\[(WARN|ERROR|FATAL)\][^\n]*')


def measure(name: str, graph, seconds: float) -> bool:
    """Run ``graph``; print one line per node. Returns False if a node died or a target node missed."""
    from hil_bringup.graph_runner import RunningGraph

    workdir = Path(tempfile.mkdtemp(prefix=f'bench_graph_{name}_'))
    print(f'  {name}: {len(graph.nodes)} nodes, logs in {workdir}', flush=True)
    ok = True
    # the teleop link's delay: the orbit side gets its first master command only after it
    delays = [float(n.parameters.get(k, 0.0)) for n in graph.nodes for k in ('uplink_delay_s', 'downlink_delay_s')]
    settle_s = SETTLE_S + sum(delays)
    with RunningGraph(graph, workdir, say=lambda m: None) as running, DriverRates() as rates:
        time.sleep(settle_s)
        start = {spec.fqn: (proc, path, path.stat().st_size, cpu_seconds(proc.pid))
                 for spec, proc, path in running.procs if proc.poll() is None}
        t0 = time.monotonic()
        steal = StealWindow().start()
        rates.start()
        time.sleep(seconds)
        published = rates.stop()
        wall = time.monotonic() - t0
        steal.stop()
        rows = []
        for spec, proc, path in running.procs:
            if spec.fqn not in start or proc.poll() is not None:
                rows.append((spec, None, ['exited']))
                continue
            _, _, offset, cpu0 = start[spec.fqn]
            percent = 100.0 * (cpu_seconds(proc.pid) - cpu0) / wall
            with open(path, errors='replace') as f:
                f.seek(offset)
                logged = [m.group(0)[:160] for m in _WARNING.finditer(f.read())]
            rows.append((spec, percent, logged))
        dead = running.dead()
    exits = {r.spec.fqn: r for r in running.results}
    print(f'    over the window {steal.text()}', flush=True)
    for spec, percent, logged in rows:
        target = spec.name in TARGET_NODES
        verdict = ''
        if target:
            met = percent is not None and percent <= TARGET_PERCENT and not logged
            ok = ok and met
            verdict = f'   (target <= {TARGET_PERCENT:.0f} % and nothing logged: {"met" if met else "MISSED"})'
        cpu = 'exited' if percent is None else f'{percent:5.1f} %'
        result = exits[spec.fqn]
        stop = f'stopped with {result.returncode}' + (' CRASHED' if result.crashed else '')
        print(f'    {spec.fqn:<28s} {_rate(spec):>9s}  CPU {cpu}  {len(logged)} warnings/errors, {stop}{verdict}',
              flush=True)
        for line in dict.fromkeys(logged).keys():
            print(f'        {line}', flush=True)
            break
    for driver, values in sorted(published.items()):
        taken, sent = np.array(values).T
        print(f'    {driver}: {np.mean(taken):.0f} records/s in, {np.mean(sent):.0f} samples/s published in the '
              f'window ({sent.min():.0f}-{sent.max():.0f} in {len(sent)} diagnostics)', flush=True)
    if dead:
        print(f'    DIED: {", ".join(dead)}', flush=True)
        ok = False
    return ok


class DriverRates:
    """The F/T drivers' ``publish_rate_hz`` from ``/diagnostics`` between :meth:`start` and :meth:`stop`, heard
    by a small node of this process on its own thread (one message a second per driver: nothing to the load)."""

    def __enter__(self):
        import threading

        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_graph_cpu_rates', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.listening, self.values = False, {}
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 50)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()
        return self

    def _spin(self):
        with contextlib.suppress(Exception):        # the context shut down under a spin_once: the end
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.1)

    def _on_diagnostics(self, msg):
        if not self.listening:
            return
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if 'publish_rate_hz' in values and status.name.endswith('F/T sensor'):
                with contextlib.suppress(ValueError):
                    rates = float(values['input_rate_hz']), float(values['publish_rate_hz'])
                    if all(math.isfinite(r) for r in rates):
                        self.values.setdefault(status.name.split(':')[0], []).append(rates)

    def start(self):
        self.listening = True

    def stop(self) -> dict:
        self.listening = False
        return self.values

    def __exit__(self, *exc):
        self.context.try_shutdown()
        self.thread.join(timeout=2.0)
        self.node.destroy_node()
        return False


def main() -> None:
    from hil_bringup.graphs import envisat_graph, teleop_graph
    from hil_common.network import apply_network_profile, free_udp_ports

    apply_network_profile()
    seconds = float(os.environ.get('HIL_BENCH_GRAPH_SECONDS', 20.0))
    print(f'the launch files\' graphs on the wall clock, {seconds:.0f} s after {SETTLE_S:.0f} s of settling (and the '
          f'teleop link\'s delays), '
          f'{os.cpu_count()} CPUs; CPU of each node process (% of one core):', flush=True)
    ports = free_udp_ports(4)
    only = [name for name in os.environ.get('HIL_BENCH_GRAPHS', '').split(',') if name]
    unknown = sorted(set(only) - {'massive_payload_teleop', 'envisat_capture'})
    if unknown:
        raise SystemExit(f'HIL_BENCH_GRAPHS: unknown graph(s) {unknown} (massive_payload_teleop, envisat_capture)')
    # launch arguments of the Envisat graph to compare, e.g. HIL_BENCH_ENVISAT_ARGS=realtime_priority:=0
    extra = {}
    for item in filter(None, os.environ.get('HIL_BENCH_ENVISAT_ARGS', '').split(',')):
        if ':=' not in item:
            raise SystemExit(f'HIL_BENCH_ENVISAT_ARGS: {item!r} is not name:=value')
        name, value = item.split(':=', 1)
        extra[name] = value
    results = []
    if not only or 'massive_payload_teleop' in only:
        teleop = teleop_graph({'sim': 'true', 'lab_clock': 'wall', 'slave_ft_port': str(ports[0]),
                               'payload_ft_port': str(ports[1])})
        results.append(measure('massive_payload_teleop', teleop, seconds))
    if not only or 'envisat_capture' in only:
        envisat = envisat_graph({'lab_clock': 'wall', 'client_ft_port': str(ports[2]),
                                 'servicer_ft_port': str(ports[3]), 'live_view_port': '0', **extra})
        results.append(measure('envisat_capture', envisat, seconds))
    print(f'  all target nodes within {TARGET_PERCENT:.0f} % and nothing logged: '
          f'{"met" if all(results) else "MISSED"}', flush=True)


if __name__ == '__main__':
    main()
