"""The floor of a hot path's plumbing: a bare relay in C on rcl beside the same relay on rclpy, in one run.

Each relay runs in its own process: it takes a ``WrenchStamped`` that another process publishes at
1 kHz and publishes its six doubles as a ``Float64MultiArray`` that a third process reads (an output
that is read costs the writer Fast DDS' write and its wake-up of the reader; docs/performance.md,
ninth session). Measured over ``SECONDS`` after ``WARM_S`` from the first sample: the CPU of the
relay's process per sample.

* ``rcl (C)``: ``bench/rcl_relay.c``, an rcl wait set and serialized take and publish, no Python in
  the loop; compiled here with gcc against the rcl headers and libraries the ROS wheels put in the
  venv (``.venv/include``, ``.venv/lib``), loaded with ctypes after ``import rclpy``;
* ``rcl (C) + Python per sample``: the same C loop calling a Python function for each sample (through ctypes,
  holding the GIL; it copies the six values): the plumbing in C and a rule in Python, without the rule;
* ``rclpy events executor``: what ``run_node`` spins (``spin_once`` in a loop), raw CDR in and out
  (:mod:`hil_common.cdr`), as the hot path nodes take and send their messages;
* ``rclpy wait set``: the same with rclpy's own wait set (``_rclpy.WaitSet``) in a Python loop
  instead of an executor.

The relays run one after another, twice. The difference between the C relay and rclpy's is what
Python costs per sample before any rule runs: the share that a compiled hot path (a ros2_control
controller, or a node on rcl) would save (issue 17). Printed, never asserted. ``./dev bench rcl_relay``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

RATE_HZ = 1000.0
WARM_S = 3.0
SECONDS = 10.0
ROUNDS = 2
VARIANTS = ('rcl (C)', 'rcl (C) + Python per sample', 'rclpy events executor', 'rclpy wait set')
COMPILED = ('rcl (C)', 'rcl (C) + Python per sample')
HERE = Path(__file__).resolve().parent


def build_relay(out_dir: Path) -> tuple[Path | None, str]:
    """``rcl_relay.c`` as a shared library (None and why when gcc or the headers are missing)."""
    gcc = shutil.which('gcc')
    prefix = Path(sys.prefix)
    include = prefix / 'include'
    if gcc is None:
        return None, 'gcc not found (apt install gcc)'
    if not (include / 'rcl' / 'rcl' / 'rcl.h').is_file() or not (prefix / 'lib' / 'librcl.so').is_file():
        return None, f'rcl headers or librcl.so not in {prefix} (the ROS wheels put them there)'
    library = out_dir / 'librcl_relay.so'
    flags = [f'-I{d}' for d in sorted(include.iterdir()) if d.is_dir()]
    command = [gcc, '-O2', '-shared', '-fPIC', '-o', str(library), str(HERE / 'rcl_relay.c'), *flags,
               f'-L{prefix / "lib"}', '-lrcl', '-lrcutils', '-lrmw', '-lgeometry_msgs__rosidl_typesupport_c',
               '-lstd_msgs__rosidl_typesupport_c']
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None, f'gcc failed: {done.stderr.strip()[-400:]}'
    return library, ''


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _role(argv: list[str]) -> int:
    """One process of the bench: ``feeder``, ``reader`` or a relay variant (its figures as JSON on stdout)."""
    from hil_common.network import apply_network_profile

    apply_network_profile()
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.experimental import EventsExecutor
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray

    role, in_topic, out_topic, seconds = argv[0], argv[1], argv[2], float(argv[3])
    if role in COMPILED:
        library = ctypes.CDLL(argv[4])      # rclpy imported above: rcl's dependencies are loaded
        on_sample_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double))
        library.relay_main.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_double, ctypes.c_double,
                                       on_sample_t, ctypes.POINTER(ctypes.c_double)]

        def copy_values(wrench_in, out):
            for i in range(6):
                out[i] = wrench_in[i]
            return 0
        on_sample = on_sample_t(copy_values) if role != 'rcl (C)' else on_sample_t()   # NULL: copied in C
        result = (ctypes.c_double * 3)()
        if library.relay_main(in_topic.encode(), out_topic.encode(), WARM_S, seconds, on_sample, result) != 0:
            return 1
        print(json.dumps({'samples': result[0], 'cpu_s': result[1], 'wall_s': result[2]}))
        return 0
    rclpy.init()
    node = rclpy.create_node(f'bench_rcl_relay_{role.replace(" ", "_")}')
    try:
        if role == 'feeder':           # WrenchStamped at RATE_HZ on an absolute schedule
            pub = node.create_publisher(WrenchStamped, in_topic, 10)
            wrench = WrenchStamped()
            wrench.header.frame_id = 'servicer_ft_sensor'
            wrench.wrench.force.x = 1.0
            buffer = serialize_message(wrench)
            t0 = time.monotonic()
            k = 0
            while time.monotonic() - t0 < seconds:
                k += 1
                delay = t0 + k / RATE_HZ - time.monotonic()
                if delay > 0.0:
                    time.sleep(delay)
                pub.publish(buffer)
            return 0
        executor = EventsExecutor()
        executor.add_node(node)
        if role == 'reader':           # reads the relay's output, so that its writes are writes to a reader
            node.create_subscription(Float64MultiArray, out_topic, lambda _: None, 10, raw=True)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                executor.spin_once(timeout_sec=0.2)
            return 0
        from hil_common.cdr import Float64ArrayEncoder, decode_wrench_stamped

        pub = node.create_publisher(Float64MultiArray, out_topic, 10)
        encode = Float64ArrayEncoder(6)
        count = [0]

        def relay(buffer):
            wrench = decode_wrench_stamped(buffer)[3]
            pub.publish(encode(wrench))
            count[0] += 1
        if role == 'rclpy events executor':
            node.create_subscription(WrenchStamped, in_topic, relay, 10, raw=True)

            def spin(duration_s):
                end = time.monotonic() + duration_s
                while time.monotonic() < end:
                    executor.spin_once(timeout_sec=0.2)
        elif role == 'rclpy wait set':
            from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

            from hil_common.polled import PolledSubscription

            polled = PolledSubscription(node, WrenchStamped, in_topic, 10, raw=True)
            wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, node.context.handle)

            def spin(duration_s):
                end = time.monotonic() + duration_s
                while time.monotonic() < end:
                    wait_set.clear_entities()
                    wait_set.add_subscription(polled.handle)
                    wait_set.wait(200_000_000)
                    for buffer in polled.take_all():
                        relay(buffer)
        else:
            print(f'unknown role {role!r}', file=sys.stderr)
            return 2
        while count[0] == 0:           # the warm-up counts from the first sample
            spin(0.05)
        spin(WARM_S)
        n0, cpu0, wall0 = count[0], _cpu_s(), time.monotonic()
        spin(seconds)
        print(json.dumps({'samples': count[0] - n0, 'cpu_s': _cpu_s() - cpu0, 'wall_s': time.monotonic() - wall0}))
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def _run_variant(variant: str, library: Path | None, tag: str) -> dict | str:
    """The reader, the feeder and one relay, each a process; the relay's figures (or what went wrong)."""
    me = [sys.executable, str(Path(__file__).resolve()), '--role']
    in_topic, out_topic = f'bench_rcl_relay_{tag}/in', f'bench_rcl_relay_{tag}/out'
    total = WARM_S + SECONDS
    reader = subprocess.Popen([*me, 'reader', in_topic, out_topic, str(total + 8.0)], stdout=subprocess.DEVNULL)
    relay = subprocess.Popen([*me, variant, in_topic, out_topic, str(SECONDS), str(library or '')],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)          # discovery before the first sample
    feeder = subprocess.Popen([*me, 'feeder', in_topic, out_topic, str(total + 5.0)], stdout=subprocess.DEVNULL)
    try:
        out, err = relay.communicate(timeout=total + 30.0)
    except subprocess.TimeoutExpired:
        relay.kill()
        out, err = relay.communicate()
    for process in (feeder, reader):
        try:
            process.wait(timeout=15.0)
        except subprocess.TimeoutExpired:
            process.kill()
    if relay.returncode != 0 or not out.strip():
        return f'exit {relay.returncode}: {err.strip()[-300:]}'
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> None:
    with tempfile.TemporaryDirectory(prefix='bench_rcl_relay_') as tmp:
        library, why = build_relay(Path(tmp))
        print(f'a relay at {RATE_HZ:.0f} Hz (WrenchStamped in, Float64MultiArray out to a reader), CPU of the '
              f'relay process per sample over {SECONDS:.0f} s, {ROUNDS} rounds:', flush=True)
        if library is None:
            print(f'  {" and ".join(COMPILED)}: not measured: {why}', flush=True)
        figures: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for round_ in range(ROUNDS):
            for variant in VARIANTS:
                if variant in COMPILED and library is None:
                    continue
                got = _run_variant(variant, library, f'{os.getpid()}_{round_}_{VARIANTS.index(variant)}')
                if isinstance(got, str):
                    print(f'  {variant:<24s} FAILED: {got}', flush=True)
                    continue
                per_sample = got['cpu_s'] / max(got['samples'], 1) * 1e6
                figures[variant].append(per_sample)
                print(f'  {variant:<24s} {got["samples"]:6.0f} samples ({got["samples"] / got["wall_s"]:5.0f} Hz): '
                      f'{100.0 * got["cpu_s"] / got["wall_s"]:5.1f} % of a core, {per_sample:6.1f} us per sample',
                      flush=True)
        c_relay = figures['rcl (C)']
        for variant in VARIANTS[1:]:
            if c_relay and figures[variant]:
                print(f'  {variant} minus rcl (C): {min(figures[variant]) - max(c_relay):.0f} to '
                      f'{max(figures[variant]) - min(c_relay):.0f} us per sample')


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--role':
        sys.exit(_role(sys.argv[2:]))
    main()
