"""Benchmark of the F/T driver (hil_sensors): printed, never asserted.

Set-up, all on 127.0.0.1 with the loopback-only DDS profile and a private domain id:
  * process 1: the simulated Net F/T streaming RDT at the rate under test, plus a DDS
    subscriber of the processed wrench (a realistic consumer, out of our process);
  * this process: the real ``FtSensorNode`` (lifecycle node, receive thread, default
    chain: tare, 2nd-order low-pass, overload and stale latches), publishing every sample.

Figures:
  * per input rate: records received vs sent, lost, publications, latency from the
    datagram's kernel receive time to the end of ``publish()`` (p50/p99) in the first and
    last third of the window (lag growth shows as a rising p99 and kernel drops), CPU of
    this process as a share of one core;
  * the maximum input rate sustained with no lag growth: >= 99.5 % of the sent records
    received, no kernel drop, last-third median latency <= first-third median + 0.5 ms,
    p99 < 10 ms (rates the simulator itself cannot send are reported, not counted);
  * the cost of the driver core alone (decode + sequence + chain) per record.

Usage: ./dev bench ft_sensor     (HIL_BENCH_FT_RATES=1000,7000 and HIL_BENCH_FT_SECONDS=3 to change)
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import threading
import time

RATES = [1000, 2000, 4000, 7000, 10000, 14000, 20000, 28000, 40000]
SECONDS = 3.0
WARMUP = 0.7


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _core_cost(n: int = 100_000) -> float:
    """µs per record of FtDriver.handle_datagram with the default chain (no sockets)."""
    from hil_sensors import rdt
    from hil_sensors.ft_driver import FtDriver, check_parameters

    cfg = check_parameters({'sensor_rate_hz': 7000.0})
    d = FtDriver(cfg, calibration=rdt.Calibration(1e6, 1e6))
    d.streaming = True
    packets = [rdt.encode_record(rdt.RdtRecord(i + 1, i, 0, (1000, 2000, 3000, 10, 20, 30))) for i in range(n)]
    addr = d.sensor_addr
    t0 = time.perf_counter()
    for i, p in enumerate(packets):
        d.handle_datagram(p, addr, i * 142_857)          # arrival times of a 7 kHz stream
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    from hil_common.network import apply_network_profile
    from hil_common.pytest_plugin import test_domain_id

    apply_network_profile()
    os.environ['ROS_DOMAIN_ID'] = str(test_domain_id())
    rates = [int(r) for r in os.environ.get('HIL_BENCH_FT_RATES', '').split(',') if r] or RATES
    seconds = float(os.environ.get('HIL_BENCH_FT_SECONDS', SECONDS))
    print(f'driver core alone: {_core_cost():.1f} us per record (decode, sequence, tare, low-pass, overload)')

    import numpy as np
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from hil_sensors.ft_sensor_node import FtSensorNode
    from hil_sensors.testing import simulator_process

    ns = '/ft_bench'
    ctx = mp.get_context('spawn')
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=simulator_process, args=(child, f'{ns}/ft/wrench'), daemon=True)
    proc.start()
    port = parent.recv()
    rclpy.init()
    overrides = [Parameter('sensor_port', value=port), Parameter('sensor_rate_hz', value=7000.0),
                 Parameter('low_pass.cutoff_hz', value=200.0), Parameter('stale_timeout_ms', value=500.0)]
    node = FtSensorNode(namespace=ns, parameter_overrides=overrides)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    node.trigger_configure()
    node.trigger_activate()
    spin = threading.Thread(target=ex.spin, daemon=True)
    spin.start()
    time.sleep(1.0)

    print(f'{"rate Hz":>8} {"sent/s":>8} {"recv %":>7} {"lost":>6} {"pub/s":>7} {"sub/s":>7} '
          f'{"p50 us":>7} {"p99 us":>8} {"p99 1st":>8} {"p99 last":>9} {"CPU %":>6}  verdict')
    best = 0
    failures = 0
    results = {}
    for rate in rates:
        parent.send(('rate', rate))
        parent.recv()
        time.sleep(WARMUP)
        with node.lock:
            d = node.driver
            d.latency.clear()
            c0 = dict(d.counters)
            lost0 = d.tracker.lost
        parent.send(('stats', None))
        sent0, sub0, over0 = parent.recv()
        cpu0, t0 = _cpu_s(), time.monotonic()
        time.sleep(seconds)
        cpu1, t1 = _cpu_s(), time.monotonic()
        parent.send(('stats', None))
        sent1, sub1, over1 = parent.recv()
        with node.lock:
            c1 = dict(d.counters)
            lost = d.tracker.lost - lost0
            lat = d.latency.values() / 1e3
            fault = d.fault.reason if d.fault.active else ''
        if fault:
            with node.lock:
                d.reset_fault()
        dt = t1 - t0
        sent = sent1 - sent0
        recv = c1['accepted'] - c0['accepted']
        pub = c1['published'] - c0['published']
        third = max(1, len(lat) // 3)
        p50, p99 = (np.percentile(lat, [50, 99]) if len(lat) else (np.nan, np.nan))
        p99_first = np.percentile(lat[:third], 99) if len(lat) else np.nan
        p99_last = np.percentile(lat[-third:], 99) if len(lat) else np.nan
        cpu = (cpu1 - cpu0) / dt * 100.0
        recv_ratio = recv / sent * 100.0 if sent else 0.0
        p50_first = np.percentile(lat[:third], 50) if len(lat) else np.nan
        p50_last = np.percentile(lat[-third:], 50) if len(lat) else np.nan
        # lag growth: the typical age of a published sample rises over the window, or the
        # kernel buffer overflows (drops); p99 alone is mostly scheduling jitter on 2 cores
        rig_limited = bool(over1 - over0) or sent < 0.97 * rate * dt
        ok = (recv_ratio >= 99.5 and lost == 0 and p50_last <= p50_first + 500.0 and p99_last < 10_000.0)
        verdict = 'sustained' if ok else 'NOT sustained'
        if rig_limited:
            verdict += ' (simulator could not send at this rate: rig limit, not counted)'
        if fault:
            verdict += f' (fault: {fault})'
        print(f'{rate:>8} {sent / dt:>8.0f} {recv_ratio:>7.2f} {lost:>6} {pub / dt:>7.0f} {(sub1 - sub0) / dt:>7.0f} '
              f'{p50:>7.0f} {p99:>8.0f} {p99_first:>8.0f} {p99_last:>9.0f} {cpu:>6.1f}  {verdict}', flush=True)
        results[rate] = (ok, cpu, p50, p99)
        if ok and not rig_limited:
            best = max(best, rate)
            failures = 0
        elif rig_limited:
            failures += 0.5
        else:
            failures += 1
        if failures >= 2:
            break
    parent.send(('quit', None))
    proc.join(10.0)
    node.close()                 # stop the receive thread and the stream first
    ex.shutdown()
    spin.join(5.0)
    node.destroy_node()
    rclpy.try_shutdown()
    print(f'maximum input rate sustained with no lag growth: {best} Hz'
          + ('' if best else ' (none of the rates tried)'))
    if 7000 in results:
        ok, cpu, p50, p99 = results[7000]
        print(f'at 7 kHz input: latency datagram -> WrenchStamped published p50 {p50:.0f} us, p99 {p99:.0f} us; '
              f'driver process CPU {cpu:.1f} % of one core ({"sustained" if ok else "not sustained"})')
    print(f'(machine: {os.cpu_count()} cores; the simulator and the subscriber run in another process)')


if __name__ == '__main__':
    main()
