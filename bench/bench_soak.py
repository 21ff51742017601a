"""Soak of the full Envisat graph with the lab twin (issue 15): memory and misses over a long run.

Starts the node set of ``envisat_capture.launch.py`` (``hil_bringup.graphs.envisat_graph``, the twin
on its simulated clock) on loopback DDS and lets it run for ``HIL_SOAK_MINUTES`` of wall time
(default 30; ``HIL_SOAK_MINUTES=2 ./dev bench soak`` for a short look). Every 10 s it samples each
node's resident memory (``/proc/<pid>/status`` VmRSS) and the twin's status (simulated time, barrier
misses, real-time factor). It prints, per node, the RSS after the first minute and at the end and
the growth per hour (a straight-line fit over the run from its first minute: start-up allocations
are not a leak), and the twin's misses and real-time factor. The capture goes through its phases in
the first ~40 s of simulated time, then the graph keeps running post-grasp (the tables hold at their
workspace limits once the stack drifts out: the live graph has no re-basing yet).
Nothing fails on a figure: it is printed beside the reference of the first minute.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def rss_mb(pid: int) -> float | None:
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def growth_per_hour(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t [s], rss [MB]) in MB/h."""
    import numpy as np

    if len(samples) < 3:
        return float('nan')
    t, v = np.array(samples).T
    return float(np.polyfit(t, v, 1)[0] * 3600.0)


def main() -> None:
    from diagnostic_msgs.msg import DiagnosticStatus

    from hil_bringup.graph_runner import RunningGraph
    from hil_bringup.graphs import envisat_graph
    from hil_common.network import apply_network_profile, demo_domain_id, free_udp_ports
    from hil_common.ros_testing import spin_until, test_node

    apply_network_profile()
    demo_domain_id()
    minutes = float(os.environ.get('HIL_SOAK_MINUTES', '30'))
    ports = free_udp_ports(2)
    graph = envisat_graph({'client_ft_port': str(ports[0]), 'servicer_ft_port': str(ports[1]), 'live_view': 'true',
                           'live_view_port': '0', 'control_rate_hz': '250', 'realtime_priority': '0'})
    status = {}
    with tempfile.TemporaryDirectory() as tmp, test_node('hil_soak') as (node, executor):
        node.create_subscription(DiagnosticStatus, 'lab_twin/status',
                                 lambda m: status.update({kv.key: kv.value for kv in m.values}), 10)
        running = RunningGraph(graph, Path(tmp), say=lambda s: None).start()
        try:
            t0 = time.monotonic()
            samples = {spec.fqn: [] for spec, _, _ in running.procs}
            twin = []
            print(f'soak: {len(running.procs)} nodes for {minutes:g} min of wall time', flush=True)
            next_print = 0.0
            while time.monotonic() - t0 < 60.0 * minutes:
                spin_until(executor, lambda: False, 10.0)
                t = time.monotonic() - t0
                for spec, proc, _ in running.procs:
                    value = rss_mb(proc.pid)
                    if value is not None:
                        samples[spec.fqn].append((t, value))
                if status:
                    twin.append((t, float(status.get('time_s', 'nan')),
                                 sum(float(v) for k, v in status.items() if k.startswith('misses.'))))
                if t >= next_print:
                    print(f'  {t / 60:5.1f} min: simulated {twin[-1][1] if twin else float("nan"):.0f} s, '
                          f'barrier misses {twin[-1][2] if twin else float("nan"):.0f}, dead: {running.dead() or "none"}',
                          flush=True)
                    next_print += 300.0
        finally:
            results = running.stop()
    print(f"{'node':32s} {'RSS 1 min [MB]':>15s} {'RSS end [MB]':>13s} {'growth [MB/h]':>14s}")
    for fqn, values in samples.items():
        after_first = [(t, v) for t, v in values if t >= 60.0] or values
        if not after_first:
            continue
        print(f'{fqn:32s} {after_first[0][1]:15.1f} {after_first[-1][1]:13.1f} {growth_per_hour(after_first):14.2f}')
    if twin:
        wall, sim, misses = twin[-1]
        print(f'twin: {sim:.0f} s simulated in {wall:.0f} s (real-time factor {sim / wall:.2f}), '
              f'{misses:.0f} barrier misses ({misses / max(sim * 250.0, 1.0) * 100:.2f} % of the steps)')
    crashed = [r.spec.fqn for r in results if r.crashed]
    print(f'nodes that crashed: {crashed or "none"}')


if __name__ == '__main__':
    main()
