"""``wait_for_ready``: exit 0 once a stage of a graph is ready, 1 when it is not within the timeout.

    wait_for_ready --topic client/joint_states:sensor_msgs/msg/JointState [--topic ...]
                   [--count 5] [--timeout 60] [--max-force 1.0]

It subscribes to every topic and waits until each has delivered ``--count`` messages (with
``--max-force``: the last ``--count`` wrenches are below that force, i.e. the sensor is
tared). The condition is :class:`hil_bringup.graphs.ReadyMonitor`; the launch files start the
next stage of a graph when this process exits 0, and the demos and tests run the same
executable (:mod:`hil_bringup.graph_runner`). On a timeout it names what is missing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time


def _message_class(type_name: str):
    package, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def parse(argv):
    from hil_bringup.graphs import Ready

    parser = argparse.ArgumentParser(prog='wait_for_ready', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--topic', action='append', required=True, help='NAME:package/msg/Type')
    parser.add_argument('--count', type=int, default=5)
    parser.add_argument('--timeout', type=float, default=60.0)
    parser.add_argument('--max-force', type=float, default=None)
    args = parser.parse_args(argv)
    topics = []
    for entry in args.topic:
        name, _, type_name = entry.partition(':')
        if type_name.count('/') != 2:
            parser.error(f'--topic {entry!r}: expected NAME:package/msg/Type')
        topics.append((name, type_name))
    return Ready(tuple(topics), count=args.count, timeout_s=args.timeout, max_force_n=args.max_force)


def main(argv=None) -> int:
    from hil_common.network import apply_network_profile

    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from rclpy.utilities import remove_ros_args

    from hil_bringup.graphs import ReadyMonitor

    argv = remove_ros_args(sys.argv if argv is None else ['wait_for_ready', *argv])[1:]
    ready = parse(argv)
    apply_network_profile()
    rclpy.init()
    node = rclpy.create_node('wait_for_ready')
    monitor = ReadyMonitor(ready)
    for name, type_name in ready.topics:
        try:
            cls = _message_class(type_name)
        except (ImportError, AttributeError, ValueError):
            print(f'wait_for_ready: unknown message type {type_name!r} for {name}', file=sys.stderr, flush=True)
            return 2
        node.create_subscription(cls, name, lambda msg, t=name: monitor.feed(t, msg), qos_profile_sensor_data)
    deadline = time.monotonic() + ready.timeout_s
    code = 1
    try:
        while time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
            if monitor.done():
                code = 0
                break
    except KeyboardInterrupt:
        code = 130
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    if code == 0:
        print('wait_for_ready: ready: ' + ', '.join(t for t, _ in ready.topics), flush=True)
    elif code == 1:
        print(f'wait_for_ready: not ready after {ready.timeout_s:.0f} s: {monitor.missing()}', file=sys.stderr, flush=True)
    return code


if __name__ == '__main__':
    sys.exit(main())
